/* Writing JSON text: string literals, numbers. */
#include "lf_json_write.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_utf8.h"

#include "lf_banned.h"

/* Whether any of the eight bytes of w needs a look of its own inside a JSON
 * string: not ASCII, a control character, '"' or '\\'. */
static inline int lf_json_word_is_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');

    return ((w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) != 0;
}

/* Appends s as a JSON string literal: each invalid UTF-8 sequence becomes
 * U+FFFD (as lf_utf8_append_sanitized replaces it), quotes, backslashes and
 * every control character are escaped. One pass over s, copying runs of
 * plain bytes straight into out. */
int lf_json_put_string(lf_buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0, len, bad = 0;
    char esc[7];

    if (lf_buf_reserve(out, n + 2) != 0 || lf_buf_append_char(out, '"') != 0) return -1;
    while (i < n) {
        unsigned char c;
        size_t elen = 2;

        if (n - i >= 8) {
            uint64_t w;

            /* Eight plain bytes at a time: most text is plain ASCII. */
            memcpy(&w, p + i, 8);
            if (!lf_json_word_is_special(w)) {
                i += 8;
                continue;
            }
        }
        c = p[i];
        if (c >= 0x80) {
            len = lf_utf8_sequence(p + i, n - i, &bad);
            if (len) {
                i += len;
                continue;
            }
            if (lf_buf_append(out, s + run, i - run) != 0 ||
                lf_buf_append(out, lf_utf8_replacement, sizeof lf_utf8_replacement) != 0)
                return -1;
            i += bad;
            run = i;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 0xF];
            elen = 6;
            break;
        }
        if (lf_buf_append(out, s + run, i - run) != 0 || lf_buf_append(out, esc, elen) != 0)
            return -1;
        i++;
        run = i;
    }
    if (lf_buf_append(out, s + run, n - run) != 0) return -1;
    return lf_buf_append_char(out, '"');
}

int lf_json_put_cstring(lf_buf *out, const char *s)
{
    return lf_json_put_string(out, s, strlen(s));
}

/* The shortest "%g" text that reads back as the same double, so 0.7 goes
 * out as 0.7 and not 0.69999999999999996. The caller rejects NaN/inf. */
int lf_json_put_double(lf_buf *out, double d)
{
    char tmp[40];
    int prec, n = 0;
    char *c;

    for (prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (n <= 0 || (size_t)n >= sizeof tmp) return -1;
        if (strtod(tmp, NULL) == d) break;
    }
    /* A locale with a decimal comma wrote one; JSON wants a point. */
    for (c = tmp; *c; c++)
        if (*c == ',') *c = '.';
    return lf_buf_append(out, tmp, (size_t)n);
}

int lf_json_put_long(lf_buf *out, long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%ld", v);

    if (n <= 0 || (size_t)n >= sizeof tmp) return -1;
    return lf_buf_append(out, tmp, (size_t)n);
}
