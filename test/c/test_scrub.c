/* The scrubber's pre-scan (lf_scrub.c): the places of each kind in known texts,
 * at the edges of its 64-byte chunks and of the text, and the same places as the
 * byte-by-byte reference (scrub_ref.h) finds in many generated texts. Each text
 * sits in an allocation of its exact length, so ASan sees any read past it. */
#include <stdint.h>
#include <stdlib.h>

#include "lf_scrub.h"
#include "lf_test.h"
#include "scrub_ref.h"

/* The scan again without its AVX2 path, as a CPU without AVX2 runs it. */
#define LF_SCRUB_NO_AVX2 1
#define lf_scrub_scan lf_scrub_scan_sse2
#define lf_scrub_spliced_len lf_scrub_spliced_len_sse2
#define lf_scrub_splice lf_scrub_splice_sse2
#include "lf_scrub.c"
#undef lf_scrub_scan
#undef lf_scrub_spliced_len
#undef lf_scrub_splice

#include "lf_banned.h"

#define ALL_KINDS ((1u << LF_SCRUB_KINDS) - 1)

typedef struct hit { int kind; size_t from, to; } hit;

typedef struct hits {
    hit h[4096];
    size_t n;
    int overflow;
    size_t stop_after; /* 0: never */
} hits;

static int record(void *ud, int kind, size_t from, size_t to)
{
    hits *r = ud;

    if (r->n == sizeof r->h / sizeof r->h[0]) {
        r->overflow = 1;
        return 1;
    }
    r->h[r->n++] = (hit){ kind, from, to };
    return r->stop_after && r->n == r->stop_after ? 7 : 0;
}

static int by_kind_then_from(const void *a, const void *b)
{
    const hit *x = a, *y = b;

    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->from < y->from ? -1 : x->from > y->from;
}

enum { SCAN, SCAN_SSE2, SCAN_REF };

/* Scans a copy of text[0..n) in an allocation of exactly n bytes. */
static int scan(const char *text, size_t n, unsigned kinds, hits *r, int how)
{
    char *copy = malloc(n ? n : 1);
    int rc;

    memcpy(copy, text, n);
    r->n = 0;
    r->overflow = 0;
    if (how == SCAN_REF)
        rc = ref_scrub_scan(copy, n, kinds, record, r);
    else if (how == SCAN_SSE2)
        rc = lf_scrub_scan_sse2(copy, n, kinds, record, r);
    else
        rc = lf_scrub_scan(copy, n, kinds, record, r);
    free(copy);
    return rc;
}

/* The places of kind in text, as "from,from,..." ("" when none). */
static const char *places(const char *text, int kind)
{
    static char out[256];
    static hits r;
    size_t len = 0;

    scan(text, strlen(text), 1u << kind, &r, SCAN);
    out[0] = '\0';
    for (size_t i = 0; i < r.n; i++) {
        LF_CHECK_INT(r.h[i].kind, kind);
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%zu", i ? "," : "", r.h[i].from);
    }
    return out;
}

#define K20 "abcdefghij0123456789"
#define U16 "IOSFODNN7EXAMPLE"

static void test_each_kind(void)
{
    LF_CHECK_STR(places("key sk-proj-" K20 " and task-" K20 ", sk-short sk_live", LF_SCRUB_SK), "4,39");
    LF_CHECK_STR(places("gsk_" K20 " ghp_" K20 K20 " gsk_" K20 "+ gsk_short", LF_SCRUB_GSK), "0,70");
    LF_CHECK_STR(places("gsk_" K20 " ghp_" K20 K20 " ghp_" K20, LF_SCRUB_GHP), "25");
    LF_CHECK_STR(places("AKIA" U16 " ASIA" U16 "X AKIA" U16 "x AKIB" U16 " AKIA", LF_SCRUB_AWS), "0,43");
    LF_CHECK_STR(places("xoxb-1234567890 xoxa-12345 xoxz-1234567890 xoxp-abc-def-ghi", LF_SCRUB_XOX), "0,43");
    LF_CHECK_STR(places("Bearer " K20 " bearer \t " K20 " Xearer " K20 " Bearer short", LF_SCRUB_BEARER), "0,28");
    LF_CHECK_STR(places("123-45-6789 a123-45-6789 123-45-67890 -123-45-6789 (123-45-6789)", LF_SCRUB_SSN), "0,52");
    LF_CHECK_STR(places("4111 1111 1111 1111, 4111111111111, 7111111111111, 4111-1111-1111-1111", LF_SCRUB_CARD),
                 "0,21,51");
    LF_CHECK_STR(places("3782 822463 10005 and 2026-03-14,123456", LF_SCRUB_CARD), "0");
    LF_CHECK_STR(places("DE89 3704 xGB82 (NL91 CO2 AB1", LF_SCRUB_IBAN), "0,17");
    LF_CHECK_STR(places("+1 555-123-4567 (555) 123 4567 5551234567 x5551234567 555-1234", LF_SCRUB_PHONE),
                 "0,16,17,22");
    LF_CHECK_STR(places("jane.doe+x@example.com a@b @x b@ c@.d", LF_SCRUB_EMAIL), "0,23");
}

static void test_email_range(void)
{
    static hits r;
    const char *text = "x<jane.doe@example.com";

    scan(text, strlen(text), 1u << LF_SCRUB_EMAIL, &r, SCAN);
    LF_CHECK_INT(r.n, 1);
    LF_CHECK_INT(r.h[0].from, 2);
    LF_CHECK_INT(r.h[0].to, 10);
}

/* Every kind placed across each chunk edge and at the end of the text. */
static void test_chunk_edges(void)
{
    static const char *values[] = { "sk-" K20, "gsk_" K20, "ghp_" K20 K20, "AKIA" U16, "xoxb-" K20, "Bearer " K20,
                                    "123-45-6789", "4111 1111 1111 1111", "DE89", "(555) 123-4567",
                                    "a@b.c" };
    static const int kinds[] = { LF_SCRUB_SK, LF_SCRUB_GSK, LF_SCRUB_GHP, LF_SCRUB_AWS, LF_SCRUB_XOX,
                                 LF_SCRUB_BEARER, LF_SCRUB_SSN, LF_SCRUB_CARD, LF_SCRUB_IBAN, LF_SCRUB_PHONE,
                                 LF_SCRUB_EMAIL };
    static hits r;
    char text[260];

    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        size_t k = strlen(values[v]);

        for (size_t at = 40; at < 140; at++) {
            memset(text, ' ', at);
            memcpy(text + at, values[v], k);
            /* once ending the text, once followed by more */
            for (int more = 0; more < 2; more++) {
                size_t n = at + k + (more ? 30 : 0);
                int found = 0;

                if (more) memset(text + at + k, ' ', 30);
                scan(text, n, 1u << kinds[v], &r, SCAN);
                for (size_t i = 0; i < r.n; i++) found += r.h[i].kind == kinds[v] && r.h[i].from == at;
                if (found != 1) fprintf(stderr, "value %s at %zu, more %d\n", values[v], at, more);
                LF_CHECK_INT(found, 1);
            }
        }
    }
}

static void test_stops(void)
{
    static hits r;
    const char *text = "sk-" K20 " sk-" K20 " sk-" K20;

    r.stop_after = 2;
    LF_CHECK_INT(scan(text, strlen(text), ALL_KINDS, &r, SCAN), 7);
    LF_CHECK_INT(r.n, 2);
    r.stop_after = 0;
    LF_CHECK_INT(scan("", 0, ALL_KINDS, &r, SCAN), 0);
    LF_CHECK_INT(r.n, 0);
    LF_CHECK_INT(scan(text, strlen(text), 0, &r, SCAN), 0);
    LF_CHECK_INT(r.n, 0);
}

/* A text from pieces that make and nearly make every kind. */
static size_t generate(char *out, size_t cap, uint64_t *seed)
{
    static const char *pieces[] = { "sk-", "gsk_", "ghp_", "AKIA", "ASIA", "xoxb-", "xoxz-", "Bearer ", "bearer",
                                    "earer", "123-45-6789", "4111", "1111", "3782", "822463", "DE89", "GB82",
                                    "WEST", "(555)", "+1", "555-1234", "@", "a@b.co", "jane.doe", ".", "-", " ",
                                    "_", "0", "7", "2", "A", "x", "\xc3\xa9", "\n", "e", "r", "s", "g", "",
                                    K20, U16, "\t", "/", "~", "ZZ99", "9999" };
    size_t n = 0;
    size_t want;

    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    want = (size_t)(*seed >> 33) % cap;
    while (n < want) {
        const char *p;
        size_t k;

        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p = pieces[(*seed >> 33) % (sizeof pieces / sizeof pieces[0])];
        k = *p ? strlen(p) : 1; /* "": a NUL byte */
        if (n + k > want) break;
        memcpy(out + n, p, k);
        n += k;
    }
    return n;
}

/* got, sorted as the reference gives them, is what it gives. */
static void check_same(hits *got, hits *want, const char *text, size_t n, const char *how)
{
    for (size_t i = 0; i < got->n; i++) {
        /* in order of place within a kind */
        for (size_t j = 0; j < i; j++) {
            if (got->h[j].kind == got->h[i].kind && got->h[j].from >= got->h[i].from) LF_CHECK(!"out of order");
        }
    }
    qsort(got->h, got->n, sizeof(hit), by_kind_then_from);
    LF_CHECK(!got->overflow && !want->overflow);
    LF_CHECK_INT(got->n, want->n);
    for (size_t i = 0; i < got->n && i < want->n; i++) {
        if (got->h[i].kind != want->h[i].kind || got->h[i].from != want->h[i].from || got->h[i].to != want->h[i].to) {
            fprintf(stderr, "%s hit %zu: kind %d at %zu..%zu, reference kind %d at %zu..%zu\n", how, i, got->h[i].kind,
                    got->h[i].from, got->h[i].to, want->h[i].kind, want->h[i].from, want->h[i].to);
            LF_CHECK(!"same as the reference");
            break;
        }
    }
    if (lf_test_current_failed) fprintf(stderr, "text: %.*s\n", (int)n, text);
}

static void test_same_as_reference(void)
{
    static hits got, want;
    static char text[400];
    uint64_t seed = 17;

    for (int round = 0; round < 20000 && !lf_test_current_failed; round++) {
        size_t n = generate(text, sizeof text, &seed);
        unsigned kinds = round % 3 ? ALL_KINDS : (unsigned)(seed >> 40) & ALL_KINDS;

        scan(text, n, kinds, &want, SCAN_REF);
        scan(text, n, kinds, &got, SCAN);
        check_same(&got, &want, text, n, "scan");
        scan(text, n, kinds, &got, SCAN_SSE2);
        check_same(&got, &want, text, n, "sse2");
    }
}

static void test_splice(void)
{
    const char *text = "card 4111 1111 1111 1111, key sk-x.";
    lf_scrub_cut cuts[] = { { 5, 24, "[CARD_1]", 8 }, { 30, 34, "[API_KEY_1]", 11 }, { 35, 35, "", 0 } };
    char out[64];
    size_t n = lf_scrub_spliced_len(strlen(text), cuts, 3);

    LF_CHECK_INT(n, strlen(text) - 19 + 8 - 4 + 11);
    memset(out, 0, sizeof out);
    lf_scrub_splice(text, strlen(text), cuts, 3, out);
    LF_CHECK_STR(out, "card [CARD_1], key [API_KEY_1].");
    LF_CHECK_INT(lf_scrub_spliced_len(strlen(text), cuts, 0), strlen(text));
    memset(out, 0, sizeof out);
    lf_scrub_splice(text, strlen(text), cuts, 0, out);
    LF_CHECK_STR(out, text);

    /* out of order, overlapping, reversed or past the end */
    {
        lf_scrub_cut bad[][2] = { { { 30, 34, "a", 1 }, { 5, 24, "b", 1 } },
                                  { { 5, 24, "a", 1 }, { 20, 26, "b", 1 } },
                                  { { 5, 4, "a", 1 }, { 6, 7, "b", 1 } },
                                  { { 5, 6, "a", 1 }, { 30, 36, "b", 1 } } };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) LF_CHECK(lf_scrub_spliced_len(strlen(text), bad[i], 2) == SIZE_MAX);
    }
}

int main(void)
{
    LF_RUN(test_each_kind);
    LF_RUN(test_email_range);
    LF_RUN(test_chunk_edges);
    LF_RUN(test_stops);
    LF_RUN(test_same_as_reference);
    LF_RUN(test_splice);
    return lf_test_summary("scrub");
}
