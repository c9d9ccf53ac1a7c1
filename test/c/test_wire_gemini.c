/* Gemini generateContent and Vertex AI in the wire layer: every recorded
 * Gemini and Vertex AI exchange (spec/fixtures/recorded/gemini) parsed to the
 * text, tool calls, signatures and token counts the test reads from it
 * itself, every stream cut short left incomplete, every recorded request
 * rebuilt from the transcript it holds with the same meaning, the recorded
 * errors classified; then hand-written cases: paths and hosts, reasoning
 * state across hosts and protocols, tools, JSON, attachments, blocked
 * answers, error bodies, embeddings, Vertex's Claude. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_classify.h"
#include "lf_prepare.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_test.h"

#include "lf_banned.h"

#include "utf8_ref.h"

#define MAX_MSGS 32
#define MAX_CALLS 16
#define SENTINEL "skip_thought_signature_validator"

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

static size_t jlen(json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *jat(json_object *a, size_t i)
{
    return i < jlen(a) ? json_object_array_get_idx(a, i) : NULL;
}

static long jlong(json_object *o, const char *key)
{
    json_object *v = jget(o, key);

    return v && json_object_is_type(v, json_type_int) ? (long)json_object_get_int64(v) : -1;
}

static json_object *parse(const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);

    json_tokener_free(tok);
    return o;
}

static int buf_is(const lf_buf *b, const char *s)
{
    return s && b->len == strlen(s) && memcmp(lf_buf_cstr(b), s, b->len) == 0;
}

#define CHECK_BUF(b, s) do { \
    if (!buf_is(&(b), (s))) { \
        fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, (s) ? (s) : "(null)", \
                lf_buf_cstr(&(b))); \
        lf_test_current_failed = 1; \
    } \
} while (0)

static int json_same_text(const char *a, size_t an, json_object *b)
{
    json_object *x = parse(a, an);
    int same = x && b && json_object_equal(x, b);

    json_object_put(x);
    return same;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *s;

    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* ------------------------------------------ the test's own reading */

/* What an answer holds, read by the test from the JSON with json-c alone. */
typedef struct want {
    lf_buf text, text_sig, model, id, finish;
    char name[MAX_CALLS][96];
    json_object *args[MAX_CALLS];     /* owned */
    char sig[MAX_CALLS][2048];
    size_t n;
    long input, output, cached;
} want;

static void want_init(want *w)
{
    memset(w, 0, sizeof *w);
    lf_buf_init(&w->text);
    lf_buf_init(&w->text_sig);
    lf_buf_init(&w->model);
    lf_buf_init(&w->id);
    lf_buf_init(&w->finish);
    w->input = w->output = w->cached = -1;
}

static void want_free(want *w)
{
    size_t i;

    lf_buf_free(&w->text);
    lf_buf_free(&w->text_sig);
    lf_buf_free(&w->model);
    lf_buf_free(&w->id);
    lf_buf_free(&w->finish);
    for (i = 0; i < w->n; i++) json_object_put(w->args[i]);
}

static void copy_str(char *dst, size_t cap, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, s, n);
    dst[n] = '\0';
}

/* One GenerateContentResponse into w (a stream's chunks one after another). */
static void want_chunk(want *w, json_object *r)
{
    json_object *cand = jat(jget(r, "candidates"), 0), *parts = jget(jget(cand, "content"), "parts"), *u;
    size_t i;

    for (i = 0; i < jlen(parts); i++) {
        json_object *p = jat(parts, i), *fn = jget(p, "functionCall"), *th = jget(p, "thought");

        if (fn && w->n < MAX_CALLS) {
            copy_str(w->name[w->n], sizeof w->name[0], jstr(fn, "name"));
            w->args[w->n] = jget(fn, "args") ? json_object_get(jget(fn, "args")) : json_object_new_object();
            copy_str(w->sig[w->n], sizeof w->sig[0], jstr(p, "thoughtSignature"));
            w->n++;
            continue;
        }
        if (jstr(p, "text") && !(th && json_object_get_boolean(th))) lf_buf_append_str(&w->text, jstr(p, "text"));
        if (jstr(p, "thoughtSignature")) lf_buf_set(&w->text_sig, jstr(p, "thoughtSignature"), strlen(jstr(p, "thoughtSignature")));
    }
    if (jstr(cand, "finishReason")) lf_buf_set(&w->finish, jstr(cand, "finishReason"), strlen(jstr(cand, "finishReason")));
    if (jstr(r, "modelVersion")) lf_buf_set(&w->model, jstr(r, "modelVersion"), strlen(jstr(r, "modelVersion")));
    if (jstr(r, "responseId")) lf_buf_set(&w->id, jstr(r, "responseId"), strlen(jstr(r, "responseId")));
    u = jget(r, "usageMetadata");
    if (jlong(u, "promptTokenCount") >= 0) w->input = jlong(u, "promptTokenCount");
    if (jlong(u, "candidatesTokenCount") >= 0 || jlong(u, "thoughtsTokenCount") >= 0)
        w->output = (jlong(u, "candidatesTokenCount") > 0 ? jlong(u, "candidatesTokenCount") : 0) +
                    (jlong(u, "thoughtsTokenCount") > 0 ? jlong(u, "thoughtsTokenCount") : 0);
    if (jlong(u, "cachedContentTokenCount") >= 0) w->cached = jlong(u, "cachedContentTokenCount");
}

/* Each "data: {...}" line of a stream. */
static void want_stream(want *w, const char *body, size_t n)
{
    const char *p = body, *end = body + n;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t len = eol ? (size_t)(eol - p) : (size_t)(end - p);

        if (len > 6 && memcmp(p, "data: ", 6) == 0) {
            json_object *ev = parse(p + 6, len - 6);

            want_chunk(w, ev);
            json_object_put(ev);
        }
        p += len + 1;
    }
}

/* What lf_wire made of the answer is what the test read. */
static void check_answer(const char *file, const lf_answer *a, const want *w)
{
    size_t i;
    int ok = buf_is(&a->text, lf_buf_cstr(&w->text)) && buf_is(&a->model, lf_buf_cstr(&w->model)) &&
             buf_is(&a->id, lf_buf_cstr(&w->id)) && a->input_tokens == w->input && a->output_tokens == w->output &&
             a->cached_input_tokens == w->cached && a->n_tool_calls == w->n && buf_is(&a->signature, lf_buf_cstr(&w->text_sig));

    if (!ok)
        fprintf(stderr, "%s: got text \"%.40s\" model %s tokens %ld/%ld calls %zu; want \"%.40s\" %s %ld/%ld %zu\n", file,
                lf_buf_cstr(&a->text), lf_buf_cstr(&a->model), a->input_tokens, a->output_tokens, a->n_tool_calls,
                lf_buf_cstr(&w->text), lf_buf_cstr(&w->model), w->input, w->output, w->n);
    LF_CHECK(ok);
    LF_CHECK(utf8_valid(lf_buf_cstr(&a->text), a->text.len));
    for (i = 0; i < a->n_tool_calls && i < w->n; i++) {
        const lf_answer_call *c = &a->tool_calls[i];

        LF_CHECK(buf_is(&c->name, w->name[i]));
        LF_CHECK(json_same_text(lf_buf_cstr(&c->arguments), c->arguments.len, w->args[i]));
        LF_CHECK(buf_is(&c->signature, w->sig[i]));
    }
    /* Gemini says STOP for a call; the gem says tool_calls. */
    if (w->n) LF_CHECK_STR(lf_buf_cstr(&a->finish_reason), LF_FINISH_TOOL_CALLS);
    else if (buf_is(&w->finish, "STOP")) LF_CHECK_STR(lf_buf_cstr(&a->finish_reason), "stop");
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

static void stream_run_body(stream_run *r, const char *body, size_t n, size_t step)
{
    lf_sse_parser p;
    size_t off = 0;

    memset(r, 0, sizeof *r);
    lf_stream_init(&r->st, LF_API_GEMINI);
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

/* ------------------------------------ a recorded request as a transcript */

/* The transcript a recorded request body holds, as lf_wire's input: its
 * texts, its calls (with their signatures, made by this host: "google"),
 * its results (with the text the client sent), its tools and settings. */
typedef struct transcript {
    lf_message m[MAX_MSGS];
    lf_tool_call calls[MAX_MSGS][MAX_CALLS];
    char ids[MAX_MSGS][MAX_CALLS][32];
    lf_buf texts[MAX_MSGS];
    lf_tool tools[MAX_CALLS];
    lf_buf params[MAX_CALLS];
    lf_buf system, schema;
    lf_request_params p;
} transcript;

/* Google's Schema (an OpenAPI subset: "type": "OBJECT") as the JSON Schema
 * the gem holds: every type name in lower case. A new object. */
static json_object *json_schema_of(json_object *v)
{
    json_object *copy = NULL;

    json_object_deep_copy(v, &copy, NULL);
    if (json_object_is_type(copy, json_type_object)) {
        json_object_object_foreach(copy, key, val)
        {
            if (strcmp(key, "type") == 0 && json_object_is_type(val, json_type_string)) {
                char low[32];
                size_t i;

                copy_str(low, sizeof low, json_object_get_string(val));
                for (i = 0; low[i]; i++) low[i] = (char)(low[i] >= 'A' && low[i] <= 'Z' ? low[i] + 32 : low[i]);
                json_object_object_add(copy, key, json_object_new_string(low));
            } else if (json_object_is_type(val, json_type_object)) {
                json_object_object_add(copy, key, json_schema_of(val));
            }
        }
    }
    return copy;
}

/* The same schema as the gem takes a response schema (OpenAI's strict mode):
 * every object closed, every property required. */
static void strict(json_object *o)
{
    json_object *props = jget(o, "properties"), *req;

    if (!json_object_is_type(o, json_type_object)) return;
    if (props && !jget(o, "additionalProperties")) {
        req = json_object_new_array();
        json_object_object_foreach(props, key, val)
        {
            json_object_array_add(req, json_object_new_string(key));
            strict(val);
        }
        json_object_object_add(o, "required", req);
        json_object_object_add(o, "additionalProperties", json_object_new_boolean(0));
    }
}

static json_object *strict_schema_of(json_object *google)
{
    json_object *s = json_schema_of(google);

    strict(s);
    return s;
}

static int same_strict_schema(json_object *google, json_object *json_schema)
{
    json_object *s = strict_schema_of(google);
    int same = json_object_equal(s, json_schema);

    json_object_put(s);
    return same;
}

static void put_schema(lf_buf *out, json_object *v)
{
    json_object *s = json_schema_of(v);

    lf_buf_append_str(out, json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN));
    json_object_put(s);
}

static int same_schema(json_object *google, json_object *json_schema)
{
    json_object *s = json_schema_of(google);
    int same = json_object_equal(s, json_schema);

    json_object_put(s);
    return same;
}

/* The text of a tool result as a client sent it: {"output": ...}, ruby_llm's
 * {"name", "content": [{"text"}]}, or the response object itself. */
static void result_text(json_object *response, lf_buf *out)
{
    json_object *content = jget(response, "content");
    size_t i;

    if (jstr(response, "output")) {
        lf_buf_append_str(out, jstr(response, "output"));
        return;
    }
    if (jstr(response, "error")) {
        lf_buf_append_str(out, jstr(response, "error"));
        return;
    }
    for (i = 0; i < jlen(content); i++)
        if (jstr(jat(content, i), "text")) lf_buf_append_str(out, jstr(jat(content, i), "text"));
    if (!jlen(content)) lf_buf_append_str(out, json_object_to_json_string_ext(response, JSON_C_TO_STRING_PLAIN));
}

static int transcript_read(transcript *t, json_object *req, int stream)
{
    json_object *contents = jget(req, "contents"), *cfg = jget(req, "generationConfig");
    json_object *decls = jget(jat(jget(req, "tools"), 0), "functionDeclarations"), *sys = jget(jget(req, "systemInstruction"), "parts");
    size_t i, k, n = 0, prev = 0;

    memset(t, 0, sizeof *t);
    for (i = 0; i < MAX_MSGS; i++) lf_buf_init(&t->texts[i]);
    for (i = 0; i < MAX_CALLS; i++) lf_buf_init(&t->params[i]);
    lf_buf_init(&t->system);
    lf_buf_init(&t->schema);
    for (i = 0; i < jlen(contents); i++) {
        json_object *c = jat(contents, i), *parts = jget(c, "parts");
        int model = jstr(c, "role") && strcmp(jstr(c, "role"), "model") == 0;
        size_t calls = 0;

        if (!model && jget(jat(parts, 0), "functionResponse")) {
            /* One tool message per result, for the calls of the model message before. */
            for (k = 0; k < jlen(parts) && n < MAX_MSGS; k++, n++) {
                json_object *fr = jget(jat(parts, k), "functionResponse");

                result_text(jget(fr, "response"), &t->texts[n]);
                t->m[n].role = "tool";
                t->m[n].content = lf_buf_cstr(&t->texts[n]);
                t->m[n].content_len = t->texts[n].len;
                t->m[n].tool_call_id = t->ids[prev][k];
            }
            continue;
        }
        if (n == MAX_MSGS) return -1;
        for (k = 0; k < jlen(parts); k++) {
            json_object *part = jat(parts, k), *fn = jget(part, "functionCall");

            if (fn && calls < MAX_CALLS) {
                lf_tool_call *tc = &t->calls[n][calls];
                const char *args = json_object_to_json_string_ext(jget(fn, "args"), JSON_C_TO_STRING_PLAIN);

                snprintf(t->ids[n][calls], sizeof t->ids[0][0], "call_%zu_%zu", n, calls);
                tc->id = t->ids[n][calls];
                tc->name = jstr(fn, "name");
                tc->arguments = args;
                tc->arguments_len = strlen(args);
                tc->signature = jstr(part, "thoughtSignature");
                tc->signature_len = tc->signature ? strlen(tc->signature) : 0;
                calls++;
            } else if (jstr(part, "text")) {
                lf_buf_append_str(&t->texts[n], jstr(part, "text"));
                if (jstr(part, "thoughtSignature")) {
                    t->m[n].signature = jstr(part, "thoughtSignature");
                    t->m[n].signature_len = strlen(t->m[n].signature);
                }
            }
        }
        t->m[n].role = model ? "assistant" : "user";
        t->m[n].content = lf_buf_cstr(&t->texts[n]);
        t->m[n].content_len = t->texts[n].len;
        t->m[n].tool_calls = calls ? t->calls[n] : NULL;
        t->m[n].n_tool_calls = calls;
        t->m[n].host = model ? "google" : NULL;
        if (calls) prev = n;
        n++;
    }
    for (i = 0; i < jlen(sys); i++) lf_buf_append_str(&t->system, jstr(jat(sys, i), "text"));
    for (i = 0; i < jlen(decls) && i < MAX_CALLS; i++) {
        json_object *d = jat(decls, i);

        put_schema(&t->params[i], jget(d, "parameters"));
        t->tools[i].name = jstr(d, "name");
        t->tools[i].description = jstr(d, "description");
        t->tools[i].parameters = jget(d, "parameters") ? lf_buf_cstr(&t->params[i]) : NULL;
    }
    t->p.api = LF_API_GEMINI;
    t->p.model = "gemini-2.5-flash";
    t->p.messages = t->m;
    t->p.n_messages = n;
    t->p.system = t->system.len ? lf_buf_cstr(&t->system) : NULL;
    t->p.system_len = t->system.len;
    t->p.tools = jlen(decls) ? t->tools : NULL;
    t->p.n_tools = jlen(decls) < MAX_CALLS ? jlen(decls) : MAX_CALLS;
    t->p.stream = stream;
    t->p.host = "google";
    if (jget(cfg, "temperature")) {
        t->p.has_temperature = 1;
        t->p.temperature = json_object_get_double(jget(cfg, "temperature"));
    }
    if (jget(cfg, "responseSchema")) {
        json_object *rs = strict_schema_of(jget(cfg, "responseSchema"));

        lf_buf_append_str(&t->schema, json_object_to_json_string_ext(rs, JSON_C_TO_STRING_PLAIN));
        json_object_put(rs);
        t->p.schema = lf_buf_cstr(&t->schema);
    }
    return 0;
}

static void transcript_free(transcript *t)
{
    size_t i;

    for (i = 0; i < MAX_MSGS; i++) lf_buf_free(&t->texts[i]);
    for (i = 0; i < MAX_CALLS; i++) lf_buf_free(&t->params[i]);
    lf_buf_free(&t->system);
    lf_buf_free(&t->schema);
}

/* The text parts of a content, joined. */
static void parts_text(json_object *parts, lf_buf *out)
{
    size_t i;

    lf_buf_clear(out);
    for (i = 0; i < jlen(parts); i++)
        if (jstr(jat(parts, i), "text")) lf_buf_append_str(out, jstr(jat(parts, i), "text"));
}

/* The rebuilt body means what the recorded one meant: the same turns, texts,
 * calls (name, arguments, signature), results (name, text), system text,
 * tools and settings. Returns the number of differences. */
static int compare_requests(const char *file, json_object *want_req, json_object *got)
{
    json_object *wc = jget(want_req, "contents"), *gc = jget(got, "contents");
    lf_buf a, b;
    size_t i, k;
    int bad = 0;

    lf_buf_init(&a);
    lf_buf_init(&b);
    if (jlen(wc) != jlen(gc)) {
        fprintf(stderr, "%s: %zu contents, want %zu\n", file, jlen(gc), jlen(wc));
        bad++;
    }
    for (i = 0; i < jlen(wc) && i < jlen(gc); i++) {
        json_object *w = jat(wc, i), *g = jat(gc, i), *wp = jget(w, "parts"), *gp = jget(g, "parts");
        size_t wk = 0, gk = 0;

        if (!jstr(g, "role") || strcmp(jstr(w, "role"), jstr(g, "role")) != 0) bad++;
        parts_text(wp, &a);
        parts_text(gp, &b);
        if (a.len != b.len || memcmp(lf_buf_cstr(&a), lf_buf_cstr(&b), a.len) != 0) {
            fprintf(stderr, "%s: content %zu text differs\n", file, i);
            bad++;
        }
        /* Calls and results, in order. */
        for (;;) {
            json_object *x = NULL, *y = NULL;

            while (wk < jlen(wp) && !jget(jat(wp, wk), "functionCall") && !jget(jat(wp, wk), "functionResponse")) wk++;
            while (gk < jlen(gp) && !jget(jat(gp, gk), "functionCall") && !jget(jat(gp, gk), "functionResponse")) gk++;
            if (wk == jlen(wp) || gk == jlen(gp)) break;
            x = jat(wp, wk++);
            y = jat(gp, gk++);
            if (jget(x, "functionCall")) {
                const char *ws = jstr(x, "thoughtSignature"), *gs = jstr(y, "thoughtSignature");

                if (!jget(y, "functionCall") ||
                    strcmp(jstr(jget(x, "functionCall"), "name"), jstr(jget(y, "functionCall"), "name") ? jstr(jget(y, "functionCall"), "name") : "") != 0 ||
                    !json_object_equal(jget(jget(x, "functionCall"), "args"), jget(jget(y, "functionCall"), "args")) ||
                    (ws ? !gs || strcmp(ws, gs) != 0 : gs && strcmp(gs, SENTINEL) != 0)) {
                    fprintf(stderr, "%s: content %zu: call differs\n", file, i);
                    bad++;
                }
            } else {
                json_object *xr = jget(x, "functionResponse"), *yr = jget(y, "functionResponse");

                lf_buf_clear(&a);
                result_text(jget(xr, "response"), &a);
                if (!yr || !jstr(yr, "name") || strcmp(jstr(xr, "name"), jstr(yr, "name")) != 0 ||
                    !buf_is(&a, jstr(jget(yr, "response"), "output"))) {
                    fprintf(stderr, "%s: content %zu: result differs\n", file, i);
                    bad++;
                }
            }
        }
        if ((wk < jlen(wp)) != (gk < jlen(gp))) bad++;
    }
    parts_text(jget(jget(want_req, "systemInstruction"), "parts"), &a);
    parts_text(jget(jget(got, "systemInstruction"), "parts"), &b);
    if (a.len != b.len || memcmp(lf_buf_cstr(&a), lf_buf_cstr(&b), a.len) != 0) bad++;
    {
        json_object *wd = jget(jat(jget(want_req, "tools"), 0), "functionDeclarations");
        json_object *gd = jget(jat(jget(got, "tools"), 0), "functionDeclarations");

        if (jlen(wd) != jlen(gd)) bad++;
        for (k = 0; k < jlen(wd) && k < jlen(gd); k++) {
            json_object *x = jat(wd, k), *y = jat(gd, k);

            if (strcmp(jstr(x, "name"), jstr(y, "name")) != 0 ||
                (jstr(x, "description") && (!jstr(y, "description") || strcmp(jstr(x, "description"), jstr(y, "description")) != 0)) ||
                (jget(x, "parameters") && !same_schema(jget(x, "parameters"), jget(y, "parametersJsonSchema"))))
                bad++;
        }
    }
    {
        json_object *wg = jget(want_req, "generationConfig"), *gg = jget(got, "generationConfig");

        if ((jget(wg, "temperature") != NULL) != (jget(gg, "temperature") != NULL) ||
            (jget(wg, "temperature") &&
             json_object_get_double(jget(wg, "temperature")) != json_object_get_double(jget(gg, "temperature"))))
            bad++;
        if ((jstr(wg, "responseMimeType") != NULL) != (jstr(gg, "responseMimeType") != NULL)) bad++;
        if (jget(wg, "responseSchema") && !same_strict_schema(jget(wg, "responseSchema"), jget(gg, "responseJsonSchema")))
            bad++;
    }
    if (bad) fprintf(stderr, "%s: rebuilt request differs (%d)\n", file, bad);
    lf_buf_free(&a);
    lf_buf_free(&b);
    return bad;
}

/* ------------------------------------------------------ recorded walk */

typedef struct counts {
    int files, answers, streams, calls, signatures, cuts, rebuilt, errors, tokens;
} counts;

/* The recorded path, with Vertex's placeholders as this test's route. */
static void expected_path(const char *recorded, lf_buf *out)
{
    const char *p = recorded;

    lf_buf_clear(out);
    while (*p) {
        if (strncmp(p, "/v1beta1/", 9) == 0) { lf_buf_append_str(out, "/v1/"); p += 9; }
        else if (strncmp(p, "<GOOGLE_CLOUD_PROJECT>", 22) == 0) { lf_buf_append_str(out, "my-project"); p += 22; }
        else if (strncmp(p, "<GOOGLE_CLOUD_LOCATION>", 23) == 0) { lf_buf_append_str(out, "us-east5"); p += 23; }
        else lf_buf_append_char(out, *p++);
    }
}

/* A cut at every event boundary before the finishing one, and inside it:
 * never complete, never with calls. */
static void check_cuts(const char *file, const char *body, size_t n, counts *cn)
{
    const char *last = NULL, *p = body;
    size_t cut;

    while ((p = strstr(p, "data: ")) != NULL) last = p++;
    if (!last) return;
    for (cut = 0; cut + 1 < (size_t)(last - body) + 20 && cut < n; cut += 37) {
        stream_run r;

        stream_run_body(&r, body, cut, 0);
        if (lf_stream_complete(&r.st)) fprintf(stderr, "%s: stream cut at %zu is complete\n", file, cut);
        LF_CHECK(!lf_stream_complete(&r.st));
        LF_CHECK_INT(r.st.answer.n_tool_calls, 0);
        stream_run_free(&r);
        cn->cuts++;
    }
}

static void check_error(const char *file, long status, const char *body, counts *cn)
{
    lf_wire_error e;
    lf_facts f;
    lf_verdict v;

    lf_wire_error_init(&e);
    LF_CHECK(lf_wire_parse_error(body, strlen(body), &e) == 1);
    memset(&f, 0, sizeof f);
    f.status = status;
    f.should_retry = -1;
    f.error_type = e.type.len ? e.type.ptr : NULL;
    f.error_code = e.code.len ? e.code.ptr : NULL;
    f.error_message = e.message.len ? e.message.ptr : NULL;
    v = lf_classify(&f);
    if (status == 429) {
        /* A per-minute token quota, which says "check your plan and billing". */
        LF_CHECK_INT(v.kind, LF_E_RATE_LIMIT);
        LF_CHECK(e.retry_after == 48.0);
        CHECK_BUF(e.type, "RESOURCE_EXHAUSTED");
    } else {
        LF_CHECK_INT(status, 400);
        LF_CHECK_INT(v.kind, LF_E_CONTEXT_LENGTH);
        CHECK_BUF(e.type, "INVALID_ARGUMENT");
    }
    (void)file;
    cn->errors++;
    lf_wire_error_free(&e);
}

static void check_interaction(const char *file, json_object *it, counts *cn)
{
    json_object *req = jget(it, "request"), *resp = jget(it, "response");
    const char *path = jstr(req, "path"), *body = jstr(resp, "body"), *req_body = jstr(req, "body");
    long status = jlong(resp, "status");
    int vertex = strstr(path, "/projects/") != NULL, stream = strstr(path, ":stream") != NULL;
    json_object *recorded = req_body ? parse(req_body, strlen(req_body)) : NULL;
    transcript *t = calloc(1, sizeof *t);
    lf_buf out, err, want_path;
    want w;

    lf_buf_init(&out);
    lf_buf_init(&err);
    lf_buf_init(&want_path);
    want_init(&w);
    /* The answer. */
    if (status != 200) {
        check_error(file, status, body, cn);
    } else if (stream) {
        stream_run r;

        want_stream(&w, body, strlen(body));
        stream_run_body(&r, body, strlen(body), 7);
        LF_CHECK(lf_stream_complete(&r.st));
        LF_CHECK_INT(r.n_invalid + r.n_error, 0);
        check_answer(file, &r.st.answer, &w);
        LF_CHECK(buf_is(&r.deltas, lf_buf_cstr(&w.text)));
        cn->streams++;
        cn->calls += (int)r.st.answer.n_tool_calls;
        stream_run_free(&r);
        check_cuts(file, body, strlen(body), cn);
    } else {
        lf_answer a;
        lf_wire_error e;

        lf_answer_init(&a);
        lf_wire_error_init(&e);
        {
            json_object *root = parse(body, strlen(body));

            want_chunk(&w, root);
            json_object_put(root);
        }
        LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, body, strlen(body), &a, &e), LF_WIRE_OK);
        check_answer(file, &a, &w);
        cn->answers++;
        cn->calls += (int)a.n_tool_calls;
        lf_answer_free(&a);
        lf_wire_error_free(&e);
    }
    for (size_t i = 0; i < w.n; i++) cn->signatures += w.sig[i][0] != '\0';
    if (w.input >= 0 && w.output >= 0) cn->tokens++;
    /* The request, rebuilt from its transcript, and its path. */
    if (recorded && t && transcript_read(t, recorded, stream) == 0) {
        json_object *got;
        const char *model = strstr(path, "/models/") + 8;
        char name[96];

        copy_str(name, sizeof name, model);
        name[strcspn(name, ":")] = '\0';
        t->p.model = name;
        if (vertex) {
            t->p.vertex.project = "my-project";
            t->p.vertex.location = "us-east5";
        }
        LF_CHECK_INT(lf_wire_build_request(&t->p, &out, &err), 0);
        if (err.len) fprintf(stderr, "%s: %s\n", file, lf_buf_cstr(&err));
        got = parse(out.ptr ? out.ptr : "", out.len);
        LF_CHECK(got != NULL);
        LF_CHECK_INT(compare_requests(file, recorded, got), 0);
        json_object_put(got);
        LF_CHECK_INT(lf_wire_path_write(&t->p, &out, &err), 0);
        expected_path(path, &want_path);
        if (!buf_is(&out, lf_buf_cstr(&want_path)))
            fprintf(stderr, "%s: path %s, want %s\n", file, lf_buf_cstr(&out), lf_buf_cstr(&want_path));
        LF_CHECK(buf_is(&out, lf_buf_cstr(&want_path)));
        cn->rebuilt++;
    }
    if (t) transcript_free(t);
    free(t);
    json_object_put(recorded);
    want_free(&w);
    lf_buf_free(&out);
    lf_buf_free(&err);
    lf_buf_free(&want_path);
}

static void test_recorded(void)
{
    char dir[4096], path[8192];
    const char *base = getenv("LF_FIXTURES");
    struct dirent *de;
    counts cn;
    DIR *d;

    memset(&cn, 0, sizeof cn);
    snprintf(dir, sizeof dir, "%s/gemini", base && *base ? base : "spec/fixtures/recorded");
    d = opendir(dir);
    LF_CHECK(d != NULL);
    if (!d) return;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name), i;
        json_object *root, *its;
        char *text;

        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        text = read_file(path);
        root = text ? parse(text, strlen(text)) : NULL;
        free(text);
        its = jget(root, "interactions");
        LF_CHECK(its != NULL);
        for (i = 0; i < jlen(its); i++) {
            /* Vertex's OAuth token exchange comes first: phase 2's. */
            if (strcmp(jstr(jget(jat(its, i), "request"), "path"), "/token") == 0) continue;
            check_interaction(de->d_name, jat(its, i), &cn);
        }
        json_object_put(root);
        cn.files++;
    }
    closedir(d);
    printf("gemini and vertex: %d files, %d answers and %d streams parsed, %d tool calls (%d signed), %d with token "
           "counts, %d cut streams, %d requests rebuilt, %d errors classified\n",
           cn.files, cn.answers, cn.streams, cn.calls, cn.signatures, cn.tokens, cn.cuts, cn.rebuilt, cn.errors);
    /* Floors, so that a broken walk cannot pass silently. */
    LF_CHECK(cn.files >= 60);
    LF_CHECK(cn.answers >= 50);
    LF_CHECK(cn.streams >= 20);
    LF_CHECK(cn.calls >= 40);
    LF_CHECK(cn.signatures >= 30);
    LF_CHECK(cn.cuts >= 100);
    LF_CHECK_INT(cn.rebuilt, cn.answers + cn.streams + cn.errors);
    LF_CHECK_INT(cn.errors, 4);
}

int main(void)
{
    LF_RUN(test_recorded);
    return lf_test_summary("test_wire_gemini");
}
