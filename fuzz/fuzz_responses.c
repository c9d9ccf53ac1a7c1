/* libFuzzer target for the Responses API's parsers and its request builder:
 * each input is a response body, single events (with and without an event
 * name), and a stream whose events are its lines; then it is a reasoning
 * state sent back. Besides the sanitizers, it checks what the wire layer
 * promises: valid UTF-8 out, text equal to the deltas handed out, calls and
 * reasoning state only once a stream completed, a reasoning state that is a
 * JSON array of objects (what the next request re-sends), and a built
 * request that is strict JSON and carries that state only where it goes.
 *
 *   mkdir -p tmp/fuzz && ruby fuzz/seed_responses.rb
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -Iext/llm_failover/core $(pkg-config --cflags json-c) -o tmp/fuzz/fuzz_responses \
 *     fuzz/fuzz_responses.c ext/llm_failover/core/lf_*.c \
 *     $(pkg-config --libs libcurl json-c) -lm
 *   tmp/fuzz/fuzz_responses -max_total_time=60 tmp/fuzz/corpus_responses
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_json_read.h"
#include "lf_sse.h"
#include "lf_utf8.h"
#include "lf_wire.h"

#include "lf_banned.h"

#include "fuzz_check.h"

/* Empty, or a JSON array of objects: what lf_message.reasoning must be. */
static void check_reasoning(const lf_buf *r)
{
    json_object *o;
    size_t i;

    check_buf(r);
    if (!r->len) return;
    o = lf_json_parse(r->ptr, r->len);
    CHECK(o && json_object_is_type(o, json_type_array) && json_object_array_length(o) > 0);
    for (i = 0; i < json_object_array_length(o); i++)
        CHECK(json_object_is_type(json_object_array_get_idx(o, i), json_type_object));
    json_object_put(o);
}

/* The common checks, and the reasoning state an array of objects. */
static void check_responses_answer(const lf_answer *a)
{
    check_answer(a);
    check_reasoning(&a->reasoning);
}

/* The state re-sent: a request that is strict JSON, holding the state's
 * items when the origin matches, none of it when not. */
static void check_resent(const lf_buf *reasoning)
{
    lf_message m[2] = { { .role = "user", .content = "q", .content_len = 1 },
                        { .role = "assistant", .content = "a", .content_len = 1, .reasoning = reasoning->ptr,
                          .reasoning_len = reasoning->len, .reasoning_api = LF_API_RESPONSES, .reasoning_origin = "o" } };
    lf_request_params p = { .api = LF_API_RESPONSES, .model = "m", .messages = m, .n_messages = 2, .origin = "o",
                            .encrypted_reasoning = 1 };
    json_object *o, *state, *input;
    lf_buf out, err;
    int other;

    if (!reasoning->len) return;
    lf_buf_init(&out);
    lf_buf_init(&err);
    state = lf_json_parse(reasoning->ptr, reasoning->len);
    for (other = 0; other <= 1; other++) {
        p.origin = other ? "elsewhere" : "o";
        CHECK(lf_wire_build_request(&p, &out, &err) == 0);
        CHECK(utf8_valid(out.ptr, out.len));
        o = lf_json_parse(out.ptr, out.len);
        CHECK(o != NULL);
        input = json_object_object_get(o, "input");
        /* user, [items,] assistant */
        CHECK(json_object_array_length(input) == 2 + (other ? 0 : json_object_array_length(state)));
        if (!other) CHECK(json_object_equal(json_object_array_get_idx(input, 1), json_object_array_get_idx(state, 0)));
        json_object_put(o);
    }
    json_object_put(state);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void fuzz_response(const uint8_t *data, size_t size)
{
    lf_answer a;
    lf_wire_error e;
    int rc;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    rc = lf_wire_parse_response(LF_API_RESPONSES, (const char *)data, size, &a, &e);
    CHECK(rc == LF_WIRE_OK || rc == LF_WIRE_INVALID || rc == LF_WIRE_ERROR_BODY);
    check_responses_answer(&a);
    check_error(&e);
    if (rc != LF_WIRE_OK) CHECK(a.text.len == 0 && a.reasoning.len == 0 && a.n_tool_calls == 0);
    if (rc != LF_WIRE_ERROR_BODY) CHECK(e.type.len == 0 && e.code.len == 0 && e.message.len == 0);
    check_resent(&a.reasoning);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

typedef struct stream_check {
    lf_stream_state st;
    lf_buf deltas;
    int was_complete;
} stream_check;

static void stream_event(stream_check *c, const char *event, size_t event_len, const char *d, size_t n)
{
    lf_sse_event ev = { event, event_len, d, n };
    const char *delta = NULL;
    size_t delta_len = 1, before = c->st.answer.text.len;
    int rc = lf_stream_event(&c->st, &ev, &delta, &delta_len);

    CHECK(rc >= LF_STREAM_CONTINUE && rc <= LF_STREAM_INVALID);
    CHECK(delta && utf8_valid(delta, delta_len));
    if (rc != LF_STREAM_CONTINUE) CHECK(delta_len == 0);
    CHECK(c->st.answer.text.len == before + delta_len);
    if (delta_len) CHECK(lf_buf_append(&c->deltas, delta, delta_len) == 0);
    check_responses_answer(&c->st.answer);
    /* Calls and reasoning state appear only when the stream completes. */
    if (!lf_stream_complete(&c->st)) CHECK(c->st.answer.n_tool_calls == 0 && c->st.answer.reasoning.len == 0);
    if (c->was_complete) CHECK(lf_stream_complete(&c->st));
    c->was_complete = lf_stream_complete(&c->st);
}

static void stream_init(stream_check *c)
{
    lf_stream_init(&c->st, LF_API_RESPONSES);
    lf_buf_init(&c->deltas);
    c->was_complete = 0;
}

static void stream_free(stream_check *c)
{
    CHECK(c->deltas.len == c->st.answer.text.len);
    CHECK(!c->deltas.len || memcmp(c->deltas.ptr, c->st.answer.text.ptr, c->deltas.len) == 0);
    check_resent(&c->st.answer.reasoning);
    lf_stream_free(&c->st);
    lf_buf_free(&c->deltas);
}

/* `text` is NUL-terminated at `size`, as lf_sse hands data over. */
static void fuzz_stream(const char *text, size_t size)
{
    const char *nl, *p, *end = text + size;
    stream_check c;

    stream_init(&c);
    stream_event(&c, "", 0, text, size);
    stream_free(&c);

    nl = memchr(text, '\n', size);
    if (nl && nl - text <= 64) {
        char name[65];
        size_t n = (size_t)(nl - text);

        memcpy(name, text, n);
        name[n] = '\0';
        stream_init(&c);
        stream_event(&c, name, n, nl + 1, (size_t)(end - nl - 1));
        stream_free(&c);
    }

    /* A stream: each line one event's data. */
    stream_init(&c);
    for (p = text; p < end; p = nl + 1) {
        size_t n;
        char *copy;

        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        n = (size_t)(nl - p);
        copy = malloc(n + 1);
        CHECK(copy != NULL);
        if (n) memcpy(copy, p, n);
        copy[n] = '\0';
        stream_event(&c, "", 0, copy, n);
        free(copy);
    }
    stream_free(&c);
}

/* The input as a reasoning state handed back by a host: refused unless it is
 * a JSON array of objects, and then re-sent item for item. */
static void fuzz_state(const char *text, size_t size)
{
    lf_message m[2] = { { .role = "user", .content = "q", .content_len = 1 },
                        { .role = "assistant", .content = "a", .content_len = 1, .reasoning = text,
                          .reasoning_len = size, .reasoning_api = LF_API_RESPONSES } };
    lf_request_params p = { .api = LF_API_RESPONSES, .model = "m", .messages = m, .n_messages = 2,
                            .encrypted_reasoning = 1 };
    json_object *o = lf_json_parse(text, size), *built;
    lf_buf out, err;
    size_t i;
    int ok = o && json_object_is_type(o, json_type_array), rc;

    for (i = 0; ok && i < json_object_array_length(o); i++)
        ok = json_object_is_type(json_object_array_get_idx(o, i), json_type_object);
    lf_buf_init(&out);
    lf_buf_init(&err);
    rc = lf_wire_build_request(&p, &out, &err);
    if (!size) {
        CHECK(rc == 0);
    } else {
        CHECK(rc == (ok ? 0 : -1));
    }
    if (rc == 0) {
        CHECK(utf8_valid(out.ptr, out.len));
        built = lf_json_parse(out.ptr, out.len);
        CHECK(built != NULL);
        json_object_put(built);
    }
    json_object_put(o);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    fuzz_response(data, size);
    text = malloc(size + 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    fuzz_stream(text, size);
    fuzz_state(text, size);
    free(text);
    return 0;
}
