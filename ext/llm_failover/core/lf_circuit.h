/* The circuit breaker's rules: which failed attempts count against a target
 * (provider + model), when its circuit opens, when one request may probe it,
 * and what a Retry-After asks of the whole fleet. The state itself lives in a
 * store (the host's): these functions only move one lf_circuit from one state
 * to the next (the in-process store of them is lf_circuits.h).
 * RedisStateStore's Lua scripts (lib/llm_failover/health/redis_state_store/
 * scripts.rb) restate the same transitions inside Redis, where a fleet needs
 * them atomic; spec/circuit_transitions_spec.rb drives both through one list. */
#ifndef LF_CIRCUIT_H
#define LF_CIRCUIT_H

#include "lf_classify.h"

typedef enum lf_circuit_state {
    LF_CIRCUIT_CLOSED = 0,
    LF_CIRCUIT_OPEN,          /* no request until `until` (a cooldown or a Retry-After) */
    LF_CIRCUIT_HALF_OPEN      /* one request probes; the others stay away */
} lf_circuit_state;

/* What a call may do with a target. */
typedef enum lf_route {
    LF_ROUTE_SEND = 0,        /* closed: send, retry as the policy says */
    LF_ROUTE_SKIP,            /* open, or half-open with the probe taken elsewhere */
    LF_ROUTE_PROBE            /* this call holds the probe: one request, no retry */
} lf_route;

typedef enum lf_circuit_reason {
    LF_REASON_NONE = 0,
    LF_REASON_THRESHOLD,      /* closed -> open: threshold consecutive counted failures */
    LF_REASON_RETRY_AFTER,    /* closed -> open: a Retry-After longer than retry_max_interval */
    LF_REASON_COOLDOWN,       /* open -> half_open: the cooldown elapsed */
    LF_REASON_PROBE_FAILED,   /* half_open -> open */
    LF_REASON_SUCCESS         /* open or half_open -> closed: an attempt succeeded */
} lf_circuit_reason;

typedef struct lf_circuit {
    lf_circuit_state state;
    int failures;             /* consecutive counted failures */
    double opened_at;         /* epoch seconds the incident began; 0 when closed */
    double until;             /* open until then (epoch seconds) */
    double probe_until;       /* a probe is out until then; 0 when none */
    int probes_failed;        /* failed probes since it opened (shown in the store's health) */
} lf_circuit;

typedef struct lf_circuit_change {
    lf_circuit_state from, to;
    lf_circuit_reason reason;
} lf_circuit_change;

/* 1 when a failed attempt of this kind counts against its target: the
 * provider-side, failover-eligible classes (rate limit, 5xx, overloaded,
 * timeout, connection reset, interrupted stream, invalid response, an empty
 * account). Never a deterministic 4xx, a refused connection (configuration
 * drift) or a call the host stopped (interrupt, exception in a block, cancel). */
int lf_circuit_counts(lf_kind kind);

/* Seconds of shared cooldown a failed attempt asks for: its Retry-After when
 * that is longer than `max_interval` (the longest the policy would sleep),
 * else 0. */
double lf_circuit_hold(lf_kind kind, double retry_after, double max_interval);

/* The recovery schedule: how long a circuit stays open before its next probe,
 * `elapsed` seconds after it opened (the incident's age when the last probe
 * failed): a sixth of that age (LF_CIRCUIT_RECOVERY_SHARE), never less than
 * `first` (the host's circuit_first_probe, 5 s by default), never more than
 * `cooldown` (60 s by default). So the wait grows with each failed probe:
 * probes at 5, 10, 15, 20, 25, 30, 35, 40.8, 47.6, 55.6, 64.8, 75.7 s...,
 * one a minute after six minutes. A `first` at or above `cooldown` is the old
 * fixed schedule.
 *
 * Why: a target is back in use at most one wait after it recovered, and each
 * wait costs one probe request to a dead target (one for the whole fleet with
 * a shared store). Tying the wait to the outage's age bounds the cost of
 * recovery to a sixth of the outage: a 10 s blip is over for the fleet at
 * most 5 s later (two failed probes), a one-minute outage at most 10 s later
 * (9 failed probes), and a ten-minute one costs 26 probes (the fixed 60 s
 * cooldown: 10, but a blip kept the fleet on the backup for a minute). A
 * growth per probe (doubling from 5 s: 5, 15, 35, 75 s) would leave a target
 * that recovered at 36 s unused until 75 s. */
#define LF_CIRCUIT_RECOVERY_SHARE (1.0 / 6.0)
double lf_circuit_interval(double first, double cooldown, double elapsed);

/* Whether a call may send to the target at `now`. An open circuit whose
 * cooldown has elapsed turns half-open; a half-open circuit whose probe is
 * free hands the probe to this call (for `probe_ttl` seconds, after which a
 * lost probe frees it). Fills *chg (reason NONE when nothing changed). */
lf_route lf_circuit_admit(lf_circuit *c, double now, double probe_ttl, lf_circuit_change *chg);

/* What lf_circuit_admit would answer at `now`, changing nothing: PROBE
 * means the probe is free (open past its cooldown, or half-open with no
 * probe out), and the call that sends to the target takes it then, with
 * lf_circuit_admit. A call asks so at its start for every target it may
 * reach, so that a backup's probe is not held by a call that its primary
 * answers. */
lf_route lf_circuit_peek(const lf_circuit *c, double now);

/* Seconds until lf_circuit_peek lets a request through (the cooldown's
 * end, or a probe out elsewhere); 0 when it does now. */
double lf_circuit_open_for(const lf_circuit *c, double now);

/* The breaker's settings. */
typedef struct lf_circuit_rules {
    int threshold;            /* consecutive counted failures that open the circuit; > 0 */
    double first;             /* seconds before the first probe (lf_circuit_interval); 0: cooldown,
                               * the fixed schedule */
    double cooldown;          /* the longest wait between two probes */
} lf_circuit_rules;

/* An attempt's outcome as its target's circuit takes it. */
typedef struct lf_circuit_outcome {
    double now;               /* epoch seconds */
    int success;
    double hold;              /* a counted failure's Retry-After cooldown (lf_circuit_hold), else 0 */
    int probe;                /* the store saw the reporting call's token on the half-open probe */
} lf_circuit_outcome;

/* Applies an attempt's outcome: a success, or a counted failure asking for
 * `hold` seconds of cooldown. `probe` is 1 when the store saw the reporting
 * call's token on the half-open probe (the call it handed the probe to); the
 * probe is its outcome only while it has not expired. Returns 1 and fills
 * *chg when the state changed.
 *
 * While half-open, only the probe's own failure reopens the circuit. Another
 * call's failure (one sent before the circuit opened and ending late, or one
 * sent anyway because every target of its call was open) is counted and
 * leaves the probe out: a second probe must not start while the first is in
 * flight; its Retry-After (`hold`) still holds the next probe back until it
 * is over. Any success closes the circuit, whoever sent it, as it does from
 * open: the target answered, and the probe's own outcome then counts as a
 * closed circuit's. */
int lf_circuit_record(lf_circuit *c, const lf_circuit_rules *rules, const lf_circuit_outcome *out,
                      lf_circuit_change *chg);

/* The caller that holds a half-open circuit's probe asks again (before its
 * retry, or a later target of its call): the probe stays its own for
 * `probe_ttl` seconds from `now`. Returns 1, or 0 when the circuit is no
 * longer half-open (the probe's result, or another's, moved it on). The
 * store knows who holds the probe; the circuit only until when. */
int lf_circuit_renew_probe(lf_circuit *c, double now, double probe_ttl);

/* Takes on a shared store's view of a target (a copy kept for when the
 * shared store cannot be reached): open for `open_for` more seconds when
 * that is positive, else closed; `failures` counted either way. The probe,
 * if any, is the shared store's business: none here. */
void lf_circuit_adopt(lf_circuit *c, double now, int failures, double open_for);

/* "closed", "open", "half_open" */
const char *lf_circuit_state_name(lf_circuit_state s);
/* "threshold", "retry_after", "cooldown_elapsed", "probe_failed", "success"; NULL for NONE */
const char *lf_circuit_reason_name(lf_circuit_reason r);

#endif
