/* What Anthropic messages answer: a plain answer and stream events, read by
 * json-c. Error bodies are lf_wire_error.c's. */
#include "lf_wire_anthropic.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>

#include "lf_json_read.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Token counts of a usage object into a; 1 when seen. */
static int lf_anthropic_usage(json_object *usage, lf_answer *a)
{
    long fresh = 0, read = 0, written = 0;
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "output_tokens", &a->output_tokens);
    /* Anthropic counts cache reads and writes apart from input_tokens; the
     * answer's input_tokens is every input token, as OpenAI's is. A
     * message_delta without input_tokens leaves message_start's. */
    if (lf_json_take_count(usage, "input_tokens", &fresh)) {
        if (lf_json_take_count(usage, "cache_read_input_tokens", &read)) a->cached_input_tokens = read;
        if (lf_json_take_count(usage, "cache_creation_input_tokens", &written)) a->cache_write_tokens = written;
        a->input_tokens = fresh + read + written;
        seen = 1;
    }
    return seen;
}

/* ------------------------------------------- a plain answer */

/* Anthropic's tool_use blocks: {type, id, name, input}. */
static int lf_anthropic_calls(json_object *content, lf_answer *out)
{
    size_t i, n = json_object_array_length(content);

    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(content, i);

        if (!lf_json_string_is(part, "type", "tool_use")) continue;
        if (lf_wire_answer_call(out, lf_json_get(part, "id"), lf_json_get(part, "name"), lf_json_get(part, "input")) != 0)
            return -1;
    }
    return 0;
}

int lf_wire_anthropic_answer(json_object *root, lf_answer *out, lf_wire_error *err, int tool)
{
    json_object *content;

    if (lf_json_string_is(root, "type", "error") || lf_json_get(root, "error") ||
        json_object_is_type(root, json_type_array))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    content = lf_json_get_typed(root, "content", json_type_array);
    if (!content)
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (lf_wire_append_content(&out->text, content, tool) != 0 ||
        lf_json_take_string(root, "stop_reason", &out->finish_reason) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 ||
        lf_json_take_string(root, "id", &out->id) != 0)
        return LF_WIRE_INVALID;
    /* A schema answer's forced call is its text, not a call to run. */
    if (!tool && (lf_anthropic_calls(content, out) != 0 || lf_wire_finish_reason(&out->finish_reason) != 0))
        return LF_WIRE_INVALID;
    lf_anthropic_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------- stream events */

/* An event's content block index. */
static long lf_anthropic_block_index(json_object *root)
{
    json_object *index = lf_json_get_typed(root, "index", json_type_int);
    int64_t k = index ? json_object_get_int64(index) : 0;

    return k < 0 ? 0 : k > LONG_MAX ? LONG_MAX : (long)k;
}

static int lf_anthropic_stream_data(lf_stream_state *s, json_object *root, const lf_sse_event *ev)
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
        if (lf_anthropic_usage(lf_json_get(msg, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "content_block_start")) {
        /* A text block starts with "text": "" in practice; take it anyway. */
        block = lf_json_get(root, "content_block");
        if (lf_json_string_is(block, "type", "text") &&
            lf_wire_stream_text(s, lf_json_get(block, "text")) != 0)
            return LF_STREAM_INVALID;
        /* A tool call: id and name now, its input ({} here) in pieces. */
        if (!s->tool_input && !s->calls_published && lf_json_string_is(block, "type", "tool_use")) {
            lf_answer_call *c = lf_wire_stream_new_call(s, lf_anthropic_block_index(root));

            if (!c || lf_wire_stream_set(&c->id, lf_json_get(block, "id")) != 0 ||
                lf_wire_stream_set(&c->name, lf_json_get(block, "name")) != 0)
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
            lf_wire_stream_text(s, lf_json_get(delta, "text")) != 0)
            return LF_STREAM_INVALID;
        if (s->tool_input && lf_json_string_is(delta, "type", "input_json_delta") &&
            lf_wire_stream_text(s, lf_json_get(delta, "partial_json")) != 0)
            return LF_STREAM_INVALID;
        if (!s->tool_input && !s->calls_published && lf_json_string_is(delta, "type", "input_json_delta")) {
            lf_answer_call *c = lf_wire_stream_call(s, lf_anthropic_block_index(root));

            if (c && lf_wire_stream_piece(&c->arguments, lf_json_get(delta, "partial_json")) != 0)
                return LF_STREAM_INVALID;
        }
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_delta")) {
        delta = lf_json_get(root, "delta");
        if (lf_json_get_typed(delta, "stop_reason", json_type_string) &&
            lf_wire_stream_finish(s, delta, "stop_reason") != 0)
            return LF_STREAM_INVALID;
        /* Cumulative counts: the last one is the total. */
        if (lf_anthropic_usage(lf_json_get(root, "usage"), &s->answer)) s->has_usage = 1;
        return LF_STREAM_CONTINUE;
    }
    if (lf_bytes_are(t, tn, "message_stop")) {
        s->done = 1;
        return lf_wire_stream_publish(s) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
    }
    if (lf_bytes_are(t, tn, "error")) {
        if (!lf_wire_error_from_json(root, &s->error))
            (void)lf_json_value_text(root, &s->error.message);
        return LF_STREAM_ERROR;
    }
    /* ping, content_block_stop, and whatever Anthropic adds later. */
    return LF_STREAM_CONTINUE;
}

int lf_wire_anthropic_stream_event(lf_stream_state *s, const lf_sse_event *ev)
{
    json_object *root = lf_json_parse(ev->data, ev->data_len);
    int rc;

    if (!root) return LF_STREAM_INVALID;
    rc = lf_anthropic_stream_data(s, root, ev);
    json_object_put(root);
    return rc;
}
