/* Tool calls in the wire layer: every recorded chat_function_calling_*
 * interaction (spec/fixtures/recorded/function_calling: both protocols,
 * several providers, streamed and not) parsed and its request rebuilt, for
 * its own protocol and for the other one; then hand-written cases of the
 * rendering, the transcript's invariant, the call id mapping and streamed
 * calls (pieces, cuts, parallel calls). */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_test.h"

#include "lf_banned.h"

#include "utf8_ref.h"
#include "wire_test_json.h"

#define MAX_CALLS 16

/* ---------------------------------------------------------- helpers */

/* A tool call read by the test itself, not by lf_wire. */
typedef struct want_call {
    char id[128], name[128];
    lf_buf args;
    int args_json;  /* args is the input object written by json-c: compare as JSON */
} want_call;

typedef struct want {
    want_call c[MAX_CALLS];
    long key[MAX_CALLS];
    size_t n;
    lf_buf text;
} want;

static void want_init(want *w)
{
    size_t i;

    memset(w, 0, sizeof *w);
    for (i = 0; i < MAX_CALLS; i++) lf_buf_init(&w->c[i].args);
    lf_buf_init(&w->text);
}

static void want_free(want *w)
{
    size_t i;

    for (i = 0; i < MAX_CALLS; i++) lf_buf_free(&w->c[i].args);
    lf_buf_free(&w->text);
}

static want_call *want_at(want *w, long key)
{
    size_t i;

    for (i = 0; i < w->n; i++)
        if (w->key[i] == key) return &w->c[i];
    if (w->n == MAX_CALLS) return NULL;
    w->key[w->n] = key;
    return &w->c[w->n++];
}

static void copy_str(char *dst, size_t cap, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, s, n);
    dst[n] = '\0';
}

static void want_object(want_call *c, json_object *v)
{
    const char *s = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "{}";

    lf_buf_clear(&c->args);
    lf_buf_append_str(&c->args, s);
    c->args_json = 1;
}

/* The naive readers: a whole body with json-c, a stream line by line. */
static void naive_plain(lf_api api, const char *body, size_t n, want *w)
{
    json_object *root = parse(body, n);
    size_t i;

    if (api == LF_API_OPENAI) {
        json_object *msg = jget(json_object_array_get_idx(jget(root, "choices"), 0), "message");
        json_object *calls = jget(msg, "tool_calls");

        if (jstr(msg, "content")) lf_buf_append_str(&w->text, jstr(msg, "content"));
        for (i = 0; calls && i < json_object_array_length(calls); i++) {
            json_object *tc = json_object_array_get_idx(calls, i);
            want_call *c = want_at(w, (long)i);

            copy_str(c->id, sizeof c->id, jstr(tc, "id"));
            copy_str(c->name, sizeof c->name, jstr(jget(tc, "function"), "name"));
            lf_buf_append_str(&c->args, jstr(jget(tc, "function"), "arguments"));
            if (!c->args.len) lf_buf_append_str(&c->args, "{}");
        }
    } else {
        json_object *content = jget(root, "content");

        for (i = 0; content && i < json_object_array_length(content); i++) {
            json_object *b = json_object_array_get_idx(content, i);

            if (jstr(b, "type") && strcmp(jstr(b, "type"), "text") == 0) lf_buf_append_str(&w->text, jstr(b, "text"));
            if (jstr(b, "type") && strcmp(jstr(b, "type"), "tool_use") == 0) {
                want_call *c = want_at(w, (long)i);

                copy_str(c->id, sizeof c->id, jstr(b, "id"));
                copy_str(c->name, sizeof c->name, jstr(b, "name"));
                want_object(c, jget(b, "input"));
            }
        }
    }
    json_object_put(root);
}

static void naive_stream(lf_api api, const char *body, size_t n, want *w)
{
    const char *p = body, *end = body + n;
    size_t i;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t len = eol ? (size_t)(eol - p) : (size_t)(end - p);
        json_object *ev = NULL;

        if (len > 6 && memcmp(p, "data: ", 6) == 0 && p[6] == '{') ev = parse(p + 6, len - 6);
        if (ev && api == LF_API_OPENAI) {
            json_object *delta = jget(json_object_array_get_idx(jget(ev, "choices"), 0), "delta");
            json_object *calls = jget(delta, "tool_calls");

            if (jstr(delta, "content")) lf_buf_append_str(&w->text, jstr(delta, "content"));
            for (i = 0; calls && i < json_object_array_length(calls); i++) {
                json_object *tc = json_object_array_get_idx(calls, i);
                want_call *c = want_at(w, (long)json_object_get_int(jget(tc, "index")));

                if (jstr(tc, "id")) copy_str(c->id, sizeof c->id, jstr(tc, "id"));
                if (jstr(jget(tc, "function"), "name")) copy_str(c->name, sizeof c->name, jstr(jget(tc, "function"), "name"));
                if (jstr(jget(tc, "function"), "arguments")) lf_buf_append_str(&c->args, jstr(jget(tc, "function"), "arguments"));
            }
        } else if (ev) {
            const char *type = jstr(ev, "type");
            long index = (long)json_object_get_int(jget(ev, "index"));

            if (type && strcmp(type, "content_block_start") == 0 &&
                jstr(jget(ev, "content_block"), "type") && strcmp(jstr(jget(ev, "content_block"), "type"), "tool_use") == 0) {
                want_call *c = want_at(w, index);

                copy_str(c->id, sizeof c->id, jstr(jget(ev, "content_block"), "id"));
                copy_str(c->name, sizeof c->name, jstr(jget(ev, "content_block"), "name"));
            }
            if (type && strcmp(type, "content_block_delta") == 0) {
                json_object *d = jget(ev, "delta");
                const char *dt = jstr(d, "type");

                if (dt && strcmp(dt, "text_delta") == 0) lf_buf_append_str(&w->text, jstr(d, "text"));
                if (dt && strcmp(dt, "input_json_delta") == 0) {
                    want_call *c = want_at(w, index);

                    if (c) lf_buf_append_str(&c->args, jstr(d, "partial_json"));
                }
            }
        }
        json_object_put(ev);
        p += len + 1;
    }
    for (i = 0; i < w->n; i++)
        if (!w->c[i].args.len) lf_buf_append_str(&w->c[i].args, "{}");
}

#include "wire_stream_run.h"

/* What lf_wire made of an answer matches what the test read itself. */
static void check_calls(const char *file, const lf_answer *a, const want *w)
{
    size_t i;

    LF_CHECK_INT(a->n_tool_calls, w->n);
    for (i = 0; i < a->n_tool_calls && i < w->n; i++) {
        const lf_answer_call *c = &a->tool_calls[i];
        const want_call *e = &w->c[i];
        int ok = buf_is(&c->id, e->id) && buf_is(&c->name, e->name) &&
                 (e->args_json ? json_same(lf_buf_cstr(&c->arguments), c->arguments.len, lf_buf_cstr(&e->args), e->args.len)
                               : buf_is(&c->arguments, lf_buf_cstr(&e->args)));

        if (!ok)
            fprintf(stderr, "%s: call %zu: got %s %s %s, want %s %s %s\n", file, i, lf_buf_cstr(&c->id),
                    lf_buf_cstr(&c->name), lf_buf_cstr(&c->arguments), e->id, e->name, lf_buf_cstr(&e->args));
        LF_CHECK(ok);
        LF_CHECK(utf8_valid(lf_buf_cstr(&c->arguments), c->arguments.len));
    }
    if (a->n_tool_calls) LF_CHECK_STR(lf_buf_cstr(&a->finish_reason), LF_FINISH_TOOL_CALLS);
    else LF_CHECK(!buf_is(&a->finish_reason, LF_FINISH_TOOL_CALLS));
}

/* The same calls as the assistant message the client sent back next (its
 * arguments as JSON: the client wrote them again). */
static void check_against_next(const char *file, lf_api api, const lf_answer *a, json_object *msg)
{
    json_object *calls = api == LF_API_OPENAI ? jget(msg, "tool_calls") : NULL;
    json_object *content = api == LF_API_ANTHROPIC ? jget(msg, "content") : NULL;
    size_t i, k = 0;

    LF_CHECK_STR(jstr(msg, "role"), "assistant");
    if (api == LF_API_OPENAI) {
        LF_CHECK_INT(calls ? json_object_array_length(calls) : 0, a->n_tool_calls);
        for (i = 0; calls && i < json_object_array_length(calls) && i < a->n_tool_calls; i++) {
            json_object *tc = json_object_array_get_idx(calls, i), *fn = jget(tc, "function");
            const char *args = jstr(fn, "arguments");

            LF_CHECK(buf_is(&a->tool_calls[i].id, jstr(tc, "id")));
            LF_CHECK(buf_is(&a->tool_calls[i].name, jstr(fn, "name")));
            LF_CHECK(args && json_same(lf_buf_cstr(&a->tool_calls[i].arguments), a->tool_calls[i].arguments.len, args, strlen(args)));
        }
        return;
    }
    for (i = 0; content && json_object_is_type(content, json_type_array) && i < json_object_array_length(content); i++) {
        json_object *b = json_object_array_get_idx(content, i);
        const char *input;

        if (!jstr(b, "type") || strcmp(jstr(b, "type"), "tool_use") != 0) continue;
        LF_CHECK(k < a->n_tool_calls);
        if (k >= a->n_tool_calls) break;
        input = json_object_to_json_string_ext(jget(b, "input"), JSON_C_TO_STRING_PLAIN);
        LF_CHECK(buf_is(&a->tool_calls[k].id, jstr(b, "id")));
        LF_CHECK(buf_is(&a->tool_calls[k].name, jstr(b, "name")));
        LF_CHECK(json_same(lf_buf_cstr(&a->tool_calls[k].arguments), a->tool_calls[k].arguments.len, input, strlen(input)));
        k++;
    }
    LF_CHECK_INT(k, a->n_tool_calls);
    (void)file;
}

typedef struct tool_counts {
    int files, answers, streams, calls, streamed_calls, cuts, rebuilt, crossed;
} tool_counts;

/* A stream cut inside its first tool call, at several places: not
 * complete, no call, no argument in the text. */
static void check_cuts(const char *file, lf_api api, const char *body, size_t n, tool_counts *tc)
{
    const char *first = strstr(body, api == LF_API_OPENAI ? "\"tool_calls\"" : "\"tool_use\"");
    const char *fin = strstr(body, api == LF_API_OPENAI ? "\"finish_reason\":\"" : "\"stop_reason\":\"");
    size_t from, to, at;

    if (!first || !fin || fin < first) return;
    from = (size_t)(first - body);
    /* The event holding the finish reason starts after the last line break before it. */
    while (fin > first && fin[-1] != '\n') fin--;
    to = (size_t)(fin - body);
    for (at = from; at < to; at += (to - from) / 7 + 1) {
        stream_run r;

        stream_run_body(&r, api, body, at, 0);
        if (lf_stream_complete(&r.st)) fprintf(stderr, "%s: cut at %zu of %zu is complete\n", file, at, n);
        LF_CHECK(!lf_stream_complete(&r.st));
        LF_CHECK_INT(r.st.answer.n_tool_calls, 0);
        LF_CHECK(r.deltas.len == r.st.answer.text.len);
        stream_run_free(&r);
        tc->cuts++;
    }
}

/* ----------------------------------- recorded requests, rebuilt */

/* A recorded request in the one form of lf_message: the arrays below own
 * nothing; strings point into the parsed recording. */
typedef struct transcript {
    lf_message m[64];
    lf_tool_call calls[64];
    lf_tool tools[8];
    lf_buf texts[64];  /* Anthropic content flattened, per message */
    size_t n, n_calls, n_tools, n_texts;
    lf_request_params p;
} transcript;

static void transcript_free(transcript *t)
{
    size_t i;

    for (i = 0; i < t->n_texts; i++) lf_buf_free(&t->texts[i]);
}

static lf_buf *transcript_text(transcript *t)
{
    lf_buf *b = &t->texts[t->n_texts++];

    lf_buf_init(b);
    return b;
}

/* Text of content that is a string or an array of text blocks. */
static void flat_text(json_object *content, lf_buf *out)
{
    size_t i;

    if (content && json_object_is_type(content, json_type_string)) {
        lf_buf_append_str(out, json_object_get_string(content));
        return;
    }
    for (i = 0; content && json_object_is_type(content, json_type_array) && i < json_object_array_length(content); i++) {
        json_object *b = json_object_array_get_idx(content, i);

        if (jstr(b, "type") && strcmp(jstr(b, "type"), "text") == 0) lf_buf_append_str(out, jstr(b, "text"));
    }
}

static void transcript_read(transcript *t, lf_api api, json_object *req)
{
    json_object *msgs = jget(req, "messages"), *tools = jget(req, "tools");
    size_t i, k;

    memset(t, 0, sizeof *t);
    for (i = 0; i < json_object_array_length(msgs); i++) {
        json_object *jm = json_object_array_get_idx(msgs, i), *content = jget(jm, "content");
        lf_message *m = &t->m[t->n];

        m->role = jstr(jm, "role");
        if (api == LF_API_OPENAI) {
            json_object *calls = jget(jm, "tool_calls");

            m->content = jstr(jm, "content") ? jstr(jm, "content") : "";
            m->content_len = strlen(m->content);
            m->tool_call_id = jstr(jm, "tool_call_id");
            m->tool_calls = &t->calls[t->n_calls];
            for (k = 0; calls && k < json_object_array_length(calls); k++) {
                json_object *tc = json_object_array_get_idx(calls, k), *fn = jget(tc, "function");
                lf_tool_call *c = &t->calls[t->n_calls++];

                c->id = jstr(tc, "id");
                c->name = jstr(fn, "name");
                c->arguments = jstr(fn, "arguments");
                c->arguments_len = strlen(c->arguments);
                m->n_tool_calls++;
            }
            t->n++;
            continue;
        }
        /* Anthropic: text and tool_use blocks make one message; each
         * tool_result block a tool message of its own. */
        if (content && json_object_is_type(content, json_type_array) && json_object_array_length(content) &&
            strcmp(jstr(json_object_array_get_idx(content, 0), "type"), "tool_result") == 0) {
            for (k = 0; k < json_object_array_length(content); k++) {
                json_object *b = json_object_array_get_idx(content, k);
                lf_buf *txt = transcript_text(t);
                json_object *err = jget(b, "is_error");

                m = &t->m[t->n++];
                flat_text(jget(b, "content"), txt);
                m->role = "tool";
                m->content = lf_buf_cstr(txt);
                m->content_len = txt->len;
                m->tool_call_id = jstr(b, "tool_use_id");
                m->is_error = err && json_object_get_boolean(err);
            }
            continue;
        }
        {
            lf_buf *txt = transcript_text(t);

            flat_text(content, txt);
            m->content = lf_buf_cstr(txt);
            m->content_len = txt->len;
        }
        m->tool_calls = &t->calls[t->n_calls];
        for (k = 0; content && json_object_is_type(content, json_type_array) && k < json_object_array_length(content); k++) {
            json_object *b = json_object_array_get_idx(content, k);
            lf_tool_call *c;

            if (strcmp(jstr(b, "type"), "tool_use") != 0) continue;
            c = &t->calls[t->n_calls++];
            c->id = jstr(b, "id");
            c->name = jstr(b, "name");
            c->arguments = json_object_to_json_string_ext(jget(b, "input"), JSON_C_TO_STRING_PLAIN);
            c->arguments_len = strlen(c->arguments);
            m->n_tool_calls++;
        }
        t->n++;
    }
    for (i = 0; tools && i < json_object_array_length(tools); i++) {
        json_object *jt = json_object_array_get_idx(tools, i);
        json_object *fn = api == LF_API_OPENAI ? jget(jt, "function") : jt;
        json_object *params = jget(fn, api == LF_API_OPENAI ? "parameters" : "input_schema");

        t->tools[i].name = jstr(fn, "name");
        t->tools[i].description = jstr(fn, "description");
        t->tools[i].parameters = params ? json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN) : NULL;
        t->n_tools++;
    }
    t->p.api = api;
    t->p.model = jstr(req, "model");
    t->p.messages = t->m;
    t->p.n_messages = t->n;
    t->p.tools = t->tools;
    t->p.n_tools = t->n_tools;
    t->p.max_tokens = 1000;
}

/* The tool parts of a built OpenAI body: calls followed by their results,
 * ids that Anthropic would accept too. */
static void check_openai_body(json_object *body, const transcript *t)
{
    json_object *msgs = jget(body, "messages");
    size_t i, k, n = msgs ? json_object_array_length(msgs) : 0, calls = 0, results = 0;

    for (i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(msgs, i), *tc = jget(m, "tool_calls");

        for (k = 0; tc && k < json_object_array_length(tc); k++) {
            json_object *c = json_object_array_get_idx(tc, k);
            json_object *r = json_object_array_get_idx(msgs, i + 1 + k);

            calls++;
            LF_CHECK_STR(jstr(c, "type"), "function");
            LF_CHECK(jstr(jget(c, "function"), "arguments") != NULL);
            LF_CHECK(jstr(jget(c, "function"), "name") != NULL);
            /* Its result is in the run right after the message. */
            LF_CHECK(r && strcmp(jstr(r, "role"), "tool") == 0);
        }
        if (jstr(m, "role") && strcmp(jstr(m, "role"), "tool") == 0) {
            results++;
            LF_CHECK(jstr(m, "tool_call_id") != NULL);
        }
    }
    LF_CHECK_INT(calls, t->n_calls);
    LF_CHECK_INT(results, t->n_calls);
    LF_CHECK_INT(json_object_array_length(jget(body, "tools")), t->n_tools);
}

static int id_ok_everywhere(const char *id)
{
    size_t i, n = id ? strlen(id) : 0;

    if (n < 1 || n > LF_WIRE_CALL_ID_MAX) return 0;
    for (i = 0; i < n; i++) {
        char c = id[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* The tool parts of a built Anthropic body: each assistant message's
 * tool_use ids are the tool_result ids of the next (user) message. */
static void check_anthropic_body(json_object *body, const transcript *t)
{
    json_object *msgs = jget(body, "messages");
    size_t i, k, n = msgs ? json_object_array_length(msgs) : 0, calls = 0;

    for (i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(msgs, i), *content = jget(m, "content");
        json_object *next = i + 1 < n ? jget(json_object_array_get_idx(msgs, i + 1), "content") : NULL;
        size_t uses = 0;

        if (!json_object_is_type(content, json_type_array)) continue;
        for (k = 0; k < json_object_array_length(content); k++) {
            json_object *b = json_object_array_get_idx(content, k);
            size_t j, found = 0;

            if (strcmp(jstr(b, "type"), "tool_use") != 0) continue;
            uses++;
            calls++;
            LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, i), "role"), "assistant");
            LF_CHECK(id_ok_everywhere(jstr(b, "id")));
            LF_CHECK(json_object_is_type(jget(b, "input"), json_type_object));
            for (j = 0; next && json_object_is_type(next, json_type_array) && j < json_object_array_length(next); j++) {
                json_object *r = json_object_array_get_idx(next, j);

                if (strcmp(jstr(r, "type"), "tool_result") == 0 && strcmp(jstr(r, "tool_use_id"), jstr(b, "id")) == 0)
                    found++;
            }
            LF_CHECK_INT(found, 1);
        }
        (void)uses;
    }
    LF_CHECK_INT(calls, t->n_calls);
    LF_CHECK_INT(json_object_array_length(jget(body, "tools")), t->n_tools);
    for (i = 0; i < t->n_tools; i++)
        LF_CHECK(json_object_is_type(jget(json_object_array_get_idx(jget(body, "tools"), i), "input_schema"), json_type_object));
}

static int starts_with_result(json_object *m)
{
    json_object *c = jget(m, "content");

    return c && json_object_is_type(c, json_type_array) && json_object_array_length(c) &&
           strcmp(jstr(json_object_array_get_idx(c, 0), "type"), "tool_result") == 0;
}

/* Recorded Anthropic messages with the results of one turn in one user
 * message, as lf_wire sends them (the recording client sent one message
 * per result, which Anthropic joins). A new array; its members shared. */
static json_object *join_results(json_object *msgs)
{
    json_object *out = json_object_new_array(), *into = NULL;
    size_t i, k;

    for (i = 0; i < json_object_array_length(msgs); i++) {
        json_object *m = json_object_array_get_idx(msgs, i);

        if (into && starts_with_result(m)) {
            json_object *c = jget(m, "content");

            for (k = 0; k < json_object_array_length(c); k++)
                json_object_array_add(into, json_object_get(json_object_array_get_idx(c, k)));
            continue;
        }
        into = NULL;
        if (starts_with_result(m)) {
            json_object *joined = json_object_new_object(), *c = jget(m, "content");

            into = json_object_new_array();
            json_object_object_add(joined, "role", json_object_new_string("user"));
            json_object_object_add(joined, "content", into);
            for (k = 0; k < json_object_array_length(c); k++)
                json_object_array_add(into, json_object_get(json_object_array_get_idx(c, k)));
            json_object_array_add(out, joined);
            continue;
        }
        json_object_array_add(out, json_object_get(m));
    }
    return out;
}

/* Built again for its own protocol, the recorded request's tool parts come
 * out as recorded; built for the other protocol, they pair as it wants. */
static void check_rebuilt(const char *file, lf_api api, json_object *req, tool_counts *tc)
{
    transcript t;
    lf_buf out, err;
    json_object *body, *msgs, *rmsgs = api == LF_API_ANTHROPIC ? join_results(jget(req, "messages"))
                                                               : json_object_get(jget(req, "messages"));
    size_t i, j, k;
    int other;

    transcript_read(&t, api, req);
    if (!t.n_calls) {
        transcript_free(&t);
        json_object_put(rmsgs);
        return;
    }
    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_check_transcript(t.m, t.n, &err, NULL), 0);
    for (other = 0; other <= 1; other++) {
        t.p.api = other ? (api == LF_API_OPENAI ? LF_API_ANTHROPIC : LF_API_OPENAI) : api;
        if (lf_wire_build_request(&t.p, &out, &err) != 0) {
            fprintf(stderr, "%s: %s\n", file, lf_buf_cstr(&err));
            LF_CHECK(0);
            continue;
        }
        body = parse(out.ptr, out.len);
        LF_CHECK(body != NULL);
        if (t.p.api == LF_API_OPENAI) check_openai_body(body, &t);
        else check_anthropic_body(body, &t);
        if (!other) {
            /* Against the recording: tools, calls and results as sent. */
            json_object *tools = jget(body, "tools"), *rtools = jget(req, "tools");

            for (i = 0; i < t.n_tools; i++) {
                json_object *a = json_object_array_get_idx(tools, i), *b = json_object_array_get_idx(rtools, i);

                if (api == LF_API_OPENAI) {
                    a = jget(a, "function");
                    b = jget(b, "function");
                }
                LF_CHECK_STR(jstr(a, "name"), jstr(b, "name"));
                LF_CHECK(json_object_equal(jget(a, api == LF_API_OPENAI ? "parameters" : "input_schema"),
                                           jget(b, api == LF_API_OPENAI ? "parameters" : "input_schema")));
            }
            msgs = jget(body, "messages");
            LF_CHECK_INT(json_object_array_length(msgs), json_object_array_length(rmsgs));
            for (i = 0; i < json_object_array_length(msgs) && i < json_object_array_length(rmsgs); i++) {
                json_object *a = json_object_array_get_idx(msgs, i), *b = json_object_array_get_idx(rmsgs, i);
                json_object *ac = jget(a, "content"), *bc = jget(b, "content");

                LF_CHECK_STR(jstr(a, "role"), jstr(b, "role"));
                if (api == LF_API_OPENAI) {
                    json_object *acalls = jget(a, "tool_calls"), *bcalls = jget(b, "tool_calls");

                    if (jstr(b, "tool_call_id")) LF_CHECK_STR(jstr(a, "tool_call_id"), jstr(b, "tool_call_id"));
                    LF_CHECK_STR(jstr(a, "content") ? jstr(a, "content") : "", jstr(b, "content") ? jstr(b, "content") : "");
                    LF_CHECK_INT(acalls ? json_object_array_length(acalls) : 0, bcalls ? json_object_array_length(bcalls) : 0);
                    for (k = 0; acalls && bcalls && k < json_object_array_length(acalls); k++) {
                        json_object *x = json_object_array_get_idx(acalls, k), *y = json_object_array_get_idx(bcalls, k);

                        LF_CHECK_STR(jstr(x, "id"), jstr(y, "id"));
                        LF_CHECK_STR(jstr(jget(x, "function"), "name"), jstr(jget(y, "function"), "name"));
                        LF_CHECK_STR(jstr(jget(x, "function"), "arguments"), jstr(jget(y, "function"), "arguments"));
                    }
                    continue;
                }
                /* Anthropic: the same blocks, text flattened. */
                if (json_object_is_type(bc, json_type_array)) {
                    lf_buf at, bt;

                    lf_buf_init(&at);
                    lf_buf_init(&bt);
                    flat_text(ac, &at);
                    flat_text(bc, &bt);
                    LF_CHECK(at.len == bt.len && memcmp(lf_buf_cstr(&at), lf_buf_cstr(&bt), at.len) == 0);
                    lf_buf_free(&at);
                    lf_buf_free(&bt);
                    for (j = 0, k = 0; j < json_object_array_length(bc); j++) {
                        json_object *y = json_object_array_get_idx(bc, j), *x;

                        if (strcmp(jstr(y, "type"), "text") == 0) continue;
                        while (ac && json_object_is_type(ac, json_type_array) && k < json_object_array_length(ac) &&
                               strcmp(jstr(json_object_array_get_idx(ac, k), "type"), "text") == 0)
                            k++;
                        x = json_object_is_type(ac, json_type_array) ? json_object_array_get_idx(ac, k++) : NULL;
                        LF_CHECK(x != NULL);
                        if (!x) break;
                        LF_CHECK_STR(jstr(x, "type"), jstr(y, "type"));
                        if (strcmp(jstr(y, "type"), "tool_use") == 0) {
                            LF_CHECK_STR(jstr(x, "id"), jstr(y, "id"));
                            LF_CHECK_STR(jstr(x, "name"), jstr(y, "name"));
                            LF_CHECK(json_object_equal(jget(x, "input"), jget(y, "input")));
                        } else {
                            lf_buf xt, yt;

                            lf_buf_init(&xt);
                            lf_buf_init(&yt);
                            flat_text(jget(x, "content"), &xt);
                            flat_text(jget(y, "content"), &yt);
                            LF_CHECK_STR(jstr(x, "tool_use_id"), jstr(y, "tool_use_id"));
                            LF_CHECK(xt.len == yt.len && memcmp(lf_buf_cstr(&xt), lf_buf_cstr(&yt), xt.len) == 0);
                            lf_buf_free(&xt);
                            lf_buf_free(&yt);
                        }
                    }
                } else {
                    LF_CHECK_STR(jstr(a, "content"), jstr(b, "content"));
                }
            }
            tc->rebuilt++;
        } else {
            tc->crossed++;
        }
        json_object_put(body);
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
    transcript_free(&t);
    json_object_put(rmsgs);
}

static void check_file(const char *dir, const char *name, tool_counts *tc)
{
    char path[4096];
    json_object *root, *its;
    size_t i;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    root = json_object_from_file(path);
    its = jget(root, "interactions");
    LF_CHECK(its != NULL);
    for (i = 0; its && i < json_object_array_length(its); i++) {
        json_object *it = json_object_array_get_idx(its, i), *resp = jget(it, "response");
        json_object *req = parse(jstr(jget(it, "request"), "body"), strlen(jstr(jget(it, "request"), "body")));
        json_object *next = NULL;
        lf_api api = strcmp(jstr(jget(it, "request"), "api"), "anthropic") == 0 ? LF_API_ANTHROPIC : LF_API_OPENAI;
        const char *body = jstr(resp, "body"), *ctype = jstr(jget(resp, "headers"), "content-type");
        size_t n = strlen(body);
        int streamed = ctype && strstr(ctype, "event-stream") != NULL;
        want w;
        stream_run r;
        lf_answer plain, *a;
        lf_wire_error err;

        if (i + 1 < json_object_array_length(its)) {
            json_object *nit = json_object_array_get_idx(its, i + 1);

            next = parse(jstr(jget(nit, "request"), "body"), strlen(jstr(jget(nit, "request"), "body")));
        }
        want_init(&w);
        lf_answer_init(&plain);
        lf_wire_error_init(&err);
        if (streamed) {
            naive_stream(api, body, n, &w);
            stream_run_body(&r, api, body, n, 7);
            LF_CHECK(lf_stream_complete(&r.st));
            LF_CHECK_INT(r.n_invalid + r.n_error + r.n_bad_delta, 0);
            /* Every delta is text: no piece of the arguments among them. */
            LF_CHECK(r.deltas.len == w.text.len && memcmp(lf_buf_cstr(&r.deltas), lf_buf_cstr(&w.text), w.text.len) == 0);
            a = &r.st.answer;
            tc->streams++;
            tc->streamed_calls += (int)a->n_tool_calls;
            if (w.n) check_cuts(name, api, body, n, tc);
        } else {
            naive_plain(api, body, n, &w);
            LF_CHECK_INT(lf_wire_parse_response(api, body, n, &plain, &err), LF_WIRE_OK);
            CHECK_BUF(plain.text, lf_buf_cstr(&w.text));
            a = &plain;
            tc->answers++;
        }
        check_calls(name, a, &w);
        tc->calls += (int)a->n_tool_calls;
        if (next) check_against_next(name, api, a, json_object_array_get_idx(jget(next, "messages"),
                                                                          json_object_array_length(jget(req, "messages"))));
        check_rebuilt(name, api, req, tc);
        if (streamed) stream_run_free(&r);
        lf_answer_free(&plain);
        lf_wire_error_free(&err);
        want_free(&w);
        json_object_put(req);
        json_object_put(next);
    }
    json_object_put(root);
    tc->files++;
}

static void test_recorded(void)
{
    char dir[4096];
    const char *base = getenv("LF_FIXTURES");
    DIR *d;
    struct dirent *de;
    tool_counts tc;

    memset(&tc, 0, sizeof tc);
    snprintf(dir, sizeof dir, "%s/function_calling", base && *base ? base : "spec/fixtures/recorded");
    d = opendir(dir);
    LF_CHECK(d != NULL);
    if (!d) return;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) check_file(dir, de->d_name, &tc);
    }
    closedir(d);
    printf("function calling: %d files, %d answers and %d streams parsed, %d tool calls (%d streamed), "
           "%d cut streams, %d requests rebuilt, %d rendered for the other protocol\n",
           tc.files, tc.answers, tc.streams, tc.calls, tc.streamed_calls, tc.cuts, tc.rebuilt, tc.crossed);
    /* Floors, so that a broken walk cannot pass silently. */
    LF_CHECK(tc.files >= 100);
    LF_CHECK(tc.streams >= 40);
    LF_CHECK(tc.streamed_calls >= 15);
    LF_CHECK(tc.calls >= 120);
    LF_CHECK(tc.cuts >= 40);
    LF_CHECK(tc.rebuilt >= 100);
    LF_CHECK_INT(tc.crossed, tc.rebuilt);
}


/* ------------------------------------------------- hand-written cases */

static json_object *build(const lf_request_params *p)
{
    lf_buf out, err;
    json_object *o = NULL;
    int rc;

    lf_buf_init(&out);
    lf_buf_init(&err);
    rc = lf_wire_build_request(p, &out, &err);
    if (rc != 0) fprintf(stderr, "build failed: %s\n", lf_buf_cstr(&err));
    LF_CHECK_INT(rc, 0);
    if (rc == 0) {
        LF_CHECK(utf8_valid(out.ptr, out.len));
        o = parse(out.ptr, out.len);
        LF_CHECK(o != NULL);
    }
    lf_buf_free(&out);
    lf_buf_free(&err);
    return o;
}

#define TEXT(s) .content = (s), .content_len = sizeof(s) - 1

static const lf_tool weather_tools[2] = {
    { .name = "weather", .description = "Current weather for a city",
      .parameters = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}" },
    { .name = "clock" },
};

/* A long id from one provider, with bytes the other refuses. */
#define ODD_ID "call/7:\xC3\xA9t\xC3\xA9-0123456789012345678901234567890123456789"

static const lf_tool_call two_calls[2] = {
    { .id = "toolu_01A", .name = "weather", .arguments = "{\"city\":\"Paris\"}", .arguments_len = 16 },
    { .id = ODD_ID, .name = "clock" },
};

static void params_for(lf_request_params *p, lf_api api, const lf_message *m, size_t n)
{
    memset(p, 0, sizeof *p);
    p->api = api;
    p->model = "m";
    p->messages = m;
    p->n_messages = n;
    p->tools = weather_tools;
    p->n_tools = 2;
}

static void test_render_openai(void)
{
    const lf_message m[] = {
        { .role = "user", TEXT("Weather and time?") },
        { .role = "assistant", .tool_calls = two_calls, .n_tool_calls = 2 },
        { .role = "tool", TEXT("21 C"), .tool_call_id = "toolu_01A" },
        { .role = "tool", TEXT("no clock"), .tool_call_id = ODD_ID, .is_error = 1 },
        { .role = "assistant", TEXT("It is 21 C.") },
    };
    lf_request_params p;
    lf_buf sent;
    json_object *o, *msgs, *calls, *tools;

    lf_buf_init(&sent);
    LF_CHECK_INT(lf_wire_call_id(ODD_ID, strlen(ODD_ID), &sent), 0);
    params_for(&p, LF_API_OPENAI, m, 5);
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    p.has_parallel_tool_calls = 1;
    p.parallel_tool_calls = 0;
    o = build(&p);
    msgs = jget(o, "messages");
    LF_CHECK_INT(json_object_array_length(msgs), 5);
    /* The assistant's calls: content null, arguments as their text, {} when none. */
    LF_CHECK(jget(json_object_array_get_idx(msgs, 1), "content") == NULL);
    LF_CHECK(json_object_object_get_ex(json_object_array_get_idx(msgs, 1), "content", NULL));
    calls = jget(json_object_array_get_idx(msgs, 1), "tool_calls");
    LF_CHECK_INT(json_object_array_length(calls), 2);
    LF_CHECK_STR(jstr(json_object_array_get_idx(calls, 0), "id"), "toolu_01A");
    LF_CHECK_STR(jstr(json_object_array_get_idx(calls, 0), "type"), "function");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(calls, 0), "function"), "name"), "weather");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(calls, 0), "function"), "arguments"), "{\"city\":\"Paris\"}");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(calls, 1), "function"), "arguments"), "{}");
    /* The odd id, mapped, in the call and in its result alike. */
    LF_CHECK_STR(jstr(json_object_array_get_idx(calls, 1), "id"), lf_buf_cstr(&sent));
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 3), "tool_call_id"), lf_buf_cstr(&sent));
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 2), "role"), "tool");
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 2), "tool_call_id"), "toolu_01A");
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 2), "content"), "21 C");
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 3), "content"), "no clock");
    LF_CHECK(jget(json_object_array_get_idx(msgs, 3), "is_error") == NULL);   /* OpenAI has none */
    tools = jget(o, "tools");
    LF_CHECK_INT(json_object_array_length(tools), 2);
    LF_CHECK_STR(jstr(json_object_array_get_idx(tools, 0), "type"), "function");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(tools, 0), "function"), "description"), "Current weather for a city");
    LF_CHECK_STR(jstr(jget(jget(jget(json_object_array_get_idx(tools, 0), "function"), "parameters"), "properties"), "city") == NULL
                     ? "object" : "?", "object");
    LF_CHECK(json_object_is_type(jget(jget(jget(jget(json_object_array_get_idx(tools, 0), "function"), "parameters"),
                                          "properties"), "city"), json_type_object));
    LF_CHECK(jget(jget(json_object_array_get_idx(tools, 1), "function"), "description") == NULL);
    LF_CHECK_STR(jstr(jget(jget(json_object_array_get_idx(tools, 1), "function"), "parameters"), "type"), "object");
    LF_CHECK_STR(jstr(o, "tool_choice"), "required");
    LF_CHECK(json_object_is_type(jget(o, "parallel_tool_calls"), json_type_boolean));
    LF_CHECK(!json_object_get_boolean(jget(o, "parallel_tool_calls")));
    json_object_put(o);

    /* A named tool; auto; none; no choice and no parallel flag when unset. */
    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "clock";
    p.has_parallel_tool_calls = 0;
    o = build(&p);
    LF_CHECK_STR(jstr(jget(jget(o, "tool_choice"), "function"), "name"), "clock");
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "type"), "function");
    LF_CHECK(jget(o, "parallel_tool_calls") == NULL);
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_NONE;
    o = build(&p);
    LF_CHECK_STR(jstr(o, "tool_choice"), "none");
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_UNSET;
    o = build(&p);
    LF_CHECK(jget(o, "tool_choice") == NULL);
    json_object_put(o);
    /* No tools: neither tools nor a choice nor the parallel flag. */
    p.n_messages = 1;
    p.n_tools = 0;
    p.tool_choice = LF_TOOL_CHOICE_NONE;
    p.has_parallel_tool_calls = 1;
    o = build(&p);
    LF_CHECK(jget(o, "tools") == NULL && jget(o, "tool_choice") == NULL && jget(o, "parallel_tool_calls") == NULL);
    json_object_put(o);
    lf_buf_free(&sent);
}

static void test_render_anthropic(void)
{
    const lf_tool_call bad_args[1] = { { .id = "c3", .name = "weather", .arguments = "{\"city\": \"Par", .arguments_len = 13 } };
    const lf_message m[] = {
        { .role = "system", TEXT("Be brief.") },
        { .role = "user", TEXT("Weather and time?") },
        { .role = "assistant", TEXT("Looking."), .tool_calls = two_calls, .n_tool_calls = 2 },
        { .role = "tool", TEXT("21 C"), .tool_call_id = "toolu_01A" },
        { .role = "tool", TEXT("no clock"), .tool_call_id = ODD_ID, .is_error = 1 },
        { .role = "user", TEXT("And tomorrow?") },
        { .role = "assistant", .tool_calls = bad_args, .n_tool_calls = 1 },
        { .role = "tool", .tool_call_id = "c3", .is_error = 1 },
    };
    lf_request_params p;
    lf_buf sent;
    json_object *o, *msgs, *c, *b, *tools;

    lf_buf_init(&sent);
    LF_CHECK_INT(lf_wire_call_id(ODD_ID, strlen(ODD_ID), &sent), 0);
    params_for(&p, LF_API_ANTHROPIC, m, 8);
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    p.has_parallel_tool_calls = 1;
    p.parallel_tool_calls = 1;
    o = build(&p);
    LF_CHECK_STR(jstr(o, "system"), "Be brief.");
    msgs = jget(o, "messages");
    LF_CHECK_INT(json_object_array_length(msgs), 6);
    /* The assistant: its text, then a tool_use block per call. */
    c = jget(json_object_array_get_idx(msgs, 1), "content");
    LF_CHECK_INT(json_object_array_length(c), 3);
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 0), "text"), "Looking.");
    b = json_object_array_get_idx(c, 1);
    LF_CHECK_STR(jstr(b, "type"), "tool_use");
    LF_CHECK_STR(jstr(b, "id"), "toolu_01A");
    LF_CHECK_STR(jstr(jget(b, "input"), "city"), "Paris");
    b = json_object_array_get_idx(c, 2);
    LF_CHECK_STR(jstr(b, "id"), lf_buf_cstr(&sent));
    LF_CHECK(json_object_is_type(jget(b, "input"), json_type_object) && json_object_object_length(jget(b, "input")) == 0);
    /* Both results in one user message, is_error on the failed one. */
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 2), "role"), "user");
    c = jget(json_object_array_get_idx(msgs, 2), "content");
    LF_CHECK_INT(json_object_array_length(c), 2);
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 0), "type"), "tool_result");
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 0), "tool_use_id"), "toolu_01A");
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 0), "content"), "21 C");
    LF_CHECK(jget(json_object_array_get_idx(c, 0), "is_error") == NULL);
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 1), "tool_use_id"), lf_buf_cstr(&sent));
    LF_CHECK(json_object_get_boolean(jget(json_object_array_get_idx(c, 1), "is_error")));
    LF_CHECK_STR(jstr(json_object_array_get_idx(msgs, 3), "content"), "And tomorrow?");
    /* No text: no empty text block; arguments that are not an object: {}. */
    c = jget(json_object_array_get_idx(msgs, 4), "content");
    LF_CHECK_INT(json_object_array_length(c), 1);
    LF_CHECK_STR(jstr(json_object_array_get_idx(c, 0), "type"), "tool_use");
    LF_CHECK_INT(json_object_object_length(jget(json_object_array_get_idx(c, 0), "input")), 0);
    c = jget(json_object_array_get_idx(msgs, 5), "content");
    LF_CHECK(jget(json_object_array_get_idx(c, 0), "content") == NULL);
    tools = jget(o, "tools");
    LF_CHECK_STR(jstr(json_object_array_get_idx(tools, 0), "name"), "weather");
    LF_CHECK_STR(jstr(json_object_array_get_idx(tools, 0), "description"), "Current weather for a city");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(tools, 0), "input_schema"), "type"), "object");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(tools, 1), "input_schema"), "type"), "object");
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "type"), "any");
    LF_CHECK(jget(jget(o, "tool_choice"), "disable_parallel_tool_use") == NULL);   /* parallel on */
    json_object_put(o);

    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "weather";
    p.parallel_tool_calls = 0;
    o = build(&p);
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "type"), "tool");
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "name"), "weather");
    LF_CHECK(json_object_get_boolean(jget(jget(o, "tool_choice"), "disable_parallel_tool_use")));
    json_object_put(o);
    /* Parallel calls off with no choice: auto, serial. */
    p.tool_choice = LF_TOOL_CHOICE_UNSET;
    o = build(&p);
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "type"), "auto");
    LF_CHECK(json_object_get_boolean(jget(jget(o, "tool_choice"), "disable_parallel_tool_use")));
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_NONE;
    o = build(&p);
    LF_CHECK_STR(jstr(jget(o, "tool_choice"), "type"), "none");
    LF_CHECK(jget(jget(o, "tool_choice"), "disable_parallel_tool_use") == NULL);
    json_object_put(o);
    p.has_parallel_tool_calls = 0;
    p.tool_choice = LF_TOOL_CHOICE_UNSET;
    o = build(&p);
    LF_CHECK(jget(o, "tool_choice") == NULL);
    json_object_put(o);
    lf_buf_free(&sent);
}

static void expect_refused(const lf_request_params *p, int want_rc, const char *why)
{
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(p, &out, &err), want_rc);
    LF_CHECK_INT(out.len, 0);
    if (!strstr(lf_buf_cstr(&err), why)) fprintf(stderr, "error \"%s\" lacks \"%s\"\n", lf_buf_cstr(&err), why);
    LF_CHECK(strstr(lf_buf_cstr(&err), why) != NULL);
    LF_CHECK(utf8_valid(lf_buf_cstr(&err), err.len));
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void test_render_refuses(void)
{
    const lf_message hi[1] = { { .role = "user", TEXT("hi") } };
    const lf_message calls[3] = {
        { .role = "user", TEXT("hi") },
        { .role = "assistant", .tool_calls = two_calls, .n_tool_calls = 1 },
        { .role = "tool", TEXT("21 C"), .tool_call_id = "toolu_01A" },
    };
    lf_tool bad[2] = { { .name = "weather" }, { .name = "weather" } };
    lf_request_params p;

    params_for(&p, LF_API_OPENAI, hi, 1);
    bad[1].name = "has space";
    p.tools = bad;
    expect_refused(&p, -1, "has space");
    bad[1].name = "weather";
    expect_refused(&p, -1, "given twice");
    bad[1].name = "other";
    bad[1].parameters = "[1]";
    expect_refused(&p, -1, "parameters are not");
    bad[1].parameters = "{\"type\":";
    expect_refused(&p, -1, "parameters are not");
    params_for(&p, LF_API_OPENAI, hi, 1);
    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "nope";
    expect_refused(&p, -1, "\"nope\"");
    p.tool_choice_name = NULL;
    expect_refused(&p, -1, "not one of the tools");
    p.n_tools = 0;
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    expect_refused(&p, -1, "required needs tools");
    p.tool_choice = (lf_tool_choice)42;
    expect_refused(&p, -1, "unknown tool_choice");
    /* Anthropic: a schema is a forced tool call already; calls need tools. */
    LF_CHECK(lf_wire_schema_with_tools_refusal(LF_API_ANTHROPIC) != NULL);
    LF_CHECK(lf_wire_schema_with_tools_refusal(LF_API_OPENAI) == NULL);
    params_for(&p, LF_API_ANTHROPIC, hi, 1);
    p.schema = "{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false}";
    expect_refused(&p, -1, "a schema and tools cannot go in one request to Anthropic");
    params_for(&p, LF_API_ANTHROPIC, calls, 3);
    p.n_tools = 0;
    expect_refused(&p, -1, "needs its tools");
    /* OpenAI takes a schema beside tools. */
    params_for(&p, LF_API_OPENAI, calls, 3);
    p.schema = "{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false}";
    json_object_put(build(&p));
}

/* The transcript's invariant: refused before any body, naming the call. */
static void expect_broken(const lf_message *m, size_t n, const char *id, const char *why)
{
    lf_buf err, cid;
    lf_request_params p;
    int api;

    lf_buf_init(&err);
    lf_buf_init(&cid);
    LF_CHECK_INT(lf_wire_check_transcript(m, n, &err, &cid), LF_WIRE_BAD_TRANSCRIPT);
    if (!strstr(lf_buf_cstr(&err), why)) fprintf(stderr, "error \"%s\" lacks \"%s\"\n", lf_buf_cstr(&err), why);
    LF_CHECK(strstr(lf_buf_cstr(&err), why) != NULL);
    LF_CHECK_STR(lf_buf_cstr(&cid), id);
    if (id[0] && !strstr(lf_buf_cstr(&err), id)) fprintf(stderr, "error \"%s\" lacks the id %s\n", lf_buf_cstr(&err), id);
    if (id[0]) LF_CHECK(strstr(lf_buf_cstr(&err), id) != NULL);
    for (api = 0; api <= 1; api++) {
        params_for(&p, (lf_api)api, m, n);
        expect_refused(&p, LF_WIRE_BAD_TRANSCRIPT, why);
    }
    lf_buf_free(&err);
    lf_buf_free(&cid);
}

static void test_invariant(void)
{
    const lf_tool_call c1[1] = { { .id = "c1", .name = "weather" } };
    const lf_tool_call c12[2] = { { .id = "c1", .name = "weather" }, { .id = "c2", .name = "clock" } };
    const lf_tool_call noid[1] = { { .id = "", .name = "weather" } };
    const lf_tool_call noname[1] = { { .id = "c9", .name = "" } };
    const lf_tool_call c1again[1] = { { .id = "c1", .name = "clock" } };
    lf_tool_call clash[1] = { { .id = NULL, .name = "clock" } };
    lf_buf mapped;
    const lf_message u = { .role = "user", TEXT("hi") };
    const lf_message a1 = { .role = "assistant", .tool_calls = c1, .n_tool_calls = 1 };
    const lf_message a12 = { .role = "assistant", .tool_calls = c12, .n_tool_calls = 2 };
    const lf_message r1 = { .role = "tool", TEXT("ok"), .tool_call_id = "c1" };
    const lf_message r2 = { .role = "tool", TEXT("ok"), .tool_call_id = "c2" };
    const lf_message rx = { .role = "tool", TEXT("ok"), .tool_call_id = "cx" };
    const lf_message rnone = { .role = "tool", TEXT("ok") };
    const lf_message sys = { .role = "system", TEXT("be brief") };
    const lf_message text = { .role = "assistant", TEXT("done") };

    {   /* Whole: results in any order, then text. */
        const lf_message ok[5] = { u, a12, r2, r1, text };
        LF_CHECK_INT(lf_wire_check_transcript(ok, 5, NULL, NULL), 0);
    }
    {   const lf_message m[2] = { u, a1 };
        expect_broken(m, 2, "c1", "has no result");
    }
    {   const lf_message m[4] = { u, a12, r1, text };
        expect_broken(m, 4, "c2", "has no result");
    }
    {   /* A user message between the call and its result. */
        const lf_message m[4] = { u, a1, u, r1 };
        expect_broken(m, 4, "c1", "has no result");
    }
    {   /* A system message too: OpenAI wants the results right after the call. */
        const lf_message m[4] = { u, a1, sys, r1 };
        expect_broken(m, 4, "c1", "has no result");
    }
    {   const lf_message m[2] = { u, r1 };
        expect_broken(m, 2, "c1", "does not follow");
    }
    {   const lf_message m[4] = { u, a1, r1, r1 };
        expect_broken(m, 4, "c1", "second result");
    }
    {   const lf_message m[4] = { u, a1, r1, rx };
        expect_broken(m, 4, "cx", "answers no call");
    }
    {   const lf_message m[3] = { u, a1, rnone };
        expect_broken(m, 3, "", "without a tool_call_id");
    }
    {   const lf_message a = { .role = "assistant", .tool_calls = noid, .n_tool_calls = 1 };
        const lf_message m[2] = { u, a };
        expect_broken(m, 2, "", "has no id");
    }
    {   const lf_message a = { .role = "assistant", .tool_calls = noname, .n_tool_calls = 1 };
        const lf_message r = { .role = "tool", TEXT("x"), .tool_call_id = "c9" };
        const lf_message m[3] = { u, a, r };
        expect_broken(m, 3, "c9", "has no name");
    }
    {   /* The same id in two turns. */
        const lf_message a = { .role = "assistant", .tool_calls = c1again, .n_tool_calls = 1 };
        const lf_message m[6] = { u, a1, r1, u, a, r1 };
        expect_broken(m, 6, "c1", "used twice");
    }
    {   /* Two ids sent as the same text: one is the other's mapping. */
        lf_buf_init(&mapped);
        LF_CHECK_INT(lf_wire_call_id("c.1", 3, &mapped), 0);
        clash[0].id = lf_buf_cstr(&mapped);
        {
            const lf_tool_call odd[1] = { { .id = "c.1", .name = "weather" } };
            const lf_message a = { .role = "assistant", .tool_calls = odd, .n_tool_calls = 1 };
            const lf_message b = { .role = "assistant", .tool_calls = clash, .n_tool_calls = 1 };
            const lf_message ra = { .role = "tool", TEXT("x"), .tool_call_id = "c.1" };
            const lf_message rb = { .role = "tool", TEXT("x"), .tool_call_id = clash[0].id };
            const lf_message m[5] = { a, ra, u, b, rb };
            expect_broken(m, 5, clash[0].id, "sent as another call's id");
        }
        lf_buf_free(&mapped);
    }
    {   const lf_message bad = { .role = "user", TEXT("hi"), .tool_calls = c1, .n_tool_calls = 1 };
        const lf_message m[2] = { bad, r1 };
        expect_broken(m, 2, "c1", "only an assistant");
    }
}

static void test_call_id(void)
{
    lf_buf a, b;
    char forty[41], forty1[42];
    size_t i;

    lf_buf_init(&a);
    lf_buf_init(&b);
    memset(forty, 'x', 40);
    forty[40] = '\0';
    memset(forty1, 'x', 41);
    forty1[41] = '\0';
    /* Valid for both: as it is. */
    LF_CHECK_INT(lf_wire_call_id("call_N2fJZh6fGguUrjbTlDD9mkbh", 29, &a), 0);
    CHECK_BUF(a, "call_N2fJZh6fGguUrjbTlDD9mkbh");
    LF_CHECK_INT(lf_wire_call_id(forty, 40, &a), 0);
    CHECK_BUF(a, forty);
    /* Too long, odd bytes, empty: a head and a hash, at most 40, valid. */
    LF_CHECK_INT(lf_wire_call_id(forty1, 41, &a), 0);
    LF_CHECK(a.len <= LF_WIRE_CALL_ID_MAX && id_ok_everywhere(lf_buf_cstr(&a)));
    LF_CHECK(strncmp(lf_buf_cstr(&a), "xxxxxxxxxxxxxxxxxxxxxxx_", 24) == 0);
    LF_CHECK_INT(lf_wire_call_id(forty, 40, &b), 0);
    LF_CHECK(!buf_is(&a, lf_buf_cstr(&b)));
    LF_CHECK_INT(lf_wire_call_id(ODD_ID, strlen(ODD_ID), &a), 0);
    LF_CHECK(a.len == LF_WIRE_CALL_ID_MAX && id_ok_everywhere(lf_buf_cstr(&a)));
    LF_CHECK(strncmp(lf_buf_cstr(&a), "call_7___t__-", 13) == 0);
    /* The same id, the same text; one byte more, another. */
    LF_CHECK_INT(lf_wire_call_id(ODD_ID, strlen(ODD_ID), &b), 0);
    CHECK_BUF(b, lf_buf_cstr(&a));
    LF_CHECK_INT(lf_wire_call_id(ODD_ID "9", strlen(ODD_ID) + 1, &b), 0);
    LF_CHECK(!buf_is(&b, lf_buf_cstr(&a)));
    LF_CHECK_INT(lf_wire_call_id("a.b", 3, &a), 0);
    LF_CHECK_INT(lf_wire_call_id("a:b", 3, &b), 0);
    LF_CHECK(!buf_is(&a, lf_buf_cstr(&b)));
    LF_CHECK(strncmp(lf_buf_cstr(&a), "a_b_", 4) == 0 && a.len == 20);
    LF_CHECK_INT(lf_wire_call_id("", 0, &a), 0);
    LF_CHECK(a.len == 17 && lf_buf_cstr(&a)[0] == '_' && id_ok_everywhere(lf_buf_cstr(&a)));
    /* A NUL inside counts: it is not the id cut short. */
    LF_CHECK_INT(lf_wire_call_id("ab\0c", 4, &a), 0);
    LF_CHECK(strncmp(lf_buf_cstr(&a), "ab_c_", 5) == 0);
    for (i = 0; i < 256; i++) {
        char one[2] = { (char)i, 0 };

        LF_CHECK_INT(lf_wire_call_id(one, 1, &a), 0);
        LF_CHECK(id_ok_everywhere(lf_buf_cstr(&a)));
    }
    lf_buf_free(&a);
    lf_buf_free(&b);
}

static int sev(lf_stream_state *s, const char *data, lf_buf *deltas)
{
    lf_sse_event e;
    const char *d = NULL;
    size_t dn = 0;
    int rc;

    memset(&e, 0, sizeof e);
    e.data = data;
    e.data_len = strlen(data);
    rc = lf_stream_event(s, &e, &d, &dn);
    if (deltas && d && dn) lf_buf_append(deltas, d, dn);
    return rc;
}

#define OAI(delta, finish) "{\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" finish "}]}"

static void test_stream_openai(void)
{
    lf_stream_state s;
    lf_buf deltas;

    lf_buf_init(&deltas);
    /* Two calls interleaved by index, a text, pieces of arguments; the
     * second call's index comes first. */
    lf_stream_init(&s, LF_API_OPENAI);
    LF_CHECK_INT(sev(&s, OAI("{\"content\":\"Let me see.\"}", "null"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"clock\",\"arguments\":\"\"}}]}", "null"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"ci\"}}]}", "null"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Par\"}},{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]}", "null"), &deltas), LF_STREAM_CONTINUE);
    /* Nothing is out before the end. */
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    LF_CHECK(!lf_stream_complete(&s));
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"is\\\"}\"}}]}", "null"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{}", "\"tool_calls\""), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK(lf_stream_complete(&s));
    LF_CHECK_INT(s.answer.n_tool_calls, 2);
    CHECK_BUF(s.answer.tool_calls[0].id, "a");
    CHECK_BUF(s.answer.tool_calls[0].name, "weather");
    CHECK_BUF(s.answer.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
    CHECK_BUF(s.answer.tool_calls[1].id, "b");
    CHECK_BUF(s.answer.tool_calls[1].arguments, "{}");
    CHECK_BUF(s.answer.finish_reason, "tool_calls");
    CHECK_BUF(deltas, "Let me see.");
    CHECK_BUF(s.answer.text, "Let me see.");
    /* A piece after the end is ignored; the usage chunk still counts. */
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"junk\"}}]}", "null"), &deltas), LF_STREAM_CONTINUE);
    CHECK_BUF(s.answer.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
    LF_CHECK_INT(sev(&s, "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}", NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(s.answer.output_tokens, 4);
    LF_CHECK_INT(sev(&s, "[DONE]", NULL), LF_STREAM_DONE);
    LF_CHECK_INT(s.answer.n_tool_calls, 2);
    lf_stream_free(&s);

    /* Every call at index 0 with ids of their own; pieces without an
     * index go to the last call; a character split between two pieces;
     * arguments sent as an object; [DONE] without a finish reason. */
    lf_stream_init(&s, LF_API_OPENAI);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"c\\\":\\\"\\u00e9\"}}]}", "null"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"v\",\"arguments\":{\"k\":1}}}]}", "null"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"u\",\"arguments\":\"{\\\"x\\\":\\\"\\u00\"}}]}", "null"), NULL), LF_STREAM_INVALID);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"u\",\"arguments\":\"{\\\"x\\\":\\\"\"}}]}", "null"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"\xE2\x82\"}}]}}]}", NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"\xAC\\\"}\"}}]}}]}", NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]}", "null"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    LF_CHECK_INT(sev(&s, "[DONE]", NULL), LF_STREAM_DONE);
    LF_CHECK_INT(s.answer.n_tool_calls, 3);
    CHECK_BUF(s.answer.tool_calls[0].id, "a");
    CHECK_BUF(s.answer.tool_calls[0].arguments, "{\"c\":\"\xC3\xA9");
    CHECK_BUF(s.answer.tool_calls[1].id, "b");
    CHECK_BUF(s.answer.tool_calls[1].arguments, "{\"k\":1}}");
    CHECK_BUF(s.answer.tool_calls[2].id, "c");
    CHECK_BUF(s.answer.tool_calls[2].arguments, "{\"x\":\"\xE2\x82\xAC\"}");
    lf_stream_free(&s);

    /* More calls than any answer holds: a malformed stream. */
    lf_stream_init(&s, LF_API_OPENAI);
    {
        char data[256];
        int i, rc = LF_STREAM_CONTINUE;

        for (i = 0; i < 1100 && rc == LF_STREAM_CONTINUE; i++) {
            snprintf(data, sizeof data, OAI("{\"tool_calls\":[{\"index\":%d,\"id\":\"c%d\",\"function\":{\"name\":\"w\"}}]}", "null"), i, i);
            rc = sev(&s, data, NULL);
        }
        LF_CHECK_INT(rc, LF_STREAM_INVALID);
        LF_CHECK_INT(i, 1025);
    }
    lf_stream_free(&s);

    /* Cut in the middle of a call: nothing, and the stream is not complete. */
    lf_stream_init(&s, LF_API_OPENAI);
    LF_CHECK_INT(sev(&s, OAI("{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"c\"}}]}", "null"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK(!lf_stream_complete(&s));
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    lf_stream_free(&s);
    lf_buf_free(&deltas);
}

#define ANT(type, rest) "{\"type\":\"" type "\"" rest "}"

static void test_stream_anthropic(void)
{
    lf_stream_state s;
    lf_buf deltas;

    lf_buf_init(&deltas);
    lf_stream_init(&s, LF_API_ANTHROPIC);
    LF_CHECK_INT(sev(&s, ANT("message_start", ",\"message\":{\"id\":\"msg\",\"model\":\"claude\",\"usage\":{\"input_tokens\":9}}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_start", ",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Checking.\"}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_start", ",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"weather\",\"input\":{}}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \"}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_start", ",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"clock\",\"input\":{}}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_stop", ",\"index\":1"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    LF_CHECK_INT(sev(&s, ANT("message_delta", ",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":30}"), &deltas), LF_STREAM_CONTINUE);
    LF_CHECK(lf_stream_complete(&s));
    LF_CHECK_INT(s.answer.n_tool_calls, 2);
    CHECK_BUF(s.answer.tool_calls[0].id, "toolu_1");
    CHECK_BUF(s.answer.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
    CHECK_BUF(s.answer.tool_calls[1].name, "clock");
    CHECK_BUF(s.answer.tool_calls[1].arguments, "{}");
    CHECK_BUF(s.answer.finish_reason, "tool_calls");
    CHECK_BUF(deltas, "Checking.");
    LF_CHECK_INT(sev(&s, ANT("message_stop", ""), &deltas), LF_STREAM_DONE);
    LF_CHECK_INT(s.answer.n_tool_calls, 2);
    lf_stream_free(&s);

    /* Cut before message_delta: nothing. */
    lf_stream_init(&s, LF_API_ANTHROPIC);
    LF_CHECK_INT(sev(&s, ANT("content_block_start", ",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"weather\",\"input\":{}}"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_stop", ",\"index\":0"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK(!lf_stream_complete(&s));
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    lf_stream_free(&s);

    /* A schema request: the forced call is the text, not a call to run. */
    lf_stream_init(&s, LF_API_ANTHROPIC);
    s.tool_input = 1;
    LF_CHECK_INT(sev(&s, ANT("content_block_start", ",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"answer\",\"input\":{}}"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("content_block_delta", ",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(sev(&s, ANT("message_delta", ",\"delta\":{\"stop_reason\":\"tool_use\"}"), NULL), LF_STREAM_CONTINUE);
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    CHECK_BUF(s.answer.text, "{}");
    CHECK_BUF(s.answer.finish_reason, "tool_use");
    lf_stream_free(&s);
    lf_buf_free(&deltas);
}

static void test_plain_answers(void)
{
    lf_answer a;
    lf_wire_error e;
    const char *b;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    /* Arguments as an object (a server that sends them so), an entry
     * that is not a function, an older server's function_call. */
    b = "{\"choices\":[{\"index\":0,\"message\":{\"content\":null,\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\","
        "\"function\":{\"name\":\"w\",\"arguments\":{\"k\":[1,2]}}},{\"id\":\"z\",\"type\":\"code\"},"
        "{\"id\":\"b\",\"function\":{\"name\":\"v\"}}]},\"finish_reason\":\"tool_calls\"}]}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_OPENAI, b, strlen(b), &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_tool_calls, 2);
    CHECK_BUF(a.tool_calls[0].arguments, "{\"k\":[1,2]}");
    CHECK_BUF(a.tool_calls[1].id, "b");
    CHECK_BUF(a.tool_calls[1].arguments, "{}");
    b = "{\"choices\":[{\"index\":0,\"message\":{\"content\":null,\"function_call\":{\"name\":\"w\",\"arguments\":\"{}\"}},"
        "\"finish_reason\":\"function_call\"}]}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_OPENAI, b, strlen(b), &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_tool_calls, 1);
    CHECK_BUF(a.tool_calls[0].id, "");
    CHECK_BUF(a.tool_calls[0].name, "w");
    CHECK_BUF(a.finish_reason, "tool_calls");
    /* The next answer starts empty. */
    b = "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_OPENAI, b, strlen(b), &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_tool_calls, 0);
    /* A schema answer's forced call stays its text. */
    b = "{\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"answer\",\"input\":{\"a\":1}}],\"stop_reason\":\"tool_use\"}";
    LF_CHECK_INT(lf_wire_parse_tool_response(LF_API_ANTHROPIC, b, strlen(b), &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_tool_calls, 0);
    CHECK_BUF(a.finish_reason, "tool_use");
    CHECK_BUF(a.text, "{\"a\":1}");
    LF_CHECK_INT(lf_wire_parse_response(LF_API_ANTHROPIC, b, strlen(b), &a, &e), LF_WIRE_OK);
    LF_CHECK_INT(a.n_tool_calls, 1);
    CHECK_BUF(a.tool_calls[0].arguments, "{\"a\":1}");
    CHECK_BUF(a.finish_reason, "tool_calls");
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

int main(void)
{
    LF_RUN(test_recorded);
    LF_RUN(test_render_openai);
    LF_RUN(test_render_anthropic);
    LF_RUN(test_render_refuses);
    LF_RUN(test_invariant);
    LF_RUN(test_call_id);
    LF_RUN(test_stream_openai);
    LF_RUN(test_stream_anthropic);
    LF_RUN(test_plain_answers);
    return lf_test_summary("wire_tools");
}
