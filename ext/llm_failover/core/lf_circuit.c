#include "lf_circuit.h"

#include <string.h>

#include "lf_banned.h"

int lf_circuit_counts(lf_kind kind)
{
    switch (kind) {
    case LF_E_RATE_LIMIT:
    case LF_E_SERVER:
    case LF_E_SERVICE_UNAVAILABLE:
    case LF_E_OVERLOADED:
    case LF_E_TIMEOUT:
    case LF_E_CONNECTION:
    case LF_E_STREAM_INTERRUPTED:
    case LF_E_INVALID_RESPONSE:
    /* An empty account answers every call the same way in every process until
     * someone pays: a dead target, and the breaker spares the fleet its round
     * trips. The error still reaches the caller as the failover rules say. */
    case LF_E_PROVIDER_QUOTA:
        return 1;
    default:
        return 0;
    }
}

double lf_circuit_hold(lf_kind kind, double retry_after, double max_interval)
{
    if (!lf_circuit_counts(kind) || !(retry_after > max_interval)) return 0;
    return retry_after;
}

double lf_circuit_interval(double first, double cooldown, double elapsed)
{
    double wait = elapsed * LF_CIRCUIT_RECOVERY_SHARE;

    if (!(wait > first)) wait = first;
    return wait < cooldown ? wait : cooldown;
}

static void lf_change(lf_circuit_change *chg, lf_circuit_state from, lf_circuit_state to, lf_circuit_reason why)
{
    chg->from = from;
    chg->to = to;
    chg->reason = why;
}

lf_route lf_circuit_admit(lf_circuit *c, double now, double probe_ttl, lf_circuit_change *chg)
{
    lf_change(chg, c->state, c->state, LF_REASON_NONE);
    switch (c->state) {
    case LF_CIRCUIT_CLOSED:
        return LF_ROUTE_SEND;
    case LF_CIRCUIT_OPEN:
        if (now < c->until) return LF_ROUTE_SKIP;
        c->state = LF_CIRCUIT_HALF_OPEN;
        c->probe_until = 0;
        lf_change(chg, LF_CIRCUIT_OPEN, LF_CIRCUIT_HALF_OPEN, LF_REASON_COOLDOWN);
        /* the first call after the cooldown probes */
        __attribute__((fallthrough));
    case LF_CIRCUIT_HALF_OPEN:
    default:
        /* the probe is out, or a Retry-After that came in meanwhile holds it back */
        if (c->probe_until > now || now < c->until) return LF_ROUTE_SKIP;
        c->probe_until = now + probe_ttl;
        return LF_ROUTE_PROBE;
    }
}

lf_route lf_circuit_peek(const lf_circuit *c, double now)
{
    switch (c->state) {
    case LF_CIRCUIT_CLOSED:
        return LF_ROUTE_SEND;
    case LF_CIRCUIT_OPEN:
        return now < c->until ? LF_ROUTE_SKIP : LF_ROUTE_PROBE;
    case LF_CIRCUIT_HALF_OPEN:
    default:
        return c->probe_until > now || now < c->until ? LF_ROUTE_SKIP : LF_ROUTE_PROBE;
    }
}

double lf_circuit_open_for(const lf_circuit *c, double now)
{
    double until = c->until;

    if (c->state == LF_CIRCUIT_CLOSED) return 0;
    if (c->state == LF_CIRCUIT_HALF_OPEN && c->probe_until > until) until = c->probe_until;
    return until > now ? until - now : 0;
}

int lf_circuit_record(lf_circuit *c, const lf_circuit_rules *rules, const lf_circuit_outcome *out,
                      lf_circuit_change *chg)
{
    lf_circuit_state from = c->state;
    int threshold = rules->threshold;
    double first = rules->first > 0 ? rules->first : rules->cooldown, cooldown = rules->cooldown, now = out->now, hold = out->hold, until, wait;

    lf_change(chg, from, from, LF_REASON_NONE);
    if (out->success) {
        c->failures = 0;
        c->probes_failed = 0;
        if (from == LF_CIRCUIT_CLOSED) return 0;
        c->state = LF_CIRCUIT_CLOSED;
        c->opened_at = c->until = c->probe_until = 0;
        lf_change(chg, from, LF_CIRCUIT_CLOSED, LF_REASON_SUCCESS);
        return 1;
    }
    c->failures++;
    switch (from) {
    case LF_CIRCUIT_HALF_OPEN:
        /* Not the probe's (or its lock expired): counted, the probe decides.
         * Its Retry-After still holds: no next probe before it is over. */
        if (!out->probe || !(c->probe_until > now)) {
            if (hold > 0 && now + hold > c->until) c->until = now + hold;
            return 0;
        }
        c->probes_failed++;
        wait = lf_circuit_interval(first, cooldown, now - c->opened_at);
        until = now + (hold > wait ? hold : wait);
        c->state = LF_CIRCUIT_OPEN;
        if (until > c->until) c->until = until; /* a Retry-After kept while half-open may be longer */
        c->probe_until = 0;
        lf_change(chg, from, LF_CIRCUIT_OPEN, LF_REASON_PROBE_FAILED);
        return 1;
    case LF_CIRCUIT_OPEN:
        /* Attempts that were under way when it opened: a longer Retry-After
         * still moves the end of the cooldown. */
        if (hold > 0 && now + hold > c->until) c->until = now + hold;
        return 0;
    case LF_CIRCUIT_CLOSED:
    default:
        c->probes_failed = 0;
        if (threshold > 0 && c->failures >= threshold) {
            wait = lf_circuit_interval(first, cooldown, 0);
            until = now + (hold > wait ? hold : wait);
            lf_change(chg, from, LF_CIRCUIT_OPEN, LF_REASON_THRESHOLD);
        } else if (hold > 0) {
            until = now + hold;
            lf_change(chg, from, LF_CIRCUIT_OPEN, LF_REASON_RETRY_AFTER);
        } else {
            return 0;
        }
        c->state = LF_CIRCUIT_OPEN;
        c->opened_at = now;
        c->until = until;
        c->probe_until = 0;
        return 1;
    }
}

int lf_circuit_renew_probe(lf_circuit *c, double now, double probe_ttl)
{
    if (c->state != LF_CIRCUIT_HALF_OPEN) return 0;
    c->probe_until = now + probe_ttl;
    return 1;
}

void lf_circuit_adopt(lf_circuit *c, double now, int failures, double open_for)
{
    c->failures = failures;
    c->probe_until = 0;
    if (open_for > 0) {
        if (c->state == LF_CIRCUIT_CLOSED) c->opened_at = now;
        c->state = LF_CIRCUIT_OPEN;
        c->until = now + open_for;
    } else {
        c->state = LF_CIRCUIT_CLOSED;
        c->opened_at = c->until = 0;
        c->probes_failed = 0;
    }
}

const char *lf_circuit_state_name(lf_circuit_state s)
{
    switch (s) {
    case LF_CIRCUIT_OPEN: return "open";
    case LF_CIRCUIT_HALF_OPEN: return "half_open";
    case LF_CIRCUIT_CLOSED:
    default: return "closed";
    }
}

const char *lf_circuit_reason_name(lf_circuit_reason r)
{
    switch (r) {
    case LF_REASON_THRESHOLD: return "threshold";
    case LF_REASON_RETRY_AFTER: return "retry_after";
    case LF_REASON_COOLDOWN: return "cooldown_elapsed";
    case LF_REASON_PROBE_FAILED: return "probe_failed";
    case LF_REASON_SUCCESS: return "success";
    case LF_REASON_NONE:
    default: return NULL;
    }
}
