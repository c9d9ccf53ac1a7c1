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

#define MAX_CALLS 16

/* ---------------------------------------------------------- helpers */

static json_object *jget(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object)) return NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *jstr(json_object *o, const char *key)
{
    json_object *v = jget(o, key);

    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static json_object *parse(const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);

    json_tokener_free(tok);
    return o;
}

/* Two JSON texts hold the same value. */
static int json_same(const char *a, size_t an, const char *b, size_t bn)
{
    json_object *x = parse(a, an), *y = parse(b, bn);
    int same = x && y && json_object_equal(x, y);

    json_object_put(x);
    json_object_put(y);
    return same;
}

static int buf_is(const lf_buf *b, const char *s)
{
    return b->len == strlen(s) && memcmp(lf_buf_cstr(b), s, b->len) == 0;
}

#define CHECK_BUF(b, s) do { \
    if (!buf_is(&(b), (s))) { \
        fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, (s), lf_buf_cstr(&(b))); \
        lf_test_current_failed = 1; \
    } \
} while (0)

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

/* ------------------------------------------------------ stream driver */

typedef struct stream_run {
    lf_stream_state st;
    lf_buf deltas;
    int n_invalid, n_error;
} stream_run;

static int stream_cb(void *ud, const lf_sse_event *ev)
{
    stream_run *r = ud;
    const char *d = NULL;
    size_t dn = 0;
    int rc = lf_stream_event(&r->st, ev, &d, &dn);

    if (rc == LF_STREAM_INVALID) r->n_invalid++;
    if (rc == LF_STREAM_ERROR) r->n_error++;
    if (d && dn) lf_buf_append(&r->deltas, d, dn);
    return 0;
}

static void stream_run_body(stream_run *r, lf_api api, const char *body, size_t n, size_t step)
{
    lf_sse_parser p;
    size_t off = 0;

    memset(r, 0, sizeof *r);
    lf_stream_init(&r->st, api);
    lf_buf_init(&r->deltas);
    lf_sse_init(&p);
    if (!step) step = n ? n : 1;
    while (off < n) {
        size_t k = n - off < step ? n - off : step;

        lf_sse_feed(&p, body + off, k, stream_cb, r);
        off += k;
    }
    lf_sse_finish(&p, stream_cb, r);
    lf_sse_free(&p);
}

static void stream_run_free(stream_run *r)
{
    lf_stream_free(&r->st);
    lf_buf_free(&r->deltas);
}

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
            LF_CHECK_INT(r.n_invalid + r.n_error, 0);
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

int main(void)
{
    LF_RUN(test_recorded);
    return lf_test_summary("wire_tools");
}
