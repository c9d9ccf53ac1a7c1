/* Reading JSON with json-c: one strict document at a time, and the typed
 * lookups the protocol readers use. Every string taken out is sanitized to
 * valid UTF-8. */
#include "lf_json_read.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lf_utf8.h"

#include "lf_banned.h"

/* Deeper than any real answer (usage.cache_creation is at depth 4), shallow
 * enough that a hostile body cannot make json-c recurse far. */
#define LF_WIRE_JSON_DEPTH 64
/* json_tokener_parse_ex takes an int length: longer bodies go in slices. */
#define LF_WIRE_JSON_SLICE ((size_t)1 << 30)

int lf_wire_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One JSON document, with nothing but whitespace around it; NULL when the
 * text is not that. The length is explicit: NUL bytes are data here. */
json_object *lf_json_parse(const char *s, size_t n)
{
    struct json_tokener *tok;
    json_object *obj = NULL;
    size_t start = 0, slice, end;

    if (!s) return NULL;
    tok = json_tokener_new_ex(LF_WIRE_JSON_DEPTH);
    if (!tok) return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    for (;;) {
        slice = n - start;
        if (slice > LF_WIRE_JSON_SLICE) slice = LF_WIRE_JSON_SLICE;
        obj = json_tokener_parse_ex(tok, s + start, (int)slice);
        if (obj) break;
        if (json_tokener_get_error(tok) != json_tokener_continue) break;
        start += slice;
        if (start >= n) break;   /* the text ended inside the document */
    }
    if (obj) {
        end = start + json_tokener_get_parse_end(tok);
        for (; end < n; end++) {
            if (!lf_wire_is_ws(s[end])) {
                json_object_put(obj);
                obj = NULL;
                break;
            }
        }
    }
    json_tokener_free(tok);
    return obj;
}

/* The member key of object o, or NULL when o is not an object, the key is
 * missing or its value is null. */
json_object *lf_json_get(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object)) return NULL;
    if (!json_object_object_get_ex(o, key, &v)) return NULL;
    return v;
}

json_object *lf_json_get_typed(json_object *o, const char *key, json_type type)
{
    json_object *v = lf_json_get(o, key);

    return v && json_object_is_type(v, type) ? v : NULL;
}

/* Sets out to the string member key when there is one; leaves it otherwise. */
int lf_json_take_string(json_object *o, const char *key, lf_buf *out)
{
    json_object *v = lf_json_get_typed(o, key, json_type_string);

    if (!v) return 0;
    return lf_utf8_set_sanitized(out, json_object_get_string(v),
                                 (size_t)json_object_get_string_len(v));
}

/* Exact, length included: "text\u0000junk" is not "text". */
int lf_bytes_are(const char *s, size_t n, const char *want)
{
    size_t wn = strlen(want);

    return n == wn && memcmp(s, want, n) == 0;
}

int lf_json_string_is(json_object *o, const char *key, const char *want)
{
    json_object *v = lf_json_get_typed(o, key, json_type_string);

    return v && lf_bytes_are(json_object_get_string(v), (size_t)json_object_get_string_len(v), want);
}

/* A token count: a non-negative integer (or an integral double). Returns 1
 * and sets *out when the member is one. */
int lf_json_take_count(json_object *o, const char *key, long *out)
{
    json_object *v = lf_json_get(o, key);
    double d;
    int64_t i;

    if (!v) return 0;
    if (json_object_is_type(v, json_type_int)) {
        i = json_object_get_int64(v);
        if (i < 0 || (uint64_t)i > (uint64_t)LONG_MAX) return 0;
        *out = (long)i;
        return 1;
    }
    if (json_object_is_type(v, json_type_double)) {
        d = json_object_get_double(v);
        if (!(d >= 0.0 && d < (double)LONG_MAX) || d != floor(d)) return 0;
        *out = (long)d;
        return 1;
    }
    return 0;
}

/* Any value as text: a string as itself, anything else as its JSON. */
int lf_json_value_text(json_object *v, lf_buf *out)
{
    const char *s;
    size_t n = 0;

    lf_buf_clear(out);
    if (!v) return 0;
    if (json_object_is_type(v, json_type_string))
        return lf_utf8_append_sanitized(out, json_object_get_string(v),
                                        (size_t)json_object_get_string_len(v));
    s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (!s) return -1;
    return lf_utf8_append_sanitized(out, s, n);
}
