/* LlmFailover::Quota and the C half of LlmFailover::ModelPicker.
 *
 * A Quota wraps the core's lf_quota, so its answers are the attempt loop's
 * answers, and keeps the limit and used values exactly as given (an Integer
 * stays an Integer) for #limit, #used and #inspect. Keyword arguments and
 * validation live in lib/llm_failover/quota/quota.rb and model_picker.rb. */
#include "lf_ruby.h"

#include "lf_quota.h"

#include "lf_banned.h"

typedef struct lf_quota_wrapper {
    lf_quota q;
    VALUE limit; /* nil or the Numeric given */
    VALUE used;
} lf_quota_wrapper;

static ID lf_id_primary, lf_id_backup, lf_id_refuse;

static void lf_quota_mark(void *p)
{
    lf_quota_wrapper *w = p;
#ifdef HAVE_RB_GC_MARK_MOVABLE
    rb_gc_mark_movable(w->limit);
    rb_gc_mark_movable(w->used);
#else
    rb_gc_mark(w->limit);
    rb_gc_mark(w->used);
#endif
}

#ifdef HAVE_RB_GC_MARK_MOVABLE
static void lf_quota_compact(void *p)
{
    lf_quota_wrapper *w = p;
    w->limit = rb_gc_location(w->limit);
    w->used = rb_gc_location(w->used);
}
#endif

static size_t lf_quota_memsize(const void *p)
{
    return sizeof(lf_quota_wrapper);
}

static const rb_data_type_t lf_quota_type = {
    .wrap_struct_name = "LlmFailover::Quota",
    .function = {
        .dmark = lf_quota_mark,
        .dfree = RUBY_TYPED_DEFAULT_FREE, /* nothing but the struct: never calls Ruby */
        .dsize = lf_quota_memsize,
#ifdef HAVE_RB_GC_MARK_MOVABLE
        .dcompact = lf_quota_compact,
#endif
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

static VALUE lf_quota_alloc(VALUE klass)
{
    lf_quota_wrapper *w;
    VALUE obj = TypedData_Make_Struct(klass, lf_quota_wrapper, &lf_quota_type, w);
    /* Until initialize runs: no limit, nothing used. */
    w->q.limit = 0;
    w->q.used = 0;
    w->limit = Qnil;
    w->used = INT2FIX(0);
    return obj;
}

static lf_quota_wrapper *lf_quota_get(VALUE self)
{
    lf_quota_wrapper *w;
    TypedData_Get_Struct(self, lf_quota_wrapper, &lf_quota_type, w);
    return w;
}

/* @api private: initialize's second half, after quota.rb has validated the values. */
static VALUE lf_quota_rb_set(VALUE self, VALUE limit, VALUE used)
{
    lf_quota_wrapper *w = lf_quota_get(self);
    double l = NIL_P(limit) ? 0.0 : NUM2DBL(limit); /* may raise: convert before storing */
    double u = NUM2DBL(used);

    rb_check_frozen(self);
    w->q.limit = l;
    w->q.used = u;
    RB_OBJ_WRITE(self, &w->limit, limit);
    RB_OBJ_WRITE(self, &w->used, used);
    return self;
}

static VALUE lf_quota_rb_init_copy(VALUE self, VALUE orig)
{
    lf_quota_wrapper *w, *o;

    if (self == orig) return self;
    rb_obj_init_copy(self, orig);
    w = lf_quota_get(self);
    o = lf_quota_get(orig);
    w->q = o->q;
    RB_OBJ_WRITE(self, &w->limit, o->limit);
    RB_OBJ_WRITE(self, &w->used, o->used);
    return self;
}

static VALUE lf_quota_rb_limit(VALUE self)
{
    return lf_quota_get(self)->limit;
}

static VALUE lf_quota_rb_used(VALUE self)
{
    return lf_quota_get(self)->used;
}

static VALUE lf_quota_rb_unlimited_p(VALUE self)
{
    return lf_quota_unlimited(&lf_quota_get(self)->q) ? Qtrue : Qfalse;
}

static VALUE lf_quota_rb_exceeded_p(VALUE self)
{
    return lf_quota_exceeded(&lf_quota_get(self)->q) ? Qtrue : Qfalse;
}

static VALUE lf_quota_rb_remaining(VALUE self)
{
    return DBL2NUM(lf_quota_remaining(&lf_quota_get(self)->q));
}

static VALUE lf_quota_rb_percent_used(VALUE self)
{
    return DBL2NUM(lf_quota_percent_used(&lf_quota_get(self)->q));
}

/* @api private: ModelPicker#pick's decision.
 * @param quota [Quota, nil] nil is unlimited
 * @return [Symbol] :primary, :backup or :refuse */
static VALUE lf_picker_rb_choose(VALUE self, VALUE quota, VALUE has_backup, VALUE enforce)
{
    const lf_quota *q = NIL_P(quota) ? NULL : &lf_quota_get(quota)->q;

    switch (lf_pick(q, RTEST(has_backup), RTEST(enforce))) {
    case LF_PICK_BACKUP: return ID2SYM(lf_id_backup);
    case LF_PICK_REFUSE: return ID2SYM(lf_id_refuse);
    case LF_PICK_PRIMARY: break;
    }
    return ID2SYM(lf_id_primary);
}

void lf_init_quota(VALUE mod)
{
    VALUE cQuota = rb_define_class_under(mod, "Quota", rb_cObject);
    VALUE cPicker = rb_define_class_under(mod, "ModelPicker", rb_cObject);

    lf_id_primary = rb_intern("primary");
    lf_id_backup = rb_intern("backup");
    lf_id_refuse = rb_intern("refuse");

    rb_define_alloc_func(cQuota, lf_quota_alloc);
    rb_define_private_method(cQuota, "__set", lf_quota_rb_set, 2);
    rb_define_method(cQuota, "initialize_copy", lf_quota_rb_init_copy, 1);
    rb_define_method(cQuota, "limit", lf_quota_rb_limit, 0);
    rb_define_method(cQuota, "used", lf_quota_rb_used, 0);
    rb_define_method(cQuota, "unlimited?", lf_quota_rb_unlimited_p, 0);
    rb_define_method(cQuota, "exceeded?", lf_quota_rb_exceeded_p, 0);
    rb_define_method(cQuota, "remaining", lf_quota_rb_remaining, 0);
    rb_define_method(cQuota, "percent_used", lf_quota_rb_percent_used, 0);

    rb_define_private_method(cPicker, "__choose", lf_picker_rb_choose, 3);
}
