/* Incremental Server-Sent Events parser (WHATWG event-stream rules).
 *
 * Fed arbitrary byte slices; lines end in LF, CRLF or CR (a CR at the end of
 * one slice and an LF at the start of the next are one line ending). Multi-line
 * data fields are joined with "\n"; "event:" names the event; comment lines
 * (":" first) and unknown fields are ignored; one leading space after the colon
 * is stripped. A blank line dispatches the event if it has a data field (an
 * "event:" alone dispatches nothing). lf_sse_finish dispatches a final event
 * left without a blank line.
 * A UTF-8 byte order mark opening the stream is skipped. */
#ifndef LF_SSE_H
#define LF_SSE_H

#include <stddef.h>
#include "lf_buf.h"

/* A single line longer than this is an error: it protects memory against a
 * peer that never sends a newline. Callers also cap the whole response. */
#define LF_SSE_MAX_LINE (16u * 1024u * 1024u)

typedef struct lf_sse_event {
    const char *event;   /* "" when no event: field was seen; NUL-terminated */
    size_t event_len;
    const char *data;    /* NUL-terminated; joined data lines */
    size_t data_len;
} lf_sse_event;

/* Return 0 to go on; any other value stops the parser and is returned by
 * lf_sse_feed/lf_sse_finish. The event's memory is valid during the call only. */
typedef int (*lf_sse_cb)(void *ud, const lf_sse_event *ev);

#define LF_SSE_OK 0
#define LF_SSE_ERR_NOMEM (-1001)
#define LF_SSE_ERR_LINE_TOO_LONG (-1002)

typedef struct lf_sse_parser {
    lf_buf line;      /* bytes of the current, unfinished line */
    lf_buf data;      /* data of the current event */
    lf_buf event;     /* event name of the current event */
    int has_data;     /* a data: field was seen in the current event */
    int last_was_cr;  /* the previous slice ended in CR */
    int seen_line;    /* a line has ended: a UTF-8 BOM is only stripped from the first */
    int stopped;      /* nonzero once a callback or an error stopped the parser: later
                       * feed/finish calls return it again until lf_sse_reset */
} lf_sse_parser;

void lf_sse_init(lf_sse_parser *p);
void lf_sse_free(lf_sse_parser *p);
/* Forget all state (for reuse on a new stream). */
void lf_sse_reset(lf_sse_parser *p);
int lf_sse_feed(lf_sse_parser *p, const char *bytes, size_t n, lf_sse_cb cb, void *ud);
/* The stream ended: parse an unfinished last line and dispatch the event left
 * without a blank line. On success the parser is ready for a new stream, as
 * after lf_sse_reset. */
int lf_sse_finish(lf_sse_parser *p, lf_sse_cb cb, void *ud);

#endif
