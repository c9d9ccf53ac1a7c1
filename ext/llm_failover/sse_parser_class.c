/* LlmFailover::SSEParser: the core's incremental Server-Sent Events parser,
 * exposed for tests and for users who parse streams themselves. */
#include "lf_ruby.h"

#include "lf_sse.h"

#include "lf_banned.h"

typedef struct lf_sse_wrapper {
    lf_sse_parser parser;
} lf_sse_wrapper;

static void lf_sse_wrapper_free(void *p)
{
    lf_sse_wrapper *w = p;
    lf_sse_free(&w->parser);
    xfree(w);
}

static size_t lf_sse_wrapper_memsize(const void *p)
{
    const lf_sse_wrapper *w = p;
    return sizeof(*w) + w->parser.line.cap + w->parser.data.cap + w->parser.event.cap;
}

/* No Ruby objects inside: nothing to mark or to move. */
static const rb_data_type_t lf_sse_type = {
    .wrap_struct_name = "LlmFailover::SSEParser",
    .function = {
        .dmark = NULL,
        .dfree = lf_sse_wrapper_free,
        .dsize = lf_sse_wrapper_memsize,
        .dcompact = NULL,
    },
    .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE lf_sse_alloc(VALUE klass)
{
    lf_sse_wrapper *w;
    VALUE obj = TypedData_Make_Struct(klass, lf_sse_wrapper, &lf_sse_type, w);
    lf_sse_init(&w->parser);
    return obj;
}

static int lf_sse_collect(void *ud, const lf_sse_event *ev)
{
    /* Called outside any protect: rb_ary_push and string creation can only
     * raise NoMemoryError, after which the parser state is still valid. */
    VALUE out = (VALUE)ud;
    rb_ary_push(out, rb_assoc_new(rb_utf8_str_new(ev->event, (long)ev->event_len),
                                  rb_utf8_str_new(ev->data, (long)ev->data_len)));
    return 0;
}

static VALUE lf_sse_check(int rc, VALUE out)
{
    if (rc == LF_SSE_ERR_LINE_TOO_LONG) rb_raise(rb_eArgError, "SSE line longer than %u bytes", LF_SSE_MAX_LINE);
    if (rc == LF_SSE_ERR_NOMEM) rb_raise(rb_eNoMemError, "SSE parser out of memory");
    return out;
}

/* @return [Array<Array(String, String)>] the [event, data] pairs completed by these bytes */
static VALUE lf_sse_rb_feed(VALUE self, VALUE bytes)
{
    lf_sse_wrapper *w;
    VALUE out = rb_ary_new();
    int rc;
    TypedData_Get_Struct(self, lf_sse_wrapper, &lf_sse_type, w);
    StringValue(bytes);
    rc = lf_sse_feed(&w->parser, RSTRING_PTR(bytes), (size_t)RSTRING_LEN(bytes), lf_sse_collect, (void *)out);
    RB_GC_GUARD(bytes);
    return lf_sse_check(rc, out);
}

/* @return [Array<Array(String, String)>] a last event left without a blank line */
static VALUE lf_sse_rb_finish(VALUE self)
{
    lf_sse_wrapper *w;
    VALUE out = rb_ary_new();
    TypedData_Get_Struct(self, lf_sse_wrapper, &lf_sse_type, w);
    return lf_sse_check(lf_sse_finish(&w->parser, lf_sse_collect, (void *)out), out);
}

void lf_init_sse_parser(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "SSEParser", rb_cObject);
    rb_define_alloc_func(c, lf_sse_alloc);
    rb_define_method(c, "feed", lf_sse_rb_feed, 1);
    rb_define_method(c, "finish", lf_sse_rb_finish, 0);
}
