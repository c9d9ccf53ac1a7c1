#include "lf_jscan.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lf_banned.h"

/* Longest run of digits accepted before or after the point: every such
 * number is an int64 or a double that strtod reads without overflow. */
#define LF_JS_MAX_DIGITS 18

/* Bytes that end a run of plain string bytes: the quote, the backslash and
 * the control bytes (which the subset refuses inside strings). */
static const unsigned char lf_js_special[256] = {
    [0x00 ... 0x1F] = 1, ['"'] = 1, ['\\'] = 1,
};

/* The whitespace JSON allows between tokens. */
static const unsigned char lf_js_space[256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1,
};

static inline const char *lf_js_ws(const char *p, const char *e)
{
    while (p < e && lf_js_space[(unsigned char)*p]) p++;
    return p;
}

#if defined(__SSE2__) && defined(__GNUC__)
/* Bit i set when byte i of the 16 at p is special (see lf_js_special). */
static inline unsigned lf_js_block_special(const char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                               _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1F)), x));

    return (unsigned)_mm_movemask_epi8(hit);
}
#define LF_JS_SSE2 1
#else
#define LF_JS_ONES 0x0101010101010101ULL
#define LF_JS_HIGHS 0x8080808080808080ULL

/* Nonzero when one of the 8 bytes of x is special (see lf_js_special), for
 * machines without SSE2. Each term is the usual "some byte is below n" test,
 * exact for n <= 0x80: it may flag bytes above a real hit, never a word
 * without one, and the byte loop after it finds the real hit. */
static inline uint64_t lf_js_word_special(uint64_t x)
{
    uint64_t q = x ^ (LF_JS_ONES * '"'), b = x ^ (LF_JS_ONES * '\\');

    return (((x - LF_JS_ONES * 0x20) & ~x) | ((q - LF_JS_ONES) & ~q) | ((b - LF_JS_ONES) & ~b)) &
           LF_JS_HIGHS;
}
#endif

/* p at the opening quote of a string in text[..e): past the closing quote,
 * or NULL. *escapes is set when the string holds an escape. */
static inline __attribute__((always_inline)) const char *
lf_js_string(const char *p, const char *text, const char *e, int *escapes)
{
    p++;
    for (;;) {
#ifdef LF_JS_SSE2
        /* Sixteen bytes at a time (SSE2 is on every x86-64). */
        while (e - p >= 16) {
            unsigned bits = lf_js_block_special(p);

            if (bits) {
                p += __builtin_ctz(bits);
                goto special;
            }
            p += 16;
        }
        if (e - text >= 16) {
            /* The last few bytes: the 16 that end the text, those before p
             * shifted out. */
            unsigned bits;

            if (p >= e) return NULL;
            bits = lf_js_block_special(e - 16) >> (16 - (e - p));
            if (!bits) return NULL;
            p += __builtin_ctz(bits);
            goto special;
        }
#else
        while (e - p >= 8) {
            uint64_t x;

            memcpy(&x, p, 8);
            if (lf_js_word_special(x)) break;
            p += 8;
        }
#endif
        while (p < e && !lf_js_special[(unsigned char)*p]) p++;
        if (p >= e) return NULL;
#ifdef LF_JS_SSE2
    special:
#endif
        if (*p == '"') return p + 1;
        if (*p != '\\' || p + 1 >= e) return NULL; /* a control byte, or a cut escape */
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            *escapes = 1;
            p += 2;
            break;
        default:
            return NULL; /* \u and invalid escapes: json-c's business */
        }
    }
}

static inline const char *lf_js_digits(const char *p, const char *e)
{
    const char *start = p;

    /* Eight at a time: every byte's high nibble is 3, and stays 3 with 6
     * added (so at most '9'). */
    while (e - p >= 8) {
        uint64_t x;

        memcpy(&x, p, 8);
        if (((x & UINT64_C(0xF0F0F0F0F0F0F0F0)) |
             (((x + UINT64_C(0x0606060606060606)) & UINT64_C(0xF0F0F0F0F0F0F0F0)) >> 4)) !=
            UINT64_C(0x3333333333333333))
            break;
        p += 8;
    }
    while (p < e && (unsigned char)(*p - '0') <= 9) p++;
    if (p == start || (size_t)(p - start) > LF_JS_MAX_DIGITS) return NULL;
    return p;
}

static inline const char *lf_js_number(const char *p, const char *e)
{
    if (*p == '-' && ++p >= e) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        if (!(p = lf_js_digits(p, e))) return NULL;
    } else {
        return NULL;
    }
    if (p < e && *p == '.' && !(p = lf_js_digits(p + 1, e))) return NULL;
    /* A leading zero ("01") or an exponent: outside the subset. */
    if (p < e && ((*p >= '0' && *p <= '9') || *p == 'e' || *p == 'E')) return NULL;
    return p;
}

static inline const char *lf_js_literal(const char *p, const char *e, const char *word, size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* The one checker behind lf_jscan_document and lf_jscan_index: a loop over
 * tokens with an explicit stack of open containers. With record, every value
 * becomes a node of d; without, nothing is written (the compiler makes two
 * copies of this, each without the other's tests). */
static inline __attribute__((always_inline)) int
lf_js_check(const char *text, size_t n, lf_jdoc *d, lf_js *root, const int record)
{
    const char *p, *e = text + n, *start, *first;
    lf_jnode *open[LF_JSCAN_MAX_DEPTH];   /* record: each open container's node */
    lf_jnode *nodes = NULL, *x = NULL, *xend = NULL; /* x: the next free node */
    uint32_t objects = 0;                 /* bit i: the container open at depth i is an object */
    int depth = 0, in_object = 0, escapes;
    lf_js_type type = LF_JS_NONE;

    if (!text) return -1;
    if (record) {
        if (n > UINT32_MAX) return -1;
        nodes = x = d->nodes;
        xend = nodes + d->cap;
    }
    p = first = lf_js_ws(text, e);

value:
    if (p >= e) return -1;
    if (lf_js_space[(unsigned char)*p] && (p = lf_js_ws(p, e)) >= e) return -1;
    start = p;
    if (record) {
        if (x >= xend) return -1;
        x->off = (uint32_t)(p - text);
    }
    switch (*p) {
    case '"':
        escapes = 0;
        if (!(p = lf_js_string(p, text, e, &escapes))) return -1;
        type = LF_JS_STRING;
        if (record) x->flags = escapes ? LF_JNODE_ESCAPES : 0;
        break;
    case '{':
    case '[':
        if (depth >= LF_JSCAN_MAX_DEPTH) return -1;
        in_object = *p == '{';
        if (in_object) objects |= UINT32_C(1) << depth;
        else objects &= ~(UINT32_C(1) << depth);
        if (record) {
            x->type = in_object ? LF_JS_OBJECT : LF_JS_ARRAY;
            x->flags = 0;
            open[depth] = x++;
        }
        depth++;
        p++;
        if (p < e && lf_js_space[(unsigned char)*p]) p = lf_js_ws(p, e);
        if (p < e && *p == (in_object ? '}' : ']')) {
            p++;
            goto closed;
        }
        if (in_object) goto member;
        goto value;
    case 't': p = lf_js_literal(p, e, "true", 4); type = LF_JS_TRUE; break;
    case 'f': p = lf_js_literal(p, e, "false", 5); type = LF_JS_FALSE; break;
    case 'n': p = lf_js_literal(p, e, "null", 4); type = LF_JS_NULL; break;
    default: p = lf_js_number(p, e); type = LF_JS_NUMBER; break;
    }
    if (!p) return -1;
    if (record) {
        if (type != LF_JS_STRING) x->flags = 0;
        x->type = (uint8_t)type;
        x->len = (uint32_t)(p - start);
        x->end = (uint32_t)(x - nodes) + 1;
        x++;
    }
    if (!depth) goto end;

after:
    /* A value of the innermost open container has ended at p. */
    if (p >= e) return -1;
    if (*p == ',') {
        p++;
        if (in_object) goto member;
        goto value;
    }
    if (*p == (in_object ? '}' : ']')) {
        p++;
        goto closed;
    }
    if (!lf_js_space[(unsigned char)*p]) return -1;
    p = lf_js_ws(p, e);
    goto after;

closed:
    /* The innermost open container has ended at p. */
    depth--;
    if (record) {
        lf_jnode *c = open[depth];

        c->len = (uint32_t)(p - text) - c->off;
        c->end = (uint32_t)(x - nodes);
    }
    if (depth) {
        in_object = objects >> (depth - 1) & 1;
        goto after;
    }
    type = *first == '{' ? LF_JS_OBJECT : LF_JS_ARRAY;
    goto end;

member:
    if (p >= e) return -1;
    if (*p != '"') {
        if (!lf_js_space[(unsigned char)*p]) return -1;
        p = lf_js_ws(p, e);
        goto member;
    }
    escapes = 0;
    start = p + 1;
    if (!(p = lf_js_string(p, text, e, &escapes))) return -1;
    if (record) {
        /* The name goes straight into the node its value will take. */
        if (x >= xend) return -1;
        x->key_off = (uint32_t)(start - text);
        x->key_len = (uint32_t)(p - 1 - start);
    }
    if (p < e && *p != ':') p = lf_js_ws(p, e);
    if (p >= e || *p != ':') return -1;
    p++;
    goto value;

end:
    if (lf_js_ws(p, e) != e) return -1;
    if (root) {
        root->type = type;
        root->p = first;
        root->n = (size_t)(p - first);
    }
    if (record) {
        d->text = text;
        d->len = n;
        d->count = (uint32_t)(x - nodes);
    }
    return 0;
}

int lf_jscan_document(const char *p, size_t n, lf_js *root)
{
    return lf_js_check(p, n, NULL, root, 0);
}

void lf_jdoc_init(lf_jdoc *d, lf_jnode *nodes, uint32_t cap)
{
    d->text = NULL;
    d->len = 0;
    d->nodes = nodes;
    d->cap = cap;
    d->count = 0;
}

int lf_jscan_index(lf_jdoc *d, const char *p, size_t n)
{
    d->count = 0;
    return lf_js_check(p, n, d, NULL, 1);
}

int lf_jscan_int(lf_js v, int64_t *out)
{
    const char *p = v.p, *e = v.p + v.n;
    int neg = 0;
    int64_t x = 0;

    if (v.type != LF_JS_NUMBER || !v.n) return 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (p >= e) return 0;
    for (; p < e; p++) {
        if ((unsigned char)(*p - '0') > 9) return 0; /* a point: not an integer literal */
        x = x * 10 + (*p - '0');
    }
    *out = neg ? -x : x;
    return 1;
}

/* The walkers below only run over checked documents: they skip values by
 * their brackets and quotes alone, without checking them again, and still
 * never step past the value they were given. */

static const char *lf_js_skip_string(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        if (*p == '"') return p + 1;
        if (*p == '\\') p++; /* the escaped byte */
    }
    return e;
}

static const char *lf_js_skip(const char *p, const char *e, lf_js *out)
{
    const char *start = p;
    lf_js_type type;
    int depth = 0;

    switch (*p) {
    case '"':
        type = LF_JS_STRING;
        p = lf_js_skip_string(p, e);
        break;
    case '{':
    case '[':
        type = *p == '{' ? LF_JS_OBJECT : LF_JS_ARRAY;
        while (p < e) {
            if (*p == '"') {
                p = lf_js_skip_string(p, e);
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0) {
                p++;
                break;
            }
            p++;
        }
        break;
    default:
        type = *p == 't' ? LF_JS_TRUE : *p == 'f' ? LF_JS_FALSE : *p == 'n' ? LF_JS_NULL : LF_JS_NUMBER;
        while (p < e && *p != ',' && *p != ']' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\n' &&
               *p != '\r')
            p++;
        break;
    }
    out->type = type;
    out->p = start;
    out->n = (size_t)(p - start);
    return p;
}

size_t lf_jscan_members(lf_js obj, const char *const *keys, size_t n_keys, lf_js *out)
{
    size_t i, found = 0, lens[LF_JSCAN_MAX_KEYS];
    const char *p, *e, *k;
    lf_js v;

    if (n_keys > LF_JSCAN_MAX_KEYS) n_keys = LF_JSCAN_MAX_KEYS;
    for (i = 0; i < n_keys; i++) {
        out[i].type = LF_JS_NONE;
        out[i].p = NULL;
        out[i].n = 0;
        lens[i] = strlen(keys[i]);
    }
    if (obj.type != LF_JS_OBJECT || obj.n < 2) return 0;
    e = obj.p + obj.n - 1; /* the closing brace */
    p = lf_js_ws(obj.p + 1, e);
    while (p < e && *p == '"') {
        size_t klen;

        k = p + 1;
        p = lf_js_skip_string(p, e);
        klen = (size_t)(p - k) - 1;
        p = lf_js_ws(p, e);
        if (p >= e || *p != ':') break;
        p = lf_js_ws(p + 1, e);
        if (p >= e) break;
        p = lf_js_skip(p, e, &v);
        for (i = 0; i < n_keys; i++) {
            if (lens[i] == klen && memcmp(k, keys[i], klen) == 0) {
                if (out[i].type == LF_JS_NONE) found++;
                out[i] = v; /* the last of repeated names wins */
            }
        }
        p = lf_js_ws(p, e);
        if (p >= e || *p != ',') break;
        p = lf_js_ws(p + 1, e);
    }
    return found;
}

lf_js lf_jscan_member(lf_js obj, const char *key)
{
    lf_js v;

    lf_jscan_members(obj, &key, 1, &v);
    return v;
}

int lf_jscan_next(lf_js arr, size_t *pos, lf_js *elem)
{
    const char *p, *e;

    if (arr.type != LF_JS_ARRAY || arr.n < 2 || *pos >= arr.n) return 0;
    e = arr.p + arr.n - 1; /* the closing bracket */
    p = lf_js_ws(arr.p + (*pos ? *pos : 1), e);
    if (p >= e) return 0;
    if (*pos) {
        if (*p != ',') return 0;
        p = lf_js_ws(p + 1, e);
        if (p >= e) return 0;
    }
    p = lf_js_skip(p, e, elem);
    *pos = (size_t)(p - arr.p);
    return 1;
}

int lf_jscan_is_zero_int(lf_js v)
{
    if (v.type != LF_JS_NUMBER) return 0;
    return (v.n == 1 && v.p[0] == '0') || (v.n == 2 && v.p[0] == '-' && v.p[1] == '0');
}

int lf_jscan_string_is_plain(lf_js s)
{
    return s.type == LF_JS_STRING && s.n >= 2 && memchr(s.p + 1, '\\', s.n - 2) == NULL;
}

int lf_jscan_string_append(lf_js s, lf_buf *out)
{
    const char *p, *e, *run;
    size_t old = out->len;

    if (s.type != LF_JS_STRING || s.n < 2) return 0;
    p = run = s.p + 1;
    e = s.p + s.n - 1;
    while (p < e) {
        char c;

        if (*p != '\\') {
            p++;
            continue;
        }
        if (p + 1 >= e) break; /* not from a checked document */
        if (lf_buf_append(out, run, (size_t)(p - run)) != 0) goto nomem;
        switch (p[1]) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        default: c = p[1]; break; /* " \ / */
        }
        if (lf_buf_append_char(out, c) != 0) goto nomem;
        p += 2;
        run = p;
    }
    if (lf_buf_append(out, run, (size_t)(p - run)) != 0) goto nomem;
    return 0;

nomem:
    out->len = old;
    if (out->ptr) out->ptr[old] = '\0';
    return -1;
}
