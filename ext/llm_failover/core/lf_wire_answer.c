/* Plain (non-streamed) answers of the two protocols, read by json-c. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdlib.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_internal.h"

#include "lf_banned.h"

void lf_answer_init(lf_answer *a)
{
    lf_buf_init(&a->text);
    lf_buf_init(&a->model);
    lf_buf_init(&a->finish_reason);
    lf_buf_init(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
    a->tool_calls = NULL;
    a->n_tool_calls = 0;
    a->cap_tool_calls = 0;
    a->vectors = NULL;
    a->n_vectors = 0;
    a->dims = 0;
}

static void lf_answer_drop_vectors(lf_answer *a)
{
    free(a->vectors);
    a->vectors = NULL;
    a->n_vectors = 0;
    a->dims = 0;
}

void lf_answer_clear(lf_answer *a)
{
    lf_buf_clear(&a->text);
    lf_buf_clear(&a->model);
    lf_buf_clear(&a->finish_reason);
    lf_buf_clear(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
    /* The array stays for the next answer; the calls go. */
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    a->n_tool_calls = 0;
    lf_answer_drop_vectors(a);
}

void lf_answer_free(lf_answer *a)
{
    lf_buf_free(&a->text);
    lf_buf_free(&a->model);
    lf_buf_free(&a->finish_reason);
    lf_buf_free(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    free(a->tool_calls);
    a->tool_calls = NULL;
    a->n_tool_calls = 0;
    a->cap_tool_calls = 0;
    lf_answer_drop_vectors(a);
}

void lf_answer_take_parts(lf_answer *dst, lf_answer *src)
{
    lf_answer_call *calls = dst->tool_calls;
    size_t n = dst->n_tool_calls, cap = dst->cap_tool_calls;

    /* Tool calls swapped, so that whatever dst held is freed with src. */
    dst->tool_calls = src->tool_calls;
    dst->n_tool_calls = src->n_tool_calls;
    dst->cap_tool_calls = src->cap_tool_calls;
    src->tool_calls = calls;
    src->n_tool_calls = n;
    src->cap_tool_calls = cap;
    lf_answer_drop_vectors(dst);
    dst->vectors = src->vectors;
    dst->n_vectors = src->n_vectors;
    dst->dims = src->dims;
    src->vectors = NULL;
    src->n_vectors = src->dims = 0;
}

/* The choice with index 0 (servers that stream n > 1 interleave choices),
 * else the first one; NULL when there is none. */
json_object *lf_wire_first_choice(json_object *choices)
{
    size_t i, n = json_object_array_length(choices);
    json_object *idx;

    for (i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(choices, i);

        if (!json_object_is_type(c, json_type_object)) continue;
        idx = lf_json_get(c, "index");
        if (!idx || (json_object_is_type(idx, json_type_int) && json_object_get_int64(idx) == 0))
            return c;
    }
    return n ? json_object_array_get_idx(choices, 0) : NULL;
}

/* Appends content that is a string, or an array of parts of which the
 * {"type":"text","text":...} ones count (Anthropic's content blocks, and the
 * content arrays some OpenAI-compatible servers answer with); with tool, a
 * tool_use block's input too, as its JSON (the forced tool call of a schema
 * request: its input is the answer). Other values and other parts
 * (thinking, ...) carry no text. */
static int lf_wire_append_content(lf_buf *text, json_object *content, int tool)
{
    size_t i, n;

    if (!content) return 0;
    if (json_object_is_type(content, json_type_string))
        return lf_utf8_append_sanitized(text, json_object_get_string(content),
                                        (size_t)json_object_get_string_len(content));
    if (!json_object_is_type(content, json_type_array)) return 0;
    n = json_object_array_length(content);
    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        json_object *t = lf_json_get_typed(part, "text", json_type_string);
        json_object *input = lf_json_get_typed(part, "input", json_type_object);

        if (tool && input && lf_json_string_is(part, "type", "tool_use")) {
            if (lf_buf_append_str(text, json_object_to_json_string_ext(input, JSON_C_TO_STRING_PLAIN |
                                                                                 JSON_C_TO_STRING_NOSLASHESCAPE)) != 0)
                return -1;
            continue;
        }
        if (!t || !lf_json_string_is(part, "type", "text")) continue;
        if (lf_utf8_append_sanitized(text, json_object_get_string(t),
                                     (size_t)json_object_get_string_len(t)) != 0)
            return -1;
    }
    return 0;
}

int lf_wire_openai_usage(json_object *usage, lf_answer *a)
{
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "prompt_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "completion_tokens", &a->output_tokens);
    return seen;
}

int lf_wire_anthropic_usage(json_object *usage, lf_answer *a)
{
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "input_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "output_tokens", &a->output_tokens);
    return seen;
}

/* One complete call into the answer; arguments a string (its text) or any
 * other JSON value (written as JSON). */
static int lf_wire_answer_call(lf_answer *out, json_object *id, json_object *name, json_object *arguments)
{
    lf_answer_call *c = lf_wire_call_push(&out->tool_calls, NULL, &out->n_tool_calls, &out->cap_tool_calls, 0);

    if (!c) return -1;
    if ((id && json_object_is_type(id, json_type_string) &&
         lf_utf8_set_sanitized(&c->id, json_object_get_string(id), (size_t)json_object_get_string_len(id)) != 0) ||
        (name && json_object_is_type(name, json_type_string) &&
         lf_utf8_set_sanitized(&c->name, json_object_get_string(name), (size_t)json_object_get_string_len(name)) != 0) ||
        lf_json_value_text(arguments, &c->arguments) != 0)
        return -1;
    return lf_wire_call_done(c);
}

/* message.tool_calls[]: {id, type: "function", function: {name, arguments}};
 * a message of an older server may carry one function_call {name,
 * arguments} instead. */
static int lf_wire_openai_calls(json_object *message, lf_answer *out)
{
    json_object *calls = lf_json_get_typed(message, "tool_calls", json_type_array);
    json_object *fn;
    size_t i, n;

    if (!calls) {
        fn = lf_json_get_typed(message, "function_call", json_type_object);
        return fn ? lf_wire_answer_call(out, NULL, lf_json_get(fn, "name"), lf_json_get(fn, "arguments")) : 0;
    }
    n = json_object_array_length(calls);
    for (i = 0; i < n; i++) {
        json_object *call = json_object_array_get_idx(calls, i);

        fn = lf_json_get_typed(call, "function", json_type_object);
        if (!fn) continue;  /* not a function call: nothing this layer can run */
        if (lf_wire_answer_call(out, lf_json_get(call, "id"), lf_json_get(fn, "name"), lf_json_get(fn, "arguments")) != 0)
            return -1;
    }
    return 0;
}

/* Anthropic's tool_use blocks: {type, id, name, input}. */
static int lf_wire_anthropic_calls(json_object *content, lf_answer *out)
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

static int lf_wire_openai_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *choices, *choice, *message;

    if (lf_json_get(root, "error") || json_object_is_type(root, json_type_array))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choices = lf_json_get_typed(root, "choices", json_type_array);
    if (!choices)
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choice = lf_wire_first_choice(choices);
    message = lf_json_get_typed(choice, "message", json_type_object);
    if (!message) return LF_WIRE_INVALID;
    /* content is null for a refusal or a tool call: that is an empty text. */
    if (lf_wire_append_content(&out->text, lf_json_get(message, "content"), 0) != 0 ||
        lf_json_take_string(choice, "finish_reason", &out->finish_reason) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 ||
        lf_json_take_string(root, "id", &out->id) != 0 ||
        lf_wire_openai_calls(message, out) != 0 || lf_wire_finish_reason(&out->finish_reason) != 0)
        return LF_WIRE_INVALID;
    lf_wire_openai_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

static int lf_wire_anthropic_answer(json_object *root, lf_answer *out, lf_wire_error *err, int tool)
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
    if (!tool && (lf_wire_anthropic_calls(content, out) != 0 || lf_wire_finish_reason(&out->finish_reason) != 0))
        return LF_WIRE_INVALID;
    lf_wire_anthropic_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

lf_wire_error *lf_wire_parse_begin(lf_answer *out, lf_wire_error *err, lf_wire_error *scratch)
{
    if (err) lf_wire_error_clear(err);
    lf_answer_clear(out);
    lf_wire_error_init(scratch);
    return err ? err : scratch;
}

int lf_wire_parse_end(int rc, lf_answer *out, lf_wire_error *err, lf_wire_error *scratch)
{
    if (rc != LF_WIRE_OK) lf_answer_clear(out);
    if (rc != LF_WIRE_ERROR_BODY) lf_wire_error_clear(err);
    lf_wire_error_free(scratch);
    return rc;
}

static int lf_wire_parse_response_with(lf_api api, const char *body, size_t len,
                                       lf_answer *out, lf_wire_error *err, int tool)
{
    lf_wire_error scratch;
    json_object *root;
    int rc;

    err = lf_wire_parse_begin(out, err, &scratch);
    root = lf_json_parse(body, len);
    if (!root) {
        rc = LF_WIRE_INVALID;
    } else {
        rc = api == LF_API_ANTHROPIC ? lf_wire_anthropic_answer(root, out, err, tool)
                                     : lf_wire_openai_answer(root, out, err);
        json_object_put(root);
    }
    return lf_wire_parse_end(rc, out, err, &scratch);
}

int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 0);
}

int lf_wire_parse_tool_response(lf_api api, const char *body, size_t len,
                                lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 1);
}
