/* The core's listener, bound to a Ruby listener: on_chunk(text, target),
 * on_reset, on_attempt(Hash); the waits with the GVL released; and the
 * outcome as Engine#run's result Hash.
 *
 * Ruby is called only from the listener's callbacks, which the core makes
 * between libcurl's steps, never inside libcurl, and always under rb_protect:
 * an exception (or break/throw, Thread#kill, Timeout) is stashed, the core
 * tears the transfer down, and Engine#run re-raises once lf_run returned. */
#include "lf_engine.h"

#include <ruby/encoding.h>
#include <ruby/thread.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "lf_banned.h"

static ID lf_id_on_chunk, lf_id_on_reset, lf_id_on_attempt, lf_id_on_interrupt, lf_id_circuit_health,
    lf_id_circuit_report, lf_id_wake_io, lf_id_on_wake, lf_id_circuit_admit;
static VALUE lf_sym_ok, lf_sym_target, lf_sym_first_target, lf_sym_content, lf_sym_model,
    lf_sym_finish_reason, lf_sym_input_tokens, lf_sym_output_tokens, lf_sym_provider_request_id,
    lf_sym_attempts, lf_sym_error_class, lf_sym_message, lf_sym_status, lf_sym_body, lf_sym_retry_after,
    lf_sym_retryable, lf_sym_partial_content, lf_sym_error_type, lf_sym_error_code, lf_sym_phase,
    lf_sym_attempt, lf_sym_success, lf_sym_error_message, lf_sym_http_status, lf_sym_failover_eligible,
    lf_sym_latency_ms, lf_sym_first_token_ms, lf_sym_started_at, lf_sym_skipped, lf_sym_json,
    lf_sym_stopped_by;

/* ---- values ------------------------------------------------------------ */

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
 * ninth (callgrind: ~9k instructions per call for the attempt and result
 * Hashes together). */
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

/* ---- the listener ------------------------------------------------------ */

typedef struct lf_chunk_args {
    lf_ruby_listener *rl;
    int target;
    const char *text;
    size_t len;
} lf_chunk_args;

static VALUE lf_call_on_chunk(VALUE arg)
{
    lf_chunk_args *a = (lf_chunk_args *)arg;
    return rb_funcall(a->rl->listener, lf_id_on_chunk, 2, rb_utf8_str_new(a->text, (long)a->len),
                      INT2NUM(a->target));
}

static int lf_rl_on_chunk(void *ud, int target, const char *text, size_t len)
{
    lf_ruby_listener *rl = ud;
    lf_chunk_args a = { rl, target, text, len };
    rb_protect(lf_call_on_chunk, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

static VALUE lf_call_on_reset(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_reset, 0);
}

static int lf_rl_on_reset(void *ud)
{
    lf_ruby_listener *rl = ud;
    rb_protect(lf_call_on_reset, rl->listener, &rl->state);
    return rl->state != 0;
}

typedef struct lf_attempt_args {
    lf_ruby_listener *rl;
    const lf_attempt_record *rec;
} lf_attempt_args;

static VALUE lf_attempt_to_hash(const lf_attempt_record *r)
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
    return lf_hash_of(pairs, n);
}

static VALUE lf_call_on_attempt(VALUE arg)
{
    lf_attempt_args *a = (lf_attempt_args *)arg;
    return rb_funcall(a->rl->listener, lf_id_on_attempt, 1, lf_attempt_to_hash(a->rec));
}

static VALUE lf_attempt_hash_protected(VALUE arg)
{
    return lf_attempt_to_hash((const lf_attempt_record *)arg);
}

static int lf_rl_on_attempt(void *ud, const lf_attempt_record *rec)
{
    lf_ruby_listener *rl = ud;
    lf_attempt_args a = { rl, rec };
    int state = 0;

    if (rl->state) {
        /* The attempt the stashed exception cut: Ruby code may not run
         * before that exception has unwound (its errinfo would be lost), so
         * the record waits for lf_ruby_listener_unwind. */
        VALUE h = rb_protect(lf_attempt_hash_protected, (VALUE)rec, &state);
        if (!state) rl->stopped_attempt = h;
        return 1;
    }
    rb_protect(lf_call_on_attempt, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

typedef struct lf_stopped_args {
    lf_ruby_listener *rl;
    VALUE cause;
} lf_stopped_args;

static VALUE lf_call_on_stopped_attempt(VALUE arg)
{
    lf_stopped_args *a = (lf_stopped_args *)arg;
    VALUE h = a->rl->stopped_attempt;
    rb_hash_aset(h, lf_sym_stopped_by, a->cause);
    return rb_funcall(a->rl->listener, lf_id_on_attempt, 1, h);
}

void lf_ruby_listener_unwind(lf_ruby_listener *rl)
{
    lf_stopped_args a = { rl, Qnil };
    VALUE err;
    int state = 0;

    if (!RTEST(rl->stopped_attempt)) return; /* Qnil, or Qfalse: init never ran */
    err = rb_errinfo();
    /* What stopped the call: the exception on its way up, or nil (a
     * Thread#kill, a throw or break out of the block). */
    if (rb_obj_is_kind_of(err, rb_eException)) a.cause = rb_obj_class(err);
    /* In rb_ensure's cleanup $! still holds that exception (a Ruby ensure
     * clause sees nil there), and C code under the listener may take it for
     * one of its own: the sqlite3 gem's Statement#step raises whatever $!
     * holds, so an ActiveRecord sink on SQLite raised the caller's Timeout
     * or exception back and wrote no row. The listener runs with $! nil. */
    rb_set_errinfo(Qnil);
    rb_protect(lf_call_on_stopped_attempt, (VALUE)&a, &state);
    /* A listener that raises here cannot replace the exception that stopped
     * the call: it is dropped, and the one on its way up put back. */
    rb_set_errinfo(NIL_P(a.cause) ? Qnil : err);
    rl->stopped_attempt = Qnil;
}

/* ---- the circuit breaker ------------------------------------------------ */

typedef struct lf_health_args {
    lf_ruby_listener *rl;
    size_t n;
    lf_health *out;
} lf_health_args;

/* circuit_health(n) -> [route, failures, ...], a pair per target. */
static VALUE lf_call_circuit_health(VALUE arg)
{
    lf_health_args *a = (lf_health_args *)arg;
    VALUE r = rb_funcall(a->rl->listener, lf_id_circuit_health, 1, SIZET2NUM(a->n));
    size_t i;
    Check_Type(r, T_ARRAY);
    for (i = 0; i < a->n && (long)(2 * i + 1) < RARRAY_LEN(r); i++) {
        int route = NUM2INT(RARRAY_AREF(r, (long)(2 * i)));
        a->out[i].route = route == LF_ROUTE_SKIP ? LF_ROUTE_SKIP : route == LF_ROUTE_PROBE ? LF_ROUTE_PROBE : LF_ROUTE_SEND;
        a->out[i].failures = NUM2INT(RARRAY_AREF(r, (long)(2 * i + 1)));
    }
    return Qnil;
}

typedef struct lf_admit_args {
    lf_ruby_listener *rl;
    int target;
    lf_health *out;
} lf_admit_args;

/* circuit_admit(target) -> [route, failures] */
static VALUE lf_call_circuit_admit(VALUE arg)
{
    lf_admit_args *a = (lf_admit_args *)arg;
    VALUE r = rb_funcall(a->rl->listener, lf_id_circuit_admit, 1, INT2NUM(a->target));
    int route;
    Check_Type(r, T_ARRAY);
    if (RARRAY_LEN(r) < 2) return Qnil;
    route = NUM2INT(RARRAY_AREF(r, 0));
    a->out->route = route == LF_ROUTE_SKIP ? LF_ROUTE_SKIP : route == LF_ROUTE_PROBE ? LF_ROUTE_PROBE : LF_ROUTE_SEND;
    a->out->failures = NUM2INT(RARRAY_AREF(r, 1));
    return Qnil;
}

static int lf_rl_admit(void *ud, int target, lf_health *out)
{
    lf_ruby_listener *rl = ud;
    lf_admit_args a = { rl, target, out };
    rb_protect(lf_call_circuit_admit, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

static int lf_rl_health(void *ud, size_t n, lf_health *out)
{
    lf_ruby_listener *rl = ud;
    lf_health_args a = { rl, n, out };
    rb_protect(lf_call_circuit_health, (VALUE)&a, &rl->state);
    return rl->state != 0;
}

typedef struct lf_report_args {
    lf_ruby_listener *rl;
    int target, success;
    lf_kind kind;
    double hold;
    int open;
} lf_report_args;

/* circuit_report(target, success, error_class, hold) -> whether it is open now. */
static VALUE lf_call_circuit_report(VALUE arg)
{
    lf_report_args *a = (lf_report_args *)arg;
    VALUE r = rb_funcall(a->rl->listener, lf_id_circuit_report, 4, INT2NUM(a->target), a->success ? Qtrue : Qfalse,
                         a->success ? Qnil : lf_error_class_for(a->kind), DBL2NUM(a->hold));
    a->open = RTEST(r);
    return Qnil;
}

static int lf_rl_report(void *ud, int target, int success, lf_kind kind, double hold, int *open)
{
    lf_ruby_listener *rl = ud;
    lf_report_args a = { rl, target, success, kind, hold, 0 };
    rb_protect(lf_call_circuit_report, (VALUE)&a, &rl->state);
    *open = a.open;
    return rl->state != 0;
}

void lf_ruby_listener_breaker(lf_ruby_listener *rl, lf_listener *l, int report_only)
{
    if (!rb_respond_to(rl->listener, lf_id_circuit_report) ||
        (!report_only && !rb_respond_to(rl->listener, lf_id_circuit_health)))
        rb_raise(rb_eArgError, "llm_failover: a :circuit listener must respond to circuit_health and circuit_report");
    l->health = report_only ? NULL : lf_rl_health;
    l->report = lf_rl_report;
    l->admit = rb_respond_to(rl->listener, lf_id_circuit_admit) ? lf_rl_admit : NULL;
}

/* ---- waits ------------------------------------------------------------- */

typedef struct lf_wait_args {
    lf_ruby_listener *rl;
    CURLM *multi;
    int timeout_ms;
} lf_wait_args;

static void *lf_wait_nogvl(void *arg)
{
    lf_wait_args *w = arg;
    int numfds = 0;
    if (!w->rl->woken) curl_multi_poll(w->multi, NULL, 0, w->timeout_ms, &numfds);
    return NULL;
}

/* The unblocking function: Thread#kill, Thread#raise, Timeout and signals
 * call it from another thread. curl_multi_wakeup is safe to call from any
 * thread and makes the poll return at once. */
static void lf_wait_ubf(void *arg)
{
    lf_wait_args *w = arg;
    int saved_errno = errno; /* it may run in a signal handler */
    w->rl->woken = 1;
    curl_multi_wakeup(w->multi);
    errno = saved_errno;
}

static VALUE lf_check_ints(VALUE unused)
{
    rb_thread_check_ints();
    return Qnil;
}

static VALUE lf_call_on_interrupt(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_interrupt, 0);
}

static int lf_rl_wait(void *ud, CURLM *multi, int timeout_ms)
{
    lf_ruby_listener *rl = ud;
    lf_wait_args w = { rl, multi, timeout_ms };
    int interrupted;

    rl->woken = 0;
    /* INTR_FAIL (what rb_thread_call_without_gvl2 passes) never raises: it
     * returns at once when an interrupt is pending, and leaves interrupts to
     * us. UBF_ASYNC_SAFE: lf_wait_ubf only stores a flag and write(2)s to
     * curl's wakeup socket, so Ruby may call it from a signal handler;
     * without the flag Ruby 3.1 starts and joins a helper thread on every
     * wait made from the main thread (measured: 22 us each, bench/README.md). */
    rb_nogvl(lf_wait_nogvl, &w, lf_wait_ubf, &w, RB_NOGVL_INTR_FAIL | RB_NOGVL_UBF_ASYNC_SAFE);
    /* Woken by the unblocking function, or an interrupt came while the GVL
     * was being taken back or before the wait began (then it never blocked):
     * read before the interrupts are run, which clears the flag. */
    interrupted = rl->woken || rb_thread_interrupted(rb_thread_current());
    /* Run pending interrupts now, under protection: a Thread#kill or an
     * exception from a signal handler stops the call, a signal handler
     * that returns normally lets it go on. */
    rb_protect(lf_check_ints, Qnil, &rl->state);
    /* Then the listener may stop the call by raising (Chat#cancel! wakes
     * the thread with Thread#wakeup; timer ticks make false alarms). */
    if (!rl->state && interrupted && rl->on_interrupt) rb_protect(lf_call_on_interrupt, rl->listener, &rl->state);
    return rl->state != 0;
}

/* Under a Fiber scheduler every wait goes through it instead (fiber_wait.c). */
static int lf_rl_wait_fd(void *ud, int fd, int timeout_ms)
{
    lf_ruby_listener *rl = ud;

    lf_fiber_wait_for(&rl->fiber, fd, timeout_ms, &rl->state);
    return rl->state != 0;
}

static VALUE lf_call_on_wake(VALUE listener)
{
    return rb_funcall(listener, lf_id_on_wake, 0);
}

/* The listener's wake_io became readable (Chat#cancel! under a scheduler):
 * its on_wake raises what stops the call, or drains the IO. */
static int lf_rl_on_wake(void *ud)
{
    lf_ruby_listener *rl = ud;
    rb_protect(lf_call_on_wake, rl->listener, &rl->state);
    return rl->state != 0;
}

/* Under a scheduler nothing is raised into the thread to end a wait (it
 * would hit whichever fiber runs): a listener with wake_io (an IO) and
 * on_wake has the core watch that IO instead. */
static void lf_ruby_listener_wake(lf_ruby_listener *rl, lf_listener *l)
{
    VALUE io;

    if (!rb_respond_to(rl->listener, lf_id_wake_io) || !rb_respond_to(rl->listener, lf_id_on_wake)) return;
    io = rb_funcall(rl->listener, lf_id_wake_io, 0);
    if (NIL_P(io)) return;
    l->wake_fd = lf_fiber_wait_wake(&rl->fiber, io);
    l->on_wake = lf_rl_on_wake;
}

void lf_ruby_listener_init(lf_ruby_listener *rl, VALUE listener, lf_listener *l)
{
    if (!rb_respond_to(listener, lf_id_on_chunk) || !rb_respond_to(listener, lf_id_on_reset) ||
        !rb_respond_to(listener, lf_id_on_attempt))
        rb_raise(rb_eArgError, "llm_failover: listener must respond to on_chunk, on_reset and on_attempt");
    rl->listener = listener;
    rl->state = 0;
    rl->woken = 0;
    rl->on_interrupt = rb_respond_to(listener, lf_id_on_interrupt);
    rl->stopped_attempt = Qnil;
    l->ud = rl;
    l->on_chunk = lf_rl_on_chunk;
    l->on_reset = lf_rl_on_reset;
    l->on_attempt = lf_rl_on_attempt;
    l->wait = lf_rl_wait;
    l->wait_fd = lf_fiber_wait_init(&rl->fiber) ? lf_rl_wait_fd : NULL;
    l->wake_fd = -1;
    l->on_wake = NULL;
    if (l->wait_fd) lf_ruby_listener_wake(rl, l);
}

/* ---- the result -------------------------------------------------------- */

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

void lf_init_engine_listener(void)
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
    LF_SYM(lf_sym_stopped_by, "stopped_by");
#undef LF_SYM
    lf_phase_syms[LF_PHASE_NONE] = Qnil;
    for (int p = LF_PHASE_CONNECT; p <= LF_PHASE_TOTAL; p++)
        lf_phase_syms[p] = ID2SYM(rb_intern(lf_phase_name((lf_phase)p)));
    lf_id_on_chunk = rb_intern("on_chunk");
    lf_id_on_reset = rb_intern("on_reset");
    lf_id_on_attempt = rb_intern("on_attempt");
    lf_id_on_interrupt = rb_intern("on_interrupt");
    lf_id_circuit_health = rb_intern("circuit_health");
    lf_id_circuit_report = rb_intern("circuit_report");
    lf_id_wake_io = rb_intern("wake_io");
    lf_id_on_wake = rb_intern("on_wake");
    lf_id_circuit_admit = rb_intern("circuit_admit");
}
