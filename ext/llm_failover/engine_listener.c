/* The core's listener, bound to a Ruby listener: on_chunk(text, target),
 * on_reset(target), on_attempt(Engine::Attempt), on_circuit_change(target,
 * from, to, reason, error_class); and the call's breaker: a CircuitTable's,
 * which the core runs itself, or a Ruby breaker object's health, admit and
 * report, whose answers are Engine::Health and Engine::Headroom, defined
 * here. Targets are the request's Engine::Targets (a pool's hosts each). Its waits are
 * engine_wait.c's, the values it hands over engine_result.c's.
 *
 * Ruby is called only from the listener's callbacks, which the core makes
 * between libcurl's steps, never inside libcurl, and always under rb_protect:
 * an exception (or break/throw, Thread#kill, Timeout) is stashed, the core
 * tears the transfer down, and Engine#run re-raises once lf_run returned. An
 * Engine::Cancel is not stashed: it cancels the call (LF_CANCEL). */
#include "lf_engine.h"

#include "lf_banned.h"

static ID lf_id_on_chunk, lf_id_on_reset, lf_id_on_attempt, lf_id_on_circuit_change, lf_id_health, lf_id_admit,
    lf_id_report;
static VALUE lf_sym_states[3], lf_sym_reasons[6];
static VALUE lf_cHealth, lf_cHeadroom;

/* Engine::Headroom: what a pool's host said is left of its window (nil:
 * not said) and in how many seconds each refills; dry: it cannot take
 * another call like the one that heard it before then. */
enum { LF_HR_REQUESTS, LF_HR_REQUESTS_FOR, LF_HR_TOKENS, LF_HR_TOKENS_FOR, LF_HR_DRY, LF_HR_COUNT };
static const char *const lf_headroom_members[LF_HR_COUNT] = { "requests", "requests_for", "tokens", "tokens_for",
                                                              "dry" };

/* Engine::Health: a target as a Ruby breaker's store sees it: its route
 * (Circuit::SEND, SKIP or PROBE), its counted failures, for how many
 * seconds a skip holds (nil: not said), its Engine::Headroom or nil. */
enum { LF_HE_ROUTE, LF_HE_FAILURES, LF_HE_OPEN_FOR, LF_HE_HEADROOM, LF_HE_COUNT };
static const char *const lf_health_members[LF_HE_COUNT] = { "route", "failures", "open_for", "headroom" };

VALUE lf_headroom_value(const lf_headroom *h, int dry)
{
    VALUE v;

    if (!lf_headroom_said(h)) return Qnil;
    v = rb_obj_alloc(lf_cHeadroom); /* keyword_init: its members set one by one */
    RSTRUCT_SET(v, LF_HR_REQUESTS, h->requests >= 0 ? LONG2NUM(h->requests) : Qnil);
    RSTRUCT_SET(v, LF_HR_REQUESTS_FOR, h->requests_for >= 0 ? DBL2NUM(h->requests_for) : Qnil);
    RSTRUCT_SET(v, LF_HR_TOKENS, h->tokens >= 0 ? LONG2NUM(h->tokens) : Qnil);
    RSTRUCT_SET(v, LF_HR_TOKENS_FOR, h->tokens_for >= 0 ? DBL2NUM(h->tokens_for) : Qnil);
    RSTRUCT_SET(v, LF_HR_DRY, dry ? Qtrue : Qfalse);
    return v;
}

static long lf_count_or_unsaid(VALUE v)
{
    return NIL_P(v) ? -1 : NUM2LONG(v);
}

static double lf_seconds_or_unsaid(VALUE v)
{
    return NIL_P(v) ? -1 : NUM2DBL(v);
}

lf_headroom lf_headroom_from(VALUE v)
{
    lf_headroom h = LF_HEADROOM_UNSAID;

    if (NIL_P(v)) return h;
    if (!rb_obj_is_kind_of(v, lf_cHeadroom)) rb_raise(rb_eTypeError, "llm_failover: a headroom must be an Engine::Headroom");
    h.requests = lf_count_or_unsaid(RSTRUCT_GET(v, LF_HR_REQUESTS));
    h.requests_for = lf_seconds_or_unsaid(RSTRUCT_GET(v, LF_HR_REQUESTS_FOR));
    h.tokens = lf_count_or_unsaid(RSTRUCT_GET(v, LF_HR_TOKENS));
    h.tokens_for = lf_seconds_or_unsaid(RSTRUCT_GET(v, LF_HR_TOKENS_FOR));
    return h;
}

/* The exception in errinfo, or nil: a throw or a break leaves an internal
 * object there (Ruby 3.3's THROW_DATA), which must not be asked its class. */
static VALUE lf_errinfo_exception(void)
{
    VALUE err = rb_errinfo();

    if (RB_SPECIAL_CONST_P(err) || RB_BUILTIN_TYPE(err) != T_OBJECT) return Qnil;
    return rb_obj_is_kind_of(err, rb_eException) ? err : Qnil;
}

int lf_ruby_stop(int *state)
{
    if (!*state) return 0;
    if (rb_obj_is_kind_of(lf_errinfo_exception(), lf_cancel_class())) {
        rb_set_errinfo(Qnil);
        *state = 0;
        return LF_CANCEL;
    }
    return 1;
}

static VALUE lf_target_value(const lf_ruby_listener *rl, int i)
{
    return i >= 0 && i < RARRAY_LEN(rl->targets) ? RARRAY_AREF(rl->targets, i) : Qnil;
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
                      lf_target_value(a->rl, a->target));
}

static int lf_rl_on_chunk(void *ud, int target, const char *text, size_t len)
{
    lf_ruby_listener *rl = ud;
    lf_chunk_args a = { rl, target, text, len };
    rb_protect(lf_call_on_chunk, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
}

typedef struct lf_reset_args {
    lf_ruby_listener *rl;
    int target;
} lf_reset_args;

static VALUE lf_call_on_reset(VALUE arg)
{
    lf_reset_args *a = (lf_reset_args *)arg;
    return rb_funcall(a->rl->listener, lf_id_on_reset, 1, lf_target_value(a->rl, a->target));
}

static int lf_rl_on_reset(void *ud, int target)
{
    lf_ruby_listener *rl = ud;
    lf_reset_args a = { rl, target };
    rb_protect(lf_call_on_reset, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
}

typedef struct lf_attempt_args {
    lf_ruby_listener *rl;
    const lf_attempt_record *rec;
} lf_attempt_args;

static VALUE lf_call_on_attempt(VALUE arg)
{
    lf_attempt_args *a = (lf_attempt_args *)arg;
    return rb_funcall(a->rl->listener, lf_id_on_attempt, 1, lf_attempt_value(a->rec, a->rl->targets));
}

static VALUE lf_attempt_value_protected(VALUE arg)
{
    lf_attempt_args *a = (lf_attempt_args *)arg;
    return lf_attempt_value(a->rec, a->rl->targets);
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
        VALUE v = rb_protect(lf_attempt_value_protected, (VALUE)&a, &state);
        if (state) return 1;
        /* A hedged request's two attempts are both cut: an Array of them. */
        if (RB_TYPE_P(rl->stopped_attempt, T_STRUCT)) rl->stopped_attempt = rb_ary_new_from_args(2, rl->stopped_attempt, v);
        else if (RB_TYPE_P(rl->stopped_attempt, T_ARRAY)) rb_ary_push(rl->stopped_attempt, v);
        else rl->stopped_attempt = v;
        return 1;
    }
    rb_protect(lf_call_on_attempt, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
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
        VALUE attempt = RARRAY_AREF(list, i);
        lf_attempt_set_stopped_by(attempt, a->cause);
        rb_funcall(a->rl->listener, lf_id_on_attempt, 1, attempt);
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
    if (!NIL_P(lf_errinfo_exception())) a.cause = rb_obj_class(err);
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

/* ---- a CircuitTable's changes ------------------------------------------ */

typedef struct lf_change_args {
    lf_ruby_listener *rl;
    int target;
    const lf_circuit_change *chg;
    lf_kind kind;
} lf_change_args;

/* on_circuit_change(target, from, to, reason, error_class): a state change
 * the call's attempt made, the listener's to announce. */
static VALUE lf_call_on_circuit_change(VALUE arg)
{
    lf_change_args *a = (lf_change_args *)arg;
    VALUE args[5];

    args[0] = lf_target_value(a->rl, a->target);
    args[1] = lf_sym_states[a->chg->from];
    args[2] = lf_sym_states[a->chg->to];
    args[3] = lf_sym_reasons[a->chg->reason];
    args[4] = a->kind == LF_OK ? Qnil : lf_error_class_for(a->kind);
    return rb_funcallv(a->rl->listener, lf_id_on_circuit_change, 5, args);
}

static int lf_rl_circuit_change(void *ud, int target, const lf_circuit_change *chg, lf_kind kind)
{
    lf_ruby_listener *rl = ud;
    lf_change_args a = { rl, target, chg, kind };
    rb_protect(lf_call_on_circuit_change, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
}

/* ---- a Ruby breaker (a state store asked from Ruby) ---------------------- */

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

/* An Engine::Health into *out. */
static void lf_health_from(VALUE v, lf_health *out)
{
    VALUE open_for;

    if (!rb_obj_is_kind_of(v, lf_cHealth)) rb_raise(rb_eTypeError, "llm_failover: a breaker answers Engine::Health");
    out->route = lf_route_of(RSTRUCT_GET(v, LF_HE_ROUTE));
    out->failures = NUM2INT(RSTRUCT_GET(v, LF_HE_FAILURES));
    open_for = RSTRUCT_GET(v, LF_HE_OPEN_FOR);
    out->open_for = NIL_P(open_for) ? 0 : NUM2DBL(open_for);
    out->headroom = lf_headroom_from(RSTRUCT_GET(v, LF_HE_HEADROOM));
}

/* health(n) -> [Engine::Health, ...], one per target. */
static VALUE lf_call_health(VALUE arg)
{
    lf_health_args *a = (lf_health_args *)arg;
    VALUE r = rb_funcall(a->rl->breaker_object, lf_id_health, 1, SIZET2NUM(a->n));
    size_t i;
    Check_Type(r, T_ARRAY);
    for (i = 0; i < a->n && (long)i < RARRAY_LEN(r); i++) lf_health_from(RARRAY_AREF(r, (long)i), &a->out[i]);
    return Qnil;
}

static int lf_rb_health(void *ud, size_t n, lf_health *out)
{
    lf_ruby_listener *rl = ud;
    lf_health_args a = { rl, n, out };
    rb_protect(lf_call_health, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
}

typedef struct lf_admit_args {
    lf_ruby_listener *rl;
    int target;
    lf_health *out;
} lf_admit_args;

/* admit(target) -> Engine::Health */
static VALUE lf_call_admit(VALUE arg)
{
    lf_admit_args *a = (lf_admit_args *)arg;
    lf_health_from(rb_funcall(a->rl->breaker_object, lf_id_admit, 1, lf_target_value(a->rl, a->target)), a->out);
    return Qnil;
}

static int lf_rb_admit(void *ud, int target, lf_health *out)
{
    lf_ruby_listener *rl = ud;
    lf_admit_args a = { rl, target, out };
    rb_protect(lf_call_admit, (VALUE)&a, &rl->state);
    return lf_ruby_stop(&rl->state);
}

typedef struct lf_report_args {
    lf_ruby_listener *rl;
    const lf_circuit_report *r;
    int open;
} lf_report_args;

/* report(target, success, error_class, hold, headroom) -> whether it is open
 * now; headroom an Engine::Headroom or nil. */
static VALUE lf_call_report(VALUE arg)
{
    lf_report_args *a = (lf_report_args *)arg;
    const lf_circuit_report *r = a->r;
    VALUE open = rb_funcall(a->rl->breaker_object, lf_id_report, 5, lf_target_value(a->rl, r->target),
                            r->success ? Qtrue : Qfalse, r->success ? Qnil : lf_error_class_for(r->kind),
                            DBL2NUM(r->hold), lf_headroom_value(&r->headroom, r->dry));
    a->open = RTEST(open);
    return Qnil;
}

static int lf_rb_report(void *ud, const lf_circuit_report *r, int *open)
{
    lf_ruby_listener *rl = ud;
    lf_report_args a = { rl, r, 0 };
    rb_protect(lf_call_report, (VALUE)&a, &rl->state);
    *open = a.open;
    return lf_ruby_stop(&rl->state);
}

const lf_breaker *lf_ruby_listener_breaker(lf_ruby_listener *rl, lf_engine_request *r)
{
    VALUE circuits = r->circuits_object;

    if (NIL_P(circuits)) return NULL;
    if (lf_is_circuit_table(circuits)) {
        if (rb_respond_to(rl->listener, lf_id_on_circuit_change)) {
            r->circuits.ud = rl;
            r->circuits.on_change = lf_rl_circuit_change;
        }
        return &r->breaker;
    }
    if (!rb_respond_to(circuits, lf_id_health) || !rb_respond_to(circuits, lf_id_report))
        rb_raise(rb_eArgError, "llm_failover: :circuits must be a CircuitTable or respond to health and report");
    rl->breaker_object = circuits;
    rl->ruby_breaker = (lf_breaker){
        .ud = rl,
        .health = lf_rb_health,
        .report = lf_rb_report,
        .admit = rb_respond_to(circuits, lf_id_admit) ? lf_rb_admit : NULL,
    };
    return &rl->ruby_breaker;
}

void lf_ruby_listener_init(lf_ruby_listener *rl, VALUE listener, VALUE targets, lf_listener *l)
{
    if (!rb_respond_to(listener, lf_id_on_chunk) || !rb_respond_to(listener, lf_id_on_reset) ||
        !rb_respond_to(listener, lf_id_on_attempt))
        rb_raise(rb_eArgError, "llm_failover: listener must respond to on_chunk, on_reset and on_attempt");
    rl->listener = listener;
    rl->targets = targets;
    rl->state = 0;
    rl->stopped_attempt = Qnil;
    rl->breaker_object = Qnil;
    l->ud = rl;
    l->on_chunk = lf_rl_on_chunk;
    l->on_reset = lf_rl_on_reset;
    l->on_attempt = lf_rl_on_attempt;
    lf_ruby_listener_waits(rl, l);
}

void lf_init_engine_listener(VALUE engine)
{
    int i;

    lf_cHeadroom = lf_engine_struct(engine, "Headroom", lf_headroom_members, LF_HR_COUNT, 1);
    lf_cHealth = lf_engine_struct(engine, "Health", lf_health_members, LF_HE_COUNT, 1);
    rb_global_variable(&lf_cHeadroom);
    rb_global_variable(&lf_cHealth);
    lf_id_on_chunk = rb_intern("on_chunk");
    lf_id_on_reset = rb_intern("on_reset");
    lf_id_on_attempt = rb_intern("on_attempt");
    lf_id_on_circuit_change = rb_intern("on_circuit_change");
    lf_id_health = rb_intern("health");
    lf_id_admit = rb_intern("admit");
    lf_id_report = rb_intern("report");
    for (i = 0; i < 3; i++) lf_sym_states[i] = ID2SYM(rb_intern(lf_circuit_state_name((lf_circuit_state)i)));
    lf_sym_reasons[0] = Qnil;
    for (i = 1; i < 6; i++) lf_sym_reasons[i] = ID2SYM(rb_intern(lf_circuit_reason_name((lf_circuit_reason)i)));
    lf_init_engine_wait();
}
