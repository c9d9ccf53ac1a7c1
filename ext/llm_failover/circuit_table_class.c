/* LlmFailover::CircuitTable: the core's in-process store of circuits
 * (core/lf_circuits.h), MemoryStateStore's. Handed to Engine#run as the
 * request's circuits, the attempt loop admits, records and probes in it
 * without any Ruby; these methods are the state-store protocol over the
 * same table for everyone else (RedisStateStore's fallback, LlmFailover.health,
 * Error#retry_at). Its rules and its locking are the core's. */
#include "lf_engine.h"

#include "lf_clock.h"

#include "lf_banned.h"

static VALUE lf_cCircuitTable;
static VALUE lf_sym_states[3], lf_sym_reasons[6];

/* #record's keywords, in this order: the required ones, then the optional. */
enum { LF_KW_THRESHOLD, LF_KW_COOLDOWN, LF_KW_SUCCESS, LF_KW_HOLD, LF_N_REQUIRED_KW,
       LF_KW_ERROR_CLASS = LF_N_REQUIRED_KW, LF_KW_TOKEN, LF_KW_FIRST_PROBE, LF_KW_HEADROOM, LF_N_KW };
static ID lf_record_kw[LF_N_KW];

static void lf_table_free(void *p)
{
    lf_circuits_free(p); /* no Ruby */
}

static size_t lf_table_memsize(const void *p)
{
    return sizeof(void *) + 64 * lf_circuits_size(p);
}

/* No Ruby objects inside: nothing to mark or to move. */
static const rb_data_type_t lf_table_type = {
    .wrap_struct_name = "LlmFailover::CircuitTable",
    .function = {
        .dmark = NULL,
        .dfree = lf_table_free,
        .dsize = lf_table_memsize,
        .dcompact = NULL,
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE lf_table_alloc(VALUE klass)
{
    lf_circuits *t = lf_circuits_new();
    if (!t) rb_raise(rb_eNoMemError, "llm_failover: cannot allocate a circuit table");
    return TypedData_Wrap_Struct(klass, &lf_table_type, t);
}

int lf_is_circuit_table(VALUE v)
{
    return rb_typeddata_is_kind_of(v, &lf_table_type);
}

lf_circuits *lf_circuit_table_get(VALUE v)
{
    return rb_check_typeddata(v, &lf_table_type);
}

static const char *lf_key(VALUE key)
{
    StringValue(key);
    return StringValueCStr(key);
}

static const char *lf_token(VALUE token)
{
    return NIL_P(token) ? NULL : lf_key(token);
}

static VALUE lf_change_value(const lf_circuit_change *chg)
{
    if (chg->reason == LF_REASON_NONE) return Qnil;
    return rb_ary_new_from_args(3, lf_sym_states[chg->from], lf_sym_states[chg->to], lf_sym_reasons[chg->reason]);
}

/* [route, failures, change, open_for, headroom]: one key's answer. */
static VALUE lf_entry_value(const lf_health *h, const lf_circuit_change *chg)
{
    return rb_ary_new_from_args(5, INT2FIX(h->route), INT2FIX(h->failures), chg ? lf_change_value(chg) : Qnil,
                                h->open_for > 0 ? DBL2NUM(h->open_for) : Qnil, lf_headroom_value(&h->headroom, 0));
}

/* @overload admit(keys, probe_ttl, token = nil)
 *   @return [Array<Array>] per key: route (Circuit::SEND, SKIP, or PROBE: +token+'s
 *     caller holds the probe for probe_ttl s), failures, change, seconds a skip holds
 *     (nil: none), what the host last said of its headroom (an Engine::Headroom, as
 *     of now, or nil) */
static VALUE lf_table_admit(int argc, VALUE *argv, VALUE self)
{
    lf_circuits *t = lf_circuit_table_get(self);
    VALUE keys, ttl, token, out;
    double now = lf_now_wall();
    long i;

    rb_scan_args(argc, argv, "21", &keys, &ttl, &token);
    Check_Type(keys, T_ARRAY);
    out = rb_ary_new_capa(RARRAY_LEN(keys));
    for (i = 0; i < RARRAY_LEN(keys); i++) {
        lf_circuit_change chg;
        lf_health h;

        lf_circuits_admit(t, lf_key(RARRAY_AREF(keys, i)), lf_token(token), now, NUM2DBL(ttl), &h, &chg);
        rb_ary_push(out, lf_entry_value(&h, &chg));
    }
    return out;
}

/* @overload peek(keys, token = nil)
 *   @return [Array<Array>] what #admit would answer, changing nothing (PROBE: the
 *     probe is free, or +token+ holds it; change nil) */
static VALUE lf_table_peek(int argc, VALUE *argv, VALUE self)
{
    lf_circuits *t = lf_circuit_table_get(self);
    VALUE keys, token, out;
    double now = lf_now_wall();
    long i;

    rb_scan_args(argc, argv, "11", &keys, &token);
    Check_Type(keys, T_ARRAY);
    out = rb_ary_new_capa(RARRAY_LEN(keys));
    for (i = 0; i < RARRAY_LEN(keys); i++) {
        lf_health h;

        lf_circuits_peek(t, lf_key(RARRAY_AREF(keys, i)), lf_token(token), now, &h);
        rb_ary_push(out, lf_entry_value(&h, NULL));
    }
    return out;
}

/* @overload record(key, threshold:, cooldown:, success:, hold:, error_class: nil, token: nil, first_probe: nil,
 *                  headroom: nil)
 *   headroom: an Engine::Headroom, what a pool host's answer said (kept)
 *   @return [Array(Boolean, Array)] whether the circuit is open afterwards, the change (nil: none) */
static VALUE lf_table_record(int argc, VALUE *argv, VALUE self)
{
    lf_circuits *t = lf_circuit_table_get(self);
    VALUE key, opts, v[LF_N_KW];
    lf_circuit_rules rules;
    lf_circuits_outcome out;
    lf_circuit_change chg;
    lf_headroom headroom;
    int open, i;

    rb_scan_args(argc, argv, "1:", &key, &opts);
    for (i = 0; i < LF_N_KW; i++) v[i] = Qundef;
    rb_get_kwargs(opts, lf_record_kw, LF_N_REQUIRED_KW, LF_N_KW - LF_N_REQUIRED_KW, v);
    for (i = LF_N_REQUIRED_KW; i < LF_N_KW; i++)
        if (v[i] == Qundef) v[i] = Qnil;
    rules.threshold = NUM2INT(v[LF_KW_THRESHOLD]);
    rules.cooldown = NUM2DBL(v[LF_KW_COOLDOWN]);
    rules.first = NIL_P(v[LF_KW_FIRST_PROBE]) ? rules.cooldown : NUM2DBL(v[LF_KW_FIRST_PROBE]);
    out = (lf_circuits_outcome){
        .now = lf_now_wall(),
        .success = RTEST(v[LF_KW_SUCCESS]),
        .kind = RTEST(v[LF_KW_SUCCESS]) || NIL_P(v[LF_KW_ERROR_CLASS]) ? LF_E_OTHER
                                                                      : (lf_kind)lf_error_kind_of(v[LF_KW_ERROR_CLASS]),
        .hold = NUM2DBL(v[LF_KW_HOLD]),
        .token = lf_token(v[LF_KW_TOKEN]),
    };
    headroom = lf_headroom_from(v[LF_KW_HEADROOM]);
    out.headroom = &headroom;
    open = lf_circuits_record(t, lf_key(key), &rules, &out, &chg);
    return rb_ary_new_from_args(2, open ? Qtrue : Qfalse, lf_change_value(&chg));
}

/* Frees the probe of +key+ when +token+ holds it. */
static VALUE lf_table_release(VALUE self, VALUE key, VALUE token)
{
    lf_circuits_release(lf_circuit_table_get(self), lf_key(key), lf_token(token));
    return Qnil;
}

/* A shared store's view of +key+: open for +open_for+ more seconds when positive, else closed. */
static VALUE lf_table_adopt(VALUE self, VALUE key, VALUE failures, VALUE open_for)
{
    lf_circuits_adopt(lf_circuit_table_get(self), lf_key(key), lf_now_wall(), NUM2INT(failures), NUM2DBL(open_for));
    return Qnil;
}

/* What a host said of its headroom (an Engine::Headroom, or nil: nothing), as of now. */
static VALUE lf_table_note_headroom(VALUE self, VALUE key, VALUE headroom)
{
    lf_headroom h = lf_headroom_from(headroom);

    lf_circuits_note_headroom(lf_circuit_table_get(self), lf_key(key), lf_now_wall(), &h);
    return Qnil;
}

/* Whether a success on +key+ has anything to reset. */
static VALUE lf_table_unsettled(VALUE self, VALUE key)
{
    return lf_circuits_unsettled(lf_circuit_table_get(self), lf_key(key)) ? Qtrue : Qfalse;
}

static VALUE lf_epoch_or_nil(double t)
{
    return t > 0 ? DBL2NUM(t) : Qnil;
}

/* @return [Array<Array>] each known target: [key, state, failures, probes_failed,
 *   opened_at (epoch s or nil), cooldown_until (epoch s, nil when closed), last
 *   error class or nil, headroom (an Engine::Headroom as of now, or nil)]; an open
 *   circuit whose cooldown is over reads half-open, as the next call will find it
 *   (lf_circuit_peek) */
static VALUE lf_table_rows(VALUE self)
{
    lf_circuits_view *v;
    double now = lf_now_wall();
    long n = lf_circuits_snapshot(lf_circuit_table_get(self), now, &v), i;
    VALUE rows;

    if (n < 0) rb_raise(rb_eNoMemError, "llm_failover: out of memory reading the circuits");
    rows = rb_ary_new_capa(n);
    for (i = 0; i < n; i++) {
        const lf_circuit *c = &v[i].circuit;
        VALUE row[8];
        row[0] = rb_utf8_str_new_cstr(v[i].key);
        row[1] = lf_sym_states[c->state == LF_CIRCUIT_OPEN && lf_circuit_peek(c, now) != LF_ROUTE_SKIP
                                   ? LF_CIRCUIT_HALF_OPEN : c->state];
        row[2] = INT2NUM(c->failures);
        row[3] = INT2NUM(c->probes_failed);
        row[4] = lf_epoch_or_nil(c->opened_at);
        row[5] = c->state == LF_CIRCUIT_CLOSED ? Qnil : lf_epoch_or_nil(c->until);
        row[6] = v[i].last_kind == LF_OK ? Qnil : lf_error_class_for(v[i].last_kind);
        row[7] = lf_headroom_value(&v[i].headroom, 0);
        rb_ary_push(rows, rb_ary_new_from_values(8, row));
    }
    lf_circuits_views_free(v, n);
    return rows;
}

/* @return [Array<Float, nil>] per key, when its circuit lets a request through again
 *   (epoch seconds, maybe past: half-open) while it is not closed; nil when closed */
static VALUE lf_table_reopens_at(VALUE self, VALUE keys)
{
    lf_circuits *t = lf_circuit_table_get(self);
    VALUE out;
    long i;

    Check_Type(keys, T_ARRAY);
    out = rb_ary_new_capa(RARRAY_LEN(keys));
    for (i = 0; i < RARRAY_LEN(keys); i++) {
        lf_circuits_view v;
        int known = lf_circuits_get(t, lf_key(RARRAY_AREF(keys, i)), lf_now_wall(), &v);
        rb_ary_push(out, known && v.circuit.state != LF_CIRCUIT_CLOSED ? lf_epoch_or_nil(v.circuit.until) : Qnil);
    }
    return out;
}

static VALUE lf_table_clear(VALUE self)
{
    lf_circuits_clear(lf_circuit_table_get(self));
    return Qnil;
}

static VALUE lf_table_size(VALUE self)
{
    return SIZET2NUM(lf_circuits_size(lf_circuit_table_get(self)));
}

void lf_init_circuit_table(VALUE mod)
{
    int i;

    lf_cCircuitTable = rb_define_class_under(mod, "CircuitTable", rb_cObject);
    rb_global_variable(&lf_cCircuitTable);
    rb_define_alloc_func(lf_cCircuitTable, lf_table_alloc);
    rb_define_method(lf_cCircuitTable, "admit", lf_table_admit, -1);
    rb_define_method(lf_cCircuitTable, "peek", lf_table_peek, -1);
    rb_define_method(lf_cCircuitTable, "record", lf_table_record, -1);
    rb_define_method(lf_cCircuitTable, "release", lf_table_release, 2);
    rb_define_method(lf_cCircuitTable, "adopt", lf_table_adopt, 3);
    rb_define_method(lf_cCircuitTable, "unsettled?", lf_table_unsettled, 1);
    rb_define_method(lf_cCircuitTable, "note_headroom", lf_table_note_headroom, 2);
    rb_define_method(lf_cCircuitTable, "rows", lf_table_rows, 0);
    rb_define_method(lf_cCircuitTable, "reopens_at", lf_table_reopens_at, 1);
    rb_define_method(lf_cCircuitTable, "clear", lf_table_clear, 0);
    rb_define_method(lf_cCircuitTable, "size", lf_table_size, 0);
    for (i = 0; i < 3; i++) lf_sym_states[i] = ID2SYM(rb_intern(lf_circuit_state_name((lf_circuit_state)i)));
    lf_sym_reasons[0] = Qnil;
    for (i = 1; i < 6; i++) lf_sym_reasons[i] = ID2SYM(rb_intern(lf_circuit_reason_name((lf_circuit_reason)i)));
    lf_record_kw[LF_KW_THRESHOLD] = rb_intern("threshold");
    lf_record_kw[LF_KW_COOLDOWN] = rb_intern("cooldown");
    lf_record_kw[LF_KW_SUCCESS] = rb_intern("success");
    lf_record_kw[LF_KW_HOLD] = rb_intern("hold");
    lf_record_kw[LF_KW_ERROR_CLASS] = rb_intern("error_class");
    lf_record_kw[LF_KW_TOKEN] = rb_intern("token");
    lf_record_kw[LF_KW_FIRST_PROBE] = rb_intern("first_probe");
    lf_record_kw[LF_KW_HEADROOM] = rb_intern("headroom");
}
