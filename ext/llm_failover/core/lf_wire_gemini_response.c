/* What Gemini generateContent answers (Google AI and Vertex AI alike): a
 * plain answer, stream events (each a whole GenerateContentResponse), and the
 * batchEmbedContents answer, read by json-c. Error bodies are
 * lf_wire_error.c's; a prompt or an answer Google's filters withheld is an
 * error here. */
#include "lf_wire_gemini.h"

#include <ctype.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* ------------------------------------------- shared by answers and streams */

/* The candidate with index 0 (or none given), else the first; NULL for none. */
static json_object *lf_gemini_candidate(json_object *root)
{
    json_object *list = lf_json_get_typed(root, "candidates", json_type_array), *idx;
    size_t i, n = list ? json_object_array_length(list) : 0;

    for (i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(list, i);

        if (!json_object_is_type(c, json_type_object)) continue;
        idx = lf_json_get(c, "index");
        if (!idx || (json_object_is_type(idx, json_type_int) && json_object_get_int64(idx) == 0)) return c;
    }
    return n && json_object_is_type(json_object_array_get_idx(list, 0), json_type_object)
               ? json_object_array_get_idx(list, 0)
               : NULL;
}

/* usageMetadata's counts, each with whether it was there. */
typedef struct lf_gemini_counts {
    long prompt, tools, out, thoughts, cached;
    int has_in, has_tools, has_out, has_thoughts, has_cached;
} lf_gemini_counts;

/* The counts into a; 1 when there were any. Every input token is
 * promptTokenCount (cached ones included) and toolUsePromptTokenCount; the
 * output is candidatesTokenCount and thoughtsTokenCount, which Gemini counts
 * apart and bills alike. */
static int lf_gemini_count_usage(const lf_gemini_counts *c, lf_answer *a)
{
    if (c->has_cached) a->cached_input_tokens = c->cached;
    if (c->has_in) a->input_tokens = c->prompt + (c->has_tools ? c->tools : 0);
    if (c->has_out || c->has_thoughts) a->output_tokens = (c->has_out ? c->out : 0) + (c->has_thoughts ? c->thoughts : 0);
    return c->has_in || c->has_out || c->has_thoughts;
}

/* usageMetadata into a; 1 when it held counts. */
static int lf_gemini_usage(json_object *u, lf_answer *a)
{
    lf_gemini_counts c;

    if (!u || !json_object_is_type(u, json_type_object)) return 0;
    memset(&c, 0, sizeof c);
    c.has_in = lf_json_take_count(u, "promptTokenCount", &c.prompt);
    c.has_out = lf_json_take_count(u, "candidatesTokenCount", &c.out);
    c.has_thoughts = lf_json_take_count(u, "thoughtsTokenCount", &c.thoughts);
    c.has_tools = lf_json_take_count(u, "toolUsePromptTokenCount", &c.tools);
    c.has_cached = lf_json_take_count(u, "cachedContentTokenCount", &c.cached);
    return lf_gemini_count_usage(&c, a);
}

/* Google's filters: a finishReason or blockReason that withheld the answer. */
static int lf_gemini_blocked(json_object *reason)
{
    static const char *const names[] = { "SAFETY",      "RECITATION",   "BLOCKLIST",   "PROHIBITED_CONTENT",
                                         "SPII",        "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT",
                                         "IMAGE_RECITATION", "MODEL_ARMOR", "OTHER", NULL };
    const char *const *n;

    if (!reason || !json_object_is_type(reason, json_type_string)) return 0;
    for (n = names; *n; n++)
        if (lf_bytes_are(json_object_get_string(reason), (size_t)json_object_get_string_len(reason), *n)) return 1;
    return 0;
}

/* A finish in which the model failed to answer (a call it could not write,
 * or one of a tool it was not given): an error of that name, which the
 * classifier reads as a server's failure (retried, then failed over). 1 when
 * it is one. */
static int lf_gemini_failed(json_object *cand, lf_wire_error *err)
{
    json_object *said = lf_json_get_typed(cand, "finishMessage", json_type_string);

    if (!lf_json_string_is(cand, "finishReason", "MALFORMED_FUNCTION_CALL") &&
        !lf_json_string_is(cand, "finishReason", "UNEXPECTED_TOOL_CALL"))
        return 0;
    lf_wire_error_clear(err);
    (void)lf_json_take_string(cand, "finishReason", &err->type);
    (void)lf_utf8_setf(&err->message, "Gemini's answer ended in %s%s%s", lf_buf_cstr(&err->type), said ? ": " : "",
                       said ? json_object_get_string(said) : "");
    return 1;
}

/* A withheld prompt (promptFeedback) or answer (its finishReason) as an error
 * the classifier reads as content policy: type content_filter, code Google's
 * reason, its message when it gave one; or a failed finish (lf_gemini_failed).
 * 1 when the answer is no answer. */
static int lf_gemini_block(json_object *root, json_object *cand, lf_wire_error *err)
{
    json_object *feedback = lf_json_get_typed(root, "promptFeedback", json_type_object);
    json_object *reason = lf_json_get(feedback, "blockReason");
    json_object *said = lf_json_get_typed(feedback, "blockReasonMessage", json_type_string);
    const char *what = "the prompt";

    /* OTHER is a block only as a blockReason: as a finishReason it is a stop
     * for some other reason. */
    if (!lf_gemini_blocked(reason)) {
        reason = lf_json_get(cand, "finishReason");
        said = lf_json_get_typed(cand, "finishMessage", json_type_string);
        what = "the answer";
        if (!lf_gemini_blocked(reason) || lf_json_string_is(cand, "finishReason", "OTHER"))
            return lf_gemini_failed(cand, err);
    }
    lf_wire_error_clear(err);
    (void)lf_buf_set(&err->type, "content_filter", 14);
    (void)lf_json_value_text(reason, &err->code);
    (void)lf_utf8_setf(&err->message, "Gemini withheld %s (%s)%s%s", what, lf_buf_cstr(&err->code),
                       said ? ": " : "", said ? json_object_get_string(said) : "");
    return 1;
}

/* A new call: onto the answer (plain), or the stream's list, published
 * whole when it completes (each Gemini call comes whole in one part; the
 * order they came is their key). */
static lf_answer_call *lf_gemini_new_call(lf_answer *a, lf_stream_state *s)
{
    if (s) return lf_wire_stream_new_call(s, (long)s->n_calls);
    return lf_wire_call_push(&a->tool_calls, NULL, &a->n_tool_calls, &a->cap_tool_calls, 0);
}

/* A candidate's parts: text (not the model's thoughts, which come only when
 * asked) onto the answer, each functionCall a call with its signature, and
 * the signature of the text. */
static int lf_gemini_parts(json_object *cand, lf_answer *a, lf_stream_state *s)
{
    json_object *parts = lf_json_get_typed(lf_json_get(cand, "content"), "parts", json_type_array);
    size_t i, n = parts ? json_object_array_length(parts) : 0;

    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(parts, i);
        json_object *fn = lf_json_get_typed(part, "functionCall", json_type_object);
        json_object *text = lf_json_get_typed(part, "text", json_type_string);
        json_object *thought = lf_json_get_typed(part, "thought", json_type_boolean);
        lf_answer_call *c;

        if (fn) {
            if (!(c = lf_gemini_new_call(a, s)) || lf_wire_stream_set(&c->id, lf_json_get(fn, "id")) != 0 ||
                lf_wire_stream_set(&c->name, lf_json_get(fn, "name")) != 0 ||
                (lf_json_get(fn, "args") && lf_json_value_text(lf_json_get(fn, "args"), &c->arguments) != 0) ||
                lf_wire_stream_set(&c->signature, lf_json_get(part, "thoughtSignature")) != 0 ||
                (!s && lf_wire_call_done(c) != 0))
                return -1;
            continue;
        }
        if (text && !(thought && json_object_get_boolean(thought)) &&
            lf_utf8_append_sanitized(&a->text, json_object_get_string(text), (size_t)json_object_get_string_len(text)) != 0)
            return -1;
        if (lf_wire_stream_set(&a->reasoning, lf_json_get(part, "thoughtSignature")) != 0) return -1;
    }
    return 0;
}

/* The finish reason as the gem names them: Google's in lower case ("stop",
 * "max_tokens", as Anthropic's), LF_FINISH_TOOL_CALLS when the answer calls
 * tools (Gemini says STOP). */
static int lf_gemini_finish(json_object *cand, lf_answer *a, int calls)
{
    size_t i;

    if (lf_json_take_string(cand, "finishReason", &a->finish_reason) != 0) return -1;
    if (calls) return lf_buf_set(&a->finish_reason, LF_FINISH_TOOL_CALLS, strlen(LF_FINISH_TOOL_CALLS));
    for (i = 0; i < a->finish_reason.len; i++) a->finish_reason.ptr[i] = (char)tolower((unsigned char)a->finish_reason.ptr[i]);
    return 0;
}

/* ------------------------------------------- a plain answer */

int lf_wire_gemini_answer(json_object *root, lf_answer *out, lf_wire_error *err)
{
    json_object *cand;

    if (json_object_is_type(root, json_type_array) || lf_json_get(root, "error"))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (!json_object_is_type(root, json_type_object)) return LF_WIRE_INVALID;
    cand = lf_gemini_candidate(root);
    if (lf_gemini_block(root, cand, err)) return LF_WIRE_ERROR_BODY;
    if (!cand) return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    if (lf_json_take_string(root, "modelVersion", &out->model) != 0 ||
        lf_json_take_string(root, "responseId", &out->id) != 0 || lf_gemini_parts(cand, out, NULL) != 0 ||
        lf_gemini_finish(cand, out, out->n_tool_calls > 0) != 0)
        return LF_WIRE_INVALID;
    lf_gemini_usage(lf_json_get(root, "usageMetadata"), out);
    return LF_WIRE_OK;
}

/* ------------------------------------------- stream events */

static int lf_gemini_stream_data(lf_stream_state *s, json_object *root)
{
    json_object *cand;

    if (json_object_is_type(root, json_type_array) || lf_json_get(root, "error"))
        return lf_wire_error_from_json(root, &s->error) ? LF_STREAM_ERROR : LF_STREAM_INVALID;
    if (!json_object_is_type(root, json_type_object)) return LF_STREAM_INVALID;
    if (lf_json_take_string(root, "modelVersion", &s->answer.model) != 0 ||
        lf_json_take_string(root, "responseId", &s->answer.id) != 0)
        return LF_STREAM_INVALID;
    /* Every chunk carries the counts so far: the last is the total. */
    if (lf_gemini_usage(lf_json_get(root, "usageMetadata"), &s->answer)) s->has_usage = 1;
    cand = lf_gemini_candidate(root);
    if (lf_gemini_block(root, cand, &s->error)) return LF_STREAM_ERROR;
    /* After the finish, only counts are taken. */
    if (!cand || s->finished) return LF_STREAM_CONTINUE;
    if (lf_gemini_parts(cand, &s->answer, s) != 0) return LF_STREAM_INVALID;
    if (!lf_json_get_typed(cand, "finishReason", json_type_string)) return LF_STREAM_CONTINUE;
    /* The candidate's finishReason is the stream's end: its calls are whole. */
    if (lf_gemini_finish(cand, &s->answer, s->n_calls > 0) != 0 || lf_wire_stream_publish(s) != 0)
        return LF_STREAM_INVALID;
    s->finished = 1;
    return LF_STREAM_CONTINUE;
}

/* ------------------------------------------- the common stream event, without a tree */

/* Text parts one event may hold and still be read here. */
#define LF_GEMINI_PLAIN_PARTS 8

/* An event that only adds text and counts, as spans of its text. */
typedef struct lf_gemini_plain {
    lf_json_span model, id, text[LF_GEMINI_PLAIN_PARTS];
    size_t n_text;
    int has_usage;
    lf_gemini_counts counts;
} lf_gemini_plain;

/* usageMetadata's counts; 0 when one is no plain integer. */
static int lf_gemini_plain_usage(lf_json_span u, lf_gemini_counts *c)
{
    static const char *const keys[] = { "\"promptTokenCount\"", "\"candidatesTokenCount\"",
                                        "\"thoughtsTokenCount\"", "\"toolUsePromptTokenCount\"",
                                        "\"cachedContentTokenCount\"" };
    long *const counts[] = { &c->prompt, &c->out, &c->thoughts, &c->tools, &c->cached };
    int *const has[] = { &c->has_in, &c->has_out, &c->has_thoughts, &c->has_tools, &c->has_cached };
    lf_json_walk w;
    lf_json_span k, v;
    size_t i;
    int more;

    memset(c, 0, sizeof *c);
    if (!lf_json_walk_start(&w, u, '{')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0)
        for (i = 0; i < sizeof keys / sizeof *keys; i++)
            if (lf_json_span_is(k, keys[i])) {
                if (!lf_json_span_count(v, counts[i])) return 0;
                *has[i] = 1;
            }
    return more == 0;
}

/* A part that is text (its span into *text) or something ignored (text
 * left empty); 0 for a call, a thought or a signature. */
static int lf_gemini_plain_part(lf_json_span part, lf_json_span *text)
{
    lf_json_walk w;
    lf_json_span k, v;
    int more;

    text->n = 0;
    if (!lf_json_walk_start(&w, part, '{')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0) {
        if (lf_json_span_is(k, "\"text\"")) *text = v;
        else if (lf_json_span_is(k, "\"functionCall\"") || lf_json_span_is(k, "\"thought\"") ||
                 lf_json_span_is(k, "\"thoughtSignature\""))
            return 0;
    }
    return more == 0 && (!text->n || text->s[0] == '"');
}

/* The one candidate's text parts; 0 when it is finished or holds more. */
static int lf_gemini_plain_candidate(lf_json_span cand, lf_gemini_plain *p)
{
    lf_json_walk w;
    lf_json_span k, v, content = { NULL, 0 }, parts = { NULL, 0 };
    int more;

    if (!lf_json_walk_start(&w, cand, '{')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0) {
        if (lf_json_span_is(k, "\"finishReason\"")) return 0;
        if (lf_json_span_is(k, "\"content\"")) content = v;
    }
    if (more < 0 || !lf_json_walk_start(&w, content, '{')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0)
        if (lf_json_span_is(k, "\"parts\"")) parts = v;
    if (more < 0 || !lf_json_walk_start(&w, parts, '[')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0) {
        if (p->n_text == LF_GEMINI_PLAIN_PARTS || !lf_gemini_plain_part(v, &p->text[p->n_text])) return 0;
        if (p->text[p->n_text].n) p->n_text++;
    }
    return 1;
}

/* The event as spans; 0 when it holds more than text and counts: an error,
 * a filter's verdict, a finish, a call, a thought, a signature, several
 * candidates, a count that is no plain integer. Members read nowhere are
 * skipped; of a repeated one, the last counts, as in json-c's tree. */
static int lf_gemini_plain_event(lf_json_span root, lf_gemini_plain *p)
{
    lf_json_walk w;
    lf_json_span k, v, cands = { NULL, 0 }, usage = { NULL, 0 };
    int more;

    memset(p, 0, sizeof *p);
    if (!lf_json_walk_start(&w, root, '{')) return 0;
    while ((more = lf_json_walk_next(&w, &k, &v)) > 0) {
        if (lf_json_span_is(k, "\"candidates\"")) cands = v;
        else if (lf_json_span_is(k, "\"usageMetadata\"")) usage = v;
        else if (lf_json_span_is(k, "\"modelVersion\"")) p->model = v;
        else if (lf_json_span_is(k, "\"responseId\"")) p->id = v;
        else if (lf_json_span_is(k, "\"error\"") || lf_json_span_is(k, "\"promptFeedback\"")) return 0;
    }
    if (more < 0 || (p->model.n && p->model.s[0] != '"') || (p->id.n && p->id.s[0] != '"')) return 0;
    if (usage.n && !(p->has_usage = lf_gemini_plain_usage(usage, &p->counts))) return 0;
    /* Exactly one candidate: the one the tree reader would pick. */
    if (!lf_json_walk_start(&w, cands, '[') || lf_json_walk_next(&w, &k, &v) != 1) return 0;
    cands = v;
    return lf_json_walk_next(&w, &k, &v) == 0 && lf_gemini_plain_candidate(cands, p);
}

/* As lf_json_take_string: out is left alone when the member was not there. */
static int lf_gemini_take_span(lf_json_span v, lf_buf *out)
{
    if (!v.n) return 0;
    lf_buf_clear(out);
    return lf_json_span_append_string(v, out);
}

/* What lf_gemini_stream_data does with such an event, in its order. */
static int lf_gemini_stream_plain(lf_stream_state *s, const lf_gemini_plain *p)
{
    size_t i;

    if (lf_gemini_take_span(p->model, &s->answer.model) != 0 || lf_gemini_take_span(p->id, &s->answer.id) != 0)
        return LF_STREAM_INVALID;
    if (p->has_usage && lf_gemini_count_usage(&p->counts, &s->answer)) s->has_usage = 1;
    for (i = 0; i < p->n_text; i++)
        if (lf_json_span_append_string(p->text[i], &s->answer.text) != 0) return LF_STREAM_INVALID;
    return LF_STREAM_CONTINUE;
}

/* Each event is a whole response: most only add text and counts, and are
 * read from their text; json-c's tree of every event was most of a chunk's
 * cost (bench/README.md). The others are read from the tree. */
int lf_wire_gemini_stream_event(lf_stream_state *s, const lf_sse_event *ev)
{
    lf_gemini_plain plain;
    json_object *root;
    int rc;

    if (lf_json_nonstandard_at(ev->data, ev->data_len, 0) != 0) return LF_STREAM_INVALID;
    if (!s->finished && lf_gemini_plain_event(lf_json_span_of(ev->data, ev->data_len), &plain))
        return lf_gemini_stream_plain(s, &plain);
    root = lf_json_parse(ev->data, ev->data_len);
    if (!root) return LF_STREAM_INVALID;
    rc = lf_gemini_stream_data(s, root);
    json_object_put(root);
    return rc;
}

/* ------------------------------------------- the batchEmbedContents answer */

/* embeddings[i].values into row i of out->vectors: one per input, in order,
 * all of one length, each a finite number. */
static int lf_gemini_vectors(json_object *list, size_t n_inputs, lf_answer *out)
{
    size_t i, k, dims = 0;

    if (json_object_array_length(list) != n_inputs || n_inputs == 0) return LF_WIRE_INVALID;
    for (i = 0; i < n_inputs; i++) {
        json_object *v = lf_json_get_typed(json_object_array_get_idx(list, i), "values", json_type_array);
        size_t d = v ? json_object_array_length(v) : 0;

        if (!d || (dims && d != dims)) return LF_WIRE_INVALID;
        dims = d;
    }
    out->vectors = malloc(n_inputs * dims * sizeof(double));
    if (!out->vectors) return LF_WIRE_INVALID;
    for (i = 0; i < n_inputs; i++) {
        json_object *v = lf_json_get(json_object_array_get_idx(list, i), "values");

        for (k = 0; k < dims; k++) {
            json_object *x = json_object_array_get_idx(v, k);
            double d = json_object_get_double(x);

            if ((!json_object_is_type(x, json_type_double) && !json_object_is_type(x, json_type_int)) || !isfinite(d))
                return LF_WIRE_INVALID;
            out->vectors[i * dims + k] = d;
        }
    }
    out->n_vectors = n_inputs;
    out->dims = dims;
    return LF_WIRE_OK;
}

int lf_wire_gemini_embeddings(json_object *root, size_t n_inputs, lf_answer *out, lf_wire_error *err)
{
    json_object *list = lf_json_get_typed(root, "embeddings", json_type_array);
    int rc;

    if (!list || lf_json_get(root, "error"))
        return lf_wire_error_from_json(root, err) ? LF_WIRE_ERROR_BODY : LF_WIRE_INVALID;
    rc = lf_gemini_vectors(list, n_inputs, out);
    if (rc == LF_WIRE_OK) {
        lf_json_take_count(lf_json_get(root, "usageMetadata"), "promptTokenCount", &out->input_tokens);
        out->output_tokens = 0;
    }
    return rc;
}
