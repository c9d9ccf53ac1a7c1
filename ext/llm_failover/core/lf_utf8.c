/* UTF-8: telling well-formed sequences from ill-formed ones, and replacing
 * the ill-formed ones with U+FFFD; messages written valid. */
#include "lf_utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lf_banned.h"

const char lf_utf8_replacement[3] = { (char)0xEF, (char)0xBF, (char)0xBD };

/* Length of the well-formed sequence at s (1 to 4 bytes), or 0 when it is
 * ill-formed; then *bad is the length of its maximal subpart (at least 1):
 * the lead byte plus the continuation bytes that were still acceptable, so a
 * truncated sequence becomes one U+FFFD and the byte that broke it is looked
 * at again (Unicode 15, 3.9 "U+FFFD Substitution of Maximal Subparts"). */
size_t lf_utf8_sequence(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, i;

    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c == 0xE0) {
        need = 2; lo = 0xA0;          /* below is overlong */
    } else if (c == 0xED) {
        need = 2; hi = 0x9F;          /* above are the surrogates D800-DFFF */
    } else if (c >= 0xE1 && c <= 0xEF) {
        need = 2;
    } else if (c == 0xF0) {
        need = 3; lo = 0x90;          /* below is overlong */
    } else if (c == 0xF4) {
        need = 3; hi = 0x8F;          /* above is past U+10FFFF */
    } else if (c >= 0xF1 && c <= 0xF3) {
        need = 3;
    } else {
        *bad = 1;                     /* 80-BF alone, C0, C1, F5-FF */
        return 0;
    }
    for (i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

int lf_utf8_is_valid(const char *bytes, size_t n)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t i = 0, len, bad;

    while (i < n) {
        len = lf_utf8_sequence(s + i, n - i, &bad);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

int lf_utf8_append_sanitized(lf_buf *out, const char *bytes, size_t n)
{
    const unsigned char *s = (const unsigned char *)bytes;
    size_t old_len = out->len, i = 0, run = 0, len, bad = 0;

    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;

            /* Eight ASCII bytes at a time: most text is ASCII. */
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        len = lf_utf8_sequence(s + i, n - i, &bad);
        if (len) {
            i += len;
            continue;
        }
        if (lf_buf_append(out, bytes + run, i - run) != 0 ||
            lf_buf_append(out, lf_utf8_replacement, sizeof lf_utf8_replacement) != 0)
            goto nomem;
        i += bad;
        run = i;
    }
    if (lf_buf_append(out, bytes + run, n - run) != 0) goto nomem;
    return 0;

nomem:
    /* Leave the buffer as it was, like lf_buf_append does. */
    out->len = old_len;
    if (out->ptr) out->ptr[old_len] = '\0';
    return -1;
}

int lf_utf8_set_sanitized(lf_buf *out, const char *bytes, size_t n)
{
    lf_buf_clear(out);
    return lf_utf8_append_sanitized(out, bytes, n);
}

int lf_utf8_vsetf(lf_buf *out, const char *fmt, va_list ap)
{
    char tmp[320];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);

    if (n < 0) n = 0;
    if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
    return lf_utf8_set_sanitized(out, tmp, (size_t)n);
}

int lf_utf8_setf(lf_buf *out, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = lf_utf8_vsetf(out, fmt, ap);
    va_end(ap);
    return rc;
}
