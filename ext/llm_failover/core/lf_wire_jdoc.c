/* The pieces the lf_jscan fast paths of answers and streams share (see
 * lf_wire_jdoc.h). */
#include "lf_wire_jdoc.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "lf_utf8.h"

#include "lf_banned.h"

const lf_jkey lf_key_content = LF_JKEY("content");
const lf_jkey lf_key_text = LF_JKEY("text");

/* A string node into out (sanitized), replacing it, as lf_json_take_string.
 * When out already holds exactly these bytes there is nothing to do: out is
 * valid UTF-8, so the bytes would sanitize to themselves (a stream repeats
 * model and id on every event). */
int lf_jdoc_take_string(const lf_jdoc *d, uint32_t i, lf_buf *out)
{
    lf_js v = lf_jdoc_value(d, i);
    lf_buf raw;
    int rc;

    if (v.type != LF_JS_STRING) return 0;
    if (!(d->nodes[i].flags & LF_JNODE_ESCAPES)) {
        if (out->len == v.n - 2 && (out->len == 0 || memcmp(out->ptr, v.p + 1, out->len) == 0)) return 0;
        return lf_utf8_set_sanitized(out, v.p + 1, v.n - 2);
    }
    lf_buf_init(&raw);
    rc = lf_jscan_string_append(v, &raw);
    if (rc == 0) rc = lf_utf8_set_sanitized(out, raw.ptr ? raw.ptr : "", raw.len);
    lf_buf_free(&raw);
    return rc;
}

/* A string node appended to out (sanitized), as lf_stream_add_text and
 * lf_wire_append_content do with a string. */
int lf_jdoc_add_text(const lf_jdoc *d, uint32_t i, lf_buf *out)
{
    lf_js v = lf_jdoc_value(d, i);
    lf_buf raw;
    int rc;

    if (v.type != LF_JS_STRING) return 0;
    if (!(d->nodes[i].flags & LF_JNODE_ESCAPES)) return lf_utf8_append_sanitized(out, v.p + 1, v.n - 2);
    lf_buf_init(&raw);
    rc = lf_jscan_string_append(v, &raw);
    if (rc == 0) rc = lf_utf8_append_sanitized(out, raw.ptr ? raw.ptr : "", raw.len);
    lf_buf_free(&raw);
    return rc;
}

/* lf_json_take_count over a node: 1 and *out set for a count, 0 for no count
 * (absent, null, negative, not a number), -1 for a number with a point:
 * json-c makes it a double, and whether strtod's rounding makes it integral
 * is left to json-c. */
static int lf_jdoc_count(const lf_jdoc *d, uint32_t i, long *out)
{
    int64_t v;

    if (lf_jdoc_type(d, i) != LF_JS_NUMBER) return 0;
    if (!lf_jscan_int(lf_jdoc_value(d, i), &v)) return -1;
    if (v < 0 || (uint64_t)v > (uint64_t)LONG_MAX) return 0;
    *out = (long)v;
    return 1;
}

/* lf_wire_openai_usage / lf_wire_anthropic_usage, read into u: 0, or -1
 * when json-c has to decide. keys: the input count's name, the output's. */
int lf_fast_usage_read(const lf_jdoc *d, uint32_t usage, const lf_jkey *keys, lf_fast_usage *u)
{
    uint32_t m[2];

    memset(u, 0, sizeof *u);
    if (lf_jdoc_type(d, usage) != LF_JS_OBJECT) return 0;
    lf_jdoc_members(d, usage, keys, 2, m);
    if ((u->seen_in = lf_jdoc_count(d, m[0], &u->in)) < 0) return -1;
    if ((u->seen_out = lf_jdoc_count(d, m[1], &u->out)) < 0) return -1;
    return 0;
}

/* Writes what lf_fast_usage_read found; 1 when there was a count. */
int lf_fast_usage_apply(const lf_fast_usage *u, lf_answer *a)
{
    if (u->seen_in) a->input_tokens = u->in;
    if (u->seen_out) a->output_tokens = u->out;
    return u->seen_in || u->seen_out;
}

const lf_jkey lf_openai_usage_keys[2] = { LF_JKEY("prompt_tokens"), LF_JKEY("completion_tokens") };
const lf_jkey lf_anthropic_usage_keys[2] = { LF_JKEY("input_tokens"), LF_JKEY("output_tokens") };
