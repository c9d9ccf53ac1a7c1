#include "lf_scrub.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(LF_SCRUB_NO_AVX2)
#include <immintrin.h>
#endif

#include "lf_banned.h"

/* The text is read 64 bytes at a time into one bitmap per byte class (bit i:
 * byte i of the chunk is in the class). A kind's triggers are a few ANDs of
 * shifted bitmaps, chosen rare in prose ("-" for sk- and xox?-, "_" for gsk_
 * and ghp_, four capitals for AKIA, digits in a row); only those bits get a
 * look at the bytes around them. Few classes keep the pass cheap: each costs
 * about as much as the rest of the work on a megabyte of prose
 * (bench/scrubber.rb). */
enum {
    LF_SC_DIGIT,
    LF_SC_UPPER,
    LF_SC_DASH,
    LF_SC_UNDER,
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
    ['A' ... 'Z'] = LF_SC(UPPER),
    ['-'] = LF_SC(DASH),
    ['_'] = LF_SC(UNDER),
    ['e'] = LF_SC(e),
    ['r'] = LF_SC(r),
    ['@'] = LF_SC(AT),
    ['+'] = LF_SC(PLUS),
    ['('] = LF_SC(PAREN),
};

/* The character classes of the key patterns, for the runs that follow a
 * prefix. */
enum {
    LF_SC_KEY = 1,    /* [A-Za-z0-9_-] */
    LF_SC_ALNUM = 2,  /* [A-Za-z0-9] */
    LF_SC_UPNUM = 4,  /* [A-Z0-9] */
    LF_SC_SLACK = 8,  /* [A-Za-z0-9-] */
    LF_SC_TOKEN = 16, /* [A-Za-z0-9._~+/-] */
    LF_SC_LOCAL = 32  /* [A-Za-z0-9._%+-], an e-mail address's local part */
};

#define LF_SC_ALL_ALNUM (LF_SC_KEY | LF_SC_ALNUM | LF_SC_SLACK | LF_SC_TOKEN | LF_SC_LOCAL)

static const unsigned char lf_sc_chars[256] = {
    ['0' ... '9'] = LF_SC_ALL_ALNUM | LF_SC_UPNUM,
    ['A' ... 'Z'] = LF_SC_ALL_ALNUM | LF_SC_UPNUM,
    ['a' ... 'z'] = LF_SC_ALL_ALNUM,
    ['_'] = LF_SC_KEY | LF_SC_TOKEN | LF_SC_LOCAL,
    ['-'] = LF_SC_KEY | LF_SC_SLACK | LF_SC_TOKEN | LF_SC_LOCAL,
    ['.'] = LF_SC_TOKEN | LF_SC_LOCAL,
    ['~'] = LF_SC_TOKEN,
    ['+'] = LF_SC_TOKEN | LF_SC_LOCAL,
    ['/'] = LF_SC_TOKEN,
    ['%'] = LF_SC_LOCAL,
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

/* 0xFF where x has a byte in [lo, lo + n): one subtraction moves the range to
 * the bottom of the signed bytes, one signed compare tests it. */
static inline __m128i lf_sc_range(__m128i x, unsigned char lo, unsigned char n)
{
    return _mm_cmplt_epi8(_mm_sub_epi8(x, _mm_set1_epi8((char)(lo + 128))), _mm_set1_epi8((char)(-128 + n)));
}

/* The bitmaps of the 64 bytes at p, sixteen at a time (SSE2 is on every
 * x86-64). */
static void lf_sc_classify64(const unsigned char *p, uint64_t m[LF_SC_COUNT], int at, int phone)
{
    memset(m, 0, sizeof(uint64_t) * LF_SC_COUNT);
    for (unsigned i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        unsigned sh = 16 * i;

        m[LF_SC_DIGIT] |= lf_sc_bits(lf_sc_range(x, '0', 10), sh);
        m[LF_SC_UPPER] |= lf_sc_bits(lf_sc_range(x, 'A', 26), sh);
        m[LF_SC_DASH] |= lf_sc_bits(lf_sc_eq(x, '-'), sh);
        m[LF_SC_UNDER] |= lf_sc_bits(lf_sc_eq(x, '_'), sh);
        m[LF_SC_e] |= lf_sc_bits(lf_sc_eq(x, 'e'), sh);
        m[LF_SC_r] |= lf_sc_bits(lf_sc_eq(x, 'r'), sh);
        if (at) m[LF_SC_AT] |= lf_sc_bits(lf_sc_eq(x, '@'), sh);
        if (phone) m[LF_SC_PLUS] |= lf_sc_bits(_mm_or_si128(lf_sc_eq(x, '+'), lf_sc_eq(x, '(')), sh);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(LF_SCRUB_NO_AVX2)
#define LF_SC_AVX2 1

static inline __attribute__((target("avx2"))) uint64_t lf_sc_bits32(__m256i hit, unsigned shift)
{
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(hit) << shift;
}

static inline __attribute__((target("avx2"))) __m256i lf_sc_range32(__m256i x, unsigned char lo, unsigned char n)
{
    return _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + n)), _mm256_sub_epi8(x, _mm256_set1_epi8((char)(lo + 128))));
}

/* lf_sc_classify64 thirty-two bytes at a time, where the CPU has AVX2. */
static __attribute__((target("avx2"))) void lf_sc_classify64_avx2(const unsigned char *p, uint64_t m[LF_SC_COUNT],
                                                                  int at, int phone)
{
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));

#define LF_SC_BOTH(test) (lf_sc_bits32(test(x), 0) | lf_sc_bits32(test(y), 32))
#define LF_SC_DIGITS32(v) lf_sc_range32(v, '0', 10)
#define LF_SC_UPPERS32(v) lf_sc_range32(v, 'A', 26)
    m[LF_SC_DIGIT] = LF_SC_BOTH(LF_SC_DIGITS32);
    m[LF_SC_UPPER] = LF_SC_BOTH(LF_SC_UPPERS32);
#define LF_SC_IS_DASH(v) _mm256_cmpeq_epi8(v, _mm256_set1_epi8('-'))
#define LF_SC_IS_UNDER(v) _mm256_cmpeq_epi8(v, _mm256_set1_epi8('_'))
#define LF_SC_IS_E(v) _mm256_cmpeq_epi8(v, _mm256_set1_epi8('e'))
#define LF_SC_IS_R(v) _mm256_cmpeq_epi8(v, _mm256_set1_epi8('r'))
#define LF_SC_IS_AT(v) _mm256_cmpeq_epi8(v, _mm256_set1_epi8('@'))
#define LF_SC_IS_PLUS(v) _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('+')), _mm256_cmpeq_epi8(v, _mm256_set1_epi8('(')))
    m[LF_SC_DASH] = LF_SC_BOTH(LF_SC_IS_DASH);
    m[LF_SC_UNDER] = LF_SC_BOTH(LF_SC_IS_UNDER);
    m[LF_SC_e] = LF_SC_BOTH(LF_SC_IS_E);
    m[LF_SC_r] = LF_SC_BOTH(LF_SC_IS_R);
    m[LF_SC_AT] = at ? LF_SC_BOTH(LF_SC_IS_AT) : 0;
    m[LF_SC_PLUS] = phone ? LF_SC_BOTH(LF_SC_IS_PLUS) : 0;
    m[LF_SC_PAREN] = 0;
#undef LF_SC_BOTH
#undef LF_SC_DIGITS32
#undef LF_SC_UPPERS32
#undef LF_SC_IS_DASH
#undef LF_SC_IS_UNDER
#undef LF_SC_IS_E
#undef LF_SC_IS_R
#undef LF_SC_IS_AT
#undef LF_SC_IS_PLUS
}
#endif
#endif

/* The bitmaps of the chunk at text[at..), zero past len. */
static void lf_sc_classify(const unsigned char *t, size_t len, size_t at, unsigned kinds, int avx2,
                           uint64_t m[LF_SC_COUNT])
{
    size_t n = len - at < 64 ? len - at : 64;

#if defined(__SSE2__) && defined(__GNUC__)
    if (n == 64) {
#ifdef LF_SC_AVX2
        if (avx2) {
            lf_sc_classify64_avx2(t + at, m, (kinds >> LF_SCRUB_EMAIL) & 1, (kinds >> LF_SCRUB_PHONE) & 1);
            return;
        }
#endif
        lf_sc_classify64(t + at, m, (kinds >> LF_SCRUB_EMAIL) & 1, (kinds >> LF_SCRUB_PHONE) & 1);
        return;
    }
#endif
    lf_sc_classify_bytes(t + at, n, m);
    m[LF_SC_PLUS] |= m[LF_SC_PAREN]; /* as lf_sc_classify64 has them */
}

static inline int lf_sc_digit(unsigned char c)
{
    return (unsigned)(c - '0') < 10u;
}

static inline int lf_sc_alnum(unsigned char c)
{
    return (lf_sc_chars[c] & LF_SC_ALNUM) != 0;
}

/* Whether the n bytes at text[p..) are there and all of class cls (lf_sc_chars). */
static int lf_sc_run(const unsigned char *t, size_t len, size_t p, size_t n, unsigned cls)
{
    if (p > len || len - p < n) return 0;
    for (size_t i = p; i < p + n; i++) {
        if (!(lf_sc_chars[t[i]] & cls)) return 0;
    }
    return 1;
}

static int lf_sc_all_digits(const unsigned char *t, size_t len, size_t p, size_t n)
{
    if (p > len || len - p < n) return 0;
    for (size_t i = p; i < p + n; i++) {
        if (!lf_sc_digit(t[i])) return 0;
    }
    return 1;
}

/* A phone number is at most 21 bytes of digits and " .-()+", 8 of them digits
 * or more: whether the bytes from p have that many before another byte. */
static int lf_sc_phone_digits(const unsigned char *t, size_t len, size_t p)
{
    size_t e = len - p < 21 ? len : p + 21;
    size_t found = 0;

    for (size_t i = p; i < e; i++) {
        if (lf_sc_digit(t[i]))
            found++;
        else if (!memchr(" .-()+", t[i], 6))
            break;
    }
    return found >= 8;
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

/* "earer" at p + 1: [Bb]earer[ \t]+ and 16 token bytes. */
static int lf_sc_bearer(const unsigned char *t, size_t len, size_t p)
{
    size_t q = p + 5;

    if (p == 0 || (t[p - 1] | 0x20) != 'b' || t[p + 1] != 'a' || t[p + 3] != 'e') return 0;
    if (q >= len || (t[q] != ' ' && t[q] != '\t')) return 0;
    while (q < len && (t[q] == ' ' || t[q] == '\t')) q++;
    return lf_sc_run(t, len, q, 16, LF_SC_TOKEN);
}

#define LF_SC_EMIT(kind, from, to)                          \
    do {                                                    \
        int lf_sc_rc = fn(ud, (kind), (from), (to));        \
        if (lf_sc_rc) return lf_sc_rc;                      \
    } while (0)

#define LF_SC_WANT(kind) (kinds & (1u << (kind)))

/* Every candidate of the chunk at base: cur holds its bitmaps, next those of
 * the chunk after it (for the bytes a trigger looks ahead at). A trigger is
 * the rarest part of a value, its place where the value starts. */
static int lf_sc_chunk(const unsigned char *t, size_t len, size_t base, const uint64_t *cur,
                       const uint64_t *next, unsigned kinds, lf_scrub_fn fn, void *ud)
{
#define LF_SC_AHEAD(c, k) ((cur[LF_SC_##c] >> (k)) | (next[LF_SC_##c] << (64 - (k))))
#define LF_SC_EACH(mask) \
    for (uint64_t b_ = (mask), p = 0; b_ && (p = base + (uint64_t)__builtin_ctzll(b_), 1); b_ &= b_ - 1)
    uint64_t digit = cur[LF_SC_DIGIT], upper = cur[LF_SC_UPPER], phone_start = 0;

    if (LF_SC_WANT(LF_SCRUB_SK) || LF_SC_WANT(LF_SCRUB_XOX)) {
        /* the "-" of sk- and of xox?- */
        LF_SC_EACH(cur[LF_SC_DASH]) {
            if (LF_SC_WANT(LF_SCRUB_SK) && p >= 2 && t[p - 2] == 's' && t[p - 1] == 'k' &&
                lf_sc_run(t, len, p + 1, 20, LF_SC_KEY))
                LF_SC_EMIT(LF_SCRUB_SK, p - 2, p - 1);
            if (LF_SC_WANT(LF_SCRUB_XOX) && p >= 4 && t[p - 4] == 'x' && t[p - 3] == 'o' && t[p - 2] == 'x' &&
                memchr("abposr", t[p - 1], 6) && lf_sc_run(t, len, p + 1, 10, LF_SC_SLACK))
                LF_SC_EMIT(LF_SCRUB_XOX, p - 4, p - 3);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_GSK) || LF_SC_WANT(LF_SCRUB_GHP)) {
        /* the "_" of gsk_ and ghp_ */
        LF_SC_EACH(cur[LF_SC_UNDER]) {
            if (p < 3 || t[p - 3] != 'g') continue;
            if (LF_SC_WANT(LF_SCRUB_GSK) && t[p - 2] == 's' && t[p - 1] == 'k' && lf_sc_run(t, len, p + 1, 20, LF_SC_ALNUM))
                LF_SC_EMIT(LF_SCRUB_GSK, p - 3, p - 2);
            if (LF_SC_WANT(LF_SCRUB_GHP) && t[p - 2] == 'h' && t[p - 1] == 'p' && lf_sc_run(t, len, p + 1, 36, LF_SC_ALNUM))
                LF_SC_EMIT(LF_SCRUB_GHP, p - 3, p - 2);
        }
    }
    if (upper & LF_SC_AHEAD(UPPER, 1) & (LF_SC_AHEAD(UPPER, 2) | LF_SC_AHEAD(DIGIT, 2))) {
        uint64_t two = upper & LF_SC_AHEAD(UPPER, 1);

        /* four capitals: AKIA, ASIA, then 16 of [A-Z0-9] and no more */
        if (LF_SC_WANT(LF_SCRUB_AWS)) {
            LF_SC_EACH(two & LF_SC_AHEAD(UPPER, 2) & LF_SC_AHEAD(UPPER, 3)) {
                if (t[p] == 'A' && (t[p + 1] == 'K' || t[p + 1] == 'S') && t[p + 2] == 'I' && t[p + 3] == 'A' &&
                    lf_sc_run(t, len, p + 4, 16, LF_SC_UPNUM) && !lf_sc_run(t, len, p + 20, 1, LF_SC_UPNUM))
                    LF_SC_EMIT(LF_SCRUB_AWS, p, p + 1);
            }
        }
        if (LF_SC_WANT(LF_SCRUB_IBAN)) {
            LF_SC_EACH(two & LF_SC_AHEAD(DIGIT, 2) & LF_SC_AHEAD(DIGIT, 3)) {
                if (p == 0 || !lf_sc_alnum(t[p - 1])) LF_SC_EMIT(LF_SCRUB_IBAN, p, p + 1);
            }
        }
    }
    if (LF_SC_WANT(LF_SCRUB_BEARER)) {
        /* "e?r?r" of earer; the place is the B before it */
        LF_SC_EACH(cur[LF_SC_e] & LF_SC_AHEAD(r, 2) & LF_SC_AHEAD(r, 4)) {
            if (lf_sc_bearer(t, len, p)) LF_SC_EMIT(LF_SCRUB_BEARER, p - 1, p);
        }
    }
    if (digit) {
        uint64_t run_start = digit & ~((digit << 1) | (base > 0 && lf_sc_digit(t[base - 1])));
        uint64_t three = run_start & LF_SC_AHEAD(DIGIT, 1) & LF_SC_AHEAD(DIGIT, 2);

        if (three && LF_SC_WANT(LF_SCRUB_SSN)) {
            LF_SC_EACH(three & LF_SC_AHEAD(DASH, 3)) {
                if (lf_sc_ssn(t, len, p)) LF_SC_EMIT(LF_SCRUB_SSN, p, p + 1);
            }
        }
        if (three && LF_SC_WANT(LF_SCRUB_CARD)) {
            LF_SC_EACH(three & LF_SC_AHEAD(DIGIT, 3)) {
                if (lf_sc_card(t, len, p)) LF_SC_EMIT(LF_SCRUB_CARD, p, p + 1);
            }
        }
        phone_start = run_start;
    }
    if (LF_SC_WANT(LF_SCRUB_PHONE)) {
        LF_SC_EACH(phone_start | cur[LF_SC_PLUS]) {
            if (lf_sc_phone_start(t, p) && lf_sc_phone_digits(t, len, p)) LF_SC_EMIT(LF_SCRUB_PHONE, p, p + 1);
        }
    }
    if (LF_SC_WANT(LF_SCRUB_EMAIL)) {
        LF_SC_EACH(cur[LF_SC_AT]) {
            size_t from = p;

            if (p == 0 || !(lf_sc_chars[t[p - 1]] & LF_SC_LOCAL) || !lf_sc_run(t, len, p + 1, 1, LF_SC_SLACK)) continue;
            while (from > 0 && (lf_sc_chars[t[from - 1]] & LF_SC_LOCAL)) from--;
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

#ifdef LF_SC_AVX2
    int avx2 = __builtin_cpu_supports("avx2");
#else
    int avx2 = 0;
#endif

    if (!(kinds & ((1u << LF_SCRUB_KINDS) - 1))) return 0;
    if (len) lf_sc_classify(t, len, 0, kinds, avx2, cur);
    for (size_t base = 0; base < len; base += 64) {
        int rc;

        if (len - base > 64)
            lf_sc_classify(t, len, base + 64, kinds, avx2, next);
        else
            memset(next, 0, sizeof next);
        rc = lf_sc_chunk(t, len, base, cur, next, kinds, fn, ud);
        if (rc) return rc;
        memcpy(cur, next, sizeof cur);
    }
    return 0;
}

size_t lf_scrub_spliced_len(size_t len, const lf_scrub_cut *cuts, size_t n)
{
    size_t total = len, last = 0;

    for (size_t i = 0; i < n; i++) {
        if (cuts[i].from < last || cuts[i].to < cuts[i].from || cuts[i].to > len) return SIZE_MAX;
        if (cuts[i].with_len > SIZE_MAX - total) return SIZE_MAX;
        total = total - (cuts[i].to - cuts[i].from) + cuts[i].with_len;
        last = cuts[i].to;
    }
    return total;
}

void lf_scrub_splice(const char *text, size_t len, const lf_scrub_cut *cuts, size_t n, char *out)
{
    size_t last = 0;

    for (size_t i = 0; i < n; i++) {
        memcpy(out, text + last, cuts[i].from - last);
        out += cuts[i].from - last;
        if (cuts[i].with_len) memcpy(out, cuts[i].with, cuts[i].with_len);
        out += cuts[i].with_len;
        last = cuts[i].to;
    }
    memcpy(out, text + last, len - last);
}
