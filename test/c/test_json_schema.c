/* lf_json_schema_check: the one JSON Schema checker, for answers and tool
 * arguments alike: every problem with its path, a value a model can act on,
 * the anyOf branch that came closest. */
#include "lf_json_schema.h"
#include "lf_test.h"

#include <string.h>

#include "lf_banned.h"

static lf_buf why;

/* The number of problems of value against schema (both JSON text); why kept. */
static int problems(const char *schema, const char *value)
{
    json_object *s = json_tokener_parse(schema), *v = json_tokener_parse(value);
    int n;

    LF_CHECK(s != NULL);
    n = lf_json_schema_check(s, v, &why);
    json_object_put(s);
    json_object_put(v);
    return n;
}

static void test_types(void)
{
    LF_CHECK_INT(problems("{\"type\":\"integer\"}", "2.0"), 0);
    LF_CHECK_INT(problems("{\"type\":\"integer\"}", "2.5"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: expected integer, got number 2.5");
    LF_CHECK_INT(problems("{\"type\":\"number\"}", "2"), 0);
    LF_CHECK_INT(problems("{\"type\":\"boolean\"}", "\"true\""), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: expected boolean, got string \"true\"");
    LF_CHECK_INT(problems("{\"type\":\"null\"}", "null"), 0);
    LF_CHECK_INT(problems("{\"type\":[\"string\",\"null\"]}", "null"), 0);
    LF_CHECK_INT(problems("{\"type\":[\"string\",\"null\"]}", "1"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: expected string or null, got integer 1");
    /* A string is shown by its first 40 characters, whole characters. */
    LF_CHECK_INT(problems("{\"type\":\"integer\"}",
                          "\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
                          "1234567890123456789012345678901234567890\""), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: expected integer, got string \"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9" "123456789012345678901234567890\"");
    /* A type the subset does not know is the provider's to judge. */
    LF_CHECK_INT(problems("{\"type\":\"date\"}", "1"), 0);
}

static void test_objects(void)
{
    const char *rows = "{\"type\":\"object\",\"required\":[\"rows\"],\"properties\":{\"rows\":{\"type\":\"array\","
                       "\"items\":{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{\"id\":{\"type\":\"integer\"}}}}}}";
    const char *extra = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":{\"type\":\"integer\"}}";

    LF_CHECK_INT(problems(extra, "{\"a\":1,\"b\":\"x\"}"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$.b: expected integer, got string \"x\"");
    LF_CHECK_INT(problems("{\"type\":\"object\"}", "{\"anything\":[1]}"), 0);
    LF_CHECK_INT(problems("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", "{\"a\":1}"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$.a: unknown property (none are allowed)");
    LF_CHECK_INT(problems("{\"properties\":{\"x\":{},\"y\":{}},\"additionalProperties\":false}", "{\"z\":1}"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$.z: unknown property (known: x, y)");
    /* Every problem, each with its path. */
    LF_CHECK_INT(problems(rows, "{\"rows\":[{\"id\":1},{},{\"id\":\"2\"}]}"), 2);
    LF_CHECK_STR(lf_buf_cstr(&why),
                 "$.rows[1].id: missing required property; $.rows[2].id: expected integer, got string \"2\"");
}

static void test_enum_const_any_of(void)
{
    const char *status = "{\"anyOf\":[{\"type\":\"string\",\"enum\":[\"pending\",\"done\"]},{\"type\":\"null\"}]}";

    LF_CHECK_INT(problems(status, "\"done\""), 0);
    LF_CHECK_INT(problems(status, "null"), 0);
    LF_CHECK_INT(problems(status, "\"later\""), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: matches none of the 2 allowed shapes (anyOf); closest: $: \"later\" is not "
                                    "one of \"pending\", \"done\"");
    /* 1 and 1.0 are one number. */
    LF_CHECK_INT(problems("{\"enum\":[1,2]}", "1.0"), 0);
    LF_CHECK_INT(problems("{\"const\":\"a\"}", "\"b\""), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: \"b\" is not \"a\" (const)");
}

static void test_limits(void)
{
    char value[512] = "{";
    size_t i, n = 1;
    int len;

    /* Keywords outside the subset are not checked. */
    LF_CHECK_INT(problems("{\"type\":\"string\",\"format\":\"date\",\"minLength\":99}", "\"x\""), 0);
    /* Twenty problems: ten are said, all are counted. */
    for (i = 1; i <= 20; i++) {
        len = snprintf(value + n, sizeof value - n, "%s\"k%zu\":%zu", i > 1 ? "," : "", i, i);
        n += (size_t)len;
    }
    value[n++] = '}';
    value[n] = '\0';
    LF_CHECK_INT(problems("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", value), 20);
    for (i = 0, n = 0; i < why.len; i++) n += why.ptr[i] == ';';
    LF_CHECK_INT((long)n, LF_JSON_SCHEMA_MAX_PROBLEMS - 1);
    /* A $ref loop ends at the depth limit instead of the stack's. */
    LF_CHECK_INT(problems("{\"$ref\":\"#\"}", "{}"), 1);
    LF_CHECK_STR(lf_buf_cstr(&why), "$: the schema nests deeper than 64");
}

int main(void)
{
    lf_buf_init(&why);
    LF_RUN(test_types);
    LF_RUN(test_objects);
    LF_RUN(test_enum_const_any_of);
    LF_RUN(test_limits);
    lf_buf_free(&why);
    return lf_test_summary("json_schema");
}
