/* Error bodies: every shape of WIRE.md, read into an lf_wire_error. */
#include "lf_wire.h"

#include <json-c/json.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

void lf_wire_error_init(lf_wire_error *e)
{
    lf_buf_init(&e->type);
    lf_buf_init(&e->code);
    lf_buf_init(&e->message);
    e->retry_after = -1;
}

void lf_wire_error_clear(lf_wire_error *e)
{
    lf_buf_clear(&e->type);
    lf_buf_clear(&e->code);
    lf_buf_clear(&e->message);
    e->retry_after = -1;
}

void lf_wire_error_free(lf_wire_error *e)
{
    lf_buf_free(&e->type);
    lf_buf_free(&e->code);
    lf_buf_free(&e->message);
}

static int lf_wire_error_empty(const lf_wire_error *e)
{
    return !e->type.len && !e->code.len && !e->message.len;
}

/* FastAPI's validation errors: [{"loc": [...], "msg": "...", ...}, ...]. */
static int lf_wire_detail_list(json_object *detail, lf_buf *out)
{
    size_t i, n = json_object_array_length(detail);

    lf_buf_clear(out);
    for (i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(detail, i);
        json_object *msg = json_object_is_type(item, json_type_string)
                               ? item : lf_json_get_typed(item, "msg", json_type_string);

        if (!msg) continue;
        if (out->len && lf_buf_append(out, "; ", 2) != 0) return -1;
        if (lf_utf8_append_sanitized(out, json_object_get_string(msg),
                                     (size_t)json_object_get_string_len(msg)) != 0)
            return -1;
    }
    return 0;
}

/* A google.protobuf.Duration in JSON ("48s", "0.250s"): its seconds, or -1. */
static double lf_google_duration(json_object *v)
{
    const char *s = v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    double seconds = 0, scale = 1;
    int digits = 0;

    if (!s) return -1;
    for (; *s >= '0' && *s <= '9' && digits < 12; s++, digits++) seconds = seconds * 10 + (*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) seconds += (*s - '0') * (scale /= 10);
    return digits && s[0] == 's' && s[1] == '\0' ? seconds : -1;
}

/* Google's error.details[]: an ErrorInfo's reason (API_KEY_INVALID, ...)
 * names the error better than the numeric code, which repeats the status; a
 * RetryInfo's retryDelay is the wait a 429 asks for (Gemini sends no
 * Retry-After header). */
static int lf_google_details(json_object *details, lf_wire_error *e)
{
    size_t i, n = details && json_object_is_type(details, json_type_array) ? json_object_array_length(details) : 0;

    for (i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(details, i);
        json_object *reason = lf_json_get_typed(d, "reason", json_type_string);

        if (reason && json_object_get_string_len(reason) > 0 && lf_json_take_string(d, "reason", &e->code) != 0)
            return -1;
        if (lf_json_get(d, "retryDelay")) e->retry_after = lf_google_duration(lf_json_get(d, "retryDelay"));
    }
    return 0;
}

/* Fills e from a parsed body; 1 when it has one of the error shapes. */
int lf_wire_error_from_json(json_object *root, lf_wire_error *e)
{
    json_object *err, *detail, *msg;
    size_t i, n;

    lf_wire_error_clear(e);
    if (!root) return 0;
    if (json_object_is_type(root, json_type_array)) {
        /* Gemini's compat endpoint: [{"error": {...}}]. */
        n = json_object_array_length(root);
        for (i = 0; i < n; i++) {
            json_object *item = json_object_array_get_idx(root, i);

            if (lf_json_get(item, "error") && lf_wire_error_from_json(item, e)) return 1;
        }
        return 0;
    }
    if (!json_object_is_type(root, json_type_object)) return 0;

    err = lf_json_get(root, "error");
    if (err) {
        if (json_object_is_type(err, json_type_object)) {
            /* OpenAI and Anthropic name the kind "type"; Gemini "status". */
            if (lf_json_take_string(err, "type", &e->type) != 0 ||
                (!e->type.len && lf_json_take_string(err, "status", &e->type) != 0) ||
                lf_json_value_text(lf_json_get(err, "code"), &e->code) != 0 ||
                lf_json_value_text(lf_json_get(err, "message"), &e->message) != 0 ||
                lf_google_details(lf_json_get(err, "details"), e) != 0)
                goto nomem;
            /* Some servers omit every field we know: keep what they said. */
            if (lf_wire_error_empty(e) && lf_json_value_text(err, &e->message) != 0) goto nomem;
        } else if (lf_json_value_text(err, &e->message) != 0) {
            goto nomem;   /* {"error": "some string"} */
        }
        return 1;
    }

    detail = lf_json_get(root, "detail");
    if (detail) {
        if (json_object_is_type(detail, json_type_array)) {
            if (lf_wire_detail_list(detail, &e->message) != 0) goto nomem;
        } else if (json_object_is_type(detail, json_type_object)) {
            msg = lf_json_get(detail, "message");
            if (!msg) msg = lf_json_get(detail, "msg");
            if (lf_json_value_text(msg ? msg : detail, &e->message) != 0) goto nomem;
        } else if (lf_json_value_text(detail, &e->message) != 0) {
            goto nomem;
        }
        if (!e->message.len && lf_json_value_text(detail, &e->message) != 0) goto nomem;
        return 1;
    }

    msg = lf_json_get_typed(root, "message", json_type_string);
    if (msg) {
        /* {"message": "..."}; vLLM-style servers put type and code beside it. */
        if (lf_json_value_text(msg, &e->message) != 0 ||
            lf_json_take_string(root, "type", &e->type) != 0 ||
            lf_json_value_text(lf_json_get(root, "code"), &e->code) != 0)
            goto nomem;
        return 1;
    }
    return 0;

nomem:
    /* Still an error body; what could be kept is kept. */
    return 1;
}

int lf_wire_parse_error(const char *body, size_t len, lf_wire_error *e)
{
    json_object *root = lf_json_parse(body, len);
    int found;

    lf_wire_error_clear(e);
    if (!root) return 0;
    found = lf_wire_error_from_json(root, e);
    json_object_put(root);
    if (!found) lf_wire_error_clear(e);
    return found;
}
