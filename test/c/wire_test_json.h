/* What the wire tests read JSON and buffers with: members by name, a text
 * parsed by json-c alone (not the gem's reader), two JSON texts compared, a
 * buffer checked against a string. */
#ifndef WIRE_TEST_JSON_H
#define WIRE_TEST_JSON_H

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_test.h"

static inline json_object *jget(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object)) return NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static inline const char *jstr(json_object *o, const char *key)
{
    json_object *v = jget(o, key);

    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* An integer member, -1 when there is none. */
static inline long jlong(json_object *o, const char *key)
{
    json_object *v = jget(o, key);

    return v && json_object_is_type(v, json_type_int) ? (long)json_object_get_int64(v) : -1;
}

static inline json_object *parse(const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);

    json_tokener_free(tok);
    return o;
}

/* Two JSON texts hold the same value. */
static inline int json_same(const char *a, size_t an, const char *b, size_t bn)
{
    json_object *x = parse(a, an), *y = parse(b, bn);
    int same = x && y && json_object_equal(x, y);

    json_object_put(x);
    json_object_put(y);
    return same;
}

static inline int buf_is(const lf_buf *b, const char *s)
{
    return s && b->len == strlen(s) && memcmp(lf_buf_cstr(b), s, b->len) == 0;
}

#define CHECK_BUF(b, s) do { \
    const char *check_want_ = (s); \
    if (!buf_is(&(b), check_want_)) { \
        fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, \
                check_want_ ? check_want_ : "(null)", lf_buf_cstr(&(b))); \
        lf_test_current_failed = 1; \
    } \
} while (0)

#endif
