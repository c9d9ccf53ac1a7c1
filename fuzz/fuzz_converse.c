/* libFuzzer target for Bedrock Converse in the wire layer: each input is a
 * Converse answer body (plain, and a schema's), an error body, and a
 * ConverseStream: its lines are messages, "TYPE PAYLOAD" (an :event-type),
 * or "!TYPE PAYLOAD" (an exception of that :exception-type), read as a
 * chat's and as a schema's stream; then the content of a request, and a
 * model id in its URL. Besides the sanitizers it checks what the wire
 * layer promises: valid UTF-8 out, text equal to the deltas handed out, no
 * call before the stream completes, a built body that is strict JSON, a
 * path made only of unreserved bytes and escapes that decode back to the id,
 * sent as lf_wire_url built it, and signed escaped once more where libcurl
 * does not do that itself.
 * (The framing itself is fuzz_eventstream's.)
 *
 *   ruby fuzz/seed_converse.rb spec/fixtures/recorded tmp/fuzz/corpus_converse
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_eventstream.h"
#include "lf_json_read.h"
#include "lf_prepare.h"
#include "lf_transport.h"
#include "lf_utf8.h"
#include "lf_wire.h"

#include "lf_banned.h"

#include "fuzz_check.h"

/* Bedrock's input_tokens is the sum with the cached part: never less. */
static void check_converse_answer(const lf_answer *a)
{
    check_answer(a);
    if (a->input_tokens >= 0 && a->cached_input_tokens >= 0) CHECK(a->cached_input_tokens <= a->input_tokens);
}

static void fuzz_answer(const char *data, size_t size)
{
    lf_answer a;
    lf_wire_error e;
    int tool, rc;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    for (tool = 0; tool <= 1; tool++) {
        rc = (tool ? lf_wire_parse_tool_response : lf_wire_parse_response)(LF_API_BEDROCK, data, size, &a, &e);
        CHECK(rc == LF_WIRE_OK || rc == LF_WIRE_INVALID || rc == LF_WIRE_ERROR_BODY);
        check_converse_answer(&a);
        check_error(&e);
        if (rc != LF_WIRE_OK) CHECK(a.text.len == 0 && a.input_tokens == -1 && a.n_tool_calls == 0);
        if (tool) CHECK(a.n_tool_calls == 0);
    }
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

/* The lines of text as messages, into one stream. */
static void fuzz_stream(const char *text, size_t size, int tool_input)
{
    const char *p, *nl, *end = text + size;
    lf_stream_state s;
    lf_buf deltas;
    int was_complete = 0;

    lf_stream_init(&s, LF_API_BEDROCK);
    s.tool_input = tool_input;
    lf_buf_init(&deltas);
    for (p = text; p < end; p = nl + 1) {
        const char *sp, *delta = NULL;
        size_t n, delta_len = 1, before = s.answer.text.len;
        lf_es_message m;
        int rc, was_done = s.done;

        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        n = (size_t)(nl - p);
        sp = memchr(p, ' ', n);
        memset(&m, 0, sizeof m);
        if (n && p[0] == '!') {
            m.message_type = (lf_es_text){ "exception", 9 };
            m.exception_type = (lf_es_text){ p + 1, sp ? (size_t)(sp - p - 1) : n - 1 };
        } else {
            m.message_type = (lf_es_text){ "event", 5 };
            m.event_type = (lf_es_text){ p, sp ? (size_t)(sp - p) : n };
        }
        m.payload = sp ? sp + 1 : nl;
        m.payload_len = sp ? (size_t)(nl - sp - 1) : 0;
        rc = lf_stream_message(&s, &m, &delta, &delta_len);
        CHECK(rc >= LF_STREAM_CONTINUE && rc <= LF_STREAM_INVALID);
        CHECK(delta != NULL && utf8_valid(delta, delta_len));
        if (rc != LF_STREAM_CONTINUE) CHECK(delta_len == 0);
        if (was_done) CHECK(rc == LF_STREAM_CONTINUE && delta_len == 0);
        if (rc == LF_STREAM_DONE) CHECK(s.done);
        CHECK(s.answer.text.len == before + delta_len);
        if (delta_len) CHECK(lf_buf_append(&deltas, delta, delta_len) == 0);
        check_converse_answer(&s.answer);
        check_error(&s.error);
        if (was_complete) CHECK(lf_stream_complete(&s));
        if (!lf_stream_complete(&s) || tool_input) CHECK(s.answer.n_tool_calls == 0);
        was_complete = lf_stream_complete(&s);
        if (rc == LF_STREAM_ERROR || rc == LF_STREAM_INVALID) break;
    }
    CHECK(deltas.len == s.answer.text.len);
    CHECK(deltas.len == 0 || memcmp(deltas.ptr, s.answer.text.ptr, deltas.len) == 0);
    lf_stream_free(&s);
    lf_buf_free(&deltas);
}

/* The input (up to its first NUL) as every string of a request: texts, a
 * call's id, name and arguments, a result, a document's name. */
static void fuzz_build(const char *text)
{
    lf_attachment doc = { "application/pdf", text, "JVBERi0=", 8, NULL };
    lf_tool tool = { .name = "t", .description = text };
    lf_tool_call call = { .id = text[0] ? text : "i", .name = "t", .arguments = text, .arguments_len = strlen(text) };
    lf_message msgs[5];
    lf_request_params p;
    lf_buf out, err;
    json_object *o;

    memset(msgs, 0, sizeof msgs);
    msgs[0] = (lf_message){ .role = "system", .content = text, .content_len = strlen(text) };
    msgs[1] = (lf_message){ .role = "user", .content = text, .content_len = strlen(text), .attachments = &doc,
                            .n_attachments = 1 };
    msgs[2] = (lf_message){ .role = "assistant", .content = text, .content_len = strlen(text), .tool_calls = &call,
                            .n_tool_calls = 1 };
    msgs[3] = (lf_message){ .role = "tool", .content = text, .content_len = strlen(text), .tool_call_id = call.id };
    msgs[4] = (lf_message){ .role = "user", .content = text, .content_len = strlen(text) };
    memset(&p, 0, sizeof p);
    p.api = LF_API_BEDROCK;
    p.model = "m";
    p.messages = msgs;
    p.n_messages = 5;
    p.tools = &tool;
    p.n_tools = 1;
    p.json_mode = text[0] & 1;
    lf_buf_init(&out);
    lf_buf_init(&err);
    CHECK(lf_wire_build_request(&p, &out, &err) == 0);
    CHECK(lf_utf8_is_valid(out.ptr, out.len));
    o = lf_json_parse(out.ptr, out.len);
    CHECK(o != NULL);
    /* Never two messages of one role in a row, never an empty one. */
    {
        json_object *m = json_object_object_get(o, "messages");
        size_t i, n = json_object_array_length(m);
        const char *prev = "";

        CHECK(n >= 2);
        for (i = 0; i < n; i++) {
            json_object *msg = json_object_array_get_idx(m, i);
            const char *role = json_object_get_string(json_object_object_get(msg, "role"));

            CHECK(strcmp(role, prev) != 0);
            CHECK(json_object_array_length(json_object_object_get(msg, "content")) > 0);
            prev = role;
        }
    }
    json_object_put(o);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static int unhex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Appends the %XX-escaped text at s (n bytes) decoded; every byte not an
 * escape must be RFC 3986's unreserved, or one of keep. */
static void decode(lf_buf *out, const char *s, size_t n, const char *keep)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char c = s[i];

        if (c == '%') {
            CHECK(i + 2 < n && unhex(s[i + 1]) >= 0 && unhex(s[i + 2]) >= 0);
            CHECK(lf_buf_append_char(out, (char)(unhex(s[i + 1]) * 16 + unhex(s[i + 2]))) == 0);
            i += 2;
        } else {
            CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '.' || c == '_' || c == '~' || (c && strchr(keep, c)));
            CHECK(lf_buf_append_char(out, c) == 0);
        }
    }
}

/* The input as a model id: lf_wire_url's path is unreserved bytes and %XX
 * only, and decodes back to the id between "/model/" and "/converse". The
 * prepared request sends that path as it was built; where it signs another
 * (a libcurl before 8.14), that one is it escaped once more. */
static void fuzz_path(const char *data, size_t size)
{
    static const char host[] = "http://127.0.0.1:9";
    lf_buf id, url, back, err;
    lf_endpoint e = { .api = LF_API_BEDROCK, .base_url = "" };
    lf_message msg = { .role = "user", .content = "hi", .content_len = 2 };
    lf_request_params params = { .messages = &msg, .n_messages = 1 };
    lf_target t = { .api = LF_API_BEDROCK, .base_url = host, .region = "us-east-1", .aws_access_key_id = "AKID",
                    .aws_secret_access_key = "secret" };
    lf_prepared_call pc;
    const char *path, *sent;
    size_t start = strlen("/model/"), stop;

    lf_buf_init(&id);
    lf_buf_init(&url);
    lf_buf_init(&back);
    lf_buf_init(&err);
    CHECK(lf_buf_set(&id, data, size) == 0);
    e.model = t.model = lf_buf_cstr(&id);   /* up to its first NUL */
    if (!e.model[0]) {
        CHECK(lf_wire_url(&e, &url, &err) == -1 && url.len == 0 && strcmp(lf_buf_cstr(&err), "model is missing") == 0);
        goto done;
    }
    CHECK(lf_wire_url(&e, &url, NULL) == 0);
    path = lf_buf_cstr(&url);
    stop = url.len - strlen("/converse");
    CHECK(strncmp(path, "/model/", start) == 0 && strcmp(path + stop, "/converse") == 0);
    decode(&back, path + start, stop - start, "");
    CHECK(strcmp(lf_buf_cstr(&back), e.model) == 0);

    lf_prepared_call_init(&pc);
    CHECK(lf_prepare_target(&pc, 0, &t, &params, &err) == 0);
    CHECK(strncmp(pc.target[0].url, host, strlen(host)) == 0);
    sent = pc.target[0].request_target ? pc.target[0].request_target : pc.target[0].url + strlen(host);
    CHECK(strcmp(sent, path) == 0);
    if (pc.target[0].request_target) {
        lf_buf_clear(&back);
        decode(&back, pc.target[0].url + strlen(host), strlen(pc.target[0].url + strlen(host)), "/");
        CHECK(strcmp(lf_buf_cstr(&back), path) == 0 && strchr(path, '%'));
    } else {
        CHECK(lf_transport_sigv4_escapes_path() || !strchr(path, '%'));
    }
    lf_prepared_call_free(&pc);
done:
    lf_buf_free(&id);
    lf_buf_free(&url);
    lf_buf_free(&back);
    lf_buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    /* An exact-size copy: a read past `size` is an ASan report. */
    fuzz_answer((const char *)data, size);
    text = malloc(size + 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    fuzz_stream(text, size, 0);
    fuzz_stream(text, size, 1);
    fuzz_build(text);
    fuzz_path(text, size);
    free(text);
    return 0;
}
