/* The stream driver of the wire tests: a recorded body fed to lf_sse in
 * slices of `step` bytes (0: at once), every event to lf_stream_event of one
 * protocol; the deltas it handed out, and how many events ended the stream,
 * were malformed or errors, or handed out a delta that breaks its contract
 * (none, one beside an event that did not continue, or not UTF-8). */
#ifndef WIRE_STREAM_RUN_H
#define WIRE_STREAM_RUN_H

#include <string.h>

#include "lf_buf.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "utf8_ref.h"

typedef struct stream_run {
    lf_stream_state st;
    lf_buf deltas;
    int n_done, n_invalid, n_error, n_bad_delta;
} stream_run;

static int stream_cb(void *ud, const lf_sse_event *ev)
{
    stream_run *r = ud;
    const char *d = NULL;
    size_t dn = 99;   /* lf_stream_event must set it */
    int rc = lf_stream_event(&r->st, ev, &d, &dn);

    if (rc == LF_STREAM_DONE) r->n_done++;
    if (rc == LF_STREAM_INVALID) r->n_invalid++;
    if (rc == LF_STREAM_ERROR) r->n_error++;
    if (!d || (rc != LF_STREAM_CONTINUE && dn != 0) || !utf8_valid(d, dn)) r->n_bad_delta++;
    if (d && dn) lf_buf_append(&r->deltas, d, dn);
    return 0;
}

static void stream_run_body(stream_run *r, lf_api api, const char *body, size_t n, size_t step)
{
    lf_sse_parser p;
    size_t off = 0;

    memset(r, 0, sizeof *r);
    lf_stream_init(&r->st, api);
    lf_buf_init(&r->deltas);
    lf_sse_init(&p);
    if (!step) step = n ? n : 1;
    while (off < n) {
        size_t k = n - off < step ? n - off : step;

        lf_sse_feed(&p, body + off, k, stream_cb, r);
        off += k;
    }
    lf_sse_finish(&p, stream_cb, r);
    lf_sse_free(&p);
}

static void stream_run_free(stream_run *r)
{
    lf_stream_free(&r->st);
    lf_buf_free(&r->deltas);
}

#endif
