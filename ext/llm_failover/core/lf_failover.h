/* The attempt loop: one logical call over an ordered list of targets (the
 * primary, then at most one backup). Retries a target where that helps,
 * fails over where that helps, resets partial streamed output before the
 * backup answers, and reports every attempt. It talks to its host (the Ruby
 * binding) only through the listener below, and never from inside libcurl. */
#ifndef LF_FAILOVER_H
#define LF_FAILOVER_H

#include <stddef.h>
#include <curl/curl.h>
#include "lf_backoff.h"
#include "lf_buf.h"
#include "lf_circuit.h"
#include "lf_classify.h"
#include "lf_target.h"
#include "lf_transport.h"
#include "lf_wire.h"

typedef struct lf_policy {
    int max_retries;              /* retries of a target after its first attempt */
    lf_backoff backoff;
    double connect_timeout;       /* seconds; <= 0: none */
    double first_token_timeout;   /* request start -> first content (streamed calls) */
    double idle_timeout;          /* longest silence once bytes flow */
    double request_timeout;       /* whole attempt */
    int failover_on_context_length;
    size_t max_response_bytes;
    /* Hedged requests: seconds after the first request of a call is sent
     * without its first token, the backup is sent beside it, and the first
     * of the two to produce a token answers (the other is cut). <= 0: off;
     * without a backup it does nothing. */
    double hedge_after;
} lf_policy;


typedef struct lf_attempt_record {
    int attempt;                  /* 1, 2, ... across the whole call */
    int target;                   /* index into the targets */
    int success;
    lf_kind kind;                 /* LF_OK on success */
    lf_phase phase;               /* LF_E_TIMEOUT: which deadline passed */
    const char *error_message;    /* NULL on success */
    long http_status;             /* 0 when none */
    int failover_eligible;        /* the error allows failing over */
    double retry_after;           /* seconds, -1 when none */
    double latency_ms;
    double first_token_ms;        /* -1 when no content arrived */
    long input_tokens;            /* -1 when unknown */
    long output_tokens;
    double started_at;            /* wall clock, epoch seconds */
    const char *provider_request_id; /* NULL when none */
    int skipped;                  /* no request sent: the target's circuit is open */
    int hedge;                    /* one of a hedged request's two attempts, run side by side */
    int cancelled;                /* cut because the other hedged attempt produced a token first */
} lf_attempt_record;

/* A target's health as the host's state store sees it when the call starts. */
typedef struct lf_health {
    lf_route route;               /* send, skip (open), or probe (this call holds the probe; from health, free to take) */
    int failures;                 /* consecutive counted failures known so far */
} lf_health;

/* What the loop tells the breaker of one attempt (lf_listener.report). */
typedef struct lf_circuit_report {
    int target;                   /* index into the targets */
    int success;
    lf_kind kind;                 /* LF_OK on success */
    double hold;                  /* the Retry-After cooldown it asks for (lf_circuit_hold), 0 for none */
} lf_circuit_report;

/* Every callback returns 0 to go on; nonzero stops the call at once (the
 * outcome is then marked aborted and the host raises what it stashed). */
typedef struct lf_listener {
    void *ud;
    int (*on_chunk)(void *ud, int target, const char *text, size_t len);
    int (*on_reset)(void *ud);
    /* Every attempt, also the one a callback stopped (kind LF_E_ABORTED):
     * that one comes after the stopping callback, while the host is on its
     * way out, and its return value is ignored. */
    int (*on_attempt)(void *ud, const lf_attempt_record *rec);
    /* Blocks until the multi handle has activity, timeout_ms passes, or the
     * host wakes it (curl_multi_wakeup). Must not call into libcurl other
     * than curl_multi_poll/curl_multi_wakeup. */
    int (*wait)(void *ud, CURLM *multi, int timeout_ms);
    /* The circuit breaker: both set, or both NULL (none). health: once,
     * before the first attempt, fills out[i] for each target (with admit, a
     * PROBE there only says the probe is free: lf_circuit_peek; the loop
     * takes it through admit just before it sends to that target). report:
     * after an attempt that bears on its target's circuit (every success,
     * whenever the call began, or a failure lf_circuit_counts); sets *open
     * when the circuit is open afterwards. */
    int (*health)(void *ud, size_t n_targets, lf_health *out);
    int (*report)(void *ud, const lf_circuit_report *r, int *open);
    /* Optional with the breaker (NULL: health's answer holds for the whole
     * call, its PROBE a probe taken). Asks again for one target's route, just
     * before a request that is not the call's first (a retry, or a target
     * reached by failing over) and before the first request to a target
     * whose probe health said is free: the circuit may have opened, or
     * half-opened, since the call began. A probe this call already holds is
     * its own again. */
    int (*admit)(void *ud, int target, lf_health *out);
    /* Optional (NULL: every wait goes through wait). When set, transfers are
     * driven by socket readiness and every wait comes here instead: until fd
     * is readable or timeout_ms passes (0: only let other work run; -1: no
     * timeout, the fd holds a timer of the core's), or a plain sleep of
     * timeout_ms when fd is -1. The host may run other work
     * meanwhile, other calls included (a Fiber scheduler). */
    int (*wait_fd)(void *ud, int fd, int timeout_ms);
    /* Optional, with wait_fd (on_wake NULL: none): a descriptor of the
     * host's that the loop watches beside the transfer, so that the host can
     * end a wait from anywhere (another thread, another fiber) by making it
     * readable. A sleep between retries waits on it (wait_fd with wake_fd).
     * When it is readable, on_wake is called: nonzero stops the call; zero
     * goes on, and the host has drained it. */
    int wake_fd;
    int (*on_wake)(void *ud);
} lf_listener;

typedef struct lf_outcome {
    int ok;
    int aborted;                  /* a listener callback stopped the call */
    int target;                   /* the target that answered, or whose error is final */
    int first_target;             /* where the loop started: always 0 (the host passes the
                                     targets in the order to try, its quota's pick first) */
    int attempts;
    lf_answer answer;             /* on success */
    lf_buf json;                  /* on success with json_mode or a schema: the answer's
                                     object as strict JSON (lf_json_answer_check) */
    lf_kind kind;                 /* on failure */
    lf_phase phase;               /* LF_E_TIMEOUT: which deadline passed */
    int retryable;
    long status;
    lf_buf message;
    lf_buf body;                  /* error body (capped) */
    double retry_after;           /* -1 when none */
    lf_buf partial;               /* text streamed before a final failure */
    lf_buf provider_request_id;
    lf_buf error_type;
    lf_buf error_code;
} lf_outcome;

void lf_outcome_init(lf_outcome *o);
void lf_outcome_free(lf_outcome *o);

/* One call, as the host hands it to lf_run. */
typedef struct lf_run_args {
    lf_pool *pool;
    const lf_target *targets;     /* the primary; targets[1], when given, is the backup */
    size_t n_targets;
    const lf_request_params *params; /* api and model are taken from each target */
    const lf_policy *policy;
    const lf_listener *listener;
} lf_run_args;

/* Runs the call. Returns 0 when the outcome is filled (success or a provider
 * failure), -1 on bad arguments or out of
 * memory (o->message says which). */
int lf_run(const lf_run_args *args, lf_outcome *o);

#endif
