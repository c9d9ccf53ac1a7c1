/* LlmFailover::MemoryIndex: the core's vector index (core/lf_vindex.c). The
 * keywords, defaults and documentation are lib/llm_failover/cache/memory_index.rb's;
 * here are the positional methods it calls, which convert and raise. */
#include "lf_ruby.h"

#include <ruby/thread.h>

#include "lf_vindex.h"

#include "lf_banned.h"

/* A lookup or add over more code bytes than this runs without the GVL: the
 * scan then takes long enough (tens of microseconds) for another thread's
 * work to be worth the switch. */
#define LF_MI_NOGVL_BYTES ((size_t)1 << 20)

typedef struct lf_mi_wrapper {
    lf_vindex *ix;
} lf_mi_wrapper;

static void lf_mi_free(void *p)
{
    lf_mi_wrapper *w = p;
    lf_vindex_free(w->ix);
    xfree(w);
}

static size_t lf_mi_memsize(const void *p)
{
    const lf_mi_wrapper *w = p;
    lf_vindex_stats st = {0};

    if (w->ix) lf_vindex_stats_get(w->ix, &st);
    return sizeof(*w) + st.allocated;
}

/* No Ruby objects inside: nothing to mark or to move. */
static const rb_data_type_t lf_mi_type = {
    .wrap_struct_name = "LlmFailover::MemoryIndex",
    .function = {
        .dmark = NULL,
        .dfree = lf_mi_free,
        .dsize = lf_mi_memsize,
        .dcompact = NULL,
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED,
};

static VALUE lf_mi_alloc(VALUE klass)
{
    lf_mi_wrapper *w;
    return TypedData_Make_Struct(klass, lf_mi_wrapper, &lf_mi_type, w);
}

static lf_vindex *lf_mi_get(VALUE self)
{
    lf_mi_wrapper *w;
    TypedData_Get_Struct(self, lf_mi_wrapper, &lf_mi_type, w);
    if (!w->ix) rb_raise(rb_eRuntimeError, "MemoryIndex not initialized");
    return w->ix;
}

static void lf_mi_raise(int status)
{
    if (status == LF_VINDEX_ENOMEM) rb_memerror();
    rb_raise(rb_eArgError, "%s", lf_vindex_strerror(status));
}

/* @overload setup(max_entries, max_bytes) 0 for no bound */
static VALUE lf_mi_setup(VALUE self, VALUE max_entries, VALUE max_bytes)
{
    lf_mi_wrapper *w;

    TypedData_Get_Struct(self, lf_mi_wrapper, &lf_mi_type, w);
    if (w->ix) rb_raise(rb_eRuntimeError, "MemoryIndex already initialized");
    if (!(w->ix = lf_vindex_new(NUM2SIZET(max_entries), NUM2SIZET(max_bytes)))) rb_memerror();
    return self;
}

/* The vector's length, checked (raises ArgumentError). */
static size_t lf_mi_dim(VALUE vector)
{
    long n;

    Check_Type(vector, T_ARRAY);
    n = RARRAY_LEN(vector);
    if (n == 0 || n > LF_VINDEX_MAX_DIM) lf_mi_raise(LF_VINDEX_EVECTOR);
    return (size_t)n;
}

/* The vector's components as floats into f (dim of them). Raises TypeError for
 * an element that is not a number. */
static void lf_mi_floats(VALUE vector, float *f, size_t dim)
{
    for (size_t i = 0; i < dim; i++) {
        VALUE x = RARRAY_AREF(vector, (long)i);

        if (!RB_FLOAT_TYPE_P(x) && !RB_INTEGER_TYPE_P(x))
            rb_raise(rb_eTypeError, "vector components must be numbers, got %s", rb_obj_classname(x));
        f[i] = (float)NUM2DBL(x);
    }
}

/* What crosses rb_thread_call_without_gvl: C copies only. */
typedef struct lf_mi_call {
    lf_vindex *ix;
    const char *part;
    size_t part_len;
    const float *vec;
    size_t dim;
    const char *value;
    size_t value_len;
    double threshold;
    lf_vindex_hit hit;
    int status;
} lf_mi_call;

static void *lf_mi_add_nogvl(void *p)
{
    lf_mi_call *c = p;
    c->status = lf_vindex_add(c->ix, c->part, c->part_len, c->vec, c->dim, c->value, c->value_len);
    return NULL;
}

static void *lf_mi_nearest_nogvl(void *p)
{
    lf_mi_call *c = p;
    c->status = lf_vindex_nearest(c->ix, c->part, c->part_len, c->vec, c->dim, c->threshold, &c->hit);
    return NULL;
}

/* Runs fn, without the GVL when the index is large enough for it to pay. */
static void lf_mi_run(lf_mi_call *c, void *(*fn)(void *))
{
    if (lf_vindex_size(c->ix) * c->dim >= LF_MI_NOGVL_BYTES) rb_thread_call_without_gvl(fn, c, NULL, NULL);
    else fn(c);
}

/* @overload add_entry(partition, vector, value) see MemoryIndex#add */
static VALUE lf_mi_add(VALUE self, VALUE partition, VALUE vector, VALUE value)
{
    lf_mi_call c = { .ix = lf_mi_get(self) };
    VALUE buf = 0, part_copy, value_copy;
    float *vec;

    StringValue(partition);
    StringValue(value);
    c.dim = lf_mi_dim(vector);
    /* A heap buffer (ALLOCV frees it if a conversion below raises). */
    vec = ALLOCV_N(float, buf, c.dim);
    lf_mi_floats(vector, vec, c.dim);
    /* Private copies: with the GVL released another thread may change the
     * caller's Strings; these are ours, and pinned by the machine stack. */
    part_copy = rb_str_new(RSTRING_PTR(partition), RSTRING_LEN(partition));
    value_copy = rb_str_new(RSTRING_PTR(value), RSTRING_LEN(value));
    c.part = RSTRING_PTR(part_copy);
    c.part_len = (size_t)RSTRING_LEN(part_copy);
    c.value = RSTRING_PTR(value_copy);
    c.value_len = (size_t)RSTRING_LEN(value_copy);
    c.vec = vec;
    lf_mi_run(&c, lf_mi_add_nogvl);
    RB_GC_GUARD(part_copy);
    RB_GC_GUARD(value_copy);
    ALLOCV_END(buf);
    if (c.status != LF_VINDEX_OK) lf_mi_raise(c.status);
    return Qnil;
}

/* @overload nearest_entry(partition, vector, threshold) see MemoryIndex#nearest */
static VALUE lf_mi_nearest(VALUE self, VALUE partition, VALUE vector, VALUE threshold)
{
    lf_mi_call c = { .ix = lf_mi_get(self) };
    VALUE buf = 0, part_copy, out;
    float *vec;

    StringValue(partition);
    if (!RB_FLOAT_TYPE_P(threshold) && !RB_INTEGER_TYPE_P(threshold))
        rb_raise(rb_eTypeError, "threshold must be a number, got %s", rb_obj_classname(threshold));
    c.threshold = NUM2DBL(threshold);
    c.dim = lf_mi_dim(vector);
    /* A heap buffer (ALLOCV frees it if a conversion below raises). */
    vec = ALLOCV_N(float, buf, c.dim);
    lf_mi_floats(vector, vec, c.dim);
    part_copy = rb_str_new(RSTRING_PTR(partition), RSTRING_LEN(partition));
    c.part = RSTRING_PTR(part_copy);
    c.part_len = (size_t)RSTRING_LEN(part_copy);
    c.vec = vec;
    lf_mi_run(&c, lf_mi_nearest_nogvl);
    RB_GC_GUARD(part_copy);
    ALLOCV_END(buf);
    if (c.status < 0) lf_mi_raise(c.status);
    if (c.status == 0) return Qnil;
    out = rb_utf8_str_new(c.hit.value, (long)c.hit.value_len);
    free(c.hit.value);
    return rb_ary_new_from_args(2, out, DBL2NUM(c.hit.similarity));
}

/* @return [nil] every entry of every partition dropped */
static VALUE lf_mi_clear(VALUE self)
{
    lf_vindex_clear(lf_mi_get(self));
    return Qnil;
}

/* @return [Integer] entries in all partitions */
static VALUE lf_mi_size(VALUE self)
{
    return SIZET2NUM(lf_vindex_size(lf_mi_get(self)));
}

/* @return [Hash] :entries, :bytes (what max_bytes bounds), :partitions, :allocated */
static VALUE lf_mi_stats(VALUE self)
{
    lf_vindex_stats st;
    VALUE h = rb_hash_new();

    lf_vindex_stats_get(lf_mi_get(self), &st);
    rb_hash_aset(h, ID2SYM(rb_intern("entries")), SIZET2NUM(st.entries));
    rb_hash_aset(h, ID2SYM(rb_intern("bytes")), SIZET2NUM(st.bytes));
    rb_hash_aset(h, ID2SYM(rb_intern("partitions")), SIZET2NUM(st.partitions));
    rb_hash_aset(h, ID2SYM(rb_intern("allocated")), SIZET2NUM(st.allocated));
    return h;
}

/* @return [Integer] what one entry counts against max_bytes */
static VALUE lf_mi_s_entry_bytes(VALUE klass, VALUE dim, VALUE value_len)
{
    return SIZET2NUM(lf_vindex_entry_bytes(NUM2SIZET(dim), NUM2SIZET(value_len)));
}

/* @overload normalise(vector) see MemoryIndex.normalise */
static VALUE lf_mi_s_normalise(VALUE klass, VALUE vector)
{
    size_t dim = lf_mi_dim(vector);
    VALUE buf = 0, out;
    float *vec = ALLOCV_N(float, buf, dim);
    int status;

    lf_mi_floats(vector, vec, dim);
    out = rb_str_new(NULL, (long)(dim * sizeof(float)));
    status = lf_vindex_normalise(vec, dim, (float *)RSTRING_PTR(out));
    ALLOCV_END(buf);
    if (status != LF_VINDEX_OK) lf_mi_raise(status);
    return out;
}

/* @return [String] the scan kernel the CPU runs: "avx512bw", "avx2", "sse2" or "generic" */
static VALUE lf_mi_s_kernel(VALUE klass)
{
    return rb_str_new_cstr(lf_vindex_kernel());
}

void lf_init_memory_index(VALUE mod)
{
    VALUE k = rb_define_class_under(mod, "MemoryIndex", rb_cObject);

    rb_define_alloc_func(k, lf_mi_alloc);
    rb_define_private_method(k, "setup", lf_mi_setup, 2);
    rb_define_private_method(k, "add_entry", lf_mi_add, 3);
    rb_define_private_method(k, "nearest_entry", lf_mi_nearest, 3);
    rb_define_method(k, "clear", lf_mi_clear, 0);
    rb_define_method(k, "size", lf_mi_size, 0);
    rb_define_method(k, "stats", lf_mi_stats, 0);
    rb_define_singleton_method(k, "entry_bytes", lf_mi_s_entry_bytes, 2);
    rb_define_singleton_method(k, "kernel", lf_mi_s_kernel, 0);
    rb_define_singleton_method(k, "normalise", lf_mi_s_normalise, 1);
    rb_define_const(k, "MAX_DIMENSIONS", INT2FIX(LF_VINDEX_MAX_DIM));
}
