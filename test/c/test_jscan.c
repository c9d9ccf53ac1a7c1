/* lf_jscan, and the fast paths built on it: every event of every recorded
 * OpenAI-compatible stream, every recorded answer body, and a set of awkward
 * ones must come out exactly as json-c's path reads them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_jscan.h"
#include "lf_sse.h"
#include "lf_test.h"
#include "lf_wire.h"

#include "lf_banned.h"

static int doc_ok(const char *text)
{
    lf_js root;
    return lf_jscan_document(text, strlen(text), &root) == 0;
}

static void test_subset(void)
{
    LF_CHECK(doc_ok("{}"));
    LF_CHECK(doc_ok(" [ ] "));
    LF_CHECK(doc_ok("{\"a\":[1,-2,3.5,0,-0,0.25,true,false,null,\"x\"],\"b\":{\"c\":{}}}"));
    LF_CHECK(doc_ok("\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t\""));
    LF_CHECK(doc_ok("\t\r\n{\"k\" : 1 }\n"));
    LF_CHECK(doc_ok("\"\xc3\xa9\xff\"")); /* bytes >= 0x80 as they are */
    LF_CHECK(doc_ok("123456789012345678.123456789012345678"));

    /* Not JSON. */
    LF_CHECK(!doc_ok(""));
    LF_CHECK(!doc_ok("{"));
    LF_CHECK(!doc_ok("{\"a\":1,}"));
    LF_CHECK(!doc_ok("[1,]"));
    LF_CHECK(!doc_ok("{\"a\" 1}"));
    LF_CHECK(!doc_ok("{a:1}"));
    LF_CHECK(!doc_ok("{} {}"));
    LF_CHECK(!doc_ok("01"));
    LF_CHECK(!doc_ok("-"));
    LF_CHECK(!doc_ok("1."));
    LF_CHECK(!doc_ok(".5"));
    LF_CHECK(!doc_ok("tru"));
    LF_CHECK(!doc_ok("\"open"));
    LF_CHECK(!doc_ok("\"bad \\x escape\""));
    /* JSON, but left to json-c. */
    LF_CHECK(!doc_ok("\"\\u00e9\""));
    LF_CHECK(!doc_ok("1e5"));
    LF_CHECK(!doc_ok("1234567890123456789"));
    LF_CHECK(!doc_ok("\"tab\there\""));
    LF_CHECK(!doc_ok("\f{}"));
    {
        /* A NUL byte inside a string, the length given. */
        lf_js root;
        LF_CHECK(lf_jscan_document("\"a\0b\"", 5, &root) != 0);
    }
    {
        char deep[2 * LF_JSCAN_MAX_DEPTH + 3];
        size_t i;
        for (i = 0; i < LF_JSCAN_MAX_DEPTH; i++) deep[i] = '[';
        for (i = 0; i < LF_JSCAN_MAX_DEPTH; i++) deep[LF_JSCAN_MAX_DEPTH + i] = ']';
        deep[2 * LF_JSCAN_MAX_DEPTH] = '\0';
        LF_CHECK(doc_ok(deep));
        memmove(deep + 1, deep, 2 * LF_JSCAN_MAX_DEPTH + 1);
        deep[0] = '[';
        deep[2 * LF_JSCAN_MAX_DEPTH + 1] = ']';
        deep[2 * LF_JSCAN_MAX_DEPTH + 2] = '\0';
        LF_CHECK(!doc_ok(deep));
    }
}

static void test_members_and_strings(void)
{
    const char *text = "{\"a\":\"first\",\"arr\":[{\"x\":1},\"s\\\"]\",[]],\"a\":\"la\\\"st\\n\",\"n\":null,"
                       "\"o\":{\"a\":\"inner\"}}";
    static const char *const keys[] = { "a", "arr", "n", "missing" };
    lf_js root, m[4], el, v;
    lf_buf out;
    size_t pos = 0, count = 0;

    lf_buf_init(&out);
    LF_CHECK(lf_jscan_document(text, strlen(text), &root) == 0);
    LF_CHECK_INT(lf_jscan_members(root, keys, 4, m), 3);
    LF_CHECK_INT(m[0].type, LF_JS_STRING);
    LF_CHECK(!lf_jscan_string_is_plain(m[0]));
    LF_CHECK(lf_jscan_string_append(m[0], &out) == 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "la\"st\n"); /* the last "a", not the nested one */
    LF_CHECK_INT(m[2].type, LF_JS_NULL);
    LF_CHECK_INT(m[3].type, LF_JS_NONE);
    while (lf_jscan_next(m[1], &pos, &el)) {
        count++;
        if (count == 2) {
            lf_buf_clear(&out);
            LF_CHECK(lf_jscan_string_append(el, &out) == 0);
            LF_CHECK_STR(lf_buf_cstr(&out), "s\"]");
        }
    }
    LF_CHECK_INT(count, 3);
    v = lf_jscan_member(lf_jscan_member(root, "o"), "a");
    LF_CHECK(lf_jscan_string_is_plain(v));
    LF_CHECK_INT(v.n, 7);
    LF_CHECK_INT(lf_jscan_member(m[1], "x").type, LF_JS_NONE); /* not an object */
    lf_buf_free(&out);
}


/* ---- indexed documents ------------------------------------------------ */

/* lf_jscan_index accepts exactly what lf_jscan_document accepts. */
static int index_ok(const char *text, size_t n)
{
    lf_jnode nodes[256];
    lf_jdoc d;

    lf_jdoc_init(&d, nodes, 256);
    return lf_jscan_index(&d, text, n) == 0;
}

static void test_index_agrees_with_document(void)
{
    static const char *const texts[] = {
        "{}", " [ ] ", "{\"a\":[1,-2,3.5,0,-0,0.25,true,false,null,\"x\"],\"b\":{\"c\":{}}}",
        "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\t\r\n{\"k\" : 1 }\n", "\"\xc3\xa9\xff\"",
        "123456789012345678.123456789012345678", "", "{", "{\"a\":1,}", "[1,]", "{\"a\" 1}", "{a:1}",
        "{} {}", "01", "-", "1.", ".5", "tru", "\"open", "\"bad \\x escape\"", "\"\\u00e9\"", "1e5",
        "1234567890123456789", "\"tab\there\"", "\f{}", "[ 1 , 2 ]", "{ \"a\" : { \"b\" : [ ] } , \"c\" : 1 }",
        "{\"a\":1 \"b\":2}", "[\"a\" \"b\"]", "{\"a\":1]", "[1}", "{\"a\"}", "{\"a\":}", "[,1]", "{,}",
        "\"a long string that crosses sixteen bytes \\n and an escape near the end\\\"\"",
        "\"0123456789abcde\"", "\"0123456789abcdef\"", "\"0123456789abcdefg\"",
        "\"0123456789abcdef\\", "\"0123456789abcdef\\\"", "{\"0123456789abcdef\":\"0123456789abcdef\"}",
        "[\"x\",\"0123456789abcd\x01\"]", "[\"0123456789abcdef0123456789ab\x1f\"]", "nul", "null ", "-0", "-01",
        "-0.0", "0.", "1.5.5", "[-]", "[1e]", "truex", "[true,false,null]",
        /* digits eight at a time, and the limits of the subset */
        "12345678", "123456789", "1234567a", "[12345678]", "[123456789012345678]", "[1234567890123456789]",
        "[12345678:]", "[1234567/]", "[12345678.12345678]", "0.123456789012345678", "0.1234567890123456789",
        "-123456789012345678.123456789012345678", "[99999999,00000000]", "[1234567\xb0]", "[12345678\xf9]",
    };
    size_t i;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int doc = doc_ok(texts[i]), idx = index_ok(texts[i], strlen(texts[i]));

        if (doc != idx) fprintf(stderr, "document %d, index %d: %s\n", doc, idx, texts[i]);
        LF_CHECK_INT(idx, doc);
    }
    /* Every prefix of a real answer: only the whole text is a document. */
    {
        const char *ans = "{\"id\":\"chatcmpl-9\",\"choices\":[{\"index\":0,\"message\":{\"content\":\"Hi \\\"there\\\"\"},"
                          "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12}}";
        size_t n = strlen(ans), k;

        for (k = 0; k < n; k++) {
            char *cut = malloc(k ? k : 1); /* exact size: ASan sees any overread */

            memcpy(cut, ans, k);
            LF_CHECK(!index_ok(cut, k));
            LF_CHECK(lf_jscan_document(cut, k, NULL) != 0);
            free(cut);
        }
        LF_CHECK(index_ok(ans, n));
    }
}

static void test_index_walk(void)
{
    const char *text = "{\"a\":\"first\",\"arr\":[{\"x\":1},\"s\\\"]\",[]],\"a\":\"la\\\"st\\n\",\"n\":null,"
                       "\"o\":{\"a\":\"inner\"},\"a_name_longer_than_eight\":7,\"a_name_longer_than_eighT\":8}";
    static const lf_jkey keys[] = { LF_JKEY("a"), LF_JKEY("arr"), LF_JKEY("n"), LF_JKEY("missing"),
                                    LF_JKEY("a_name_longer_than_eight"), LF_JKEY("o") };
    lf_jnode nodes[64];
    lf_jdoc d;
    uint32_t m[6], el, count = 0;
    lf_buf out;

    lf_buf_init(&out);
    lf_jdoc_init(&d, nodes, 64);
    LF_CHECK(lf_jscan_index(&d, text, strlen(text)) == 0);
    LF_CHECK_INT(lf_jdoc_type(&d, 0), LF_JS_OBJECT);
    LF_CHECK_INT(d.nodes[0].len, strlen(text));
    lf_jdoc_members(&d, 0, keys, 6, m);
    LF_CHECK_INT(lf_jdoc_type(&d, m[0]), LF_JS_STRING);
    LF_CHECK(d.nodes[m[0]].flags & LF_JNODE_ESCAPES);
    LF_CHECK(lf_jscan_string_append(lf_jdoc_value(&d, m[0]), &out) == 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "la\"st\n"); /* the last "a", not the nested one */
    LF_CHECK_INT(m[0], lf_jdoc_member(&d, 0, keys[0]));
    LF_CHECK_INT(lf_jdoc_type(&d, m[2]), LF_JS_NULL);
    LF_CHECK_INT(m[3], LF_JNODE_NONE);
    LF_CHECK_INT(lf_jdoc_type(&d, m[3]), LF_JS_NONE);
    LF_CHECK_INT(lf_jdoc_value(&d, m[4]).n, 1);
    LF_CHECK(lf_jdoc_value(&d, m[4]).p[0] == '7');
    for (el = lf_jdoc_first(&d, m[1]); el != LF_JNODE_NONE; el = lf_jdoc_next(&d, m[1], el)) {
        count++;
        if (count == 1) LF_CHECK_INT(lf_jdoc_type(&d, el), LF_JS_OBJECT);
        if (count == 2) {
            lf_buf_clear(&out);
            LF_CHECK(lf_jscan_string_append(lf_jdoc_value(&d, el), &out) == 0);
            LF_CHECK_STR(lf_buf_cstr(&out), "s\"]");
        }
        if (count == 3) {
            LF_CHECK_INT(lf_jdoc_type(&d, el), LF_JS_ARRAY);
            LF_CHECK_INT(lf_jdoc_first(&d, el), LF_JNODE_NONE); /* empty */
        }
    }
    LF_CHECK_INT(count, 3);
    LF_CHECK(lf_jdoc_string_is(&d, lf_jdoc_member(&d, m[5], keys[0]), (lf_jkey)LF_JKEY("inner")));
    LF_CHECK(!lf_jdoc_string_is(&d, lf_jdoc_member(&d, m[5], keys[0]), (lf_jkey)LF_JKEY("inne")));
    LF_CHECK(!lf_jdoc_string_is(&d, m[0], (lf_jkey)LF_JKEY("la")));
    LF_CHECK_INT(lf_jdoc_member(&d, m[1], keys[0]), LF_JNODE_NONE); /* not an object */
    LF_CHECK_INT(lf_jdoc_member(&d, LF_JNODE_NONE, keys[0]), LF_JNODE_NONE);
    lf_buf_free(&out);

    /* More values than nodes: refused, so that the caller falls back. */
    lf_jdoc_init(&d, nodes, 3);
    LF_CHECK(lf_jscan_index(&d, "[1,2]", 5) == 0);
    LF_CHECK(lf_jscan_index(&d, "[1,2,3]", 7) != 0);
    LF_CHECK(lf_jscan_index(&d, "{\"a\":1,\"b\":2}", 13) == 0);
    LF_CHECK(lf_jscan_index(&d, "{\"a\":1,\"b\":2,\"c\":3}", 19) != 0);
    /* A tiny document: names near its end are read byte by byte. */
    lf_jdoc_init(&d, nodes, 64);
    LF_CHECK(lf_jscan_index(&d, "{\"ab\":1}", 8) == 0);
    LF_CHECK_INT(lf_jdoc_member(&d, 0, (lf_jkey)LF_JKEY("ab")), 1);
    LF_CHECK_INT(lf_jdoc_member(&d, 0, (lf_jkey)LF_JKEY("a")), LF_JNODE_NONE);
    LF_CHECK_INT(lf_jdoc_member(&d, 0, (lf_jkey)LF_JKEY("abc")), LF_JNODE_NONE);
}

/* lf_jdoc_members, one walk for many names (hashed, or compared with each
 * name when two of them share a hash), against lf_jscan_members, the plain
 * walk over the text. */
static void test_members_many_keys(void)
{
    static const char *const pool[] = {
        "id", "model", "choices", "usage", "error", "index", "delta", "content", "finish_reason", "a",
        "b", "ab", "ba", "object", "created", "system_fingerprint", "logprobs", "role", "k1", "k2",
        "prompt_tokens", "completion_tokens", "prompt_tokens_details", "x", "",
    };
    static const lf_jkey jpool[] = {
        LF_JKEY("id"), LF_JKEY("model"), LF_JKEY("choices"), LF_JKEY("usage"), LF_JKEY("error"),
        LF_JKEY("index"), LF_JKEY("delta"), LF_JKEY("content"), LF_JKEY("finish_reason"), LF_JKEY("a"),
        LF_JKEY("b"), LF_JKEY("ab"), LF_JKEY("ba"), LF_JKEY("object"), LF_JKEY("created"),
        LF_JKEY("system_fingerprint"), LF_JKEY("logprobs"), LF_JKEY("role"), LF_JKEY("k1"), LF_JKEY("k2"),
        LF_JKEY("prompt_tokens"), LF_JKEY("completion_tokens"), LF_JKEY("prompt_tokens_details"),
        LF_JKEY("x"), LF_JKEY(""),
    };
    const size_t n_pool = sizeof pool / sizeof pool[0];
    const char *text = "{\"id\":1,\"model\":2,\"choices\":[3],\"a\":4,\"ab\":5,\"\":6,\"object\":{\"id\":7},"
                       "\"prompt_tokens\":8,\"prompt_tokens_details\":9,\"k2\":10,\"id\":11,\"x\\/\":12,"
                       "\"system_fingerprint\":13,\"b\":14,\"role\":15,\"system_fingerprinT\":16,\"ba\":17}";
    lf_jnode nodes[64];
    lf_jdoc d;
    lf_js root;
    size_t start, len, k;

    lf_jdoc_init(&d, nodes, 64);
    LF_CHECK(lf_jscan_index(&d, text, strlen(text)) == 0);
    LF_CHECK(lf_jscan_document(text, strlen(text), &root) == 0);
    for (start = 0; start < n_pool; start++) {
        for (len = 1; len <= LF_JSCAN_MAX_KEYS && start + len <= n_pool; len++) {
            uint32_t got[LF_JSCAN_MAX_KEYS];
            lf_js want[LF_JSCAN_MAX_KEYS];

            lf_jdoc_members(&d, 0, jpool + start, len, got);
            lf_jscan_members(root, (const char *const *)pool + start, len, want);
            for (k = 0; k < len; k++) {
                lf_js v = lf_jdoc_value(&d, got[k]);

                if (v.type != want[k].type || v.p != want[k].p)
                    fprintf(stderr, "members: \"%s\" read differently\n", pool[start + k]);
                LF_CHECK(v.type == want[k].type && v.p == want[k].p && v.n == want[k].n);
                LF_CHECK_INT(got[k], lf_jdoc_member(&d, 0, jpool[start + k]));
            }
        }
    }
}

/* ---- the stream fast path against json-c's ---------------------------- */

static int compared;

static void same_state(const lf_stream_state *a, const lf_stream_state *b, const char *data)
{
    int same = a->done == b->done && a->finished == b->finished && a->has_usage == b->has_usage &&
               a->answer.input_tokens == b->answer.input_tokens &&
               a->answer.output_tokens == b->answer.output_tokens &&
               strcmp(lf_buf_cstr(&a->answer.text), lf_buf_cstr(&b->answer.text)) == 0 &&
               a->answer.text.len == b->answer.text.len &&
               strcmp(lf_buf_cstr(&a->answer.model), lf_buf_cstr(&b->answer.model)) == 0 &&
               strcmp(lf_buf_cstr(&a->answer.id), lf_buf_cstr(&b->answer.id)) == 0 &&
               strcmp(lf_buf_cstr(&a->answer.finish_reason), lf_buf_cstr(&b->answer.finish_reason)) == 0 &&
               strcmp(lf_buf_cstr(&a->error.type), lf_buf_cstr(&b->error.type)) == 0 &&
               strcmp(lf_buf_cstr(&a->error.message), lf_buf_cstr(&b->error.message)) == 0;
    if (!same) fprintf(stderr, "stream states differ after: %s\n", data);
    LF_CHECK(same);
}

/* Feeds one event to a fast-path state and a json-c-only state. */
static void both(lf_stream_state *fast, lf_stream_state *slow, const char *data, size_t n)
{
    lf_sse_event ev;
    const char *d1 = NULL, *d2 = NULL;
    size_t n1 = 0, n2 = 0;
    int r1, r2;

    memset(&ev, 0, sizeof ev);
    ev.data = data;
    ev.data_len = n;
    r1 = lf_stream_event(fast, &ev, &d1, &n1);
    r2 = lf_stream_event(slow, &ev, &d2, &n2);
    if (r1 != r2 || n1 != n2 || memcmp(d1, d2, n1) != 0)
        fprintf(stderr, "event read differently (rc %d vs %d): %.*s\n", r1, r2, (int)n, data);
    LF_CHECK_INT(r1, r2);
    LF_CHECK_INT(n1, n2);
    LF_CHECK(n1 == n2 && memcmp(d1, d2, n1) == 0);
    same_state(fast, slow, data);
    compared++;
}

static void one_event(const char *data)
{
    lf_stream_state fast, slow;

    lf_stream_init(&fast, LF_API_OPENAI);
    lf_stream_init(&slow, LF_API_OPENAI);
    slow.json_c_only = 1;
    both(&fast, &slow, data, strlen(data));
    lf_stream_free(&fast);
    lf_stream_free(&slow);
}

static void test_awkward_events(void)
{
    static const char *const events[] = {
        "{\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\nb\\\"c\\\\d\\/e\\t\"},\"finish_reason\":null}]}",
        "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"second\"}},{\"index\":0,\"delta\":{\"content\":\"first\"}}]}",
        "{\"choices\":[{\"index\":2,\"delta\":{\"content\":\"only\"}}]}",
        "{\"choices\":[{\"index\":0.0,\"delta\":{\"content\":\"float index\"}}]}",
        "{\"choices\":[{\"index\":-0,\"delta\":{\"content\":\"minus zero\"}}]}",
        "{\"choices\":[{\"index\":null,\"delta\":{\"content\":\"null index\"}}]}",
        "{\"choices\":[null,{\"delta\":{\"content\":\"after null\"}}]}",
        "{\"choices\":[\"str\",{\"index\":3}]}",
        "{\"choices\":[]}",
        "{\"choices\":null,\"model\":\"m2\"}",
        "{\"choices\":{}}",
        "{\"choices\":[{\"delta\":{\"content\":42}}]}",
        "{\"choices\":[{\"delta\":{\"content\":null,\"role\":\"assistant\"}}]}",
        "{\"choices\":[{\"delta\":\"x\"}]}",
        "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[{\"delta\":{},\"finish_reason\":7}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"dup\",\"content\":\"last\"}}]}",
        "{\"model\":\"one\",\"model\":\"two\",\"id\":null}",
        "{\"model\":5,\"id\":[\"x\"]}",
        "{\"model\":\"bad \xff utf8 \xc3\"}",
        "{\"choices\":[{\"delta\":{\"content\":\"\xe2\x82\xac \xf0\x9f\x98\x80 \xed\xa0\x80 \xc0\xaf\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}",
        "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}",
        "{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"no error\"}}]}",
        "[{\"error\":{\"message\":\"wrapped\"}}]",
        "{\"created\":1e3,\"choices\":[{\"delta\":{\"content\":\"exp\"}}]}",
        "{\"created\":17300000000000000000,\"choices\":[{\"delta\":{\"content\":\"big\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"trailing\"}}]} x",
        "{\"choices\":[{\"delta\":{\"content\":\"comma\"}},]}",
        "  {\"choices\":[{\"delta\":{\"content\":\"spaces\"}}]}  ",
        "\"just a string\"",
        "42",
        "null",
        "{}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"length\"}],\"id\":\"\"}",
        /* usage, read by the fast path too */
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34,\"total_tokens\":46}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":999999999999999999,\"completion_tokens\":0}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":1000000000000000000,\"completion_tokens\":1}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":-0}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":7.0,\"completion_tokens\":7.5}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":123456789012345678.0}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":1.000000000000000001}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":2e1}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":\"5\",\"completion_tokens\":true}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":null,\"completion_tokens\":3}}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":2}}",
        "{\"choices\":[],\"usage\":[1,2]}",
        "{\"choices\":[],\"usage\":5}",
        "{\"choices\":[],\"usage\":{}}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
        /* model and id: repeated, changed, escaped */
        "{\"model\":\"m\\/1\",\"id\":\"a\\\"b\"}",
        "{\"model\":\"\",\"id\":\"\"}",
        "{\"choices\":[{\"index\":0,\"index\":1,\"delta\":{\"content\":\"index repeated: last is 1\"}}]}",
        "{\"choices\":[{\"index\":1,\"index\":0,\"delta\":{\"content\":\"index repeated: last is 0\"}}]}",
        "{\"choices\":[{\"index\":\"0\",\"delta\":{\"content\":\"string index\"}}]}",
        "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"one\"}},{\"index\":2,\"delta\":{\"content\":\"two\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"a\"},\"delta\":null}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"long text that crosses sixteen-byte blocks with \\\"escapes\\\" and \xc3\xa9\xe2\x82\xac\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"cut \xe2\x82\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\xf4\x90\x80\x80 \xef\xbf\xbf \xf0\x90\x80\x80\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"ctl \x01\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"error\":false}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"error\":{}}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"Error\":1,\"CHOICES\":2}",
    };
    size_t i;

    for (i = 0; i < sizeof events / sizeof events[0]; i++) one_event(events[i]);
}


/* ---- answers: the fast path against json-c's ------------------------- */

static int answers_compared, answers_fast;

static int buf_same(const lf_buf *a, const lf_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

static int answer_same(const lf_answer *a, const lf_answer *b)
{
    return buf_same(&a->text, &b->text) && buf_same(&a->model, &b->model) &&
           buf_same(&a->finish_reason, &b->finish_reason) && buf_same(&a->id, &b->id) &&
           a->input_tokens == b->input_tokens && a->output_tokens == b->output_tokens;
}

/* Reads body as an answer of api three ways: lf_wire_parse_response (fast
 * path first), json-c alone, and the fast path alone; all that answer must
 * agree. Returns 1 when the fast path read it by itself. */
static int answer_both(lf_api api, const char *body, size_t n)
{
    char *copy = malloc(n ? n : 1); /* exact size: ASan sees any overread */
    lf_answer a, b, f;
    lf_wire_error ea, eb;
    int r1, r2, rf, r3;

    LF_CHECK(copy != NULL);
    if (!copy) return 0;
    if (n) memcpy(copy, body, n);
    lf_answer_init(&a);
    lf_answer_init(&b);
    lf_answer_init(&f);
    lf_wire_error_init(&ea);
    lf_wire_error_init(&eb);
    /* Stale contents, as a caller reusing its buffers has: all cleared. */
    lf_buf_append_str(&a.text, "stale");
    lf_buf_append_str(&a.model, "stale");
    lf_buf_append_str(&f.id, "stale");
    lf_buf_append_str(&ea.message, "stale");
    r1 = lf_wire_parse_response(api, copy, n, &a, &ea);
    r2 = lf_wire_parse_response_json_c(api, copy, n, &b, &eb);
    rf = lf_wire_parse_response_jscan(api, copy, n, &f);
    if (r1 != r2 || !answer_same(&a, &b) || !buf_same(&ea.type, &eb.type) || !buf_same(&ea.code, &eb.code) ||
        !buf_same(&ea.message, &eb.message))
        fprintf(stderr, "answer (%s) read differently (rc %d vs %d): %.*s\n",
                api == LF_API_ANTHROPIC ? "anthropic" : "openai", r1, r2, (int)n, body);
    LF_CHECK_INT(r1, r2);
    LF_CHECK(answer_same(&a, &b));
    LF_CHECK(buf_same(&ea.type, &eb.type) && buf_same(&ea.code, &eb.code) && buf_same(&ea.message, &eb.message));
    if (rf == LF_WIRE_OK) {
        LF_CHECK_INT(r2, LF_WIRE_OK); /* the fast path reads successful answers only */
        LF_CHECK(answer_same(&f, &b));
    } else {
        LF_CHECK_INT(rf, -1);
        LF_CHECK(f.text.len + f.model.len + f.id.len + f.finish_reason.len == 0);
    }
    /* No error struct: the same answer. */
    r3 = lf_wire_parse_response(api, copy, n, &f, NULL);
    LF_CHECK_INT(r3, r2);
    LF_CHECK(answer_same(&f, &b));
    lf_answer_free(&a);
    lf_answer_free(&b);
    lf_answer_free(&f);
    lf_wire_error_free(&ea);
    lf_wire_error_free(&eb);
    free(copy);
    answers_compared++;
    if (rf == LF_WIRE_OK) answers_fast++;
    return rf == LF_WIRE_OK;
}

static int answer_str(lf_api api, const char *body)
{
    return answer_both(api, body, strlen(body));
}

#define OA(...) "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-x\"," __VA_ARGS__ "}"
#define OA_CHOICE(msg, rest) "\"choices\":[{\"index\":0,\"message\":" msg rest "}]"
#define OA_USAGE ",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21}"

static void test_awkward_openai_answers(void)
{
    static const char *const good =
        "{\"id\":\"chatcmpl-bench0001\",\"object\":\"chat.completion\",\"created\":1730000000,"
        "\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"content\":\"Hello! How can I help you today?\",\"refusal\":null},\"logprobs\":null,"
        "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":9,\"total_tokens\":18,"
        "\"prompt_tokens_details\":{\"cached_tokens\":0}},\"system_fingerprint\":\"fp_bench\"}";
    static const char *const bodies[] = {
        OA(OA_CHOICE("{\"content\":\"plain\"}", ",\"finish_reason\":\"stop\"") OA_USAGE),
        OA(OA_CHOICE("{\"content\":\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t end\"}", "") OA_USAGE),
        OA(OA_CHOICE("{\"content\":\"\\u00e9 unicode escape\"}", "")),
        OA(OA_CHOICE("{\"content\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", "")),
        OA(OA_CHOICE("{\"content\":\"bad \xff \xc3 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 \xe2\x82\"}", "")),
        OA(OA_CHOICE("{\"content\":\"a long answer that crosses several sixteen byte blocks, with "
                     "\\\"quotes\\\" here and \xc3\xa9 there, and a final backslash \\\\\"}", "")),
        OA(OA_CHOICE("{\"content\":\"ctl \x01 byte\"}", "")),
        OA(OA_CHOICE("{\"content\":null,\"refusal\":\"no\"}", ",\"finish_reason\":\"stop\"")),
        OA(OA_CHOICE("{\"role\":\"assistant\"}", ",\"finish_reason\":\"tool_calls\"")),
        OA(OA_CHOICE("{\"content\":42}", "")),
        OA(OA_CHOICE("{\"content\":[{\"type\":\"text\",\"text\":\"part one \"},{\"type\":\"x\"},"
                     "{\"type\":\"text\",\"text\":\"part two\"}]}", "")),
        OA(OA_CHOICE("{\"content\":\"first\",\"content\":\"last wins\"}", "")),
        OA(OA_CHOICE("{\"content\":\"x\"}", ",\"message\":{\"content\":\"second message wins\"}")),
        OA(OA_CHOICE("{\"content\":\"x\"}", ",\"message\":null")),
        OA(OA_CHOICE("null", "")),
        OA(OA_CHOICE("\"str\"", "")),
        OA(OA_CHOICE("{\"content\":\"x\"}", ",\"finish_reason\":null")),
        OA(OA_CHOICE("{\"content\":\"x\"}", ",\"finish_reason\":7")),
        OA(OA_CHOICE("{\"content\":\"x\"}", ",\"finish_reason\":\"a\",\"finish_reason\":\"b\"")),
        OA("\"choices\":[{\"index\":1,\"message\":{\"content\":\"one\"}},{\"index\":0,\"message\":{\"content\":\"zero\"}}]"),
        OA("\"choices\":[{\"index\":1,\"message\":{\"content\":\"only index 1\"}}]"),
        OA("\"choices\":[{\"index\":0.0,\"message\":{\"content\":\"float index\"}}]"),
        OA("\"choices\":[{\"index\":-0,\"message\":{\"content\":\"minus zero\"}}]"),
        OA("\"choices\":[{\"index\":null,\"message\":{\"content\":\"null index\"}}]"),
        OA("\"choices\":[null,{\"message\":{\"content\":\"after null\"}}]"),
        OA("\"choices\":[\"s\",{\"index\":3,\"message\":{\"content\":\"3\"}}]"),
        OA("\"choices\":[]"),
        OA("\"choices\":{}"),
        OA("\"choices\":null"),
        OA("\"choices\":[{\"message\":{\"content\":\"a\"}}],\"choices\":[]"),
        OA("\"choices\":[],\"choices\":[{\"message\":{\"content\":\"second choices wins\"}}]"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"model\":null,\"id\":null"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"model\":\"m2\",\"id\":\"i\\/2\""),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"model\":5,\"id\":[]"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"model\":\"bad \xff model\""),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":null"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":[]"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":999999999999999999,"
                                                "\"completion_tokens\":0}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":1000000000000000000}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":-0}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":9.0,\"completion_tokens\":9.5}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":123456789012345678.9}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":3e2}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":\"9\",\"completion_tokens\":false}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":2,"
                                                "\"completion_tokens\":null}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"usage\":{\"prompt_tokens\":1},\"usage\":{\"completion_tokens\":2}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"error\":null"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"error\":{\"message\":\"in a 200\"}"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"error\":false"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"created\":1e9"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"created\":12345678901234567890"),
        OA(OA_CHOICE("{\"content\":\"x\"}", "") ",\"extra\":{\"deep\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"),
        "{\"error\":{\"message\":\"Rate limit\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}",
        "{\"error\":\"plain string\"}",
        "[{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\",\"message\":\"overloaded\"}}]",
        "{\"detail\":\"Not Found\"}",
        "{\"message\":\"m\",\"type\":\"t\",\"code\":4}",
        "{\"object\":\"chat.completion\"}",
        "[]", "\"just a string\"", "42", "null", "{}", "", "   ",
        "  " OA(OA_CHOICE("{\"content\":\"spaces around\"}", "")) " \n",
        "{ \"id\" : \"x\" , \"choices\" : [ { \"index\" : 0 , \"message\" : { \"content\" : \"spaced\" } } ] }",
        OA(OA_CHOICE("{\"content\":\"trailing\"}", "")) " x",
        OA(OA_CHOICE("{\"content\":\"comma\"}", "")) ",",
    };
    size_t i, n = strlen(good), k;

    LF_CHECK(answer_str(LF_API_OPENAI, good)); /* the everyday answer takes the fast path */
    LF_CHECK(answer_str(LF_API_OPENAI, bodies[0]));
    LF_CHECK(answer_str(LF_API_OPENAI, bodies[1]));
    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        answer_str(LF_API_OPENAI, bodies[i]);
        answer_str(LF_API_ANTHROPIC, bodies[i]);
    }
    /* Cut anywhere, it is no answer, and the two paths say so alike. */
    for (k = 0; k < n; k++) LF_CHECK(!answer_both(LF_API_OPENAI, good, k));
}

#define AN(...) "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\"," __VA_ARGS__ "}"
#define AN_USAGE ",\"usage\":{\"input_tokens\":14,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0," \
                 "\"cache_creation\":{\"ephemeral_5m_input_tokens\":0},\"output_tokens\":7,\"service_tier\":\"standard\"}"

static void test_awkward_anthropic_answers(void)
{
    static const char *const good =
        AN("\"content\":[{\"type\":\"text\",\"text\":\"Hello there\"}],\"stop_reason\":\"end_turn\","
           "\"stop_sequence\":null" AN_USAGE);
    static const char *const bodies[] = {
        AN("\"content\":[{\"type\":\"text\",\"text\":\"one \"},{\"type\":\"text\",\"text\":\"two\"}],"
           "\"stop_reason\":\"end_turn\"" AN_USAGE),
        AN("\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"abc\"},"
           "{\"type\":\"text\",\"text\":\"after thinking\"},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\","
           "\"input\":{\"a\":[1,{\"b\":null}]}}],\"stop_reason\":\"tool_use\""),
        AN("\"content\":[{\"text\":\"no type\"},{\"type\":\"text\"},{\"type\":\"text\",\"text\":5},"
           "{\"type\":\"te\\/xt\",\"text\":\"escaped type\"},{\"type\":\"text\",\"text\":\"ok\"}]"),
        AN("\"content\":[{\"type\":\"text\",\"type\":\"x\",\"text\":\"type repeated\"},"
           "{\"type\":\"x\",\"type\":\"text\",\"text\":\"a\",\"text\":\"b\"}]"),
        AN("\"content\":[null,\"s\",[],{\"type\":\"text\",\"text\":\"esc \\\" \\n \\\\\"}]"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"\\u00e9\"}]"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe \xc3\"}],\"model\":\"m \xe2\x82\""),
        AN("\"content\":[]"),
        AN("\"content\":null"),
        AN("\"content\":\"a string\""),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"content\":[{\"type\":\"text\",\"text\":\"second\"}]"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"stop_reason\":null,\"id\":null,\"model\":null"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"stop_reason\":1"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":1.0,\"output_tokens\":2}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":-1,\"output_tokens\":2}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":999999999999999999}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":1e1}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"error\":null"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"error\":{\"type\":\"overloaded_error\"}"),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"type\":\"error\""),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"type\":\"err\\/or\""),
        AN("\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"type\":null"),
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
        "{\"type\":\"error\"}",
        "{\"type\":\"message\"}",
        "[{\"type\":\"text\",\"text\":\"x\"}]",
        " " AN("\"content\":[ { \"type\" : \"text\" , \"text\" : \"spaced\" } ]") " ",
    };
    size_t i, n = strlen(good), k;

    LF_CHECK(answer_str(LF_API_ANTHROPIC, good)); /* the everyday message takes the fast path */
    LF_CHECK(answer_str(LF_API_ANTHROPIC, bodies[0]));
    LF_CHECK(answer_str(LF_API_ANTHROPIC, bodies[1]));
    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        answer_str(LF_API_ANTHROPIC, bodies[i]);
        answer_str(LF_API_OPENAI, bodies[i]);
    }
    for (k = 0; k < n; k++) LF_CHECK(!answer_both(LF_API_ANTHROPIC, good, k));
}

/* More values than a fast path's node array: json-c reads it, alike. */
static void test_too_many_values(void)
{
    lf_buf body;
    int i;

    lf_buf_init(&body);
    lf_buf_append_str(&body, "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":"
                             "{\"content\":\"with logprobs\"},\"finish_reason\":\"stop\",\"logprobs\":{\"content\":[");
    for (i = 0; i < 200; i++) lf_buf_append_str(&body, i ? ",{\"token\":\"t\",\"logprob\":-0.5,\"bytes\":[116]}"
                                                   : "{\"token\":\"t\",\"logprob\":-0.5,\"bytes\":[116]}");
    lf_buf_append_str(&body, "]}}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":200}}");
    LF_CHECK(!answer_both(LF_API_OPENAI, body.ptr, body.len));
    LF_CHECK_INT(lf_wire_parse_response_jscan(LF_API_OPENAI, body.ptr, body.len, &(lf_answer){0}), -1);

    lf_buf_clear(&body);
    lf_buf_append_str(&body, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lp\"},\"logprobs\":{\"content\":[");
    for (i = 0; i < 60; i++) lf_buf_append_str(&body, i ? ",{\"token\":\"t\",\"bytes\":[116]}" : "{\"token\":\"t\",\"bytes\":[116]}");
    lf_buf_append_str(&body, "]}}]}");
    LF_CHECK(!lf_stream_fast_reads(body.ptr, body.len));
    one_event(lf_buf_cstr(&body));
    lf_buf_free(&body);
}

/* ---- every recorded stream and answer --------------------------------- */

typedef struct pair {
    lf_stream_state *fast, *slow;
} pair;

static int fast_read_events, json_events;

static int on_pair_event(void *ud, const lf_sse_event *ev)
{
    pair *p = ud;
    const char *data = ev->data ? ev->data : "";

    both(p->fast, p->slow, data, ev->data_len);
    if (ev->data_len && data[0] == '{') {
        json_events++;
        fast_read_events += lf_stream_fast_reads(data, ev->data_len);
    }
    return 0;
}

static const char *fixtures_dir(void)
{
    const char *d = getenv("LF_FIXTURES");
    return d && *d ? d : "spec/fixtures/recorded";
}

static int streams_seen;

static void check_stream(const char *body, size_t n)
{
    lf_stream_state fast, slow;
    lf_sse_parser sse;
    pair p = { &fast, &slow };

    lf_stream_init(&fast, LF_API_OPENAI);
    lf_stream_init(&slow, LF_API_OPENAI);
    slow.json_c_only = 1;
    lf_sse_init(&sse);
    lf_sse_feed(&sse, body, n, on_pair_event, &p);
    lf_sse_finish(&sse, on_pair_event, &p);
    LF_CHECK(fast.answer.text.len > 0 || fast.finished || fast.done);
    lf_sse_free(&sse);
    lf_stream_free(&fast);
    lf_stream_free(&slow);
    streams_seen++;
}

static int recorded_answers, recorded_fast;

/* A recorded plain body, read as an answer of its own API and of the other
 * one; a successful one of its own API must take the fast path. */
static void check_answer(const char *api_name, json_object *resp, const char *body, size_t n)
{
    json_object *status = NULL;
    lf_api api = strcmp(api_name, "anthropic") == 0 ? LF_API_ANTHROPIC : LF_API_OPENAI;
    int ok, fast;

    json_object_object_get_ex(resp, "status", &status);
    ok = json_object_get_int(status) >= 200 && json_object_get_int(status) < 300;
    fast = answer_both(api, body, n);
    answer_both(api == LF_API_OPENAI ? LF_API_ANTHROPIC : LF_API_OPENAI, body, n);
    if (ok) {
        recorded_answers++;
        recorded_fast += fast;
        if (!fast) fprintf(stderr, "note: a recorded %s answer left to json-c: %.120s\n", api_name, body);
    }
}

static void test_recorded(void)
{
    DIR *d = opendir(fixtures_dir());
    struct dirent *de;

    LF_CHECK(d != NULL);
    if (!d) return;
    while ((de = readdir(d)) != NULL) {
        char path[4096];
        json_object *root, *its;
        size_t len = strlen(de->d_name), i;

        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", fixtures_dir(), de->d_name);
        root = json_object_from_file(path);
        its = NULL;
        if (!root || !json_object_object_get_ex(root, "interactions", &its)) {
            json_object_put(root);
            continue;
        }
        for (i = 0; i < json_object_array_length(its); i++) {
            json_object *it = json_object_array_get_idx(its, i), *req, *resp, *api, *body, *headers, *ct;
            if (!json_object_object_get_ex(it, "request", &req) || !json_object_object_get_ex(it, "response", &resp))
                continue;
            if (!json_object_object_get_ex(req, "api", &api) || !json_object_object_get_ex(resp, "body", &body) ||
                !json_object_is_type(body, json_type_string))
                continue;
            if (json_object_object_get_ex(resp, "headers", &headers) &&
                json_object_object_get_ex(headers, "content-type", &ct) &&
                strstr(json_object_get_string(ct), "event-stream")) {
                if (strcmp(json_object_get_string(api), "openai") == 0)
                    check_stream(json_object_get_string(body), (size_t)json_object_get_string_len(body));
                continue;
            }
            check_answer(json_object_get_string(api), resp, json_object_get_string(body),
                         (size_t)json_object_get_string_len(body));
        }
        json_object_put(root);
    }
    closedir(d);
    printf("jscan: %d events compared, %d recorded OpenAI-compatible streams, %d of %d JSON events "
           "read by the fast path\n", compared, streams_seen, fast_read_events, json_events);
    LF_CHECK(streams_seen >= 8); /* a floor, so that a broken walk cannot pass */
    /* The fast path must be the one that reads everyday events. */
    LF_CHECK(json_events > 100);
    LF_CHECK(fast_read_events * 10 >= json_events * 9);
    printf("jscan: %d answers compared, %d of %d recorded successful answers read by the fast path\n",
           answers_compared, recorded_fast, recorded_answers);
    LF_CHECK(recorded_answers >= 100);
    LF_CHECK(recorded_fast * 10 >= recorded_answers * 9);
}

int main(void)
{
    LF_RUN(test_subset);
    LF_RUN(test_members_and_strings);
    LF_RUN(test_index_agrees_with_document);
    LF_RUN(test_index_walk);
    LF_RUN(test_members_many_keys);
    LF_RUN(test_awkward_events);
    LF_RUN(test_awkward_openai_answers);
    LF_RUN(test_awkward_anthropic_answers);
    LF_RUN(test_too_many_values);
    LF_RUN(test_recorded);
    return lf_test_summary("jscan");
}
