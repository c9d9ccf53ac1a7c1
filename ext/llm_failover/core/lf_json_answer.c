/* The JSON answer check (see lf_json_answer.h): one standard JSON object,
 * then the schema's check (lf_json_schema.c). */
#include "lf_json_answer.h"

#include <stdarg.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_utf8.h"

#include "lf_banned.h"

/* why = the message (lf_utf8_vsetf); returns LF_JSON_ANSWER_BAD, or -1 when
 * out of memory. */
static int lf_ja_fail(lf_buf *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int lf_ja_fail(lf_buf *why, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = lf_utf8_vsetf(why, fmt, ap);
    va_end(ap);
    return rc != 0 ? -1 : LF_JSON_ANSWER_BAD;
}

static const char *lf_ja_type_of(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "boolean";
    case json_type_double: return "number";
    case json_type_int: return "integer";
    case json_type_object: return "object";
    case json_type_array: return "array";
    case json_type_string: return "string";
    default: return "unknown";
    }
}

/* The span of text that should be the object: trimmed, and the inside of a
 * Markdown code fence (```json ... ```) when the whole answer is one. */
static void lf_ja_unfence(const char *text, size_t len, size_t *start, size_t *n)
{
    size_t a = 0, b = len, nl;

    while (a < b && lf_wire_is_ws(text[a])) a++;
    while (b > a && lf_wire_is_ws(text[b - 1])) b--;
    if (b - a >= 6 && memcmp(text + a, "```", 3) == 0 && memcmp(text + b - 3, "```", 3) == 0) {
        for (nl = a + 3; nl < b - 3 && text[nl] != '\n'; nl++) {}
        if (nl < b - 3) { /* the info string ("json") ends at the first newline */
            a = nl + 1;
            b -= 3;
            while (a < b && lf_wire_is_ws(text[a])) a++;
            while (b > a && lf_wire_is_ws(text[b - 1])) b--;
        }
    }
    *start = a;
    *n = b - a;
}

int lf_json_answer_check(const char *text, size_t len, json_object *schema,
                         lf_buf *json_out, lf_buf *why)
{
    json_object *v;
    size_t start, n, bad;
    int rc;

    lf_buf_clear(json_out);
    lf_buf_clear(why);
    if (!text) text = "";
    lf_ja_unfence(text, len, &start, &n);
    if (!n) return lf_ja_fail(why, "the answer is empty, not a JSON object");
    bad = lf_json_nonstandard_at(text + start, n, 1);
    /* Refused at its first byte, it is prose; further in, JSON-like text
     * (NaN, single quotes, a raw control character) a strict reader refuses. */
    if (bad == 1) return lf_ja_fail(why, "the answer is not JSON");
    if (bad)
        return lf_ja_fail(why, "the answer is not standard JSON (RFC 8259) at byte %zu: NaN, Infinity, "
                                     "single quotes, a raw control character or a bad escape or number",
                          start + bad - 1);
    v = lf_json_parse(text + start, n);
    if (!v) return -1;   /* a standard text json-c could not hold: out of memory */
    if (!json_object_is_type(v, json_type_object)) {
        rc = lf_ja_fail(why, "the answer is a JSON %s, not an object", lf_ja_type_of(v));
        json_object_put(v);
        return rc;
    }
    rc = 0;
    if (schema) {
        rc = lf_json_schema_check(schema, v, why);
        if (rc > 0) {
            /* "$.city: expected string" reads better as "the answer does not match the schema: ..." */
            lf_buf msg;

            lf_buf_init(&msg);
            if (lf_buf_append_str(&msg, "the answer does not match the schema: ") != 0 ||
                lf_buf_append(&msg, lf_buf_cstr(why), why->len) != 0)
                rc = -1;
            else
                lf_buf_move(why, &msg);
            lf_buf_free(&msg);
            if (rc > 0) rc = LF_JSON_ANSWER_BAD;
        }
    }
    /* The object as the answer wrote it (a fence and surrounding whitespace
     * gone), not json-c's writing of it: json-c holds integers in 64 bits and
     * would clamp a bigger one. */
    if (rc == 0 && lf_buf_append(json_out, text + start, n) != 0) rc = -1;
    json_object_put(v);
    return rc;
}
