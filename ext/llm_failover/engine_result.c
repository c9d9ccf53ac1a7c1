/* Engine#run's results as Ruby values: the record of one attempt (the Hash
 * on_attempt gets) and the outcome of the call (the Hash run returns). */
#include "lf_engine.h"

#include <ruby/encoding.h>
#include <math.h>

#include "lf_banned.h"

static VALUE lf_sym_tool_calls;
static VALUE lf_sym_ok, lf_sym_target, lf_sym_first_target, lf_sym_content, lf_sym_model,
    lf_sym_finish_reason, lf_sym_input_tokens, lf_sym_output_tokens, lf_sym_provider_request_id,
    lf_sym_attempts, lf_sym_error_class, lf_sym_message, lf_sym_status, lf_sym_body, lf_sym_retry_after,
    lf_sym_retryable, lf_sym_partial_content, lf_sym_error_type, lf_sym_error_code, lf_sym_phase,
    lf_sym_attempt, lf_sym_success, lf_sym_error_message, lf_sym_http_status, lf_sym_failover_eligible,
    lf_sym_latency_ms, lf_sym_first_token_ms, lf_sym_started_at, lf_sym_skipped, lf_sym_json,
    lf_sym_hedge, lf_sym_cancelled;

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

/* A Hash made at its final size from key/value pairs: a Hash of more than
 * eight pairs grown one rb_hash_aset at a time is rebuilt as a table on the
 * ninth. */
#define LF_PAIR(k, v) (pairs[n++] = (k), pairs[n++] = (v))

static VALUE lf_hash_of(const VALUE *pairs, long n)
{
    VALUE h = rb_hash_new();
    rb_hash_bulk_insert(n, pairs, h);
    return h;
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

VALUE lf_attempt_to_hash(const lf_attempt_record *r)
{
    VALUE pairs[2 * 20];
    long n = 0;
    LF_PAIR(lf_sym_attempt, INT2NUM(r->attempt));
    LF_PAIR(lf_sym_target, INT2NUM(r->target));
    LF_PAIR(lf_sym_success, r->success ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_error_class, r->success ? Qnil : lf_error_class_for(r->kind));
    LF_PAIR(lf_sym_error_message, lf_cstr_or_nil(r->error_message));
    LF_PAIR(lf_sym_phase, lf_phase_value(r->phase));
    LF_PAIR(lf_sym_http_status, r->http_status ? LONG2NUM(r->http_status) : Qnil);
    LF_PAIR(lf_sym_failover_eligible, r->failover_eligible ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_retry_after, lf_num_or_nil(r->retry_after));
    LF_PAIR(lf_sym_latency_ms, DBL2NUM(r->latency_ms));
    LF_PAIR(lf_sym_first_token_ms, lf_num_or_nil(r->first_token_ms));
    LF_PAIR(lf_sym_input_tokens, lf_long_or_nil(r->input_tokens));
    LF_PAIR(lf_sym_output_tokens, lf_long_or_nil(r->output_tokens));
    LF_PAIR(lf_sym_started_at, lf_time_from_epoch(r->started_at));
    LF_PAIR(lf_sym_provider_request_id, lf_cstr_or_nil(r->provider_request_id));
    LF_PAIR(lf_sym_skipped, r->skipped ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_hedge, r->hedge ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_cancelled, r->cancelled ? Qtrue : Qfalse);
    return lf_hash_of(pairs, n);
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

/* An answer's tool calls: [[id, name, arguments JSON], ...] (valid UTF-8,
 * the wire layer's promise). */
static VALUE lf_tool_calls_to_array(const lf_answer *a)
{
    VALUE list = rb_ary_new_capa((long)a->n_tool_calls);
    size_t i;

    for (i = 0; i < a->n_tool_calls; i++) {
        const lf_answer_call *c = &a->tool_calls[i];
        rb_ary_push(list, rb_ary_new_from_args(3, rb_utf8_str_new(c->id.ptr ? c->id.ptr : "", (long)c->id.len),
                                               rb_utf8_str_new(c->name.ptr ? c->name.ptr : "", (long)c->name.len),
                                               rb_utf8_str_new(c->arguments.ptr ? c->arguments.ptr : "",
                                                               (long)c->arguments.len)));
    }
    return list;
}

VALUE lf_outcome_to_hash(const lf_outcome *o)
{
    VALUE pairs[2 * 20];
    long n = 0;
    LF_PAIR(lf_sym_ok, o->ok ? Qtrue : Qfalse);
    LF_PAIR(lf_sym_target, INT2NUM(o->target));
    LF_PAIR(lf_sym_first_target, INT2NUM(o->first_target));
    LF_PAIR(lf_sym_attempts, INT2NUM(o->attempts));
    LF_PAIR(lf_sym_provider_request_id, lf_buf_to_str_or_nil(&o->provider_request_id));
    if (o->ok) {
        LF_PAIR(lf_sym_content, rb_utf8_str_new(o->answer.text.ptr ? o->answer.text.ptr : "",
                                                        (long)o->answer.text.len));
        LF_PAIR(lf_sym_model, lf_buf_to_interned_or_nil(&o->answer.model));
        LF_PAIR(lf_sym_finish_reason, lf_buf_to_interned_or_nil(&o->answer.finish_reason));
        LF_PAIR(lf_sym_input_tokens, lf_long_or_nil(o->answer.input_tokens));
        LF_PAIR(lf_sym_output_tokens, lf_long_or_nil(o->answer.output_tokens));
        if (o->json.len) LF_PAIR(lf_sym_json, rb_utf8_str_new(o->json.ptr, (long)o->json.len));
        if (o->answer.n_tool_calls) LF_PAIR(lf_sym_tool_calls, lf_tool_calls_to_array(&o->answer));
    } else {
        LF_PAIR(lf_sym_error_class, lf_error_class_for(o->kind));
        LF_PAIR(lf_sym_message, rb_utf8_str_new(o->message.ptr ? o->message.ptr : "",
                                                        (long)o->message.len));
        LF_PAIR(lf_sym_phase, lf_phase_value(o->phase));
        LF_PAIR(lf_sym_status, o->status ? LONG2NUM(o->status) : Qnil);
        LF_PAIR(lf_sym_body, lf_body_or_nil(&o->body));
        LF_PAIR(lf_sym_retry_after, lf_num_or_nil(o->retry_after));
        LF_PAIR(lf_sym_retryable, o->retryable ? Qtrue : Qfalse);
        LF_PAIR(lf_sym_partial_content, lf_buf_to_str_or_nil(&o->partial));
        LF_PAIR(lf_sym_error_type, lf_buf_to_str_or_nil(&o->error_type));
        LF_PAIR(lf_sym_error_code, lf_buf_to_str_or_nil(&o->error_code));
    }
    return lf_hash_of(pairs, n);
}

void lf_init_engine_result(void)
{
#define LF_SYM(var, name) (var = ID2SYM(rb_intern(name)))
    LF_SYM(lf_sym_ok, "ok");
    LF_SYM(lf_sym_target, "target");
    LF_SYM(lf_sym_first_target, "first_target");
    LF_SYM(lf_sym_content, "content");
    LF_SYM(lf_sym_model, "model");
    LF_SYM(lf_sym_finish_reason, "finish_reason");
    LF_SYM(lf_sym_input_tokens, "input_tokens");
    LF_SYM(lf_sym_output_tokens, "output_tokens");
    LF_SYM(lf_sym_provider_request_id, "provider_request_id");
    LF_SYM(lf_sym_attempts, "attempts");
    LF_SYM(lf_sym_error_class, "error_class");
    LF_SYM(lf_sym_message, "message");
    LF_SYM(lf_sym_status, "status");
    LF_SYM(lf_sym_body, "body");
    LF_SYM(lf_sym_retry_after, "retry_after");
    LF_SYM(lf_sym_retryable, "retryable");
    LF_SYM(lf_sym_partial_content, "partial_content");
    LF_SYM(lf_sym_error_type, "error_type");
    LF_SYM(lf_sym_error_code, "error_code");
    LF_SYM(lf_sym_phase, "phase");
    LF_SYM(lf_sym_attempt, "attempt");
    LF_SYM(lf_sym_success, "success");
    LF_SYM(lf_sym_error_message, "error_message");
    LF_SYM(lf_sym_http_status, "http_status");
    LF_SYM(lf_sym_failover_eligible, "failover_eligible");
    LF_SYM(lf_sym_latency_ms, "latency_ms");
    LF_SYM(lf_sym_first_token_ms, "first_token_ms");
    LF_SYM(lf_sym_started_at, "started_at");
    LF_SYM(lf_sym_skipped, "skipped");
    LF_SYM(lf_sym_json, "json");
    LF_SYM(lf_sym_tool_calls, "tool_calls");
    LF_SYM(lf_sym_hedge, "hedge");
    LF_SYM(lf_sym_cancelled, "cancelled");
#undef LF_SYM
    lf_phase_syms[LF_PHASE_NONE] = Qnil;
    for (int p = LF_PHASE_CONNECT; p <= LF_PHASE_TOTAL; p++)
        lf_phase_syms[p] = ID2SYM(rb_intern(lf_phase_name((lf_phase)p)));
}
