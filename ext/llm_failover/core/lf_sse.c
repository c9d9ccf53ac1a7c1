/* Incremental Server-Sent Events parser; see lf_sse.h for the rules.
 *
 * A line that ends inside the slice being fed is parsed straight from the
 * caller's bytes; only a line cut by the end of a slice is copied into
 * p->line. Either way a line is parsed once, whole, so the events cannot
 * depend on where the slices were cut. */
#include "lf_sse.h"

#include <string.h>

#include "lf_banned.h"

static const char lf_sse_bom[3] = { '\xEF', '\xBB', '\xBF' };

void lf_sse_init(lf_sse_parser *p)
{
    lf_buf_init(&p->line);
    lf_buf_init(&p->data);
    lf_buf_init(&p->event);
    p->has_data = 0;
    p->last_was_cr = 0;
    p->seen_line = 0;
    p->stopped = 0;
}

void lf_sse_free(lf_sse_parser *p)
{
    lf_buf_free(&p->line);
    lf_buf_free(&p->data);
    lf_buf_free(&p->event);
    lf_sse_init(p);
}

/* Forget the event being built (after dispatch, or when it has nothing to say). */
static void lf_sse_clear_event(lf_sse_parser *p)
{
    lf_buf_clear(&p->data);
    lf_buf_clear(&p->event);
    p->has_data = 0;
}

void lf_sse_reset(lf_sse_parser *p)
{
    lf_buf_clear(&p->line);
    lf_sse_clear_event(p);
    p->last_was_cr = 0;
    p->seen_line = 0;
    p->stopped = 0;
}

static int lf_sse_stop(lf_sse_parser *p, int rc)
{
    p->stopped = rc;
    return rc;
}

static int lf_sse_dispatch(lf_sse_parser *p, lf_sse_cb cb, void *ud)
{
    lf_sse_event ev;
    int rc = 0;

    /* As WHATWG says: an event without a data field is not dispatched, even
     * with a name ("event: ping" and a blank line), and its name is dropped.
     * "data:" with nothing after it is dispatched: whether a data field was
     * seen decides, not the length of the data. */
    if (!p->has_data) {
        lf_sse_clear_event(p);
        return 0;
    }
    ev.event = lf_buf_cstr(&p->event);
    ev.event_len = p->event.len;
    ev.data = lf_buf_cstr(&p->data);
    ev.data_len = p->data.len;
    if (cb) rc = cb(ud, &ev);
    lf_sse_clear_event(p);
    return rc;
}

static int lf_sse_field_is(const char *name, size_t len, const char *want)
{
    size_t want_len = strlen(want);
    return len == want_len && memcmp(name, want, len) == 0;
}

/* One complete line, without its line ending. */
static int lf_sse_line(lf_sse_parser *p, const char *line, size_t len, lf_sse_cb cb, void *ud)
{
    const char *colon, *value;
    size_t name_len, value_len;

    if (!p->seen_line) {
        /* A UTF-8 byte order mark may open the stream; it is not part of the first field. */
        p->seen_line = 1;
        if (len >= sizeof lf_sse_bom && memcmp(line, lf_sse_bom, sizeof lf_sse_bom) == 0) {
            line += sizeof lf_sse_bom;
            len -= sizeof lf_sse_bom;
        }
    }
    if (len == 0) return lf_sse_dispatch(p, cb, ud);
    if (line[0] == ':') return 0; /* comment, e.g. ": OPENROUTER PROCESSING" */

    colon = memchr(line, ':', len);
    if (colon) {
        name_len = (size_t)(colon - line);
        value = colon + 1;
        value_len = len - name_len - 1;
        if (value_len > 0 && value[0] == ' ') {
            value++;
            value_len--;
        }
    } else {
        name_len = len;
        value = line + len;
        value_len = 0;
    }

    if (lf_sse_field_is(line, name_len, "data")) {
        if (p->has_data && lf_buf_append_char(&p->data, '\n') != 0) return LF_SSE_ERR_NOMEM;
        if (lf_buf_append(&p->data, value, value_len) != 0) return LF_SSE_ERR_NOMEM;
        p->has_data = 1;
    } else if (lf_sse_field_is(line, name_len, "event")) {
        if (lf_buf_set(&p->event, value, value_len) != 0) return LF_SSE_ERR_NOMEM;
    }
    /* "id", "retry" and unknown fields are ignored: no caller reconnects. */
    return 0;
}

/* Index of the first byte at or after `from` that equals c, or n. */
static size_t lf_sse_find(const char *bytes, size_t from, size_t n, char c)
{
    const char *hit = memchr(bytes + from, c, n - from);
    return hit ? (size_t)(hit - bytes) : n;
}

int lf_sse_feed(lf_sse_parser *p, const char *bytes, size_t n, lf_sse_cb cb, void *ud)
{
    size_t i = 0, next_lf, next_cr;
    int rc;

    if (p->stopped) return p->stopped;
    if (n == 0) return 0; /* an empty slice must not forget a pending CR */
    if (p->last_was_cr) {
        p->last_was_cr = 0;
        if (bytes[0] == '\n') i = 1; /* the LF of a CRLF cut between two slices */
    }

    /* Both positions are found with memchr and looked for again only once
     * passed, so a slice is scanned in linear time whatever its endings. */
    next_lf = lf_sse_find(bytes, i, n, '\n');
    next_cr = lf_sse_find(bytes, i, n, '\r');
    while (i < n) {
        size_t end, run;

        if (next_lf < i) next_lf = lf_sse_find(bytes, i, n, '\n');
        if (next_cr < i) next_cr = lf_sse_find(bytes, i, n, '\r');
        end = next_lf < next_cr ? next_lf : next_cr;
        run = end - i;
        if (run > LF_SSE_MAX_LINE || p->line.len > LF_SSE_MAX_LINE - run)
            return lf_sse_stop(p, LF_SSE_ERR_LINE_TOO_LONG);

        if (end == n) {
            /* The line goes on in the next slice. */
            if (lf_buf_append(&p->line, bytes + i, run) != 0) return lf_sse_stop(p, LF_SSE_ERR_NOMEM);
            break;
        }
        if (p->line.len == 0) {
            rc = lf_sse_line(p, bytes + i, run, cb, ud);
        } else {
            if (lf_buf_append(&p->line, bytes + i, run) != 0) return lf_sse_stop(p, LF_SSE_ERR_NOMEM);
            rc = lf_sse_line(p, p->line.ptr, p->line.len, cb, ud);
            lf_buf_clear(&p->line);
        }
        i = end + 1;
        if (bytes[end] == '\r') {
            if (i == n) p->last_was_cr = 1;
            else if (bytes[i] == '\n') i++;
        }
        if (rc != 0) return lf_sse_stop(p, rc);
    }
    return 0;
}

int lf_sse_finish(lf_sse_parser *p, lf_sse_cb cb, void *ud)
{
    int rc;

    if (p->stopped) return p->stopped;
    if (p->line.len > 0) {
        rc = lf_sse_line(p, p->line.ptr, p->line.len, cb, ud);
        lf_buf_clear(&p->line);
        if (rc != 0) return lf_sse_stop(p, rc);
    }
    rc = lf_sse_dispatch(p, cb, ud);
    if (rc != 0) return lf_sse_stop(p, rc);
    lf_sse_reset(p);
    return 0;
}
