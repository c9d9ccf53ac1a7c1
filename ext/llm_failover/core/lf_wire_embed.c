/* Embeddings on the wire: the OpenAI-compatible /embeddings request body and
 * its answer, read by json-c. One request kind beside chat (lf_wire.h): the
 * attempt loop sends, classifies, retries and fails over such a request as
 * it does a chat one. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_wire_internal.h"

#include "lf_banned.h"

const char *lf_wire_path_for(lf_api api, lf_request_kind kind)
{
    return kind == LF_REQUEST_EMBEDDINGS ? "/embeddings" : lf_wire_path(api);
}

int lf_wire_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    size_t i, size = 96;

    if (p->api != LF_API_OPENAI) {
        lf_wire_fail(errmsg, "embeddings need an OpenAI-compatible API (Anthropic has no embeddings endpoint)");
        return -1;
    }
    if (!p->model || !p->model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->n_inputs < 1 || p->n_inputs > LF_EMBED_MAX_INPUTS || !p->inputs) {
        lf_wire_fail(errmsg, "embeddings need 1 to %d texts, got %zu", LF_EMBED_MAX_INPUTS, p->n_inputs);
        return -1;
    }
    for (i = 0; i < p->n_inputs; i++) {
        /* Providers refuse an empty input with a 400 that retrying cannot fix. */
        if (!p->inputs[i].ptr || !p->inputs[i].len) {
            lf_wire_fail(errmsg, "text %zu to embed is empty", i);
            return -1;
        }
        size += p->inputs[i].len + 4;
    }
    if (lf_buf_reserve(out, size + strlen(p->model)) != 0 || lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 || lf_buf_append_str(out, ",\"input\":[") != 0)
        goto oom;
    for (i = 0; i < p->n_inputs; i++) {
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_json_put_string(out, p->inputs[i].ptr, p->inputs[i].len) != 0)
            goto oom;
    }
    /* Floats, not base64: every compatible server speaks that. */
    if (lf_buf_append_str(out, "],\"encoding_format\":\"float\"}") != 0) goto oom;
    return 0;
oom:
    lf_buf_clear(out);
    lf_wire_fail(errmsg, "out of memory building the request");
    return -1;
}

/* One data item's vector into its row; 0, or -1 when it is not one. */
static int lf_wire_embedding_row(json_object *embedding, double *row, size_t dims)
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
static int lf_wire_embedding_rows(json_object *data, size_t n_inputs, lf_answer *out)
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
        if (lf_wire_embedding_row(lf_json_get(item, "embedding"), out->vectors + (size_t)at * dims, dims) != 0)
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
        rc = lf_wire_embedding_rows(data, n_inputs, out);
    if (rc == LF_WIRE_OK) {
        lf_json_take_string(root, "model", &out->model);
        lf_json_take_count(lf_json_get(root, "usage"), "prompt_tokens", &out->input_tokens);
        out->output_tokens = 0;
    }
    json_object_put(root);
    return lf_wire_parse_end(rc, out, err, &scratch);
}
