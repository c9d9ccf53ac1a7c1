/* One attempt of the attempt loop (lf_attempt.h): the exchange (send the
 * prepared request, feed what arrives to the stream parser (lf_sse, or
 * lf_eventstream for a protocol framed so) and the listener,
 * enforce the deadlines), the judgement (success, or the facts of a failure
 * and lf_classify's verdict). The finish (the attempt's record, the call's
 * outcome) is lf_attempt_finish.c's. */
#include "lf_attempt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lf_clock.h"
#include "lf_curl_error.h"
#include "lf_json_answer.h"
#include "lf_redact.h"
#include "lf_utf8.h"

#include "lf_banned.h"

#define LF_STOPPED_BY_HOST "call stopped by the host"

void lf_attempt_init(lf_attempt *a, lf_call *c, int target_index)
{
    const lf_target *t = &c->targets[target_index];

    memset(a, 0, sizeof(*a));
    a->target = t;
    a->target_index = target_index;
    a->conn = c->conn;
    lf_response_init(&a->resp, c->pol->max_response_bytes);
    a->framing = lf_wire_stream_framing(t->api);
    lf_sse_init(&a->sse);
    lf_es_init(&a->es);
    lf_stream_init(&a->stream, t->api);
    a->stream.tool_input = c->prep->schema != NULL;
    lf_answer_init(&a->answer);
    lf_wire_error_init(&a->werr);
    lf_buf_init(&a->body);
    lf_buf_init(&a->message);
    lf_buf_init(&a->json);
    a->retry_after = -1;
    a->headroom = LF_HEADROOM_UNSAID;
    a->number = ++c->attempt_no;
}

void lf_attempt_free(lf_attempt *a)
{
    lf_response_free(&a->resp);
    lf_sse_free(&a->sse);
    lf_es_free(&a->es);
    lf_stream_free(&a->stream);
    lf_answer_free(&a->answer);
    lf_wire_error_free(&a->werr);
    lf_buf_free(&a->body);
    lf_buf_free(&a->message);
    lf_buf_free(&a->json);
}

const lf_answer *lf_attempt_answer(const lf_attempt *a)
{
    return a->mode == LF_MODE_STREAM ? &a->stream.answer : &a->answer;
}

static int lf_is_2xx(long status)
{
    return status >= 200 && status < 300;
}

/* ---- exchange ------------------------------------------------------------ */

static int lf_deliver(lf_call *c, lf_attempt *a, const char *text, size_t len)
{
    if (!len) return 0;
    if (!a->first_token_at) a->first_token_at = lf_now_monotonic();
    if (a->muted) return 0;
    a->delivered = 1;
    c->delivered = 1;
    return lf_stop(c, c->l->on_chunk(c->l->ud, a->target_index, text, len)) ? -1 : 0;
}

typedef struct lf_stream_ctx {
    lf_call *call;
    lf_attempt *a;
} lf_stream_ctx;

/* What one stream event (SSE, or an event-stream message) brought: its text
 * to the listener; nonzero ends the attempt. */
static int lf_took_event(lf_stream_ctx *x, int rc, const char *delta, size_t dlen)
{
    if (rc == LF_STREAM_ERROR || rc == LF_STREAM_INVALID) {
        x->a->stream_rc = rc;
        return 1;
    }
    if (dlen && lf_deliver(x->call, x->a, delta, dlen) != 0) return 1;
    /* A tool call streaming is the answer arriving, though nothing of it is
     * shown: the first-token deadline is met. */
    if (!x->a->first_token_at && x->a->stream.n_calls) x->a->first_token_at = lf_now_monotonic();
    return 0;
}

static int lf_on_sse_event(void *ud, const lf_sse_event *ev)
{
    lf_stream_ctx *x = ud;
    const char *delta = NULL;
    size_t dlen = 0;
    int rc = lf_stream_event(&x->a->stream, ev, &delta, &dlen);

    return lf_took_event(x, rc, delta, dlen);
}

static int lf_on_es_message(void *ud, const lf_es_message *m)
{
    lf_stream_ctx *x = ud;
    const char *delta = NULL;
    size_t dlen = 0;
    int rc = lf_stream_message(&x->a->stream, m, &delta, &dlen);

    return lf_took_event(x, rc, delta, dlen);
}

/* Feeds the bytes to the protocol's stream reader; nonzero when the attempt
 * must end (an error or malformed event, a broken frame, the listener's
 * stop). */
static int lf_feed_stream(lf_call *c, lf_attempt *a, const char *bytes, size_t n)
{
    lf_stream_ctx x = { c, a };
    int src;

    if (a->framing == LF_FRAMING_EVENTSTREAM) {
        src = lf_es_feed(&a->es, bytes, n, lf_on_es_message, &x);
        if (src == LF_ES_ERR_FRAME || src == LF_ES_ERR_NOMEM) a->stream_rc = LF_STREAM_INVALID;
    } else {
        src = lf_sse_feed(&a->sse, bytes, n, lf_on_sse_event, &x);
        if (src == LF_SSE_ERR_LINE_TOO_LONG || src == LF_SSE_ERR_NOMEM) a->stream_rc = LF_STREAM_INVALID;
    }
    return src != 0;
}

/* Hands the bytes received so far to the parser. Returns nonzero when the
 * attempt must end now (in-stream error, malformed event, listener stop). */
static int lf_consume(lf_call *c, lf_attempt *a)
{
    lf_response *r = &a->resp;
    int rc = 0;

    if (!r->inbox.len) return 0;
    if (a->mode == LF_MODE_UNKNOWN) {
        /* A stream only as the protocol frames it: anything else is a body
         * (an error, or a plain answer to a streamed request). */
        int framed = a->framing == LF_FRAMING_EVENTSTREAM ? r->aws_event_stream : r->event_stream;
        a->mode = c->stream && lf_is_2xx(r->status) && framed ? LF_MODE_STREAM : LF_MODE_BODY;
    }
    if (a->mode == LF_MODE_STREAM) {
        rc = lf_feed_stream(c, a, r->inbox.ptr, r->inbox.len);
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

/* The deadline that ends the attempt first, and which one it is: the whole
 * attempt's, the first token's (a stream that has not started answering),
 * or the idle one (silence once bytes flow). INFINITY when none. */
static double lf_deadline(const lf_call *c, const lf_attempt *a, lf_transfer *which)
{
    const lf_policy *pol = c->pol;
    double deadline = pol->request_timeout > 0 ? a->started_mono + pol->request_timeout : INFINITY;

    *which = LF_T_TOTAL_TIMEOUT;
    if (c->stream && !a->first_token_at && pol->first_token_timeout > 0 && !a->stream.done && !a->stream.finished) {
        /* Streamed: the provider must start answering in time. */
        if (a->started_mono + pol->first_token_timeout < deadline) {
            deadline = a->started_mono + pol->first_token_timeout;
            *which = LF_T_FIRST_TOKEN_TIMEOUT;
        }
    } else if (a->resp.last_byte_at > 0 && pol->idle_timeout > 0) {
        if (a->resp.last_byte_at + pol->idle_timeout < deadline) {
            deadline = a->resp.last_byte_at + pol->idle_timeout;
            *which = LF_T_IDLE_TIMEOUT;
        }
    }
    return deadline;
}

/* Waits for the call's transfers until `deadline` at most (LF_MAX_WAIT_MS at
 * a time); nonzero when the host stopped the call. A poll-driven wait is on
 * the multi handle the call's transfer runs in (a hedge's lead's, when the
 * backup went on alone). */
int lf_exchange_wait(lf_call *c, double now, double deadline)
{
    int ms = isinf(deadline) ? LF_MAX_WAIT_MS : (int)ceil((deadline - now) * 1000.0);
    lf_conn *conn = c->conn;
    lf_wait w;

    if (ms > LF_MAX_WAIT_MS) ms = LF_MAX_WAIT_MS;
    if (ms < 1) ms = 1;
    if (c->evented) return lf_stop(c, c->l->wait_fd(c->l->ud, conn->evfd, lf_transfer_wait_ms(conn, ms))) ? -1 : 0;
    w = (lf_wait){ .multi = conn->runs_in ? conn->runs_in : conn->multi, .timeout_ms = ms };
    return lf_stop(c, c->l->wait(c->l->ud, &w)) ? -1 : 0;
}

/* The host's wake descriptor was ready in the last step: on_wake decides
 * whether the call goes on. */
static int lf_woken(lf_call *c)
{
    if (!c->conn->woken || c->wake_fd < 0) return 0;
    c->conn->woken = 0;
    return lf_stop(c, c->l->on_wake(c->l->ud)) ? -1 : 0;
}

int lf_exchange_begin(lf_call *c, lf_attempt *a, lf_conn *lead)
{
    const lf_prepared *p = &c->prep->target[a->target_index];
    lf_http_request req = {
        .url = p->url,
        .request_target = p->request_target,
        .headers = p->headers,
        .aws_sigv4 = p->aws_sigv4,
        .aws_key_id = p->aws_key_id,
        .aws_secret = p->aws_secret,
        .body = p->body.ptr,
        .body_len = p->body.len,
        .connect_timeout_ms = c->pol->connect_timeout > 0 ? (long)ceil(c->pol->connect_timeout * 1000.0) : 0,
        .errbuf = a->errbuf,
        .evented = c->evented,
        .lead = lead,
    };

    a->started_mono = lf_now_monotonic();
    a->started_wall = lf_now_wall();
    if (a->target->unusable) return -1; /* judged by lf_attempt_judge: no request */
    if (lf_transfer_start(a->conn, &req, &a->resp) != 0) {
        a->transfer = LF_T_OTHER;
        lf_buf_setf(&a->message, "could not start the transfer");
        return -1;
    }
    return 0;
}

int lf_exchange_pump(lf_call *c, lf_attempt *a, double *deadline)
{
    lf_transfer which;
    double now;

    if (lf_transfer_step(a->conn, &a->curl_done, &a->curl_rc) != 0) {
        a->transfer = LF_T_OTHER;
        return 1;
    }
    if (lf_consume(c, a) != 0 || a->curl_done || lf_woken(c) != 0) return 1;
    now = lf_now_monotonic();
    *deadline = lf_deadline(c, a, &which);
    if (now >= *deadline) {
        a->transfer = which;
        return 1;
    }
    return 0;
}

void lf_exchange_end(lf_attempt *a)
{
    lf_transfer_end(a->conn);
}

int lf_attempt_started(const lf_call *c, const lf_attempt *a)
{
    return a->first_token_at > 0 || (!c->stream && a->resp.first_byte_at > 0);
}

/* Runs one HTTP exchange until it ends, fails, or a deadline passes. */
static void lf_exchange(lf_call *c, lf_attempt *a)
{
    double deadline;

    if (lf_exchange_begin(c, a, NULL) != 0) return;
    while (!lf_exchange_pump(c, a, &deadline))
        if (lf_exchange_wait(c, lf_now_monotonic(), deadline) != 0) break;
    lf_exchange_end(a);
}

/* ---- judge --------------------------------------------------------------- */

/* The protocol the attempt spoke, in its failure messages. */
static const char *lf_api_name(const lf_call *c, lf_api api)
{
    return lf_wire_api_title(api, c->embed_inputs ? LF_REQUEST_EMBEDDINGS : LF_REQUEST_CHAT);
}

/* A plain body read as what the request asked for: embeddings, a schema's
 * answer, or a chat answer. */
static int lf_parse_body(const lf_call *c, lf_attempt *a)
{
    const char *body = a->body.ptr ? a->body.ptr : "";

    if (c->embed_inputs)
        return lf_wire_parse_embeddings_for(a->target->api, body, a->body.len, c->embed_inputs, &a->answer, &a->werr);
    return (c->prep->schema ? lf_wire_parse_tool_response : lf_wire_parse_response)(a->target->api, body, a->body.len,
                                                                                  &a->answer, &a->werr);
}

/* What the provider sent, as far as it has been read. The body was cut
 * when it outgrew max_response_bytes. */
static void lf_redact_attempt(const lf_call *c, lf_attempt *a)
{
    lf_redact(c->targets, c->n_targets, &a->body, a->resp.too_large);
    lf_redact(c->targets, c->n_targets, &a->werr.type, 0);
    lf_redact(c->targets, c->n_targets, &a->werr.code, 0);
    lf_redact(c->targets, c->n_targets, &a->werr.message, 0);
    lf_redact(c->targets, c->n_targets, &a->stream.error.type, 0);
    lf_redact(c->targets, c->n_targets, &a->stream.error.code, 0);
    lf_redact(c->targets, c->n_targets, &a->stream.error.message, 0);
}

/* The facts the transfer itself gives: status, x-should-retry, and how it
 * ended (the host's stop, or libcurl's result). */
static lf_facts lf_transfer_facts(const lf_call *c, lf_attempt *a)
{
    lf_facts f;

    memset(&f, 0, sizeof(f));
    f.should_retry = a->resp.should_retry;
    f.error_name = a->resp.error_name.len ? a->resp.error_name.ptr : NULL;
    f.status = a->resp.status;
    f.transfer = a->transfer;
    if (c->stopped) {
        f.transfer = LF_T_ABORTED;
        lf_buf_setf(&a->message, LF_STOPPED_BY_HOST);
    } else if (a->transfer == LF_T_OK && a->curl_done && a->curl_rc != CURLE_OK) {
        f.transfer = lf_transfer_from_curl(a->curl_rc, &a->resp);
    }
    return f;
}

/* A stream whose terminal event arrived is an answer, however the
 * connection ended after it. 1 when the stream answered. */
static int lf_stream_answered(lf_call *c, lf_attempt *a, lf_facts *f)
{
    if (a->mode != LF_MODE_STREAM || a->stream_rc || f->transfer == LF_T_ABORTED) return 0;
    /* A last SSE event may lack its blank line; a message of an event
     * stream is whole or is not one. */
    if (f->transfer == LF_T_OK && a->framing == LF_FRAMING_SSE) {
        lf_stream_ctx x = { c, a };
        lf_sse_finish(&a->sse, lf_on_sse_event, &x);
        if (c->stopped) {
            f->transfer = LF_T_ABORTED;
            lf_buf_setf(&a->message, LF_STOPPED_BY_HOST);
        }
    }
    return f->transfer != LF_T_ABORTED && lf_stream_complete(&a->stream);
}

/* A 2xx stream that did not answer: an error event, a malformed event, or
 * an end without the terminal event. 1 when it carried an error object. */
static int lf_judge_broken_stream(const lf_call *c, lf_attempt *a, lf_facts *f)
{
    if (a->stream_rc == LF_STREAM_ERROR) {
        f->in_stream = 1;
        lf_buf_copy(&a->werr.type, &a->stream.error.type);
        lf_buf_copy(&a->werr.code, &a->stream.error.code);
        lf_buf_copy(&a->werr.message, &a->stream.error.message);
        a->werr.retry_after = a->stream.error.retry_after;
        lf_buf_setf(&a->message, "error event in the stream: %s%s%s", lf_buf_cstr(&a->werr.type),
                    a->werr.message.len ? ": " : "", lf_buf_cstr(&a->werr.message));
        return 1;
    }
    if (a->stream_rc == LF_STREAM_INVALID) {
        f->invalid_body = 1;
        lf_buf_setf(&a->message, "malformed event in the %s stream", lf_api_name(c, a->target->api));
    } else {
        f->stream_interrupted = 1;
        lf_buf_setf(&a->message, "stream ended without its terminal event after %zu bytes", a->resp.body_bytes);
    }
    return 0;
}

/* A 2xx plain body: the answer, an error object, or not the protocol.
 * Returns 1 when it answered (a->success); else *have_err says whether it
 * carried an error object. */
static int lf_judge_body(lf_call *c, lf_attempt *a, lf_facts *f, int *have_err)
{
    long status = a->resp.status;
    int rc = lf_parse_body(c, a);

    lf_redact_attempt(c, a); /* the error read from it, \u escapes undone */
    if (rc == LF_WIRE_OK) {
        /* A streamed call answered with a plain body still shows its text
         * to the consumer. */
        if (!c->stream || !a->answer.text.len || lf_deliver(c, a, a->answer.text.ptr, a->answer.text.len) == 0) {
            a->success = 1;
            return 1;
        }
        f->transfer = LF_T_ABORTED;
        lf_buf_setf(&a->message, LF_STOPPED_BY_HOST);
    } else if (rc == LF_WIRE_ERROR_BODY) {
        f->in_stream = 1;
        *have_err = 1;
        lf_buf_setf(&a->message, "HTTP %ld with an error body: %s", status, lf_buf_cstr(&a->werr.message));
    } else {
        f->invalid_body = 1;
        if (!a->body.len) lf_buf_setf(&a->message, "HTTP %ld with an empty body", status);
        else lf_buf_setf(&a->message, "HTTP %ld body is not the %s protocol: %.80s", status,
                         lf_api_name(c, a->target->api), lf_buf_cstr(&a->body));
    }
    return 0;
}

/* An error status (the body may have been cut short: still judged by the
 * status). 1 when the body is a known error shape. */
static int lf_judge_error_status(const lf_call *c, lf_attempt *a, lf_facts *f)
{
    long status = a->resp.status;
    int have_err = lf_wire_parse_error(a->body.ptr ? a->body.ptr : "", a->body.len, &a->werr);

    /* An error named only by a header (Bedrock's {"message"} bodies) is
     * known by that name. */
    if (!a->werr.type.len && a->resp.error_name.len && lf_buf_copy(&a->werr.type, &a->resp.error_name) == 0)
        have_err = 1;
    f->transfer = LF_T_OK;
    lf_redact_attempt(c, a);
    if (have_err && a->werr.message.len)
        lf_buf_setf(&a->message, "HTTP %ld: %s", status, lf_buf_cstr(&a->werr.message));
    else if (a->body.len)
        lf_buf_setf(&a->message, "HTTP %ld: %.200s", status, lf_buf_cstr(&a->body));
    else
        lf_buf_setf(&a->message, "HTTP %ld", status);
    return have_err;
}

/* libcurl's words for the failure, or its own for the result. */
static const char *lf_curl_words(const lf_attempt *a)
{
    return a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->curl_rc);
}

/* No response to judge: the connection, a deadline, the size cap or the
 * host ended the attempt. */
static void lf_judge_transfer_failure(const lf_call *c, lf_attempt *a, lf_facts *f)
{
    const lf_policy *pol = c->pol;

    switch (f->transfer) {
    case LF_T_REFUSED: lf_buf_setf(&a->message, "connection refused: %s", a->errbuf); break;
    case LF_T_DNS: lf_buf_setf(&a->message, "could not resolve host: %s", a->errbuf); break;
    case LF_T_TLS_VERIFY: lf_buf_setf(&a->message, "TLS certificate verification failed: %s", lf_curl_words(a)); break;
    case LF_T_CONNECT_TIMEOUT:
        lf_buf_setf(&a->message, "connect timeout after %.3gs: %s", pol->connect_timeout, a->errbuf);
        break;
    case LF_T_FIRST_TOKEN_TIMEOUT:
        lf_buf_setf(&a->message, "first token timeout: no content within %.3gs", pol->first_token_timeout);
        break;
    case LF_T_IDLE_TIMEOUT: lf_buf_setf(&a->message, "idle timeout: no data for %.3gs", pol->idle_timeout); break;
    case LF_T_TOTAL_TIMEOUT:
        lf_buf_setf(&a->message, "total timeout: the attempt took over %.3gs", pol->request_timeout);
        break;
    case LF_T_TOO_LARGE: lf_buf_setf(&a->message, "response exceeded %zu bytes", a->resp.max_bytes); break;
    case LF_T_ABORTED:
        if (!a->message.len) lf_buf_setf(&a->message, LF_STOPPED_BY_HOST);
        break;
    default:
        if (a->resp.resend_refused)
            lf_buf_setf(&a->message, "connection failed: a reused connection closed before any response, "
                                     "after the provider may have received the request; not sent again");
        else if (a->mode == LF_MODE_STREAM)
            lf_buf_setf(&a->message, "stream ended without its terminal event after %zu bytes: %s",
                        a->resp.body_bytes, lf_curl_words(a));
        else
            lf_buf_setf(&a->message, "connection failed: %s", lf_curl_words(a));
        break;
    }
    /* A 2xx stream cut by the network is an interrupted stream. */
    if (f->transfer == LF_T_CONNECTION && a->mode == LF_MODE_STREAM) {
        f->transfer = LF_T_OK;
        f->stream_interrupted = 1;
    }
}

/* lf_classify's verdict on the facts, with the policy's own say on context
 * length, and the Retry-After the response asked for. */
static void lf_give_verdict(const lf_call *c, lf_attempt *a, lf_facts *f, int have_err)
{
    const lf_response *r = &a->resp;

    if (have_err) {
        f->error_type = a->werr.type.len ? a->werr.type.ptr : NULL;
        f->error_code = a->werr.code.len ? a->werr.code.ptr : NULL;
        f->error_message = a->werr.message.len ? a->werr.message.ptr : NULL;
    }
    a->transfer = f->transfer;
    a->verdict = lf_classify(f);
    if (a->verdict.kind == LF_E_CONTEXT_LENGTH && c->pol->failover_on_context_length) a->verdict.failover = 1;
    a->retry_after = lf_retry_after_seconds(r->retry_after.len ? r->retry_after.ptr : NULL,
                                            r->retry_after_ms.len ? r->retry_after_ms.ptr : NULL, time(NULL));
    /* Google names the wait in the body (RetryInfo), not in a header. */
    if (a->retry_after < 0 && have_err && a->werr.retry_after >= 0) a->retry_after = a->werr.retry_after;
}

/* Decides what the finished exchange amounts to: success, or the facts of
 * a failure and their verdict. Everything the provider sent is redacted
 * before any message quotes it. */
static void lf_judge(lf_call *c, lf_attempt *a)
{
    lf_facts f = lf_transfer_facts(c, a);
    int have_err = 0;

    if (lf_stream_answered(c, a, &f)) {
        a->success = 1;
        return;
    }
    lf_redact_attempt(c, a);
    if (f.transfer == LF_T_OK && lf_is_2xx(a->resp.status)) {
        if (a->mode == LF_MODE_STREAM) have_err = lf_judge_broken_stream(c, a, &f);
        else if (lf_judge_body(c, a, &f, &have_err)) return;
    } else if (f.transfer == LF_T_OK || (a->resp.status >= 300 && f.transfer == LF_T_CONNECTION)) {
        have_err = lf_judge_error_status(c, a, &f);
    } else {
        lf_judge_transfer_failure(c, a, &f);
    }
    lf_give_verdict(c, a, &f, have_err);
}

/* Appends the start of the answer to the message, to tell prose from broken
 * JSON: redacted whole before it is cut (an answer may quote a key). */
static void lf_quote_answer_start(const lf_call *c, lf_attempt *a, const lf_buf *text)
{
    lf_buf start;
    size_t n;

    lf_buf_init(&start);
    if (lf_buf_copy(&start, text) == 0) {
        lf_redact(c->targets, c->n_targets, &start, 0);
        n = start.len < 60 ? start.len : 60;
        if (lf_buf_append_str(&a->message, " (the answer begins: ") == 0 &&
            lf_utf8_append_sanitized(&a->message, start.ptr, n) == 0)
            (void)lf_buf_append_char(&a->message, ')');
    }
    lf_buf_free(&start);
}

/* JSON mode and schemas: an answer that is not one JSON object, or breaks
 * the schema, is a failed attempt (InvalidResponseError: retried, then
 * failed over), its tokens kept in the record. */
static void lf_check_json(lf_call *c, lf_attempt *a)
{
    const lf_answer *ans = lf_attempt_answer(a);
    lf_facts f;
    int rc = lf_json_answer_check(lf_buf_cstr(&ans->text), ans->text.len, c->prep->schema, &a->json, &a->message);

    if (rc == LF_JSON_ANSWER_OK) return;
    if (rc < 0) lf_buf_setf(&a->message, "out of memory checking the JSON answer");
    else if (ans->text.len) lf_quote_answer_start(c, a, &ans->text);
    lf_redact(c->targets, c->n_targets, &a->message, 1); /* a key quoted by the schema check's reason */
    a->success = 0;
    memset(&f, 0, sizeof(f));
    f.should_retry = a->resp.should_retry; /* x-should-retry, as for any answer */
    f.status = a->resp.status;
    f.transfer = LF_T_OK;
    f.invalid_body = 1;
    a->verdict = lf_classify(&f);
    a->retry_after = -1;
}

/* What the host's headers said is left of its window, and a Retry-After. */
static void lf_read_headroom(lf_attempt *a)
{
    const lf_response *r = &a->resp;
    lf_rate_headers h = {
        .requests = lf_buf_cstr(&r->rate_requests),
        .tokens = lf_buf_cstr(&r->rate_tokens),
        .requests_reset = lf_buf_cstr(&r->rate_requests_reset),
        .tokens_reset = lf_buf_cstr(&r->rate_tokens_reset),
    };

    a->headroom = lf_headroom_read(&h, a->success ? -1 : a->retry_after, time(NULL));
}

void lf_attempt_judge(lf_call *c, lf_attempt *a)
{
    if (a->target->unusable) {
        /* Like a 401 from it: the call's error, neither retried nor failed over. */
        a->verdict = (lf_verdict){ .kind = LF_E_CONFIGURATION };
        lf_buf_setf(&a->message, "%s", a->target->unusable);
        return;
    }
    lf_judge(c, a);
    lf_read_headroom(a);
    /* JSON mode and schemas judge the final answer: a turn that asks for
     * tools is not one. */
    if (a->success && c->want_json && !lf_attempt_answer(a)->n_tool_calls) lf_check_json(c, a);
}

void lf_attempt_run(lf_call *c, lf_attempt *a)
{
    lf_exchange(c, a);
    lf_attempt_judge(c, a);
}
