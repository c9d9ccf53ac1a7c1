/* Incremental reader of AWS's binary event stream
 * (application/vnd.amazon.eventstream), as Bedrock's ConverseStream sends it.
 *
 * A message is a 12-byte prelude (total length, headers length, both 32-bit
 * big-endian, and the CRC32 of those 8 bytes), the headers, the payload, and
 * the CRC32 of everything before it. A header is a 1-byte name length, the
 * name, a 1-byte value type and the value. Fed arbitrary byte slices; each
 * whole message whose CRCs match is handed to the callback with its string
 * headers; a message that breaks the framing stops the reader for good (the
 * stream is not the protocol: nothing after a bad length can be trusted). */
#ifndef LF_EVENTSTREAM_H
#define LF_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include "lf_buf.h"

/* AWS caps a message at 16 MiB and its headers at 128 KiB. */
#define LF_ES_MAX_MESSAGE (16u * 1024u * 1024u)
#define LF_ES_MAX_HEADERS (128u * 1024u)

typedef struct lf_es_text {
    const char *ptr;   /* NULL when the header is absent */
    size_t len;
} lf_es_text;

/* The headers a reader of Converse needs, and the payload. Memory is valid
 * during the callback only. */
typedef struct lf_es_message {
    lf_es_text message_type;     /* ":message-type": "event", "exception" or "error" */
    lf_es_text event_type;       /* ":event-type": messageStart, contentBlockDelta, ... */
    lf_es_text exception_type;   /* ":exception-type": throttlingException, ... */
    lf_es_text error_code;       /* ":error-code" of an "error" message */
    lf_es_text error_message;    /* ":error-message" of an "error" message */
    lf_es_text content_type;     /* ":content-type" */
    const char *payload;
    size_t payload_len;
} lf_es_message;

/* Return 0 to go on; any other value stops the reader and is returned by
 * lf_es_feed. */
typedef int (*lf_es_cb)(void *ud, const lf_es_message *m);

#define LF_ES_OK 0
#define LF_ES_ERR_NOMEM (-1001)
#define LF_ES_ERR_FRAME (-1003)   /* a length out of bounds, a CRC that does not match, a bad header */

typedef struct lf_es_reader {
    lf_buf pending;   /* bytes of the message not yet whole */
    int stopped;      /* nonzero once stopped: returned again by later feeds */
} lf_es_reader;

void lf_es_init(lf_es_reader *r);
void lf_es_free(lf_es_reader *r);
void lf_es_reset(lf_es_reader *r);
int lf_es_feed(lf_es_reader *r, const char *bytes, size_t n, lf_es_cb cb, void *ud);
/* 1 when the stream ended inside a message (a cut stream), else 0. */
int lf_es_unfinished(const lf_es_reader *r);
/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing from crc (0 to
 * start). */
uint32_t lf_es_crc32(uint32_t crc, const unsigned char *s, size_t n);

#endif
