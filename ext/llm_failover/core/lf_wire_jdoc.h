/* The lf_jscan fast paths of answers (lf_wire_answer.c) and stream events
 * (lf_wire_stream.c) share these readers over an lf_jdoc.
 *
 * The everyday answer and stream event, read in place with lf_jscan instead
 * of json-c (a tree of hash tables, a tokener and a locale switch per parse).
 * Each fast path takes the same steps as its json-c twin for the shapes it
 * knows; for anything else (a text outside lf_jscan's subset, an error body,
 * an odd shape, more values than its node array holds) it returns 0 before
 * writing anything, and json-c reads the text. test/c/test_jscan.c and
 * fuzz/fuzz_jscan.c compare the two paths. */
#ifndef LF_WIRE_JDOC_H
#define LF_WIRE_JDOC_H

#include <stdint.h>
#include "lf_buf.h"
#include "lf_jscan.h"
#include "lf_wire.h"

/* An everyday stream event has about 20 values, an everyday answer about 30;
 * bigger ones (logprobs, many tool calls) go to json-c. */
#define LF_WIRE_EVENT_NODES 128
#define LF_WIRE_ANSWER_NODES 512

extern const lf_jkey lf_key_content;
extern const lf_jkey lf_key_text;
/* The input count's name, the output's. */
extern const lf_jkey lf_openai_usage_keys[2];
extern const lf_jkey lf_anthropic_usage_keys[2];

/* A string node into out (sanitized), replacing it, as lf_json_take_string. */
int lf_jdoc_take_string(const lf_jdoc *d, uint32_t i, lf_buf *out);
/* A string node appended to out (sanitized). */
int lf_jdoc_add_text(const lf_jdoc *d, uint32_t i, lf_buf *out);

/* Token counts read ahead of time, so that a path can give up before it
 * writes anything. */
typedef struct lf_fast_usage {
    int seen_in, seen_out;
    long in, out;
} lf_fast_usage;

/* lf_wire_openai_usage / lf_wire_anthropic_usage, read into u: 0, or -1
 * when json-c has to decide. */
int lf_fast_usage_read(const lf_jdoc *d, uint32_t usage, const lf_jkey *keys, lf_fast_usage *u);
/* Writes what lf_fast_usage_read found; 1 when there was a count. */
int lf_fast_usage_apply(const lf_fast_usage *u, lf_answer *a);

/* lf_wire_first_choice: the object whose index is 0 or missing, else the
 * first element; NONE for no array or an empty one. The chosen choice's
 * members keys[] are read on the way into out[] (NONE when it is not an
 * object); keys[0] must be "index". */
static inline __attribute__((always_inline)) uint32_t
lf_jdoc_first_choice(const lf_jdoc *d, uint32_t choices, const lf_jkey *keys, size_t n_keys,
                     uint32_t *out)
{
    uint32_t el, first = lf_jdoc_first(d, choices);

    for (el = first; el != LF_JNODE_NONE; el = lf_jdoc_next(d, choices, el)) {
        if (d->nodes[el].type != LF_JS_OBJECT) continue;
        lf_jdoc_members(d, el, keys, n_keys, out);
        if (lf_jdoc_type(d, out[0]) <= LF_JS_NULL || lf_jscan_is_zero_int(lf_jdoc_value(d, out[0]))) return el;
    }
    lf_jdoc_members(d, first, keys, n_keys, out);
    return first;
}

#endif
