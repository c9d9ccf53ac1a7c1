/* An answer, whatever the protocol: its fields, the list of tool calls it
 * holds, and what every response parser does around its own reading. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

void lf_answer_init(lf_answer *a)
{
    lf_buf_init(&a->text);
    lf_buf_init(&a->model);
    lf_buf_init(&a->finish_reason);
    lf_buf_init(&a->id);
    a->input_tokens = -1;
    a->output_tokens = -1;
    a->cached_input_tokens = -1;
    a->cache_write_tokens = -1;
    a->tool_calls = NULL;
    a->n_tool_calls = 0;
    a->cap_tool_calls = 0;
    lf_buf_init(&a->reasoning);
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
    a->cached_input_tokens = -1;
    a->cache_write_tokens = -1;
    /* The array stays for the next answer; the calls go. */
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    a->n_tool_calls = 0;
    lf_buf_clear(&a->reasoning);
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
    a->cached_input_tokens = -1;
    a->cache_write_tokens = -1;
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    free(a->tool_calls);
    a->tool_calls = NULL;
    a->n_tool_calls = 0;
    a->cap_tool_calls = 0;
    lf_buf_free(&a->reasoning);
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
    lf_buf_move(&dst->reasoning, &src->reasoning);
    lf_answer_drop_vectors(dst);
    dst->vectors = src->vectors;
    dst->n_vectors = src->n_vectors;
    dst->dims = src->dims;
    src->vectors = NULL;
    src->n_vectors = src->dims = 0;
}

/* ------------------------------------------- an answer's calls */

lf_answer_call *lf_wire_call_push(lf_answer_call **v, long **keys, size_t *n, size_t *cap, long key)
{
    lf_answer_call *c;

    if (*n == *cap) {
        size_t want = *cap ? *cap * 2 : 4;
        lf_answer_call *nv = realloc(*v, want * sizeof *nv);

        if (!nv) return NULL;
        *v = nv;
        if (keys) {
            long *nk = realloc(*keys, want * sizeof *nk);

            if (!nk) return NULL;
            *keys = nk;
        }
        *cap = want;
    }
    c = &(*v)[*n];
    lf_buf_init(&c->id);
    lf_buf_init(&c->name);
    lf_buf_init(&c->arguments);
    lf_buf_init(&c->signature);
    if (keys) (*keys)[*n] = key;
    (*n)++;
    return c;
}

void lf_wire_calls_free(lf_answer_call *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        lf_buf_free(&v[i].id);
        lf_buf_free(&v[i].name);
        lf_buf_free(&v[i].arguments);
        lf_buf_free(&v[i].signature);
    }
}

int lf_wire_call_done(lf_answer_call *c)
{
    return c->arguments.len ? 0 : lf_buf_set(&c->arguments, "{}", 2);
}

int lf_wire_answer_call(lf_answer *out, json_object *id, json_object *name, json_object *arguments)
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

int lf_wire_finish_reason(lf_buf *reason)
{
    /* function_call: OpenAI's name before tool_calls, still sent by some
     * compatible servers. */
    if (!lf_bytes_are(lf_buf_cstr(reason), reason->len, "tool_use") &&
        !lf_bytes_are(lf_buf_cstr(reason), reason->len, "function_call"))
        return 0;
    return lf_buf_set(reason, LF_FINISH_TOOL_CALLS, strlen(LF_FINISH_TOOL_CALLS));
}

/* ------------------------------------------- around every parser */

/* A string, or an array of parts of which the {"type":"text","text":...}
 * ones count (Anthropic's content blocks, and the content arrays some
 * OpenAI-compatible servers answer with); with tool, a tool_use block's input
 * too, as its JSON (the forced tool call of a schema request: its input is
 * the answer). Other values and other parts (thinking, ...) carry no text. */
int lf_wire_append_content(lf_buf *text, json_object *content, int tool)
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
            if (lf_json_append_written(text, input) != 0) return -1;
            continue;
        }
        if (!t || !lf_json_string_is(part, "type", "text")) continue;
        if (lf_utf8_append_sanitized(text, json_object_get_string(t),
                                     (size_t)json_object_get_string_len(t)) != 0)
            return -1;
    }
    return 0;
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
