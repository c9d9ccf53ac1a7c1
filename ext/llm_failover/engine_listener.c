/* The core's listener, bound to a Ruby listener: on_chunk(text, target),
 * on_reset, on_attempt(Hash), and the circuit breaker's circuit_health,
 * circuit_report and circuit_admit. Its waits are engine_wait.c's, the
 * Hashes it hands over engine_result.c's.
 *
 * Ruby is called only from the listener's callbacks, which the core makes
 * between libcurl's steps, never inside libcurl, and always under rb_protect:
 * an exception (or break/throw, Thread#kill, Timeout) is stashed, the core
 * tears the transfer down, and Engine#run re-raises once lf_run returned. */
#include "lf_engine.h"

#include "lf_banned.h"

static ID lf_id_on_chunk, lf_id_on_reset, lf_id_on_attempt, lf_id_circuit_health, lf_id_circuit_report,
    lf_id_circuit_admit;
static VALUE lf_sym_stopped_by;

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
        if (state) return 1;
        /* A hedged request's two attempts are both cut: an Array of them. */
        if (RB_TYPE_P(rl->stopped_attempt, T_HASH)) rl->stopped_attempt = rb_ary_new_from_args(2, rl->stopped_attempt, h);
        else if (RB_TYPE_P(rl->stopped_attempt, T_ARRAY)) rb_ary_push(rl->stopped_attempt, h);
        else rl->stopped_attempt = h;
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
    VALUE list = a->rl->stopped_attempt;
    long i;

    if (!RB_TYPE_P(list, T_ARRAY)) list = rb_ary_new_from_args(1, list);
    for (i = 0; i < RARRAY_LEN(list); i++) {
        VALUE h = RARRAY_AREF(list, i);
        rb_hash_aset(h, lf_sym_stopped_by, a->cause);
        rb_funcall(a->rl->listener, lf_id_on_attempt, 1, h);
    }
    return Qnil;
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

/* A route as Ruby's breaker gave it; anything unknown sends. */
static lf_route lf_route_of(VALUE v)
{
    int route = NUM2INT(v);
    return route == LF_ROUTE_SKIP ? LF_ROUTE_SKIP : route == LF_ROUTE_PROBE ? LF_ROUTE_PROBE : LF_ROUTE_SEND;
}

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
        a->out[i].route = lf_route_of(RARRAY_AREF(r, (long)(2 * i)));
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
    Check_Type(r, T_ARRAY);
    if (RARRAY_LEN(r) < 2) return Qnil;
    a->out->route = lf_route_of(RARRAY_AREF(r, 0));
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
    const lf_circuit_report *r;
    int open;
} lf_report_args;

/* circuit_report(target, success, error_class, hold) -> whether it is open now. */
static VALUE lf_call_circuit_report(VALUE arg)
{
    lf_report_args *a = (lf_report_args *)arg;
    const lf_circuit_report *r = a->r;
    VALUE open = rb_funcall(a->rl->listener, lf_id_circuit_report, 4, INT2NUM(r->target), r->success ? Qtrue : Qfalse,
                            r->success ? Qnil : lf_error_class_for(r->kind), DBL2NUM(r->hold));
    a->open = RTEST(open);
    return Qnil;
}

static int lf_rl_report(void *ud, const lf_circuit_report *r, int *open)
{
    lf_ruby_listener *rl = ud;
    lf_report_args a = { rl, r, 0 };
    rb_protect(lf_call_circuit_report, (VALUE)&a, &rl->state);
    *open = a.open;
    return rl->state != 0;
}

void lf_ruby_listener_breaker(lf_ruby_listener *rl, lf_listener *l)
{
    if (!rb_respond_to(rl->listener, lf_id_circuit_report) || !rb_respond_to(rl->listener, lf_id_circuit_health))
        rb_raise(rb_eArgError, "llm_failover: a :circuit listener must respond to circuit_health and circuit_report");
    l->health = lf_rl_health;
    l->report = lf_rl_report;
    l->admit = rb_respond_to(rl->listener, lf_id_circuit_admit) ? lf_rl_admit : NULL;
}

void lf_ruby_listener_init(lf_ruby_listener *rl, VALUE listener, lf_listener *l)
{
    if (!rb_respond_to(listener, lf_id_on_chunk) || !rb_respond_to(listener, lf_id_on_reset) ||
        !rb_respond_to(listener, lf_id_on_attempt))
        rb_raise(rb_eArgError, "llm_failover: listener must respond to on_chunk, on_reset and on_attempt");
    rl->listener = listener;
    rl->state = 0;
    rl->stopped_attempt = Qnil;
    l->ud = rl;
    l->on_chunk = lf_rl_on_chunk;
    l->on_reset = lf_rl_on_reset;
    l->on_attempt = lf_rl_on_attempt;
    lf_ruby_listener_waits(rl, l);
}

void lf_init_engine_listener(void)
{
    lf_sym_stopped_by = ID2SYM(rb_intern("stopped_by"));
    lf_id_on_chunk = rb_intern("on_chunk");
    lf_id_on_reset = rb_intern("on_reset");
    lf_id_on_attempt = rb_intern("on_attempt");
    lf_id_circuit_health = rb_intern("circuit_health");
    lf_id_circuit_report = rb_intern("circuit_report");
    lf_id_circuit_admit = rb_intern("circuit_admit");
    lf_init_engine_wait();
    lf_init_engine_result();
}
