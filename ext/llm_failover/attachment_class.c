/* LlmFailover::Attachment's view of the wire layer's attachment rules: the
 * types an attachment may have, and what a target takes (lf_wire.h), asked
 * of each file before anything is stored (Attachment::Selection). */
#include "lf_engine.h"

#include <string.h>

#include "lf_buf.h"
#include "lf_wire.h"

#include "lf_banned.h"

static const char *lf_attachment_cstr(VALUE s)
{
    return NIL_P(s) ? NULL : StringValueCStr(s);
}

/* A refusal as Ruby sees it: nil, or [why, message]. why is freed before
 * anything that may raise (its message is at most 320 bytes). */
static VALUE lf_attachment_refusal_value(lf_attach_refusal r, lf_buf *why)
{
    static const char *const names[] = { NULL, "kind", "url", "size", "count" };
    char msg[320];
    size_t n = why->len < sizeof msg ? why->len : sizeof msg;

    if (n) memcpy(msg, why->ptr, n);
    lf_buf_free(why);
    if (r == LF_ATTACH_TAKEN) return Qnil;
    return rb_assoc_new(ID2SYM(rb_intern(names[r])), rb_utf8_str_new(msg, (long)n));
}

/* @return [Hash{String => Symbol}] each type an attachment may have, and its
 *   kind (:image or :document) */
static VALUE lf_attachment_s_kinds(VALUE self)
{
    VALUE kinds = rb_hash_new();
    const char *type;
    size_t i;

    for (i = 0; (type = lf_wire_attachment_type(i)); i++)
        rb_hash_aset(kinds, rb_str_freeze(rb_utf8_str_new_cstr(type)),
                     ID2SYM(rb_intern(lf_wire_attachment_kind(type) == LF_ATTACH_IMAGE ? "image" : "document")));
    return rb_hash_freeze(kinds);
}

/* @param target [Engine::Target] its protocol, host and what it takes
 * @param who [String] how the message names the target
 * @param fields [Array] [mime type, name, base64 or nil, url or nil]
 * @return [Array(Symbol, String), nil] why it refuses the file (:kind, :url,
 *   :size) and the message, nil when it takes it */
static VALUE lf_attachment_s_refusal(VALUE self, VALUE target, VALUE who, VALUE fields)
{
    lf_request_params p = {0};
    const char *name = StringValueCStr(who);
    lf_attachment a = {0};
    VALUE base64;
    lf_buf why;

    lf_engine_target_traits(target, &p);
    Check_Type(fields, T_ARRAY);
    if (RARRAY_LEN(fields) != 4) rb_raise(rb_eArgError, "llm_failover: an attachment is [type, name, base64, url]");
    base64 = rb_ary_entry(fields, 2);
    a.mime_type = lf_attachment_cstr(rb_ary_entry(fields, 0));
    a.filename = lf_attachment_cstr(rb_ary_entry(fields, 1));
    a.url = lf_attachment_cstr(rb_ary_entry(fields, 3));
    if (!NIL_P(base64)) {
        StringValue(base64);
        a.base64 = RSTRING_PTR(base64);
        a.base64_len = (size_t)RSTRING_LEN(base64);
    }
    lf_buf_init(&why);
    return lf_attachment_refusal_value(lf_wire_attachment_refusal(&p, &a, name, &why), &why);
}

/* @param n [Integer] files with one message
 * @return [Array(Symbol, String), nil] [:count, message] when the target
 *   takes fewer with one message, else nil */
static VALUE lf_attachment_s_count_refusal(VALUE self, VALUE target, VALUE who, VALUE n)
{
    lf_request_params p = {0};
    const char *name = StringValueCStr(who);
    size_t count = NUM2SIZET(n);
    lf_buf why;

    lf_engine_target_traits(target, &p);
    lf_buf_init(&why);
    return lf_attachment_refusal_value(lf_wire_attachment_count_refusal(&p, count, name, &why), &why);
}

void lf_init_attachment(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "Attachment", rb_cObject);
    rb_define_private_method(rb_singleton_class(c), "__kinds", lf_attachment_s_kinds, 0);
    rb_define_private_method(rb_singleton_class(c), "__refusal", lf_attachment_s_refusal, 3);
    rb_define_private_method(rb_singleton_class(c), "__count_refusal", lf_attachment_s_count_refusal, 3);
}
