/* LlmFailover::Attachment's view of the wire layer's attachment rules: the
 * types an attachment may have, and what a target takes (lf_wire.h), asked
 * of each file before anything is stored (Attachment::Selection). */
#include "lf_ruby.h"

#include <string.h>

#include "lf_buf.h"
#include "lf_wire.h"

#include "lf_banned.h"

/* The target's part of lf_request_params from its api and its provider's
 * attachments Hash ({images:, documents:, urls:, max_bytes:, max_count:}). */
static lf_request_params lf_attachment_target(VALUE api, VALUE caps)
{
    lf_request_params p = {0};
    VALUE name = rb_sym2str(rb_to_symbol(api));

    if (lf_wire_api_named(RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &p.api) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown api %" PRIsVALUE, name);
    Check_Type(caps, T_HASH);
    p.no_images = rb_hash_aref(caps, ID2SYM(rb_intern("images"))) == Qfalse;
    p.no_documents = rb_hash_aref(caps, ID2SYM(rb_intern("documents"))) == Qfalse;
    p.no_urls = rb_hash_aref(caps, ID2SYM(rb_intern("urls"))) == Qfalse;
    p.max_attachment_bytes = NUM2LONG(rb_hash_aref(caps, ID2SYM(rb_intern("max_bytes"))));
    p.max_attachments = NUM2LONG(rb_hash_aref(caps, ID2SYM(rb_intern("max_count"))));
    return p;
}

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

/* @param api [Symbol] the target's protocol
 * @param caps [Hash] its provider's attachments
 * @param who [String] how the message names the target
 * @param fields [Array] [mime type, name, base64 or nil, url or nil]
 * @return [Array(Symbol, String), nil] why it refuses the file (:kind, :url,
 *   :size) and the message, nil when it takes it */
static VALUE lf_attachment_s_refusal(VALUE self, VALUE api, VALUE caps, VALUE who, VALUE fields)
{
    lf_request_params p = lf_attachment_target(api, caps);
    const char *name = StringValueCStr(who);
    lf_attachment a = {0};
    VALUE base64;
    lf_buf why;

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
static VALUE lf_attachment_s_count_refusal(VALUE self, VALUE api, VALUE caps, VALUE who, VALUE n)
{
    lf_request_params p = lf_attachment_target(api, caps);
    const char *name = StringValueCStr(who);
    size_t count = NUM2SIZET(n);
    lf_buf why;

    lf_buf_init(&why);
    return lf_attachment_refusal_value(lf_wire_attachment_count_refusal(&p, count, name, &why), &why);
}

void lf_init_attachment(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "Attachment", rb_cObject);
    rb_define_private_method(rb_singleton_class(c), "__kinds", lf_attachment_s_kinds, 0);
    rb_define_private_method(rb_singleton_class(c), "__refusal", lf_attachment_s_refusal, 4);
    rb_define_private_method(rb_singleton_class(c), "__count_refusal", lf_attachment_s_count_refusal, 4);
}
