/* libFuzzer target: the scrubber's pre-scan (lf_scrub.c) against the
 * byte-by-byte reference of test/c/scrub_ref.h, with the AVX2 path (where the
 * CPU has it) and the SSE2 one; and its splice against a plain copy.
 *
 * Input: bytes 0 and 1 are the kinds wanted (bit 1 << kind), the rest the text.
 * Every place found must be the reference's, in order within each kind; the
 * places of the text, taken as cuts where they do not overlap, must splice to
 * what copying piece by piece gives.
 *
 *   ruby fuzz/seed_scrub.rb    # tmp/fuzz/corpus_scrub
 *   bundle exec rake fuzz FUZZ_TARGETS=scrub
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_scrub.h"
#include "../test/c/scrub_ref.h"

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

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)
#define MAX_HITS 65536

typedef struct fuzz_hit { int kind; size_t from, to; } fuzz_hit;

typedef struct fuzz_hits {
    fuzz_hit h[MAX_HITS];
    size_t n;
} fuzz_hits;

static fuzz_hits got, sse2, want;

static int fuzz_record(void *ud, int kind, size_t from, size_t to)
{
    fuzz_hits *r = ud;

    if (r->n == MAX_HITS) return 1;
    r->h[r->n++] = (fuzz_hit){ kind, from, to };
    return 0;
}

static int fuzz_by_kind_then_from(const void *a, const void *b)
{
    const fuzz_hit *x = a, *y = b;

    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* r in order within each kind, then sorted as the reference gives them. */
static void fuzz_sort(fuzz_hits *r)
{
    size_t last[LF_SCRUB_KINDS];
    int seen[LF_SCRUB_KINDS] = { 0 };

    for (size_t i = 0; i < r->n; i++) {
        int k = r->h[i].kind;

        CHECK(k >= 0 && k < LF_SCRUB_KINDS);
        CHECK(!seen[k] || r->h[i].from > last[k]);
        seen[k] = 1;
        last[k] = r->h[i].from;
    }
    qsort(r->h, r->n, sizeof(fuzz_hit), fuzz_by_kind_then_from);
}

static void fuzz_same(const fuzz_hits *a, const fuzz_hits *b)
{
    CHECK(a->n == b->n);
    for (size_t i = 0; i < a->n; i++) {
        CHECK(a->h[i].kind == b->h[i].kind && a->h[i].from == b->h[i].from && a->h[i].to == b->h[i].to);
    }
}

static int fuzz_by_from(const void *a, const void *b)
{
    const fuzz_hit *x = a, *y = b;

    return x->from < y->from ? -1 : x->from > y->from;
}

/* The places as cuts [from, to + 1) where they do not overlap, each replaced
 * by "[kind]". */
static void fuzz_splice(const char *text, size_t len)
{
    static lf_scrub_cut cuts[MAX_HITS];
    static const char *names[] = { "[0]", "[1]", "[2]", "[3]", "[4]", "[5]", "[6]", "[7]", "[8]", "[9]", "[10]" };
    size_t n = 0, last = 0, total, pos = 0, at = 0;
    char *out, *plain;

    qsort(want.h, want.n, sizeof(fuzz_hit), fuzz_by_from);
    for (size_t i = 0; i < want.n; i++) {
        size_t to = want.h[i].to + 1 > len ? len : want.h[i].to + 1;

        if (want.h[i].from < last) continue;
        cuts[n++] = (lf_scrub_cut){ want.h[i].from, to, names[want.h[i].kind], strlen(names[want.h[i].kind]) };
        last = to;
    }
    total = lf_scrub_spliced_len(len, cuts, n);
    CHECK(total != SIZE_MAX);
    out = malloc(total + 1);
    plain = malloc(total + 1);
    lf_scrub_splice(text, len, cuts, n, out);
    for (size_t i = 0; i < n; i++) {
        memcpy(plain + at, text + pos, cuts[i].from - pos);
        at += cuts[i].from - pos;
        memcpy(plain + at, cuts[i].with, cuts[i].with_len);
        at += cuts[i].with_len;
        pos = cuts[i].to;
    }
    memcpy(plain + at, text + pos, len - pos);
    CHECK(at + len - pos == total);
    CHECK(memcmp(out, plain, total) == 0);
    free(out);
    free(plain);
    if (n > 1) {
        lf_scrub_cut swap = cuts[0];

        cuts[0] = cuts[1];
        cuts[1] = swap;
        CHECK(lf_scrub_spliced_len(len, cuts, n) == SIZE_MAX);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned kinds;
    const char *text;
    size_t len;
    char *copy;

    if (size < 2) return 0;
    kinds = ((unsigned)data[0] | (unsigned)data[1] << 8) & ((1u << LF_SCRUB_KINDS) - 1);
    len = size - 2;
    /* A copy of exactly len bytes, so that ASan sees any read past the text. */
    copy = malloc(len ? len : 1);
    memcpy(copy, data + 2, len);
    text = copy;
    got.n = sse2.n = want.n = 0;
    CHECK(lf_scrub_scan(text, len, kinds, fuzz_record, &got) == 0);
    CHECK(lf_scrub_scan_sse2(text, len, kinds, fuzz_record, &sse2) == 0);
    CHECK(ref_scrub_scan(text, len, kinds, fuzz_record, &want) == 0);
    fuzz_sort(&got);
    fuzz_sort(&sse2);
    fuzz_same(&got, &want);
    fuzz_same(&sse2, &want);
    fuzz_splice(text, len);
    free(copy);
    return 0;
}
