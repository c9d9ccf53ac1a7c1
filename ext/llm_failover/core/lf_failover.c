/* The attempt loop (lf_failover.h): the circuit breaker's routes, retries
 * with backoff, failover with a reset of the partial output, and the call's
 * outcome. One attempt's exchange and judgement are lf_attempt.c's, its
 * finish (record, report, outcome) lf_attempt_finish.c's, a hedged first
 * request lf_hedge.c's; the requests are prepared by lf_prepare.c. */
#include "lf_failover.h"

#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>

#include "lf_attempt.h"
#include "lf_clock.h"

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

/* ---- where the call goes: circuits --------------------------------------- */

/* Whether target i cannot take the message's attachments (lf_prepare):
 * it is left out whatever its circuit says. */
static int lf_refused(const lf_call *c, size_t i)
{
    return c->prep->target[i].refused;
}

/* Every target's route and known failures, from the host's breaker, once
 * before the first attempt; a target that cannot take the attachments is
 * skipped. -1 when the host stopped the call. */
static int lf_call_health(lf_call *c, size_t first, lf_health *health)
{
    const lf_breaker *b = c->breaker;
    size_t i, hope = c->n_targets;
    int all_open = 1;

    for (i = 0; i < c->n_targets; i++) {
        health[i].route = LF_ROUTE_SEND;
        health[i].failures = 0;
    }
    if (b && lf_stop(c, b->health(b->ud, c->n_targets, health))) return -1;
    for (i = first; i < c->n_targets; i++) {
        if (lf_refused(c, i)) {
            health[i].route = LF_ROUTE_SKIP;
            continue;
        }
        if (hope == c->n_targets) hope = i;
        all_open = all_open && health[i].route == LF_ROUTE_SKIP;
    }
    /* An open circuit never becomes an error by itself: the first target that
     * can take the attachments is tried (lf_run fails the call before this
     * when none can). */
    if (all_open && hope < c->n_targets) health[hope].route = LF_ROUTE_SEND;
    return 0;
}

/* The next target after `ti` the call will send to, or -1. */
static int lf_next_target(const lf_health *health, size_t ti, size_t n_targets)
{
    size_t j;
    for (j = ti + 1; j < n_targets; j++)
        if (health[j].route != LF_ROUTE_SKIP) return (int)j;
    return -1;
}

/* Asks the host again for target `ti`'s route before a request that is not
 * the call's first. A target whose circuit is open now is skipped when a
 * later target will be tried, and tried anyway when it is the call's last
 * hope (an open circuit never fails a call by itself). */
static int lf_readmit(lf_call *c, int ti, lf_health *health)
{
    const lf_breaker *b = c->breaker;
    lf_health h = health[ti];

    if (!b || !b->admit) return 0;
    if (lf_stop(c, b->admit(b->ud, ti, &h))) return -1;
    if (h.route == LF_ROUTE_SKIP && lf_next_target(health, (size_t)ti, c->n_targets) < 0) h.route = LF_ROUTE_SEND;
    health[ti] = h;
    return 0;
}

/* The record of a target left out because its circuit is open, or because
 * it cannot take the message's attachments (the reason names the file and
 * the limit): no request, no wait, nothing for its circuit, its own attempt
 * number. */
static int lf_skip(lf_call *c, int target_index, lf_outcome *o)
{
    const lf_prepared *p = &c->prep->target[target_index];
    lf_attempt_record rec = {
        .attempt = ++c->attempt_no,
        .target = target_index,
        .kind = p->refused ? LF_E_ATTACHMENTS : LF_E_OTHER,
        .error_message = p->refused ? lf_buf_cstr(&p->refusal) : "circuit open: no request sent",
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

    o->attempts = c->attempt_no;
    return lf_stop(c, c->l->on_attempt(c->l->ud, &rec)) ? -1 : 0;
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

/* The call fails with attempt a. Later targets left out by their open
 * circuits still get their records. */
static void lf_fail(lf_call *c, lf_attempt *a, const lf_health *health, lf_outcome *o)
{
    size_t i;

    for (i = (size_t)a->target_index + 1; i < c->n_targets && a->verdict.failover && !c->stopped; i++)
        if (health[i].route == LF_ROUTE_SKIP) lf_skip(c, (int)i, o);
    lf_attempt_finish_failure(c, a, o);
}

enum { LF_CALL_DONE, LF_NEXT_TARGET };

/* The first attempt at target ti: hedged to the next target when the policy
 * asks for it (lf_hedge.c). Returns 1 when the backup's attempt, run and
 * judged, goes on in *carry (a is freed), else 0 with a run and judged. */
static int lf_first_attempt(lf_call *c, size_t ti, lf_health *health, lf_attempt *a, lf_attempt *carry)
{
    int backup = lf_next_target(health, ti, c->n_targets);

    lf_attempt_init(a, c, (int)ti);
    if (!lf_hedge_wanted(c, backup)) {
        lf_attempt_run(c, a);
        return 0;
    }
    switch (lf_hedge_run(c, a, carry, backup, health)) {
    case LF_HEDGE_FIRST: lf_attempt_free(carry); break;
    case LF_HEDGE_BACKUP: lf_attempt_free(a); return 1;
    default: break;
    }
    return 0;
}

/* Sends to target ti, retrying as the policy and its circuit allow. Returns
 * LF_NEXT_TARGET to fail over (with *carry set when a hedge's backup attempt
 * goes on there: already run, its record still to make), or LF_CALL_DONE
 * with the outcome filled. */
static int lf_try_target(lf_call *c, size_t ti, lf_health *health, lf_outcome *o, lf_attempt *carry, int *carried)
{
    int max_retries = health[ti].route == LF_ROUTE_PROBE ? 0 : c->pol->max_retries; /* one probe request */
    int retry;

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
        has_next = lf_next_target(health, ti, c->n_targets) >= 0;
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

/* Tries the targets from `first` on until one answers, a failure is final,
 * or the host stops the call. Fills o. */
static void lf_try_targets(lf_call *c, size_t first, lf_health *health, lf_outcome *o)
{
    lf_attempt carry; /* a hedge's backup attempt, going on at the next target */
    int carried = 0;
    size_t ti;

    for (ti = first; ti < c->n_targets; ti++) {
        c->current = (int)ti;
        if (carried) {
            /* Admitted when the hedge was sent; the first target delivered nothing. */
            if (lf_try_target(c, ti, health, o, &carry, &carried) != LF_NEXT_TARGET) return;
            continue;
        }
        /* health only told which probe is free: the call takes a probe when
         * it sends to that target, not before (its primary may answer). */
        if (((ti > first && health[ti].route != LF_ROUTE_SKIP) || health[ti].route == LF_ROUTE_PROBE) &&
            lf_readmit(c, (int)ti, health) != 0) {
            lf_stopped(c, o);
            return;
        }
        if (health[ti].route == LF_ROUTE_SKIP) {
            /* Only when a later target will be tried (see lf_call_health and lf_fail). */
            if (lf_skip(c, (int)ti, o) != 0) {
                lf_stopped(c, o);
                return;
            }
            continue;
        }
        if (ti > first && c->delivered && lf_withdraw(c, ti) != 0) {
            lf_stopped(c, o);
            return;
        }
        if (lf_try_target(c, ti, health, o, &carry, &carried) != LF_NEXT_TARGET) return;
    }
    if (carried) lf_attempt_free(&carry); /* unreachable: a hedge goes to a next target */
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

static int lf_run_args_ok(const lf_run_args *a)
{
    const lf_listener *l = a->listener;

    const lf_breaker *b = a->breaker;

    return a->pool && a->targets && a->n_targets >= 1 && a->n_targets <= LF_MAX_TARGETS && a->params && a->policy &&
           l && l->on_chunk && l->on_reset && l->on_attempt && l->wait && (!b || (b->health && b->report));
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
static int lf_none_takes(lf_call *c, lf_outcome *o)
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
        if (lf_skip(c, (int)i, o) != 0) lf_stopped(c, o);
    return 1;
}

int lf_run(const lf_run_args *args, lf_outcome *o)
{
    const lf_target *targets;
    size_t n_targets;
    const lf_request_params *params;
    lf_prepared_call prep;
    lf_health health[LF_MAX_TARGETS];
    lf_call call;
    int rc = -1;

    if (!args || !lf_run_args_ok(args)) {
        lf_buf_setf(&o->message, "lf_run: bad arguments");
        return -1;
    }
    targets = args->targets;
    n_targets = args->n_targets;
    params = args->params;

    memset(&call, 0, sizeof(call));
    call.pol = args->policy;
    call.l = args->listener;
    call.prep = &prep;
    call.pool = args->pool;
    call.targets = targets;
    call.n_targets = n_targets;
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
    if (lf_none_takes(&call, o)) goto out;
    if (lf_call_health(&call, 0, health) != 0) lf_stopped(&call, o);
    else lf_try_targets(&call, 0, health, o);
    lf_record_cancel(&call); /* a cancel that came with an attempt's own record */
    o->attempts = call.attempt_no;
out:
    if (call.breaker && call.breaker->finish) call.breaker->finish(call.breaker->ud);
    lf_call_disconnect(&call, args->pool);
    lf_prepared_call_free(&prep);
    return rc;
}
