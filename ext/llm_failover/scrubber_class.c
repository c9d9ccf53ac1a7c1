/* LlmFailover::Scrubber::Prescan: the core's pre-scan (core/lf_scrub.c) for
 * lib/llm_failover/scrubber.rb, which runs the built-in rules' exact patterns
 * only where it says one may match, and its splice, which writes the scrubbed
 * text. The kinds are constants here, so that the rules name the core's
 * numbers. */
#include "lf_ruby.h"

#include <ruby/encoding.h>

#include "lf_scrub.h"

#include "lf_banned.h"

/* Appends [kind, from, to]. rb_ary_push can only raise NoMemoryError; the scan
 * it would unwind through holds no memory or lock. */
static int lf_prescan_push(void *ud, int kind, size_t from, size_t to)
{
    VALUE out = (VALUE)ud;

    rb_ary_push(out, INT2FIX(kind));
    rb_ary_push(out, SIZET2NUM(from));
    rb_ary_push(out, SIZET2NUM(to));
    return 0;
}

/* Prescan.candidates(text, kinds) -> [kind, from, to, kind, from, to, ...],
 * byte offsets into text; kinds has bit 1 << kind set for each kind wanted. */
static VALUE lf_prescan_candidates(VALUE self, VALUE text, VALUE kinds)
{
    VALUE out = rb_ary_new();

    StringValue(text);
    lf_scrub_scan(RSTRING_PTR(text), (size_t)RSTRING_LEN(text), NUM2UINT(kinds), lf_prescan_push, (void *)out);
    RB_GC_GUARD(text);
    return out;
}

/* Prescan.splice(text, cuts) -> a new String in text's encoding: text with
 * each [from, to, with] of cuts (a flat Array, byte offsets in order, not
 * overlapping, with a String) replaced. */
static VALUE lf_prescan_splice(VALUE self, VALUE text, VALUE cuts)
{
    VALUE tmp = 0, out;
    lf_scrub_cut *c;
    long n;
    size_t total;

    StringValue(text);
    Check_Type(cuts, T_ARRAY);
    if (RARRAY_LEN(cuts) % 3) rb_raise(rb_eArgError, "cuts are [from, to, with, ...]");
    n = RARRAY_LEN(cuts) / 3;
    c = ALLOCV_N(lf_scrub_cut, tmp, n);
    for (long i = 0; i < n; i++) {
        VALUE with = RARRAY_AREF(cuts, 3 * i + 2);

        Check_Type(with, T_STRING);
        c[i].from = NUM2SIZET(RARRAY_AREF(cuts, 3 * i));
        c[i].to = NUM2SIZET(RARRAY_AREF(cuts, 3 * i + 1));
        c[i].with = NULL;
        c[i].with_len = (size_t)RSTRING_LEN(with);
    }
    total = lf_scrub_spliced_len((size_t)RSTRING_LEN(text), c, (size_t)n);
    if (total == SIZE_MAX || total > LONG_MAX) {
        ALLOCV_END(tmp);
        rb_raise(rb_eArgError, "cuts out of order or past the text");
    }
    out = rb_str_new(NULL, (long)total);
    /* No allocation from here on: an embedded String may move in a GC. */
    for (long i = 0; i < n; i++) c[i].with = RSTRING_PTR(RARRAY_AREF(cuts, 3 * i + 2));
    lf_scrub_splice(RSTRING_PTR(text), (size_t)RSTRING_LEN(text), c, (size_t)n, RSTRING_PTR(out));
    ALLOCV_END(tmp);
    rb_enc_copy(out, text);
    RB_GC_GUARD(text);
    RB_GC_GUARD(cuts);
    return out;
}

void lf_init_scrubber(VALUE mod)
{
    VALUE scrubber = rb_define_class_under(mod, "Scrubber", rb_cObject);
    VALUE prescan = rb_define_module_under(scrubber, "Prescan");

    rb_define_module_function(prescan, "candidates", lf_prescan_candidates, 2);
    rb_define_module_function(prescan, "splice", lf_prescan_splice, 2);
    rb_define_const(prescan, "SK", INT2FIX(LF_SCRUB_SK));
    rb_define_const(prescan, "GSK", INT2FIX(LF_SCRUB_GSK));
    rb_define_const(prescan, "AWS", INT2FIX(LF_SCRUB_AWS));
    rb_define_const(prescan, "GHP", INT2FIX(LF_SCRUB_GHP));
    rb_define_const(prescan, "XOX", INT2FIX(LF_SCRUB_XOX));
    rb_define_const(prescan, "BEARER", INT2FIX(LF_SCRUB_BEARER));
    rb_define_const(prescan, "SSN", INT2FIX(LF_SCRUB_SSN));
    rb_define_const(prescan, "CARD", INT2FIX(LF_SCRUB_CARD));
    rb_define_const(prescan, "IBAN", INT2FIX(LF_SCRUB_IBAN));
    rb_define_const(prescan, "PHONE", INT2FIX(LF_SCRUB_PHONE));
    rb_define_const(prescan, "EMAIL", INT2FIX(LF_SCRUB_EMAIL));
}
