/* What Bedrock Converse answers: a plain answer, and ConverseStream's
 * messages once lf_es_feed has framed them, read by json-c. An error outside
 * a stream is named by the x-amzn-errortype header (lf_response.c, then
 * lf_classify), its body {"message": ...} read by lf_wire_error.c. */
#include "lf_wire_bedrock.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Token counts of a usage object into a; 1 when seen. inputTokens leaves out
 * what was read from or written to a prompt cache (AWS's prompt caching
 * guide: the input is inputTokens + cacheReadInputTokens +
 * cacheWriteInputTokens); the answer's input_tokens is all of it. */
static int lf_bedrock_usage(json_object *usage, lf_answer *a)
{
    long fresh = 0, read = 0, written = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    lf_json_take_count(usage, "outputTokens", &a->output_tokens);
    if (!lf_json_take_count(usage, "inputTokens", &fresh)) return 0;
    if (lf_json_take_count(usage, "cacheReadInputTokens", &read)) a->cached_input_tokens = read;
    if (lf_json_take_count(usage, "cacheWriteInputTokens", &written)) a->cache_write_tokens = written;
    a->input_tokens = fresh + read + written;
    return 1;
}

/* The stop reason; tool_use becomes LF_FINISH_TOOL_CALLS unless the call is
 * a schema's answer. */
static int lf_bedrock_stop_reason(json_object *holder, lf_buf *reason, int tool)
{
    if (lf_json_take_string(holder, "stopReason", reason) != 0) return -1;
    return tool ? 0 : lf_wire_finish_reason(reason);
}

/* ------------------------------------------- a plain answer */

/* The content blocks: {"text"}, {"toolUse": {toolUseId, name, input}}, and
 * others that carry no answer (reasoningContent, citations, ...). With tool,
 * a toolUse's input is the text, written as JSON. */
static int lf_bedrock_blocks(json_object *content, lf_answer *out, int tool)
{
    size_t i, n = json_object_array_length(content);

    for (i = 0; i < n; i++) {
        json_object *block = json_object_array_get_idx(content, i);
        json_object *text = lf_json_get_typed(block, "text", json_type_string);
        json_object *use = lf_json_get_typed(block, "toolUse", json_type_object);

        if (text && lf_utf8_append_sanitized(&out->text, json_object_get_string(text),
                                             (size_t)json_object_get_string_len(text)) != 0)
            return -1;
        if (!use) continue;
        if (tool) {
            json_object *input = lf_json_get_typed(use, "input", json_type_object);

            if (input && lf_json_append_written(&out->text, input) != 0) return -1;
        } else if (lf_wire_answer_call(out, lf_json_get(use, "toolUseId"), lf_json_get(use, "name"),
                                       lf_json_get(use, "input")) != 0) {
            return -1;
        }
    }
    return 0;
}

int lf_wire_bedrock_answer(json_object *root, lf_answer *out, lf_wire_error *err, int tool)
{
    json_object *message = lf_json_get_typed(lf_json_get(root, "output"), "message", json_type_object);
    json_object *content = lf_json_get_typed(message, "content", json_type_array);

    if (!content) return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (lf_bedrock_blocks(content, out, tool) != 0 || lf_bedrock_stop_reason(root, &out->finish_reason, tool) != 0)
        return LF_WIRE_INVALID;
    lf_bedrock_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------- stream messages */

static int lf_bedrock_is(const lf_es_text *t, const char *want)
{
    return t->ptr && lf_bytes_are(t->ptr, t->len, want);
}

/* A message's content block index. */
static long lf_bedrock_block_index(json_object *root)
{
    json_object *index = lf_json_get_typed(root, "contentBlockIndex", json_type_int);
    int64_t k = index ? json_object_get_int64(index) : 0;

    return k < 0 ? 0 : k > LONG_MAX ? LONG_MAX : (long)k;
}

/* An exception (:exception-type, its payload {"message"}) or an error
 * (:error-code, :error-message) inside the stream. */
static int lf_bedrock_stream_error(lf_stream_state *s, const lf_es_message *m)
{
    json_object *root;

    if (m->exception_type.ptr) {
        root = lf_json_parse(m->payload, m->payload_len);
        if (!root || !lf_wire_error_from_json(root, &s->error))
            (void)lf_utf8_set_sanitized(&s->error.message, m->payload, m->payload_len);
        json_object_put(root);
        /* The header names it, whatever the payload says. */
        (void)lf_utf8_set_sanitized(&s->error.type, m->exception_type.ptr, m->exception_type.len);
    } else {
        if (m->error_code.ptr) (void)lf_utf8_set_sanitized(&s->error.type, m->error_code.ptr, m->error_code.len);
        if (m->error_message.ptr)
            (void)lf_utf8_set_sanitized(&s->error.message, m->error_message.ptr, m->error_message.len);
    }
    return LF_STREAM_ERROR;
}

/* contentBlockStart: a tool call's id and name ({"start": {"toolUse":
 * {toolUseId, name}}}); its input comes in pieces. A schema's forced call
 * is its text instead. */
static int lf_bedrock_block_start(lf_stream_state *s, json_object *root)
{
    json_object *use = lf_json_get_typed(lf_json_get(root, "start"), "toolUse", json_type_object);
    lf_answer_call *c;

    if (!use || s->tool_input || s->calls_published) return LF_STREAM_CONTINUE;
    c = lf_wire_stream_new_call(s, lf_bedrock_block_index(root));
    if (!c || lf_wire_stream_set(&c->id, lf_json_get(use, "toolUseId")) != 0 ||
        lf_wire_stream_set(&c->name, lf_json_get(use, "name")) != 0)
        return LF_STREAM_INVALID;
    return LF_STREAM_CONTINUE;
}

/* contentBlockDelta: {"delta": {"text"}}, {"delta": {"toolUse": {"input":
 * piece}}}, or reasoning and citations, which are not the answer. */
static int lf_bedrock_block_delta(lf_stream_state *s, json_object *root)
{
    json_object *delta = lf_json_get_typed(root, "delta", json_type_object);
    json_object *use = lf_json_get_typed(delta, "toolUse", json_type_object);
    lf_answer_call *c;

    if (lf_wire_stream_text(s, lf_json_get(delta, "text")) != 0) return LF_STREAM_INVALID;
    if (!use) return LF_STREAM_CONTINUE;
    if (s->tool_input) return lf_wire_stream_text(s, lf_json_get(use, "input")) != 0 ? LF_STREAM_INVALID
                                                                                   : LF_STREAM_CONTINUE;
    if (s->calls_published) return LF_STREAM_CONTINUE;
    c = lf_wire_stream_call(s, lf_bedrock_block_index(root));
    if (c && lf_wire_stream_piece(&c->arguments, lf_json_get(use, "input")) != 0) return LF_STREAM_INVALID;
    return LF_STREAM_CONTINUE;
}

/* The events that say something; the others (messageStart, contentBlockStop,
 * whatever AWS adds later) are stepped over unread. */
static int lf_bedrock_wanted(const lf_es_text *type)
{
    return lf_bedrock_is(type, "contentBlockDelta") || lf_bedrock_is(type, "contentBlockStart") ||
           lf_bedrock_is(type, "messageStop") || lf_bedrock_is(type, "metadata");
}

/* The stream ends with messageStop (the stop reason) then metadata (the
 * usage): only the metadata after a messageStop completes it, so a stream
 * cut between the two is interrupted, its usage unknown. */
static int lf_bedrock_event(lf_stream_state *s, const lf_es_text *type, json_object *root)
{
    if (lf_bedrock_is(type, "contentBlockDelta")) return lf_bedrock_block_delta(s, root);
    if (lf_bedrock_is(type, "contentBlockStart")) return lf_bedrock_block_start(s, root);
    if (lf_bedrock_is(type, "messageStop")) {
        if (lf_bedrock_stop_reason(root, &s->answer.finish_reason, s->tool_input) != 0) return LF_STREAM_INVALID;
        s->stopped = 1;
        return LF_STREAM_CONTINUE;
    }
    /* metadata: the usage, and the end when it follows messageStop. */
    if (lf_bedrock_usage(lf_json_get(root, "usage"), &s->answer)) s->has_usage = 1;
    if (!s->stopped) return LF_STREAM_CONTINUE;
    s->done = 1;
    return lf_wire_stream_publish(s) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
}

int lf_wire_bedrock_stream_message(lf_stream_state *s, const lf_es_message *m)
{
    json_object *root;
    int rc;

    if (lf_bedrock_is(&m->message_type, "exception") || lf_bedrock_is(&m->message_type, "error"))
        return lf_bedrock_stream_error(s, m);
    if ((m->message_type.ptr && !lf_bedrock_is(&m->message_type, "event")) || !lf_bedrock_wanted(&m->event_type))
        return LF_STREAM_CONTINUE;
    root = lf_json_parse(m->payload, m->payload_len);
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return LF_STREAM_INVALID;
    }
    rc = lf_bedrock_event(s, &m->event_type, root);
    json_object_put(root);
    return rc;
}
