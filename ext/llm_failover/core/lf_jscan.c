#include "lf_jscan.h"

#include <string.h>

#include "lf_banned.h"

/* Longest run of digits accepted before or after the point: every such
 * number is an int64 or a double that strtod reads without overflow. */
#define LF_JS_MAX_DIGITS 18

static const char *lf_js_value(const char *p, const char *e, int depth, lf_js *out);

static const char *lf_js_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* p at the opening quote: past the closing quote, or NULL. */
static const char *lf_js_string(const char *p, const char *e)
{
    p++;
    while (p < e) {
        unsigned char c = (unsigned char)*p;

        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (p + 1 >= e) return NULL;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            default:
                return NULL; /* \u and invalid escapes: json-c's business */
            }
        }
        p++;
    }
    return NULL;
}

static const char *lf_js_digits(const char *p, const char *e)
{
    const char *start = p;

    while (p < e && *p >= '0' && *p <= '9') p++;
    if (p == start || (size_t)(p - start) > LF_JS_MAX_DIGITS) return NULL;
    return p;
}

static const char *lf_js_number(const char *p, const char *e)
{
    if (p < e && *p == '-') p++;
    if (p >= e) return NULL;
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

static const char *lf_js_literal(const char *p, const char *e, const char *word)
{
    size_t n = strlen(word);

    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* An object or an array, p at its opening bracket. */
static const char *lf_js_container(const char *p, const char *e, int depth, char close)
{
    if (depth >= LF_JSCAN_MAX_DEPTH) return NULL;
    p = lf_js_ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (p >= e || *p != '"' || !(p = lf_js_string(p, e))) return NULL;
            p = lf_js_ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p = lf_js_ws(p + 1, e);
        }
        if (!(p = lf_js_value(p, e, depth + 1, NULL))) return NULL;
        p = lf_js_ws(p, e);
        if (p >= e) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = lf_js_ws(p + 1, e);
    }
}

static const char *lf_js_value(const char *p, const char *e, int depth, lf_js *out)
{
    const char *start = p, *end;
    lf_js_type type;

    if (p >= e) return NULL;
    switch (*p) {
    case '"': end = lf_js_string(p, e); type = LF_JS_STRING; break;
    case '{': end = lf_js_container(p, e, depth, '}'); type = LF_JS_OBJECT; break;
    case '[': end = lf_js_container(p, e, depth, ']'); type = LF_JS_ARRAY; break;
    case 't': end = lf_js_literal(p, e, "true"); type = LF_JS_TRUE; break;
    case 'f': end = lf_js_literal(p, e, "false"); type = LF_JS_FALSE; break;
    case 'n': end = lf_js_literal(p, e, "null"); type = LF_JS_NULL; break;
    default: end = lf_js_number(p, e); type = LF_JS_NUMBER; break;
    }
    if (!end) return NULL;
    if (out) {
        out->type = type;
        out->p = start;
        out->n = (size_t)(end - start);
    }
    return end;
}

int lf_jscan_document(const char *p, size_t n, lf_js *root)
{
    const char *e = p + n, *end;

    if (!p) return -1;
    p = lf_js_ws(p, e);
    end = lf_js_value(p, e, 0, root);
    if (!end || lf_js_ws(end, e) != e) return -1;
    return 0;
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
