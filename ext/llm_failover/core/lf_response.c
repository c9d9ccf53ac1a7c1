/* The response of one transfer as libcurl's callbacks fill it: body bytes
 * buffered for the attempt loop (never parsed here), and the few response
 * headers the policy reads (status, Content-Type, Retry-After,
 * retry-after-ms, request ids, x-should-retry, x-amzn-errortype). */
#include "lf_transport_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "lf_utf8.h"

#include "lf_banned.h"

void lf_response_init(lf_response *r, size_t max_bytes)
{
    memset(r, 0, sizeof(*r));
    lf_buf_init(&r->inbox);
    lf_buf_init(&r->retry_after);
    lf_buf_init(&r->retry_after_ms);
    lf_buf_init(&r->request_id);
    lf_buf_init(&r->error_name);
    r->should_retry = -1;
    r->max_bytes = max_bytes;
}

void lf_response_reset(lf_response *r, size_t max_bytes)
{
    r->status = 0;
    lf_buf_clear(&r->inbox);
    r->event_stream = 0;
    r->aws_event_stream = 0;
    lf_buf_clear(&r->retry_after);
    lf_buf_clear(&r->retry_after_ms);
    lf_buf_clear(&r->request_id);
    lf_buf_clear(&r->error_name);
    r->body_bytes = 0;
    r->max_bytes = max_bytes;
    r->too_large = 0;
    r->should_retry = -1;
    r->headers_done = 0;
    r->first_byte_at = 0;
    r->last_byte_at = 0;
    r->got_bytes = 0;
    r->requests_sent = 0;
    r->resend_refused = 0;
    r->restarted = 0;
}

void lf_response_free(lf_response *r)
{
    lf_buf_free(&r->inbox);
    lf_buf_free(&r->retry_after);
    lf_buf_free(&r->retry_after_ms);
    lf_buf_free(&r->request_id);
    lf_buf_free(&r->error_name);
}

/* Body bytes are only buffered here: parsing and every call into the host
 * happen after curl_multi_perform has returned, so nothing of the host ever
 * runs (or unwinds) inside libcurl. */
size_t lf_response_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    lf_response *r = ud;
    size_t n = size * nmemb;

    if (r->body_bytes + n > r->max_bytes) {
        r->too_large = 1;
        return 0; /* CURLE_WRITE_ERROR ends the transfer */
    }
    if (lf_buf_append(&r->inbox, ptr, n) != 0) return 0;
    r->got_bytes = 1;
    r->body_bytes += n;
    if (r->hub_conn) lf_hub_saw(r->hub_conn);
    return n;
}

/* Whether the header name n[0..len) is want (lower case, len bytes), in
 * any case. */
static int lf_header_name_is(const char *n, size_t len, const char *want)
{
    size_t i;
    for (i = 0; i < len; i++)
        if (tolower((unsigned char)n[i]) != want[i]) return 0;
    return 1;
}

/* Whether w[0..wn) occurs in s[0..n) (glibc's memmem sets up a table
 * first: several times the cost of this for a header value). */
static int lf_contains(const char *s, size_t n, const char *w, size_t wn)
{
    const char *p = s, *e = s + n;

    while (wn && (size_t)(e - p) >= wn && (p = memchr(p, w[0], (size_t)(e - p) - wn + 1)) != NULL) {
        if (memcmp(p, w, wn) == 0) return 1;
        p++;
    }
    return 0;
}

/* The response headers the policy reads. A line is told apart by the length
 * of its name first, so the everyday ones (Date, Server, Content-Length,
 * Connection, ...) cost one comparison of a byte or none. */
enum {
    LF_H_OTHER = 0,
    LF_H_CONTENT_TYPE,
    LF_H_RETRY_AFTER,
    LF_H_RETRY_AFTER_MS,
    LF_H_REQUEST_ID,
    LF_H_SHOULD_RETRY,
    LF_H_ERROR_NAME
};

/* Bytes of a provider's request id kept (see lf_on_header). */
#define LF_REQUEST_ID_MAX 200

static int lf_header_kind(const char *name, size_t len)
{
    switch (len) {
    case 10: return lf_header_name_is(name, len, "request-id") ? LF_H_REQUEST_ID : LF_H_OTHER;
    case 11: return lf_header_name_is(name, len, "retry-after") ? LF_H_RETRY_AFTER : LF_H_OTHER;
    case 12:
        if (lf_header_name_is(name, len, "content-type")) return LF_H_CONTENT_TYPE;
        return lf_header_name_is(name, len, "x-request-id") ? LF_H_REQUEST_ID : LF_H_OTHER;
    case 14:
        if (lf_header_name_is(name, len, "retry-after-ms")) return LF_H_RETRY_AFTER_MS;
        return lf_header_name_is(name, len, "x-should-retry") ? LF_H_SHOULD_RETRY : LF_H_OTHER;
    case 16:
        if (lf_header_name_is(name, len, "x-amzn-requestid")) return LF_H_REQUEST_ID;
        return lf_header_name_is(name, len, "x-amzn-errortype") ? LF_H_ERROR_NAME : LF_H_OTHER;
    default: return LF_H_OTHER;
    }
}

size_t lf_response_on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    lf_response *r = ud;
    size_t n = size * nmemb;
    const char *colon, *v, *end;
    size_t vlen;
    int kind;

    r->got_bytes = 1;
    if (r->hub_conn) lf_hub_saw(r->hub_conn);
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        /* A new status line (after a 100 Continue, say): start over. */
        r->event_stream = 0;
        r->aws_event_stream = 0;
        lf_buf_clear(&r->retry_after);
        lf_buf_clear(&r->retry_after_ms);
        lf_buf_clear(&r->request_id);
        lf_buf_clear(&r->error_name);
        r->should_retry = -1;
        r->headers_done = 0;
        r->status = 0;
        {
            /* "HTTP/1.1 200 OK" or "HTTP/2 200" */
            const char *sp = memchr(ptr, ' ', n);
            if (sp && (size_t)(sp - ptr) + 4 <= n && isdigit((unsigned char)sp[1]) &&
                isdigit((unsigned char)sp[2]) && isdigit((unsigned char)sp[3]))
                r->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
        }
        return n;
    }
    if (n <= 2 && (ptr[0] == '\r' || ptr[0] == '\n')) {
        r->headers_done = 1;
        return n;
    }
    colon = memchr(ptr, ':', n);
    if (!colon) return n;
    kind = lf_header_kind(ptr, (size_t)(colon - ptr));
    if (kind == LF_H_OTHER) return n;
    v = colon + 1;
    end = ptr + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    vlen = (size_t)(end - v);
    switch (kind) {
    case LF_H_CONTENT_TYPE:
        /* All the loop asks of it (the last one counts, up to a NUL as
         * when it was kept as text). */
        r->event_stream = lf_contains(v, strnlen(v, vlen), "event-stream", 12);
        r->aws_event_stream = lf_contains(v, strnlen(v, vlen), "vnd.amazon.eventstream", 22);
        break;
    case LF_H_RETRY_AFTER: lf_buf_set(&r->retry_after, v, vlen); break;
    case LF_H_RETRY_AFTER_MS: lf_buf_set(&r->retry_after_ms, v, vlen); break;
    case LF_H_REQUEST_ID:
        /* Kept as text (records, errors, the cache, a varchar(255) column): a
         * provider's stray byte becomes U+FFFD rather than a string nothing can
         * serialise, and a huge value is cut (real ids are under 100 bytes). */
        if (vlen > LF_REQUEST_ID_MAX) {
            vlen = LF_REQUEST_ID_MAX; /* at a character's start, not inside one */
            while (vlen > 0 && ((unsigned char)v[vlen] & 0xC0) == 0x80) vlen--;
        }
        lf_buf_clear(&r->request_id);
        (void)lf_utf8_append_sanitized(&r->request_id, v, vlen);
        break;
    case LF_H_SHOULD_RETRY:
        if (vlen == 4 && strncasecmp(v, "true", 4) == 0) r->should_retry = 1;
        else if (vlen == 5 && strncasecmp(v, "false", 5) == 0) r->should_retry = 0;
        break;
    case LF_H_ERROR_NAME: {
        /* The name alone ("ThrottlingException"), as valid UTF-8 of a bounded size. */
        const char *colon_at = memchr(v, ':', vlen);
        size_t n = colon_at ? (size_t)(colon_at - v) : vlen;

        lf_buf_clear(&r->error_name);
        (void)lf_utf8_append_sanitized(&r->error_name, v, n < LF_REQUEST_ID_MAX ? n : LF_REQUEST_ID_MAX);
        break;
    }
    }
    return n;
}
