/* The attempt loop (lf_failover.h): the circuit breaker's routes, retries
 * with backoff, failover with a reset of the partial output, and the call's
 * outcome. One attempt's exchange and judgement are lf_attempt.c's, its
 * finish (record, report, outcome) lf_attempt_finish.c's, a hedged first
 * request lf_hedge.c's; the requests are prepared by lf_prepare.c. */
#include "lf_failover.h"

#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lf_attempt.h"
#include "lf_clock.h"
#include "lf_tier.h"

#include "lf_banned.h"

void lf_outcome_init(lf_outcome *o)
{
    memset(o, 0, sizeof(*o));
    lf_answer_init(&o->answer);
    lf_buf_init(&o->message);
    lf_buf_init(&o->body);
    lf_buf_init(&o->partial);
    lf_buf_init(&o->provider_request_id);
    lf_buf_init(&o->error_type);
    lf_buf_init(&o->error_code);
    lf_buf_init(&o->json);
    o->retry_after = -1;
}

void lf_outcome_free(lf_outcome *o)
{
    lf_answer_free(&o->answer);
    lf_buf_free(&o->message);
    lf_buf_free(&o->body);
    lf_buf_free(&o->partial);
    lf_buf_free(&o->provider_request_id);
    lf_buf_free(&o->error_type);
    lf_buf_free(&o->error_code);
    lf_buf_free(&o->json);
}

static double lf_random(lf_call *c)
{
    /* xorshift64*: jitter only, no need for more. */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* The host stopped the call with no attempt under way: a cancel gets its
 * record, and the outcome says which of the two it was. */
static void lf_stopped(lf_call *c, lf_outcome *o)
{
    lf_record_cancel(c);
    o->ok = 0;
    o->cancelled = c->cancelled;
    o->aborted = !c->cancelled;
    o->target = c->current;
    o->kind = LF_E_ABORTED;
    lf_buf_setf(&o->message, c->cancelled ? "call cancelled by the host" : "call stopped by the host");
}

/* ---- waits between attempts ---------------------------------------------- */

static int lf_fd_readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Waits `seconds` without holding up the host's interrupts; with a wake fd,
 * until the host makes it readable. */
static int lf_sleep(lf_call *c, double seconds)
{
    double until = lf_now_monotonic() + seconds, left;
    while ((left = until - lf_now_monotonic()) > 0) {
        int ms = (int)ceil(left * 1000.0);
        lf_wait w;

        if (ms > LF_MAX_WAIT_MS) ms = LF_MAX_WAIT_MS;
        w = (lf_wait){ .multi = lf_conn_multi(c->conn), .timeout_ms = ms };
        if (lf_stop(c, c->evented ? c->l->wait_fd(c->l->ud, c->wake_fd, ms) : c->l->wait(c->l->ud, &w))) return -1;
        if (c->wake_fd >= 0 && lf_fd_readable(c->wake_fd) && lf_stop(c, c->l->on_wake(c->l->ud))) return -1;
    }
    return 0;
}

/* ---- where the call goes: circuits, tiers and headroom -------------------- */

/* Whether target i cannot take the message's attachments (lf_prepare):
 * it is left out whatever its circuit says. */
static int lf_refused(const lf_call *c, size_t i)
{
    return c->prep->target[i].refused;
}

/* The targets the call never sends to: those that cannot take the
 * attachments, and those it tried (or passed over) already. */
static unsigned lf_excluded(const lf_call *c)
{
    unsigned mask = c->tried;
    size_t i;

    for (i = 0; i < c->n_targets; i++)
        if (lf_refused(c, i)) mask |= 1u << i;
    return mask;
}

/* Every target's route, known failures and headroom, from the host's
 * breaker, once before the first attempt; a target that cannot take the
 * attachments is skipped. -1 when the host stopped the call. */
static int lf_call_health(lf_call *c, lf_health *health)
{
    const lf_breaker *b = c->breaker;
    size_t i, t;
    int hope = -1, all_open = 1;

    for (i = 0; i < c->n_targets; i++)
        health[i] = (lf_health){ .route = LF_ROUTE_SEND, .headroom = LF_HEADROOM_UNSAID };
    if (b && lf_stop(c, b->health(b->ud, c->n_targets, health))) return -1;
    c->health_mono = lf_now_monotonic();
    for (i = 0; i < c->n_targets; i++) {
        if (lf_refused(c, i)) health[i].route = LF_ROUTE_SKIP;
        else all_open = all_open && health[i].route == LF_ROUTE_SKIP;
    }
    /* An open circuit never becomes an error by itself: in the first tier
     * with a target that can take the attachments, the one that reopens
     * first is tried (lf_run fails the call before this when none can). */
    for (t = 0; all_open && hope < 0 && t < c->n_tiers; t++)
        hope = lf_tier_pick(&c->tiers[t], health, lf_excluded(c), -1, c->need, 0).open;
    if (all_open && hope >= 0) health[hope].route = LF_ROUTE_SEND;
    return 0;
}

/* What the call knew of each host's headroom at its start, as of now. */
static void lf_age_health(lf_call *c, lf_health *health)
{
    double now = lf_now_monotonic();
    size_t i;

    for (i = 0; i < c->n_targets; i++) health[i].headroom = lf_headroom_aged(&health[i].headroom, now - c->health_mono);
    c->health_mono = now;
}

/* Whether a tier after tier t has a target the call will send to. */
static int lf_later_tier(const lf_call *c, size_t t, const lf_health *health)
{
    size_t i;

    if (t + 1 >= c->n_tiers) return 0;
    for (i = c->tiers[t + 1].first; i < c->n_targets; i++)
        if (health[i].route != LF_ROUTE_SKIP) return 1;
    return 0;
}

/* The tier that holds target i. */
static size_t lf_tier_index(const lf_call *c, size_t i)
{
    return (size_t)(lf_tier_of(c, i) - c->tiers);
}

/* What tier t offers the next request, the call's excluded targets left out. */
static lf_tier_choice lf_offer(lf_call *c, size_t t, const lf_health *health)
{
    return lf_tier_pick(&c->tiers[t], health, lf_excluded(c), c->stay, c->need, lf_random(c));
}

/* Whether a pool's host other than those tried may still take the call in
 * its tier: a failure there moves to it rather than to the next tier. */
static int lf_has_sibling(lf_call *c, size_t t, const lf_health *health)
{
    lf_tier_choice ch;

    if (!c->tiers[t].pooled) return 0;
    ch = lf_tier_pick(&c->tiers[t], health, lf_excluded(c), -1, c->need, 0);
    return ch.ready >= 0 || ch.cooling >= 0;
}

/* Asks the host again for target `ti`'s route before a request that is not
 * the call's first. A target whose circuit is open now is skipped when
 * another target will be tried, and tried anyway when it is the call's last
 * hope (an open circuit never fails a call by itself). */
static int lf_readmit(lf_call *c, int ti, lf_health *health)
{
    const lf_breaker *b = c->breaker;
    lf_health h = health[ti];
    size_t t = lf_tier_index(c, (size_t)ti);

    if (!b || !b->admit) return 0;
    if (lf_stop(c, b->admit(b->ud, ti, &h))) return -1;
    health[ti].route = h.route;
    health[ti].failures = h.failures;
    if (h.route == LF_ROUTE_SKIP) {
        unsigned tried = c->tried;

        health[ti].open_for = h.open_for;
        c->tried |= 1u << ti; /* the others weighed without it */
        if (!lf_has_sibling(c, t, health) && !lf_later_tier(c, t, health)) health[ti].route = LF_ROUTE_SEND;
        c->tried = tried;
    }
    return 0;
}

/* The record of a target left out because its circuit is open, because it
 * said it has no headroom for the call, or because it cannot take the
 * message's attachments (the reason names the file and the limit): no
 * request, no wait, nothing for its circuit, its own attempt number. */
static int lf_skip(lf_call *c, int target_index, const lf_health *health, lf_outcome *o)
{
    const lf_prepared *p = &c->prep->target[target_index];
    double dry = p->refused ? 0 : lf_headroom_wait(&health[target_index].headroom, c->need);
    char why[96];
    lf_attempt_record rec = {
        .attempt = ++c->attempt_no,
        .target = target_index,
        .kind = p->refused ? LF_E_ATTACHMENTS : LF_E_OTHER,
        .error_message = why,
        .failover_eligible = 1,
        .retry_after = -1,
        .first_token_ms = -1,
        .input_tokens = -1,
        .output_tokens = -1,
        .cached_input_tokens = -1,
        .cache_write_tokens = -1,
        .started_at = lf_now_wall(),
        .skipped = 1,
    };

    if (p->refused) rec.error_message = lf_buf_cstr(&p->refusal);
    else if (health[target_index].route != LF_ROUTE_SKIP && dry > 0)
        snprintf(why, sizeof why, "no headroom for %.3gs: no request sent", dry);
    else snprintf(why, sizeof why, "circuit open: no request sent");
    c->tried |= 1u << target_index;
    o->attempts = c->attempt_no;
    return lf_stop(c, c->l->on_attempt(c->l->ud, &rec)) ? -1 : 0;
}

/* Records every target of tier t the call has not sent to. */
static int lf_skip_rest(lf_call *c, size_t t, const lf_health *health, lf_outcome *o)
{
    const lf_tier *tier = &c->tiers[t];
    size_t i;

    for (i = tier->first; i < tier->first + tier->n_hosts && !c->stopped; i++)
        if (!(c->tried & (1u << i)) && lf_skip(c, (int)i, health, o) != 0) return -1;
    return 0;
}

/* ---- the loop ------------------------------------------------------------ */

/* Whether the failed attempt a is tried again on its target (retries left,
 * nothing delivered, the verdict allows it), and after how long: its
 * Retry-After, unless that is longer than the policy would sleep (then it
 * fails over now), else the backoff's delay. */
static int lf_may_retry(lf_call *c, const lf_attempt *a, int retry, int retries_left, double *delay)
{
    *delay = 0;
    if (!a->verdict.retry_same || !retries_left || a->delivered) return 0;
    if (a->retry_after >= 0) {
        if (a->retry_after > c->pol->backoff.max_interval) return 0; /* fail over now */
        *delay = a->retry_after;
        return 1;
    }
    *delay = lf_backoff_delay(&c->pol->backoff, retry + 1, lf_random(c));
    return 1;
}

/* Whether a's failure may be fixed by another host of its pool: one the
 * backup could fix, but not a context too long (every host serves the
 * same model). */
static int lf_sibling_may_fix(const lf_attempt *a)
{
    return a->verdict.failover && a->verdict.kind != LF_E_CONTEXT_LENGTH;
}

/* The call fails with attempt a. Targets it did not send to, in a's tier and
 * after it, left out by their open circuits, still get their records. */
static void lf_fail(lf_call *c, lf_attempt *a, const lf_health *health, lf_outcome *o)
{
    size_t i;

    for (i = lf_tier_of(c, (size_t)a->target_index)->first; i < c->n_targets && a->verdict.failover && !c->stopped; i++)
        if (health[i].route == LF_ROUTE_SKIP && !(c->tried & (1u << i))) lf_skip(c, (int)i, health, o);
    lf_attempt_finish_failure(c, a, o);
}

enum { LF_CALL_DONE, LF_NEXT_TARGET, LF_NEXT_HOST };

/* The call's first request, at target ti: hedged to the host the next tier
 * would pick when the policy asks for it (lf_hedge.c). Returns 1 when the
 * backup's attempt, run and judged, goes on in *carry (a is freed), else 0
 * with a run and judged. */
static int lf_first_attempt(lf_call *c, size_t ti, lf_health *health, lf_attempt *a, lf_attempt *carry)
{
    size_t t = lf_tier_index(c, ti);
    int backup = -1;

    if (c->attempt_no == 0 && lf_later_tier(c, t, health)) backup = lf_offer(c, t + 1, health).ready;
    lf_attempt_init(a, c, (int)ti);
    if (!lf_hedge_wanted(c, backup)) {
        lf_attempt_run(c, a);
        return 0;
    }
    switch (lf_hedge_run(c, a, carry, backup, health)) {
    case LF_HEDGE_FIRST: lf_attempt_free(carry); break;
    case LF_HEDGE_BACKUP:
        c->tried |= 1u << carry->target_index;
        lf_attempt_free(a);
        return 1;
    default: break;
    }
    return 0;
}

/* Sends to target ti, retrying as the policy and its circuit allow; with
 * `sibling` (another host of its pool may take the call), a failure that
 * host may fix moves there instead, and the hosts tried before count as
 * retries of the tier (a pool's attempts are one per host, or the policy's,
 * whichever is more). Returns LF_NEXT_HOST, LF_NEXT_TARGET to
 * fail over (with *carry set when a hedge's backup attempt goes on there:
 * already run, its record still to make), or LF_CALL_DONE with the outcome
 * filled. */
static int lf_try_target(lf_call *c, size_t ti, lf_health *health, lf_outcome *o, lf_attempt *carry, int *carried,
                         int sibling)
{
    /* One probe request; the pool's hosts tried before this one were its tier's retries. */
    int max_retries = health[ti].route == LF_ROUTE_PROBE || sibling ? 0 : c->pol->max_retries - (c->tier_sends - 1);
    int retry;

    if (max_retries < 0) max_retries = 0;

    c->current = (int)ti;
    for (retry = 0; retry <= max_retries; retry++) {
        lf_attempt a;
        int circuit_open, has_next;
        double delay;

        if (*carried) {
            a = *carry; /* the hedge's backup attempt, run already */
            *carried = 0;
        } else if (retry == 0 && lf_first_attempt(c, ti, health, &a, carry)) {
            *carried = 1;
            return LF_NEXT_TARGET;
        } else if (retry > 0) {
            lf_attempt_init(&a, c, (int)ti);
            lf_attempt_run(c, &a);
        }
        o->attempts = c->attempt_no;
        lf_record_attempt(c, &a);
        circuit_open = lf_report_circuit(c, &a, &health[ti]);
        if (c->stopped) {
            a.success = 0;
            a.verdict.kind = LF_E_ABORTED;
            lf_attempt_finish_failure(c, &a, o);
            lf_attempt_free(&a);
            return LF_CALL_DONE;
        }
        if (a.success) {
            lf_attempt_finish_success(&a, o);
            lf_attempt_free(&a);
            return LF_CALL_DONE;
        }
        if (sibling && lf_sibling_may_fix(&a)) {
            lf_attempt_free(&a);
            return LF_NEXT_HOST;
        }
        has_next = lf_later_tier(c, lf_tier_index(c, ti), health);
        /* A circuit that opened during this call sends it to the backup now. */
        if (lf_may_retry(c, &a, retry, retry < max_retries && !(circuit_open && has_next), &delay)) {
            lf_attempt_free(&a);
            if ((delay > 0 && lf_sleep(c, delay) != 0) || lf_readmit(c, (int)ti, health) != 0) {
                lf_stopped(c, o);
                return LF_CALL_DONE;
            }
            /* Opened elsewhere during the wait: the backup answers. */
            if (health[ti].route == LF_ROUTE_SKIP && has_next) return LF_NEXT_TARGET;
            if (health[ti].route == LF_ROUTE_PROBE) max_retries = retry + 1; /* the probe: no retry after it */
            continue;
        }
        if (a.verdict.failover && has_next) {
            lf_attempt_free(&a);
            return LF_NEXT_TARGET;
        }
        lf_fail(c, &a, health, o);
        lf_attempt_free(&a);
        return LF_CALL_DONE;
    }
    return LF_CALL_DONE; /* unreachable: the last attempt never retries */
}

/* Before target ti speaks: the consumer has seen words of an answer that
 * will not be finished, and they must be withdrawn. */
static int lf_withdraw(lf_call *c, size_t ti)
{
    c->delivered = 0;
    return lf_stop(c, c->l->on_reset(c->l->ud, (int)ti)) ? -1 : 0;
}

enum { LF_TIER_PASS = -1, LF_TIER_STOPPED = -2 };

/* The target of tier t the call sends to next: a host with headroom; else
 * the one whose headroom comes back first, after a wait no longer than
 * the policy would sleep before a retry (a longer one fails over to the next
 * tier, or, with none, sends now: a last hope is never left untried); else
 * LF_TIER_PASS (every host tried, or open while the next tier is not).
 * Never spins: each wait is one sleep until a window refills. */
static int lf_choose(lf_call *c, size_t t, lf_health *health)
{
    lf_tier_choice ch;

    lf_age_health(c, health);
    ch = lf_offer(c, t, health);
    if (ch.ready >= 0) return ch.ready;
    if (ch.cooling >= 0 && (ch.wait <= c->pol->backoff.max_interval || !lf_later_tier(c, t, health))) {
        if (ch.wait <= c->pol->backoff.max_interval && lf_sleep(c, ch.wait) != 0) return LF_TIER_STOPPED;
        health[ch.cooling].headroom = LF_HEADROOM_UNSAID; /* its window refilled, as far as the call knows */
        return ch.cooling;
    }
    /* Every host left is open and no later tier will be tried: the last hope. */
    if (ch.open >= 0 && !lf_later_tier(c, t, health)) return ch.open;
    return LF_TIER_PASS;
}

/* Tries tier t's targets (a pool's hosts in turn) until one answers, a
 * failure is final, the call fails over, or the host stops it. Fills o
 * unless it returns LF_NEXT_TARGET. */
static int lf_try_tier(lf_call *c, size_t t, lf_health *health, lf_outcome *o, lf_attempt *carry, int *carried)
{
    c->tier_sends = 0;
    for (;;) {
        int ti, rc;

        if (*carried) {
            /* Admitted when the hedge was sent; the first target delivered nothing. */
            ti = carry->target_index;
        } else {
            ti = lf_choose(c, t, health);
            if (ti == LF_TIER_PASS) {
                if (lf_skip_rest(c, t, health, o) != 0) break;
                return LF_NEXT_TARGET;
            }
            if (ti == LF_TIER_STOPPED) break;
            /* health only told which probe is free: the call takes a probe
             * when it sends to that target, not before (its primary may answer). */
            if ((c->tried || health[ti].route == LF_ROUTE_PROBE) && lf_readmit(c, ti, health) != 0) break;
            if (health[ti].route == LF_ROUTE_SKIP) {
                /* Open now, and another target will be tried (lf_readmit). */
                if (lf_skip(c, ti, health, o) != 0) break;
                continue;
            }
            if (c->delivered && lf_withdraw(c, (size_t)ti) != 0) break;
        }
        c->tried |= 1u << ti;
        c->tier_sends++;
        rc = lf_try_target(c, (size_t)ti, health, o, carry, carried, lf_has_sibling(c, t, health));
        if (rc != LF_NEXT_HOST) return rc;
    }
    lf_stopped(c, o);
    return LF_CALL_DONE;
}

/* Tries the tiers in turn until one answers, a failure is final, or the
 * host stops the call. Fills o. */
static void lf_try_targets(lf_call *c, lf_health *health, lf_outcome *o)
{
    lf_attempt carry; /* a hedge's backup attempt, going on at the next tier */
    int carried = 0;
    size_t t;

    for (t = 0; t < c->n_tiers; t++)
        if (lf_try_tier(c, t, health, o, &carry, &carried) != LF_NEXT_TARGET) return;
    /* Unreachable: the call fails over only to a tier it will send to. */
    if (carried) lf_attempt_free(&carry);
    o->ok = 0;
    o->kind = LF_E_OTHER;
    lf_buf_setf(&o->message, "no target left to send to");
}

/* A connection for the call, and how its waits go: by socket readiness when
 * the host waits on a descriptor (wait_fd), else through l->wait, which
 * holds the host's thread. 0, or -1 when out of memory. */
static int lf_call_connect(lf_call *c, lf_pool *pool)
{
    const lf_listener *l = c->l;

    c->conn = lf_pool_checkout(pool);
    if (!c->conn) return -1;
    c->evented = l->wait_fd && lf_conn_evented(c->conn) >= 0;
    if (!c->evented && !lf_conn_multi(c->conn)) return -1;
    c->wake_fd = c->evented && l->on_wake && lf_conn_watch_wake(c->conn, l->wake_fd) == 0 ? l->wake_fd : -1;
    return 0;
}

static void lf_call_disconnect(lf_call *c, lf_pool *pool)
{
    if (!c->conn) return;
    if (c->wake_fd >= 0) lf_conn_unwatch_wake(c->conn);
    lf_conn_unwatch_peer(c->conn);
    lf_pool_checkin(pool, c->conn);
    c->conn = NULL;
    if (c->spare) {
        lf_conn_unwatch_peer(c->spare);
        lf_pool_checkin(pool, c->spare);
        c->spare = NULL;
    }
}

/* Tiers that cover the targets in order, each with a host, a pool's at most
 * LF_MAX_POOL_HOSTS; none given: one per target, at most LF_MAX_TIERS. */
static int lf_tiers_ok(const lf_run_args *a)
{
    size_t t, next = 0;

    if (!a->tiers) return a->n_targets <= LF_MAX_TIERS;
    if (a->n_tiers < 1 || a->n_tiers > LF_MAX_TIERS) return 0;
    for (t = 0; t < a->n_tiers; t++) {
        if (a->tiers[t].first != next || a->tiers[t].n_hosts < 1 || a->tiers[t].n_hosts > LF_MAX_POOL_HOSTS) return 0;
        next += a->tiers[t].n_hosts;
    }
    return next == a->n_targets;
}

static int lf_run_args_ok(const lf_run_args *a)
{
    const lf_listener *l = a->listener;

    const lf_breaker *b = a->breaker;

    return a->pool && a->targets && a->n_targets >= 1 && a->n_targets <= LF_MAX_TARGETS && lf_tiers_ok(a) &&
           a->params && a->policy && l && l->on_chunk && l->on_reset && l->on_attempt && l->wait &&
           (!b || (b->health && b->report)) && (!a->stay || (a->stay >= a->targets && a->stay < a->targets + a->n_targets));
}

/* Prepares every target the call may send to, from `first` on. */
static int lf_prepare(lf_prepared_call *prep, const lf_run_args *args, size_t first, lf_buf *err)
{
    size_t i;

    if (lf_prepare_schema(prep, args->params, err) != 0) return -1;
    for (i = first; i < args->n_targets; i++)
        if (lf_prepare_target(prep, i, &args->targets[i], args->params, err) != 0) return -1;
    return 0;
}

/* When no target of the call can take the message's attachments: a record
 * of each left out, and the call fails with LF_E_ATTACHMENTS, not
 * retryable, every reason in its message. 0 when some target can. */
static int lf_none_takes(lf_call *c, const lf_health *health, lf_outcome *o)
{
    size_t i;

    for (i = 0; i < c->n_targets; i++)
        if (!lf_refused(c, i)) return 0;
    lf_buf_setf(&o->message, "no target of the call can take the attachments: %s",
                lf_buf_cstr(&c->prep->target[0].refusal));
    for (i = 1; i < c->n_targets; i++)
        if (lf_buf_append_str(&o->message, "; ") != 0 ||
            lf_buf_append_str(&o->message, lf_buf_cstr(&c->prep->target[i].refusal)) != 0)
            break;
    o->ok = 0;
    o->target = 0;
    o->kind = LF_E_ATTACHMENTS;
    o->retryable = 0;
    for (i = 0; i < c->n_targets && !c->stopped; i++)
        if (lf_skip(c, (int)i, health, o) != 0) lf_stopped(c, o);
    return 1;
}

int lf_run(const lf_run_args *args, lf_outcome *o)
{
    const lf_target *targets;
    size_t n_targets;
    const lf_request_params *params;
    lf_prepared_call prep;
    lf_health health[LF_MAX_TARGETS];
    lf_tier own_tiers[LF_MAX_TIERS];
    lf_call call;
    size_t i;
    int rc = -1;

    if (!args || !lf_run_args_ok(args)) {
        lf_buf_setf(&o->message, "lf_run: bad arguments");
        return -1;
    }
    targets = args->targets;
    n_targets = args->n_targets;
    params = args->params;

    memset(&call, 0, sizeof(call));
    memset(health, 0, sizeof(health));
    call.pol = args->policy;
    call.l = args->listener;
    call.prep = &prep;
    call.pool = args->pool;
    call.targets = targets;
    call.n_targets = n_targets;
    call.tiers = args->tiers;
    call.n_tiers = args->n_tiers;
    if (!args->tiers) {
        for (i = 0; i < n_targets; i++) own_tiers[i] = (lf_tier){ .first = i, .n_hosts = 1 };
        call.tiers = own_tiers;
        call.n_tiers = n_targets;
    }
    call.stay = args->stay ? (int)(args->stay - targets) : -1;
    call.need = args->tokens > 0 ? args->tokens : 1;
    call.embed_inputs = params->kind == LF_REQUEST_EMBEDDINGS ? params->n_inputs : 0;
    call.stream = params->stream && !call.embed_inputs;
    call.breaker = args->breaker;
    call.mark_mono = lf_now_monotonic();
    call.mark_wall = lf_now_wall();
    call.want_json = !call.embed_inputs && (params->json_mode || params->schema);
    call.wake_fd = -1;
    call.rng = ((uint64_t)(lf_now_monotonic() * 1e9)) ^ ((uint64_t)(uintptr_t)&call << 16) ^ (uint64_t)lf_current_pid();
    if (!call.rng) call.rng = 0x9E3779B97F4A7C15ULL;

    lf_prepared_call_init(&prep);
    if (lf_prepare(&prep, args, 0, &o->message) != 0) goto out;
    if (lf_call_connect(&call, args->pool) != 0) {
        lf_buf_setf(&o->message, "out of memory (connection)");
        goto out;
    }
    rc = 0;
    /* The host's quota picked the targets already (Chat: the backup alone when the
     * primary's is used up), so the loop starts at the first it was given. */
    if (lf_none_takes(&call, health, o)) goto out;
    if (lf_call_health(&call, health) != 0) lf_stopped(&call, o);
    else lf_try_targets(&call, health, o);
    lf_record_cancel(&call); /* a cancel that came with an attempt's own record */
    o->attempts = call.attempt_no;
out:
    if (call.breaker && call.breaker->finish) call.breaker->finish(call.breaker->ud);
    lf_call_disconnect(&call, args->pool);
    lf_prepared_call_free(&prep);
    return rc;
}
