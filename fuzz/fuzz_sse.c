/* libFuzzer target for the SSE parser: whatever the bytes and however they are
 * sliced, the events must be the ones a single whole feed gives.
 *
 * Input: byte 0 is the number of slice lengths that follow (mod 17; 0 means
 * one byte at a time), byte 1 the event whose callback stops the parser
 * (0: none), then the lengths (one byte each, 0 allowed), then the stream.
 * Lengths are used in turn until the stream is consumed.
 *
 *   ruby fuzz/seed.rb    # seeds tmp/fuzz/corpus_sse/ from the recorded streams
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -Iext/llm_failover/core -o tmp/fuzz/fuzz_sse fuzz/fuzz_sse.c \
 *     ext/llm_failover/core/lf_sse.c ext/llm_failover/core/lf_buf.c
 *   tmp/fuzz/fuzz_sse -max_len=8192 -max_total_time=60 tmp/fuzz/corpus_sse
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_sse.h"

#include "lf_banned.h"

#define FUZZ_STOP_RC 99

typedef struct fuzz_rec {
    lf_buf all;        /* every event, length-prefixed */
    size_t count;
    size_t stop_at;    /* 1-based; 0: never */
} fuzz_rec;

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_sse: %s\n", what);
    abort();
}

static void fuzz_append_field(lf_buf *b, const char *s, size_t n)
{
    if (lf_buf_append(b, (const char *)&n, sizeof n) != 0 || lf_buf_append(b, s, n) != 0) fuzz_fail("out of memory");
}

static int fuzz_cb(void *ud, const lf_sse_event *ev)
{
    fuzz_rec *r = ud;

    /* What every event promises, whatever the input. */
    if (ev->event[ev->event_len] != '\0' || ev->data[ev->data_len] != '\0') fuzz_fail("event not NUL-terminated");
    if (memchr(ev->data, '\r', ev->data_len)) fuzz_fail("CR inside data");
    if (memchr(ev->event, '\r', ev->event_len) || memchr(ev->event, '\n', ev->event_len))
        fuzz_fail("line ending inside an event name");
    fuzz_append_field(&r->all, ev->event, ev->event_len);
    fuzz_append_field(&r->all, ev->data, ev->data_len);
    r->count++;
    return r->stop_at && r->count == r->stop_at ? FUZZ_STOP_RC : 0;
}

static int fuzz_expect_same(const fuzz_rec *a, int rc_a, const fuzz_rec *b, int rc_b)
{
    return rc_a == rc_b && a->count == b->count && a->all.len == b->all.len &&
           (a->all.len == 0 || memcmp(a->all.ptr, b->all.ptr, a->all.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lf_sse_parser p;
    fuzz_rec whole, sliced;
    const uint8_t *lens;
    const char *stream;
    size_t n_lens, n, off, k;
    int rc_whole, rc_sliced;

    if (size < 2) return 0;
    n_lens = data[0] % 17;
    if (size < 2 + n_lens) return 0;
    lens = data + 2;
    stream = (const char *)data + 2 + n_lens;
    n = size - 2 - n_lens;

    memset(&whole, 0, sizeof whole);
    memset(&sliced, 0, sizeof sliced);
    lf_buf_init(&whole.all);
    lf_buf_init(&sliced.all);
    whole.stop_at = sliced.stop_at = data[1];

    lf_sse_init(&p);
    rc_whole = lf_sse_feed(&p, stream, n, fuzz_cb, &whole);
    if (rc_whole == 0) rc_whole = lf_sse_finish(&p, fuzz_cb, &whole);
    if (rc_whole != 0 && rc_whole != FUZZ_STOP_RC) fuzz_fail("unexpected error from a short input");
    if (rc_whole == FUZZ_STOP_RC && whole.count != whole.stop_at) fuzz_fail("stopped at the wrong event");

    /* The same parser, reset, must behave as a fresh one. */
    lf_sse_reset(&p);
    rc_sliced = 0;
    for (off = 0, k = 0; off < n && rc_sliced == 0; k++) {
        size_t len = n_lens ? lens[k % n_lens] : 1;
        if (len > n - off) len = n - off;
        rc_sliced = lf_sse_feed(&p, stream + off, len, fuzz_cb, &sliced);
        off += len;
        if (n_lens && k >= 64 * n && len == 0) break; /* every length is 0: give up, finish below */
    }
    if (rc_sliced == 0 && off < n) rc_sliced = lf_sse_feed(&p, stream + off, n - off, fuzz_cb, &sliced);
    if (rc_sliced == 0) rc_sliced = lf_sse_finish(&p, fuzz_cb, &sliced);

    if (!fuzz_expect_same(&whole, rc_whole, &sliced, rc_sliced)) fuzz_fail("sliced events differ from whole");

    lf_sse_free(&p);
    lf_buf_free(&whole.all);
    lf_buf_free(&sliced.all);
    return 0;
}
