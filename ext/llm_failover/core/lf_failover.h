/* The attempt loop: one logical call over an ordered list of targets (the
 * primary, then at most one backup; each of them may be a pool of hosts, a
 * tier: lf_target.h). Picks a pool's host by weight among those with
 * headroom, moves to another of them on a failure it may fix, retries a
 * target where that helps, fails over where that helps, resets partial
 * streamed output before another host or the backup answers, and reports
 * every attempt. It talks to its host (the Ruby
 * binding) only through the listener and the breaker below, and never from
 * inside libcurl. */
#ifndef LF_FAILOVER_H
#define LF_FAILOVER_H

#include <stddef.h>
#include "lf_backoff.h"
#include "lf_buf.h"
#include "lf_circuit.h"
#include "lf_classify.h"
#include "lf_headroom.h"
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
    long input_tokens;            /* -1 when unknown; every input token billed (cached included) */
    long output_tokens;
    long cached_input_tokens;     /* of input_tokens, read from a prompt cache; -1 when unknown */
    long cache_write_tokens;      /* of input_tokens, written to a prompt cache; -1 when unknown */
    double started_at;            /* wall clock, epoch seconds */
    const char *provider_request_id; /* NULL when none */
    int skipped;                  /* no request sent: the target's circuit is open, or it cannot
                                     take the attachments */
    int reached;                  /* the request may have reached the provider (lf_transfer_reached):
                                     not a skip, a refused connection or a connect timeout */
    int hedge;                    /* one of a hedged request's two attempts, run side by side */
    int lost;                     /* the hedge's loser: cut when the other produced a token first */
    int cancelled;                /* cut by the host's cancel (LF_CANCEL), or, with no request
                                     under way, the cancel itself */
} lf_attempt_record;

/* A target's health as the host's state store sees it when the call starts. */
typedef struct lf_health {
    lf_route route;               /* send, skip (open), or probe (this call holds the probe; from health, free to take) */
    int failures;                 /* consecutive counted failures known so far */
    double open_for;              /* skip: seconds until the store lets a request through again; 0: not said */
    lf_headroom headroom;         /* a pool's host: what it last said is left (seconds from now) */
} lf_health;

/* What the loop tells the breaker of one attempt (lf_listener.report). */
typedef struct lf_circuit_report {
    int target;                   /* index into the targets */
    int success;
    lf_kind kind;                 /* LF_OK on success */
    double hold;                  /* the Retry-After cooldown it asks for (lf_circuit_hold), 0 for none */
    /* A pool's host: what its answer said of its headroom (LF_HEADROOM_UNSAID
     * for other targets, or when nothing was said), and whether that leaves
     * it unable to take another call like this one before its window refills
     * (lf_headroom_wait): what a fleet's other calls must hear of. */
    lf_headroom headroom;
    int dry;
} lf_circuit_report;

/* What a callback returns: 0 goes on; LF_CANCEL cancels the call (the host's
 * user asked: the outcome is cancelled, with the text delivered so far); any
 * other nonzero value stops it at once (the outcome is aborted, and the host
 * raises what it stashed). */
#define LF_CANCEL 2

/* One blocking wait of a poll-driven call (lf_transport.h): the host runs it
 * with lf_wait_block, where it may let other threads run, and may end it
 * early from any thread or a signal handler with lf_wait_wake. */
typedef struct lf_wait lf_wait;

typedef struct lf_listener {
    void *ud;
    int (*on_chunk)(void *ud, int target, const char *text, size_t len);
    /* The text delivered so far is withdrawn: `target` answers next. */
    int (*on_reset)(void *ud, int target);
    /* Every attempt, also the one a callback stopped (kind LF_E_ABORTED):
     * that one comes after the stopping callback, while the host is on its
     * way out, and its return value is ignored. */
    int (*on_attempt)(void *ud, const lf_attempt_record *rec);
    /* Every blocking wait of a poll-driven call: the host runs w
     * (lf_wait_block) and may end it early (lf_wait_wake). */
    int (*wait)(void *ud, lf_wait *w);
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

/* The call's circuit breaker (lf_run_args.breaker, NULL for none): where the
 * loop asks which targets it may send to, and tells what its attempts did.
 * The core's in-process store is one (lf_circuits_bind); a host may give its
 * own (a store shared by a fleet). Its callbacks return as the listener's do. */
typedef struct lf_breaker {
    void *ud;
    /* Once, before the first attempt: out[i] for each target. A PROBE there
     * only says the probe is free (lf_circuit_peek): the loop takes it through
     * admit just before it sends to that target. */
    int (*health)(void *ud, size_t n_targets, lf_health *out);
    /* One target's route again, just before a request that is not the
     * call's first (a retry, or a target reached by failing over) and before
     * the first request to a target whose probe health said is free: the
     * circuit may have opened, or half-opened, since the call began. A probe
     * this call already holds is its own again. NULL: health's answer holds
     * for the whole call, its PROBE a probe taken. */
    int (*admit)(void *ud, int target, lf_health *out);
    /* After an attempt that bears on its target's circuit (every success,
     * whenever the call began, or a failure lf_circuit_counts), with what it
     * said of a pool host's headroom; sets *open when the circuit is open
     * afterwards. */
    int (*report)(void *ud, const lf_circuit_report *r, int *open);
    /* Optional: the call is over (however it ended); a probe it holds and
     * never reported on is free again. */
    void (*finish)(void *ud);
} lf_breaker;

typedef struct lf_outcome {
    int ok;
    int aborted;                  /* a callback stopped the call (the host raises what it stashed) */
    int cancelled;                /* a callback cancelled it (LF_CANCEL): partial holds the text
                                     delivered, target the one answering or about to */
    int target;                   /* the target that answered, or whose error is final */
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
    /* The call's tiers over targets, in order (the primary's hosts, then the
     * backup's); NULL: each target a tier of its own. */
    const lf_tier *tiers;
    size_t n_tiers;
    /* NULL, or one of a pool's targets the call goes to first while it has
     * headroom: the host the chat's turn started on (its prompt cache). */
    const lf_target *stay;
    /* The most tokens the request may be counted for: a pool's host that
     * said it has fewer left has no headroom for it (0: not known, 1). */
    long tokens;
    const lf_request_params *params; /* api and model are taken from each target */
    const lf_policy *policy;
    const lf_listener *listener;
    const lf_breaker *breaker;    /* NULL: no circuits */
} lf_run_args;

/* Runs the call. Returns 0 when the outcome is filled (success or a provider
 * failure), -1 on bad arguments or out of
 * memory (o->message says which). */
int lf_run(const lf_run_args *args, lf_outcome *o);

#endif
