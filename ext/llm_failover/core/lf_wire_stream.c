/* The state a stream's events fill, whatever the protocol: the answer so
 * far, and the tool calls being streamed until the stream completes. Each
 * protocol's events are read in its response file; lf_stream_event (lf_wire.c)
 * hands each event to its protocol's. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdlib.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

void lf_stream_init(lf_stream_state *s, lf_api api)
{
    s->api = api;
    lf_answer_init(&s->answer);
    lf_wire_error_init(&s->error);
    s->done = 0;
    s->finished = 0;
    s->stopped = 0;
    s->has_usage = 0;
    s->delta_at = 0;
    s->tool_input = 0;
    s->calls = NULL;
    s->call_keys = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
    s->calls_published = 0;
    lf_buf_init(&s->reasoning);
}

static void lf_stream_drop_calls(lf_stream_state *s)
{
    lf_wire_calls_free(s->calls, s->n_calls);
    free(s->calls);
    free(s->call_keys);
    s->calls = NULL;
    s->call_keys = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
}

void lf_stream_free(lf_stream_state *s)
{
    lf_answer_free(&s->answer);
    lf_wire_error_free(&s->error);
    lf_stream_drop_calls(s);
    lf_buf_free(&s->reasoning);
}

int lf_stream_complete(const lf_stream_state *s)
{
    return s->done || s->finished;
}

/* Straight onto the answer: lf_stream_event takes it back off when the event
 * fails. */
int lf_wire_stream_text(lf_stream_state *s, json_object *text)
{
    if (!text || !json_object_is_type(text, json_type_string)) return 0;
    if (lf_utf8_append_sanitized(&s->answer.text, json_object_get_string(text),
                                 (size_t)json_object_get_string_len(text)) != 0)
        return -1;
    return 0;
}

/* ------------------------------------------- tool calls being streamed */

lf_answer_call *lf_wire_stream_call(lf_stream_state *s, long key)
{
    size_t i = s->n_calls;

    while (i--)
        if (s->call_keys[i] == key) return &s->calls[i];
    return NULL;
}

/* Far more calls than a model makes in one answer (OpenAI allows 128 tools):
 * a stream past it is malformed, and each piece's lookup stays short. */
#define LF_STREAM_MAX_CALLS 1024

lf_answer_call *lf_wire_stream_new_call(lf_stream_state *s, long key)
{
    if (s->n_calls >= LF_STREAM_MAX_CALLS) return NULL;
    return lf_wire_call_push(&s->calls, &s->call_keys, &s->n_calls, &s->cap_calls, key);
}

int lf_wire_stream_set(lf_buf *out, json_object *v)
{
    if (!v || !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) return 0;
    return lf_utf8_set_sanitized(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* A character may be split between two pieces, so the whole is sanitized
 * when the call is complete. */
int lf_wire_stream_piece(lf_buf *out, json_object *v)
{
    if (!v || !json_object_is_type(v, json_type_string)) return 0;
    return lf_buf_append(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* The calls, ordered by key (OpenAI's index; a stable sort keeps the order
 * they came in otherwise), go whole to the answer. Once only: later pieces
 * are ignored. */
int lf_wire_stream_publish(lf_stream_state *s)
{
    lf_answer *a = &s->answer;
    lf_buf clean;
    size_t i, j;

    if (s->calls_published) return 0;
    s->calls_published = 1;
    if (!s->n_calls) return 0;
    for (i = 1; i < s->n_calls; i++) {
        lf_answer_call c = s->calls[i];
        long k = s->call_keys[i];

        for (j = i; j > 0 && s->call_keys[j - 1] > k; j--) {
            s->calls[j] = s->calls[j - 1];
            s->call_keys[j] = s->call_keys[j - 1];
        }
        s->calls[j] = c;
        s->call_keys[j] = k;
    }
    for (i = 0; i < s->n_calls; i++) {
        lf_answer_call *c = &s->calls[i];

        lf_buf_init(&clean);
        if (lf_utf8_set_sanitized(&clean, lf_buf_cstr(&c->arguments), c->arguments.len) != 0) {
            lf_buf_free(&clean);
            return -1;
        }
        lf_buf_move(&c->arguments, &clean);
        if (lf_wire_call_done(c) != 0) return -1;
    }
    lf_wire_calls_free(a->tool_calls, a->n_tool_calls);
    free(a->tool_calls);
    a->tool_calls = s->calls;
    a->n_tool_calls = s->n_calls;
    a->cap_tool_calls = s->cap_calls;
    s->calls = NULL;
    s->n_calls = 0;
    s->cap_calls = 0;
    lf_stream_drop_calls(s);
    return 0;
}

/* The stream completed; its calls are whole. */
int lf_wire_stream_finish(lf_stream_state *s, json_object *holder, const char *key)
{
    if (lf_json_take_string(holder, key, &s->answer.finish_reason) != 0) return -1;
    /* A schema answer's forced call is its text: its stop reason stays. */
    if (!s->tool_input && lf_wire_finish_reason(&s->answer.finish_reason) != 0) return -1;
    s->finished = 1;
    return lf_wire_stream_publish(s);
}
