/* The scrubber pre-scan's places found the slow way: every kind's test at every
 * byte, one after the other, written from the patterns in
 * lib/llm_failover/scrubber/rules.rb without lf_scrub.c's bitmaps. test_scrub.c
 * and fuzz/fuzz_scrub.c compare lf_scrub_scan with it. */
#ifndef LF_SCRUB_REF_H
#define LF_SCRUB_REF_H

#include <stddef.h>
#include <string.h>

#include "lf_scrub.h"

static int ref_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int ref_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int ref_alnum(unsigned char c) { return ref_digit(c) || ref_upper(c) || (c >= 'a' && c <= 'z'); }
static int ref_local(unsigned char c) { return ref_alnum(c) || (c && strchr("._%+-", c)); }

static int ref_upnum(unsigned char c) { return ref_digit(c) || ref_upper(c); }
static int ref_key(unsigned char c) { return ref_alnum(c) || c == '_' || c == '-'; }
static int ref_slack(unsigned char c) { return ref_alnum(c) || c == '-'; }
static int ref_token(unsigned char c) { return ref_alnum(c) || (c && strchr("._~+/-", c)); }

/* Whether text[p..p+k) are there and each passes is. */
static int ref_span(const unsigned char *t, size_t n, size_t p, size_t k, int (*is)(unsigned char))
{
    if (p > n || n - p < k) return 0;
    for (size_t i = 0; i < k; i++) {
        if (!is(t[p + i])) return 0;
    }
    return 1;
}

static int ref_is(const unsigned char *t, size_t n, size_t p, const char *lit)
{
    size_t k = strlen(lit);

    return n - p >= k && memcmp(t + p, lit, k) == 0;
}

/* Whether text[p..p+k) are all digits (and there). */
static int ref_digits(const unsigned char *t, size_t n, size_t p, size_t k)
{
    if (p > n || n - p < k) return 0;
    for (size_t i = 0; i < k; i++) {
        if (!ref_digit(t[p + i])) return 0;
    }
    return 1;
}

/* Digits among the first k bytes at p, up to the first byte not in [0-9 .()+-]. */
static size_t ref_count_digits(const unsigned char *t, size_t n, size_t p, size_t k)
{
    size_t c = 0;

    for (size_t i = p; i < n && i < p + k; i++) {
        if (!ref_digit(t[i]) && !(t[i] && strchr(" .-()+", t[i]))) break;
        c += ref_digit(t[i]);
    }
    return c;
}

static int ref_edge(const unsigned char *t, size_t n, size_t p)
{
    return p >= n || !(ref_alnum(t[p]) || t[p] == '-');
}

/* Whether a match of kind may start at p; *to is set for LF_SCRUB_EMAIL's range. */
static int ref_place(int kind, const unsigned char *t, size_t n, size_t p, size_t *from, size_t *to)
{
    *from = p;
    *to = p + 1;
    switch (kind) {
    case LF_SCRUB_SK: return ref_is(t, n, p, "sk-") && ref_span(t, n, p + 3, 20, ref_key);
    case LF_SCRUB_GSK: return ref_is(t, n, p, "gsk_") && ref_span(t, n, p + 4, 20, ref_alnum);
    case LF_SCRUB_AWS:
        return (ref_is(t, n, p, "AKIA") || ref_is(t, n, p, "ASIA")) && ref_span(t, n, p + 4, 16, ref_upnum) &&
               !ref_span(t, n, p + 20, 1, ref_upnum);
    case LF_SCRUB_GHP: return ref_is(t, n, p, "ghp_") && ref_span(t, n, p + 4, 36, ref_alnum);
    case LF_SCRUB_XOX:
        return ref_is(t, n, p, "xox") && n - p >= 5 && t[p + 3] && strchr("abposr", t[p + 3]) && t[p + 4] == '-' &&
               ref_span(t, n, p + 5, 10, ref_slack);
    case LF_SCRUB_BEARER: {
        size_t q = p + 6;

        if (!ref_is(t, n, p, "Bearer") && !ref_is(t, n, p, "bearer")) return 0;
        if (q >= n || (t[q] != ' ' && t[q] != '\t')) return 0;
        while (q < n && (t[q] == ' ' || t[q] == '\t')) q++;
        return ref_span(t, n, q, 16, ref_token);
    }
    case LF_SCRUB_SSN:
        return ref_digits(t, n, p, 3) && ref_is(t, n, p + 3, "-") && ref_digits(t, n, p + 4, 2) && ref_is(t, n, p + 6, "-") &&
               ref_digits(t, n, p + 7, 4) && (p == 0 || ref_edge(t, n, p - 1)) && ref_edge(t, n, p + 11);
    case LF_SCRUB_CARD: {
        unsigned char sep;

        if (!ref_digits(t, n, p, 4) || t[p] < '2' || t[p] > '6') return 0;
        if (p >= 1 && ref_digit(t[p - 1])) return 0;
        if (p >= 2 && (t[p - 1] == ' ' || t[p - 1] == '-') && ref_digit(t[p - 2])) return 0;
        if (ref_digits(t, n, p + 4, 9)) return 1;
        if (n - p < 12) return 0;
        sep = t[p + 4];
        return (sep == ' ' || sep == '-') && ref_digits(t, n, p + 5, 4) &&
               (t[p + 9] == sep || (ref_digits(t, n, p + 9, 2) && t[p + 11] == sep));
    }
    case LF_SCRUB_IBAN:
        return n - p >= 4 && ref_upper(t[p]) && ref_upper(t[p + 1]) && ref_digit(t[p + 2]) && ref_digit(t[p + 3]) &&
               (p == 0 || !ref_alnum(t[p - 1]));
    case LF_SCRUB_PHONE:
        if (ref_count_digits(t, n, p, 21) < 8) return 0;
        if (p == 0) return t[p] == '+' || t[p] == '(' || ref_digit(t[p]);
        if (ref_alnum(t[p - 1])) return 0;
        if (t[p] == '+' || t[p] == '(') return 1;
        return ref_digit(t[p]) && t[p - 1] != '+' && !(p >= 2 && t[p - 1] && strchr(" .-", t[p - 1]) && ref_digit(t[p - 2]));
    case LF_SCRUB_EMAIL:
        if (t[p] != '@' || p == 0 || !ref_local(t[p - 1]) || p + 1 >= n || !(ref_alnum(t[p + 1]) || t[p + 1] == '-')) return 0;
        *to = p;
        *from = p - 1;
        while (*from > 0 && ref_local(t[*from - 1])) (*from)--;
        return 1;
    default: return 0;
    }
}

/* Calls fn as lf_scrub_scan would, kind by kind. */
static int ref_scrub_scan(const char *text, size_t n, unsigned kinds, lf_scrub_fn fn, void *ud)
{
    const unsigned char *t = (const unsigned char *)text;

    for (int kind = 0; kind < LF_SCRUB_KINDS; kind++) {
        if (!(kinds & (1u << kind))) continue;
        for (size_t p = 0; p < n; p++) {
            size_t from, to;
            int rc;

            if (!ref_place(kind, t, n, p, &from, &to)) continue;
            rc = fn(ud, kind, from, to);
            if (rc) return rc;
        }
    }
    return 0;
}

#endif
