/* LlmFailover::Host's view of the wire layer's routes: what a host serves
 * and where Vertex AI is, asked when a provider is configured
 * (lf_wire_route.c owns the rules). */
#include "lf_ruby.h"

#include "lf_buf.h"
#include "lf_wire.h"

#include "lf_banned.h"

static VALUE lf_host_sym(VALUE v, const char *what)
{
    if (!SYMBOL_P(v)) rb_raise(rb_eArgError, "llm_failover: %s must be a Symbol", what);
    return rb_sym2str(v);
}

/* @param layout [Symbol] :plain, :azure, :azure_deployment, :azure_foundry, :vertex
 * @param api [Symbol] a protocol (:openai, :anthropic, :responses, :gemini)
 * @param embeddings [Boolean] an embeddings request rather than a chat
 * @return [String, nil] why the host does not serve it, nil when it does */
static VALUE lf_host_s_refusal(VALUE self, VALUE layout, VALUE api, VALUE embeddings)
{
    VALUE lname = lf_host_sym(layout, "layout"), aname = lf_host_sym(api, "api");
    lf_layout l;
    lf_api a;
    lf_buf why;
    VALUE out = Qnil;

    if (lf_wire_layout_named(RSTRING_PTR(lname), (size_t)RSTRING_LEN(lname), &l) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown layout :%" PRIsVALUE, lname);
    if (lf_wire_api_named(RSTRING_PTR(aname), (size_t)RSTRING_LEN(aname), &a) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown api :%" PRIsVALUE, aname);
    if (RTEST(embeddings) && lf_wire_embed_max_inputs(a) == 0)
        return rb_sprintf("the %" PRIsVALUE " protocol has no embeddings", aname);
    lf_buf_init(&why);
    if (lf_wire_layout_serves(l, a, RTEST(embeddings) ? LF_REQUEST_EMBEDDINGS : LF_REQUEST_CHAT, &why) != 0)
        out = rb_utf8_str_new(why.ptr ? why.ptr : "", (long)why.len);
    lf_buf_free(&why);
    return out;
}

/* @param location [String] a Vertex AI location ("us-east5", "global")
 * @return [String, nil] its host's base URL, nil for a location that is not one */
static VALUE lf_host_s_vertex_base_url(VALUE self, VALUE location)
{
    lf_buf url;
    VALUE out = Qnil;

    lf_buf_init(&url);
    if (lf_wire_vertex_base_url(StringValueCStr(location), &url) == 0)
        out = rb_utf8_str_new(url.ptr, (long)url.len);
    lf_buf_free(&url);
    return out;
}

/* @param model [String] a model on Vertex AI
 * @return [Symbol] the protocol its publisher serves it in: :anthropic (Claude) or :gemini */
static VALUE lf_host_s_vertex_api(VALUE self, VALUE model)
{
    return ID2SYM(rb_intern(lf_wire_api_name(lf_wire_vertex_api(StringValueCStr(model)))));
}

void lf_init_host(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "Host", rb_cObject);
    rb_define_private_method(rb_singleton_class(c), "__refusal", lf_host_s_refusal, 3);
    rb_define_private_method(rb_singleton_class(c), "__vertex_base_url", lf_host_s_vertex_base_url, 1);
    rb_define_private_method(rb_singleton_class(c), "__vertex_api", lf_host_s_vertex_api, 1);
}
