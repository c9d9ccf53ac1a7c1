/* Plain (non-streamed) answers of the two protocols: read by json-c, and
 * the everyday successful answer read in place by lf_jscan with the same
 * results. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdint.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_internal.h"
#include "lf_wire_jdoc.h"

#include "lf_banned.h"

void lf_answer_init(lf_answer *a)
{
    lf_buf_init(&a->text);
    lf_buf_init(&a->model);
    lf_buf_init(&a->finish_reason);
    lf_buf_init(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
}

void lf_answer_clear(lf_answer *a)
{
    lf_buf_clear(&a->text);
    lf_buf_clear(&a->model);
    lf_buf_clear(&a->finish_reason);
    lf_buf_clear(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
}

void lf_answer_free(lf_answer *a)
{
    lf_buf_free(&a->text);
    lf_buf_free(&a->model);
    lf_buf_free(&a->finish_reason);
    lf_buf_free(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
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
        lf_json_take_string(root, "id", &out->id) != 0)
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
    lf_wire_anthropic_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------- the lf_jscan fast path */

/* lf_wire_openai_answer for a successful answer whose content is a string or
 * null: 1 done, 0 left to json-c, -1 out of memory. */
static int lf_wire_openai_fast(const char *body, size_t len, lf_answer *out)
{
    enum { K_ERROR, K_CHOICES, K_MODEL, K_ID, K_USAGE, K_N };
    static const lf_jkey keys[K_N] = { LF_JKEY("error"), LF_JKEY("choices"), LF_JKEY("model"),
                                       LF_JKEY("id"), LF_JKEY("usage") };
    static const lf_jkey choice_keys[3] = { LF_JKEY("index"), LF_JKEY("message"), LF_JKEY("finish_reason") };
    lf_jnode nodes[LF_WIRE_ANSWER_NODES];
    lf_jdoc d;
    uint32_t m[K_N], c[3], choice, content;
    lf_fast_usage u;

    lf_jdoc_init(&d, nodes, LF_WIRE_ANSWER_NODES);
    if (lf_jscan_index(&d, body, len) != 0 || d.nodes[0].type != LF_JS_OBJECT) return 0;
    lf_jdoc_members(&d, 0, keys, K_N, m);
    if (lf_jdoc_type(&d, m[K_ERROR]) > LF_JS_NULL || lf_jdoc_type(&d, m[K_CHOICES]) != LF_JS_ARRAY) return 0;
    choice = lf_jdoc_first_choice(&d, m[K_CHOICES], choice_keys, 3, c);
    if (lf_jdoc_type(&d, choice) != LF_JS_OBJECT || lf_jdoc_type(&d, c[1]) != LF_JS_OBJECT) return 0;
    content = lf_jdoc_member(&d, c[1], lf_key_content);
    if (lf_jdoc_type(&d, content) == LF_JS_ARRAY) return 0; /* content parts: json-c's */
    if (lf_fast_usage_read(&d, m[K_USAGE], lf_openai_usage_keys, &u) != 0) return 0;

    if (lf_jdoc_add_text(&d, content, &out->text) != 0 ||
        lf_jdoc_take_string(&d, c[2], &out->finish_reason) != 0 ||
        lf_jdoc_take_string(&d, m[K_MODEL], &out->model) != 0 ||
        lf_jdoc_take_string(&d, m[K_ID], &out->id) != 0)
        return -1;
    lf_fast_usage_apply(&u, out);
    return 1;
}

/* lf_wire_anthropic_answer for a successful message: 1 done, 0 left to
 * json-c, -1 out of memory. */
static int lf_wire_anthropic_fast(const char *body, size_t len, lf_answer *out)
{
    enum { K_TYPE, K_ERROR, K_CONTENT, K_STOP, K_MODEL, K_ID, K_USAGE, K_N };
    static const lf_jkey keys[K_N] = { LF_JKEY("type"), LF_JKEY("error"), LF_JKEY("content"),
                                       LF_JKEY("stop_reason"), LF_JKEY("model"), LF_JKEY("id"),
                                       LF_JKEY("usage") };
    static const lf_jkey part_keys[2] = { LF_JKEY("type"), LF_JKEY("text") };
    static const lf_jkey error_type = LF_JKEY("error");
    lf_jnode nodes[LF_WIRE_ANSWER_NODES];
    lf_jdoc d;
    uint32_t m[K_N], part;
    lf_fast_usage u;

    lf_jdoc_init(&d, nodes, LF_WIRE_ANSWER_NODES);
    if (lf_jscan_index(&d, body, len) != 0 || d.nodes[0].type != LF_JS_OBJECT) return 0;
    lf_jdoc_members(&d, 0, keys, K_N, m);
    if (lf_jdoc_string_is(&d, m[K_TYPE], error_type) || lf_jdoc_type(&d, m[K_ERROR]) > LF_JS_NULL ||
        lf_jdoc_type(&d, m[K_CONTENT]) != LF_JS_ARRAY)
        return 0;
    if (lf_fast_usage_read(&d, m[K_USAGE], lf_anthropic_usage_keys, &u) != 0) return 0;

    /* Text blocks count; tool_use, thinking and the rest carry no text. */
    for (part = lf_jdoc_first(&d, m[K_CONTENT]); part != LF_JNODE_NONE;
         part = lf_jdoc_next(&d, m[K_CONTENT], part)) {
        uint32_t p[2];

        lf_jdoc_members(&d, part, part_keys, 2, p);
        if (lf_jdoc_type(&d, p[1]) != LF_JS_STRING || !lf_jdoc_string_is(&d, p[0], lf_key_text)) continue;
        if (lf_jdoc_add_text(&d, p[1], &out->text) != 0) return -1;
    }
    if (lf_jdoc_take_string(&d, m[K_STOP], &out->finish_reason) != 0 ||
        lf_jdoc_take_string(&d, m[K_MODEL], &out->model) != 0 ||
        lf_jdoc_take_string(&d, m[K_ID], &out->id) != 0)
        return -1;
    lf_fast_usage_apply(&u, out);
    return 1;
}

/* The fast path alone (see lf_wire.h). */
int lf_wire_parse_response_jscan(lf_api api, const char *body, size_t len, lf_answer *out)
{
    int rc;

    lf_answer_clear(out);
    rc = api == LF_API_ANTHROPIC ? lf_wire_anthropic_fast(body, len, out) : lf_wire_openai_fast(body, len, out);
    if (rc > 0) return LF_WIRE_OK;
    lf_answer_clear(out);
    return rc < 0 ? LF_WIRE_INVALID : -1;
}

static int lf_wire_parse_response_with(lf_api api, const char *body, size_t len,
                                       lf_answer *out, lf_wire_error *err, int fast, int tool)
{
    lf_wire_error scratch;
    json_object *root;
    int rc;

    if (err) lf_wire_error_clear(err);
    if (fast) {
        rc = lf_wire_parse_response_jscan(api, body, len, out);
        if (rc >= 0) return rc;
    }
    lf_answer_clear(out);
    lf_wire_error_init(&scratch);
    if (!err) err = &scratch;
    root = lf_json_parse(body, len);
    if (!root) {
        rc = LF_WIRE_INVALID;
    } else {
        rc = api == LF_API_ANTHROPIC ? lf_wire_anthropic_answer(root, out, err, tool)
                                     : lf_wire_openai_answer(root, out, err);
        json_object_put(root);
    }
    if (rc != LF_WIRE_OK) lf_answer_clear(out);
    if (rc != LF_WIRE_ERROR_BODY) lf_wire_error_clear(err);
    lf_wire_error_free(&scratch);
    return rc;
}

int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 1, 0);
}

int lf_wire_parse_tool_response(lf_api api, const char *body, size_t len,
                                lf_answer *out, lf_wire_error *err)
{
    /* Schema answers are rare next to text: json-c alone reads them. */
    return lf_wire_parse_response_with(api, body, len, out, err, 0, 1);
}

int lf_wire_parse_response_json_c(lf_api api, const char *body, size_t len,
                                  lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 0, 0);
}
