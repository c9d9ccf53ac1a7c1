/* A small strict JSON scanner for the hot paths: stream events and plain
 * answers.
 *
 * It checks that a text is one JSON document inside a conservative subset of
 * RFC 8259 and then finds members and elements in place, without building a
 * tree or allocating. A streamed answer is thousands of small events; reading
 * each with json-c (a tree of hash tables, a tokener and a locale switch per
 * parse) cost more than everything else the core does per event
 * (bench/README.md), and a plain answer cost ten times what this does.
 *
 * The subset leaves out what json-c might read differently or what is rare:
 * \u escapes, numbers with an exponent or more than 18 digits on either side
 * of the point, control bytes inside strings, whitespace other than space,
 * tab, CR and LF, and nesting deeper than LF_JSCAN_MAX_DEPTH. A text outside
 * the subset is not judged: lf_jscan_document returns -1 and the caller hands
 * the text to json-c, which decides. Inside the subset, a value reads the same
 * as json-c reads it (test/c/test_jscan.c and fuzz/fuzz_jscan.c compare the
 * two on every recorded event and answer and on fuzzed ones). */
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
 * with escapes can never equal it. LF_JKEY also works out, at compile time,
 * the name's first eight bytes as a little-endian word (zeros past its end):
 * most names are told apart by their length and that word alone. */
typedef struct lf_jkey {
    const char *s;
    uint32_t n;
    uint64_t head;
} lf_jkey;
#define LF_JKEY_BYTE(lit, i) ((uint64_t)(unsigned char)(lit "\0\0\0\0\0\0\0\0")[i] << (8 * (i)))
#define LF_JKEY(lit)                                                                               \
    { (lit), (uint32_t)(sizeof(lit) - 1),                                                          \
      LF_JKEY_BYTE(lit, 0) | LF_JKEY_BYTE(lit, 1) | LF_JKEY_BYTE(lit, 2) | LF_JKEY_BYTE(lit, 3) |  \
          LF_JKEY_BYTE(lit, 4) | LF_JKEY_BYTE(lit, 5) | LF_JKEY_BYTE(lit, 6) | LF_JKEY_BYTE(lit, 7) }

void lf_jdoc_init(lf_jdoc *d, lf_jnode *nodes, uint32_t cap);
/* 0 when p[0..n) is one document in the subset with at most d->cap values
 * (then d->nodes[0] is its root); -1 otherwise. */
int lf_jscan_index(lf_jdoc *d, const char *p, size_t n);

/* The first eight bytes of member x's name (zeros past its end) as a
 * little-endian word, as LF_JKEY works it out for a key. */
static inline uint64_t lf_jdoc_name_head(const lf_jdoc *d, const lf_jnode *x)
{
    const char *s = d->text + x->key_off;
    uint64_t w = 0;
    uint32_t i;

    if (x->key_off + (size_t)8 <= d->len) {
        memcpy(&w, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        return x->key_len >= 8 ? w : w & ((UINT64_C(1) << (8 * x->key_len)) - 1);
    }
    for (i = 0; i < x->key_len && i < 8; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return w;
}

/* Whether member x, whose name's head is head, is named key. */
static inline int lf_jdoc_name_is(const lf_jdoc *d, const lf_jnode *x, uint64_t head, const lf_jkey *key)
{
    uint32_t i;

    if (head != key->head || x->key_len != key->n) return 0;
    for (i = 8; i < key->n; i++)
        if (d->text[x->key_off + i] != key->s[i]) return 0;
    return 1;
}

/* Several members in one walk: out[i] is the node of the member named
 * keys[i], the last one when the name repeats, as json-c keeps it (NONE when
 * absent, or when obj is not an object). Inline, so that for a constant
 * array of keys the compiler compares with constants. */
static inline void lf_jdoc_members(const lf_jdoc *d, uint32_t obj, const lf_jkey *keys, size_t n_keys,
                                   uint32_t *out)
{
    uint32_t i, end;
    size_t k;

    for (k = 0; k < n_keys; k++) out[k] = LF_JNODE_NONE;
    if (obj == LF_JNODE_NONE || d->nodes[obj].type != LF_JS_OBJECT) return;
    end = d->nodes[obj].end;
    for (i = obj + 1; i < end; i = d->nodes[i].end) {
        const lf_jnode *x = &d->nodes[i];
        uint64_t head = lf_jdoc_name_head(d, x);

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
        for (k = 0; k < n_keys; k++)
            if (lf_jdoc_name_is(d, x, head, &keys[k])) out[k] = i;
    }
}

/* The member named key of node obj, as lf_jdoc_members finds it. */
static inline uint32_t lf_jdoc_member(const lf_jdoc *d, uint32_t obj, lf_jkey key)
{
    uint32_t out;

    lf_jdoc_members(d, obj, &key, 1, &out);
    return out;
}

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
