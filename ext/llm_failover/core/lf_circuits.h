/* The in-process store of circuits (MemoryStateStore's): one lf_circuit per
 * target key ("provider:model"), who holds each half-open probe, the last
 * counted failure, and what a pool host last said of its headroom, under one
 * lock. lf_circuits_bind makes it a call's breaker
 * (lf_failover.h), so that the attempt loop admits, records and probes
 * without asking its host: the host hears only of a state change.
 *
 * Every operation takes `now` (epoch seconds) from its caller. A forked
 * child's first use starts its copy over with a lock of its own and no probe
 * (the parent reports on those); that first use must not race another
 * thread's in the child (the Ruby binding calls it under the GVL). */
#ifndef LF_CIRCUITS_H
#define LF_CIRCUITS_H

#include <stddef.h>
#include "lf_circuit.h"
#include "lf_failover.h"

typedef struct lf_circuits lf_circuits;

lf_circuits *lf_circuits_new(void);
void lf_circuits_free(lf_circuits *t);

/* What lf_circuits_admit would answer, changing nothing: PROBE means the
 * probe is free, or `token` holds it already. *out: the route, the counted
 * failures, for how long a skip holds, the headroom as of now. */
lf_route lf_circuits_peek(lf_circuits *t, const char *key, const char *token, double now, lf_health *out);
/* Whether a call may send to the target: PROBE hands the probe to `token`'s
 * caller for probe_ttl seconds (its holder asking again gets it again,
 * renewed). *out as peek's; *chg: the change it made (reason NONE: none). */
lf_route lf_circuits_admit(lf_circuits *t, const char *key, const char *token, double now, double probe_ttl,
                           lf_health *out, lf_circuit_change *chg);

/* An attempt's outcome, as the store takes it. */
typedef struct lf_circuits_outcome {
    double now;
    int success;
    lf_kind kind;             /* a failure's (kept as the target's last error) */
    double hold;              /* a counted failure's Retry-After cooldown, else 0 */
    const char *token;        /* the reporting caller's: the probe's own outcome when it holds it */
    const lf_headroom *headroom; /* a pool host's, as its answer said it (NULL: nothing said) */
} lf_circuits_outcome;

/* Applies an attempt's outcome (lf_circuit_record) and keeps the headroom it
 * said; returns 1 when the circuit is not closed afterwards. A success on a
 * target with nothing to reset and no headroom said changes nothing and
 * creates nothing. */
int lf_circuits_record(lf_circuits *t, const char *key, const lf_circuit_rules *rules,
                       const lf_circuits_outcome *out, lf_circuit_change *chg);
/* The probe of `key` is free again, when `token` holds it. */
void lf_circuits_release(lf_circuits *t, const char *key, const char *token);
/* A shared store's view of the target (lf_circuit_adopt): open for
 * open_for more seconds when that is positive, else closed. */
void lf_circuits_adopt(lf_circuits *t, const char *key, double now, int failures, double open_for);
/* What a host said of its headroom, `now` (a shared store's view, kept for
 * when it cannot be reached, or an answer's). */
void lf_circuits_note_headroom(lf_circuits *t, const char *key, double now, const lf_headroom *h);
/* Whether a success on `key` has anything to reset: a counted failure, or a
 * circuit not closed. */
int lf_circuits_unsettled(lf_circuits *t, const char *key);

/* One target's circuit as the store knows it. */
typedef struct lf_circuits_view {
    char *key;
    lf_circuit circuit;
    lf_kind last_kind;        /* the last failure's kind; LF_OK when none */
    lf_headroom headroom;     /* as of the `now` asked for */
} lf_circuits_view;

/* A copy of one target's circuit (key left NULL): 1, or 0 when unknown. */
int lf_circuits_get(lf_circuits *t, const char *key, double now, lf_circuits_view *out);
/* A copy of every known target's, taken under the lock: the count, -1 when
 * out of memory; free it with lf_circuits_views_free. */
long lf_circuits_snapshot(lf_circuits *t, double now, lf_circuits_view **out);
void lf_circuits_views_free(lf_circuits_view *v, long n);
/* Forgets every target. */
void lf_circuits_clear(lf_circuits *t);
/* Known targets (read without the lock: a hint, exact when quiet). */
size_t lf_circuits_size(const lf_circuits *t);

/* One call's side of the store, as its breaker: health peeks (a probe is
 * taken only when the call sends to that target, through admit), report
 * records with the call's token, finish frees the probes it took and never
 * reported on. on_change (optional) hears of every state change the call
 * makes; its return value is the callback's (lf_failover.h). */
typedef struct lf_circuits_call {
    lf_circuits *table;
    const char *keys[LF_MAX_TARGETS];
    size_t n_keys;
    const char *token;        /* the call's own (its request id) */
    lf_circuit_rules rules;
    double probe_ttl;         /* seconds a probe is the call's */
    unsigned probes;          /* bit i: the call took target i's probe */
    void *ud;
    int (*on_change)(void *ud, int target, const lf_circuit_change *chg, lf_kind kind);
} lf_circuits_call;

/* Fills b with cc's callbacks (b->ud = cc). */
void lf_circuits_bind(lf_circuits_call *cc, lf_breaker *b);

#endif
