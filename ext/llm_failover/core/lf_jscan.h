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
#include <stdint.h>
#include <string.h>
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

/* ---- indexed documents ------------------------------------------------
 *
 * lf_jscan_index checks a document exactly as lf_jscan_document does and, in
 * the same pass, writes one node per value into the caller's array, so that
 * finding a member or the next element afterwards costs a few instructions
 * per sibling instead of a walk over the text. A document with more values
 * than the array holds, or longer than 4 GiB, is refused (-1) like a text
 * outside the subset: the caller falls back to json-c. */

#define LF_JNODE_NONE UINT32_MAX      /* no such node */
#define LF_JNODE_ESCAPES 1u           /* a string value holding escapes */

/* Nodes are in document order: a container's values follow it, each one
 * followed by its own values, and "end" is the index just past the last of
 * them (i + 1 for a scalar), so the next value of the same container is at
 * nodes[i].end. */
typedef struct lf_jnode {
    uint32_t off, len;          /* the value's text (a string's with its quotes) */
    uint32_t key_off, key_len;  /* an object member's name as written, between the
                                 * quotes (left as they were for array values) */
    uint32_t end;               /* the index past this value's own values */
    uint8_t type;               /* lf_js_type */
    uint8_t flags;              /* LF_JNODE_* */
} lf_jnode;

typedef struct lf_jdoc {
    const char *text;
    size_t len;        /* of text */
    lf_jnode *nodes;   /* nodes[0] is the root */
    uint32_t cap;
    uint32_t count;
} lf_jdoc;

/* A member name for lookups, made with LF_JKEY from a string literal: plain
 * ASCII without '"', '\\', '/' or control characters, so that a name written
 * with escapes can never equal it. LF_JKEY pads the literal with eight NUL
 * bytes, so that its first eight bytes can be read as one word. */
typedef struct lf_jkey {
    const char *s;
    uint32_t n;
} lf_jkey;
#define LF_JKEY(lit) { (lit "\0\0\0\0\0\0\0\0"), (uint32_t)(sizeof(lit) - 1) }

void lf_jdoc_init(lf_jdoc *d, lf_jnode *nodes, uint32_t cap);
/* 0 when p[0..n) is one document in the subset with at most d->cap values
 * (then d->nodes[0] is its root); -1 otherwise. */
int lf_jscan_index(lf_jdoc *d, const char *p, size_t n);

/* The member named key of node obj (the last one when the name repeats, as
 * json-c keeps it); NONE when absent or when obj is not an object. */
uint32_t lf_jdoc_member(const lf_jdoc *d, uint32_t obj, lf_jkey key);
/* Several members in one walk: out[i] is the node of keys[i] (or NONE). At
 * most LF_JSCAN_MAX_KEYS keys; more are ignored. */
void lf_jdoc_members(const lf_jdoc *d, uint32_t obj, const lf_jkey *keys, size_t n_keys, uint32_t *out);

static inline lf_js_type lf_jdoc_type(const lf_jdoc *d, uint32_t i)
{
    return i == LF_JNODE_NONE ? LF_JS_NONE : (lf_js_type)d->nodes[i].type;
}

static inline lf_js lf_jdoc_value(const lf_jdoc *d, uint32_t i)
{
    lf_js v = { LF_JS_NONE, NULL, 0 };

    if (i != LF_JNODE_NONE) {
        v.type = (lf_js_type)d->nodes[i].type;
        v.p = d->text + d->nodes[i].off;
        v.n = d->nodes[i].len;
    }
    return v;
}

/* The first value of an array or object (NONE when empty or not one). */
static inline uint32_t lf_jdoc_first(const lf_jdoc *d, uint32_t i)
{
    return i != LF_JNODE_NONE && i + 1 < d->nodes[i].end ? i + 1 : LF_JNODE_NONE;
}

/* The value after i in its container c (NONE after the last). */
static inline uint32_t lf_jdoc_next(const lf_jdoc *d, uint32_t c, uint32_t i)
{
    uint32_t j = d->nodes[i].end;

    return j < d->nodes[c].end ? j : LF_JNODE_NONE;
}

/* 1 when node i is a string whose bytes (without quotes) equal want exactly;
 * a string written with escapes never does (see lf_jkey). */
static inline int lf_jdoc_string_is(const lf_jdoc *d, uint32_t i, lf_jkey want)
{
    const lf_jnode *x;

    if (i == LF_JNODE_NONE) return 0;
    x = &d->nodes[i];
    return x->type == LF_JS_STRING && x->len == want.n + 2 && !(x->flags & LF_JNODE_ESCAPES) &&
           memcmp(d->text + x->off + 1, want.s, want.n) == 0;
}

/* An integer literal (no point; the subset has no exponent) as a number:
 * 1 and *out set, else 0. Every integer in the subset fits an int64. */
int lf_jscan_int(lf_js v, int64_t *out);

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
