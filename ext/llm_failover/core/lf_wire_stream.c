/* Stream events of the two protocols, one SSE event at a time, read by
 * json-c. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
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
    s->calls = NULL;
    s->call_keys = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
    s->calls_published = 0;
}

static void lf_stream_drop_calls(lf_stream_state *s)
{
    lf_wire_calls_free(s->calls, s->n_calls);
    free(s->calls);
    free(s->call_keys);
    s->calls = NULL;
    s->call_keys = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
}

void lf_stream_free(lf_stream_state *s)
{
    lf_answer_free(&s->answer);
    lf_wire_error_free(&s->error);
    lf_stream_drop_calls(s);
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

/* ------------------------------------------- tool calls being streamed */

/* The last call streamed under key; NULL for none. */
static lf_answer_call *lf_stream_call(lf_stream_state *s, long key)
{
    size_t i = s->n_calls;

    while (i--)
        if (s->call_keys[i] == key) return &s->calls[i];
    return NULL;
}

/* Far more calls than a model makes in one answer (OpenAI allows 128 tools):
 * a stream past it is malformed, and each piece's lookup stays short. */
#define LF_STREAM_MAX_CALLS 1024

static lf_answer_call *lf_stream_new_call(lf_stream_state *s, long key)
{
    if (s->n_calls >= LF_STREAM_MAX_CALLS) return NULL;
    return lf_wire_call_push(&s->calls, &s->call_keys, &s->n_calls, &s->cap_calls, key);
}

/* A string value into out, sanitized; other values leave out as it is. */
static int lf_stream_set(lf_buf *out, json_object *v)
{
    if (!v || !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) return 0;
    return lf_utf8_set_sanitized(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* A piece of arguments, as its bytes: a character may be split between two
 * pieces, so the whole is sanitized when the call is complete. */
static int lf_stream_add_piece(lf_buf *out, json_object *v)
{
    if (!v || !json_object_is_type(v, json_type_string)) return 0;
    return lf_buf_append(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* The stream completed: its calls, ordered by key (OpenAI's index; a stable
 * sort keeps the order they came in otherwise), go whole to the answer.
 * Once only: later pieces are ignored. */
static int lf_stream_publish(lf_stream_state *s)
{
    lf_answer *a = &s->answer;
    lf_buf clean;
    size_t i, j;

    if (s->calls_published) return 0;
    s->calls_published = 1;
    if (!s->n_calls) return 0;
    for (i = 1; i < s->n_calls; i++) {
        lf_answer_call c = s->calls[i];
        long k = s->call_keys[i];

        for (j = i; j > 0 && s->call_keys[j - 1] > k; j--) {
            s->calls[j] = s->calls[j - 1];
            s->call_keys[j] = s->call_keys[j - 1];
        }
        s->calls[j] = c;
        s->call_keys[j] = k;
    }
    for (i = 0; i < s->n_calls; i++) {
        lf_answer_call *c = &s->calls[i];

        lf_buf_init(&clean);
        if (lf_utf8_set_sanitized(&clean, lf_buf_cstr(&c->arguments), c->arguments.len) != 0) {
            lf_buf_free(&clean);
            return -1;
        }
        lf_buf_move(&c->arguments, &clean);
        if (lf_wire_call_done(c) != 0) return -1;
    }
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    free(a->tool_calls);
    a->tool_calls = s->calls;
    a->n_tool_calls = s->n_calls;
    a->cap_tool_calls = s->cap_calls;
    s->calls = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
    lf_stream_drop_calls(s);
    return 0;
}

/* delta.tool_calls[]: {index, id, type, function: {name, arguments}}, the
 * id and name on a call's first piece, its arguments in pieces. A piece
 * without an index continues the last call unless it brings an id; a piece
 * whose id differs from the call's at its index starts a new call (servers
 * that give every call index 0). */
static int lf_stream_openai_calls(lf_stream_state *s, json_object *calls)
{
    size_t i, n;

    if (s->calls_published || !calls || !json_object_is_type(calls, json_type_array)) return 0;
    n = json_object_array_length(calls);
    for (i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(calls, i);
        json_object *index = lf_json_get_typed(item, "index", json_type_int);
        json_object *id = lf_json_get_typed(item, "id", json_type_string);
        json_object *fn = lf_json_get_typed(item, "function", json_type_object);
        json_object *args = lf_json_get(fn, "arguments");
        lf_answer_call *c;
        long key;
        int64_t k;

        if (!json_object_is_type(item, json_type_object)) continue;
        if (id && json_object_get_string_len(id) == 0) id = NULL;
        if (index) {
            k = json_object_get_int64(index);
            key = k < 0 ? 0 : k > LONG_MAX - 1 ? LONG_MAX - 1 : (long)k;
            c = lf_stream_call(s, key);
        } else {
            key = s->n_calls ? s->call_keys[s->n_calls - 1] : 0;
            c = id || !s->n_calls ? NULL : &s->calls[s->n_calls - 1];
            if (id && s->n_calls) key++;
        }
        if (c && id && c->id.len &&
            !lf_bytes_are(json_object_get_string(id), (size_t)json_object_get_string_len(id), lf_buf_cstr(&c->id)))
            c = NULL;
        if (!c && !(c = lf_stream_new_call(s, key))) return -1;
        if (lf_stream_set(&c->id, id) != 0 || lf_stream_set(&c->name, lf_json_get(fn, "name")) != 0) return -1;
        if (args && !json_object_is_type(args, json_type_string)) {
            /* An object for arguments (a server that sends the call whole). */
            if (lf_json_value_text(args, &c->arguments) != 0) return -1;
        } else if (lf_stream_add_piece(&c->arguments, args) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The finish or stop reason: the stream completed; its calls are whole. */
static int lf_stream_finish(lf_stream_state *s, json_object *holder, const char *key)
{
    if (lf_json_take_string(holder, key, &s->answer.finish_reason) != 0) return -1;
    /* A schema answer's forced call is its text: its stop reason stays. */
    if (!s->tool_input && lf_wire_finish_reason(&s->answer.finish_reason) != 0) return -1;
    s->finished = 1;
    return lf_stream_publish(s);
}

/* ------------------------------------------- the protocols' events */

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
        json_object *delta = lf_json_get(choice, "delta");

        if (lf_stream_add_text(s, lf_json_get(delta, "content")) != 0 ||
            lf_stream_openai_calls(s, lf_json_get(delta, "tool_calls")) != 0)
            return LF_STREAM_INVALID;
        if (lf_json_get_typed(choice, "finish_reason", json_type_string) &&
            lf_stream_finish(s, choice, "finish_reason") != 0)
            return LF_STREAM_INVALID;
    }
    /* DeepSeek and Mistral put usage on the finish_reason chunk, OpenAI on
     * a last chunk of its own; "usage": null elsewhere. */
    usage = lf_json_get(root, "usage");
    if (lf_wire_openai_usage(usage, &s->answer)) s->has_usage = 1;
    return LF_STREAM_CONTINUE;
}

/* An Anthropic event's content block index. */
static long lf_stream_block_index(json_object *root)
{
    json_object *index = lf_json_get_typed(root, "index", json_type_int);
    int64_t k = index ? json_object_get_int64(index) : 0;

    return k < 0 ? 0 : k > LONG_MAX ? LONG_MAX : (long)k;
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
        /* A tool call: id and name now, its input ({} here) in pieces. */
        if (!s->tool_input && !s->calls_published && lf_json_string_is(block, "type", "tool_use")) {
            lf_answer_call *c = lf_stream_new_call(s, lf_stream_block_index(root));

            if (!c || lf_stream_set(&c->id, lf_json_get(block, "id")) != 0 ||
                lf_stream_set(&c->name, lf_json_get(block, "name")) != 0)
                return LF_STREAM_INVALID;
        }
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
        if (!s->tool_input && !s->calls_published && lf_json_string_is(delta, "type", "input_json_delta")) {
            lf_answer_call *c = lf_stream_call(s, lf_stream_block_index(root));

            if (c && lf_stream_add_piece(&c->arguments, lf_json_get(delta, "partial_json")) != 0)
                return LF_STREAM_INVALID;
        }
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_delta")) {
        delta = lf_json_get(root, "delta");
        if (lf_json_get_typed(delta, "stop_reason", json_type_string) &&
            lf_stream_finish(s, delta, "stop_reason") != 0)
            return LF_STREAM_INVALID;
        /* Cumulative counts: the last one is the total. */
        if (lf_wire_anthropic_usage(lf_json_get(root, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_stop")) {
        s->done = 1;
        return lf_stream_publish(s) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
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
        return lf_stream_publish(s) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
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
