#define _GNU_SOURCE /* memmem */
#include "lf_failover.h"

#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "lf_json_answer.h"
#include "lf_sse.h"
#include "lf_utf8.h"

#include "lf_banned.h"

/* An error body is kept for the exception up to this size. */
#define LF_ERROR_BODY_CAP (64u * 1024u)
/* Longest single wait, so that a wall-clock jump or a missed wakeup can
 * never hold a call for long. */
#define LF_MAX_WAIT_MS 1000

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

/* One logical call. */
typedef struct lf_call {
    const lf_policy *pol;
    const lf_listener *l;
    lf_conn *conn;
    uint64_t rng;
    int attempt_no;
    int evented;      /* waits go through l->wait_fd (lf_conn_evented's fd) */
    int wake_fd;      /* l->wake_fd when it is watched (evented, on_wake set), else -1 */
    int stopped;      /* a listener callback asked to stop */
    /* The consumer has seen content since the last reset. It can only be
     * the current attempt's: an attempt that delivered is never retried,
     * and failing over resets. So that attempt's answer text is the partial
     * output, and is not kept twice. */
    int delivered;
    const lf_target *targets;   /* every target: their secrets are redacted */
    size_t n_targets;
    /* JSON mode or a schema: every answer must pass lf_json_answer_check. */
    int want_json;
    json_object *schema;      /* parsed once per call; NULL without one */
} lf_call;

/* One HTTP attempt. */
typedef struct lf_attempt {
    const lf_target *target;
    int target_index;
    int stream_requested;
    lf_response resp;
    lf_sse_parser sse;
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
    lf_transfer transfer;
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

enum { LF_MODE_UNKNOWN = 0, LF_MODE_SSE, LF_MODE_BODY };

static double lf_random(lf_call *c)
{
    /* xorshift64*: jitter only, no need for more. */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void lf_attempt_init(lf_attempt *a, const lf_target *t, int stream, size_t max_bytes)
{
    memset(a, 0, sizeof(*a));
    a->target = t;
    a->stream_requested = stream;
    lf_response_init(&a->resp, max_bytes);
    lf_sse_init(&a->sse);
    lf_stream_init(&a->stream, t->api);
    lf_answer_init(&a->answer);
    lf_wire_error_init(&a->werr);
    lf_buf_init(&a->body);
    lf_buf_init(&a->message);
    lf_buf_init(&a->json);
    a->retry_after = -1;
}

static void lf_attempt_free(lf_attempt *a)
{
    lf_response_free(&a->resp);
    lf_sse_free(&a->sse);
    lf_stream_free(&a->stream);
    lf_answer_free(&a->answer);
    lf_wire_error_free(&a->werr);
    lf_buf_free(&a->body);
    lf_buf_free(&a->message);
    lf_buf_free(&a->json);
}

static void lf_msg(lf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lf_msg(lf_buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    lf_buf_set(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static int lf_deliver(lf_call *c, lf_attempt *a, const char *text, size_t len)
{
    if (!len) return 0;
    if (!a->first_token_at) a->first_token_at = lf_now_monotonic();
    a->delivered = 1;
    c->delivered = 1;
    if (c->l->on_chunk(c->l->ud, a->target_index, text, len) != 0) {
        c->stopped = 1;
        return -1;
    }
    return 0;
}

typedef struct lf_sse_ctx {
    lf_call *call;
    lf_attempt *a;
} lf_sse_ctx;

static int lf_on_sse_event(void *ud, const lf_sse_event *ev)
{
    lf_sse_ctx *x = ud;
    const char *delta = NULL;
    size_t dlen = 0;
    int rc = lf_stream_event(&x->a->stream, ev, &delta, &dlen);

    if (rc == LF_STREAM_ERROR || rc == LF_STREAM_INVALID) {
        x->a->stream_rc = rc;
        return 1;
    }
    if (dlen && lf_deliver(x->call, x->a, delta, dlen) != 0) return 1;
    return 0;
}

static int lf_is_2xx(long status)
{
    return status >= 200 && status < 300;
}

/* Hands the bytes received so far to the parser. Returns nonzero when the
 * attempt must end now (in-stream error, malformed event, listener stop). */
static int lf_consume(lf_call *c, lf_attempt *a)
{
    lf_response *r = &a->resp;
    int rc = 0;

    if (!r->inbox.len) return 0;
    if (a->mode == LF_MODE_UNKNOWN) {
        int sse = a->stream_requested && lf_is_2xx(r->status) && r->event_stream;
        a->mode = sse ? LF_MODE_SSE : LF_MODE_BODY;
    }
    if (a->mode == LF_MODE_SSE) {
        lf_sse_ctx x = { c, a };
        int src = lf_sse_feed(&a->sse, r->inbox.ptr, r->inbox.len, lf_on_sse_event, &x);
        if (src == LF_SSE_ERR_LINE_TOO_LONG || src == LF_SSE_ERR_NOMEM) a->stream_rc = LF_STREAM_INVALID;
        if (src != 0) rc = 1;
    } else if (!a->body.len) {
        /* The first bytes of a body: take the inbox's memory instead of a
         * copy (the inbox gets the body's empty buffer). */
        lf_buf tmp = a->body;
        a->body = r->inbox;
        r->inbox = tmp;
    } else {
        lf_buf_append(&a->body, r->inbox.ptr, r->inbox.len);
    }
    lf_buf_clear(&r->inbox);
    return rc;
}

static lf_transfer lf_transfer_from_curl(const lf_attempt *a)
{
    switch (a->curl_rc) {
    case CURLE_OK: return LF_T_OK;
    case CURLE_COULDNT_CONNECT: return LF_T_REFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return LF_T_DNS;
    case CURLE_PEER_FAILED_VERIFICATION: /* CURLE_SSL_CACERT is the same code */
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return LF_T_TLS_VERIFY;
    case CURLE_OPERATION_TIMEDOUT: return a->resp.status ? LF_T_TOTAL_TIMEOUT : LF_T_CONNECT_TIMEOUT;
    case CURLE_WRITE_ERROR: return a->resp.too_large ? LF_T_TOO_LARGE : LF_T_CONNECTION;
    case CURLE_ABORTED_BY_CALLBACK: return a->resp.resend_refused ? LF_T_CONNECTION : LF_T_ABORTED;
    default: return LF_T_CONNECTION;
    }
}

/* Runs one HTTP exchange until it ends, fails, or a deadline passes. */
static void lf_exchange(lf_call *c, lf_attempt *a, const char *url, const lf_buf *body,
                        struct curl_slist *headers)
{
    const lf_policy *pol = c->pol;
    lf_http_request req;
    double now, deadline;
    lf_transfer which;
    int ms;

    req.url = url;
    req.headers = headers;
    req.body = body->ptr;
    req.body_len = body->len;
    req.connect_timeout_ms = pol->connect_timeout > 0 ? (long)ceil(pol->connect_timeout * 1000.0) : 0;
    req.errbuf = a->errbuf;
    req.evented = c->evented;

    a->started_mono = lf_now_monotonic();
    a->started_wall = lf_now_wall();
    if (lf_transfer_start(c->conn, &req, &a->resp) != 0) {
        a->transfer = LF_T_OTHER;
        lf_msg(&a->message, "could not start the transfer");
        return;
    }
    for (;;) {
        if (lf_transfer_step(c->conn, &a->curl_done, &a->curl_rc) != 0) {
            a->transfer = LF_T_OTHER;
            break;
        }
        if (lf_consume(c, a) != 0) break;
        if (a->curl_done) break;
        if (c->conn->woken) {
            c->conn->woken = 0;
            if (c->l->on_wake(c->l->ud) != 0) {
                c->stopped = 1;
                break;
            }
        }

        now = lf_now_monotonic();
        deadline = pol->request_timeout > 0 ? a->started_mono + pol->request_timeout : INFINITY;
        which = LF_T_TOTAL_TIMEOUT;
        if (a->stream_requested && !a->first_token_at && pol->first_token_timeout > 0 &&
            !a->stream.done && !a->stream.finished) {
            /* Streamed: the provider must start answering in time. */
            if (a->started_mono + pol->first_token_timeout < deadline) {
                deadline = a->started_mono + pol->first_token_timeout;
                which = LF_T_FIRST_TOKEN_TIMEOUT;
            }
        } else if (a->resp.last_byte_at > 0 && pol->idle_timeout > 0) {
            if (a->resp.last_byte_at + pol->idle_timeout < deadline) {
                deadline = a->resp.last_byte_at + pol->idle_timeout;
                which = LF_T_IDLE_TIMEOUT;
            }
        }
        if (now >= deadline) {
            a->transfer = which;
            break;
        }
        ms = isinf(deadline) ? LF_MAX_WAIT_MS : (int)ceil((deadline - now) * 1000.0);
        if (ms > LF_MAX_WAIT_MS) ms = LF_MAX_WAIT_MS;
        if (ms < 1) ms = 1;
        if (c->evented ? c->l->wait_fd(c->l->ud, c->conn->evfd, lf_transfer_wait_ms(c->conn, ms)) != 0
                       : c->l->wait(c->l->ud, c->conn->multi, ms) != 0) {
            c->stopped = 1;
            break;
        }
    }
    lf_transfer_end(c->conn);
}

static void lf_fill_record(const lf_call *c, const lf_attempt *a, int target_index, lf_attempt_record *rec)
{
    const lf_answer *ans = a->mode == LF_MODE_SSE ? &a->stream.answer : &a->answer;
    double end = lf_now_monotonic();

    memset(rec, 0, sizeof(*rec));
    rec->attempt = c->attempt_no;
    rec->target = target_index;
    rec->success = a->success;
    rec->kind = a->success ? LF_OK : a->verdict.kind;
    rec->phase = a->success ? LF_PHASE_NONE : a->verdict.phase;
    rec->error_message = a->success ? NULL : lf_buf_cstr(&a->message);
    rec->http_status = a->resp.status;
    rec->failover_eligible = a->success ? 0 : a->verdict.failover;
    rec->retry_after = a->retry_after;
    rec->latency_ms = (end - a->started_mono) * 1000.0;
    if (a->first_token_at) rec->first_token_ms = (a->first_token_at - a->started_mono) * 1000.0;
    else if (!a->stream_requested && a->resp.first_byte_at)
        rec->first_token_ms = (a->resp.first_byte_at - a->started_mono) * 1000.0;
    else rec->first_token_ms = -1;
    rec->input_tokens = ans->input_tokens;
    rec->output_tokens = ans->output_tokens;
    rec->started_at = a->started_wall;
    rec->provider_request_id = a->resp.request_id.len ? lf_buf_cstr(&a->resp.request_id) : NULL;
}

static const char *lf_api_name(lf_api api)
{
    return api == LF_API_ANTHROPIC ? "Anthropic messages" : "OpenAI chat completions";
}

/* The one rule for secrets. Providers quote a wrong key back ("Incorrect API
 * key provided: sk-..."), and an error page may echo a request header: no
 * secret of the call may leave the core in a message, a record, an error
 * body or an error type or code, whole or in part. The secrets are every
 * target's api_key and its header values of LF_SECRET_HEADER_MIN bytes or
 * more (shorter values are settings such as "2023-06-01", not secrets).
 * Everything a provider sent is redacted here before any message quotes or
 * cuts it: once cut, a key is no longer found. */
#define LF_SECRET_HEADER_MIN 8
#define LF_SECRET_TAIL_MIN 4

static const char lf_redacted[] = "[REDACTED]";

/* Replaces every occurrence of secret in b; with cut, also a tail of b that
 * is the secret's first LF_SECRET_TAIL_MIN or more bytes (b was cut there). */
static void lf_redact_one(lf_buf *b, const char *secret, size_t slen, int cut)
{
    lf_buf out;
    const char *p, *hit, *end;
    size_t k;

    if (!b->len) return;
    if (memmem(b->ptr, b->len, secret, slen)) {
        lf_buf_init(&out);
        p = b->ptr;
        end = b->ptr + b->len;
        while ((hit = memmem(p, (size_t)(end - p), secret, slen)) != NULL) {
            lf_buf_append(&out, p, (size_t)(hit - p));
            lf_buf_append(&out, lf_redacted, sizeof lf_redacted - 1);
            p = hit + slen;
        }
        lf_buf_append(&out, p, (size_t)(end - p));
        lf_buf_free(b);
        *b = out;
    }
    for (k = slen - 1; cut && k >= LF_SECRET_TAIL_MIN; k--) {
        if (b->len >= k && memcmp(b->ptr + b->len - k, secret, k) == 0) {
            b->len -= k;
            b->ptr[b->len] = '\0';
            lf_buf_append(b, lf_redacted, sizeof lf_redacted - 1);
            break;
        }
    }
}

static void lf_redact(const lf_call *c, lf_buf *b, int cut)
{
    size_t i, k, n;
    const char *v;

    for (i = 0; i < c->n_targets; i++) {
        const lf_target *t = &c->targets[i];

        n = t->api_key ? strlen(t->api_key) : 0;
        if (n >= LF_SECRET_TAIL_MIN) lf_redact_one(b, t->api_key, n, cut);
        for (k = 0; k < t->n_headers; k++) {
            v = t->headers[k] ? strstr(t->headers[k], ": ") : NULL;
            if (!v) continue;
            v += 2;
            n = strlen(v);
            if (n >= LF_SECRET_HEADER_MIN) lf_redact_one(b, v, n, cut);
        }
    }
}

/* What the provider sent, as far as it has been read. The body was cut
 * when it outgrew max_response_bytes. */
static void lf_redact_attempt(const lf_call *c, lf_attempt *a)
{
    lf_redact(c, &a->body, a->resp.too_large);
    lf_redact(c, &a->werr.type, 0);
    lf_redact(c, &a->werr.code, 0);
    lf_redact(c, &a->werr.message, 0);
    lf_redact(c, &a->stream.error.type, 0);
    lf_redact(c, &a->stream.error.code, 0);
    lf_redact(c, &a->stream.error.message, 0);
}

/* Decides what the finished exchange amounts to: success, or the facts of
 * a failure and their verdict. */
static void lf_judge(lf_call *c, lf_attempt *a)
{
    lf_facts f;
    const lf_response *r = &a->resp;
    int have_err = 0;

    memset(&f, 0, sizeof(f));
    f.should_retry = r->should_retry;
    f.status = r->status;
    f.transfer = a->transfer;

    if (c->stopped) {
        f.transfer = LF_T_ABORTED;
        lf_msg(&a->message, "call stopped by the host");
    } else if (a->transfer == LF_T_OK && a->curl_done && a->curl_rc != CURLE_OK) {
        f.transfer = lf_transfer_from_curl(a);
    }

    /* A stream whose terminal event arrived is an answer, however the
     * connection ended after it. */
    if (a->mode == LF_MODE_SSE && !a->stream_rc && f.transfer != LF_T_ABORTED) {
        if (f.transfer == LF_T_OK) {
            lf_sse_ctx x = { c, a };
            lf_sse_finish(&a->sse, lf_on_sse_event, &x);
            if (c->stopped) {
                f.transfer = LF_T_ABORTED;
                lf_msg(&a->message, "call stopped by the host");
            }
        }
        if (f.transfer != LF_T_ABORTED && lf_stream_complete(&a->stream)) {
            a->success = 1;
            return;
        }
    }

    lf_redact_attempt(c, a);
    if (f.transfer == LF_T_OK && lf_is_2xx(r->status)) {
        if (a->mode == LF_MODE_SSE) {
            if (a->stream_rc == LF_STREAM_ERROR) {
                f.in_stream = 1;
                have_err = 1;
                lf_buf_copy(&a->werr.type, &a->stream.error.type);
                lf_buf_copy(&a->werr.code, &a->stream.error.code);
                lf_buf_copy(&a->werr.message, &a->stream.error.message);
                lf_msg(&a->message, "error event in the stream: %s%s%s",
                       lf_buf_cstr(&a->werr.type), a->werr.message.len ? ": " : "",
                       lf_buf_cstr(&a->werr.message));
            } else if (a->stream_rc == LF_STREAM_INVALID) {
                f.invalid_body = 1;
                lf_msg(&a->message, "malformed event in the %s stream", lf_api_name(a->target->api));
            } else {
                f.stream_interrupted = 1;
                lf_msg(&a->message, "stream ended without its terminal event after %zu bytes",
                       r->body_bytes);
            }
        } else {
            int rc = (c->schema ? lf_wire_parse_tool_response : lf_wire_parse_response)(
                a->target->api, a->body.ptr ? a->body.ptr : "", a->body.len, &a->answer, &a->werr);
            lf_redact_attempt(c, a);   /* the error read from it, \u escapes undone */
            if (rc == LF_WIRE_OK) {
                a->success = 1;
                /* A streamed call answered with a plain body still shows its
                 * text to the consumer. */
                if (a->stream_requested && a->answer.text.len &&
                    lf_deliver(c, a, a->answer.text.ptr, a->answer.text.len) != 0) {
                    a->success = 0;
                    f.transfer = LF_T_ABORTED;
                    lf_msg(&a->message, "call stopped by the host");
                } else {
                    return;
                }
            } else if (rc == LF_WIRE_ERROR_BODY) {
                f.in_stream = 1;
                have_err = 1;
                lf_msg(&a->message, "HTTP %ld with an error body: %s", r->status,
                       lf_buf_cstr(&a->werr.message));
            } else {
                f.invalid_body = 1;
                if (!a->body.len) lf_msg(&a->message, "HTTP %ld with an empty body", r->status);
                else lf_msg(&a->message, "HTTP %ld body is not the %s protocol: %.80s", r->status,
                            lf_api_name(a->target->api), lf_buf_cstr(&a->body));
            }
        }
    } else if (f.transfer == LF_T_OK || (r->status >= 300 && f.transfer == LF_T_CONNECTION)) {
        /* An error status (the body may have been cut short: still judge by the status). */
        f.transfer = LF_T_OK;
        have_err = lf_wire_parse_error(a->body.ptr ? a->body.ptr : "", a->body.len, &a->werr);
        lf_redact_attempt(c, a);
        if (have_err && a->werr.message.len)
            lf_msg(&a->message, "HTTP %ld: %s", r->status, lf_buf_cstr(&a->werr.message));
        else if (a->body.len)
            lf_msg(&a->message, "HTTP %ld: %.200s", r->status, lf_buf_cstr(&a->body));
        else
            lf_msg(&a->message, "HTTP %ld", r->status);
    } else {
        switch (f.transfer) {
        case LF_T_REFUSED: lf_msg(&a->message, "connection refused: %s", a->errbuf); break;
        case LF_T_DNS: lf_msg(&a->message, "could not resolve host: %s", a->errbuf); break;
        case LF_T_TLS_VERIFY:
            lf_msg(&a->message, "TLS certificate verification failed: %s",
                   a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->curl_rc));
            break;
        case LF_T_CONNECT_TIMEOUT:
            lf_msg(&a->message, "connect timeout after %.3gs: %s", c->pol->connect_timeout, a->errbuf);
            break;
        case LF_T_FIRST_TOKEN_TIMEOUT:
            lf_msg(&a->message, "first token timeout: no content within %.3gs", c->pol->first_token_timeout);
            break;
        case LF_T_IDLE_TIMEOUT:
            lf_msg(&a->message, "idle timeout: no data for %.3gs", c->pol->idle_timeout);
            break;
        case LF_T_TOTAL_TIMEOUT:
            lf_msg(&a->message, "total timeout: the attempt took over %.3gs", c->pol->request_timeout);
            break;
        case LF_T_TOO_LARGE:
            lf_msg(&a->message, "response exceeded %zu bytes", a->resp.max_bytes);
            break;
        case LF_T_ABORTED:
            if (!a->message.len) lf_msg(&a->message, "call stopped by the host");
            break;
        default:
            if (a->resp.resend_refused)
                lf_msg(&a->message, "connection failed: a reused connection closed before any response, "
                                    "after the provider may have received the request; not sent again");
            else if (a->mode == LF_MODE_SSE)
                lf_msg(&a->message, "stream ended without its terminal event after %zu bytes: %s",
                       r->body_bytes, a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->curl_rc));
            else
                lf_msg(&a->message, "connection failed: %s",
                       a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->curl_rc));
            break;
        }
        /* A 2xx stream cut by the network is an interrupted stream. */
        if (f.transfer == LF_T_CONNECTION && a->mode == LF_MODE_SSE) {
            f.transfer = LF_T_OK;
            f.stream_interrupted = 1;
        }
    }

    if (have_err) {
        f.error_type = a->werr.type.len ? a->werr.type.ptr : NULL;
        f.error_code = a->werr.code.len ? a->werr.code.ptr : NULL;
        f.error_message = a->werr.message.len ? a->werr.message.ptr : NULL;
    }
    a->verdict = lf_classify(&f);
    if (a->verdict.kind == LF_E_CONTEXT_LENGTH && c->pol->failover_on_context_length)
        a->verdict.failover = 1;
    a->retry_after = lf_retry_after_seconds(r->retry_after.len ? r->retry_after.ptr : NULL,
                                            r->retry_after_ms.len ? r->retry_after_ms.ptr : NULL,
                                            time(NULL));
}

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
        if (ms > LF_MAX_WAIT_MS) ms = LF_MAX_WAIT_MS;
        if (c->evented ? c->l->wait_fd(c->l->ud, c->wake_fd, ms) != 0 : c->l->wait(c->l->ud, c->conn->multi, ms) != 0) {
            c->stopped = 1;
            return -1;
        }
        if (c->wake_fd >= 0 && lf_fd_readable(c->wake_fd) && c->l->on_wake(c->l->ud) != 0) {
            c->stopped = 1;
            return -1;
        }
    }
    return 0;
}

/* JSON mode and schemas: an answer that is not one JSON object, or breaks
 * the schema, is a failed attempt (InvalidResponseError: retried, then
 * failed over), its tokens kept in the record. */
static void lf_check_json(lf_call *c, lf_attempt *a)
{
    const lf_answer *ans = a->mode == LF_MODE_SSE ? &a->stream.answer : &a->answer;
    lf_facts f;
    int rc;

    rc = lf_json_answer_check(lf_buf_cstr(&ans->text), ans->text.len, c->schema, &a->json, &a->message);
    if (rc == LF_JSON_ANSWER_OK) return;
    if (rc < 0) {
        lf_msg(&a->message, "out of memory checking the JSON answer");
    } else if (ans->text.len) {
        /* The start of what came, to tell prose from broken JSON: redacted
         * whole before it is cut (an answer may quote a key). */
        lf_buf start;
        size_t n;

        lf_buf_init(&start);
        if (lf_buf_copy(&start, &ans->text) == 0) {
            lf_redact(c, &start, 0);
            n = start.len < 60 ? start.len : 60;
            if (lf_buf_append_str(&a->message, " (the answer begins: ") == 0 &&
                lf_utf8_append_sanitized(&a->message, start.ptr, n) == 0)
                (void)lf_buf_append_char(&a->message, ')');
        }
        lf_buf_free(&start);
    }
    lf_redact(c, &a->message, 1); /* a key quoted by the schema check's reason */
    a->success = 0;
    memset(&f, 0, sizeof(f));
    f.should_retry = a->resp.should_retry; /* x-should-retry, as for any answer */
    f.status = a->resp.status;
    f.transfer = LF_T_OK;
    f.invalid_body = 1;
    a->verdict = lf_classify(&f);
    a->retry_after = -1;
}

static void lf_finish_failure(lf_call *c, lf_attempt *a, int target_index, lf_outcome *o)
{
    o->ok = 0;
    o->aborted = c->stopped || a->verdict.kind == LF_E_ABORTED;
    o->target = target_index;
    o->kind = a->verdict.kind;
    o->phase = a->verdict.phase;
    o->retryable = a->verdict.retryable;
    o->status = a->resp.status;
    o->retry_after = a->retry_after;
    lf_buf_copy(&o->message, &a->message);
    if (a->mode != LF_MODE_SSE && a->body.len)
        lf_buf_set(&o->body, a->body.ptr, a->body.len < LF_ERROR_BODY_CAP ? a->body.len : LF_ERROR_BODY_CAP);
    if (c->delivered)
        lf_buf_copy(&o->partial, a->mode == LF_MODE_SSE ? &a->stream.answer.text : &a->answer.text);
    lf_buf_copy(&o->provider_request_id, &a->resp.request_id);
    lf_buf_copy(&o->error_type, &a->werr.type);
    lf_buf_copy(&o->error_code, &a->werr.code);
}

/* The answer moves into the outcome: the attempt ends right after. */
static void lf_finish_success(lf_attempt *a, int target_index, lf_outcome *o)
{
    lf_answer *src = a->mode == LF_MODE_SSE ? &a->stream.answer : &a->answer;
    o->ok = 1;
    o->target = target_index;
    o->status = a->resp.status;
    lf_buf_move(&o->answer.text, &src->text);
    if (src->model.len) lf_buf_move(&o->answer.model, &src->model);
    else lf_buf_set(&o->answer.model, a->target->model, strlen(a->target->model));
    lf_buf_move(&o->answer.finish_reason, &src->finish_reason);
    lf_buf_move(&o->answer.id, &src->id);
    o->answer.input_tokens = src->input_tokens;
    o->answer.output_tokens = src->output_tokens;
    lf_buf_move(&o->provider_request_id, &a->resp.request_id);
    lf_buf_move(&o->json, &a->json);
}

/* Header lines besides the target's own: lf_transport_default_headers'
 * two, Content-Type, Accept, Expect, anthropic-version and the key. */
#define LF_FIXED_HEADERS 7

typedef struct lf_prepared {
    lf_buf body;
    /* One allocation holds the header list's nodes, the URL and the key's
     * header line. libcurl only reads a header list (it copies nothing and
     * frees nothing), so the nodes point at literals, that key line and the
     * target's own lines instead of the copies curl_slist_append makes (two
     * allocations a line). */
    void *mem;
    size_t mem_size;
    const char *url;
    struct curl_slist *headers;
} lf_prepared;

/* A memset the compiler cannot drop as a dead store before free. */
static void *(*const volatile lf_wipe)(void *, int, size_t) = memset;

static int lf_has_crlf(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* Whether two header lines name the same header, as libcurl matches a
 * custom line against one of its own: the name in any case, then ':' or
 * ';'. `ours` is a "Name: value" line. */
static int lf_same_header(const char *line, const char *ours)
{
    size_t n = (size_t)(strchr(ours, ':') - ours);
    return strncasecmp(line, ours, n) == 0 && (line[n] == ':' || line[n] == ';');
}

/* Builds URL, body and headers for a target before any network, so that a
 * request that cannot be built fails before the first byte is sent. */
static int lf_prepare(const lf_target *t, const lf_request_params *params, lf_prepared *p, lf_buf *err)
{
    lf_request_params tp = *params;
    const char *defaults[2], *path, *prefix;
    struct curl_slist *nodes;
    char *url, *key_line;
    size_t n_defaults, n = 0, blen, plen, xlen, klen, i, j;

    if (!t->base_url || !t->model || !t->api_key) {
        lf_msg(err, "target needs base_url, model and api_key");
        return -1;
    }
    if (lf_has_crlf(t->api_key)) {
        lf_msg(err, "API key contains a line break");
        return -1;
    }
    tp.api = t->api;
    tp.model = t->model;
    if (lf_wire_build_request(&tp, &p->body, err) != 0) return -1;
    for (i = 0; i < t->n_headers; i++) {
        if (!t->headers[i] || lf_has_crlf(t->headers[i]) || !strchr(t->headers[i], ':')) {
            lf_msg(err, "extra header %zu is not a single \"Name: value\" line", i);
            return -1;
        }
    }

    blen = strlen(t->base_url); /* normalised by its owner, the Ruby configuration */
    path = lf_wire_path(t->api);
    plen = strlen(path);
    prefix = t->api == LF_API_ANTHROPIC ? "x-api-key: " : "Authorization: Bearer ";
    xlen = strlen(prefix);
    klen = strlen(t->api_key);
    if (t->n_headers > ((size_t)-1) / sizeof(*nodes) - LF_FIXED_HEADERS) goto nomem;
    p->mem_size = (LF_FIXED_HEADERS + t->n_headers) * sizeof(*nodes);
    if (blen + plen + xlen + klen + 2 > ((size_t)-1) - p->mem_size) goto nomem;
    p->mem_size += blen + plen + 1 + xlen + klen + 1;
    p->mem = malloc(p->mem_size);
    if (!p->mem) goto nomem;
    nodes = p->mem;
    url = (char *)(nodes + LF_FIXED_HEADERS + t->n_headers);
    memcpy(url, t->base_url, blen);
    memcpy(url + blen, path, plen + 1);
    key_line = url + blen + plen + 1;
    memcpy(key_line, prefix, xlen);
    memcpy(key_line + xlen, t->api_key, klen + 1);
    p->url = url;
    /* First, where libcurl put them when it wrote them itself; a target's
     * own User-Agent or Accept-Encoding replaces ours, as it replaced
     * libcurl's. */
    n_defaults = lf_transport_default_headers(defaults);
    for (j = 0; j < n_defaults; j++) {
        int own = 0;

        for (i = 0; i < t->n_headers && !own; i++) own = lf_same_header(t->headers[i], defaults[j]);
        if (!own) nodes[n++].data = (char *)defaults[j];
    }
    nodes[n++].data = (char *)"Content-Type: application/json";
    nodes[n++].data = (char *)(params->stream ? "Accept: text/event-stream" : "Accept: application/json");
    nodes[n++].data = (char *)"Expect:";
    if (t->api == LF_API_ANTHROPIC) nodes[n++].data = (char *)"anthropic-version: 2023-06-01";
    nodes[n++].data = key_line;
    for (i = 0; i < t->n_headers; i++) nodes[n++].data = (char *)t->headers[i];
    for (i = 0; i + 1 < n; i++) nodes[i].next = &nodes[i + 1];
    nodes[n - 1].next = NULL;
    p->headers = nodes;
    return 0;
nomem:
    lf_msg(err, "out of memory");
    return -1;
}

static void lf_prepared_free(lf_prepared *p)
{
    lf_buf_free(&p->body);
    /* The key is not left behind in freed memory. */
    if (p->mem) lf_wipe(p->mem, 0, p->mem_size);
    free(p->mem);
    p->mem = NULL;
    p->url = NULL;
    p->headers = NULL;
}

/* The first target to try, from the quota (lf_pick); -1 when the call is
 * refused, with the outcome filled. */
static int lf_first_target(const lf_target *targets, size_t n_targets, const lf_budget *budget, lf_outcome *o)
{
    if (!budget) return 0;
    switch (lf_pick(&budget->quota, n_targets > 1, budget->enforce)) {
    case LF_PICK_BACKUP: return 1;
    case LF_PICK_REFUSE:
        o->ok = 0;
        o->kind = LF_E_QUOTA_EXCEEDED;
        lf_msg(&o->message, "quota exceeded for %s (used %.15g of %.15g) and no backup is configured; "
                            "enforce_quota refuses the call", targets[0].model ? targets[0].model : "?",
               budget->quota.used, budget->quota.limit);
        return -1;
    case LF_PICK_PRIMARY: break;
    }
    return 0;
}

static void lf_stopped(lf_outcome *o)
{
    o->ok = 0;
    o->aborted = 1;
    o->kind = LF_E_ABORTED;
    lf_msg(&o->message, "call stopped by the host");
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
    const lf_listener *l = c->l;
    lf_health h = health[ti];

    if (!l->admit || !l->report) return 0;
    if (l->admit(l->ud, ti, &h) != 0) {
        c->stopped = 1;
        return -1;
    }
    if (h.route == LF_ROUTE_SKIP && lf_next_target(health, (size_t)ti, c->n_targets) < 0) h.route = LF_ROUTE_SEND;
    health[ti] = h;
    return 0;
}

/* The record of a target left out because its circuit is open: no request,
 * no wait, its own attempt number. */
static int lf_skip(lf_call *c, int target_index, lf_outcome *o)
{
    lf_attempt_record rec;

    memset(&rec, 0, sizeof(rec));
    rec.attempt = ++c->attempt_no;
    rec.target = target_index;
    rec.kind = LF_E_OTHER;
    rec.error_message = "circuit open: no request sent";
    rec.failover_eligible = 1;
    rec.retry_after = -1;
    rec.first_token_ms = -1;
    rec.input_tokens = rec.output_tokens = -1;
    rec.started_at = lf_now_wall();
    rec.skipped = 1;
    o->attempts = c->attempt_no;
    if (c->l->on_attempt(c->l->ud, &rec) != 0) {
        c->stopped = 1;
        return -1;
    }
    return 0;
}

int lf_run(lf_pool *pool, const lf_target *targets, size_t n_targets,
           const lf_request_params *params, const lf_policy *pol, const lf_budget *budget,
           const lf_listener *l, lf_outcome *o)
{
    lf_prepared prep[LF_MAX_TARGETS];
    lf_health health[LF_MAX_TARGETS];
    lf_call call;
    size_t ti, i, first;
    int rc = -1, pick;
    int breaker = l && l->report; /* health is optional: see lf_listener */

    if (!pool || !targets || n_targets < 1 || n_targets > LF_MAX_TARGETS || !params || !pol || !l ||
        !l->on_chunk || !l->on_reset || !l->on_attempt || !l->wait) {
        lf_msg(&o->message, "lf_run: bad arguments");
        return -1;
    }
    /* The quota decides where the loop starts, before any network. */
    pick = lf_first_target(targets, n_targets, budget, o);
    if (pick < 0) return 0;
    first = (size_t)pick;
    o->first_target = pick;
    memset(prep, 0, sizeof(prep));
    for (i = 0; i < n_targets; i++) {
        lf_buf_init(&prep[i].body);
    }
    memset(&call, 0, sizeof(call));
    call.wake_fd = -1;
    call.pol = pol;
    call.l = l;
    call.targets = targets;
    call.n_targets = n_targets;
    call.rng = ((uint64_t)(lf_now_monotonic() * 1e9)) ^ ((uint64_t)(uintptr_t)&call << 16) ^ (uint64_t)lf_current_pid();
    if (!call.rng) call.rng = 0x9E3779B97F4A7C15ULL;

    for (i = first; i < n_targets; i++)
        if (lf_prepare(&targets[i], params, &prep[i], &o->message) != 0) goto out;
    call.want_json = params->json_mode || params->schema;
    if (params->schema) {
        /* lf_prepare has built a request from it: it parses. */
        call.schema = lf_json_schema_parse(params->schema, strlen(params->schema), &o->message);
        if (!call.schema) goto out;
    }

    call.conn = lf_pool_checkout(pool);
    if (!call.conn) {
        lf_msg(&o->message, "out of memory (connection)");
        goto out;
    }
    /* Without a readiness fd the call still works: its waits then hold the
     * host's thread (l->wait). */
    call.evented = l->wait_fd && lf_conn_evented(call.conn) >= 0;
    if (!call.evented && !lf_conn_multi(call.conn)) {
        lf_msg(&o->message, "out of memory (connection)");
        goto out;
    }
    call.wake_fd = call.evented && l->on_wake && lf_conn_watch_wake(call.conn, l->wake_fd) == 0 ? l->wake_fd : -1;

    for (i = 0; i < n_targets; i++) {
        health[i].route = LF_ROUTE_SEND;
        health[i].failures = 0;
    }
    if (breaker && l->health) {
        int all_open = 1;
        if (l->health(l->ud, n_targets, health) != 0) {
            call.stopped = 1;
            lf_stopped(o);
            rc = 0;
            goto out;
        }
        for (i = first; i < n_targets; i++) all_open = all_open && health[i].route == LF_ROUTE_SKIP;
        /* An open circuit never becomes an error by itself. */
        if (all_open) health[first].route = LF_ROUTE_SEND;
    }

    for (ti = first; ti < n_targets; ti++) {
        const lf_target *t = &targets[ti];
        int retry;
        int go_next = 0;
        int max_retries;
        int circuit_open = 0;

        /* health only told which probe is free: the call takes a probe when
         * it sends to that target, not before (its primary may answer). */
        if (((ti > first && health[ti].route != LF_ROUTE_SKIP) || health[ti].route == LF_ROUTE_PROBE) &&
            lf_readmit(&call, (int)ti, health) != 0) {
            lf_stopped(o);
            rc = 0;
            goto out;
        }
        max_retries = health[ti].route == LF_ROUTE_PROBE ? 0 : pol->max_retries; /* one probe request */
        if (health[ti].route == LF_ROUTE_SKIP) {
            /* Only when a later target will be tried (see all_open and the final failure below). */
            if (lf_skip(&call, (int)ti, o) != 0) {
                lf_stopped(o);
                rc = 0;
                goto out;
            }
            continue;
        }

        if (ti > first && call.delivered) {
            /* The consumer has seen words of an answer that will not be
             * finished: they must be withdrawn before the backup speaks. */
            call.delivered = 0;
            if (l->on_reset(l->ud) != 0) {
                call.stopped = 1;
                o->ok = 0;
                o->aborted = 1;
                o->kind = LF_E_ABORTED;
                lf_msg(&o->message, "call stopped by the host");
                rc = 0;
                goto out;
            }
        }
        for (retry = 0; retry <= max_retries; retry++) {
            lf_attempt a;
            lf_attempt_record rec;
            int final = 0;

            lf_attempt_init(&a, t, params->stream, pol->max_response_bytes);
            a.stream.tool_input = call.schema != NULL;
            a.target_index = (int)ti;
            call.attempt_no++;
            lf_exchange(&call, &a, prep[ti].url, &prep[ti].body, prep[ti].headers);
            lf_judge(&call, &a);
            if (a.success && call.want_json) lf_check_json(&call, &a);
            o->attempts = call.attempt_no;

            lf_fill_record(&call, &a, (int)ti, &rec);
            if (call.stopped) {
                /* The host stopped the call in this attempt (an interrupt,
                 * its fiber's scheduler, a raising block): the attempt is
                 * still recorded, and the host, unwinding, may only keep it
                 * for later (see on_attempt). */
                (void)l->on_attempt(l->ud, &rec);
            } else if (l->on_attempt(l->ud, &rec) != 0) {
                call.stopped = 1;
            }
            if (!call.stopped && breaker) {
                int counted = !a.success && lf_circuit_counts(a.verdict.kind);
                /* Every success, whatever the store said when the call began: a
                 * slow answer started before other calls' failures still resets
                 * their count, and closes a circuit they opened meanwhile. */
                if (counted || a.success) {
                    double hold = counted ? lf_circuit_hold(a.verdict.kind, a.retry_after, pol->backoff.max_interval) : 0;
                    int open = 0;
                    if (l->report(l->ud, (int)ti, a.success, a.success ? LF_OK : a.verdict.kind, hold, &open) != 0)
                        call.stopped = 1;
                    circuit_open = counted && open;
                    health[ti].failures = a.success ? 0 : health[ti].failures + 1;
                }
            }
            if (call.stopped) {
                a.success = 0;
                a.verdict.kind = LF_E_ABORTED;
                lf_finish_failure(&call, &a, (int)ti, o);
                lf_attempt_free(&a);
                rc = 0;
                goto out;
            }
            if (a.success) {
                lf_finish_success(&a, (int)ti, o);
                lf_attempt_free(&a);
                rc = 0;
                goto out;
            }

            {
                lf_verdict v = a.verdict;
                int has_next = lf_next_target(health, ti, n_targets) >= 0;
                /* A circuit that opened during this call sends it to the backup now. */
                int can_retry = v.retry_same && retry < max_retries && !a.delivered && !(circuit_open && has_next);
                double delay = 0;

                if (can_retry && a.retry_after >= 0) {
                    if (a.retry_after > pol->backoff.max_interval) can_retry = 0; /* fail over now */
                    else delay = a.retry_after;
                } else if (can_retry) {
                    delay = lf_backoff_delay(&pol->backoff, retry + 1, lf_random(&call));
                }
                if (can_retry) {
                    lf_attempt_free(&a);
                    if ((delay > 0 && lf_sleep(&call, delay) != 0) || lf_readmit(&call, (int)ti, health) != 0) {
                        o->ok = 0;
                        o->aborted = 1;
                        o->kind = LF_E_ABORTED;
                        lf_msg(&o->message, "call stopped by the host");
                        rc = 0;
                        goto out;
                    }
                    /* Opened elsewhere during the wait: the backup answers. */
                    if (health[ti].route == LF_ROUTE_SKIP && has_next) {
                        go_next = 1;
                        break;
                    }
                    if (health[ti].route == LF_ROUTE_PROBE) max_retries = retry + 1; /* the probe: no retry after it */
                    continue;
                }
                if (v.failover && has_next) go_next = 1;
                else final = 1;
            }
            if (final) {
                /* Later targets left out by their open circuits still get their records. */
                for (i = ti + 1; i < n_targets && a.verdict.failover && !call.stopped; i++)
                    if (health[i].route == LF_ROUTE_SKIP) lf_skip(&call, (int)i, o);
                lf_finish_failure(&call, &a, (int)ti, o);
                lf_attempt_free(&a);
                rc = 0;
                goto out;
            }
            lf_attempt_free(&a);
            break;
        }
        if (!go_next) break; /* unreachable: every path above ends or fails over */
    }
    rc = 0;
out:
    if (call.conn && call.wake_fd >= 0) lf_conn_unwatch_wake(call.conn);
    if (call.conn) lf_pool_checkin(pool, call.conn);
    json_object_put(call.schema);
    for (i = 0; i < n_targets; i++) lf_prepared_free(&prep[i]);
    return rc;
}
