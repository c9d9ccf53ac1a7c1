/* LlmFailover::JsonSchema: the core's JSON Schema checker
 * (lf_json_schema.h), the one for answers and tool arguments, asked by
 * Tools::Runner of every call's arguments. */
#include "lf_ruby.h"

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_json_read.h"
#include "lf_json_schema.h"

#include "lf_banned.h"

/* What the check holds, freed by lf_schema_problems_cleanup even when
 * building the Ruby String raises. */
typedef struct lf_schema_problems {
    VALUE schema_json;
    VALUE json;
    json_object *schema;
    json_object *value;
    lf_buf why;
} lf_schema_problems;

static VALUE lf_schema_problems_body(VALUE arg)
{
    lf_schema_problems *c = (lf_schema_problems *)arg;
    int n;

    c->schema = lf_json_parse(RSTRING_PTR(c->schema_json), (size_t)RSTRING_LEN(c->schema_json));
    if (!json_object_is_type(c->schema, json_type_object))
        rb_raise(rb_eArgError, "llm_failover: the schema is not a JSON object");
    if (lf_json_nonstandard_at(RSTRING_PTR(c->json), (size_t)RSTRING_LEN(c->json), 0))
        return rb_utf8_str_new_cstr("$: not standard JSON (RFC 8259)");
    /* NULL is JSON's null here (json-c's), as the checker reads it. */
    c->value = lf_json_parse(RSTRING_PTR(c->json), (size_t)RSTRING_LEN(c->json));
    n = lf_json_schema_check(c->schema, c->value, &c->why);
    if (n < 0) rb_raise(rb_eNoMemError, "llm_failover: out of memory checking a value against a schema");
    return n ? rb_utf8_str_new(c->why.ptr, (long)c->why.len) : Qnil;
}

static VALUE lf_schema_problems_cleanup(VALUE arg)
{
    lf_schema_problems *c = (lf_schema_problems *)arg;

    json_object_put(c->schema);
    json_object_put(c->value);
    lf_buf_free(&c->why);
    return Qnil;
}

/* @param schema_json [String] a JSON Schema as JSON text
 * @param json [String] a value as JSON text
 * @return [String, nil] the problems the value has, each "path: what" (the
 *   first LF_JSON_SCHEMA_MAX_PROBLEMS), joined by "; "; nil when it fits */
static VALUE lf_json_schema_s_problems(VALUE self, VALUE schema_json, VALUE json)
{
    lf_schema_problems c = {0};
    VALUE out;

    c.schema_json = StringValue(schema_json);
    c.json = StringValue(json);
    lf_buf_init(&c.why);
    out = rb_ensure(lf_schema_problems_body, (VALUE)&c, lf_schema_problems_cleanup, (VALUE)&c);
    RB_GC_GUARD(schema_json);
    RB_GC_GUARD(json);
    return out;
}

void lf_init_json_schema(VALUE mod)
{
    VALUE m = rb_define_module_under(mod, "JsonSchema");
    rb_define_module_function(m, "problems", lf_json_schema_s_problems, 2);
}
