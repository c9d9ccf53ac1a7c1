/* The seam's way out: LlmFailover::Engine::Result (what Engine#run returns)
 * and Engine::Attempt (what on_attempt gets), Structs whose members are
 * listed here once, made from the core's outcome and attempt records; and
 * Engine::Cancel, the exception a listener raises to cancel the call. */
#include "lf_engine.h"

#include <ruby/encoding.h>
#include <math.h>

#include "lf_banned.h"

static VALUE lf_cResult, lf_cAttempt, lf_cCancel;
static VALUE lf_sym_ok, lf_sym_failed, lf_sym_cancelled;

/* Engine::Result: how the call ended, made by the core whichever way. */
enum {
    LF_RS_STATUS,              /* :ok, :failed or :cancelled */
    LF_RS_TARGET,              /* the Engine::Target that answered, whose error is final, or
                                  that was answering (or about to) when the call was cancelled */
    LF_RS_ATTEMPTS,            /* attempt records made (skips and a cancel's own included) */
    LF_RS_PROVIDER_REQUEST_ID,
    LF_RS_CONTENT,             /* :ok: the answer */
    LF_RS_MODEL,               /* :ok: the model the provider says answered */
    LF_RS_FINISH_REASON,
    LF_RS_INPUT_TOKENS,
    LF_RS_OUTPUT_TOKENS,
    LF_RS_JSON,                /* :ok with json: the checked object, as strict JSON */
    LF_RS_TOOL_CALLS,          /* :ok: [[id, name, arguments JSON, signature or nil], ...] or nil */
    LF_RS_VECTORS,             /* :ok, an embeddings request: [[Float, ...], ...] */
    LF_RS_ERROR_CLASS,         /* :failed: the class of the error to raise */
    LF_RS_MESSAGE,
    LF_RS_PHASE,               /* :failed with a timeout: :connect, :first_token, :idle or :total */
    LF_RS_HTTP_STATUS,
    LF_RS_BODY,
    LF_RS_RETRY_AFTER,
    LF_RS_RETRYABLE,
    LF_RS_ERROR_TYPE,
    LF_RS_ERROR_CODE,
    LF_RS_PARTIAL_CONTENT,     /* :failed or :cancelled: the text delivered of the last answer */
    LF_RS_REASONING,           /* :ok: the answer's reasoning state, opaque (Responses' items as
                                  JSON text, Gemini's text signature), or nil */
    LF_RS_REASONING_API,       /* :ok with reasoning state (its own or its calls' signatures):
                                  the protocol that made it */
    LF_RS_REASONING_ORIGIN,    /* ... and the origin (the target's) */
    LF_RS_COUNT
};
static const char *const lf_result_members[LF_RS_COUNT] = {
    "status", "target", "attempts", "provider_request_id", "content", "model", "finish_reason", "input_tokens",
    "output_tokens", "json", "tool_calls", "vectors", "error_class", "message", "phase", "http_status", "body",
    "retry_after", "retryable", "error_type", "error_code", "partial_content", "reasoning", "reasoning_api",
    "reasoning_origin",
};

/* Engine::Attempt: one HTTP attempt, a target skipped, or a cancel. */
enum {
    LF_AR_ATTEMPT,             /* 1, 2, ... across the call */
    LF_AR_TARGET,              /* the Engine::Target */
    LF_AR_SUCCESS,
    LF_AR_ERROR_CLASS,
    LF_AR_ERROR_MESSAGE,
    LF_AR_PHASE,
    LF_AR_HTTP_STATUS,
    LF_AR_FAILOVER_ELIGIBLE,
    LF_AR_RETRY_AFTER,
    LF_AR_LATENCY_MS,
    LF_AR_FIRST_TOKEN_MS,
    LF_AR_INPUT_TOKENS,
    LF_AR_OUTPUT_TOKENS,
    LF_AR_CACHED_INPUT_TOKENS, /* of input_tokens, read from a prompt cache */
    LF_AR_CACHE_WRITE_TOKENS,  /* of input_tokens, written to a prompt cache */
    LF_AR_STARTED_AT,          /* a Time */
    LF_AR_PROVIDER_REQUEST_ID,
    LF_AR_SKIPPED,             /* no request: an open circuit, or attachments it cannot take */
    LF_AR_REACHED,             /* the request may have reached the provider (and been billed) */
    LF_AR_HEDGE,               /* one of a hedged request's two attempts */
    LF_AR_LOST,                /* the hedge's loser, cut when the other had a token first */
    LF_AR_CANCELLED,           /* cut by an Engine::Cancel, or the cancel itself */
    LF_AR_STOPPED,             /* cut by an exception, and handed over while it unwinds */
    LF_AR_STOPPED_BY,          /* ... its class, or nil for Thread#kill or a throw */
    LF_AR_COUNT
};
static const char *const lf_attempt_members[LF_AR_COUNT] = {
    "attempt", "target", "success", "error_class", "error_message", "phase", "http_status", "failover_eligible",
    "retry_after", "latency_ms", "first_token_ms", "input_tokens", "output_tokens", "cached_input_tokens",
    "cache_write_tokens", "started_at", "provider_request_id", "skipped", "reached", "hedge", "lost", "cancelled", "stopped", "stopped_by",
};

VALUE lf_cancel_class(void)
{
    return lf_cCancel;
}

static VALUE lf_num_or_nil(double v)
{
    return v < 0 ? Qnil : DBL2NUM(v);
}

static VALUE lf_long_or_nil(long v)
{
    return v < 0 ? Qnil : LONG2NUM(v);
}

static VALUE lf_cstr_or_nil(const char *s)
{
    return s ? rb_utf8_str_new_cstr(s) : Qnil;
}

static VALUE lf_buf_to_str_or_nil(const lf_buf *b)
{
    return b->len ? rb_utf8_str_new(b->ptr, (long)b->len) : Qnil;
}

static VALUE lf_phase_syms[LF_PHASE_TOTAL + 1];

/* :connect, :first_token, :idle, :total, or nil. */
static VALUE lf_phase_value(lf_phase p)
{
    return p > LF_PHASE_NONE && p <= LF_PHASE_TOTAL ? lf_phase_syms[p] : Qnil;
}

/* A Time from seconds since the epoch, to the microsecond the record keeps. */
static VALUE lf_time_from_epoch(double t)
{
    double sec = floor(t);
    long usec = lround((t - sec) * 1e6);
    if (usec >= 1000000) {
        sec += 1;
        usec -= 1000000;
    }
    return rb_time_nano_new((time_t)sec, usec * 1000);
}

#define LF_BOOL(x) ((x) ? Qtrue : Qfalse)

static VALUE lf_target_at(VALUE targets, int i)
{
    return i >= 0 && i < RARRAY_LEN(targets) ? RARRAY_AREF(targets, i) : RARRAY_AREF(targets, 0);
}

VALUE lf_attempt_value(const lf_attempt_record *r, VALUE targets)
{
    VALUE v[LF_AR_COUNT];

    v[LF_AR_ATTEMPT] = INT2NUM(r->attempt);
    v[LF_AR_TARGET] = lf_target_at(targets, r->target);
    v[LF_AR_SUCCESS] = LF_BOOL(r->success);
    v[LF_AR_ERROR_CLASS] = r->success || r->cancelled || r->lost ? Qnil : lf_error_class_for(r->kind);
    v[LF_AR_ERROR_MESSAGE] = lf_cstr_or_nil(r->error_message);
    v[LF_AR_PHASE] = lf_phase_value(r->phase);
    v[LF_AR_HTTP_STATUS] = r->http_status ? LONG2NUM(r->http_status) : Qnil;
    v[LF_AR_FAILOVER_ELIGIBLE] = LF_BOOL(r->failover_eligible);
    v[LF_AR_RETRY_AFTER] = lf_num_or_nil(r->retry_after);
    v[LF_AR_LATENCY_MS] = DBL2NUM(r->latency_ms);
    v[LF_AR_FIRST_TOKEN_MS] = lf_num_or_nil(r->first_token_ms);
    v[LF_AR_INPUT_TOKENS] = lf_long_or_nil(r->input_tokens);
    v[LF_AR_OUTPUT_TOKENS] = lf_long_or_nil(r->output_tokens);
    v[LF_AR_CACHED_INPUT_TOKENS] = lf_long_or_nil(r->cached_input_tokens);
    v[LF_AR_CACHE_WRITE_TOKENS] = lf_long_or_nil(r->cache_write_tokens);
    v[LF_AR_STARTED_AT] = lf_time_from_epoch(r->started_at);
    v[LF_AR_PROVIDER_REQUEST_ID] = lf_cstr_or_nil(r->provider_request_id);
    v[LF_AR_SKIPPED] = LF_BOOL(r->skipped);
    v[LF_AR_REACHED] = LF_BOOL(r->reached);
    v[LF_AR_HEDGE] = LF_BOOL(r->hedge);
    v[LF_AR_LOST] = LF_BOOL(r->lost);
    v[LF_AR_CANCELLED] = LF_BOOL(r->cancelled);
    v[LF_AR_STOPPED] = Qfalse;
    v[LF_AR_STOPPED_BY] = Qnil;
    return rb_class_new_instance(LF_AR_COUNT, v, lf_cAttempt);
}

/* Model names and finish reasons repeat on every call: the same frozen String
 * each time (Ruby's table of interned strings), not a new object per call. */
static VALUE lf_buf_to_interned_or_nil(const lf_buf *b)
{
    return b->len ? rb_enc_interned_str(b->ptr, (long)b->len, rb_utf8_encoding()) : Qnil;
}

/* An error body as UTF-8, invalid bytes replaced. */
static VALUE lf_body_or_nil(const lf_buf *b)
{
    VALUE body;
    if (!b->len) return Qnil;
    body = rb_utf8_str_new(b->ptr, (long)b->len);
    if (rb_enc_str_coderange(body) == ENC_CODERANGE_BROKEN) body = rb_str_scrub(body, Qnil);
    return body;
}

/* An embeddings answer's vectors: an Array of Arrays of Floats, in input order. */
static VALUE lf_vectors_value(const lf_answer *a)
{
    VALUE all = rb_ary_new_capa((long)a->n_vectors);
    size_t i, k;

    for (i = 0; i < a->n_vectors; i++) {
        const double *row = a->vectors + i * a->dims;
        VALUE v = rb_ary_new_capa((long)a->dims);

        for (k = 0; k < a->dims; k++) rb_ary_push(v, DBL2NUM(row[k]));
        rb_ary_push(all, v);
    }
    return all;
}

/* An answer's tool calls: [[id, name, arguments JSON, signature or nil],
 * ...] (valid UTF-8, the wire layer's promise). */
static VALUE lf_tool_calls_to_array(const lf_answer *a)
{
    VALUE list = rb_ary_new_capa((long)a->n_tool_calls);
    size_t i;

    for (i = 0; i < a->n_tool_calls; i++) {
        const lf_answer_call *c = &a->tool_calls[i];
        rb_ary_push(list, rb_ary_new_from_args(4, rb_utf8_str_new(c->id.ptr ? c->id.ptr : "", (long)c->id.len),
                                               rb_utf8_str_new(c->name.ptr ? c->name.ptr : "", (long)c->name.len),
                                               rb_utf8_str_new(c->arguments.ptr ? c->arguments.ptr : "",
                                                               (long)c->arguments.len),
                                               lf_buf_to_str_or_nil(&c->signature)));
    }
    return list;
}

/* Whether an answer carries reasoning state: its own, or a call's signature. */
static int lf_has_reasoning(const lf_answer *a)
{
    size_t i;

    if (a->reasoning.len) return 1;
    for (i = 0; i < a->n_tool_calls; i++)
        if (a->tool_calls[i].signature.len) return 1;
    return 0;
}

/* The answer's reasoning state into v: the state, the protocol and the origin
 * that made it (the answering target's). */
static void lf_reasoning_values(VALUE *v, const lf_answer *a, VALUE target)
{
    if (!lf_has_reasoning(a)) return;
    v[LF_RS_REASONING] = lf_buf_to_str_or_nil(&a->reasoning);
    v[LF_RS_REASONING_API] = rb_struct_getmember(target, rb_intern("api"));
    v[LF_RS_REASONING_ORIGIN] = rb_struct_getmember(target, rb_intern("origin"));
}

void lf_attempt_set_stopped_by(VALUE attempt, VALUE cause)
{
    RSTRUCT_SET(attempt, LF_AR_STOPPED, Qtrue);
    RSTRUCT_SET(attempt, LF_AR_STOPPED_BY, cause);
}

VALUE lf_result_value(const lf_outcome *o, VALUE targets)
{
    VALUE v[LF_RS_COUNT];
    int i;

    for (i = 0; i < LF_RS_COUNT; i++) v[i] = Qnil;
    v[LF_RS_STATUS] = o->ok ? lf_sym_ok : o->cancelled ? lf_sym_cancelled : lf_sym_failed;
    v[LF_RS_TARGET] = lf_target_at(targets, o->target);
    v[LF_RS_ATTEMPTS] = INT2NUM(o->attempts);
    v[LF_RS_PROVIDER_REQUEST_ID] = lf_buf_to_str_or_nil(&o->provider_request_id);
    if (o->ok) {
        v[LF_RS_CONTENT] = rb_utf8_str_new(o->answer.text.ptr ? o->answer.text.ptr : "", (long)o->answer.text.len);
        v[LF_RS_MODEL] = lf_buf_to_interned_or_nil(&o->answer.model);
        v[LF_RS_FINISH_REASON] = lf_buf_to_interned_or_nil(&o->answer.finish_reason);
        v[LF_RS_INPUT_TOKENS] = lf_long_or_nil(o->answer.input_tokens);
        v[LF_RS_OUTPUT_TOKENS] = lf_long_or_nil(o->answer.output_tokens);
        if (o->json.len) v[LF_RS_JSON] = rb_utf8_str_new(o->json.ptr, (long)o->json.len);
        if (o->answer.vectors) v[LF_RS_VECTORS] = lf_vectors_value(&o->answer);
        if (o->answer.n_tool_calls) v[LF_RS_TOOL_CALLS] = lf_tool_calls_to_array(&o->answer);
        lf_reasoning_values(v, &o->answer, v[LF_RS_TARGET]);
        return rb_class_new_instance(LF_RS_COUNT, v, lf_cResult);
    }
    v[LF_RS_PARTIAL_CONTENT] = lf_buf_to_str_or_nil(&o->partial);
    if (o->cancelled) return rb_class_new_instance(LF_RS_COUNT, v, lf_cResult);
    v[LF_RS_ERROR_CLASS] = lf_error_class_for(o->kind);
    v[LF_RS_MESSAGE] = rb_utf8_str_new(o->message.ptr ? o->message.ptr : "", (long)o->message.len);
    v[LF_RS_PHASE] = lf_phase_value(o->phase);
    v[LF_RS_HTTP_STATUS] = o->status ? LONG2NUM(o->status) : Qnil;
    v[LF_RS_BODY] = lf_body_or_nil(&o->body);
    v[LF_RS_RETRY_AFTER] = lf_num_or_nil(o->retry_after);
    v[LF_RS_RETRYABLE] = LF_BOOL(o->retryable);
    v[LF_RS_ERROR_TYPE] = lf_buf_to_str_or_nil(&o->error_type);
    v[LF_RS_ERROR_CODE] = lf_buf_to_str_or_nil(&o->error_code);
    return rb_class_new_instance(LF_RS_COUNT, v, lf_cResult);
}

void lf_init_engine_result(VALUE engine)
{
    lf_cResult = lf_engine_struct(engine, "Result", lf_result_members, LF_RS_COUNT, 0);
    lf_cAttempt = lf_engine_struct(engine, "Attempt", lf_attempt_members, LF_AR_COUNT, 0);
    /* An Exception, not a StandardError: a `rescue => e` in a store or a
     * block must not swallow it. */
    lf_cCancel = rb_define_class_under(engine, "Cancel", rb_eException);
    rb_global_variable(&lf_cResult);
    rb_global_variable(&lf_cAttempt);
    rb_global_variable(&lf_cCancel);
    lf_sym_ok = ID2SYM(rb_intern("ok"));
    lf_sym_failed = ID2SYM(rb_intern("failed"));
    lf_sym_cancelled = ID2SYM(rb_intern("cancelled"));
    lf_phase_syms[LF_PHASE_NONE] = Qnil;
    for (int p = LF_PHASE_CONNECT; p <= LF_PHASE_TOTAL; p++)
        lf_phase_syms[p] = ID2SYM(rb_intern(lf_phase_name((lf_phase)p)));
}
