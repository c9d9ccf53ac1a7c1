/* libFuzzer target for a host's rate-limit headers (lf_headroom): whatever a
 * host sends as its remaining counts and resets (durations, RFC 3339 times,
 * garbage), what is read is a count of 0 or more or not said, a refill of 0
 * to a day or not said, and the wait it makes is finite and no longer than
 * the longest refill said.
 *
 * Input: the four header values (remaining requests, remaining tokens,
 * requests reset, tokens reset) separated by NUL bytes, then anything.
 *
 *   FUZZ_TARGETS=headroom bundle exec rake fuzz
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_headroom.h"

#include "lf_banned.h"

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_headroom: %s\n", what);
    abort();
}

static int fuzz_refill_ok(double v)
{
    return v == -1 || (isfinite(v) && v >= 0 && v <= 86400.0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *field[4] = { NULL, NULL, NULL, NULL }, *p;
    lf_rate_headers h;
    lf_headroom r, later;
    double wait, longest;
    int i;

    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (i = 0, p = copy; i < 4 && p <= copy + size; i++) {
        field[i] = p;
        p += strlen(p) + 1;
    }
    h = (lf_rate_headers){ field[0], field[1], field[2], field[3] };
    r = lf_headroom_read(&h, size % 3 == 0 ? (double)(size % 90) : -1, 1700000000);
    if (r.requests < -1 || r.tokens < -1) fuzz_fail("a count below -1");
    if (!fuzz_refill_ok(r.requests_for) || !fuzz_refill_ok(r.tokens_for)) fuzz_fail("a refill out of range");
    if ((r.requests >= 0 && r.requests_for < 0) || (r.tokens >= 0 && r.tokens_for < 0))
        fuzz_fail("a count said without its refill");
    wait = lf_headroom_wait(&r, (long)(size * 37));
    longest = fmax(fmax(r.requests_for, r.tokens_for), LF_HEADROOM_UNSAID_RESET);
    if (!isfinite(wait) || wait < 0 || wait > longest) fuzz_fail("a wait out of range");
    later = lf_headroom_aged(&r, (double)(size % 50));
    if (lf_headroom_wait(&later, (long)(size * 37)) > wait) fuzz_fail("a wait that grew with time");
    (void)lf_headroom_duration(field[0]);
    free(copy);
    return 0;
}
