/* Gemini generateContent and Vertex AI in the wire layer: every recorded
 * Gemini and Vertex AI exchange (spec/fixtures/recorded/gemini) parsed to the
 * text, tool calls, signatures and token counts the test reads from it
 * itself, every stream cut short left incomplete, every recorded request
 * rebuilt from the transcript it holds with the same meaning, the recorded
 * errors classified; then hand-written cases: paths and hosts, reasoning
 * state across hosts and protocols, tools, JSON, attachments, blocked
 * answers, stream events read without a tree against the tree, error bodies,
 * embeddings, Vertex's Claude. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_classify.h"
#include "lf_prepare.h"
#include "lf_sse.h"
#include "lf_wire.h"
#include "lf_test.h"

#include "lf_banned.h"

#include "utf8_ref.h"
#include "wire_test_json.h"
#include "wire_stream_run.h"

#define MAX_MSGS 32
#define MAX_CALLS 16
#define SENTINEL "skip_thought_signature_validator"

/* ---------------------------------------------------------- helpers */

static size_t jlen(json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *jat(json_object *a, size_t i)
{
    return i < jlen(a) ? json_object_array_get_idx(a, i) : NULL;
}

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
             a->cached_input_tokens == w->cached && a->n_tool_calls == w->n && buf_is(&a->reasoning, lf_buf_cstr(&w->text_sig));

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

/* ------------------------------------ a recorded request as a transcript */

/* The transcript a recorded request body holds, as lf_wire's input: its
 * texts, its calls (with their signatures, made by this origin: "google"),
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

/* Google's Schema (an OpenAPI subset: "type": "OBJECT") as the JSON Schema
 * the gem holds: every type name in lower case; with strict_mode, as a
 * response schema. A new object. */
static json_object *json_schema_of(json_object *v, int strict_mode)
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
                json_object_object_add(copy, key, json_schema_of(val, 0));
            }
        }
    }
    if (strict_mode) strict(copy);
    return copy;
}

static void put_schema(lf_buf *out, json_object *google, int strict_mode)
{
    json_object *s = json_schema_of(google, strict_mode);

    lf_buf_append_str(out, json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN));
    json_object_put(s);
}

static int same_schema(json_object *google, json_object *json_schema, int strict_mode)
{
    json_object *s = json_schema_of(google, strict_mode);
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
                    t->m[n].reasoning = jstr(part, "thoughtSignature");
                    t->m[n].reasoning_len = strlen(t->m[n].reasoning);
                }
            }
        }
        t->m[n].role = model ? "assistant" : "user";
        t->m[n].content = lf_buf_cstr(&t->texts[n]);
        t->m[n].content_len = t->texts[n].len;
        t->m[n].tool_calls = calls ? t->calls[n] : NULL;
        t->m[n].n_tool_calls = calls;
        t->m[n].reasoning_api = LF_API_GEMINI;
        t->m[n].reasoning_origin = model ? "google" : NULL;
        if (calls) prev = n;
        n++;
    }
    for (i = 0; i < jlen(sys); i++) lf_buf_append_str(&t->system, jstr(jat(sys, i), "text"));
    for (i = 0; i < jlen(decls) && i < MAX_CALLS; i++) {
        json_object *d = jat(decls, i);

        put_schema(&t->params[i], jget(d, "parameters"), 0);
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
    t->p.origin = "google";
    if (jget(cfg, "temperature")) {
        t->p.has_temperature = 1;
        t->p.temperature = json_object_get_double(jget(cfg, "temperature"));
    }
    if (jget(cfg, "responseSchema")) {
        put_schema(&t->schema, jget(cfg, "responseSchema"), 1);
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
                (jget(x, "parameters") && !same_schema(jget(x, "parameters"), jget(y, "parametersJsonSchema"), 0)))
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
        if (jget(wg, "responseSchema") && !same_schema(jget(wg, "responseSchema"), jget(gg, "responseJsonSchema"), 1))
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

        stream_run_body(&r, LF_API_GEMINI, body, cut, 0);
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
        stream_run_body(&r, LF_API_GEMINI, body, strlen(body), 7);
        LF_CHECK(lf_stream_complete(&r.st));
        LF_CHECK_INT(r.n_invalid + r.n_error + r.n_bad_delta, 0);
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
        if (vertex) t->p.layout = LF_LAYOUT_VERTEX;
        LF_CHECK_INT(lf_wire_build_request(&t->p, &out, &err), 0);
        if (err.len) fprintf(stderr, "%s: %s\n", file, lf_buf_cstr(&err));
        got = parse(out.ptr ? out.ptr : "", out.len);
        LF_CHECK(got != NULL);
        LF_CHECK_INT(compare_requests(file, recorded, got), 0);
        json_object_put(got);
        {
            lf_endpoint e = { .api = t->p.api, .layout = t->p.layout, .base_url = "", .model = t->p.model,
                              .vertex = { "my-project", "us-east5" }, .stream = t->p.stream };

            LF_CHECK_INT(lf_wire_url(&e, &out, &err), 0);
        }
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

/* ------------------------------------------------- hand-written cases */

static json_object *build(const lf_request_params *p)
{
    lf_buf out, err;
    json_object *o = NULL;

    lf_buf_init(&out);
    lf_buf_init(&err);
    if (lf_wire_build_request(p, &out, &err) != 0) fprintf(stderr, "build failed: %s\n", lf_buf_cstr(&err));
    else o = parse(out.ptr, out.len);
    LF_CHECK(o != NULL);
    lf_buf_free(&out);
    lf_buf_free(&err);
    return o;
}

/* The build fails, with words that contain want. */
static void build_fails(const lf_request_params *p, const char *want)
{
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK(lf_wire_build_request(p, &out, &err) != 0);
    if (!strstr(lf_buf_cstr(&err), want)) fprintf(stderr, "error \"%s\" lacks \"%s\"\n", lf_buf_cstr(&err), want);
    LF_CHECK(strstr(lf_buf_cstr(&err), want) != NULL);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

/* The URL of e with base_url "": its path. */
static void path_is(const lf_endpoint *e, const char *want)
{
    lf_endpoint at = *e;
    lf_buf out, err;

    at.base_url = "";
    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_url(&at, &out, &err), 0);
    CHECK_BUF(out, want);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void path_fails(const lf_endpoint *e, const char *want)
{
    lf_endpoint at = *e;
    lf_buf out, err;

    at.base_url = "";
    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_url(&at, &out, &err), -1);
    LF_CHECK(strstr(lf_buf_cstr(&err), want) != NULL);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void test_paths(void)
{
    lf_endpoint p = { .api = LF_API_GEMINI, .model = "gemini-2.5-flash" };
    lf_buf url;
    lf_api api = LF_API_OPENAI;

    path_is(&p, "/v1beta/models/gemini-2.5-flash:generateContent");
    p.stream = 1;
    path_is(&p, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    p.model = "models/gemini-2.5-flash"; /* as Google lists them */
    path_is(&p, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    p.stream = 0;
    p.model = "tuned/a b:c?d#e%";
    path_is(&p, "/v1beta/models/tuned%2Fa%20b%3Ac%3Fd%23e%25:generateContent");
    p.model = "gemini-embedding-001";
    p.kind = LF_REQUEST_EMBEDDINGS;
    path_is(&p, "/v1beta/models/gemini-embedding-001:batchEmbedContents");
    p.kind = LF_REQUEST_CHAT;
    p.model = "";
    path_fails(&p, "model is missing");

    /* Vertex AI: Gemini by publisher google, Claude by publisher anthropic. */
    p.model = "gemini-2.5-pro";
    p.layout = LF_LAYOUT_VERTEX;
    p.vertex = (lf_vertex){ .project = "my-project", .location = "global" };
    path_is(&p, "/v1/projects/my-project/locations/global/publishers/google/models/gemini-2.5-pro:generateContent");
    p.stream = 1;
    path_is(&p, "/v1/projects/my-project/locations/global/publishers/google/models/gemini-2.5-pro:"
                "streamGenerateContent?alt=sse");
    p.api = LF_API_ANTHROPIC;
    p.model = "claude-sonnet-4-5@20250929";
    p.vertex.location = "us-east5";
    path_is(&p, "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
                "streamRawPredict");
    p.stream = 0;
    path_is(&p, "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
                "rawPredict");
    p.vertex.location = NULL;
    path_fails(&p, "a project and a location");
    p.vertex.location = "US East";
    path_fails(&p, "a project and a location");
    p.vertex.location = "us-east5";
    p.api = LF_API_OPENAI;
    path_fails(&p, "Gemini and Claude models only");
    p.api = LF_API_GEMINI;
    p.kind = LF_REQUEST_EMBEDDINGS;
    path_fails(&p, "embeddings on Vertex AI");

    /* Azure serves none of Google's protocols. */
    p = (lf_endpoint){ .api = LF_API_GEMINI, .layout = LF_LAYOUT_AZURE, .model = "gemini-2.5-flash" };
    path_fails(&p, "does not serve Gemini");

    /* The other protocols keep their static paths. */
    p = (lf_endpoint){ .api = LF_API_OPENAI, .model = "gpt-4o" };
    path_is(&p, "/chat/completions");
    p.api = LF_API_ANTHROPIC;
    path_is(&p, "/v1/messages");
    p = (lf_endpoint){ .api = LF_API_OPENAI, .model = "m", .kind = LF_REQUEST_EMBEDDINGS };
    path_is(&p, "/embeddings");
    LF_CHECK(lf_wire_path_for(LF_API_GEMINI, LF_REQUEST_EMBEDDINGS) == NULL);

    lf_buf_init(&url);
    LF_CHECK_INT(lf_wire_vertex_base_url("us-east5", &url), 0);
    CHECK_BUF(url, "https://us-east5-aiplatform.googleapis.com");
    LF_CHECK_INT(lf_wire_vertex_base_url("global", &url), 0);
    CHECK_BUF(url, "https://aiplatform.googleapis.com");
    LF_CHECK_INT(lf_wire_vertex_base_url("", &url), -1);
    LF_CHECK_INT(lf_wire_vertex_base_url("evil.com/x", &url), -1);
    LF_CHECK_INT(lf_wire_vertex_base_url(NULL, &url), -1);
    lf_buf_free(&url);

    LF_CHECK_INT(lf_wire_vertex_api("claude-opus-4-1@20250805"), LF_API_ANTHROPIC);
    LF_CHECK_INT(lf_wire_vertex_api("gemini-2.5-flash"), LF_API_GEMINI);
    LF_CHECK_INT(lf_wire_api_named("gemini", strlen("gemini"), &api), 0);
    LF_CHECK_INT(api, LF_API_GEMINI);
    LF_CHECK_INT(lf_wire_api_named("vertex", strlen("vertex"), &api), -1);
    LF_CHECK_INT(lf_wire_embed_max_inputs(LF_API_GEMINI), 100);
    LF_CHECK_INT(lf_wire_embed_max_inputs(LF_API_ANTHROPIC), 0);
}

/* The header lines and URL a prepared target goes out with. */
static int has_header(const lf_prepared *p, const char *line)
{
    const struct curl_slist *l;

    for (l = p->headers; l; l = l->next)
        if (strcmp(l->data, line) == 0) return 1;
    return 0;
}

static int has_header_named(const lf_prepared *p, const char *name)
{
    const struct curl_slist *l;

    for (l = p->headers; l; l = l->next)
        if (strncasecmp(l->data, name, strlen(name)) == 0) return 1;
    return 0;
}

static void test_prepare(void)
{
    lf_message m = { .role = "user", .content = "Hi", .content_len = 2 };
    lf_request_params params = { .messages = &m, .n_messages = 1, .stream = 1 };
    lf_target gemini = { .api = LF_API_GEMINI, .base_url = "https://generativelanguage.googleapis.com",
                         .api_key = "AIzaKEY-1234567890", .model = "gemini-2.5-flash" };
    lf_target vertex = { .api = LF_API_GEMINI, .base_url = "https://aiplatform.googleapis.com",
                         .api_key = "ya29.TOKEN-1234567890", .model = "gemini-2.5-pro",
                         .layout = LF_LAYOUT_VERTEX, .vertex = { .project = "p1", .location = "global" } };
    lf_target claude = { .api = LF_API_ANTHROPIC, .base_url = "https://us-east5-aiplatform.googleapis.com",
                         .api_key = "ya29.TOKEN-1234567890", .model = "claude-sonnet-4-5@20250929",
                         .layout = LF_LAYOUT_VERTEX, .vertex = { .project = "p1", .location = "us-east5" } };
    lf_prepared_call pc;
    lf_buf err;
    json_object *body;

    lf_buf_init(&err);
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_schema(&pc, &params, &err), 0);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &gemini, &params, &err), 0);
    LF_CHECK_STR(pc.target[0].url,
                 "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    LF_CHECK(has_header(&pc.target[0], "x-goog-api-key: AIzaKEY-1234567890"));
    LF_CHECK(!has_header_named(&pc.target[0], "Authorization"));
    LF_CHECK(has_header(&pc.target[0], "Accept: text/event-stream"));
    LF_CHECK_INT(lf_prepare_target(&pc, 1, &vertex, &params, &err), 0);
    LF_CHECK_STR(pc.target[1].url, "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/"
                                   "models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    LF_CHECK(has_header(&pc.target[1], "Authorization: Bearer ya29.TOKEN-1234567890"));
    LF_CHECK(!has_header_named(&pc.target[1], "x-goog-api-key"));
    lf_prepared_call_free(&pc);

    /* Claude on Vertex: the token as a bearer, the version in the body. */
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &claude, &params, &err), 0);
    LF_CHECK_STR(pc.target[0].url, "https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5/"
                                   "publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict");
    LF_CHECK(has_header(&pc.target[0], "Authorization: Bearer ya29.TOKEN-1234567890"));
    LF_CHECK(!has_header_named(&pc.target[0], "x-api-key"));
    LF_CHECK(!has_header_named(&pc.target[0], "anthropic-version"));
    body = parse(pc.target[0].body.ptr, pc.target[0].body.len);
    LF_CHECK(jget(body, "model") == NULL);
    LF_CHECK_STR(jstr(body, "anthropic_version"), "vertex-2023-10-16");
    LF_CHECK(jget(body, "stream") && json_object_get_boolean(jget(body, "stream")));
    LF_CHECK_INT(jlen(jget(body, "messages")), 1);
    json_object_put(body);
    lf_prepared_call_free(&pc);

    /* A route that cannot be written fails before any network. */
    lf_prepared_call_init(&pc);
    claude.api = LF_API_OPENAI;
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &claude, &params, &err), -1);
    LF_CHECK(strstr(lf_buf_cstr(&err), "Gemini and Claude") != NULL);
    lf_prepared_call_free(&pc);
    lf_buf_free(&err);
}

/* A two-turn tool loop: the first turn's answer made by origin "gemini" (its
 * text and first call signed, two calls whose results came back in reverse
 * order), a new question, and a call of the current turn. */
static lf_tool_call loop_calls1[] = {
    { .id = "c1", .name = "weather", .arguments = "{\"city\":\"Oslo\"}", .arguments_len = 15,
      .signature = "S1", .signature_len = 2 },
    { .id = "c2", .name = "clock", .arguments = "", .arguments_len = 0 },
};
static lf_tool_call loop_calls2[] = {
    { .id = "c3", .name = "weather", .arguments = "{\"city\":\"Rome\"}", .arguments_len = 15,
      .signature = "S3", .signature_len = 2 },
};
static const lf_message loop_msgs[] = {
    { .role = "system", .content = "Be brief.", .content_len = 9 },
    { .role = "user", .content = "Oslo?", .content_len = 5 },
    { .role = "assistant", .content = "Looking.", .content_len = 8, .tool_calls = loop_calls1, .n_tool_calls = 2,
      .reasoning = "TS", .reasoning_len = 2, .reasoning_api = LF_API_GEMINI, .reasoning_origin = "gemini" },
    { .role = "tool", .content = "12:00", .content_len = 5, .tool_call_id = "c2" },
    { .role = "tool", .content = "failed", .content_len = 6, .tool_call_id = "c1", .is_error = 1 },
    { .role = "assistant", .content = "Cold.", .content_len = 5, .reasoning_api = LF_API_GEMINI,
      .reasoning_origin = "gemini" },
    { .role = "user", .content = "Rome?", .content_len = 5 },
    { .role = "assistant", .content = "", .content_len = 0, .tool_calls = loop_calls2, .n_tool_calls = 1,
      .reasoning_api = LF_API_GEMINI, .reasoning_origin = "gemini" },
    { .role = "tool", .content = "25C", .content_len = 3, .tool_call_id = "c3" },
};
static const lf_tool loop_tools[] = { { .name = "weather", .description = "Weather in a city",
                                        .parameters = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}" },
                                      { .name = "clock" } };

static lf_request_params loop_params(lf_api api, const char *origin)
{
    lf_request_params p = { .api = api, .model = "m", .messages = loop_msgs, .n_messages = 9, .tools = loop_tools,
                            .n_tools = 2, .origin = origin };

    return p;
}

static json_object *part(json_object *body, size_t content, size_t k)
{
    return jat(jget(jat(jget(body, "contents"), content), "parts"), k);
}

static void test_signatures(void)
{
    lf_request_params p = loop_params(LF_API_GEMINI, "gemini");
    json_object *b = build(&p), *x;
    lf_buf out;

    /* user, model (text + 2 calls), user (2 results), model, user, model (call), user (result) */
    LF_CHECK_INT(jlen(jget(b, "contents")), 7);
    LF_CHECK_STR(jstr(part(b, 1, 0), "text"), "Looking.");
    LF_CHECK_STR(jstr(part(b, 1, 0), "thoughtSignature"), "TS");
    LF_CHECK_STR(jstr(jget(part(b, 1, 1), "functionCall"), "name"), "weather");
    LF_CHECK_STR(jstr(part(b, 1, 1), "thoughtSignature"), "S1");
    LF_CHECK(jget(part(b, 1, 2), "thoughtSignature") == NULL);   /* Gemini signs the first of parallel calls */
    LF_CHECK(json_same_text("{}", 2, jget(jget(part(b, 1, 2), "functionCall"), "args")));
    LF_CHECK(jget(jget(part(b, 1, 1), "functionCall"), "id") == NULL);
    /* The results in the order of the calls, an error as error. */
    LF_CHECK_STR(jstr(jat(jget(b, "contents"), 2), "role"), "user");
    x = jget(part(b, 2, 0), "functionResponse");
    LF_CHECK_STR(jstr(x, "name"), "weather");
    LF_CHECK_STR(jstr(jget(x, "response"), "error"), "failed");
    x = jget(part(b, 2, 1), "functionResponse");
    LF_CHECK_STR(jstr(x, "name"), "clock");
    LF_CHECK_STR(jstr(jget(x, "response"), "output"), "12:00");
    LF_CHECK_STR(jstr(part(b, 5, 0), "thoughtSignature"), "S3");
    LF_CHECK_STR(jstr(jat(jget(jget(b, "systemInstruction"), "parts"), 0), "text"), "Be brief.");
    json_object_put(b);

    /* Another origin: its signatures stay home; the current turn's first call
     * gets the sentinel, earlier turns nothing. */
    p = loop_params(LF_API_GEMINI, "vertex");
    b = build(&p);
    LF_CHECK(jget(part(b, 1, 0), "thoughtSignature") == NULL);
    LF_CHECK(jget(part(b, 1, 1), "thoughtSignature") == NULL);
    LF_CHECK_STR(jstr(part(b, 5, 0), "thoughtSignature"), SENTINEL);
    json_object_put(b);
    p = loop_params(LF_API_GEMINI, NULL);
    b = build(&p);
    LF_CHECK_STR(jstr(part(b, 5, 0), "thoughtSignature"), SENTINEL);
    LF_CHECK(jget(part(b, 1, 1), "thoughtSignature") == NULL);
    json_object_put(b);

    /* Another protocol never sees them. */
    lf_buf_init(&out);
    p = loop_params(LF_API_OPENAI, "gemini");
    LF_CHECK_INT(lf_wire_build_request(&p, &out, NULL), 0);
    LF_CHECK(strstr(lf_buf_cstr(&out), "S1") == NULL && strstr(lf_buf_cstr(&out), "ignature") == NULL);
    p = loop_params(LF_API_ANTHROPIC, "gemini");
    LF_CHECK_INT(lf_wire_build_request(&p, &out, NULL), 0);
    LF_CHECK(strstr(lf_buf_cstr(&out), "S1") == NULL && strstr(lf_buf_cstr(&out), "ignature") == NULL);
    /* Nor Responses, which would refuse a state that is not its items. */
    p = loop_params(LF_API_RESPONSES, "gemini");
    p.encrypted_reasoning = 1;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, NULL), 0);
    LF_CHECK(strstr(lf_buf_cstr(&out), "\"TS\"") == NULL && strstr(lf_buf_cstr(&out), "S1") == NULL);
    lf_buf_free(&out);

    /* The same origin's state, made in another protocol, is not Gemini's. */
    {
        lf_message other[9];
        size_t i;

        memcpy(other, loop_msgs, sizeof other);
        for (i = 0; i < 9; i++) other[i].reasoning_api = LF_API_RESPONSES;
        p = loop_params(LF_API_GEMINI, "gemini");
        p.messages = other;
        b = build(&p);
        LF_CHECK(jget(part(b, 1, 0), "thoughtSignature") == NULL);
        LF_CHECK(jget(part(b, 1, 1), "thoughtSignature") == NULL);
        LF_CHECK_STR(jstr(part(b, 5, 0), "thoughtSignature"), SENTINEL);
        json_object_put(b);
    }
}

/* An answer's calls and signatures, carried into the next request as a
 * host would store them, go back as they came. */
static void test_answer_round_trip(void)
{
    const char *body =
        "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"thinking...\",\"thought\":true},"
        "{\"text\":\"On it.\"},{\"functionCall\":{\"id\":\"fc_1\",\"name\":\"weather\",\"args\":{\"city\":\"Oslo\"}},"
        "\"thoughtSignature\":\"SIG/1+=\"},{\"functionCall\":{\"name\":\"clock\"}},{\"text\":\"\",\"thoughtSignature\":\"TXT\"}]},"
        "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":7,"
        "\"thoughtsTokenCount\":30,\"cachedContentTokenCount\":64,\"toolUsePromptTokenCount\":5},"
        "\"modelVersion\":\"gemini-3-pro\",\"responseId\":\"r1\"}";
    lf_answer a;
    lf_tool_call calls[2];
    lf_message msgs[4];
    lf_request_params p;
    json_object *b;
    size_t i;

    lf_answer_init(&a);
    LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, body, strlen(body), &a, NULL), LF_WIRE_OK);
    CHECK_BUF(a.text, "On it.");
    CHECK_BUF(a.reasoning, "TXT");
    CHECK_BUF(a.finish_reason, LF_FINISH_TOOL_CALLS);
    CHECK_BUF(a.model, "gemini-3-pro");
    CHECK_BUF(a.id, "r1");
    LF_CHECK_INT(a.input_tokens, 105);
    LF_CHECK_INT(a.output_tokens, 37);
    LF_CHECK_INT(a.cached_input_tokens, 64);
    LF_CHECK_INT(a.n_tool_calls, 2);
    CHECK_BUF(a.tool_calls[0].id, "fc_1");
    CHECK_BUF(a.tool_calls[0].signature, "SIG/1+=");
    CHECK_BUF(a.tool_calls[1].arguments, "{}");
    LF_CHECK_INT(a.tool_calls[1].signature.len, 0);
    for (i = 0; i < 2; i++)
        calls[i] = (lf_tool_call){ .id = i ? "x2" : "x1", .name = a.tool_calls[i].name.ptr,
                                   .arguments = a.tool_calls[i].arguments.ptr, .arguments_len = a.tool_calls[i].arguments.len,
                                   .signature = a.tool_calls[i].signature.ptr, .signature_len = a.tool_calls[i].signature.len };
    msgs[0] = (lf_message){ .role = "user", .content = "q", .content_len = 1 };
    msgs[1] = (lf_message){ .role = "assistant", .content = a.text.ptr, .content_len = a.text.len, .tool_calls = calls,
                            .n_tool_calls = 2, .reasoning = a.reasoning.ptr, .reasoning_len = a.reasoning.len,
                            .reasoning_api = LF_API_GEMINI, .reasoning_origin = "g" };
    msgs[2] = (lf_message){ .role = "tool", .content = "r1", .content_len = 2, .tool_call_id = "x1" };
    msgs[3] = (lf_message){ .role = "tool", .content = "r2", .content_len = 2, .tool_call_id = "x2" };
    p = (lf_request_params){ .api = LF_API_GEMINI, .model = "m", .messages = msgs, .n_messages = 4, .tools = loop_tools,
                             .n_tools = 2, .origin = "g" };
    b = build(&p);
    LF_CHECK_STR(jstr(part(b, 1, 0), "thoughtSignature"), "TXT");
    LF_CHECK_STR(jstr(part(b, 1, 1), "thoughtSignature"), "SIG/1+=");
    LF_CHECK(jget(part(b, 1, 2), "thoughtSignature") == NULL);
    json_object_put(b);
    lf_answer_free(&a);
}

static void test_request_shapes(void)
{
    static const char schema[] = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
                                 "\"required\":[\"n\"],\"additionalProperties\":false}";
    lf_message m = { .role = "user", .content = "Hi", .content_len = 2 };
    lf_request_params p = { .api = LF_API_GEMINI, .model = "m", .messages = &m, .n_messages = 1 };
    json_object *b = build(&p), *cfg, *fc;

    /* Nothing set: no generationConfig, no tools, no systemInstruction. */
    LF_CHECK(jget(b, "generationConfig") == NULL && jget(b, "tools") == NULL && jget(b, "systemInstruction") == NULL);
    LF_CHECK_STR(jstr(part(b, 0, 0), "text"), "Hi");
    json_object_put(b);

    p.has_temperature = 1;
    p.temperature = 0.25;
    p.max_tokens = 300;
    p.json_mode = 1;
    p.system = "Sys";
    p.system_len = 3;
    b = build(&p);
    cfg = jget(b, "generationConfig");
    LF_CHECK(json_object_get_double(jget(cfg, "temperature")) == 0.25);
    LF_CHECK_INT(jlong(cfg, "maxOutputTokens"), 300);
    LF_CHECK_STR(jstr(cfg, "responseMimeType"), "application/json");
    LF_CHECK(strstr(jstr(jat(jget(jget(b, "systemInstruction"), "parts"), 0), "text"), LF_JSON_INSTRUCTION) != NULL);
    json_object_put(b);

    /* JSON mode with tools: the instruction, not the response type. */
    p.tools = loop_tools;
    p.n_tools = 2;
    b = build(&p);
    LF_CHECK(jget(jget(b, "generationConfig"), "responseMimeType") == NULL);
    LF_CHECK(strstr(jstr(jat(jget(jget(b, "systemInstruction"), "parts"), 0), "text"), LF_JSON_INSTRUCTION) != NULL);
    LF_CHECK(jget(b, "toolConfig") == NULL);
    fc = jat(jget(jat(jget(b, "tools"), 0), "functionDeclarations"), 1);
    LF_CHECK_STR(jstr(fc, "name"), "clock");
    LF_CHECK(json_same_text("{\"type\":\"object\",\"properties\":{}}", 34, jget(fc, "parametersJsonSchema")));
    json_object_put(b);

    /* Tool choices. */
    p.json_mode = 0;
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    b = build(&p);
    LF_CHECK_STR(jstr(jget(jget(b, "toolConfig"), "functionCallingConfig"), "mode"), "ANY");
    json_object_put(b);
    p.tool_choice = LF_TOOL_CHOICE_NONE;
    b = build(&p);
    LF_CHECK_STR(jstr(jget(jget(b, "toolConfig"), "functionCallingConfig"), "mode"), "NONE");
    json_object_put(b);
    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "clock";
    p.has_parallel_tool_calls = 1;   /* no such switch: nothing sent */
    b = build(&p);
    fc = jget(jget(b, "toolConfig"), "functionCallingConfig");
    LF_CHECK_STR(jstr(fc, "mode"), "ANY");
    LF_CHECK_STR(json_object_get_string(jat(jget(fc, "allowedFunctionNames"), 0)), "clock");
    LF_CHECK(strstr(json_object_to_json_string(b), "arallel") == NULL);
    json_object_put(b);

    /* A schema: JSON Schema as it is; refused beside tools, in the words Ruby shows. */
    p.schema = schema;
    build_fails(&p, lf_wire_schema_with_tools_refusal(LF_API_GEMINI));
    p.tools = NULL;
    p.n_tools = 0;
    p.tool_choice = LF_TOOL_CHOICE_UNSET;
    b = build(&p);
    cfg = jget(b, "generationConfig");
    LF_CHECK_STR(jstr(cfg, "responseMimeType"), "application/json");
    LF_CHECK(json_same_text(schema, strlen(schema), jget(cfg, "responseJsonSchema")));
    /* A schema is no JSON mode: no instruction (the schema says it). */
    LF_CHECK_STR(jstr(jat(jget(jget(b, "systemInstruction"), "parts"), 0), "text"), "Sys");
    json_object_put(b);

    /* No messages: refused; an empty answer in the transcript is left out. */
    p = (lf_request_params){ .api = LF_API_GEMINI, .model = "m", .system = "S", .system_len = 1 };
    build_fails(&p, "a Gemini request needs at least one user or assistant message");
}

static void test_attachments(void)
{
    lf_attachment png = { .mime_type = "image/png", .filename = "a.png", .base64 = "iVBORw0KGgo=", .base64_len = 12 };
    lf_attachment pdf = { .mime_type = "application/pdf", .filename = "r.pdf", .base64 = "JVBERi0=", .base64_len = 8,
                          .url = "https://example.com/r.pdf" };
    lf_attachment url_only = { .mime_type = "image/jpeg", .filename = "u.jpg", .url = "https://example.com/u.jpg" };
    lf_attachment both[] = { png, pdf };
    lf_message m = { .role = "user", .content = "What is this?", .content_len = 13, .attachments = both, .n_attachments = 2 };
    lf_request_params p = { .api = LF_API_GEMINI, .model = "m", .messages = &m, .n_messages = 1 };
    json_object *b = build(&p);
    lf_buf why;

    LF_CHECK_STR(jstr(jget(part(b, 0, 0), "inlineData"), "mimeType"), "image/png");
    LF_CHECK_STR(jstr(jget(part(b, 0, 0), "inlineData"), "data"), "iVBORw0KGgo=");
    LF_CHECK_STR(jstr(jget(part(b, 0, 1), "inlineData"), "mimeType"), "application/pdf");   /* bytes, not its URL */
    LF_CHECK_STR(jstr(part(b, 0, 2), "text"), "What is this?");
    json_object_put(b);
    m.content_len = 0;
    m.content = "";
    b = build(&p);
    LF_CHECK_INT(jlen(jget(jat(jget(b, "contents"), 0), "parts")), 2);
    json_object_put(b);

    /* A URL alone: Gemini needs the bytes (Ruby downloads it, asked first). */
    m.attachments = &url_only;
    m.n_attachments = 1;
    build_fails(&p, "Gemini takes a file's bytes");
    lf_buf_init(&why);
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_only, "gemini", &why), LF_ATTACH_NO_URL);
    /* Nor does Claude on Vertex AI take Anthropic's url source. */
    p.api = LF_API_ANTHROPIC;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_only, NULL, &why), LF_ATTACH_TAKEN);
    p.layout = LF_LAYOUT_VERTEX;
    LF_CHECK_INT(lf_wire_attachment_refusal(&p, &url_only, NULL, &why), LF_ATTACH_NO_URL);
    LF_CHECK(strstr(lf_buf_cstr(&why), "Vertex AI takes a file's bytes") != NULL);
    lf_buf_free(&why);
}

/* A body's parse into an error, and what the classifier makes of it. */
static lf_verdict verdict_of(long status, const lf_wire_error *e, int in_stream)
{
    lf_facts f;

    memset(&f, 0, sizeof f);
    f.status = status;
    f.should_retry = -1;
    f.in_stream = in_stream;
    f.error_type = e->type.len ? e->type.ptr : NULL;
    f.error_code = e->code.len ? e->code.ptr : NULL;
    f.error_message = e->message.len ? e->message.ptr : NULL;
    return lf_classify(&f);
}

static void test_blocked(void)
{
    static const char *bodies[] = {
        "{\"promptFeedback\":{\"blockReason\":\"SAFETY\",\"safetyRatings\":[]},\"usageMetadata\":{\"promptTokenCount\":8}}",
        "{\"promptFeedback\":{\"blockReason\":\"OTHER\"}}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Once upon\"}]},\"finishReason\":\"SAFETY\"}]}",
        "{\"candidates\":[{\"finishReason\":\"RECITATION\",\"finishMessage\":\"cited\"}]}",
        "{\"candidates\":[{\"finishReason\":\"PROHIBITED_CONTENT\"}]}",
    };
    static const char *codes[] = { "SAFETY", "OTHER", "SAFETY", "RECITATION", "PROHIBITED_CONTENT" };
    lf_answer a;
    lf_wire_error e;
    lf_verdict v;
    size_t i;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, bodies[i], strlen(bodies[i]), &a, &e), LF_WIRE_ERROR_BODY);
        CHECK_BUF(e.type, "content_filter");
        CHECK_BUF(e.code, codes[i]);
        v = verdict_of(200, &e, 1);
        LF_CHECK_INT(v.kind, LF_E_CONTENT_POLICY);
        LF_CHECK(!v.failover && !v.retry_same);
    }
    LF_CHECK(strstr(lf_buf_cstr(&e.message), "PROHIBITED_CONTENT") != NULL);
    /* A call the model could not write: its failure, retried and failed over. */
    {
        const char *malformed = "{\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\","
                                "\"finishMessage\":\"Malformed function call: print(x\"}]}";

        LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, malformed, strlen(malformed), &a, &e), LF_WIRE_ERROR_BODY);
        CHECK_BUF(e.type, "MALFORMED_FUNCTION_CALL");
        v = verdict_of(200, &e, 1);
        LF_CHECK_INT(v.kind, LF_E_SERVER);
        LF_CHECK(v.retry_same && v.failover);
    }
    /* Other finishes are answers. */
    {
        const char *cut = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"MAX_TOKENS\"}]}";

        LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, cut, strlen(cut), &a, &e), LF_WIRE_OK);
    }
    CHECK_BUF(a.finish_reason, "max_tokens");
    LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, "{\"candidates\":[{\"finishReason\":\"OTHER\"}]}", strlen("{\"candidates\":[{\"finishReason\":\"OTHER\"}]}"), &a, &e),
                 LF_WIRE_OK);
    CHECK_BUF(a.finish_reason, "other");
    /* Not the protocol. */
    LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, "{\"usageMetadata\":{}}", strlen("{\"usageMetadata\":{}}"), &a, &e), LF_WIRE_INVALID);
    LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, "[1]", strlen("[1]"), &a, &e), LF_WIRE_INVALID);
    LF_CHECK_INT(lf_wire_parse_response(LF_API_GEMINI, "nope", strlen("nope"), &a, &e), LF_WIRE_INVALID);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

static int feed(stream_run *r, const char *data)
{
    lf_sse_event ev = { .event = "", .event_len = 0, .data = data, .data_len = strlen(data) };
    const char *d = NULL;
    size_t dn = 0;
    int rc = lf_stream_event(&r->st, &ev, &d, &dn);

    if (d && dn) lf_buf_append(&r->deltas, d, dn);
    return rc;
}

static void stream_start(stream_run *r)
{
    memset(r, 0, sizeof *r);
    lf_stream_init(&r->st, LF_API_GEMINI);
    lf_buf_init(&r->deltas);
}

static void test_streams(void)
{
    stream_run r;
    lf_verdict v;

    /* Text, thoughts left out, calls published at the finish, usage from the last chunk. */
    stream_start(&r);
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"plan\",\"thought\":true},{\"text\":\"Hel\"}]}}],"
                          "\"usageMetadata\":{\"trafficType\":\"ON_DEMAND\"}}"), LF_STREAM_CONTINUE);
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"},{\"functionCall\":{\"name\":\"a\","
                          "\"args\":{\"x\":1}},\"thoughtSignature\":\"SA\"}]}}]}"), LF_STREAM_CONTINUE);
    LF_CHECK(!lf_stream_complete(&r.st));
    LF_CHECK_INT(r.st.answer.n_tool_calls, 0);   /* not before the stream completes */
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"b\"}},{\"text\":\"\","
                          "\"thoughtSignature\":\"ST\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":"
                          "{\"promptTokenCount\":9,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":6},"
                          "\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"rid\"}"), LF_STREAM_CONTINUE);
    LF_CHECK(lf_stream_complete(&r.st));
    CHECK_BUF(r.deltas, "Hello");
    CHECK_BUF(r.st.answer.finish_reason, LF_FINISH_TOOL_CALLS);
    LF_CHECK_INT(r.st.answer.n_tool_calls, 2);
    CHECK_BUF(r.st.answer.tool_calls[0].name, "a");
    CHECK_BUF(r.st.answer.tool_calls[0].signature, "SA");
    CHECK_BUF(r.st.answer.tool_calls[1].arguments, "{}");
    CHECK_BUF(r.st.answer.reasoning, "ST");
    LF_CHECK_INT(r.st.answer.input_tokens, 9);
    LF_CHECK_INT(r.st.answer.output_tokens, 10);
    /* After the finish: counts only. */
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"late\"}]}}],\"usageMetadata\":"
                          "{\"promptTokenCount\":9,\"candidatesTokenCount\":5}}"), LF_STREAM_CONTINUE);
    CHECK_BUF(r.st.answer.text, "Hello");
    LF_CHECK_INT(r.st.answer.output_tokens, 5);
    stream_run_free(&r);

    /* A stream withheld midway: an error, content policy, its text taken back. */
    stream_start(&r);
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Once\"}]}}]}"), LF_STREAM_CONTINUE);
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" upon\"}]},\"finishReason\":\"SAFETY\"}]}"),
                 LF_STREAM_ERROR);
    CHECK_BUF(r.st.answer.text, "Once");
    v = verdict_of(200, &r.st.error, 1);
    LF_CHECK_INT(v.kind, LF_E_CONTENT_POLICY);
    stream_run_free(&r);

    /* An error inside the stream: classified by its status name. */
    stream_start(&r);
    LF_CHECK_INT(feed(&r, "{\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\","
                          "\"status\":\"UNAVAILABLE\"}}"), LF_STREAM_ERROR);
    v = verdict_of(200, &r.st.error, 1);
    LF_CHECK_INT(v.kind, LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK(v.retry_same && v.failover);
    stream_run_free(&r);

    /* Malformed data; a stream that ends without a finishReason. */
    stream_start(&r);
    LF_CHECK_INT(feed(&r, "{\"candidates\": [{\"content\""), LF_STREAM_INVALID);
    LF_CHECK_INT(feed(&r, "\"text\""), LF_STREAM_INVALID);
    LF_CHECK_INT(feed(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}"), LF_STREAM_CONTINUE);
    LF_CHECK(!lf_stream_complete(&r.st));
    stream_run_free(&r);
}

/* What an event does to a stream is the same whether it is read from its
 * text (an event of text and counts) or from json-c's tree (every other):
 * each event goes as it is to one stream, and to another with an empty
 * promptFeedback, which blocks nothing and sends it to the tree reader. */
static int same_bytes(const lf_buf *x, const lf_buf *y)
{
    return x->len == y->len && (!x->len || memcmp(x->ptr, y->ptr, x->len) == 0);
}

static void same_as_tree(const char *const *events, size_t n)
{
    stream_run text, tree;
    lf_buf forced;
    size_t i;

    stream_start(&text);
    stream_start(&tree);
    lf_buf_init(&forced);
    for (i = 0; i < n; i++) {
        const char *open = strchr(events[i], '{');
        int rc;

        lf_buf_clear(&forced);
        lf_buf_append(&forced, events[i], (size_t)(open + 1 - events[i]));
        lf_buf_append_str(&forced, "\"promptFeedback\":{},");
        lf_buf_append_str(&forced, open + 1);
        rc = feed(&text, events[i]);
        LF_CHECK_INT(rc, feed(&tree, lf_buf_cstr(&forced)));
        if (!same_bytes(&text.st.answer.text, &tree.st.answer.text) ||
            !same_bytes(&text.st.answer.model, &tree.st.answer.model) ||
            !same_bytes(&text.st.answer.id, &tree.st.answer.id) || !same_bytes(&text.deltas, &tree.deltas) ||
            text.st.answer.input_tokens != tree.st.answer.input_tokens ||
            text.st.answer.output_tokens != tree.st.answer.output_tokens ||
            text.st.answer.cached_input_tokens != tree.st.answer.cached_input_tokens ||
            text.st.has_usage != tree.st.has_usage || text.st.finished != tree.st.finished) {
            fprintf(stderr, "event %zu read apart from the tree: %s\n", i, events[i]);
            lf_test_current_failed = 1;
        }
    }
    CHECK_BUF(text.st.answer.finish_reason, "stop");
    lf_buf_free(&forced);
    stream_run_free(&text);
    stream_run_free(&tree);
}

static void test_plain_events(void)
{
    static const char *const events[] = {
        /* The common event, escapes of every kind. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\\n\\\"b\\\"\\\\ \\/ \\b\\f\\r\\t \\u00e9 \\u20ac \\u0041\"}],"
        "\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":13,\"candidatesTokenCount\":2,"
        "\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":13}],\"thoughtsTokenCount\":137},"
        "\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r\\u00e9\"}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\\ud83d\\ude00 \\ud800 x \\udc00 \\u0000 end\"}]}}]}",
        /* A character split across events, a stray byte. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"euro \xE2\x82\"}]}}]}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\xAC, \xFF.\"}]}}]}",
        /* Repeated keys: the last counts. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"first\"}]}}],\"candidates\":[{\"content\":"
        "{\"parts\":[{\"text\":\"one\",\"text\":\"two\"}]}}],\"usageMetadata\":{\"promptTokenCount\":1,\"promptTokenCount\":2}}",
        /* Counts that are no plain integers, big ones, partial ones. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"d\"}]}}],\"usageMetadata\":{\"promptTokenCount\":13.0,"
        "\"candidatesTokenCount\":1e1}}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}],\"usageMetadata\":{\"promptTokenCount\":"
        "99999999999999999999,\"candidatesTokenCount\":-1}}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"c\"}]}}],\"usageMetadata\":{\"promptTokenCount\":"
        "999999999999999999,\"candidatesTokenCount\":9223372036854775807,\"cachedContentTokenCount\":4,"
        "\"toolUsePromptTokenCount\":3}}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"t\"}]}}],\"usageMetadata\":{\"thoughtsTokenCount\":5}}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"u\"}]}}],\"usageMetadata\":null}",
        /* Keys spelled with escapes. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"te\\u0078t\":\"esc\"}]}}]}",
        "{\"candid\\u0061tes\":[{\"content\":{\"parts\":[{\"text\":\"esc2\"}]}}]}",
        /* Members read nowhere, with look-alikes inside. */
        "{\"createTime\":\"x\",\"candidates\":[{\"safetyRatings\":[{\"text\":\"no\",\"finishReason\":\"SAFETY\"}],"
        "\"content\":{\"role\":\"model\",\"parts\":[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"AA\"}},"
        "{\"text\":\"yes\"}]},\"citationMetadata\":{\"citations\":[{\"text\":\"no\"}]}}],\"sdk\":{\"error\":[1,{}]}}",
        /* Thoughts and signatures; several candidates; odd types. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"think\",\"thought\":true},{\"text\":\"said\","
        "\"thoughtSignature\":\"sig\"},{\"text\":\"t\",\"thought\":false}]}}]}",
        "{\"candidates\":[{\"index\":1,\"content\":{\"parts\":[{\"text\":\"c1\"}]}},{\"index\":0,\"content\":"
        "{\"parts\":[{\"text\":\"c0\"}]}}]}",
        "{\"candidates\":[{\"index\":1,\"content\":{\"parts\":[{\"text\":\"only\"}]}}]}",
        "{\"candidates\":[5]}",
        "{\"candidates\":[]}",
        "{\"candidates\":[{}]}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":null},{\"text\":5},{\"text\":\"ok\"},{\"text\":\"\"}]}}],"
        "\"modelVersion\":null,\"responseId\":7}",
        "{\"candidates\":[{\"content\":{\"parts\":{\"text\":\"not a list\"}}}]}",
        "{\"candidates\":[{\"content\":\"str\"}]}",
        "{\"candidates\":[{\"content\":{\"parts\":[]}}]}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"1\"},{\"text\":\"2\"},{\"text\":\"3\"},{\"text\":\"4\"},"
        "{\"text\":\"5\"},{\"text\":\"6\"},{\"text\":\"7\"},{\"text\":\"8\"},{\"text\":\"9\"}]}}]}",
        "{\"error\":null,\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"e\"}]}}]}",
        "  \r\n {\"candidates\" : [ { \"content\" : { \"parts\" : [ { \"text\" : \"sp\" } ] } } ] ,"
        " \"usageMetadata\" : { \"promptTokenCount\" : 3 } }  ",
        "{\"candidates\":[",
        /* The finish, and counts after it. */
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"end\"}]},\"finishReason\":\"STOP\"}]}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"late\"}]}}],\"usageMetadata\":{\"promptTokenCount\":21}}",
    };

    same_as_tree(events, sizeof events / sizeof *events);
}

static void check_google_error(const char *body, long status, const char *type, const char *code, double retry_after,
                               lf_kind kind)
{
    lf_wire_error e;
    lf_verdict v;

    lf_wire_error_init(&e);
    LF_CHECK_INT(lf_wire_parse_error(body, strlen(body), &e), 1);
    CHECK_BUF(e.type, type);
    CHECK_BUF(e.code, code);
    LF_CHECK(e.retry_after == retry_after);
    v = verdict_of(status, &e, 0);
    if (v.kind != kind) fprintf(stderr, "%s: kind %s, want %s\n", body, lf_kind_name(v.kind), lf_kind_name(kind));
    LF_CHECK_INT(v.kind, kind);
    lf_wire_error_free(&e);
}

static void test_errors(void)
{
    /* A wrong key is a 400 on Gemini: never failed over. */
    check_google_error("{\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\","
                       "\"status\":\"INVALID_ARGUMENT\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\","
                       "\"reason\":\"API_KEY_INVALID\",\"domain\":\"googleapis.com\"}]}}",
                       400, "INVALID_ARGUMENT", "API_KEY_INVALID", -1, LF_E_UNAUTHORIZED);
    check_google_error("{\"error\":{\"code\":400,\"message\":\"Invalid key\",\"status\":\"INVALID_ARGUMENT\","
                       "\"details\":[{\"reason\":\"API_KEY_INVALID\"}]}}",
                       400, "INVALID_ARGUMENT", "API_KEY_INVALID", -1, LF_E_UNAUTHORIZED);
    /* A rate limit with its wait in the body. */
    check_google_error("{\"error\":{\"code\":429,\"message\":\"Resource exhausted.\",\"status\":\"RESOURCE_EXHAUSTED\","
                       "\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"0.250s\"}]}}",
                       429, "RESOURCE_EXHAUSTED", "429", 0.25, LF_E_RATE_LIMIT);
    /* Money: prepaid credits spent (429 before, 402 now). */
    check_google_error("{\"error\":{\"code\":429,\"message\":\"Your prepayment credits are depleted. Please go to AI "
                       "Studio.\",\"status\":\"RESOURCE_EXHAUSTED\"}}",
                       429, "RESOURCE_EXHAUSTED", "429", -1, LF_E_PROVIDER_QUOTA);
    check_google_error("{\"error\":{\"code\":402,\"message\":\"Your prepayment credits are depleted.\","
                       "\"status\":\"RESOURCE_EXHAUSTED\"}}",
                       402, "RESOURCE_EXHAUSTED", "402", -1, LF_E_PROVIDER_QUOTA);
    check_google_error("{\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}",
                       503, "UNAVAILABLE", "503", -1, LF_E_SERVICE_UNAVAILABLE);
    check_google_error("{\"error\":{\"code\":500,\"message\":\"Internal error.\",\"status\":\"INTERNAL\"}}",
                       500, "INTERNAL", "500", -1, LF_E_SERVER);
    check_google_error("{\"error\":{\"code\":403,\"message\":\"Permission denied on resource project p1.\","
                       "\"status\":\"PERMISSION_DENIED\",\"details\":[{\"reason\":\"CONSUMER_INVALID\"}]}}",
                       403, "PERMISSION_DENIED", "CONSUMER_INVALID", -1, LF_E_FORBIDDEN);
    check_google_error("{\"error\":{\"code\":401,\"message\":\"Request had invalid authentication credentials.\","
                       "\"status\":\"UNAUTHENTICATED\",\"details\":[{\"reason\":\"ACCESS_TOKEN_EXPIRED\"}]}}",
                       401, "UNAUTHENTICATED", "ACCESS_TOKEN_EXPIRED", -1, LF_E_UNAUTHORIZED);
    check_google_error("{\"error\":{\"code\":400,\"message\":\"User location is not supported for the API use.\","
                       "\"status\":\"FAILED_PRECONDITION\"}}",
                       400, "FAILED_PRECONDITION", "400", -1, LF_E_BAD_REQUEST);
    check_google_error("{\"error\":{\"code\":404,\"message\":\"models/x is not found for API version v1beta\","
                       "\"status\":\"NOT_FOUND\"}}",
                       404, "NOT_FOUND", "404", -1, LF_E_NOT_FOUND);
    /* A duration that is not one: no wait. */
    check_google_error("{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"message\":\"m\","
                       "\"details\":[{\"retryDelay\":\"soon\"}]}}",
                       429, "RESOURCE_EXHAUSTED", "429", -1, LF_E_RATE_LIMIT);
}

static void test_embeddings(void)
{
    lf_text in[2] = { { "red apple", 9 }, { "green pear", 10 } };
    lf_request_params p = { .api = LF_API_GEMINI, .model = "models/gemini-embedding-001", .kind = LF_REQUEST_EMBEDDINGS,
                            .inputs = in, .n_inputs = 2 };
    const char *answer = "{\"embeddings\":[{\"values\":[0.5,-1]},{\"values\":[2,0.25]}]}";
    lf_answer a;
    lf_buf out, err;
    json_object *b;
    lf_text many[101];
    size_t i;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    b = parse(out.ptr, out.len);
    LF_CHECK_INT(jlen(jget(b, "requests")), 2);
    LF_CHECK_STR(jstr(jat(jget(b, "requests"), 1), "model"), "models/gemini-embedding-001");
    LF_CHECK_STR(jstr(jat(jget(jget(jat(jget(b, "requests"), 1), "content"), "parts"), 0), "text"), "green pear");
    json_object_put(b);
    for (i = 0; i < 101; i++) many[i] = in[0];
    p.inputs = many;
    p.n_inputs = 101;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), -1);
    LF_CHECK(strstr(lf_buf_cstr(&err), "1 to 100 texts") != NULL);
    p.layout = LF_LAYOUT_VERTEX;
    p.n_inputs = 1;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), -1);

    lf_answer_init(&a);
    LF_CHECK_INT(lf_wire_parse_embeddings_for(LF_API_GEMINI, answer, strlen(answer), 2, &a, NULL), LF_WIRE_OK);
    LF_CHECK_INT(a.n_vectors, 2);
    LF_CHECK_INT(a.dims, 2);
    LF_CHECK(a.vectors && a.vectors[1] == -1 && a.vectors[3] == 0.25);
    LF_CHECK_INT(a.output_tokens, 0);
    /* One vector short, ragged, or not numbers: never taken for a whole answer. */
    LF_CHECK_INT(lf_wire_parse_embeddings_for(LF_API_GEMINI, answer, strlen(answer), 3, &a, NULL), LF_WIRE_INVALID);
    LF_CHECK(a.vectors == NULL);
    LF_CHECK_INT(lf_wire_parse_embeddings_for(LF_API_GEMINI, "{\"embeddings\":[{\"values\":[1]},{\"values\":[1,2]}]}", strlen("{\"embeddings\":[{\"values\":[1]},{\"values\":[1,2]}]}"), 2, &a, NULL), LF_WIRE_INVALID);
    LF_CHECK_INT(lf_wire_parse_embeddings_for(LF_API_GEMINI, "{\"embeddings\":[{\"values\":[\"1\"]}]}", strlen("{\"embeddings\":[{\"values\":[\"1\"]}]}"), 1, &a, NULL),
                 LF_WIRE_INVALID);
    {
        const char *error = "{\"error\":{\"code\":400,\"status\":\"INVALID_ARGUMENT\",\"message\":\"m\"}}";

        LF_CHECK_INT(lf_wire_parse_embeddings_for(LF_API_GEMINI, error, strlen(error), 1, &a, NULL), LF_WIRE_ERROR_BODY);
    }
    lf_answer_free(&a);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

int main(void)
{
    LF_RUN(test_recorded);
    LF_RUN(test_paths);
    LF_RUN(test_prepare);
    LF_RUN(test_signatures);
    LF_RUN(test_answer_round_trip);
    LF_RUN(test_request_shapes);
    LF_RUN(test_attachments);
    LF_RUN(test_blocked);
    LF_RUN(test_streams);
    LF_RUN(test_plain_events);
    LF_RUN(test_errors);
    LF_RUN(test_embeddings);
    return lf_test_summary("test_wire_gemini");
}
