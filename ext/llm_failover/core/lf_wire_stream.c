/* Stream events of the two protocols, one SSE event at a time, read by
 * json-c. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_internal.h"

#include "lf_banned.h"

void lf_stream_init(lf_stream_state *s, lf_api api)
{
    s->api = api;
    lf_answer_init(&s->answer);
    lf_wire_error_init(&s->error);
    s->done = 0;
    s->finished = 0;
    s->has_usage = 0;
    s->delta_at = 0;
    s->tool_input = 0;
}

void lf_stream_free(lf_stream_state *s)
{
    lf_answer_free(&s->answer);
    lf_wire_error_free(&s->error);
}

int lf_stream_complete(const lf_stream_state *s)
{
    return s->done || s->finished;
}

/* New text, sanitized, straight onto the answer (lf_stream_took takes it
 * back off when the event fails). */
static int lf_stream_add_text(lf_stream_state *s, json_object *text)
{
    if (!text || !json_object_is_type(text, json_type_string)) return 0;
    if (lf_utf8_append_sanitized(&s->answer.text, json_object_get_string(text),
                                 (size_t)json_object_get_string_len(text)) != 0)
        return -1;
    return 0;
}

static int lf_stream_openai(lf_stream_state *s, json_object *root)
{
    json_object *choices, *choice, *usage;

    if (json_object_is_type(root, json_type_array) || lf_json_get(root, "error")) {
        /* {"error": {...}} inside a 200 stream (Gemini may wrap it in []). */
        if (!lf_wire_error_from_json(root, &s->error)) return LF_STREAM_INVALID;
        return LF_STREAM_ERROR;
    }
    if (lf_json_take_string(root, "model", &s->answer.model) != 0 ||
        lf_json_take_string(root, "id", &s->answer.id) != 0)
        return LF_STREAM_INVALID;
    choices = lf_json_get(root, "choices");
    if (choices && !json_object_is_type(choices, json_type_array)) return LF_STREAM_INVALID;
    /* The include_usage chunk has "choices": [] and nothing to take from it. */
    choice = choices ? lf_wire_first_choice(choices) : NULL;
    if (choice && json_object_is_type(choice, json_type_object)) {
        if (lf_stream_add_text(s, lf_json_get(lf_json_get(choice, "delta"), "content")) != 0)
            return LF_STREAM_INVALID;
        if (lf_json_get_typed(choice, "finish_reason", json_type_string)) {
            if (lf_json_take_string(choice, "finish_reason", &s->answer.finish_reason) != 0)
                return LF_STREAM_INVALID;
            s->finished = 1;
        }
    }
    /* DeepSeek and Mistral put usage on the finish_reason chunk, OpenAI on
     * a last chunk of its own; "usage": null elsewhere. */
    usage = lf_json_get(root, "usage");
    if (lf_wire_openai_usage(usage, &s->answer)) s->has_usage = 1;
    return LF_STREAM_CONTINUE;
}

static int lf_stream_anthropic(lf_stream_state *s, json_object *root, const lf_sse_event *ev)
{
    json_object *type, *msg, *delta, *block;
    const char *t;
    size_t tn;

    if (!json_object_is_type(root, json_type_object)) {
        if (lf_wire_error_from_json(root, &s->error)) return LF_STREAM_ERROR;
        return LF_STREAM_INVALID;
    }
    /* The data's own "type" is what the event is; the SSE name only helps
     * when a proxy dropped it. */
    type = lf_json_get_typed(root, "type", json_type_string);
    if (type) {
        t = json_object_get_string(type);
        tn = (size_t)json_object_get_string_len(type);
    } else if (ev->event && ev->event_len) {
        t = ev->event;
        tn = ev->event_len;
    } else if (lf_json_get(root, "error")) {
        t = "error";
        tn = 5;
    } else {
        return LF_STREAM_INVALID;
    }

    if (lf_bytes_are(t, tn, "message_start")) {
        msg = lf_json_get_typed(root, "message", json_type_object);
        if (lf_json_take_string(msg, "model", &s->answer.model) != 0 ||
            lf_json_take_string(msg, "id", &s->answer.id) != 0)
            return LF_STREAM_INVALID;
        if (lf_wire_anthropic_usage(lf_json_get(msg, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "content_block_start")) {
        /* A text block starts with "text": "" in practice; take it anyway. */
        block = lf_json_get(root, "content_block");
        if (lf_json_string_is(block, "type", "text") &&
            lf_stream_add_text(s, lf_json_get(block, "text")) != 0)
            return LF_STREAM_INVALID;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "content_block_delta")) {
        /* A forced tool call's input (a schema request) arrives as pieces of
         * JSON: they are the answer's text. Otherwise input_json_delta,
         * thinking_delta, signature_delta: not text. */
        delta = lf_json_get(root, "delta");
        if (lf_json_string_is(delta, "type", "text_delta") &&
            lf_stream_add_text(s, lf_json_get(delta, "text")) != 0)
            return LF_STREAM_INVALID;
        if (s->tool_input && lf_json_string_is(delta, "type", "input_json_delta") &&
            lf_stream_add_text(s, lf_json_get(delta, "partial_json")) != 0)
            return LF_STREAM_INVALID;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_delta")) {
        delta = lf_json_get(root, "delta");
        if (lf_json_get_typed(delta, "stop_reason", json_type_string)) {
            if (lf_json_take_string(delta, "stop_reason", &s->answer.finish_reason) != 0)
                return LF_STREAM_INVALID;
            s->finished = 1;
        }
        /* Cumulative counts: the last one is the total. */
        if (lf_wire_anthropic_usage(lf_json_get(root, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_stop")) {
        s->done = 1;
        return LF_STREAM_DONE;
    }
    if (lf_bytes_are(t, tn, "error")) {
        if (!lf_wire_error_from_json(root, &s->error))
            (void)lf_json_value_text(root, &s->error.message);
        return LF_STREAM_ERROR;
    }
    /* ping, content_block_stop, and whatever Anthropic adds later. */
    return LF_STREAM_CONTINUE;
}

static int lf_stream_blank(const char *d, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!lf_wire_is_ws(d[i])) return 0;
    return 1;
}

static int lf_stream_is_done_marker(const char *d, size_t n)
{
    while (n && lf_wire_is_ws(d[0])) { d++; n--; }
    while (n && lf_wire_is_ws(d[n - 1])) n--;
    return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

/* The end of an event: the text it added to the answer goes out to the
 * caller, or, when the event failed, comes off the answer again. */
static int lf_stream_took(lf_stream_state *s, int rc, const char **delta, size_t *delta_len)
{
    lf_buf *t = &s->answer.text;

    if (t->len > s->delta_at && rc != LF_STREAM_CONTINUE) {
        t->len = s->delta_at;
        t->ptr[t->len] = '\0';
    }
    if (delta) *delta = lf_buf_cstr(t) + s->delta_at;
    if (delta_len) *delta_len = t->len - s->delta_at;
    return rc;
}

int lf_stream_event(lf_stream_state *s, const lf_sse_event *ev,
                    const char **delta, size_t *delta_len)
{
    json_object *root;
    int rc;

    s->delta_at = s->answer.text.len;
    if (delta) *delta = lf_buf_cstr(&s->answer.text) + s->delta_at;
    if (delta_len) *delta_len = 0;
    if (s->done) return LF_STREAM_CONTINUE;   /* after the end: ignored */
    if (!ev) return LF_STREAM_INVALID;
    if (!ev->data || lf_stream_blank(ev->data, ev->data_len)) return LF_STREAM_CONTINUE;
    if (s->api == LF_API_OPENAI && lf_stream_is_done_marker(ev->data, ev->data_len)) {
        s->done = 1;
        return LF_STREAM_DONE;
    }
    root = lf_json_parse(ev->data, ev->data_len);
    if (!root) return LF_STREAM_INVALID;
    if (s->api == LF_API_ANTHROPIC) {
        rc = lf_stream_anthropic(s, root, ev);
    } else if (!json_object_is_type(root, json_type_object) &&
               !json_object_is_type(root, json_type_array)) {
        rc = LF_STREAM_INVALID;
    } else {
        rc = lf_stream_openai(s, root);
    }
    json_object_put(root);
    return lf_stream_took(s, rc, delta, delta_len);
}
