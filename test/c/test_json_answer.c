/* lf_json_answer: one JSON object, a tolerated code fence, and the schema's
 * check (test_json_schema.c has the checker's own cases). */
#include "lf_json_answer.h"
#include "lf_test.h"

#include <string.h>

#include "lf_banned.h"

static const char *SCHEMA =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"city\",\"days\",\"unit\",\"note\"],"
    "\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"days\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
    "\"unit\":{\"type\":\"string\",\"enum\":[\"C\",\"F\"]},"
    "\"note\":{\"type\":[\"string\",\"null\"]},"
    "\"stops\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/stop\"}}},"
    "\"$defs\":{\"stop\":{\"type\":\"object\",\"required\":[\"name\"],\"additionalProperties\":false,"
    "\"properties\":{\"name\":{\"type\":\"string\"},\"my key\":{\"type\":\"number\"}}}}}";

/* rc of checking text against SCHEMA (or no schema); why and json kept. */
static lf_buf why, json;

static int check(const char *text, int with_schema)
{
    lf_buf err;
    json_object *schema = NULL;
    int rc;

    lf_buf_init(&err);
    if (with_schema) {
        /* Not a strict schema ("stops" is optional): the answer check
         * follows any schema it is given. */
        schema = json_tokener_parse(SCHEMA);
        LF_CHECK(schema != NULL);
    }
    rc = lf_json_answer_check(text, strlen(text), schema, &json, &why);
    json_object_put(schema);
    lf_buf_free(&err);
    return rc;
}

static void test_one_object(void)
{
    LF_CHECK_INT(check("{\"a\": 1}", 0), LF_JSON_ANSWER_OK);
    LF_CHECK_STR(lf_buf_cstr(&json), "{\"a\": 1}");
    LF_CHECK_INT(check("  \n{\"z\": [1, {\"b\": null}], \"a\": \"x/y\"}\n ", 0), LF_JSON_ANSWER_OK);
    LF_CHECK_STR(lf_buf_cstr(&json), "{\"z\": [1, {\"b\": null}], \"a\": \"x/y\"}");
    LF_CHECK_INT(check("Sure! {\"a\": 1}", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer is not JSON");
    LF_CHECK_INT(check("{\"a\": 1} {\"b\": 2}", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_INT(check("{\"a\": 1", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_INT(check("[1, 2]", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer is a JSON array, not an object");
    LF_CHECK_INT(check("\"text\"", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer is a JSON string, not an object");
    LF_CHECK_INT(check("42", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_INT(check("  ", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer is empty, not a JSON object");
    LF_CHECK_INT(json.len, 0);
}

/* What json-c's strict mode still lets through is refused; the object comes
 * out as written, so a big integer is not clamped to 64 bits. */
static void test_standard_json(void)
{
    static const char *const refused[] = {
        "{\"a\": NaN}", "{\"a\": Infinity}", "{\"a\": -Infinity}", "{'a': 1}", "{\"a\": \"x\ty\"}",
        "{\"a\": \"x\ny\"}", "{\"a\": 5.}", "{\"a\": \"\\ud800\"}", "{\"a\": \"\\udc00\"}",
        "{\"a\": \"\\ud800\\u0041\"}", "{\"a\": 1e}", "{\"a\": -}", "{\"a\": nulls}",
    };
    size_t i;

    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        LF_CHECK_INT(check(refused[i], 0), LF_JSON_ANSWER_BAD);
        LF_CHECK(json.len == 0);
    }
    LF_CHECK_INT(check("{\"a\": NaN}", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK(strstr(lf_buf_cstr(&why), "not standard JSON (RFC 8259) at byte 6") != NULL);
    LF_CHECK_INT(check("{\"n\": 123456789012345678901234567890, \"e\": -0.5E+3, \"s\": \"\\ud83d\\ude00 \\/\"}", 0),
                 LF_JSON_ANSWER_OK);
    LF_CHECK_STR(lf_buf_cstr(&json), "{\"n\": 123456789012345678901234567890, \"e\": -0.5E+3, \"s\": \"\\ud83d\\ude00 \\/\"}");
}

static void test_code_fence(void)
{
    LF_CHECK_INT(check("```json\n{\"a\": 1}\n```", 0), LF_JSON_ANSWER_OK);
    LF_CHECK_STR(lf_buf_cstr(&json), "{\"a\": 1}");
    LF_CHECK_INT(check("\n```\n{\"a\": 2}```\n", 0), LF_JSON_ANSWER_OK);
    LF_CHECK_STR(lf_buf_cstr(&json), "{\"a\": 2}");
    /* Prose around a fence, two fences, or a fence on one line are not one object. */
    LF_CHECK_INT(check("Here:\n```json\n{\"a\": 1}\n```", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_INT(check("```json\n{\"a\": 1}\n```\n```json\n{\"b\": 1}\n```", 0), LF_JSON_ANSWER_BAD);
    LF_CHECK_INT(check("```{\"a\": 1}```", 0), LF_JSON_ANSWER_BAD);
}

static void test_schema(void)
{
    LF_CHECK_INT(check("{\"city\":\"Paris\",\"days\":[1,2.0],\"unit\":\"C\",\"note\":null}", 1), LF_JSON_ANSWER_OK);
    LF_CHECK_INT(check("{\"city\":\"Paris\",\"days\":[],\"unit\":\"F\",\"note\":\"n\","
                       "\"stops\":[{\"name\":\"Lyon\",\"my key\":1.5}]}", 1), LF_JSON_ANSWER_OK);

    LF_CHECK_INT(check("{\"days\":[1],\"unit\":\"C\",\"note\":null}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $.city: missing required property");
    LF_CHECK_INT(check("{\"city\":7,\"days\":[1],\"unit\":\"C\",\"note\":null}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $.city: expected string, got integer 7");
    LF_CHECK_INT(check("{\"city\":\"P\",\"days\":[1,2.5],\"unit\":\"C\",\"note\":null}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $.days[1]: expected integer, got number 2.5");
    LF_CHECK_INT(check("{\"city\":\"P\",\"days\":[],\"unit\":\"K\",\"note\":null}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $.unit: \"K\" is not one of \"C\", \"F\"");
    LF_CHECK_INT(check("{\"city\":\"P\",\"days\":[],\"unit\":\"C\",\"note\":3}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $.note: expected string or null, got integer 3");
    LF_CHECK_INT(check("{\"city\":\"P\",\"days\":[],\"unit\":\"C\",\"note\":null,\"extra\":1}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why),
                 "the answer does not match the schema: $.extra: unknown property (known: city, days, unit, note, stops)");
    LF_CHECK_INT(check("{\"city\":\"P\",\"days\":[],\"unit\":\"C\",\"note\":null,"
                       "\"stops\":[{\"name\":\"a\"},{\"name\":\"b\",\"my key\":\"x\"}]}", 1), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why),
                 "the answer does not match the schema: $.stops[1][\"my key\"]: expected number, got string \"x\"");
}

static void test_any_of_and_bad_schemas(void)
{
    const char *s = "{\"anyOf\":[{\"type\":\"object\",\"required\":[\"a\"]},{\"type\":\"object\",\"required\":[\"b\"]}]}";
    const char *loop = "{\"$ref\":\"#\"}";
    json_object *schema;
    lf_buf err;

    lf_buf_init(&err);
    /* Roots no provider takes (lf_json_schema_parse refuses them): the
     * answer check still follows them. */
    LF_CHECK(lf_json_schema_parse(s, strlen(s), &err) == NULL);
    schema = json_tokener_parse(s);
    LF_CHECK_INT(lf_json_answer_check("{\"b\":1}", 7, schema, &json, &why), LF_JSON_ANSWER_OK);
    LF_CHECK_INT(lf_json_answer_check("{\"c\":1}", 7, schema, &json, &why), LF_JSON_ANSWER_BAD);
    LF_CHECK_STR(lf_buf_cstr(&why), "the answer does not match the schema: $: matches none of the 2 allowed shapes "
                                    "(anyOf); closest: $.a: missing required property");
    json_object_put(schema);

    /* A $ref loop ends at the depth limit instead of the stack's. */
    schema = json_tokener_parse(loop);
    LF_CHECK_INT(lf_json_answer_check("{}", 2, schema, &json, &why), LF_JSON_ANSWER_BAD);
    json_object_put(schema);

    LF_CHECK(lf_json_schema_parse("[1]", 3, &err) == NULL);
    LF_CHECK_STR(lf_buf_cstr(&err), "the schema is not a JSON object");
    LF_CHECK(lf_json_schema_parse("{", 1, &err) == NULL);
    lf_buf_free(&err);
}

/* What OpenAI's strict mode and Anthropic refuse, and no more. */
static void test_strict_schemas(void)
{
    static const char *const refused[][2] = {
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "schema $: the root must be one object schema"},
        {"{\"type\":\"string\"}", "schema $: the root must be one object schema"},
        {"{}", "schema $: the root must be one object schema"},
        {"{\"type\":\"object\",\"additionalProperties\":false,\"anyOf\":[]}", "schema $: the root must be"},
        {"{\"type\":\"object\",\"properties\":{}}", "schema $: strict mode needs \"additionalProperties\": false"},
        {"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[],\"properties\":{\"a\":{}}}",
         "schema $: strict mode needs every property in \"required\" (missing a;"},
        {"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"a\"],\"properties\":{\"a\":"
         "{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\"}]}}}}",
         "schema $.properties.a.items.anyOf[1]: strict mode needs"},
        {"{\"type\":\"object\",\"additionalProperties\":false,\"$defs\":{\"x\":{\"properties\":{}}}}",
         "schema $.$defs.x: strict mode needs"},
    };
    /* Keyword names used as property and $defs names are names. */
    static const char *ok = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"properties\",\"type\"],"
                            "\"properties\":{\"properties\":{\"$ref\":\"#/$defs/properties\"},\"type\":{\"type\":\"string\"}},"
                            "\"$defs\":{\"properties\":{\"type\":\"object\",\"additionalProperties\":false,"
                            "\"required\":[\"required\"],\"properties\":{\"required\":{\"type\":[\"string\",\"null\"]}}}}}";
    json_object *schema;
    lf_buf err;
    size_t i;

    lf_buf_init(&err);
    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        LF_CHECK(lf_json_schema_parse(refused[i][0], strlen(refused[i][0]), &err) == NULL);
        LF_CHECK(strncmp(lf_buf_cstr(&err), refused[i][1], strlen(refused[i][1])) == 0);
    }
    schema = lf_json_schema_parse(ok, strlen(ok), &err);
    LF_CHECK(schema != NULL);
    LF_CHECK_INT(lf_json_answer_check("{\"properties\":{\"required\":null},\"type\":\"t\"}", 43, schema, &json, &why),
                 LF_JSON_ANSWER_OK);
    json_object_put(schema);
    lf_buf_free(&err);
}

int main(void)
{
    lf_buf_init(&why);
    lf_buf_init(&json);
    LF_RUN(test_one_object);
    LF_RUN(test_standard_json);
    LF_RUN(test_code_fence);
    LF_RUN(test_schema);
    LF_RUN(test_any_of_and_bad_schemas);
    LF_RUN(test_strict_schemas);
    lf_buf_free(&why);
    lf_buf_free(&json);
    return lf_test_summary("json_answer");
}
