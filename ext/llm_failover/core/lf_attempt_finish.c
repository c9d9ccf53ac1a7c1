/* The finish of one attempt (lf_attempt.h): its record for the listener, its
 * report to the breaker, and what it leaves in the call's outcome, a
 * failure's facts or a success's answer. The loop and a hedge's race finish
 * their attempts here alike. */
#include "lf_attempt.h"

#include <string.h>

#include "lf_clock.h"
#include "lf_curl_error.h"

#include "lf_banned.h"

/* An error body is kept for the exception up to this size. */
#define LF_ERROR_BODY_CAP (64u * 1024u)

static void lf_attempt_record_fill(const lf_call *c, const lf_attempt *a, lf_attempt_record *rec)
{
    const lf_answer *ans = lf_attempt_answer(a);
    double end = lf_now_monotonic();

    memset(rec, 0, sizeof(*rec));
    rec->attempt = a->number;
    rec->target = a->target_index;
    rec->hedge = a->hedge;
    rec->lost = a->lost;
    rec->cancelled = c->cancelled && !a->success && !a->lost;
    rec->skipped = a->target->unusable != NULL; /* nothing sent (lf_exchange_begin) */
    rec->reached = !rec->skipped && lf_transfer_reached(a->transfer);
    rec->success = a->success;
    rec->kind = a->success ? LF_OK : a->verdict.kind;
    rec->phase = a->success ? LF_PHASE_NONE : a->verdict.phase;
    rec->error_message = a->success ? NULL : lf_buf_cstr(&a->message);
    rec->http_status = a->resp.status;
    rec->failover_eligible = a->success ? 0 : a->verdict.failover;
    rec->retry_after = a->retry_after;
    rec->latency_ms = (end - a->started_mono) * 1000.0;
    /* A plain answer's first token is its first byte. */
    if (a->first_token_at) rec->first_token_ms = (a->first_token_at - a->started_mono) * 1000.0;
    else if (!c->stream && a->resp.first_byte_at)
        rec->first_token_ms = (a->resp.first_byte_at - a->started_mono) * 1000.0;
    else rec->first_token_ms = -1;
    rec->input_tokens = ans->input_tokens;
    rec->output_tokens = ans->output_tokens;
    rec->cached_input_tokens = ans->cached_input_tokens;
    rec->cache_write_tokens = ans->cache_write_tokens;
    rec->started_at = a->started_wall;
    rec->provider_request_id = a->resp.request_id.len ? lf_buf_cstr(&a->resp.request_id) : NULL;
}

/* Hands the attempt's record to the host. The host may have stopped the call
 * in this attempt (an interrupt, its fiber's scheduler, a raising block):
 * the attempt is still recorded, and the host, unwinding, may only keep it
 * for later (see on_attempt). */
void lf_record_attempt(lf_call *c, const lf_attempt *a)
{
    lf_attempt_record rec;

    lf_attempt_record_fill(c, a, &rec);
    if (rec.cancelled) c->cancel_recorded = 1;
    c->mark_mono = lf_now_monotonic();
    c->mark_wall = lf_now_wall();
    if (c->stopped) (void)c->l->on_attempt(c->l->ud, &rec);
    else lf_stop(c, c->l->on_attempt(c->l->ud, &rec));
}

void lf_record_cancel(lf_call *c)
{
    lf_attempt_record rec;

    if (!c->cancelled || c->cancel_recorded) return;
    c->cancel_recorded = 1;
    memset(&rec, 0, sizeof(rec));
    rec.attempt = ++c->attempt_no;
    rec.target = c->current;
    rec.kind = LF_E_ABORTED;
    rec.error_message = "cancelled by the host";
    rec.retry_after = -1;
    rec.latency_ms = (lf_now_monotonic() - c->mark_mono) * 1000.0;
    rec.first_token_ms = -1;
    rec.input_tokens = -1;
    rec.output_tokens = -1;
    rec.cached_input_tokens = -1;
    rec.cache_write_tokens = -1;
    rec.started_at = c->mark_wall;
    rec.cancelled = 1;
    (void)c->l->on_attempt(c->l->ud, &rec);
}

int lf_report_circuit(lf_call *c, const lf_attempt *a, lf_health *h)
{
    const lf_breaker *b = c->breaker;
    int pooled = lf_tier_of(c, (size_t)a->target_index)->pooled && lf_headroom_said(&a->headroom);
    int counted, open = 0;

    /* What the call itself now knows of a pool host's window. */
    if (pooled) h->headroom = a->headroom;
    /* A hedge's loser was cut by the call itself: nothing about its target. */
    if (c->stopped || !b || a->lost) return 0;
    counted = !a->success && lf_circuit_counts(a->verdict.kind);
    /* Every success, whatever the store said when the call began: a slow
     * answer started before other calls' failures still resets their count,
     * and closes a circuit they opened meanwhile. */
    if (counted || a->success) {
        double hold = counted ? lf_circuit_hold(a->verdict.kind, a->retry_after, c->pol->backoff.max_interval) : 0;
        lf_circuit_report r = {
            .target = a->target_index,
            .success = a->success,
            .kind = a->success ? LF_OK : a->verdict.kind,
            .hold = hold,
            .headroom = pooled ? a->headroom : LF_HEADROOM_UNSAID,
            .dry = pooled && lf_headroom_wait(&a->headroom, c->need) > 0,
        };
        lf_stop(c, b->report(b->ud, &r, &open));
        h->failures = a->success ? 0 : h->failures + 1;
    }
    return counted && open;
}

void lf_attempt_finish_failure(const lf_call *c, lf_attempt *a, lf_outcome *o)
{
    o->ok = 0;
    o->cancelled = c->cancelled;
    o->aborted = !c->cancelled && (c->stopped || a->verdict.kind == LF_E_ABORTED);
    o->target = a->target_index;
    o->kind = a->verdict.kind;
    o->phase = a->verdict.phase;
    o->retryable = a->verdict.retryable;
    o->status = a->resp.status;
    o->retry_after = a->retry_after;
    lf_buf_copy(&o->message, &a->message);
    if (a->mode != LF_MODE_STREAM && a->body.len)
        lf_buf_set(&o->body, a->body.ptr, a->body.len < LF_ERROR_BODY_CAP ? a->body.len : LF_ERROR_BODY_CAP);
    if (c->delivered) lf_buf_copy(&o->partial, &lf_attempt_answer(a)->text);
    lf_buf_copy(&o->provider_request_id, &a->resp.request_id);
    lf_buf_copy(&o->error_type, &a->werr.type);
    lf_buf_copy(&o->error_code, &a->werr.code);
}

void lf_attempt_finish_success(lf_attempt *a, lf_outcome *o)
{
    lf_answer *src = a->mode == LF_MODE_STREAM ? &a->stream.answer : &a->answer;

    o->ok = 1;
    o->target = a->target_index;
    o->status = a->resp.status;
    lf_buf_move(&o->answer.text, &src->text);
    if (src->model.len) lf_buf_move(&o->answer.model, &src->model);
    else lf_buf_set(&o->answer.model, a->target->model, strlen(a->target->model));
    lf_buf_move(&o->answer.finish_reason, &src->finish_reason);
    lf_buf_move(&o->answer.id, &src->id);
    o->answer.input_tokens = src->input_tokens;
    o->answer.output_tokens = src->output_tokens;
    /* The tool calls (complete: a stream publishes them only when it ends) and an
     * embeddings answer's vectors move as the text does. */
    lf_answer_take_parts(&o->answer, src);
    lf_buf_move(&o->provider_request_id, &a->resp.request_id);
    lf_buf_move(&o->json, &a->json);
}
