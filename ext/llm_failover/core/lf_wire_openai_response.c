/* What OpenAI chat completions (and every compatible API) answer: a plain
 * answer, stream events, and the embeddings answer, read by json-c. Error
 * bodies of any shape are lf_wire_error.c's: compatible servers answer with
 * other APIs' shapes. */
#include "lf_wire_openai.h"

#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* The choice with index 0 (servers that stream n > 1 interleave choices),
 * else the first one; NULL when there is none. */
static json_object *lf_openai_first_choice(json_object *choices)
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

/* Token counts of a usage object into a; 1 when seen. */
static int lf_openai_usage(json_object *usage, lf_answer *a)
{
    int seen = 0;

    if (!usage || !json_object_is_type(usage, json_type_object)) return 0;
    seen |= lf_json_take_count(usage, "prompt_tokens", &a->input_tokens);
    seen |= lf_json_take_count(usage, "completion_tokens", &a->output_tokens);
    /* prompt_tokens holds the cached ones already. */
    lf_json_take_count(lf_json_get(usage, "prompt_tokens_details"), "cached_tokens", &a->cached_input_tokens);
    return seen;
}

/* ------------------------------------------- a plain answer */

/* message.tool_calls[]: {id, type: "function", function: {name, arguments}};
 * a message of an older server may carry one function_call {name,
 * arguments} instead. */
static int lf_openai_calls(json_object *message, lf_answer *out)
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

int lf_wire_openai_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *choices, *choice, *message;

    if (lf_json_get(root, "error") || json_object_is_type(root, json_type_array))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choices = lf_json_get_typed(root, "choices", json_type_array);
    if (!choices)
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    choice = lf_openai_first_choice(choices);
    message = lf_json_get_typed(choice, "message", json_type_object);
    if (!message) return LF_WIRE_INVALID;
    /* content is null for a refusal or a tool call: that is an empty text. */
    if (lf_wire_append_content(&out->text, lf_json_get(message, "content"), 0) != 0 ||
        lf_json_take_string(choice, "finish_reason", &out->finish_reason) != 0 ||
        lf_json_take_string(root, "model", &out->model) != 0 ||
        lf_json_take_string(root, "id", &out->id) != 0 ||
        lf_openai_calls(message, out) != 0 || lf_wire_finish_reason(&out->finish_reason) != 0)
        return LF_WIRE_INVALID;
    lf_openai_usage(lf_json_get(root, "usage"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------- stream events */

/* delta.tool_calls[]: {index, id, type, function: {name, arguments}}, the
 * id and name on a call's first piece, its arguments in pieces. A piece
 * without an index continues the last call unless it brings an id; a piece
 * whose id differs from the call's at its index starts a new call (servers
 * that give every call index 0). */
static int lf_openai_stream_calls(lf_stream_state *s, json_object *calls)
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
            c = lf_wire_stream_call(s, key);
        } else {
            key = s->n_calls ? s->call_keys[s->n_calls - 1] : 0;
            c = id || !s->n_calls ? NULL : &s->calls[s->n_calls - 1];
            if (id && s->n_calls) key++;
        }
        if (c && id && c->id.len &&
            !lf_bytes_are(json_object_get_string(id), (size_t)json_object_get_string_len(id), lf_buf_cstr(&c->id)))
            c = NULL;
        if (!c && !(c = lf_wire_stream_new_call(s, key))) return -1;
        if (lf_wire_stream_set(&c->id, id) != 0 || lf_wire_stream_set(&c->name, lf_json_get(fn, "name")) != 0)
            return -1;
        if (args && !json_object_is_type(args, json_type_string)) {
            /* An object for arguments (a server that sends the call whole). */
            if (lf_json_value_text(args, &c->arguments) != 0) return -1;
        } else if (lf_wire_stream_piece(&c->arguments, args) != 0) {
            return -1;
        }
    }
    return 0;
}

static int lf_openai_stream_chunk(lf_stream_state *s, json_object *root)
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
    choice = choices ? lf_openai_first_choice(choices) : NULL;
    if (choice && json_object_is_type(choice, json_type_object)) {
        json_object *delta = lf_json_get(choice, "delta");

        if (lf_wire_stream_text(s, lf_json_get(delta, "content")) != 0 ||
            lf_openai_stream_calls(s, lf_json_get(delta, "tool_calls")) != 0)
            return LF_STREAM_INVALID;
        if (lf_json_get_typed(choice, "finish_reason", json_type_string) &&
            lf_wire_stream_finish(s, choice, "finish_reason") != 0)
            return LF_STREAM_INVALID;
    }
    /* DeepSeek and Mistral put usage on the finish_reason chunk, OpenAI on
     * a last chunk of its own; "usage": null elsewhere. */
    usage = lf_json_get(root, "usage");
    if (lf_openai_usage(usage, &s->answer)) s->has_usage = 1;
    return LF_STREAM_CONTINUE;
}

static int lf_openai_is_done_marker(const char *d, size_t n)
{
    while (n && lf_wire_is_ws(d[0])) { d++; n--; }
    while (n && lf_wire_is_ws(d[n - 1])) n--;
    return n == 6 && memcmp(d, "[DONE]", 6) == 0;
}

int lf_wire_openai_stream_event(lf_stream_state *s, const lf_sse_event *ev)
{
    json_object *root;
    int rc;

    if (lf_openai_is_done_marker(ev->data, ev->data_len)) {
        s->done = 1;
        return lf_wire_stream_publish(s) != 0 ? LF_STREAM_INVALID : LF_STREAM_DONE;
    }
    root = lf_json_parse(ev->data, ev->data_len);
    if (!root) return LF_STREAM_INVALID;
    if (!json_object_is_type(root, json_type_object) && !json_object_is_type(root, json_type_array))
        rc = LF_STREAM_INVALID;
    else
        rc = lf_openai_stream_chunk(s, root);
    json_object_put(root);
    return rc;
}

/* ------------------------------------------- the embeddings answer */

/* One data item's vector into its row; 0, or -1 when it is not one. */
static int lf_openai_embedding_row(json_object *embedding, double *row, size_t dims)
{
    size_t k;

    for (k = 0; k < dims; k++) {
        json_object *x = json_object_array_get_idx(embedding, k);
        double d;

        if (!json_object_is_type(x, json_type_double) && !json_object_is_type(x, json_type_int)) return -1;
        d = json_object_get_double(x);
        if (!isfinite(d)) return -1;
        row[k] = d;
    }
    return 0;
}

/* data[] into out->vectors, rows by index. */
static int lf_openai_embedding_rows(json_object *data, size_t n_inputs, lf_answer *out)
{
    size_t i, dims = 0;
    char *seen;
    int rc = LF_WIRE_INVALID;

    if (json_object_array_length(data) != n_inputs || n_inputs == 0) return LF_WIRE_INVALID;
    for (i = 0; i < n_inputs; i++) {
        json_object *v = lf_json_get_typed(json_object_array_get_idx(data, i), "embedding", json_type_array);
        size_t d = v ? json_object_array_length(v) : 0;

        if (!d || (dims && d != dims)) return LF_WIRE_INVALID;
        dims = d;
    }
    seen = calloc(n_inputs, 1);
    out->vectors = malloc(n_inputs * dims * sizeof(double));
    if (!seen || !out->vectors) goto done;
    for (i = 0; i < n_inputs; i++) {
        json_object *item = json_object_array_get_idx(data, i);
        json_object *index = lf_json_get_typed(item, "index", json_type_int);
        /* A server that leaves index out answers in input order. */
        int64_t at = index ? json_object_get_int64(index) : (int64_t)i;

        if (at < 0 || (uint64_t)at >= n_inputs || seen[at]) goto done;
        seen[at] = 1;
        if (lf_openai_embedding_row(lf_json_get(item, "embedding"), out->vectors + (size_t)at * dims, dims) != 0)
            goto done;
    }
    out->n_vectors = n_inputs;
    out->dims = dims;
    rc = LF_WIRE_OK;
done:
    free(seen);
    return rc;
}

int lf_wire_parse_embeddings(const char *body, size_t len, size_t n_inputs, lf_answer *out, lf_wire_error *err)
{
    json_object *root, *data;
    lf_wire_error scratch;
    int rc;

    err = lf_wire_parse_begin(out, err, &scratch);
    root = lf_json_parse(body, len);
    data = lf_json_get_typed(root, "data", json_type_array);
    if (!root) rc = LF_WIRE_INVALID;
    else if (!data || lf_json_get(root, "error"))
        rc = lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    else
        rc = lf_openai_embedding_rows(data, n_inputs, out);
    if (rc == LF_WIRE_OK) {
        lf_json_take_string(root, "model", &out->model);
        lf_json_take_count(lf_json_get(root, "usage"), "prompt_tokens", &out->input_tokens);
        out->output_tokens = 0;
    }
    json_object_put(root);
    return lf_wire_parse_end(rc, out, err, &scratch);
}
