#include "lf_scrub.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lf_banned.h"

/* The text is read 64 bytes at a time into one bitmap per byte class (bit i:
 * byte i of the chunk is in the class); a kind's places are a few ANDs of
 * shifted bitmaps, and only those bits get a look at the bytes. Prose sets
 * almost none, so a megabyte costs about what copying it through SSE2 does
 * (bench/scrubber.rb). */
enum {
    LF_SC_DIGIT,
    LF_SC_UPPER,
    LF_SC_DASH,
    LF_SC_UNDER,
    LF_SC_s,
    LF_SC_g,
    LF_SC_A,
    LF_SC_x,
    LF_SC_e,
    LF_SC_r,
    LF_SC_AT,    /* e-mail only */
    LF_SC_PLUS,  /* phone only */
    LF_SC_PAREN, /* phone only */
    LF_SC_COUNT
};

#define LF_SC(c) (1u << LF_SC_##c)

static const uint16_t lf_sc_class[256] = {
    ['0' ... '9'] = LF_SC(DIGIT),
    ['A'] = LF_SC(UPPER) | LF_SC(A),
    ['B' ... 'Z'] = LF_SC(UPPER),
    ['-'] = LF_SC(DASH),
    ['_'] = LF_SC(UNDER),
    ['s'] = LF_SC(s),
    ['g'] = LF_SC(g),
    ['x'] = LF_SC(x),
    ['e'] = LF_SC(e),
    ['r'] = LF_SC(r),
    ['@'] = LF_SC(AT),
    ['+'] = LF_SC(PLUS),
    ['('] = LF_SC(PAREN),
};

/* The bitmaps of the n <= 64 bytes at p (bits past n clear). */
static void lf_sc_classify_bytes(const unsigned char *p, size_t n, uint64_t m[LF_SC_COUNT])
{
    memset(m, 0, sizeof(uint64_t) * LF_SC_COUNT);
    for (size_t i = 0; i < n; i++) {
        for (unsigned c = lf_sc_class[p[i]]; c; c &= c - 1) m[__builtin_ctz(c)] |= 1ULL << i;
    }
}

#if defined(__SSE2__) && defined(__GNUC__)
static inline uint64_t lf_sc_bits(__m128i hit, unsigned shift)
{
    return (uint64_t)(unsigned)_mm_movemask_epi8(hit) << shift;
}

static inline __m128i lf_sc_eq(__m128i x, char c)
{
    return _mm_cmpeq_epi8(x, _mm_set1_epi8(c));
}

/* The bitmaps of the 64 bytes at p, sixteen at a time (SSE2 is on every
 * x86-64). A range test is one subtraction that moves the range to the bottom
 * of the signed bytes and one signed compare. */
static void lf_sc_classify64(const unsigned char *p, uint64_t m[LF_SC_COUNT], int at, int phone)
{
    memset(m, 0, sizeof(uint64_t) * LF_SC_COUNT);
    for (unsigned i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        unsigned sh = 16 * i;

        m[LF_SC_DIGIT] |= lf_sc_bits(_mm_cmplt_epi8(_mm_sub_epi8(x, _mm_set1_epi8((char)('0' + 128))),
                                                     _mm_set1_epi8((char)(-128 + 10))), sh);
        m[LF_SC_UPPER] |= lf_sc_bits(_mm_cmplt_epi8(_mm_sub_epi8(x, _mm_set1_epi8((char)('A' + 128))),
                                                     _mm_set1_epi8((char)(-128 + 26))), sh);
        m[LF_SC_DASH] |= lf_sc_bits(lf_sc_eq(x, '-'), sh);
        m[LF_SC_UNDER] |= lf_sc_bits(lf_sc_eq(x, '_'), sh);
        m[LF_SC_s] |= lf_sc_bits(lf_sc_eq(x, 's'), sh);
        m[LF_SC_g] |= lf_sc_bits(lf_sc_eq(x, 'g'), sh);
        m[LF_SC_A] |= lf_sc_bits(lf_sc_eq(x, 'A'), sh);
        m[LF_SC_x] |= lf_sc_bits(lf_sc_eq(x, 'x'), sh);
        m[LF_SC_e] |= lf_sc_bits(lf_sc_eq(x, 'e'), sh);
        m[LF_SC_r] |= lf_sc_bits(lf_sc_eq(x, 'r'), sh);
        if (at) m[LF_SC_AT] |= lf_sc_bits(lf_sc_eq(x, '@'), sh);
        if (phone) {
            m[LF_SC_PLUS] |= lf_sc_bits(lf_sc_eq(x, '+'), sh);
            m[LF_SC_PAREN] |= lf_sc_bits(lf_sc_eq(x, '('), sh);
        }
    }
}
#endif

/* The bitmaps of the chunk at text[at..), zero past len. */
static void lf_sc_classify(const unsigned char *t, size_t len, size_t at, unsigned kinds,
                           uint64_t m[LF_SC_COUNT])
{
    size_t n = len - at < 64 ? len - at : 64;

#if defined(__SSE2__) && defined(__GNUC__)
    if (n == 64) {
        lf_sc_classify64(t + at, m, (kinds >> LF_SCRUB_EMAIL) & 1, (kinds >> LF_SCRUB_PHONE) & 1);
        return;
    }
#else
    (void)kinds;
#endif
    lf_sc_classify_bytes(t + at, n, m);
}

static inline int lf_sc_digit(unsigned char c)
{
    return (unsigned)(c - '0') < 10u;
}

static inline int lf_sc_alnum(unsigned char c)
{
    return lf_sc_digit(c) || (unsigned)((c | 0x20) - 'a') < 26u;
}

/* [A-Za-z0-9._%+-], the bytes of an e-mail address's local part. */
static inline int lf_sc_local(unsigned char c)
{
    return lf_sc_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

static int lf_sc_digits_from(const unsigned char *t, size_t len, size_t p, size_t n, size_t count)
{
    size_t e = len - p < n ? len : p + n;
    size_t found = 0;

    for (size_t i = p; i < e; i++) found += (size_t)lf_sc_digit(t[i]);
    return found >= count;
}

static int lf_sc_all_digits(const unsigned char *t, size_t len, size_t p, size_t n)
{
    if (len - p < n) return 0;
    for (size_t i = p; i < p + n; i++) {
        if (!lf_sc_digit(t[i])) return 0;
    }
    return 1;
}

/* p starts four digits with no digit before. The card pattern: [2-6] first, not
 * a group after a separator, then nine more digits in the run, or a separator,
 * four digits and the same separator (4-4-4-4) or six digits and it (4-6-5). */
static int lf_sc_card(const unsigned char *t, size_t len, size_t p)
{
    unsigned char sep;

    if (t[p] < '2' || t[p] > '6') return 0;
    if (p >= 2 && (t[p - 1] == ' ' || t[p - 1] == '-') && lf_sc_digit(t[p - 2])) return 0;
    if (lf_sc_all_digits(t, len, p + 4, 9)) return 1;
    if (len - p < 12) return 0;
    sep = t[p + 4];
    if ((sep != ' ' && sep != '-') || !lf_sc_all_digits(t, len, p + 5, 4)) return 0;
    return t[p + 9] == sep || (lf_sc_all_digits(t, len, p + 9, 2) && t[p + 11] == sep);
}

/* p starts three digits followed by "-": the SSN pattern, boundaries included. */
static int lf_sc_ssn(const unsigned char *t, size_t len, size_t p)
{
    if (len - p < 11) return 0;
    if (!lf_sc_all_digits(t, len, p + 4, 2) || t[p + 6] != '-' || !lf_sc_all_digits(t, len, p + 7, 4)) return 0;
    if (p > 0 && (lf_sc_alnum(t[p - 1]) || t[p - 1] == '-')) return 0;
    return len - p == 11 || !(lf_sc_alnum(t[p + 11]) || t[p + 11] == '-');
}

/* The phone pattern's start: "+" or "(" with no letter or digit before, or a
 * digit with none of those nor "+" before, and not a group after a separator. */
static int lf_sc_phone_start(const unsigned char *t, size_t p)
{
    if (p == 0) return 1;
    if (lf_sc_alnum(t[p - 1])) return 0;
    if (!lf_sc_digit(t[p])) return 1;
    return t[p - 1] != '+' && !(p >= 2 && (t[p - 1] == ' ' || t[p - 1] == '.' || t[p - 1] == '-') && lf_sc_digit(t[p - 2]));
}

#define LF_SC_EMIT(kind, from, to)                          \
    do {                                                    \
        int lf_sc_rc = fn(ud, (kind), (from), (to));        \
        if (lf_sc_rc) return lf_sc_rc;                      \
    } while (0)

#define LF_SC_WANT(kind) (kinds & (1u << (kind)))
#define LF_SC_KEYS                                                                                    \
    ((1u << LF_SCRUB_SK) | (1u << LF_SCRUB_GSK) | (1u << LF_SCRUB_AWS) | (1u << LF_SCRUB_GHP) | \
     (1u << LF_SCRUB_XOX) | (1u << LF_SCRUB_BEARER))

/* Every candidate of the chunk at base: cur holds its bitmaps, next those of
 * the chunk after it (for the bytes a place looks ahead at), prev_digit
 * whether the byte before base is a digit. */
static int lf_sc_chunk(const unsigned char *t, size_t len, size_t base, const uint64_t *cur,
                       const uint64_t *next, uint64_t prev_digit, unsigned kinds, lf_scrub_fn fn, void *ud)
{
#define LF_SC_AHEAD(c, k) ((cur[LF_SC_##c] >> (k)) | (next[LF_SC_##c] << (64 - (k))))
#define LF_SC_EACH(mask) for (uint64_t b_ = (mask), p = 0; b_ && (p = base + (uint64_t)__builtin_ctzll(b_), 1); b_ &= b_ - 1)
    uint64_t digit = cur[LF_SC_DIGIT];
    uint64_t run_start = digit & ~((digit << 1) | prev_digit);

    if (kinds & LF_SC_KEYS) {
        LF_SC_EACH(cur[LF_SC_s] & LF_SC_AHEAD(DASH, 2)) {
            if (LF_SC_WANT(LF_SCRUB_SK) && t[p + 1] == 'k') LF_SC_EMIT(LF_SCRUB_SK, p, p + 1);
        }
        LF_SC_EACH(cur[LF_SC_g] & LF_SC_AHEAD(UNDER, 3)) {
            if (LF_SC_WANT(LF_SCRUB_GSK) && t[p + 1] == 's' && t[p + 2] == 'k') LF_SC_EMIT(LF_SCRUB_GSK, p, p + 1);
            if (LF_SC_WANT(LF_SCRUB_GHP) && t[p + 1] == 'h' && t[p + 2] == 'p') LF_SC_EMIT(LF_SCRUB_GHP, p, p + 1);
        }
        LF_SC_EACH(cur[LF_SC_A] & LF_SC_AHEAD(A, 3)) {
            if (LF_SC_WANT(LF_SCRUB_AWS) && (t[p + 1] == 'K' || t[p + 1] == 'S') && t[p + 2] == 'I')
                LF_SC_EMIT(LF_SCRUB_AWS, p, p + 1);
        }
        LF_SC_EACH(cur[LF_SC_x] & LF_SC_AHEAD(x, 2)) {
            if (LF_SC_WANT(LF_SCRUB_XOX) && t[p + 1] == 'o' && len - p > 4 &&
                memchr("abposr", t[p + 3], 6) && t[p + 4] == '-')
                LF_SC_EMIT(LF_SCRUB_XOX, p, p + 1);
        }
        /* "earer": the place is the B before it. */
        LF_SC_EACH(cur[LF_SC_e] & LF_SC_AHEAD(r, 2) & LF_SC_AHEAD(r, 4)) {
            if (LF_SC_WANT(LF_SCRUB_BEARER) && p > 0 && (t[p - 1] | 0x20) == 'b' && t[p + 1] == 'a' && t[p + 3] == 'e')
                LF_SC_EMIT(LF_SCRUB_BEARER, p - 1, p);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_SSN)) {
        LF_SC_EACH(run_start & LF_SC_AHEAD(DIGIT, 1) & LF_SC_AHEAD(DIGIT, 2) & LF_SC_AHEAD(DASH, 3)) {
            if (lf_sc_ssn(t, len, p)) LF_SC_EMIT(LF_SCRUB_SSN, p, p + 1);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_CARD)) {
        LF_SC_EACH(run_start & LF_SC_AHEAD(DIGIT, 1) & LF_SC_AHEAD(DIGIT, 2) & LF_SC_AHEAD(DIGIT, 3)) {
            if (lf_sc_card(t, len, p)) LF_SC_EMIT(LF_SCRUB_CARD, p, p + 1);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_IBAN)) {
        LF_SC_EACH(cur[LF_SC_UPPER] & LF_SC_AHEAD(UPPER, 1) & LF_SC_AHEAD(DIGIT, 2) & LF_SC_AHEAD(DIGIT, 3)) {
            if (p == 0 || !lf_sc_alnum(t[p - 1])) LF_SC_EMIT(LF_SCRUB_IBAN, p, p + 1);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_PHONE)) {
        LF_SC_EACH(run_start | cur[LF_SC_PLUS] | cur[LF_SC_PAREN]) {
            if (lf_sc_phone_start(t, p) && lf_sc_digits_from(t, len, p, 21, 8)) LF_SC_EMIT(LF_SCRUB_PHONE, p, p + 1);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_EMAIL)) {
        LF_SC_EACH(cur[LF_SC_AT]) {
            size_t from = p;

            if (p == 0 || !lf_sc_local(t[p - 1]) || len - p < 2 || !(lf_sc_alnum(t[p + 1]) || t[p + 1] == '-')) continue;
            while (from > 0 && lf_sc_local(t[from - 1])) from--;
            LF_SC_EMIT(LF_SCRUB_EMAIL, from, p);
        }
    }
    return 0;
#undef LF_SC_AHEAD
#undef LF_SC_EACH
}

int lf_scrub_scan(const char *text, size_t len, unsigned kinds, lf_scrub_fn fn, void *ud)
{
    const unsigned char *t = (const unsigned char *)text;
    uint64_t cur[LF_SC_COUNT], next[LF_SC_COUNT];
    uint64_t prev_digit = 0;

    if (len == 0 || !(kinds & ((1u << LF_SCRUB_KINDS) - 1))) return 0;
    lf_sc_classify(t, len, 0, kinds, cur);
    for (size_t base = 0; base < len; base += 64) {
        int rc;

        if (len - base > 64)
            lf_sc_classify(t, len, base + 64, kinds, next);
        else
            memset(next, 0, sizeof next);
        rc = lf_sc_chunk(t, len, base, cur, next, prev_digit, kinds, fn, ud);
        if (rc) return rc;
        prev_digit = cur[LF_SC_DIGIT] >> 63;
        memcpy(cur, next, sizeof cur);
    }
    return 0;
}
