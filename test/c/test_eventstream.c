/* The event-stream reader against messages framed here the way AWS frames
 * them: fed whole, byte by byte and in odd slices; broken CRCs, lengths and
 * headers stop it; a cut stream is told apart from a finished one. */
#include <stdint.h>
#include <string.h>

#include "lf_buf.h"
#include "lf_eventstream.h"
#include "lf_test.h"
#include "lf_test_eventstream.h"

typedef struct seen {
    lf_buf log;    /* "type=payload\n" per message */
    int count;
    int stop_at;   /* stop (return 7) at this message, 0 for never */
} seen;

static int on_message(void *ud, const lf_es_message *m)
{
    seen *s = ud;

    s->count++;
    if (m->message_type.ptr && !(m->message_type.len == 5 && memcmp(m->message_type.ptr, "event", 5) == 0)) {
        lf_buf_append(&s->log, m->message_type.ptr, m->message_type.len);
        lf_buf_append_char(&s->log, ':');
        if (m->exception_type.ptr) lf_buf_append(&s->log, m->exception_type.ptr, m->exception_type.len);
        if (m->error_code.ptr) lf_buf_append(&s->log, m->error_code.ptr, m->error_code.len);
    } else if (m->event_type.ptr) {
        lf_buf_append(&s->log, m->event_type.ptr, m->event_type.len);
    }
    lf_buf_append_char(&s->log, '=');
    lf_buf_append(&s->log, m->payload, m->payload_len);
    lf_buf_append_char(&s->log, '\n');
    return s->count == s->stop_at ? 7 : 0;
}

static const char *const EXPECTED =
    "messageStart={\"p\":\"abcd\",\"role\":\"assistant\"}\n"
    "contentBlockDelta={\"contentBlockIndex\":0,\"delta\":{\"text\":\"caf\xc3\xa9\"},\"p\":\"ab\"}\n"
    "messageStop={\"p\":\"abcdefgh\",\"stopReason\":\"end_turn\"}\n"
    "metadata={\"usage\":{\"inputTokens\":5,\"outputTokens\":2}}\n";

static void conversation(lf_buf *out)
{
    event(out, "messageStart", "{\"p\":\"abcd\",\"role\":\"assistant\"}");
    event(out, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"caf\xc3\xa9\"},\"p\":\"ab\"}");
    event(out, "messageStop", "{\"p\":\"abcdefgh\",\"stopReason\":\"end_turn\"}");
    event(out, "metadata", "{\"usage\":{\"inputTokens\":5,\"outputTokens\":2}}");
}

static void test_crc32(void)
{
    LF_CHECK(lf_es_crc32(0, (const unsigned char *)"123456789", 9) == 0xCBF43926u);
    LF_CHECK(lf_es_crc32(lf_es_crc32(0, (const unsigned char *)"1234", 4), (const unsigned char *)"56789", 5) ==
             0xCBF43926u);
    LF_CHECK(lf_es_crc32(0, (const unsigned char *)"", 0) == 0);
}

static void test_slices(void)
{
    static const size_t steps[] = { 1, 2, 3, 7, 11, 12, 13, 64, 1000 };
    lf_buf body;
    size_t k, i;

    lf_buf_init(&body);
    conversation(&body);
    for (k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        lf_es_reader r;
        seen s = { {0}, 0, 0 };

        lf_buf_init(&s.log);
        lf_es_init(&r);
        for (i = 0; i < body.len; i += steps[k]) {
            size_t n = body.len - i < steps[k] ? body.len - i : steps[k];

            LF_CHECK_INT(lf_es_feed(&r, body.ptr + i, n, on_message, &s), 0);
        }
        LF_CHECK_STR(lf_buf_cstr(&s.log), EXPECTED);
        LF_CHECK_INT(lf_es_unfinished(&r), 0);
        lf_es_free(&r);
        lf_buf_free(&s.log);
    }
    lf_buf_free(&body);
}

static void test_cut_and_stop(void)
{
    lf_buf body;
    lf_es_reader r;
    seen s = { {0}, 0, 0 };

    lf_buf_init(&body);
    conversation(&body);
    lf_buf_init(&s.log);
    lf_es_init(&r);
    /* Cut five bytes before the end: three messages, then an unfinished one. */
    LF_CHECK_INT(lf_es_feed(&r, body.ptr, body.len - 5, on_message, &s), 0);
    LF_CHECK_INT(s.count, 3);
    LF_CHECK_INT(lf_es_unfinished(&r), 1);
    /* A callback's stop is returned, and again on the next feed. */
    lf_es_reset(&r);
    lf_buf_clear(&s.log);
    s.count = 0;
    s.stop_at = 2;
    LF_CHECK_INT(lf_es_feed(&r, body.ptr, body.len, on_message, &s), 7);
    LF_CHECK_INT(s.count, 2);
    LF_CHECK_INT(lf_es_feed(&r, body.ptr, body.len, on_message, &s), 7);
    LF_CHECK_INT(s.count, 2);
    lf_es_free(&r);
    lf_buf_free(&s.log);
    lf_buf_free(&body);
}

static void test_exception_and_header_types(void)
{
    lf_buf body, h;
    lf_es_reader r;
    seen s = { {0}, 0, 0 };
    static const char typed[] = {
        4, 'f', 'l', 'a', 'g', 0,                      /* true */
        1, 'b', 2, 9,                                  /* byte */
        1, 's', 3, 0, 1,                               /* short */
        1, 'i', 4, 0, 0, 0, 1,                         /* int */
        1, 'l', 5, 0, 0, 0, 0, 0, 0, 0, 1,             /* long */
        1, 'y', 6, 0, 2, 'x', 'y',                     /* bytes */
        1, 't', 8, 0, 0, 0, 0, 0, 0, 0, 1,             /* timestamp */
        1, 'u', 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,   /* uuid */
    };

    lf_buf_init(&body);
    lf_buf_init(&h);
    lf_buf_append(&h, typed, sizeof typed);
    put_string_header(&h, ":message-type", "exception");
    put_string_header(&h, ":exception-type", "throttlingException");
    frame(&body, &h, "{\"message\":\"Too many tokens\"}");
    lf_buf_clear(&h);
    put_string_header(&h, ":message-type", "error");
    put_string_header(&h, ":error-code", "InternalFailure");
    put_string_header(&h, ":error-message", "boom");
    frame(&body, &h, "");
    lf_buf_init(&s.log);
    lf_es_init(&r);
    LF_CHECK_INT(lf_es_feed(&r, body.ptr, body.len, on_message, &s), 0);
    LF_CHECK_STR(lf_buf_cstr(&s.log),
                 "exception:throttlingException={\"message\":\"Too many tokens\"}\nerror:InternalFailure=\n");
    lf_es_free(&r);
    lf_buf_free(&s.log);
    lf_buf_free(&h);
    lf_buf_free(&body);
}

/* Each corruption stops the reader with LF_ES_ERR_FRAME, before or at the
 * message it breaks, and never hands a broken message over. */
static void test_broken(void)
{
    lf_buf body;
    size_t first;
    int k;

    lf_buf_init(&body);
    conversation(&body);
    first = ((size_t)(unsigned char)body.ptr[2] << 8) | (unsigned char)body.ptr[3];
    for (k = 0; k < 6; k++) {
        lf_buf copy;
        lf_es_reader r;
        seen s = { {0}, 0, 0 };

        lf_buf_init(&copy);
        lf_buf_append(&copy, body.ptr, body.len);
        switch (k) {
        case 0: copy.ptr[3] ^= 1; break;                       /* total length: prelude CRC fails */
        case 1: copy.ptr[9] ^= 1; break;                       /* the prelude CRC itself */
        case 2: copy.ptr[first + 20] ^= 1; break;              /* a byte of the second message */
        case 3: copy.ptr[first - 1] ^= 1; break;               /* the first message's CRC */
        case 4: copy.ptr[12] = 0; break;                       /* a header name of length 0 */
        case 5: copy.ptr[12 + 1 + 11] = 42; break;             /* an unknown header type */
        }
        if (k >= 4) {
            /* Keep the CRCs right so the header itself is what is judged. */
            uint32_t crc = lf_es_crc32(0, (const unsigned char *)copy.ptr, first - 4);

            copy.ptr[first - 4] = (char)(crc >> 24);
            copy.ptr[first - 3] = (char)(crc >> 16);
            copy.ptr[first - 2] = (char)(crc >> 8);
            copy.ptr[first - 1] = (char)crc;
        }
        lf_buf_init(&s.log);
        lf_es_init(&r);
        LF_CHECK_INT(lf_es_feed(&r, copy.ptr, copy.len, on_message, &s), LF_ES_ERR_FRAME);
        LF_CHECK_INT(s.count, k == 2 ? 1 : 0);
        LF_CHECK_INT(lf_es_feed(&r, "", 0, on_message, &s), LF_ES_ERR_FRAME);
        lf_es_free(&r);
        lf_buf_free(&s.log);
        lf_buf_free(&copy);
    }
    /* A length past the cap is refused from the prelude, before waiting for it. */
    {
        lf_buf big;
        lf_es_reader r;
        seen s = { {0}, 0, 0 };

        lf_buf_init(&big);
        put_u32(&big, LF_ES_MAX_MESSAGE + 1);
        put_u32(&big, 0);
        put_u32(&big, lf_es_crc32(0, (const unsigned char *)big.ptr, 8));
        lf_buf_init(&s.log);
        lf_es_init(&r);
        LF_CHECK_INT(lf_es_feed(&r, big.ptr, big.len, on_message, &s), LF_ES_ERR_FRAME);
        lf_es_free(&r);
        lf_buf_free(&s.log);
        lf_buf_free(&big);
    }
    lf_buf_free(&body);
}

int main(void)
{
    LF_RUN(test_crc32);
    LF_RUN(test_slices);
    LF_RUN(test_cut_and_stop);
    LF_RUN(test_exception_and_header_types);
    LF_RUN(test_broken);
    return lf_test_summary("eventstream");
}
