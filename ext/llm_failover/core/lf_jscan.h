/* A small strict JSON scanner for the streaming hot path.
 *
 * It checks that a text is one JSON document inside a conservative subset of
 * RFC 8259 and then finds members and elements in place, without building a
 * tree or allocating. A streamed answer is thousands of small events; reading
 * each with json-c (a tree of hash tables, a tokener and a locale switch per
 * parse) cost more than everything else the core does per event
 * (bench/README.md).
 *
 * The subset leaves out what json-c might read differently or what is rare:
 * \u escapes, numbers with an exponent or more than 18 digits on either side
 * of the point, control bytes inside strings, whitespace other than space,
 * tab, CR and LF, and nesting deeper than LF_JSCAN_MAX_DEPTH. A text outside
 * the subset is not judged: lf_jscan_document returns -1 and the caller hands
 * the text to json-c, which decides. Inside the subset, a value reads the same
 * as json-c reads it (test/c/test_jscan.c and fuzz/fuzz_jscan.c compare the
 * two on every recorded event and on fuzzed ones). */
#ifndef LF_JSCAN_H
#define LF_JSCAN_H

#include <stddef.h>
#include "lf_buf.h"

#define LF_JSCAN_MAX_DEPTH 32
#define LF_JSCAN_MAX_KEYS 16   /* keys per lf_jscan_members call; more are ignored */

typedef enum lf_js_type {
    LF_JS_NONE = 0,   /* absent (no such member, no more elements) */
    LF_JS_NULL,
    LF_JS_TRUE,
    LF_JS_FALSE,
    LF_JS_NUMBER,
    LF_JS_STRING,
    LF_JS_ARRAY,
    LF_JS_OBJECT
} lf_js_type;

/* A value of a checked document: its type and its text (a string's text
 * includes the quotes). Valid while the document's bytes are. */
typedef struct lf_js {
    lf_js_type type;
    const char *p;
    size_t n;
} lf_js;

/* 0 and *root set when p[0..n) is one document in the subset (whitespace
 * around it allowed); -1 otherwise. */
int lf_jscan_document(const char *p, size_t n, lf_js *root);

/* The member named key (plain ASCII, no escapes) of an object from a checked
 * document; the last one when the name repeats, as json-c keeps it. NONE when
 * obj is not an object or has no such member. */
lf_js lf_jscan_member(lf_js obj, const char *key);

/* Several members in one pass: out[i] is the member named keys[i] (NONE
 * when absent); returns how many were found. At most LF_JSCAN_MAX_KEYS. */
size_t lf_jscan_members(lf_js obj, const char *const *keys, size_t n_keys, lf_js *out);

/* Walks an array of a checked document: *pos starts at 0; returns 1 and sets
 * *elem for each element in turn, then 0. */
int lf_jscan_next(lf_js arr, size_t *pos, lf_js *elem);

/* 1 when v is an integer literal equal to zero ("0" or "-0"). */
int lf_jscan_is_zero_int(lf_js v);

/* Appends a string value's bytes, escapes decoded; 0, or -1 when out of
 * memory (out is then as it was). */
int lf_jscan_string_append(lf_js s, lf_buf *out);

/* 1 when a string value holds no escapes: its bytes are s.p + 1, s.n - 2. */
int lf_jscan_string_is_plain(lf_js s);

#endif
