/* Reading JSON: one standard document at a time, and the typed lookups the
 * protocol readers use. Every string taken out is sanitized to valid UTF-8.
 *
 * The standard (RFC 8259) is checked here, not by json-c's strict mode: what
 * that mode refuses changes from release to release (json-c 0.18 refuses every
 * raw UTF-8 byte in a string and every integer past 64 bits, 0.16 let NaN and
 * single quotes through), so json-c is only asked to build the tree of a text
 * already known to be standard. */
#include "lf_json_read.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_utf8.h"

#include "lf_banned.h"

/* Deeper than any real answer (usage.cache_creation is at depth 4), shallow
 * enough that a hostile body cannot make json-c recurse far. */
#define LF_WIRE_JSON_DEPTH 64
/* json_tokener_parse_ex takes an int length: longer bodies go in slices. */
#define LF_WIRE_JSON_SLICE ((size_t)1 << 30)
/* Appended to an integer too big for json-c's 64 bits, so that json-c keeps it
 * as a number with its text (as it keeps every double) instead of clamping it. */
#define LF_JSON_BIG_MARK "E0"

int lf_wire_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int lf_json_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int lf_json_hex4(const char *s, size_t n, size_t i, unsigned *cp)
{
    size_t k;

    *cp = 0;
    if (i + 4 > n) return -1;
    for (k = i; k < i + 4; k++) {
        char c = s[k];
        unsigned d;

        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
        else return -1;
        *cp = *cp * 16 + d;
    }
    return 0;
}

/* One string from the quote at s[i]: the index after its closing quote, or 0.
 * Raw bytes of 0x80 and up are text (invalid UTF-8 is replaced when a string
 * is taken out); control bytes and bad escapes are not. An escaped lone
 * surrogate is in the grammar (it becomes U+FFFD when taken out); with
 * paired, it is refused, as strict readers refuse it. */
static size_t lf_json_string_end(const char *s, size_t n, size_t i, int paired)
{
    unsigned cp, low;

    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"') return i + 1;
        if (c < 0x20) return 0;
        if (c != '\\') continue;
        if (++i >= n) return 0;
        if (s[i] != '\0' && strchr("\"\\/bfnrt", s[i])) continue;
        if (s[i] != 'u' || lf_json_hex4(s, n, i + 1, &cp) != 0) return 0;
        i += 4;
        if (!paired) continue;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i + 2 >= n || s[i + 1] != '\\' || s[i + 2] != 'u' || lf_json_hex4(s, n, i + 3, &low) != 0 ||
                low < 0xDC00 || low > 0xDFFF)
                return 0;
            i += 6;
        }
    }
    return 0;
}

/* One number from s[i], -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?: the
 * index after it, or 0. *big is set when it is an integer outside json-c's
 * int64_t and uint64_t. */
static size_t lf_json_number_end(const char *s, size_t n, size_t i, int *big)
{
    size_t digits;
    int negative = 0, integer = 1;

    if (i < n && s[i] == '-') {
        negative = 1;
        i++;
    }
    if (i >= n || !lf_json_is_digit(s[i])) return 0;
    digits = i;
    if (s[i] == '0') i++;
    else
        while (i < n && lf_json_is_digit(s[i])) i++;
    digits = i - digits;
    if (i < n && s[i] == '.') {
        integer = 0;
        if (++i >= n || !lf_json_is_digit(s[i])) return 0;
        while (i < n && lf_json_is_digit(s[i])) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        integer = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || !lf_json_is_digit(s[i])) return 0;
        while (i < n && lf_json_is_digit(s[i])) i++;
    }
    if (integer) {
        const char *limit = negative ? "9223372036854775808" : "18446744073709551615";
        size_t ln = strlen(limit);

        /* No leading zeros: more digits is a bigger number. */
        if (digits > ln || (digits == ln && memcmp(s + i - digits, limit, ln) > 0)) *big = 1;
    }
    return i;
}

static size_t lf_json_skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && lf_wire_is_ws(s[i])) i++;
    return i;
}

/* The whole grammar, in one pass with a stack of the open brackets. */
static size_t lf_json_check(const char *s, size_t n, int paired, int *big)
{
    enum { WANT_VALUE, WANT_KEY, WANT_COLON, WANT_NEXT } want = WANT_VALUE;
    char open[LF_WIRE_JSON_DEPTH];
    int depth = 0, just_opened = 0;
    size_t i = 0, end = 0;

    *big = 0;
    for (;;) {
        char c;

        i = lf_json_skip_ws(s, n, i);
        if (want == WANT_NEXT && depth == 0) return i < n ? i + 1 : 0;
        if (i >= n) return n + 1;
        c = s[i];
        switch (want) {
        case WANT_VALUE:
            if (c == ']' && just_opened) {
                depth--;
                want = WANT_NEXT;
                end = i + 1;
            } else if (c == '{' || c == '[') {
                if (depth == LF_WIRE_JSON_DEPTH) return i + 1;
                open[depth++] = c;
                want = c == '{' ? WANT_KEY : WANT_VALUE;
                just_opened = 1;
                i++;
                continue;
            } else {
                if (c == '"') end = lf_json_string_end(s, n, i, paired);
                else if (c == '-' || lf_json_is_digit(c)) end = lf_json_number_end(s, n, i, big);
                else if (n - i >= 4 && memcmp(s + i, "true", 4) == 0) end = i + 4;
                else if (n - i >= 5 && memcmp(s + i, "false", 5) == 0) end = i + 5;
                else if (n - i >= 4 && memcmp(s + i, "null", 4) == 0) end = i + 4;
                else end = 0;
                want = WANT_NEXT;
            }
            break;
        case WANT_KEY:
            if (c == '}' && just_opened) {
                depth--;
                want = WANT_NEXT;
                end = i + 1;
            } else {
                end = c == '"' ? lf_json_string_end(s, n, i, paired) : 0;
                want = WANT_COLON;
            }
            break;
        case WANT_COLON:
            end = c == ':' ? i + 1 : 0;
            want = WANT_VALUE;
            break;
        case WANT_NEXT:
            if (c == ',') {
                end = i + 1;
                want = open[depth - 1] == '{' ? WANT_KEY : WANT_VALUE;
            } else if (c == (open[depth - 1] == '{' ? '}' : ']')) {
                end = i + 1;
                depth--;
            } else {
                end = 0;
            }
            break;
        }
        if (!end) return i + 1;
        just_opened = 0;
        i = end;
    }
}

size_t lf_json_nonstandard_at(const char *s, size_t n, int paired_surrogates)
{
    int big;

    return lf_json_check(s, n, paired_surrogates, &big);
}

/* s with LF_JSON_BIG_MARK after every integer past 64 bits; NULL when out of
 * memory. Only strings and numbers need telling apart: the text is standard. */
static char *lf_json_mark_big(const char *s, size_t n, size_t *out_n)
{
    size_t i = 0, o = 0, end, mark = strlen(LF_JSON_BIG_MARK), count = 0;
    char *out;
    int big;

    for (i = 0; i < n; i = end) {
        big = 0;
        if (s[i] == '"') end = lf_json_string_end(s, n, i, 0);
        else if (s[i] == '-' || lf_json_is_digit(s[i])) end = lf_json_number_end(s, n, i, &big);
        else end = i + 1;
        count += big;
    }
    out = malloc(n + count * mark + 1);
    if (!out) return NULL;
    for (i = 0; i < n; i = end) {
        big = 0;
        if (s[i] == '"') end = lf_json_string_end(s, n, i, 0);
        else if (s[i] == '-' || lf_json_is_digit(s[i])) end = lf_json_number_end(s, n, i, &big);
        else end = i + 1;
        memcpy(out + o, s + i, end - i);
        o += end - i;
        if (big) {
            memcpy(out + o, LF_JSON_BIG_MARK, mark);
            o += mark;
        }
    }
    out[o] = '\0';
    *out_n = o;
    return out;
}

/* Gives every marked integer in v its own text back, so that it is written
 * out exactly as it came (json-c writes a double as the text it read). */
static int lf_json_unmark_big(json_object *v)
{
    size_t i, len, mark = strlen(LF_JSON_BIG_MARK);
    const char *text;
    char *plain;

    switch (json_object_get_type(v)) {
    case json_type_array:
        len = json_object_array_length(v);
        for (i = 0; i < len; i++)
            if (lf_json_unmark_big(json_object_array_get_idx(v, i)) != 0) return -1;
        return 0;
    case json_type_object: {
        json_object_object_foreach(v, key, member) {
            (void)key;
            if (lf_json_unmark_big(member) != 0) return -1;
        }
        return 0;
    }
    case json_type_double:
        text = json_object_get_userdata(v);
        if (!text) return 0;
        len = strlen(text);
        if (len <= mark || memcmp(text + len - mark, LF_JSON_BIG_MARK, mark) != 0) return 0;
        plain = malloc(len - mark + 1);
        if (!plain) return -1;
        memcpy(plain, text, len - mark);
        plain[len - mark] = '\0';
        json_object_set_serializer(v, json_object_userdata_to_json_string, plain, json_object_free_userdata);
        return 0;
    default:
        return 0;
    }
}

/* json-c's tree of a text known to be standard. */
static json_object *lf_json_build(const char *s, size_t n)
{
    struct json_tokener *tok;
    json_object *obj = NULL;
    size_t start = 0, slice;

    tok = json_tokener_new_ex(LF_WIRE_JSON_DEPTH);
    if (!tok) return NULL;
    for (;;) {
        slice = n - start;
        if (slice > LF_WIRE_JSON_SLICE) slice = LF_WIRE_JSON_SLICE;
        obj = json_tokener_parse_ex(tok, s + start, (int)slice);
        if (obj) break;
        if (json_tokener_get_error(tok) != json_tokener_continue) break;
        start += slice;
        if (start >= n) {
            /* A number at the very end ("42") waits for more digits: its end
             * is told by a NUL inside the length. */
            obj = json_tokener_parse_ex(tok, "", 1);
            break;
        }
    }
    json_tokener_free(tok);
    return obj;
}

/* One JSON document, with nothing but whitespace around it; NULL when the
 * text is not that. The length is explicit: NUL bytes are data here. */
json_object *lf_json_parse(const char *s, size_t n)
{
    json_object *obj;
    char *marked;
    size_t marked_n = 0;
    int big;

    if (!s || lf_json_check(s, n, 0, &big) != 0) return NULL;
    if (!big) return lf_json_build(s, n);
    marked = lf_json_mark_big(s, n, &marked_n);
    if (!marked) return NULL;
    obj = lf_json_build(marked, marked_n);
    free(marked);
    if (obj && lf_json_unmark_big(obj) != 0) {
        json_object_put(obj);
        obj = NULL;
    }
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
    lf_buf_clear(out);
    if (!v) return 0;
    if (json_object_is_type(v, json_type_string))
        return lf_utf8_append_sanitized(out, json_object_get_string(v),
                                        (size_t)json_object_get_string_len(v));
    return lf_json_append_written(out, v);
}

int lf_json_append_written(lf_buf *out, json_object *v)
{
    size_t n = 0;
    const char *s = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);

    return s ? lf_utf8_append_sanitized(out, s, n) : -1;
}

/* ------------------------------------------- walking a checked document */

/* The end of the string at s[i] of a checked text: its first quote that no
 * backslash escapes. */
static size_t lf_json_checked_string_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\') i++;
        else if (s[i] == '"') return i + 1;
    }
    return n;
}

/* The end of the value at s[i] of a checked text: strings and brackets are
 * standard there, so only strings need reading to match the brackets. */
static size_t lf_json_value_end(const char *s, size_t n, size_t i)
{
    int depth = 0;

    if (s[i] == '"') return lf_json_checked_string_end(s, n, i);
    if (s[i] != '{' && s[i] != '[') {
        while (i < n && !lf_wire_is_ws(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']') i++;
        return i;
    }
    while (i < n) {
        char c = s[i];

        if (c == '"') {
            i = lf_json_checked_string_end(s, n, i);
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
        i++;
    }
    return n;
}

lf_json_span lf_json_span_of(const char *s, size_t n)
{
    lf_json_span v;

    while (n && lf_wire_is_ws(s[0])) {
        s++;
        n--;
    }
    while (n && lf_wire_is_ws(s[n - 1])) n--;
    v.s = s;
    v.n = n;
    return v;
}

int lf_json_walk_start(lf_json_walk *w, lf_json_span v, char open)
{
    if (!v.n || v.s[0] != open || (open != '{' && open != '[')) return 0;
    w->s = v.s;
    w->n = v.n;
    w->at = 1;
    w->close = open == '{' ? '}' : ']';
    return 1;
}

int lf_json_walk_next(lf_json_walk *w, lf_json_span *key, lf_json_span *value)
{
    size_t i = lf_json_skip_ws(w->s, w->n, w->at), end;

    if (i < w->n && w->s[i] == ',') i = lf_json_skip_ws(w->s, w->n, i + 1);
    if (i >= w->n || w->s[i] == w->close) return 0;
    if (w->close == '}') {
        end = lf_json_checked_string_end(w->s, w->n, i);
        key->s = w->s + i;
        key->n = end - i;
        if (memchr(key->s, '\\', key->n)) return -1;
        i = lf_json_skip_ws(w->s, w->n, lf_json_skip_ws(w->s, w->n, end) + 1);   /* past the colon */
    }
    end = lf_json_value_end(w->s, w->n, i);
    value->s = w->s + i;
    value->n = end - i;
    w->at = end;
    return 1;
}

int lf_json_span_is(lf_json_span v, const char *text)
{
    return lf_bytes_are(v.s, v.n, text);
}

int lf_json_span_count(lf_json_span v, long *out)
{
    size_t i;
    long c = 0;

    if (!v.n || v.n > 18) return 0;   /* 18 digits fit a long */
    for (i = 0; i < v.n; i++) {
        if (!lf_json_is_digit(v.s[i])) return 0;
        c = c * 10 + (v.s[i] - '0');
    }
    *out = c;
    return 1;
}

/* UTF-8 of a code point below U+10000 that is no surrogate. */
static size_t lf_json_utf8_bmp(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* The string s (quotes included) decoded onto out: 1, 0 when it escapes a
 * surrogate or NUL (left to json-c, whose way with a lone one is its own),
 * -1 when out of memory. */
static int lf_json_unescape(const char *s, size_t n, lf_buf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t i = 1, run;
    unsigned cp;
    char utf8[3];

    while (i < n - 1) {
        for (run = i; run < n - 1 && s[run] != '\\'; run++) continue;
        if (lf_buf_append(out, s + i, run - i) != 0) return -1;
        if (run == n - 1) break;
        i = run + 1;
        if (s[i] == 'u') {
            (void)lf_json_hex4(s, n, i + 1, &cp);
            if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
            if (lf_buf_append(out, utf8, lf_json_utf8_bmp(cp, utf8)) != 0) return -1;
            i += 5;
        } else {
            if (lf_buf_append(out, &to[strchr(from, s[i]) - from], 1) != 0) return -1;
            i++;
        }
    }
    return 1;
}

int lf_json_span_append_string(lf_json_span v, lf_buf *out)
{
    lf_buf plain;
    json_object *str = NULL;
    int rc;

    if (!memchr(v.s, '\\', v.n)) return lf_utf8_append_sanitized(out, v.s + 1, v.n - 2);
    lf_buf_init(&plain);
    rc = lf_json_unescape(v.s, v.n, &plain);
    if (rc == 1) rc = lf_utf8_append_sanitized(out, lf_buf_cstr(&plain), plain.len);
    else if (rc == 0 && (str = lf_json_build(v.s, v.n)))
        rc = lf_utf8_append_sanitized(out, json_object_get_string(str), (size_t)json_object_get_string_len(str));
    else rc = -1;
    json_object_put(str);
    lf_buf_free(&plain);
    return rc;
}
