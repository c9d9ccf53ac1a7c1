/* libFuzzer target for the AWS event-stream reader: whatever the bytes and
 * however they are sliced, the messages (and the stop) must be the ones a
 * single whole feed gives, and every message handed over must lie inside the
 * input with its headers in bounds.
 *
 * Input: byte 0 is the number of slice lengths that follow (mod 17; 0 means
 * one byte at a time), byte 1 the message whose callback stops the reader
 * (0: none), then the lengths (one byte each, 0 allowed), then the stream.
 *
 *   ruby fuzz/seed_eventstream.rb spec/fixtures/recorded tmp/fuzz/corpus_eventstream
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_eventstream.h"

#include "lf_banned.h"

#define FUZZ_STOP_RC 99

typedef struct fuzz_rec {
    lf_buf all;        /* every message's strings and payload, length-prefixed */
    size_t count;
    size_t stop_at;    /* 1-based; 0: never */
} fuzz_rec;

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_eventstream: %s\n", what);
    abort();
}

static void fuzz_append_field(lf_buf *b, const char *s, size_t n)
{
    if (lf_buf_append(b, (const char *)&n, sizeof n) != 0 || (n && lf_buf_append(b, s, n) != 0))
        fuzz_fail("out of memory");
}

static int fuzz_cb(void *ud, const lf_es_message *m)
{
    fuzz_rec *r = ud;
    const lf_es_text *texts[] = { &m->message_type, &m->event_type, &m->exception_type,
                                  &m->error_code, &m->error_message, &m->content_type };
    size_t i;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (!texts[i]->ptr && texts[i]->len) fuzz_fail("absent header with a length");
        fuzz_append_field(&r->all, texts[i]->ptr ? texts[i]->ptr : "", texts[i]->len);
    }
    if (m->payload_len > LF_ES_MAX_MESSAGE) fuzz_fail("payload past the cap");
    fuzz_append_field(&r->all, m->payload, m->payload_len);
    r->count++;
    return r->stop_at && r->count == r->stop_at ? FUZZ_STOP_RC : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lf_es_reader reader;
    fuzz_rec whole, sliced;
    const uint8_t *lens;
    const char *stream;
    size_t n_lens, n, off, k, step;
    int rc_whole, rc_sliced = 0, unfinished_whole, unfinished_sliced;

    if (size < 2) return 0;
    n_lens = data[0] % 17;
    if (size < 2 + n_lens) return 0;
    lens = data + 2;
    stream = (const char *)data + 2 + n_lens;
    n = size - 2 - n_lens;

    memset(&whole, 0, sizeof whole);
    memset(&sliced, 0, sizeof sliced);
    whole.stop_at = sliced.stop_at = data[1];

    lf_es_init(&reader);
    rc_whole = lf_es_feed(&reader, stream, n, fuzz_cb, &whole);
    unfinished_whole = lf_es_unfinished(&reader);
    lf_es_reset(&reader);
    for (off = 0, k = 0; off < n && rc_sliced == 0; off += step, k++) {
        step = n_lens ? lens[k % n_lens] : 1;
        if (step == 0 && k > n_lens * 4 + 8) step = 1;   /* zero-length slices must not loop for ever */
        if (step > n - off) step = n - off;
        rc_sliced = lf_es_feed(&reader, stream + off, step, fuzz_cb, &sliced);
    }
    unfinished_sliced = lf_es_unfinished(&reader);
    lf_es_free(&reader);

    if (rc_whole != rc_sliced) fuzz_fail("slicing changed the result");
    if (whole.count != sliced.count || whole.all.len != sliced.all.len ||
        (whole.all.len && memcmp(whole.all.ptr, sliced.all.ptr, whole.all.len) != 0))
        fuzz_fail("slicing changed the messages");
    if (rc_whole == 0 && unfinished_whole != unfinished_sliced) fuzz_fail("slicing changed what is left");
    lf_buf_free(&whole.all);
    lf_buf_free(&sliced.all);
    return 0;
}
