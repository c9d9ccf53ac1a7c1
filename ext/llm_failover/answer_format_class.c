/* LlmFailover::AnswerFormat's check of a stored answer: the same check the
 * core runs on every answer in JSON mode or with a schema (lf_json_answer.h),
 * for answers that come back without a call (an idempotent repeat). */
#include "lf_ruby.h"

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_json_answer.h"
#include "lf_wire.h"

#include "lf_banned.h"

/* Everything the check allocates, freed by lf_answer_check_cleanup even when
 * building the Ruby String raises. */
typedef struct lf_answer_check {
    const char *text;
    size_t text_len;
    const char *schema_text;   /* NULL in JSON mode */
    size_t schema_len;
    json_object *schema;
    lf_buf json_out;
    lf_buf why;
} lf_answer_check;

static VALUE lf_answer_check_body(VALUE arg)
{
    lf_answer_check *c = (lf_answer_check *)arg;
    int rc;

    if (c->schema_text) {
        c->schema = lf_json_schema_parse(c->schema_text, c->schema_len, &c->why);
        if (!c->schema) rb_raise(rb_eArgError, "%s", lf_buf_cstr(&c->why));
    }
    rc = lf_json_answer_check(c->text, c->text_len, c->schema, &c->json_out, &c->why);
    if (rc < 0) rb_raise(rb_eNoMemError, "llm_failover: out of memory checking an answer");
    if (rc != LF_JSON_ANSWER_OK) return Qnil;
    return rb_utf8_str_new(c->json_out.ptr, (long)c->json_out.len);
}

static VALUE lf_answer_check_cleanup(VALUE arg)
{
    lf_answer_check *c = (lf_answer_check *)arg;
    if (c->schema) json_object_put(c->schema);
    lf_buf_free(&c->json_out);
    lf_buf_free(&c->why);
    return Qnil;
}

/* @param text [String] an answer's text
 * @param schema_json [String, nil] the schema as JSON text, nil for JSON mode
 * @return [String, nil] the object as strict JSON, nil when the text is not
 *   one object or breaks the schema */
static VALUE lf_answer_format_s_check(VALUE self, VALUE text, VALUE schema_json)
{
    lf_answer_check c = {0};
    VALUE out;

    StringValue(text);
    c.text = RSTRING_PTR(text);
    c.text_len = (size_t)RSTRING_LEN(text);
    if (!NIL_P(schema_json)) {
        StringValue(schema_json);
        c.schema_text = RSTRING_PTR(schema_json);
        c.schema_len = (size_t)RSTRING_LEN(schema_json);
    }
    lf_buf_init(&c.json_out);
    lf_buf_init(&c.why);
    out = rb_ensure(lf_answer_check_body, (VALUE)&c, lf_answer_check_cleanup, (VALUE)&c);
    RB_GC_GUARD(text);
    RB_GC_GUARD(schema_json);
    return out;
}

static VALUE lf_schema_check_body(VALUE arg)
{
    lf_answer_check *c = (lf_answer_check *)arg;

    c->schema = lf_json_schema_parse(c->schema_text, c->schema_len, &c->why);
    if (!c->schema) rb_raise(rb_eArgError, "%s", lf_buf_cstr(&c->why));
    return Qnil;
}

/* @param schema_json [String] a schema as JSON text
 * @raise [ArgumentError] a schema the core refuses to send (lf_json_schema_parse
 *   says why, with its path) */
static VALUE lf_answer_format_s_schema_check(VALUE self, VALUE schema_json)
{
    lf_answer_check c = {0};

    StringValue(schema_json);
    c.schema_text = RSTRING_PTR(schema_json);
    c.schema_len = (size_t)RSTRING_LEN(schema_json);
    lf_buf_init(&c.json_out);
    lf_buf_init(&c.why);
    rb_ensure(lf_schema_check_body, (VALUE)&c, lf_answer_check_cleanup, (VALUE)&c);
    RB_GC_GUARD(schema_json);
    return Qnil;
}

/* @param name [String] a schema's name
 * @return [Boolean] whether both providers accept it (the wire layer's rule) */
static VALUE lf_answer_format_s_name_ok(VALUE self, VALUE name)
{
    StringValue(name);
    return lf_wire_name_ok(RSTRING_PTR(name), (size_t)RSTRING_LEN(name)) ? Qtrue : Qfalse;
}

/* @param api [Symbol] a target's protocol (:openai or :anthropic)
 * @return [String, nil] why one request of it cannot carry a schema beside
 *   tools, nil when it can (the wire layer's rule and words,
 *   lf_wire_schema_with_tools_refusal) */
static VALUE lf_answer_format_s_schema_with_tools_refusal(VALUE self, VALUE api)
{
    VALUE name = rb_sym2str(rb_to_symbol(api));
    const char *why;
    lf_api which;

    if (lf_wire_api_named(RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &which) != 0)
        rb_raise(rb_eArgError, "llm_failover: unknown api %" PRIsVALUE, name);
    why = lf_wire_schema_with_tools_refusal(which);
    return why ? rb_utf8_str_new_cstr(why) : Qnil;
}

void lf_init_answer_format(VALUE mod)
{
    VALUE c = rb_define_class_under(mod, "AnswerFormat", rb_cObject);
    rb_define_private_method(rb_singleton_class(c), "__check", lf_answer_format_s_check, 2);
    rb_define_private_method(rb_singleton_class(c), "__schema_check", lf_answer_format_s_schema_check, 1);
    rb_define_private_method(rb_singleton_class(c), "__name_ok?", lf_answer_format_s_name_ok, 1);
    rb_define_private_method(rb_singleton_class(c), "__schema_with_tools_refusal", lf_answer_format_s_schema_with_tools_refusal,
                             1);
}
