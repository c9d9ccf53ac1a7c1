/* Tests of the incremental SSE parser, including every recorded stream fed
 * whole, cut in two at every byte and fed one byte at a time. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_sse.h"
#include "lf_test.h"

#include "lf_banned.h"

/* ---- recording the events a parse produced ---- */

#define REC_MAX 4096

typedef struct rec {
    size_t count;
    char *event[REC_MAX];
    size_t event_len[REC_MAX];
    char *data[REC_MAX];
    size_t data_len[REC_MAX];
    size_t stop_at;      /* return stop_rc from this event (1-based); 0: never */
    int stop_rc;
    /* When set, events are compared with expect's as they come instead of
     * being kept: the every-cut loops parse a stream thousands of times. */
    const struct rec *expect;
    int mismatch;
} rec;

static char *dup_bytes(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) abort();
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int rec_cb(void *ud, const lf_sse_event *ev)
{
    rec *r = ud;
    size_t i = r->count++;

    /* The parser promises NUL-terminated strings of the stated lengths. */
    if (ev->event[ev->event_len] != '\0' || ev->data[ev->data_len] != '\0') abort();
    if (r->expect) {
        const rec *e = r->expect;
        if (i >= e->count || i >= REC_MAX || e->event_len[i] != ev->event_len || e->data_len[i] != ev->data_len ||
            memcmp(e->event[i], ev->event, ev->event_len) != 0 || memcmp(e->data[i], ev->data, ev->data_len) != 0)
            r->mismatch = 1;
    } else if (i < REC_MAX) {
        r->event[i] = dup_bytes(ev->event, ev->event_len);
        r->event_len[i] = ev->event_len;
        r->data[i] = dup_bytes(ev->data, ev->data_len);
        r->data_len[i] = ev->data_len;
    }
    if (r->stop_at && r->count == r->stop_at) return r->stop_rc;
    return 0;
}

static void rec_init(rec *r)
{
    memset(r, 0, sizeof *r);
}

static void rec_free(rec *r)
{
    size_t i, n = r->count < REC_MAX ? r->count : REC_MAX;
    for (i = 0; i < n && !r->expect; i++) {
        free(r->event[i]);
        free(r->data[i]);
    }
    rec_init(r);
}

/* Parse s cut at the given offsets (ascending), then finish. */
static int parse_cuts(const char *s, size_t n, const size_t *cuts, size_t ncuts, rec *r)
{
    lf_sse_parser p;
    size_t from = 0, i;
    int rc = 0;

    lf_sse_init(&p);
    for (i = 0; i <= ncuts && rc == 0; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        rc = lf_sse_feed(&p, s + from, to - from, rec_cb, r);
        from = to;
    }
    if (rc == 0) rc = lf_sse_finish(&p, rec_cb, r);
    lf_sse_free(&p);
    return rc;
}

static int parse_whole(const char *s, size_t n, rec *r)
{
    return parse_cuts(s, n, NULL, 0, r);
}

static int parse_bytewise(const char *s, size_t n, rec *r)
{
    lf_sse_parser p;
    size_t i;
    int rc = 0;

    lf_sse_init(&p);
    for (i = 0; i < n && rc == 0; i++) rc = lf_sse_feed(&p, s + i, 1, rec_cb, r);
    if (rc == 0) rc = lf_sse_finish(&p, rec_cb, r);
    lf_sse_free(&p);
    return rc;
}

static int same_events(const rec *a, const rec *b)
{
    size_t i;

    if (a->count != b->count || a->count > REC_MAX) return 0;
    for (i = 0; i < a->count; i++) {
        if (a->event_len[i] != b->event_len[i] || a->data_len[i] != b->data_len[i] ||
            memcmp(a->event[i], b->event[i], a->event_len[i]) != 0 ||
            memcmp(a->data[i], b->data[i], a->data_len[i]) != 0)
            return 0;
    }
    return 1;
}

/* Whole, every two-slice cut, and byte by byte all give `whole`'s events.
 * Returns the number of ways that disagreed. */
static int count_slicing_disagreements(const char *s, size_t n, const rec *whole, int whole_rc)
{
    int bad = 0, rc;
    size_t k;
    rec r;

    rec_init(&r);
    r.expect = whole;
    for (k = 0; k <= n; k++) {
        r.count = 0;
        r.mismatch = 0;
        rc = parse_cuts(s, n, &k, 1, &r);
        if (rc != whole_rc || r.mismatch || r.count != whole->count) {
            if (bad < 3) fprintf(stderr, "  cut at %zu of %zu disagrees\n", k, n);
            bad++;
        }
    }
    rec_init(&r);
    r.expect = whole;
    rc = parse_bytewise(s, n, &r);
    if (rc != whole_rc || r.mismatch || r.count != whole->count) {
        fprintf(stderr, "  byte-by-byte parse disagrees\n");
        bad++;
    }
    return bad;
}

/* Parse a C string whole; the caller frees r. */
static int parse_str(const char *s, rec *r)
{
    rec_init(r);
    return parse_whole(s, strlen(s), r);
}

/* ---- line endings ---- */

static void test_line_endings(void)
{
    static const char *const streams[] = {
        "data: a\n\ndata: b\n\n",
        "data: a\r\n\r\ndata: b\r\n\r\n",
        "data: a\r\rdata: b\r\r",
        "data: a\r\n\ndata: b\r\r\n", /* mixed */
    };
    size_t i;
    rec r;

    for (i = 0; i < sizeof streams / sizeof streams[0]; i++) {
        LF_CHECK_INT(parse_str(streams[i], &r), 0);
        LF_CHECK_INT(r.count, 2);
        if (r.count == 2) {
            LF_CHECK_STR(r.data[0], "a");
            LF_CHECK_STR(r.data[1], "b");
            LF_CHECK_STR(r.event[0], "");
        }
        LF_CHECK_INT(count_slicing_disagreements(streams[i], strlen(streams[i]), &r, 0), 0);
        rec_free(&r);
    }
}

/* A CR ending one slice and an LF opening the next are one line ending: were
 * they two, the empty line between would dispatch "a" and "b" separately. */
static void test_crlf_cut_between_slices(void)
{
    lf_sse_parser p;
    rec r;

    rec_init(&r);
    lf_sse_init(&p);
    LF_CHECK_INT(lf_sse_feed(&p, "data: a\r", 8, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_feed(&p, "", 0, rec_cb, &r), 0); /* an empty slice keeps the CR pending */
    LF_CHECK_INT(lf_sse_feed(&p, "\ndata: b\r", 9, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 0);
    LF_CHECK_INT(lf_sse_feed(&p, "\n\r", 2, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) LF_CHECK_STR(r.data[0], "a\nb");
    /* A CR then a non-LF: the CR alone ended the line. */
    LF_CHECK_INT(lf_sse_feed(&p, "data: c\r", 8, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_feed(&p, "\r", 1, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 2);
    if (r.count == 2) LF_CHECK_STR(r.data[1], "c");
    lf_sse_free(&p);
    rec_free(&r);

    /* Every cut of a CRLF stream whose events span several lines. */
    {
        static const char s[] = "event: e\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\r\ndata: d\r\n\r\n";
        LF_CHECK_INT(parse_str(s, &r), 0);
        LF_CHECK_INT(r.count, 3);
        if (r.count == 3) {
            LF_CHECK_STR(r.event[0], "e");
            LF_CHECK_STR(r.data[0], "a\nb");
            LF_CHECK_STR(r.data[1], "c");
            LF_CHECK_STR(r.data[2], "d");
        }
        LF_CHECK_INT(count_slicing_disagreements(s, sizeof s - 1, &r, 0), 0);
        rec_free(&r);
    }
}

/* ---- fields ---- */

static void test_multiline_data_joined_with_lf(void)
{
    rec r;

    LF_CHECK_INT(parse_str("data: one\ndata: two\ndata:three\n\n", &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) {
        LF_CHECK_STR(r.data[0], "one\ntwo\nthree");
        LF_CHECK_INT(r.data_len[0], 13);
    }
    rec_free(&r);
}

static void test_event_names(void)
{
    rec r;

    LF_CHECK_INT(parse_str("event: message_start\ndata: {}\n\n"
                           "data: plain\n\n"
                           "event: a\nevent: content_block_delta\ndata: x\n\n", &r), 0);
    LF_CHECK_INT(r.count, 3);
    if (r.count == 3) {
        LF_CHECK_STR(r.event[0], "message_start");
        LF_CHECK_STR(r.data[0], "{}");
        LF_CHECK_STR(r.event[1], ""); /* the name does not outlive its event */
        LF_CHECK_STR(r.event[2], "content_block_delta"); /* the last event: wins */
    }
    rec_free(&r);
}

static void test_comments_ignored(void)
{
    rec r;

    LF_CHECK_INT(parse_str(": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n"
                           "data: x\n: between lines\ndata: y\n\n:\n\n", &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) LF_CHECK_STR(r.data[0], "x\ny");
    rec_free(&r);
}

static void test_one_leading_space_stripped(void)
{
    rec r;

    LF_CHECK_INT(parse_str("data:  two\n\ndata:none\n\ndata:\tt\n\nevent:  e\ndata: \n\n", &r), 0);
    LF_CHECK_INT(r.count, 4);
    if (r.count == 4) {
        LF_CHECK_STR(r.data[0], " two");
        LF_CHECK_STR(r.data[1], "none");
        LF_CHECK_STR(r.data[2], "\tt"); /* only a space is stripped */
        LF_CHECK_STR(r.event[3], " e");
        LF_CHECK_STR(r.data[3], "");
    }
    rec_free(&r);
}

static void test_data_without_colon(void)
{
    rec r;

    LF_CHECK_INT(parse_str("data\n\ndata\ndata\n\n", &r), 0);
    LF_CHECK_INT(r.count, 2);
    if (r.count == 2) {
        LF_CHECK_STR(r.data[0], "");
        LF_CHECK_STR(r.data[1], "\n");
    }
    rec_free(&r);
}

static void test_colon_inside_value_kept(void)
{
    rec r;

    LF_CHECK_INT(parse_str("data: {\"a\": \"b:c\"}\n\n", &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) LF_CHECK_STR(r.data[0], "{\"a\": \"b:c\"}");
    rec_free(&r);
}

static void test_nothing_to_dispatch(void)
{
    rec r;

    /* id, retry, unknown fields, names that merely start like "data". */
    LF_CHECK_INT(parse_str("id: 5\n\nretry: 100\n\nfoo: bar\n\ndatum: x\n\nDATA: x\n\n data: x\n\n\n\n", &r), 0);
    LF_CHECK_INT(r.count, 0);
    rec_free(&r);
}

/* WHATWG: a blank line with no data field seen dispatches nothing, whatever
 * "event:" said; the name does not carry over to the next event either. An
 * empty "data:" is data. */
static void test_event_name_alone_is_not_dispatched(void)
{
    rec r;

    LF_CHECK_INT(parse_str("event: ping\n\nevent: done\n\ndata: x\n\nevent: e\ndata:\n\nevent: tail", &r), 0);
    LF_CHECK_INT(r.count, 2);
    if (r.count == 2) {
        LF_CHECK_STR(r.event[0], "");
        LF_CHECK_STR(r.data[0], "x");
        LF_CHECK_STR(r.event[1], "e");
        LF_CHECK_STR(r.data[1], "");
    }
    rec_free(&r);
}

static void test_finish_dispatches_last_event(void)
{
    lf_sse_parser p;
    rec r;

    rec_init(&r);
    lf_sse_init(&p);
    LF_CHECK_INT(lf_sse_feed(&p, "data: 1\n\ndata: [DONE]", 21, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 1);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 2);
    if (r.count == 2) LF_CHECK_STR(r.data[1], "[DONE]");
    /* finish leaves the parser ready for another stream. */
    LF_CHECK_INT(lf_sse_feed(&p, "data: x\n", 8, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 3);
    if (r.count == 3) LF_CHECK_STR(r.data[2], "x");
    /* Nothing pending: finish dispatches nothing. */
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 3);
    lf_sse_free(&p);
    rec_free(&r);
}

static void test_bom_skipped_once(void)
{
    static const char s[] = "\xEF\xBB\xBF" "data: x\n\n\xEF\xBB\xBF" "data: y\n\n";
    rec r;

    LF_CHECK_INT(parse_str(s, &r), 0);
    LF_CHECK_INT(r.count, 1); /* the second BOM makes its line an unknown field */
    if (r.count == 1) LF_CHECK_STR(r.data[0], "x");
    LF_CHECK_INT(count_slicing_disagreements(s, strlen(s), &r, 0), 0);
    rec_free(&r);
}

static void test_nul_bytes_in_data_kept(void)
{
    static const char s[] = "data: a\0b\n\n";
    rec r;

    rec_init(&r);
    LF_CHECK_INT(parse_whole(s, sizeof s - 1, &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) {
        LF_CHECK_INT(r.data_len[0], 3);
        LF_CHECK(memcmp(r.data[0], "a\0b", 3) == 0);
    }
    rec_free(&r);
}

static void test_line_too_long(void)
{
    lf_sse_parser p;
    size_t max = LF_SSE_MAX_LINE;
    char *big = malloc(max + 2);
    rec r;

    LF_CHECK(big != NULL);
    if (!big) return;
    memcpy(big, "data:", 5);
    memset(big + 5, 'x', max - 5 + 2);

    /* Exactly the limit is accepted. */
    rec_init(&r);
    lf_sse_init(&p);
    big[max] = '\n';
    LF_CHECK_INT(lf_sse_feed(&p, big, max + 1, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 1);
    if (r.count == 1) LF_CHECK_INT(r.data_len[0], max - 5);
    rec_free(&r);

    /* One more byte, arriving in a later slice, is refused; so are later feeds. */
    big[max] = 'x';
    rec_init(&r);
    LF_CHECK_INT(lf_sse_feed(&p, "data: before\n\n", 14, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_feed(&p, big, max, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_feed(&p, big + max, 1, rec_cb, &r), LF_SSE_ERR_LINE_TOO_LONG);
    LF_CHECK_INT(lf_sse_feed(&p, "\n\n", 2, rec_cb, &r), LF_SSE_ERR_LINE_TOO_LONG);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), LF_SSE_ERR_LINE_TOO_LONG);
    LF_CHECK_INT(r.count, 1);
    lf_sse_reset(&p);
    LF_CHECK_INT(lf_sse_feed(&p, big, max + 1, rec_cb, &r), LF_SSE_ERR_LINE_TOO_LONG); /* in one slice */
    lf_sse_free(&p);
    rec_free(&r);
    free(big);
}

static void test_callback_stops_parser(void)
{
    static const char s[] = "data: a\n\ndata: b\n\ndata: c\n\n";
    lf_sse_parser p;
    rec r;

    rec_init(&r);
    r.stop_at = 2;
    r.stop_rc = 7;
    lf_sse_init(&p);
    LF_CHECK_INT(lf_sse_feed(&p, s, sizeof s - 1, rec_cb, &r), 7);
    LF_CHECK_INT(r.count, 2);
    LF_CHECK_INT(lf_sse_feed(&p, s, sizeof s - 1, rec_cb, &r), 7);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 7);
    LF_CHECK_INT(r.count, 2);
    /* After a reset the parser starts over. */
    lf_sse_reset(&p);
    r.stop_at = 0;
    LF_CHECK_INT(lf_sse_feed(&p, "data: c", 7, rec_cb, &r), 0);
    LF_CHECK_INT(lf_sse_finish(&p, rec_cb, &r), 0);
    LF_CHECK_INT(r.count, 3);
    if (r.count == 3) LF_CHECK_STR(r.data[2], "c");
    lf_sse_free(&p);
    rec_free(&r);

    /* A stop from the event dispatched by finish is returned by finish. */
    rec_init(&r);
    r.stop_at = 1;
    r.stop_rc = -3;
    LF_CHECK_INT(parse_whole("data: z", 7, &r), -3);
    LF_CHECK_INT(r.count, 1);
    rec_free(&r);
}

/* Gemini's streamGenerateContent?alt=sse frames events with CRLF CRLF. */
static void test_gemini_style_crlf_frames(void)
{
    static const char s[] =
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}],\"role\": \"model\"}}]}\r\n\r\n"
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"lo\"}],\"role\": \"model\"},"
        "\"finishReason\": \"STOP\"}],\"usageMetadata\": {\"promptTokenCount\": 3}}\r\n\r\n";
    rec r;

    LF_CHECK_INT(parse_str(s, &r), 0);
    LF_CHECK_INT(r.count, 2);
    if (r.count == 2) {
        LF_CHECK(strncmp(r.data[0], "{\"candidates\"", 13) == 0);
        LF_CHECK(strstr(r.data[0], "\r") == NULL);
        LF_CHECK(strstr(r.data[1], "STOP") != NULL);
        LF_CHECK(r.data[1][r.data_len[1] - 1] == '}');
    }
    LF_CHECK_INT(count_slicing_disagreements(s, strlen(s), &r, 0), 0);
    rec_free(&r);
}

/* ---- recorded streams ---- */

static const char *fixtures_dir(void)
{
    const char *d = getenv("LF_FIXTURES");
    return d && *d ? d : "spec/fixtures/recorded";
}

static int is_event_stream(json_object *headers)
{
    json_object_object_foreach(headers, key, val) {
        if (strcasecmp(key, "content-type") == 0 && json_object_is_type(val, json_type_string) &&
            strstr(json_object_get_string(val), "text/event-stream"))
            return 1;
    }
    return 0;
}

/* Replace every LF of s with `ending`. */
static void rewrite_endings(const char *s, size_t n, const char *ending, lf_buf *out)
{
    size_t i;
    lf_buf_clear(out);
    for (i = 0; i < n; i++) {
        int rc = s[i] == '\n' ? lf_buf_append_str(out, ending) : lf_buf_append_char(out, s[i]);
        if (rc) abort();
    }
}

static void check_recorded_stream(const char *name, const char *body, size_t n)
{
    static const char *const endings[] = { "\r\n", "\r" };
    rec whole, other;
    lf_buf rewritten;
    size_t i;
    int bad;

    rec_init(&whole);
    LF_CHECK_INT(parse_whole(body, n, &whole), 0);
    if (whole.count == 0) fprintf(stderr, "  %s: no events\n", name);
    LF_CHECK(whole.count > 0);
    LF_CHECK(whole.count <= REC_MAX);
    for (i = 0; i < whole.count && i < REC_MAX; i++) {
        /* The recordings are JSON per event, or [DONE]: never a stray space,
         * CR or comment text left in the data. */
        LF_CHECK(whole.data[i][0] == '{' || strcmp(whole.data[i], "[DONE]") == 0);
        LF_CHECK(strchr(whole.data[i], '\r') == NULL);
        LF_CHECK(strstr(whole.data[i], "OPENROUTER PROCESSING") == NULL);
    }

    bad = count_slicing_disagreements(body, n, &whole, 0);
    if (bad) fprintf(stderr, "  %s: %d slicings disagree\n", name, bad);
    LF_CHECK_INT(bad, 0);

    /* The same stream framed with CRLF or CR gives the same events. */
    lf_buf_init(&rewritten);
    for (i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        rewrite_endings(body, n, endings[i], &rewritten);
        rec_init(&other);
        LF_CHECK_INT(parse_whole(rewritten.ptr, rewritten.len, &other), 0);
        if (!same_events(&other, &whole)) fprintf(stderr, "  %s: endings rewritten (%zu) disagree\n", name, i);
        LF_CHECK(same_events(&other, &whole));
        rec_free(&other);
    }
    lf_buf_free(&rewritten);
    rec_free(&whole);
}

static void test_recorded_streams(void)
{
    const char *dir = fixtures_dir();
    DIR *d = opendir(dir);
    struct dirent *de;
    int streams = 0, anthropic = 0, openrouter = 0, done = 0;

    if (!d) fprintf(stderr, "  cannot open fixtures directory %s (set LF_FIXTURES)\n", dir);
    LF_CHECK(d != NULL);
    if (!d) return;
    while ((de = readdir(d)) != NULL) {
        char path[4096];
        json_object *root, *interactions;
        size_t len = strlen(de->d_name), i;

        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        root = json_object_from_file(path);
        LF_CHECK(root != NULL);
        if (!root) continue;
        if (json_object_object_get_ex(root, "interactions", &interactions)) {
            for (i = 0; i < json_object_array_length(interactions); i++) {
                json_object *it = json_object_array_get_idx(interactions, i), *resp, *headers, *body;
                const char *b;
                size_t bn;
                rec r;

                if (!json_object_object_get_ex(it, "response", &resp)) continue;
                if (!json_object_object_get_ex(resp, "headers", &headers) || !is_event_stream(headers)) continue;
                if (!json_object_object_get_ex(resp, "body", &body) || !json_object_is_type(body, json_type_string))
                    continue;
                b = json_object_get_string(body);
                bn = (size_t)json_object_get_string_len(body);
                streams++;
                check_recorded_stream(de->d_name, b, bn);

                /* What each provider's stream is known to hold. */
                rec_init(&r);
                parse_whole(b, bn, &r);
                if (strstr(de->d_name, "_anthropic_")) {
                    anthropic++;
                    LF_CHECK(r.count > 2);
                    if (r.count > 2) {
                        LF_CHECK_STR(r.event[0], "message_start");
                        LF_CHECK_STR(r.event[r.count - 1], "message_stop");
                    }
                } else {
                    LF_CHECK(r.count > 0);
                    if (r.count > 0 && r.count <= REC_MAX) LF_CHECK_STR(r.event[r.count - 1], "");
                    if (r.count > 0 && r.count <= REC_MAX && strcmp(r.data[r.count - 1], "[DONE]") == 0) done++;
                }
                if (strstr(de->d_name, "_openrouter_")) openrouter++;
                rec_free(&r);
            }
        }
        json_object_put(root);
    }
    closedir(d);
    fprintf(stderr, "  %d recorded streams checked\n", streams);
    LF_CHECK(streams >= 10);
    LF_CHECK(anthropic >= 1);
    LF_CHECK(openrouter >= 1);
    LF_CHECK(done >= 1);
}

int main(void)
{
    LF_RUN(test_line_endings);
    LF_RUN(test_crlf_cut_between_slices);
    LF_RUN(test_multiline_data_joined_with_lf);
    LF_RUN(test_event_names);
    LF_RUN(test_comments_ignored);
    LF_RUN(test_one_leading_space_stripped);
    LF_RUN(test_data_without_colon);
    LF_RUN(test_colon_inside_value_kept);
    LF_RUN(test_nothing_to_dispatch);
    LF_RUN(test_event_name_alone_is_not_dispatched);
    LF_RUN(test_finish_dispatches_last_event);
    LF_RUN(test_bom_skipped_once);
    LF_RUN(test_nul_bytes_in_data_kept);
    LF_RUN(test_line_too_long);
    LF_RUN(test_callback_stops_parser);
    LF_RUN(test_gemini_style_crlf_frames);
    LF_RUN(test_recorded_streams);
    return lf_test_summary("sse");
}
