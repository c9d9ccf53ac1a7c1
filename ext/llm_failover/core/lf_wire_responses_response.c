/* What OpenAI's Responses API answers: a response object (plain, or as the
 * stream's terminal event carries it) and the typed stream events, read by
 * json-c. Error bodies of the HTTP kind are lf_wire_error.c's; a response
 * that failed, and the stream's response.failed and error events, are read
 * here. */
#include "lf_wire_responses.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Token counts of a usage object into a; 1 when seen. input_tokens holds the
 * cached ones already, output_tokens the reasoning ones. */
static int lf_responses_usage(json_object *usage, lf_answer *a)
{
    json_object *details = lf_json_get(usage, "input_tokens_details");
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "input_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "output_tokens", &a->output_tokens);
    lf_json_take_count(details, "cached_tokens", &a->cached_input_tokens);
    lf_json_take_count(details, "cache_write_tokens", &a->cache_write_tokens);
    return seen;
}

/* A response's error ({code, message}; the stream's error event may nest it
 * as {"error": {...}}) into e. */
static void lf_responses_error(json_object *holder, lf_wire_error *e, const char *fallback)
{
    json_object *nested = lf_json_get_typed(holder, "error", json_type_object);

    lf_wire_error_clear(e);
    if (nested && lf_wire_error_from_json(holder, e)) return;
    (void)lf_json_value_text(lf_json_get(holder, "code"), &e->code);
    (void)lf_json_value_text(lf_json_get(holder, "message"), &e->message);
    if (!e->code.len && !e->message.len) (void)lf_buf_set(&e->message, fallback, strlen(fallback));
}

/* ------------------------------------------- output items */

/* A reasoning item to send back, into items (comma-separated, no brackets):
 * its type, summary and encrypted_content as they came. Not its id: with
 * store: false the host keeps no item, and an id it cannot find is a 400.
 * An item without encrypted_content has nothing to send back. */
static int lf_responses_keep_reasoning(json_object *item, lf_buf *items)
{
    json_object *secret = lf_json_get_typed(item, "encrypted_content", json_type_string);
    json_object *summary = lf_json_get_typed(item, "summary", json_type_array);

    if (!secret || json_object_get_string_len(secret) == 0) return 0;
    if ((items->len && lf_buf_append_char(items, ',') != 0) ||
        lf_buf_append_str(items, "{\"type\":\"reasoning\",\"summary\":") != 0 ||
        (summary ? lf_json_append_written(items, summary) : lf_buf_append_str(items, "[]")) != 0 ||
        lf_buf_append_str(items, ",\"encrypted_content\":") != 0 ||
        lf_json_put_string(items, json_object_get_string(secret), (size_t)json_object_get_string_len(secret)) != 0)
        return -1;
    return lf_buf_append_char(items, '}');
}

/* The kept items as the answer's JSON array. */
static int lf_responses_publish_reasoning(lf_buf *items, lf_buf *out)
{
    lf_buf_clear(out);
    if (!items->len) return 0;
    return lf_buf_append_char(out, '[') != 0 || lf_buf_append(out, items->ptr, items->len) != 0
               ? -1
               : lf_buf_append_char(out, ']');
}

/* A message item's output_text parts onto text (refusal parts are no text,
 * as chat completions' refusal is none). */
static int lf_responses_message_text(json_object *item, lf_buf *text)
{
    json_object *content = lf_json_get_typed(item, "content", json_type_array);
    size_t i, n = content ? json_object_array_length(content) : 0;

    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        json_object *t = lf_json_get_typed(part, "text", json_type_string);

        if (!t || !lf_json_string_is(part, "type", "output_text")) continue;
        if (lf_wire_append_content(text, t, 0) != 0) return -1;
    }
    return 0;
}

/* A function_call item that is whole: one cut short by max_output_tokens
 * (status incomplete) has arguments no tool can run. */
static int lf_responses_is_call(json_object *item)
{
    return lf_json_string_is(item, "type", "function_call") && !lf_json_string_is(item, "status", "incomplete");
}

/* The calls and reasoning items of an output array, and its text when text is
 * non-NULL. */
static int lf_responses_output(json_object *output, lf_answer *out, lf_buf *text, lf_buf *reasoning)
{
    size_t i, n = json_object_array_length(output);

    for (i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(output, i);

        if (lf_responses_is_call(item)) {
            if (lf_wire_answer_call(out, lf_json_get(item, "call_id"), lf_json_get(item, "name"),
                                    lf_json_get(item, "arguments")) != 0)
                return -1;
        } else if (lf_json_string_is(item, "type", "reasoning")) {
            if (lf_responses_keep_reasoning(item, reasoning) != 0) return -1;
        } else if (text && lf_json_string_is(item, "type", "message")) {
            if (lf_responses_message_text(item, text) != 0) return -1;
        }
    }
    return 0;
}

/* No finish reason on the wire: a status and, when incomplete, why
 * (max_output_tokens is chat completions' "length"; content_filter keeps
 * its name, which is chat completions' too). */
static int lf_responses_finish(json_object *response, lf_answer *a)
{
    json_object *details = lf_json_get(response, "incomplete_details");
    const char *reason = a->n_tool_calls ? LF_FINISH_TOOL_CALLS : "stop";

    if (lf_json_string_is(response, "status", "incomplete") && lf_json_get_typed(details, "reason", json_type_string)) {
        if (!lf_json_string_is(details, "reason", "max_output_tokens"))
            return lf_json_take_string(details, "reason", &a->finish_reason);
        reason = "length";
    }
    return lf_buf_set(&a->finish_reason, reason, strlen(reason));
}

/* A response that is no answer, failed or cancelled, into err; 1 when it
 * is one. A compatible server without a status says so by its error. */
static int lf_responses_failed(json_object *response, lf_wire_error *err)
{
    json_object *e = lf_json_get_typed(response, "error", json_type_object);
    int cancelled = lf_json_string_is(response, "status", "cancelled");

    if (!lf_json_string_is(response, "status", "failed") && !cancelled &&
        (lf_json_get(response, "status") || !e))
        return 0;
    lf_responses_error(e, err, cancelled ? "the response was cancelled" : "the response failed");
    return 1;
}

/* ------------------------------------------- a plain answer */

int lf_wire_responses_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *output = lf_json_get_typed(root, "output", json_type_array);
    lf_buf items;
    int rc = LF_WIRE_OK;

    if (!output) return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (lf_responses_failed(root, err)) return LF_WIRE_ERROR_BODY;
    /* Background responses still running are no answer. */
    if (lf_json_string_is(root, "status", "in_progress") || lf_json_string_is(root, "status", "queued"))
        return LF_WIRE_INVALID;
    lf_buf_init(&items);
    if (lf_responses_output(output, out, &out->text, &items) != 0 ||
        lf_responses_publish_reasoning(&items, &out->reasoning) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 || lf_json_take_string(root, "id", &out->id) != 0 ||
        lf_responses_finish(root, out) != 0)
        rc = LF_WIRE_INVALID;
    lf_buf_free(&items);
    if (rc == LF_WIRE_OK) lf_responses_usage(lf_json_get(root, "usage"), out);
    return rc;
}

/* ------------------------------------------- stream events */

/* The terminal event's response: usage, model and id, then what the
 * output_item.done events collected (the calls and reasoning items whole;
 * the text came in deltas) is published. A server that sent no such
 * events still has them in the response's output. */
static int lf_responses_stream_end(lf_stream_state *s, json_object *response)
{
    json_object *output = lf_json_get_typed(response, "output", json_type_array);

    if (lf_json_take_string(response, "model", &s->answer.model) != 0 ||
        lf_json_take_string(response, "id", &s->answer.id) != 0)
        return -1;
    if (lf_responses_usage(lf_json_get(response, "usage"), &s->answer)) s->has_usage = 1;
    if (lf_wire_stream_publish(s) != 0) return -1;
    if (output && !s->answer.n_tool_calls && !s->reasoning.len &&
        lf_responses_output(output, &s->answer, NULL, &s->reasoning) != 0)
        return -1;
    if (lf_responses_publish_reasoning(&s->reasoning, &s->answer.reasoning) != 0 ||
        lf_responses_finish(response, &s->answer) != 0)
        return -1;
    s->finished = 1;
    s->done = 1;
    return 0;
}

/* An item whole (response.output_item.done): a call or a reasoning item,
 * held until the stream completes. Its arguments came before in
 * function_call_arguments.delta events: pieces that make no text, so they
 * are not read; the done item has them whole. */
static int lf_responses_item_done(lf_stream_state *s, json_object *root)
{
    json_object *item = lf_json_get_typed(root, "item", json_type_object);
    json_object *index = lf_json_get_typed(root, "output_index", json_type_int);
    int64_t k = index ? json_object_get_int64(index) : (int64_t)s->n_calls;
    lf_answer_call *c;

    if (s->calls_published || !item) return 0;
    if (lf_json_string_is(item, "type", "reasoning")) return lf_responses_keep_reasoning(item, &s->reasoning);
    if (!lf_responses_is_call(item)) return 0;
    c = lf_wire_stream_new_call(s, k < 0 ? 0 : k > LONG_MAX ? LONG_MAX : (long)k);
    if (!c || lf_wire_stream_set(&c->id, lf_json_get(item, "call_id")) != 0 ||
        lf_wire_stream_set(&c->name, lf_json_get(item, "name")) != 0)
        return -1;
    return lf_wire_stream_piece(&c->arguments, lf_json_get(item, "arguments"));
}

static int lf_responses_stream_data(lf_stream_state *s, json_object *root, const lf_sse_event *ev)
{
    json_object *type = lf_json_get_typed(root, "type", json_type_string);
    json_object *response = lf_json_get_typed(root, "response", json_type_object);
    const char *t;
    size_t tn;

    /* The data's own "type" is what the event is; the SSE name only helps
     * when a proxy dropped it. */
    if (type) {
        t = json_object_get_string(type);
        tn = (size_t)json_object_get_string_len(type);
    } else if (ev->event && ev->event_len) {
        t = ev->event;
        tn = ev->event_len;
    } else {
        return LF_STREAM_INVALID;
    }

    if (lf_bytes_are(t, tn, "response.output_text.delta"))
        return lf_wire_stream_text(s, lf_json_get(root, "delta")) != 0 ? LF_STREAM_INVALID : LF_STREAM_CONTINUE;
    if (lf_bytes_are(t, tn, "response.output_item.done"))
        return lf_responses_item_done(s, root) != 0 ? LF_STREAM_INVALID : LF_STREAM_CONTINUE;
    if (lf_bytes_are(t, tn, "response.created") || lf_bytes_are(t, tn, "response.in_progress") ||
        lf_bytes_are(t, tn, "response.queued"))
        return lf_json_take_string(response, "model", &s->answer.model) != 0 ||
                       lf_json_take_string(response, "id", &s->answer.id) != 0
                   ? LF_STREAM_INVALID
                   : LF_STREAM_CONTINUE;
    if (lf_bytes_are(t, tn, "response.completed") || lf_bytes_are(t, tn, "response.incomplete")) {
        if (!response) return LF_STREAM_INVALID;
        return lf_responses_stream_end(s, response) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
    }
    if (lf_bytes_are(t, tn, "response.failed")) {
        /* Tokens a failed response was billed stay on the answer. */
        if (lf_responses_usage(lf_json_get(response, "usage"), &s->answer)) s->has_usage = 1;
        lf_responses_error(lf_json_get_typed(response, "error", json_type_object), &s->error, "the response failed");
        return LF_STREAM_ERROR;
    }
    if (lf_bytes_are(t, tn, "error")) {
        lf_responses_error(root, &s->error, "error event");
        return LF_STREAM_ERROR;
    }
    /* output_item.added (a reasoning item's encrypted_content there is not
     * the final one), content parts, argument deltas, refusals, and whatever
     * OpenAI adds later. */
    return LF_STREAM_CONTINUE;
}

int lf_wire_responses_stream_event(lf_stream_state *s, const lf_sse_event *ev)
{
    json_object *root = lf_json_parse(ev->data, ev->data_len);
    int rc;

    if (!root) return LF_STREAM_INVALID;
    if (!json_object_is_type(root, json_type_object))
        rc = LF_STREAM_INVALID;
    else
        rc = lf_responses_stream_data(s, root, ev);
    json_object_put(root);
    return rc;
}
