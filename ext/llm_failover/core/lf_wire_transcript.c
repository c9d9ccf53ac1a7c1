/* Tool calls in a transcript, whatever the protocol: the id a call is sent
 * with, and the invariant every transcript keeps. */
#include "lf_wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

static int lf_id_byte_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* FNV-1a, 64 bits: deterministic everywhere, and two ids of one transcript
 * meeting on the same value is checked (lf_wire_check_transcript), not
 * assumed away. */
static uint64_t lf_id_hash(const char *id, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)id[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int lf_wire_call_id(const char *id, size_t len, lf_buf *out)
{
    /* The readable head, "_", 16 hex digits: 23 + 1 + 16 = 40. */
    enum { HEAD = LF_WIRE_CALL_ID_MAX - 17 };
    char hex[17];
    size_t i, head;
    int ok = len >= 1 && len <= LF_WIRE_CALL_ID_MAX;

    lf_buf_clear(out);
    if (!id) len = 0;
    for (i = 0; ok && i < len; i++) ok = lf_id_byte_ok((unsigned char)id[i]);
    if (ok) return lf_buf_set(out, id, len);
    head = len < HEAD ? len : HEAD;
    for (i = 0; i < head; i++)
        if (lf_buf_append_char(out, lf_id_byte_ok((unsigned char)id[i]) ? id[i] : '_') != 0) return -1;
    (void)snprintf(hex, sizeof hex, "%016" PRIx64, lf_id_hash(id ? id : "", len));
    if (lf_buf_append_char(out, '_') != 0 || lf_buf_append(out, hex, 16) != 0) return -1;
    return 0;
}

/* A call id as it is sent (lf_wire_call_id), as a JSON string. */
int lf_wire_put_call_id(lf_buf *out, const char *id)
{
    lf_buf sent;
    int rc;

    lf_buf_init(&sent);
    rc = lf_wire_call_id(id, strlen(id), &sent);
    if (rc == 0) rc = lf_json_put_string(out, lf_buf_cstr(&sent), sent.len);
    lf_buf_free(&sent);
    return rc;
}

/* ------------------------------------------- the transcript's invariant */

/* A transcript refused: the message (lf_wire_vfail's) and the call id it is about. */
static void lf_transcript_fail(lf_buf *errmsg, lf_buf *call_id, const char *id, const char *fmt, ...)
{
    va_list ap;

    if (call_id) {
        lf_buf_clear(call_id);
        if (id) (void)lf_utf8_set_sanitized(call_id, id, strlen(id));
    }
    va_start(ap, fmt);
    lf_wire_vfail(errmsg, fmt, ap);
    va_end(ap);
}

static int lf_is_role(const char *role, const char *want)
{
    return role && strcmp(role, want) == 0;
}

/* Every call id so far, as given and as sent, to find one used twice. */
typedef struct lf_seen_ids {
    const char **ids;
    lf_buf *sent;
    size_t n;
} lf_seen_ids;

/* 0 when the id is new (then it is recorded), 1 when it was seen, 2 when
 * another id maps to the same text, -1 when out of memory. */
static int lf_seen_add(lf_seen_ids *s, const char *id)
{
    size_t i;

    lf_buf_init(&s->sent[s->n]);
    if (lf_wire_call_id(id, strlen(id), &s->sent[s->n]) != 0) {
        lf_buf_free(&s->sent[s->n]);
        return -1;
    }
    for (i = 0; i < s->n; i++) {
        if (strcmp(s->ids[i], id) == 0) break;
        if (s->sent[i].len == s->sent[s->n].len && memcmp(s->sent[i].ptr, s->sent[s->n].ptr, s->sent[i].len) == 0)
            break;
    }
    if (i < s->n) {
        int same = strcmp(s->ids[i], id) == 0;

        lf_buf_free(&s->sent[s->n]);
        return same ? 1 : 2;
    }
    s->ids[s->n++] = id;
    return 0;
}

/* The results right after message at, one per call; returns the index past
 * them, or 0 with the failure reported. */
static size_t lf_transcript_results(const lf_message *m, size_t n, size_t at, unsigned char *answered,
                                    lf_buf *errmsg, lf_buf *call_id)
{
    const lf_message *a = &m[at];
    size_t j = at + 1, k;

    memset(answered, 0, a->n_tool_calls);
    for (; j < n && lf_is_role(m[j].role, "tool"); j++) {
        const char *rid = m[j].tool_call_id;

        if (!rid || !rid[0]) {
            lf_transcript_fail(errmsg, call_id, NULL, "message %zu: a tool result without a tool_call_id", j);
            return 0;
        }
        for (k = 0; k < a->n_tool_calls; k++)
            if (strcmp(a->tool_calls[k].id, rid) == 0) break;
        if (k == a->n_tool_calls) {
            lf_transcript_fail(errmsg, call_id, rid,
                               "message %zu: the tool result for \"%.80s\" answers no call of message %zu", j, rid, at);
            return 0;
        }
        if (answered[k]) {
            lf_transcript_fail(errmsg, call_id, rid, "message %zu: tool call \"%.80s\" has a second result", j, rid);
            return 0;
        }
        answered[k] = 1;
    }
    for (k = 0; k < a->n_tool_calls; k++) {
        if (answered[k]) continue;
        lf_transcript_fail(errmsg, call_id, a->tool_calls[k].id,
                           "message %zu: tool call \"%.80s\" has no result before the next message", at,
                           a->tool_calls[k].id);
        return 0;
    }
    return j;
}

int lf_wire_check_transcript(const lf_message *m, size_t n, lf_buf *errmsg, lf_buf *call_id)
{
    lf_seen_ids seen = { NULL, NULL, 0 };
    unsigned char *answered = NULL;
    size_t i, k, total = 0, most = 0;
    int rc = LF_WIRE_BAD_TRANSCRIPT;

    if (errmsg) lf_buf_clear(errmsg);
    if (call_id) lf_buf_clear(call_id);
    if (n && !m) {
        lf_transcript_fail(errmsg, call_id, NULL, "messages is NULL but n_messages is %zu", n);
        return LF_WIRE_BAD_TRANSCRIPT;
    }
    for (i = 0; i < n; i++) {
        if (m[i].n_tool_calls && !m[i].tool_calls) {
            lf_transcript_fail(errmsg, call_id, NULL, "message %zu: tool_calls is NULL but n_tool_calls is %zu", i,
                               m[i].n_tool_calls);
            return LF_WIRE_BAD_TRANSCRIPT;
        }
        total += m[i].n_tool_calls;
        if (m[i].n_tool_calls > most) most = m[i].n_tool_calls;
    }
    seen.ids = calloc(total ? total : 1, sizeof *seen.ids);
    seen.sent = calloc(total ? total : 1, sizeof *seen.sent);
    answered = calloc(most ? most : 1, 1);
    if (!seen.ids || !seen.sent || !answered) {
        lf_transcript_fail(errmsg, call_id, NULL, "out of memory checking the transcript");
        rc = -1;
        goto done;
    }
    for (i = 0; i < n; i++) {
        const lf_message *a = &m[i];
        size_t next;

        if (lf_is_role(a->role, "tool")) {
            lf_transcript_fail(errmsg, call_id, a->tool_call_id,
                               "message %zu: the tool result for \"%.80s\" does not follow the assistant message that made its call",
                               i, a->tool_call_id ? a->tool_call_id : "");
            goto done;
        }
        if (!a->n_tool_calls) continue;
        if (!lf_is_role(a->role, "assistant")) {
            lf_transcript_fail(errmsg, call_id, a->tool_calls[0].id,
                               "message %zu: tool call \"%.80s\" is not an assistant's: only an assistant message makes tool calls",
                               i, a->tool_calls[0].id ? a->tool_calls[0].id : "");
            goto done;
        }
        for (k = 0; k < a->n_tool_calls; k++) {
            const lf_tool_call *c = &a->tool_calls[k];
            int seen_rc;

            if (!c->id || !c->id[0]) {
                lf_transcript_fail(errmsg, call_id, NULL, "message %zu: tool call %zu has no id", i, k);
                goto done;
            }
            if (!c->name || !c->name[0]) {
                lf_transcript_fail(errmsg, call_id, c->id, "message %zu: tool call \"%.80s\" has no name", i, c->id);
                goto done;
            }
            seen_rc = lf_seen_add(&seen, c->id);
            if (seen_rc < 0) {
                lf_transcript_fail(errmsg, call_id, NULL, "out of memory checking the transcript");
                rc = -1;
                goto done;
            }
            if (seen_rc == 1) {
                lf_transcript_fail(errmsg, call_id, c->id, "message %zu: tool call id \"%.80s\" is used twice", i, c->id);
                goto done;
            }
            if (seen_rc == 2) {
                lf_transcript_fail(errmsg, call_id, c->id,
                                   "message %zu: tool call id \"%.80s\" is sent as another call's id is", i, c->id);
                goto done;
            }
        }
        next = lf_transcript_results(m, n, i, answered, errmsg, call_id);
        if (!next) goto done;
        i = next - 1;
    }
    rc = 0;
done:
    for (i = 0; seen.sent && i < seen.n; i++) lf_buf_free(&seen.sent[i]);
    free(seen.ids);
    free(seen.sent);
    free(answered);
    return rc;
}
