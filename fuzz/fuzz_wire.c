/* libFuzzer target for the wire parsers: each input is an answer body for
 * both APIs (a text request's, and a schema's: lf_wire_parse_tool_response),
 * an error body, single SSE events (with and without an event
 * name) and a sequence of events for both APIs, and message content for the
 * request builder; the same again for Gemini (fuzz_gemini), whose model
 * also goes into a path, and each event read without json-c's tree against
 * the tree. Besides the sanitizers, it checks what the parsers
 * promise: valid UTF-8 out, text equal to the deltas handed out, nothing
 * left over on failure, a built request that is strict JSON holding the
 * content it was given.
 *
 *   mkdir -p tmp/fuzz && ruby fuzz/seed_wire.rb
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -Iext/llm_failover/core $(pkg-config --cflags json-c) -o tmp/fuzz/fuzz_wire \
 *     fuzz/fuzz_wire.c ext/llm_failover/core/lf_*.c \
 *     $(pkg-config --libs libcurl json-c) -lm
 *   tmp/fuzz/fuzz_wire -max_total_time=60 tmp/fuzz/corpus_wire
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_json_read.h"
#include "lf_utf8.h"

#include "lf_banned.h"

#include "fuzz_check.h"

/* A built request must be standard JSON in valid UTF-8: what a provider accepts. */
static json_object *standard_json(const char *s, size_t n)
{
    return lf_utf8_is_valid(s, n) ? lf_json_parse(s, n) : NULL;
}

static void fuzz_response(const uint8_t *data, size_t size)
{
    lf_answer a;
    lf_wire_error e;
    int api, rc;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    /* Both APIs, each as a text request's answer and as a schema's (a forced
     * call's input written back as the text). */
    for (api = 0; api <= 3; api++) {
        rc = api < 2 ? lf_wire_parse_response((lf_api)api, (const char *)data, size, &a, &e)
                     : lf_wire_parse_tool_response((lf_api)(api - 2), (const char *)data, size, &a, &e);
        CHECK(rc == LF_WIRE_OK || rc == LF_WIRE_INVALID || rc == LF_WIRE_ERROR_BODY);
        check_answer(&a);
        check_error(&e);
        if (rc != LF_WIRE_OK) CHECK(a.text.len == 0 && a.model.len == 0 && a.input_tokens == -1);
        if (rc != LF_WIRE_ERROR_BODY) CHECK(e.type.len == 0 && e.code.len == 0 && e.message.len == 0);
    }
    /* Embeddings: a whole answer (one vector per input, one length) or nothing. */
    for (api = 1; api <= 3; api++) {
        rc = lf_wire_parse_embeddings((const char *)data, size, (size_t)api, &a, &e);
        CHECK(rc == LF_WIRE_OK || rc == LF_WIRE_INVALID || rc == LF_WIRE_ERROR_BODY);
        if (rc == LF_WIRE_OK) CHECK(a.vectors && a.n_vectors == (size_t)api && a.dims > 0);
        else CHECK(!a.vectors && a.n_vectors == 0 && a.dims == 0);
        check_error(&e);
    }
    rc = lf_wire_parse_error((const char *)data, size, &e);
    CHECK(rc == 0 || rc == 1);
    check_error(&e);
    if (!rc) CHECK(e.type.len == 0 && e.code.len == 0 && e.message.len == 0);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

typedef struct stream_check {
    lf_stream_state st;
    lf_buf deltas;
    int was_complete;
} stream_check;

static void stream_check_event(stream_check *c, const char *event, size_t event_len,
                               const char *d, size_t n)
{
    lf_sse_event ev;
    const char *delta = NULL;
    size_t delta_len = 1;
    int rc, was_done = c->st.done;
    size_t text_before = c->st.answer.text.len;

    ev.event = event;
    ev.event_len = event_len;
    ev.data = d;
    ev.data_len = n;
    rc = lf_stream_event(&c->st, &ev, &delta, &delta_len);
    CHECK(rc >= LF_STREAM_CONTINUE && rc <= LF_STREAM_INVALID);
    CHECK(delta != NULL);
    CHECK(utf8_valid(delta, delta_len));
    if (rc != LF_STREAM_CONTINUE) CHECK(delta_len == 0);
    if (was_done) CHECK(rc == LF_STREAM_CONTINUE && delta_len == 0);
    if (rc == LF_STREAM_DONE) CHECK(c->st.done);
    CHECK(c->st.answer.text.len == text_before + delta_len);
    if (delta_len) {
        CHECK(memcmp(c->st.answer.text.ptr + text_before, delta, delta_len) == 0);
        CHECK(lf_buf_append(&c->deltas, delta, delta_len) == 0);
    }
    check_answer(&c->st.answer);
    check_error(&c->st.error);
    /* Once complete, a stream stays complete; before, it shows no call. */
    if (c->was_complete) CHECK(lf_stream_complete(&c->st));
    if (!lf_stream_complete(&c->st)) CHECK(c->st.answer.n_tool_calls == 0);
    c->was_complete = lf_stream_complete(&c->st);
}

static void stream_check_init(stream_check *c, lf_api api)
{
    lf_stream_init(&c->st, api);
    lf_buf_init(&c->deltas);
    c->was_complete = 0;
}

static void stream_check_free(stream_check *c)
{
    CHECK(c->deltas.len == c->st.answer.text.len);
    CHECK(c->deltas.len == 0 || memcmp(c->deltas.ptr, c->st.answer.text.ptr, c->deltas.len) == 0);
    lf_stream_free(&c->st);
    lf_buf_free(&c->deltas);
}

/* A stream: each line of text is an event's data (NUL-terminated, as lf_sse
 * hands data over), all into one state. */
static void stream_lines(stream_check *c, const char *text, size_t size, const char *event, size_t event_len)
{
    const char *nl, *p, *end = text + size;
    char *copy;

    for (p = text; p < end; p = nl + 1) {
        size_t n;
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        n = (size_t)(nl - p);
        copy = malloc(n + 1);
        CHECK(copy != NULL);
        if (n) memcpy(copy, p, n);
        copy[n] = '\0';
        stream_check_event(c, event, event_len, copy, n);
        free(copy);
    }
}

/* `text` is NUL-terminated at `size`, as lf_sse hands data over. */
static void fuzz_stream(const char *text, size_t size)
{
    const char *nl, *end = text + size;
    stream_check c;
    int api;

    for (api = 0; api <= 1; api++) {
        /* The whole input as one event's data. */
        stream_check_init(&c, (lf_api)api);
        stream_check_event(&c, "", 0, text, size);
        stream_check_free(&c);

        /* First line the event name, the rest its data. */
        nl = memchr(text, '\n', size);
        if (nl && nl - text <= 64) {
            size_t name_len = (size_t)(nl - text);
            char name[65];
            memcpy(name, text, name_len);
            name[name_len] = '\0';
            stream_check_init(&c, (lf_api)api);
            stream_check_event(&c, name, name_len, nl + 1, (size_t)(end - nl - 1));
            stream_check_free(&c);
        }

        /* A stream: events are the lines, all into one state. */
        stream_check_init(&c, (lf_api)api);
        stream_lines(&c, text, size, api ? "message" : "", api ? 7 : 0);
        stream_check_free(&c);
    }
}

/* The input (up to its first NUL) as every string of a request. */
static void fuzz_build(const char *text)
{
    lf_message msgs[3];
    lf_request_params p;
    lf_buf out, err, want;
    json_object *o, *m;
    int api, i;

    lf_buf_init(&out);
    lf_buf_init(&err);
    lf_buf_init(&want);
    CHECK(lf_utf8_append_sanitized(&want, text, strlen(text)) == 0);
    memset(msgs, 0, sizeof msgs);
    msgs[0].role = "system";
    msgs[1].role = "user";
    msgs[2].role = "assistant";
    for (i = 0; i < 3; i++) {
        msgs[i].content = text;
        msgs[i].content_len = strlen(text);
    }
    for (api = 0; api <= 1; api++) {
        memset(&p, 0, sizeof p);
        p.api = (lf_api)api;
        p.model = text[0] ? text : "m";
        p.messages = msgs;
        p.n_messages = 3;
        p.system = text;
        p.system_len = strlen(text);
        p.stream = api;
        CHECK(lf_wire_build_request(&p, &out, &err) == 0);
        o = standard_json(out.ptr, out.len);
        CHECK(o != NULL);
        /* An empty system prompt is left out (OpenAI: the leading one). */
        m = json_object_object_get(o, "messages");
        CHECK(m && json_object_array_length(m) == (api ? 2u : text[0] ? 4u : 3u));
        m = json_object_object_get(json_object_array_get_idx(m, api ? 0 : text[0] ? 2 : 1), "content");
        CHECK(m && (size_t)json_object_get_string_len(m) == want.len);
        CHECK(want.len == 0 || memcmp(json_object_get_string(m), want.ptr, want.len) == 0);
        json_object_put(o);
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
    lf_buf_free(&want);
}

/* The input (up to its first NUL) as a tool call's id, name and arguments
 * and its result's content, in both protocols: the body is strict JSON, the
 * id it carries (both in the call and in the result) is the mapped one. */
static void fuzz_build_tools(const char *text)
{
    lf_tool tool = { .name = "t" };
    lf_tool_call call = { .id = text, .name = text[0] ? text : "n", .arguments = text, .arguments_len = strlen(text) };
    lf_message msgs[3];
    lf_request_params p;
    lf_buf out, err, sent;
    json_object *o;
    int api, rc;

    memset(msgs, 0, sizeof msgs);
    msgs[0].role = "user";
    msgs[0].content = "hi";
    msgs[0].content_len = 2;
    msgs[1].role = "assistant";
    msgs[1].tool_calls = &call;
    msgs[1].n_tool_calls = 1;
    msgs[2].role = "tool";
    msgs[2].tool_call_id = text;
    msgs[2].content = text;
    msgs[2].content_len = strlen(text);
    msgs[2].is_error = text[0] & 1;
    lf_buf_init(&out);
    lf_buf_init(&err);
    lf_buf_init(&sent);
    CHECK(lf_wire_call_id(text, strlen(text), &sent) == 0);
    CHECK(sent.len >= 1 && sent.len <= LF_WIRE_CALL_ID_MAX);
    for (api = 0; api <= 1; api++) {
        memset(&p, 0, sizeof p);
        p.api = (lf_api)api;
        p.model = "m";
        p.messages = msgs;
        p.n_messages = 3;
        p.tools = &tool;
        p.n_tools = 1;
        rc = lf_wire_build_request(&p, &out, &err);
        CHECK(rc == 0 || rc == LF_WIRE_BAD_TRANSCRIPT);
        check_buf(&err);
        /* An empty id is the only broken transcript here. */
        CHECK((rc == LF_WIRE_BAD_TRANSCRIPT) == (text[0] == '\0'));
        if (rc != 0) {
            CHECK(out.len == 0 && err.len > 0);
            continue;
        }
        o = standard_json(out.ptr, out.len);
        CHECK(o != NULL);
        CHECK(strstr(out.ptr, sent.ptr) != NULL);
        json_object_put(o);
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
    lf_buf_free(&sent);
}

/* The first 17 bytes as temperature, max_tokens and flags: non-finite
 * temperatures are refused, finite ones come back exactly, max_tokens and
 * stream_options follow the rules of each API. */
static void fuzz_build_params(const uint8_t *data, size_t size)
{
    lf_message msg[1] = { { "user", "hi", 2 } };
    lf_request_params p;
    lf_buf out, err;
    json_object *o, *v;
    double t;
    int64_t mt;
    int rc;

    if (size < 17) return;
    memcpy(&t, data, sizeof t);
    memcpy(&mt, data + 8, sizeof mt);
    memset(&p, 0, sizeof p);
    p.api = (lf_api)(data[16] & 1);
    p.stream = (data[16] >> 1) & 1;
    p.has_temperature = (data[16] >> 2) & 1;
    p.temperature = t;
    p.max_tokens = (long)mt;
    p.model = "m";
    p.messages = msg;
    p.n_messages = 1;
    lf_buf_init(&out);
    lf_buf_init(&err);
    rc = lf_wire_build_request(&p, &out, &err);
    if (p.has_temperature && !isfinite(t)) {
        CHECK(rc == -1 && out.len == 0 && err.len > 0);
    } else {
        CHECK(rc == 0 && err.len == 0);
        o = standard_json(out.ptr, out.len);
        CHECK(o != NULL);
        v = json_object_object_get(o, "temperature");
        if (p.has_temperature) CHECK(v && json_object_get_double(v) == t);
        else CHECK(v == NULL);
        v = json_object_object_get(o, "max_tokens");
        if (p.max_tokens > 0) CHECK(v && json_object_get_int64(v) == p.max_tokens);
        else if (p.api == LF_API_ANTHROPIC) CHECK(v && json_object_get_int64(v) == LF_ANTHROPIC_DEFAULT_MAX_TOKENS);
        else CHECK(v == NULL);
        v = json_object_object_get(o, "stream_options");
        CHECK((v != NULL) == (p.api == LF_API_OPENAI && p.stream));
        CHECK(json_object_get_boolean(json_object_object_get(o, "stream")) == p.stream);
        json_object_put(o);
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
}

/* ------------------------------------------------------------- Gemini */

static int same_bytes(const lf_buf *x, const lf_buf *y)
{
    return x->len == y->len && (!x->len || memcmp(x->ptr, y->ptr, x->len) == 0);
}

/* An event of text and counts is read from its text, every other from
 * json-c's tree: the same outcome. An empty promptFeedback blocks nothing
 * and sends the event to the tree reader. */
static void fuzz_gemini_same_as_tree(const char *text, size_t size)
{
    stream_check plain, tree;
    lf_buf forced;
    size_t open = 0, next;

    while (open < size && lf_wire_is_ws(text[open])) open++;
    for (next = open + 1; next < size && lf_wire_is_ws(text[next]); next++) continue;
    if (next >= size || text[open] != '{' || text[next] != '"') return;
    lf_buf_init(&forced);
    CHECK(lf_buf_append(&forced, text, open + 1) == 0 && lf_buf_append_str(&forced, "\"promptFeedback\":{},") == 0 &&
          lf_buf_append(&forced, text + open + 1, size - open - 1) == 0);
    stream_check_init(&plain, LF_API_GEMINI);
    stream_check_init(&tree, LF_API_GEMINI);
    stream_check_event(&plain, "", 0, text, size);
    stream_check_event(&tree, "", 0, forced.ptr, forced.len);
    CHECK(same_bytes(&plain.deltas, &tree.deltas) && same_bytes(&plain.st.answer.model, &tree.st.answer.model) &&
          same_bytes(&plain.st.answer.id, &tree.st.answer.id));
    CHECK(plain.st.answer.input_tokens == tree.st.answer.input_tokens &&
          plain.st.answer.output_tokens == tree.st.answer.output_tokens &&
          plain.st.answer.cached_input_tokens == tree.st.answer.cached_input_tokens &&
          plain.st.has_usage == tree.st.has_usage && plain.st.finished == tree.st.finished);
    stream_check_free(&plain);
    stream_check_free(&tree);
    lf_buf_free(&forced);
}

/* The input as a Gemini answer (plain, embeddings), as one stream event and
 * as a stream of lines: the same promises as the other protocols'. */
static void fuzz_gemini_parse(const char *text, size_t size)
{
    lf_answer a;
    lf_wire_error e;
    stream_check c;
    int rc;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    rc = lf_wire_parse_response(LF_API_GEMINI, text, size, &a, &e);
    CHECK(rc == LF_WIRE_OK || rc == LF_WIRE_INVALID || rc == LF_WIRE_ERROR_BODY);
    check_answer(&a);
    check_error(&e);
    if (rc != LF_WIRE_OK) CHECK(a.text.len == 0 && a.reasoning.len == 0 && a.n_tool_calls == 0);
    if (rc == LF_WIRE_OK && a.n_tool_calls) CHECK(strcmp(a.finish_reason.ptr, LF_FINISH_TOOL_CALLS) == 0);
    rc = lf_wire_parse_embeddings_for(LF_API_GEMINI, text, size, 2, &a, &e);
    if (rc == LF_WIRE_OK) CHECK(a.vectors && a.n_vectors == 2 && a.dims > 0);
    else CHECK(!a.vectors && a.n_vectors == 0);
    lf_answer_free(&a);
    lf_wire_error_free(&e);

    stream_check_init(&c, LF_API_GEMINI);
    stream_check_event(&c, "", 0, text, size);
    stream_check_free(&c);
    stream_check_init(&c, LF_API_GEMINI);
    stream_lines(&c, text, size, "", 0);
    stream_check_free(&c);
    fuzz_gemini_same_as_tree(text, size);
}

/* The input (up to its first NUL) as every string of a Gemini request: texts,
 * a call's name, arguments and signature, a result, the system text, a tool's
 * description, the model in the path, Vertex's project, Azure's deployment
 * and api-version. The body is strict JSON with the texts in it; the URL
 * holds no byte that would end a segment. */
static void fuzz_gemini_build(const char *text)
{
    size_t len = strlen(text), i;
    lf_tool tool = { .name = "t", .description = text };
    lf_tool_call call = { .id = "c1", .name = "t", .arguments = text, .arguments_len = len, .signature = text,
                          .signature_len = len };
    lf_message msgs[5];
    lf_request_params p;
    lf_endpoint e;
    lf_buf out, err, want;
    json_object *o, *t;
    int rc, layout;

    memset(msgs, 0, sizeof msgs);
    msgs[0] = (lf_message){ .role = "system", .content = text, .content_len = len };
    msgs[1] = (lf_message){ .role = "user", .content = text, .content_len = len };
    msgs[2] = (lf_message){ .role = "assistant", .content = text, .content_len = len, .tool_calls = &call,
                            .n_tool_calls = 1, .reasoning = text, .reasoning_len = len,
                            .reasoning_api = LF_API_GEMINI, .reasoning_origin = "h" };
    msgs[3] = (lf_message){ .role = "tool", .content = text, .content_len = len, .tool_call_id = "c1",
                            .is_error = len & 1 };
    msgs[4] = (lf_message){ .role = "user", .content = text, .content_len = len };
    lf_buf_init(&out);
    lf_buf_init(&err);
    lf_buf_init(&want);
    CHECK(lf_utf8_append_sanitized(&want, text, len) == 0);
    memset(&p, 0, sizeof p);
    p.api = LF_API_GEMINI;
    p.model = text[0] ? text : "m";
    p.messages = msgs;
    p.tools = &tool;
    p.n_tools = 1;
    p.origin = (len & 2) ? "h" : "other";
    p.json_mode = (len >> 2) & 1;
    for (p.n_messages = 2; p.n_messages <= 5; p.n_messages += 3) {
        CHECK(lf_wire_build_request(&p, &out, &err) == 0);
        o = standard_json(out.ptr, out.len);
        CHECK(o != NULL);
        /* The user's text, sanitized, is the first content's text. */
        t = json_object_object_get(json_object_array_get_idx(
                json_object_object_get(json_object_array_get_idx(json_object_object_get(o, "contents"), 0), "parts"), 0),
            "text");
        CHECK(t && (size_t)json_object_get_string_len(t) == want.len);
        CHECK(want.len == 0 || memcmp(json_object_get_string(t), want.ptr, want.len) == 0);
        json_object_put(o);
    }
    for (layout = 0; layout < 3; layout++) {
        /* Gemini on Google AI and on Vertex AI, chat completions on an Azure
         * deployment. */
        static const lf_layout layouts[] = { LF_LAYOUT_PLAIN, LF_LAYOUT_VERTEX, LF_LAYOUT_AZURE_DEPLOYMENT };

        e = (lf_endpoint){ .api = layout == 2 ? LF_API_OPENAI : LF_API_GEMINI, .layout = layouts[layout],
                           .base_url = "", .model = p.model, .api_version = text, .vertex = { text, "global" },
                           .stream = layout == 1 };
        rc = lf_wire_url(&e, &out, &err);
        CHECK(rc == 0 || (rc == -1 && err.len > 0));
        if (rc) continue;
        for (i = 0; i < out.len; i++) {
            char ch = out.ptr[i];

            CHECK((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  strchr("-._~@%:/?=", ch) != NULL);
        }
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
    lf_buf_free(&want);
}

static void fuzz_gemini(const char *text, size_t size)
{
    fuzz_gemini_parse(text, size);
    fuzz_gemini_build(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    /* An exact-size copy: a read past `size` is an ASan report. */
    fuzz_response(data, size);

    text = malloc(size + 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    fuzz_stream(text, size);
    fuzz_build(text);
    fuzz_build_tools(text);
    fuzz_gemini(text, size);
    free(text);
    fuzz_build_params(data, size);
    return 0;
}
