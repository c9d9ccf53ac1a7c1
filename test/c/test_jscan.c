/* lf_jscan, and the OpenAI stream fast path built on it: every event of every
 * recorded OpenAI-compatible stream, and a set of awkward ones, must leave the
 * stream state exactly as json-c's path leaves it. */
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

/* ---- the fast path against json-c's ---------------------------------- */

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
    };
    size_t i;

    for (i = 0; i < sizeof events / sizeof events[0]; i++) one_event(events[i]);
}

/* ---- every recorded stream -------------------------------------------- */

typedef struct pair {
    lf_stream_state *fast, *slow;
} pair;

static int on_pair_event(void *ud, const lf_sse_event *ev)
{
    pair *p = ud;

    both(p->fast, p->slow, ev->data ? ev->data : "", ev->data_len);
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

static void test_recorded_streams(void)
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
            if (!json_object_object_get_ex(req, "api", &api) || strcmp(json_object_get_string(api), "openai") != 0)
                continue;
            if (!json_object_object_get_ex(resp, "headers", &headers) ||
                !json_object_object_get_ex(headers, "content-type", &ct) ||
                !strstr(json_object_get_string(ct), "event-stream") ||
                !json_object_object_get_ex(resp, "body", &body))
                continue;
            check_stream(json_object_get_string(body), (size_t)json_object_get_string_len(body));
        }
        json_object_put(root);
    }
    closedir(d);
    printf("jscan: %d events compared, %d recorded OpenAI-compatible streams\n", compared, streams_seen);
    LF_CHECK(streams_seen >= 8); /* a floor, so that a broken walk cannot pass */
}

int main(void)
{
    LF_RUN(test_subset);
    LF_RUN(test_members_and_strings);
    LF_RUN(test_awkward_events);
    LF_RUN(test_recorded_streams);
    return lf_test_summary("jscan");
}
