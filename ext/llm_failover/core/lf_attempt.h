/* One HTTP attempt of a call, and the call it belongs to: what the attempt
 * loop (lf_failover.c) and one attempt (lf_attempt.c: exchange, judge,
 * finish) share. Nothing outside the loop includes this. */
#ifndef LF_ATTEMPT_H
#define LF_ATTEMPT_H

#include <stdint.h>
#include "lf_failover.h"
#include "lf_prepare.h"
#include "lf_sse.h"

/* Longest single wait, so that a wall-clock jump or a missed wakeup can
 * never hold a call for long. */
#define LF_MAX_WAIT_MS 1000

/* One logical call. */
typedef struct lf_call {
    const lf_policy *pol;
    const lf_listener *l;
    const lf_prepared_call *prep; /* every target's request, the parsed schema */
    lf_pool *pool;
    lf_conn *conn;    /* the call's connection: its waits (and wake_fd) are this slot's */
    lf_conn *spare;   /* a second slot, for a hedged request (lf_hedge.c); NULL until one */
    const lf_breaker *breaker; /* NULL: no circuits */
    uint64_t rng;
    int attempt_no;
    int stream;       /* the request asks for a stream */
    int evented;      /* waits go through l->wait_fd (lf_conn_evented's fd) */
    int wake_fd;      /* l->wake_fd when it is watched (evented, on_wake set), else -1 */
    int stopped;      /* a callback asked to stop (lf_stop) */
    int cancelled;    /* ... with LF_CANCEL: the host cancelled the call */
    int cancel_recorded; /* an attempt cut by the cancel was recorded (else the cancel gets its own) */
    int current;      /* the target being tried, or about to be */
    double mark_mono, mark_wall; /* when the last attempt was recorded, or the call began */
    /* The consumer has seen content since the last reset. It can only be
     * the current attempt's: an attempt that delivered is never retried,
     * and failing over resets. So that attempt's answer text is the partial
     * output, and is not kept twice. */
    int delivered;
    const lf_target *targets;   /* every target: their secrets are redacted */
    size_t n_targets;
    /* JSON mode or a schema: every answer must pass lf_json_answer_check. */
    int want_json;
    /* An embeddings request: its answer must hold this many vectors; 0 for chat. */
    size_t embed_inputs;
} lf_call;

/* A callback's return value rc (lf_failover.h): nonzero stops the call,
 * LF_CANCEL also cancels it. Returns whether it stopped. */
static inline int lf_stop(lf_call *c, int rc)
{
    if (!rc) return 0;
    c->stopped = 1;
    if (rc == LF_CANCEL) c->cancelled = 1;
    return 1;
}

/* How the answer is read: a stream of events (Server-Sent Events, or AWS's
 * event stream for Bedrock: the protocol's lf_wire_stream_framing), or one
 * body. */
enum { LF_MODE_UNKNOWN = 0, LF_MODE_STREAM, LF_MODE_BODY };

/* One HTTP attempt. */
typedef struct lf_attempt {
    const lf_target *target;
    int target_index;
    int number;               /* its attempt number in the call */
    lf_conn *conn;            /* the slot it runs on (the call's, or the spare for a hedge) */
    int hedge;                /* it ran beside another attempt of the call (a hedged request) */
    int lost;                 /* the other one produced its first token first: this one was cut */
    int muted;                /* cut: what still arrives is read for the record, never delivered */
    lf_response resp;
    lf_framing framing;       /* how the target's protocol frames a stream */
    lf_sse_parser sse;
    lf_es_reader es;
    lf_stream_state stream;
    lf_answer answer;         /* non-streamed answers */
    lf_wire_error werr;
    lf_buf body;              /* non-streamed body or error body */
    int mode;                 /* LF_MODE_* */
    int stream_rc;            /* LF_STREAM_ERROR / LF_STREAM_INVALID once seen */
    int delivered;            /* this attempt delivered content */
    double started_mono;
    double started_wall;
    double first_token_at;    /* monotonic, 0 when none */
    lf_transfer transfer;     /* a deadline or a start that failed; the judged fact after lf_attempt_judge */
    int curl_done;
    CURLcode curl_rc;
    char errbuf[CURL_ERROR_SIZE];
    lf_buf message;
    lf_buf json;              /* the checked answer's object (want_json) */
    /* verdict */
    lf_verdict verdict;
    int success;
    double retry_after;
} lf_attempt;

/* An attempt at c's target `target_index`; c->attempt_no counts it. */
void lf_attempt_init(lf_attempt *a, lf_call *c, int target_index);
void lf_attempt_free(lf_attempt *a);
/* Sends the target's prepared request and reads the answer until it ends,
 * fails or a deadline passes; then judges it: a->success, or the facts of
 * the failure and a->verdict. Content goes to the listener as it comes. */
void lf_attempt_run(lf_call *c, lf_attempt *a);

/* lf_attempt_run in parts, for two attempts at once (lf_hedge.c). begin:
 * the request is sent on a->conn, beside lead's transfer when lead is set;
 * nonzero when it could not start (then it is over: end, judge). pump: one
 * step of the transfer, its bytes consumed; 1 when the exchange is over (it
 * ended, failed, a deadline passed, the host stopped the call), and
 * *deadline the attempt's next deadline otherwise. wait: until the call's
 * connection has activity or `deadline`. end: the transfer removed (a
 * running one cut, its connection closed). judge: the verdict, after end. */
int lf_exchange_begin(lf_call *c, lf_attempt *a, lf_conn *lead);
int lf_exchange_pump(lf_call *c, lf_attempt *a, double *deadline);
int lf_exchange_wait(lf_call *c, double now, double deadline);
void lf_exchange_end(lf_attempt *a);
void lf_attempt_judge(lf_call *c, lf_attempt *a);
/* The attempt has its first token (a streamed delta; a plain body's first
 * byte): the race of a hedged request is decided by it. */
int lf_attempt_started(const lf_call *c, const lf_attempt *a);

/* A hedged request (lf_hedge.c): the first attempt at target ti, with the
 * backup `backup` started beside it once the first token is hedge_after
 * late. Returns LF_HEDGE_NONE (no backup was started: a ran alone),
 * LF_HEDGE_FIRST (b ran, and was recorded: a goes on as usual; the caller
 * frees b) or LF_HEDGE_BACKUP (a was recorded: b, the backup's first
 * attempt, goes on; the caller frees a). Either one that goes on is judged,
 * not yet recorded. */
enum { LF_HEDGE_NONE, LF_HEDGE_FIRST, LF_HEDGE_BACKUP };
int lf_hedge_run(lf_call *c, lf_attempt *a, lf_attempt *b, int backup, lf_health *health);
/* Whether the first request hedges to `backup` (-1: none). */
int lf_hedge_wanted(const lf_call *c, int backup);
/* The attempt's answer: the stream's, or the plain body's. */
const lf_answer *lf_attempt_answer(const lf_attempt *a);

/* The finish of an attempt (lf_attempt_finish.c), for the loop and the hedge
 * alike. record: the attempt's record to the listener. report: to the
 * breaker, when it bears on its target's circuit; 1 when a counted failure
 * left the circuit open. */
void lf_record_attempt(lf_call *c, const lf_attempt *a);
int lf_report_circuit(lf_call *c, const lf_attempt *a, lf_health *h);
/* The host cancelled the call with no attempt under way (a wait between
 * attempts, a callback between them): the cancel's own record, once. */
void lf_record_cancel(lf_call *c);
/* The answer moves into the outcome: the attempt ends right after. */
void lf_attempt_finish_success(lf_attempt *a, lf_outcome *o);
/* The failure becomes the call's outcome. */
void lf_attempt_finish_failure(const lf_call *c, lf_attempt *a, lf_outcome *o);

#endif
