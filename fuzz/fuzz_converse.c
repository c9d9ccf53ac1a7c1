/* libFuzzer target for Bedrock Converse in the wire layer: each input is a
 * Converse answer body (plain, and a schema's), an error body, and a
 * ConverseStream: its lines are messages, "TYPE PAYLOAD" (an :event-type),
 * or "!TYPE PAYLOAD" (an exception of that :exception-type), read as a
 * chat's and as a schema's stream; then the content of a request, and a
 * model id in its path. Besides the sanitizers it checks what the wire
 * layer promises: valid UTF-8 out, text equal to the deltas handed out, no
 * call before the stream completes, a built body that is strict JSON, a
 * path made only of unreserved bytes and escapes that decode back to the id.
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
#include "lf_utf8.h"
#include "lf_wire.h"

#include "lf_banned.h"

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)

#include "../test/c/utf8_ref.h"

static void check_buf(const lf_buf *b)
{
    CHECK(utf8_valid(lf_buf_cstr(b), b->len));
    CHECK(b->len == 0 || b->ptr[b->len] == '\0');
}

static void check_answer(const lf_answer *a)
{
    size_t i;

    check_buf(&a->text);
    check_buf(&a->finish_reason);
    CHECK(a->input_tokens >= -1 && a->output_tokens >= -1);
    CHECK(a->cached_input_tokens >= -1 && a->cache_write_tokens >= -1);
    if (a->input_tokens >= 0 && a->cached_input_tokens >= 0) CHECK(a->cached_input_tokens <= a->input_tokens);
    for (i = 0; i < a->n_tool_calls; i++) {
        check_buf(&a->tool_calls[i].id);
        check_buf(&a->tool_calls[i].name);
        check_buf(&a->tool_calls[i].arguments);
        CHECK(a->tool_calls[i].arguments.len > 0);
    }
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
        check_answer(&a);
        check_buf(&e.type);
        check_buf(&e.message);
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
        check_answer(&s.answer);
        check_buf(&s.error.type);
        check_buf(&s.error.message);
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

/* The input as a model id: its path is unreserved bytes and %XX only, and
 * decodes back to the id between "/model/" and "/converse". */
static void fuzz_path(const char *data, size_t size)
{
    lf_buf id, path, back;
    lf_request_params p;
    size_t i, start = strlen("/model/"), stop;

    lf_buf_init(&id);
    lf_buf_init(&path);
    lf_buf_init(&back);
    CHECK(lf_buf_set(&id, data, size) == 0);
    memset(&p, 0, sizeof p);
    p.api = LF_API_BEDROCK;
    p.model = lf_buf_cstr(&id);   /* up to its first NUL */
    CHECK(lf_wire_request_path(&p, &path) == 0);
    stop = path.len - strlen("/converse");
    CHECK(strncmp(path.ptr, "/model/", start) == 0 && strcmp(path.ptr + stop, "/converse") == 0);
    for (i = start; i < stop; i++) {
        char c = path.ptr[i];

        if (c == '%') {
            CHECK(i + 2 < stop && unhex(path.ptr[i + 1]) >= 0 && unhex(path.ptr[i + 2]) >= 0);
            CHECK(lf_buf_append_char(&back, (char)(unhex(path.ptr[i + 1]) * 16 + unhex(path.ptr[i + 2]))) == 0);
            i += 2;
        } else {
            CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '.' || c == '_' || c == '~');
            CHECK(lf_buf_append_char(&back, c) == 0);
        }
    }
    CHECK(strcmp(lf_buf_cstr(&back), p.model) == 0);
    lf_buf_free(&id);
    lf_buf_free(&path);
    lf_buf_free(&back);
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
