/* LlmFailover::Circuit: one target's circuit for MemoryStateStore, a thin
 * wrapper over the core's lf_circuit (its rules are core/lf_circuit.c's).
 * Locking and the table of circuits are MemoryStateStore's (Ruby). */
#include "lf_ruby.h"

#include "lf_circuit.h"

#include "lf_banned.h"

typedef struct lf_circuit_wrapper {
    lf_circuit c;
    lf_circuit_change last; /* of the last admit or record */
} lf_circuit_wrapper;

static VALUE lf_sym_states[3], lf_sym_reasons[6];

static size_t lf_circuit_memsize(const void *p)
{
    return sizeof(lf_circuit_wrapper);
}

/* No Ruby objects inside: nothing to mark or to move. */
static const rb_data_type_t lf_circuit_type = {
    .wrap_struct_name = "LlmFailover::Circuit",
    .function = {
        .dmark = NULL,
        .dfree = RUBY_TYPED_DEFAULT_FREE,
        .dsize = lf_circuit_memsize,
        .dcompact = NULL,
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

static VALUE lf_circuit_alloc(VALUE klass)
{
    lf_circuit_wrapper *w;
    return TypedData_Make_Struct(klass, lf_circuit_wrapper, &lf_circuit_type, w);
}

static lf_circuit_wrapper *lf_circuit_get(VALUE self)
{
    lf_circuit_wrapper *w;
    TypedData_Get_Struct(self, lf_circuit_wrapper, &lf_circuit_type, w);
    return w;
}

/* @overload admit(now, probe_ttl)
 *   @return [Integer] 0 send, 1 skip, 2 probe (this caller holds the probe) */
static VALUE lf_circuit_m_admit(VALUE self, VALUE now, VALUE probe_ttl)
{
    lf_circuit_wrapper *w = lf_circuit_get(self);
    return INT2FIX(lf_circuit_admit(&w->c, NUM2DBL(now), NUM2DBL(probe_ttl), &w->last));
}

/* @overload peek(now)
 *   @return [Integer] what #admit would answer, changing nothing (2: the probe is free) */
static VALUE lf_circuit_m_peek(VALUE self, VALUE now)
{
    return INT2FIX(lf_circuit_peek(&lf_circuit_get(self)->c, NUM2DBL(now)));
}

/* @overload record(now, threshold, cooldown, success, hold, probe, first = cooldown)
 *   @param probe [Boolean] the reporting call was handed the half-open probe
 *   @param first [Numeric] the recovery schedule's first wait (circuit_first_probe)
 *   @return [Boolean] whether the state changed (see #last_change) */
static VALUE lf_circuit_m_record(int argc, VALUE *argv, VALUE self)
{
    lf_circuit_wrapper *w = lf_circuit_get(self);
    VALUE now, threshold, cooldown, success, hold, probe, first;

    rb_scan_args(argc, argv, "61", &now, &threshold, &cooldown, &success, &hold, &probe, &first);
    return lf_circuit_record(&w->c, NUM2INT(threshold), NIL_P(first) ? NUM2DBL(cooldown) : NUM2DBL(first),
                             NUM2DBL(cooldown), NUM2DBL(now), RTEST(success), NUM2DBL(hold), RTEST(probe), &w->last)
               ? Qtrue
               : Qfalse;
}

/* @return [Array(Symbol, Symbol, Symbol), nil] from, to, reason of the last
 *   admit or record, nil when it changed nothing */
static VALUE lf_circuit_m_last_change(VALUE self)
{
    lf_circuit_wrapper *w = lf_circuit_get(self);
    if (w->last.reason == LF_REASON_NONE) return Qnil;
    return rb_ary_new_from_args(3, lf_sym_states[w->last.from], lf_sym_states[w->last.to],
                                lf_sym_reasons[w->last.reason]);
}

/* @return [Symbol] :closed, :open or :half_open */
static VALUE lf_circuit_m_state(VALUE self)
{
    return lf_sym_states[lf_circuit_get(self)->c.state];
}

static VALUE lf_circuit_m_failures(VALUE self)
{
    return INT2NUM(lf_circuit_get(self)->c.failures);
}

static VALUE lf_epoch_or_nil(double t)
{
    return t > 0 ? DBL2NUM(t) : Qnil;
}

/* @return [Float, nil] epoch seconds the incident began */
static VALUE lf_circuit_m_opened_at(VALUE self)
{
    return lf_epoch_or_nil(lf_circuit_get(self)->c.opened_at);
}

/* @return [Float, nil] epoch seconds the circuit stays open until */
static VALUE lf_circuit_m_cooldown_until(VALUE self)
{
    lf_circuit_wrapper *w = lf_circuit_get(self);
    return w->c.state == LF_CIRCUIT_CLOSED ? Qnil : lf_epoch_or_nil(w->c.until);
}

/* @return [Integer] failed probes since the circuit opened (the schedule's step) */
static VALUE lf_circuit_m_probes_failed(VALUE self)
{
    return INT2NUM(lf_circuit_get(self)->c.probes_failed);
}

/* @overload interval(first, cooldown, elapsed)
 *   The recovery schedule (lf_circuit_interval): seconds open before the next probe,
 *   elapsed seconds into the incident.
 *   @return [Float] */
static VALUE lf_circuit_s_interval(VALUE klass, VALUE first, VALUE cooldown, VALUE elapsed)
{
    (void)klass;
    return DBL2NUM(lf_circuit_interval(NUM2DBL(first), NUM2DBL(cooldown), NUM2DBL(elapsed)));
}

/* A forked child does not inherit its parent's probe. */
static VALUE lf_circuit_m_release_probe(VALUE self)
{
    lf_circuit_get(self)->c.probe_until = 0;
    return Qnil;
}

/* The probe's holder asked again: true when it still holds a probe (for ttl more seconds). */
static VALUE lf_circuit_m_renew_probe(VALUE self, VALUE now, VALUE probe_ttl)
{
    return lf_circuit_renew_probe(&lf_circuit_get(self)->c, NUM2DBL(now), NUM2DBL(probe_ttl)) ? Qtrue : Qfalse;
}

/* A shared store's view of the target: open for open_for more seconds, or closed. */
static VALUE lf_circuit_m_adopt(VALUE self, VALUE now, VALUE failures, VALUE open_for)
{
    lf_circuit_adopt(&lf_circuit_get(self)->c, NUM2DBL(now), NUM2INT(failures), NUM2DBL(open_for));
    return Qnil;
}

void lf_init_circuit(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "Circuit", rb_cObject);
    int i;

    rb_define_alloc_func(c, lf_circuit_alloc);
    rb_define_method(c, "admit", lf_circuit_m_admit, 2);
    rb_define_method(c, "peek", lf_circuit_m_peek, 1);
    rb_define_method(c, "record", lf_circuit_m_record, -1);
    rb_define_method(c, "probes_failed", lf_circuit_m_probes_failed, 0);
    rb_define_singleton_method(c, "interval", lf_circuit_s_interval, 3);
    /* the schedule's share of the incident's age, for RedisStateStore's Lua (lf_circuit.h owns it) */
    rb_define_const(c, "RECOVERY_SHARE", DBL2NUM(LF_CIRCUIT_RECOVERY_SHARE));
    rb_define_method(c, "last_change", lf_circuit_m_last_change, 0);
    rb_define_method(c, "state", lf_circuit_m_state, 0);
    rb_define_method(c, "failures", lf_circuit_m_failures, 0);
    rb_define_method(c, "opened_at", lf_circuit_m_opened_at, 0);
    rb_define_method(c, "cooldown_until", lf_circuit_m_cooldown_until, 0);
    rb_define_method(c, "release_probe", lf_circuit_m_release_probe, 0);
    rb_define_method(c, "renew_probe", lf_circuit_m_renew_probe, 2);
    rb_define_method(c, "adopt", lf_circuit_m_adopt, 3);
    for (i = 0; i < 3; i++) lf_sym_states[i] = ID2SYM(rb_intern(lf_circuit_state_name((lf_circuit_state)i)));
    lf_sym_reasons[0] = Qnil;
    for (i = 1; i < 6; i++) lf_sym_reasons[i] = ID2SYM(rb_intern(lf_circuit_reason_name((lf_circuit_reason)i)));
}
