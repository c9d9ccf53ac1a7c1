/* The JSON reader against whichever json-c is installed: standard text in,
 * exact strings and numbers out; everything outside RFC 8259 refused. json-c
 * 0.16 and 0.18 differ in what their strict mode takes, so these strings are
 * the contract, not json-c's flags. */
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_json_read.h"
#include "lf_test.h"

/* The text of member "v" of the object text s, or "(refused)". */
static const char *value_of(const char *s, size_t n)
{
    static lf_buf out;
    json_object *o = lf_json_parse(s, n);

    if (!o) return "(refused)";
    lf_buf_clear(&out);
    if (lf_json_value_text(lf_json_get(o, "v"), &out) != 0) {
        json_object_put(o);
        return "(out of memory)";
    }
    json_object_put(o);
    return lf_buf_cstr(&out);
}

#define VALUE(literal) value_of(literal, sizeof(literal) - 1)

static void test_text_comes_out_exact(void)
{
    LF_CHECK_STR(VALUE("{\"v\": \"caf\xc3\xa9\"}"), "caf\xc3\xa9");
    LF_CHECK_STR(VALUE("{\"v\": \"21 \xc2\xb0" "C\"}"), "21 \xc2\xb0" "C");
    LF_CHECK_STR(VALUE("{\"v\": \"\xf0\x9f\x98\x8a ok\"}"), "\xf0\x9f\x98\x8a ok");
    LF_CHECK_STR(VALUE("{\"v\": \"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\"}"), "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
    /* Escapes: a surrogate pair is one character, \u00e9 is é. */
    LF_CHECK_STR(VALUE("{\"v\": \"\\ud83d\\ude0a\"}"), "\xf0\x9f\x98\x8a");
    /* A lone surrogate escape is in the grammar: U+FFFD out; a strict reader's
     * check (the answer's) refuses it. */
    LF_CHECK_STR(VALUE("{\"v\": \"a\\ud800b\\udc00\"}"), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    LF_CHECK(lf_json_nonstandard_at("\"\\ud800\"", 8, 1) == 1);
    LF_CHECK(lf_json_nonstandard_at("\"\\ud83d\\ude0a\"", 14, 1) == 0);
    LF_CHECK_STR(VALUE("{\"v\": \"caf\\u00e9 \\\"q\\\" \\\\ \\/ \\n\"}"), "caf\xc3\xa9 \"q\" \\ / \n");
    /* A NUL escape is data, not the end of the string. */
    LF_CHECK_INT(strlen(VALUE("{\"v\": \"a\\u0000b\"}")), 1);
    /* A byte that is not UTF-8 is kept as U+FFFD, not refused. */
    LF_CHECK_STR(VALUE("{\"v\": \"a\xff" "b\"}"), "a\xef\xbf\xbd" "b");
    /* Keys with raw UTF-8 are found. */
    {
        static const char s[] = "{\"caf\xc3\xa9\": 1}";
        json_object *o = lf_json_parse(s, sizeof s - 1);

        LF_CHECK(o != NULL && lf_json_get(o, "caf\xc3\xa9") != NULL);
        json_object_put(o);
    }
}

static void test_numbers_come_out_exact(void)
{
    LF_CHECK_STR(VALUE("{\"v\": 123456789012345678901234567890}"), "123456789012345678901234567890");
    LF_CHECK_STR(VALUE("{\"v\": -123456789012345678901234567890}"), "-123456789012345678901234567890");
    LF_CHECK_STR(VALUE("{\"v\": [18446744073709551616, 1]}"), "[18446744073709551616,1]");
    LF_CHECK_STR(VALUE("{\"v\": {\"n\": -9223372036854775809}}"), "{\"n\":-9223372036854775809}");
    /* The edges of what json-c holds exactly stay integers. */
    LF_CHECK_STR(VALUE("{\"v\": 18446744073709551615}"), "18446744073709551615");
    LF_CHECK_STR(VALUE("{\"v\": -9223372036854775808}"), "-9223372036854775808");
    LF_CHECK_STR(VALUE("{\"v\": 0.1}"), "0.1");
    LF_CHECK_STR(VALUE("{\"v\": -0.5E+3}"), "-0.5E+3");
    LF_CHECK_STR(VALUE("{\"v\": 1e400}"), "1e400");
    /* A string that looks like a big number is left alone. */
    LF_CHECK_STR(VALUE("{\"v\": \"123456789012345678901234567890\"}"), "123456789012345678901234567890");
    {
        static const char s[] = "{\"n\": 99999999999999999999, \"c\": 42}";
        json_object *o = lf_json_parse(s, sizeof s - 1);
        long count = 0;

        LF_CHECK(o != NULL);
        LF_CHECK(lf_json_take_count(o, "c", &count) == 1 && count == 42);
        /* Past any count: not one, rather than a clamped 2^63 - 1. */
        LF_CHECK(lf_json_take_count(o, "n", &count) == 0);
        json_object_put(o);
    }
}

static void test_refused(void)
{
    static const char *const refused[] = {
        "{\"v\": NaN}", "{\"v\": Infinity}", "{\"v\": -Infinity}", "{'v': 1}", "{\"v\": 'x'}",
        "{\"v\": \"x\ty\"}", "{\"v\": \"x\ny\"}", "{\"v\": 5.}", "{\"v\": .5}", "{\"v\": 01}", "{\"v\": +1}",
        "{\"v\": 0x10}", "{\"v\": 1e}", "{\"v\": -}", "{\"v\": nulls}", "{\"v\": tru}",
        "{\"v\": \"\\x41\"}", "{\"v\": \"\\u12\"}", "{\"v\": \"\\u12G4\"}",
        "{\"v\": 1,}", "[1,]", "[,1]", "{,}", "{\"v\" 1}", "{\"v\": 1 \"w\": 2}", "{v: 1}",
        "{\"v\": 1} x", "{\"v\": 1}{}", "{\"v\": 1", "[1, 2", "\"open", "", "  ", "// c\n{}", "{} /* c */",
        "{\"v\": [1]]", "{\"v\": {]}", "[}",
    };
    size_t i;

    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        json_object *o = lf_json_parse(refused[i], strlen(refused[i]));

        if (o) fprintf(stderr, "taken: %s\n", refused[i]);
        LF_CHECK(o == NULL);
        LF_CHECK(lf_json_nonstandard_at(refused[i], strlen(refused[i]), 0) != 0);
        json_object_put(o);
    }
    /* A raw NUL is a control character, not the end of the text. */
    LF_CHECK(lf_json_parse("{\"v\": \"a\0\"}", 10) == NULL);
    LF_CHECK(lf_json_parse("{}\0", 3) == NULL);
    /* Where: the offset + 1 of the first byte that is not standard. */
    LF_CHECK_INT(lf_json_nonstandard_at("{\"v\": NaN}", 10, 0), 7);
    LF_CHECK_INT(lf_json_nonstandard_at("Sure! {}", 8, 0), 1);
    LF_CHECK_INT(lf_json_nonstandard_at("{\"v\": 1", 7, 0), 8);
    LF_CHECK_INT(lf_json_nonstandard_at(" {\"v\": [1, 2]} \n", 16, 0), 0);
}

static void test_shapes_taken(void)
{
    static const char *const taken[] = {
        "{}", "[]", " {\"v\": []} ", "[{}, [], \"\", 0, -0, 0.0e-0, true, false, null]", "\"text\"", "42",
        "{\"v\": {\"w\": {\"x\": [[[]]]}}}", "\r\n\t{\"v\":1}\r\n\t",
    };
    size_t i;

    for (i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        json_object *o = lf_json_parse(taken[i], strlen(taken[i]));

        if (!o) fprintf(stderr, "refused: %s\n", taken[i]);
        LF_CHECK(o != NULL);
        json_object_put(o);
    }
}

/* Nesting past 64 levels is refused before json-c recurses into it. */
static void test_depth(void)
{
    char deep[200];
    size_t n;

    for (n = 0; n < 64; n++) deep[n] = '[';
    for (; n < 128; n++) deep[n] = ']';
    LF_CHECK(lf_json_nonstandard_at(deep, 128, 0) == 0);
    {
        json_object *o = lf_json_parse(deep, 128);

        LF_CHECK(o != NULL);
        json_object_put(o);
    }
    for (n = 0; n < 65; n++) deep[n] = '[';
    for (; n < 130; n++) deep[n] = ']';
    LF_CHECK_INT(lf_json_nonstandard_at(deep, 130, 0), 65);
    LF_CHECK(lf_json_parse(deep, 130) == NULL);
}

/* A walk of a checked text finds each member and element as json-c's tree
 * has them, and takes a string out as lf_json_take_string does. */
static void test_walk(void)
{
    static const char doc[] = " {\"a\" : [1, {\"b\":\"}]\\\\\"}, [] ,\"x\\\"]\"] , \"s\":\"\\u00e9\\ud83d\\ude00\\ud800\\u0000\\n\","
                              "\"n\":18446744073709551616,\"e\\u0061\":0 } ";
    static const char *const elements[] = { "1", "{\"b\":\"}]\\\\\"}", "[]", "\"x\\\"]\"" };
    json_object *tree = lf_json_parse(doc, sizeof doc - 1);
    lf_json_walk w, list;
    lf_json_span k, v, e;
    lf_buf got, want;
    long count = 0;
    size_t i = 0;

    lf_buf_init(&got);
    lf_buf_init(&want);
    LF_CHECK(tree && lf_json_nonstandard_at(doc, sizeof doc - 1, 0) == 0);
    LF_CHECK(lf_json_walk_start(&w, lf_json_span_of(doc, sizeof doc - 1), '{'));
    LF_CHECK(!lf_json_walk_start(&list, lf_json_span_of(doc, sizeof doc - 1), '['));
    LF_CHECK_INT(lf_json_walk_next(&w, &k, &v), 1);
    LF_CHECK(lf_json_span_is(k, "\"a\"") && lf_json_walk_start(&list, v, '['));
    while (lf_json_walk_next(&list, &k, &e) == 1) {
        LF_CHECK(i < 4 && lf_bytes_are(e.s, e.n, elements[i]));
        i++;
    }
    LF_CHECK_INT(i, 4);
    LF_CHECK_INT(lf_json_walk_next(&w, &k, &v), 1);
    LF_CHECK(lf_json_span_is(k, "\"s\"") && lf_json_span_append_string(v, &got) == 0);
    LF_CHECK(lf_json_take_string(tree, "s", &want) == 0 && got.len == want.len &&
             memcmp(got.ptr, want.ptr, got.len) == 0);
    LF_CHECK_INT(lf_json_walk_next(&w, &k, &v), 1);
    LF_CHECK(lf_json_span_is(k, "\"n\"") && !lf_json_span_count(v, &count));
    /* A key spelled with an escape: matching it by its bytes would miss it. */
    LF_CHECK_INT(lf_json_walk_next(&w, &k, &v), -1);
    LF_CHECK(lf_json_span_count(lf_json_span_of(" 999999999999999999 ", 20), &count) && count == 999999999999999999L);
    LF_CHECK(!lf_json_span_count(lf_json_span_of("1.0", 3), &count) && !lf_json_span_count(lf_json_span_of("-1", 2), &count));
    json_object_put(tree);
    lf_buf_free(&got);
    lf_buf_free(&want);
}

int main(void)
{
    LF_RUN(test_text_comes_out_exact);
    LF_RUN(test_numbers_come_out_exact);
    LF_RUN(test_refused);
    LF_RUN(test_shapes_taken);
    LF_RUN(test_depth);
    LF_RUN(test_walk);
    return lf_test_summary("json_read");
}
