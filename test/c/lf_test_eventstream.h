/* AWS event-stream messages framed here the way AWS frames them (prelude,
 * its CRC, string headers, payload, message CRC), for the C tests that read
 * them: test_eventstream.c, test_wire_bedrock.c and test_failover.c. */
#ifndef LF_TEST_EVENTSTREAM_H
#define LF_TEST_EVENTSTREAM_H

#include <stdint.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_eventstream.h"

static inline void put_u32(lf_buf *b, uint32_t v)
{
    char s[4] = { (char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v };

    lf_buf_append(b, s, 4);
}

static inline void put_string_header(lf_buf *h, const char *name, const char *value)
{
    size_t vn = strlen(value);

    lf_buf_append_char(h, (char)strlen(name));
    lf_buf_append_str(h, name);
    lf_buf_append_char(h, 7);
    lf_buf_append_char(h, (char)(vn >> 8));
    lf_buf_append_char(h, (char)vn);
    lf_buf_append_str(h, value);
}

/* One message with the given headers and payload appended to out. */
static inline void frame(lf_buf *out, const lf_buf *headers, const char *payload)
{
    size_t start = out->len, pn = strlen(payload);
    uint32_t total = (uint32_t)(16 + headers->len + pn);

    put_u32(out, total);
    put_u32(out, (uint32_t)headers->len);
    put_u32(out, lf_es_crc32(0, (const unsigned char *)out->ptr + start, 8));
    lf_buf_append(out, headers->ptr, headers->len);
    lf_buf_append(out, payload, pn);
    put_u32(out, lf_es_crc32(0, (const unsigned char *)out->ptr + start, out->len - start));
}

/* A message of :message-type kind ("event", "exception") whose type is the
 * header type_header (":event-type", ":exception-type") says. */
static inline void typed_message(lf_buf *out, const char *kind, const char *type_header, const char *type,
                                 const char *payload)
{
    lf_buf h;

    lf_buf_init(&h);
    put_string_header(&h, type_header, type);
    put_string_header(&h, ":content-type", "application/json");
    put_string_header(&h, ":message-type", kind);
    frame(out, &h, payload);
    lf_buf_free(&h);
}

/* An event message (:message-type event) of the given :event-type. */
static inline void event(lf_buf *out, const char *type, const char *payload)
{
    typed_message(out, "event", ":event-type", type, payload);
}

/* An exception message (:message-type exception) of the given :exception-type. */
static inline void exception_event(lf_buf *out, const char *type, const char *payload)
{
    typed_message(out, "exception", ":exception-type", type, payload);
}

#endif
