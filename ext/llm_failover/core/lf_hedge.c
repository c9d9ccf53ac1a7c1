/* Hedged requests (lf_attempt.h, lf_hedge_run): when the first request of a
 * call has produced no token hedge_after seconds after it was sent, the
 * backup's request is sent beside it, on a second slot whose transfer runs
 * in the same multi handle (poll-driven) or whose epoll set is watched in
 * the first slot's (readiness-driven), so that one wait covers both. The
 * first of the two to produce a token answers; the other is cut at once
 * (its transfer removed, which closes its connection) and recorded as
 * cancelled. The loser never reaches the listener's on_chunk: the winner is
 * decided by the first delta, and the loser is read muted from then on. */
#include "lf_attempt.h"

#include <math.h>
#include <string.h>

#include "lf_clock.h"

#include "lf_banned.h"

#define LF_HEDGE_LOST "cancelled: the other hedged attempt produced its first token first"

int lf_hedge_wanted(const lf_call *c, int backup)
{
    return backup >= 0 && c->pol->hedge_after > 0 && !c->stopped;
}

/* Whether the backup's circuit lets a hedge go to it now. An open circuit
 * means no hedge (the loop's own rule tries a last target anyway: a hedge
 * is an extra, never a last hope). */
static int lf_hedge_admitted(lf_call *c, int backup, lf_health *health)
{
    const lf_breaker *b = c->breaker;
    lf_health h = health[backup];

    if (b && b->admit) {
        if (lf_stop(c, b->admit(b->ud, backup, &h))) return 0;
        health[backup] = h;
    }
    return h.route != LF_ROUTE_SKIP;
}

/* The second slot, ready to run beside the call's: NULL when none can be
 * had (then there is no hedge). */
static lf_conn *lf_hedge_slot(lf_call *c)
{
    if (!c->spare) c->spare = lf_pool_checkout(c->pool);
    if (!c->spare) return NULL;
    if (c->evented)
        return lf_conn_evented(c->spare) >= 0 && lf_conn_watch_peer(c->conn, c->spare) == 0 ? c->spare : NULL;
    /* Its own multi handle, for the waits once it answers alone. */
    return lf_conn_multi(c->spare) ? c->spare : NULL;
}

/* Drives x, now alone, until its exchange is over; then judges it. */
static void lf_hedge_alone(lf_call *c, lf_attempt *x, int over, double deadline)
{
    while (!over && lf_exchange_wait(c, lf_now_monotonic(), deadline) == 0) over = lf_exchange_pump(c, x, &deadline);
    lf_exchange_end(x);
    lf_attempt_judge(c, x);
}

/* x lost the race: what already arrived for it is read for its record
 * (an Anthropic stream's input tokens come before any text), never
 * delivered; its transfer is cut and it is recorded as cancelled. */
static void lf_hedge_cut(lf_call *c, lf_attempt *x)
{
    double deadline;

    x->muted = 1;
    (void)lf_exchange_pump(c, x, &deadline);
    lf_exchange_end(x);
    x->lost = 1;
    x->success = 0;
    memset(&x->verdict, 0, sizeof(x->verdict));
    x->verdict.kind = LF_E_ABORTED;
    lf_buf_setf(&x->message, LF_HEDGE_LOST);
    lf_record_attempt(c, x);
}

/* An attempt that ended in the race without a token: judged, recorded, and
 * told to the breaker. */
static void lf_hedge_settle(lf_call *c, lf_attempt *x, lf_health *health)
{
    lf_exchange_end(x);
    lf_attempt_judge(c, x);
    lf_record_attempt(c, x);
    (void)lf_report_circuit(c, x, &health[x->target_index]);
}

/* The backup goes on alone: its slot becomes the call's, and the host's
 * wake descriptor moves with it. */
static void lf_hedge_switch(lf_call *c)
{
    lf_conn *lead = c->conn;

    if (c->evented) {
        lf_conn_unwatch_peer(lead);
        if (c->wake_fd >= 0) {
            lf_conn_unwatch_wake(lead);
            if (lf_conn_watch_wake(c->spare, c->wake_fd) != 0) c->wake_fd = -1;
        }
    }
    c->conn = c->spare;
    c->spare = lead;
}

/* a ended in the race without a token: judged. The backup goes on only
 * where it could have answered after a's failure anyway (a wrong key is
 * never hidden by a hedge); else a's outcome stands and b is cut. */
static int lf_hedge_first_over(lf_call *c, lf_attempt *a, lf_attempt *b, lf_health *health, double db)
{
    lf_exchange_end(a);
    lf_attempt_judge(c, a);
    if (c->stopped || a->success || !a->verdict.failover) {
        lf_hedge_cut(c, b);
        lf_conn_unwatch_peer(c->conn);
        return LF_HEDGE_FIRST;
    }
    lf_record_attempt(c, a);
    (void)lf_report_circuit(c, a, &health[a->target_index]);
    lf_hedge_switch(c);
    lf_hedge_alone(c, b, 0, db);
    return LF_HEDGE_BACKUP;
}

/* b ended in the race without a token: judged. A failure is recorded and a
 * goes on alone; an answer without text (possible) wins. */
static int lf_hedge_backup_over(lf_call *c, lf_attempt *a, lf_attempt *b, lf_health *health, double da)
{
    lf_exchange_end(b);
    lf_attempt_judge(c, b);
    if (b->success) {
        lf_hedge_cut(c, a);
        lf_hedge_switch(c);
        return LF_HEDGE_BACKUP;
    }
    lf_record_attempt(c, b);
    (void)lf_report_circuit(c, b, &health[b->target_index]);
    lf_conn_unwatch_peer(c->conn);
    lf_hedge_alone(c, a, 0, da);
    return LF_HEDGE_FIRST;
}

/* The race itself, both requests sent: a is stepped first, so that when
 * both have text in one round the one that was asked first answers. */
static int lf_hedge_race(lf_call *c, lf_attempt *a, lf_attempt *b, lf_health *health)
{
    double da = INFINITY, db = INFINITY;
    int over;

    for (;;) {
        over = lf_exchange_pump(c, a, &da);
        if (lf_attempt_started(c, a)) {
            lf_hedge_cut(c, b);
            lf_conn_unwatch_peer(c->conn);
            lf_hedge_alone(c, a, over, da);
            return LF_HEDGE_FIRST;
        }
        if (over) return lf_hedge_first_over(c, a, b, health, db);
        over = lf_exchange_pump(c, b, &db);
        if (lf_attempt_started(c, b)) {
            lf_hedge_cut(c, a);
            lf_hedge_switch(c);
            lf_hedge_alone(c, b, over, db);
            return LF_HEDGE_BACKUP;
        }
        if (over && !c->stopped) return lf_hedge_backup_over(c, a, b, health, da);
        if (c->stopped || lf_exchange_wait(c, lf_now_monotonic(), fmin(da, db)) != 0) {
            /* The host stopped the call: both end, b recorded here. */
            lf_hedge_settle(c, b, health);
            lf_conn_unwatch_peer(c->conn);
            lf_exchange_end(a);
            lf_attempt_judge(c, a);
            return LF_HEDGE_FIRST;
        }
    }
}

int lf_hedge_run(lf_call *c, lf_attempt *a, lf_attempt *b, int backup, lf_health *health)
{
    double da = INFINITY, hedge_at, now;
    lf_conn *slot;
    int over = lf_exchange_begin(c, a, NULL) != 0;

    hedge_at = a->started_mono + c->pol->hedge_after;
    while (!over && !lf_attempt_started(c, a)) {
        over = lf_exchange_pump(c, a, &da);
        if (over || lf_attempt_started(c, a)) break;
        now = lf_now_monotonic();
        if (now >= hedge_at) {
            /* Late: the backup is sent beside it, when its circuit allows. */
            if (!lf_hedge_admitted(c, backup, health) || !(slot = lf_hedge_slot(c))) break;
            lf_attempt_init(b, c, backup);
            b->conn = slot;
            a->hedge = b->hedge = 1;
            if (lf_exchange_begin(c, b, c->conn) != 0) {
                lf_hedge_settle(c, b, health);
                lf_conn_unwatch_peer(c->conn);
                lf_hedge_alone(c, a, 0, da);
                return LF_HEDGE_FIRST;
            }
            return lf_hedge_race(c, a, b, health);
        }
        over = lf_exchange_wait(c, now, fmin(da, hedge_at)) != 0;
    }
    lf_hedge_alone(c, a, over || c->stopped, da);
    return LF_HEDGE_NONE;
}
