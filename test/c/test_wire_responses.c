/* OpenAI's Responses API in the wire layer, and Azure's layouts. Every
 * recorded interaction of spec/fixtures/recorded/responses (plain and
 * streamed answers, tool calls, reasoning items, a context-length 400) is
 * parsed and compared with the test's own reading of it; every recorded
 * request is rebuilt from its transcript, with the reasoning state taken from
 * this parser's reading of the answers before it (so the encrypted_content
 * that goes back is the one the next recorded request carried: the final
 * item's, not response.output_item.added's); every stream is cut before its
 * terminal event. Then by hand: in-stream failures and their classes, the
 * request's parts, reasoning state dropped by other protocols and origins,
 * URLs and key headers of each layout. */
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
#include "wire_stream_run.h"
#include "wire_test_json.h"

#define MAX_ITEMS 64

/* ---------------------------------------------------------- helpers */

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static const char *fixtures_dir(void)
{
    static char dir[4096];
    const char *base = getenv("LF_FIXTURES");

    snprintf(dir, sizeof dir, "%s/responses", base && *base ? base : "spec/fixtures/recorded");
    return dir;
}

/* The data of every event of a recorded SSE body, as json-c objects (the
 * test's own reading: one "data:" line per event, as OpenAI sends them). */
typedef struct events {
    json_object *ev[512];
    size_t n;
} events;

static void events_read(const char *body, events *e)
{
    const char *p = body;

    e->n = 0;
    while ((p = strstr(p, "data: ")) != NULL && e->n < 512) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p - 6) : strlen(p + 6);

        e->ev[e->n++] = parse(p + 6, n);
        p += 6 + n;
    }
}

static void events_free(events *e)
{
    size_t i;

    for (i = 0; i < e->n; i++) json_object_put(e->ev[i]);
    e->n = 0;
}

/* ---------------------------------------------------------- streams */

/* A hand-built event straight into the state. */
static int ev(lf_stream_state *s, const char *data)
{
    lf_sse_event e = { "", 0, data, strlen(data) };
    const char *d;
    size_t dn;

    return lf_stream_event(s, &e, &d, &dn);
}

/* ---------------------------------------------------------- an answer, read by the test */

typedef struct want {
    lf_buf text;
    const char *call_id[MAX_ITEMS], *name[MAX_ITEMS], *args[MAX_ITEMS];
    size_t n_calls;
    const char *secret[MAX_ITEMS];      /* the final reasoning items' encrypted_content */
    const char *added[MAX_ITEMS];       /* what response.output_item.added said of them */
    size_t n_secrets, n_added;
    json_object *usage;
    const char *model, *id, *status;
} want;

static void want_calls_and_secrets(want *w, json_object *item)
{
    const char *type = jstr(item, "type");

    if (streq(type, "function_call") && w->n_calls < MAX_ITEMS) {
        w->call_id[w->n_calls] = jstr(item, "call_id");
        w->name[w->n_calls] = jstr(item, "name");
        w->args[w->n_calls++] = jstr(item, "arguments");
    } else if (streq(type, "reasoning") && jstr(item, "encrypted_content") && w->n_secrets < MAX_ITEMS) {
        w->secret[w->n_secrets++] = jstr(item, "encrypted_content");
    }
}

/* A plain answer: its message items' output_text parts, its calls and
 * reasoning items in the output array. */
static void want_from_body(want *w, json_object *root)
{
    json_object *output = jget(root, "output");
    size_t i, k;

    for (i = 0; i < json_object_array_length(output); i++) {
        json_object *item = json_object_array_get_idx(output, i);
        json_object *content = jget(item, "content");

        want_calls_and_secrets(w, item);
        if (!streq(jstr(item, "type"), "message")) continue;
        for (k = 0; k < json_object_array_length(content); k++) {
            json_object *part = json_object_array_get_idx(content, k);

            if (streq(jstr(part, "type"), "output_text")) lf_buf_append_str(&w->text, jstr(part, "text"));
        }
    }
    w->usage = jget(root, "usage");
    w->model = jstr(root, "model");
    w->id = jstr(root, "id");
    w->status = jstr(root, "status");
}

/* A stream: the deltas' text, the done items' calls and reasoning, the
 * added items' encrypted_content, the completed response's usage. */
static void want_from_events(want *w, events *e)
{
    size_t i;

    for (i = 0; i < e->n; i++) {
        const char *type = jstr(e->ev[i], "type");
        json_object *item = jget(e->ev[i], "item");

        if (streq(type, "response.output_text.delta")) lf_buf_append_str(&w->text, jstr(e->ev[i], "delta"));
        if (streq(type, "response.output_item.done")) want_calls_and_secrets(w, item);
        if (streq(type, "response.output_item.added") && jstr(item, "encrypted_content") && w->n_added < MAX_ITEMS)
            w->added[w->n_added++] = jstr(item, "encrypted_content");
        if (streq(type, "response.completed")) {
            json_object *r = jget(e->ev[i], "response");

            w->usage = jget(r, "usage");
            w->model = jstr(r, "model");
            w->id = jstr(r, "id");
            w->status = jstr(r, "status");
        }
    }
}

/* The parsed answer against the test's reading. */
static void check_answer(const char *file, const lf_answer *a, const want *w)
{
    json_object *details = jget(w->usage, "input_tokens_details");
    json_object *kept = a->reasoning.len ? parse(a->reasoning.ptr, a->reasoning.len) : NULL;
    size_t i;

    if (!buf_is(&a->text, lf_buf_cstr(&w->text))) {
        fprintf(stderr, "%s: text differs\n", file);
        lf_test_current_failed = 1;
    }
    CHECK_BUF(a->model, w->model);
    CHECK_BUF(a->id, w->id);
    LF_CHECK_INT(a->input_tokens, jlong(w->usage, "input_tokens"));
    LF_CHECK_INT(a->output_tokens, jlong(w->usage, "output_tokens"));
    LF_CHECK_INT(a->cached_input_tokens, jlong(details, "cached_tokens"));
    LF_CHECK_INT(a->cache_write_tokens, jlong(details, "cache_write_tokens"));
    LF_CHECK_INT(a->n_tool_calls, w->n_calls);
    for (i = 0; i < a->n_tool_calls && i < w->n_calls; i++) {
        CHECK_BUF(a->tool_calls[i].id, w->call_id[i]);
        CHECK_BUF(a->tool_calls[i].name, w->name[i]);
        CHECK_BUF(a->tool_calls[i].arguments, w->args[i]);
    }
    CHECK_BUF(a->finish_reason, w->n_calls ? LF_FINISH_TOOL_CALLS : "stop");
    /* The reasoning state: the final items' encrypted_content, in order, never
     * the added one; and nothing else a host could look up (no id). */
    LF_CHECK_INT(kept ? json_object_array_length(kept) : 0, w->n_secrets);
    for (i = 0; kept && i < json_object_array_length(kept) && i < w->n_secrets; i++) {
        json_object *item = json_object_array_get_idx(kept, i);

        LF_CHECK_STR(jstr(item, "type"), "reasoning");
        LF_CHECK_STR(jstr(item, "encrypted_content"), w->secret[i]);
        LF_CHECK(jget(item, "id") == NULL);
        LF_CHECK(i >= w->n_added || !streq(jstr(item, "encrypted_content"), w->added[i]));
    }
    json_object_put(kept);
}

/* ---------------------------------------------------------- a recorded request, rebuilt */

/* The recorded request as the one form of lf_message. The reasoning items of
 * each assistant turn are not taken from the request: each run of them is
 * the reasoning state this parser kept from the answers before it, in order
 * (answers[]). */
typedef struct transcript {
    lf_message m[MAX_ITEMS];
    lf_tool_call calls[MAX_ITEMS];
    lf_tool tools[16];
    char *owned[MAX_ITEMS];
    size_t n, n_calls, n_tools, n_owned;
} transcript;

static const char *own(transcript *t, const char *s)
{
    size_t n = strlen(s);
    char *c = malloc(n + 1);

    memcpy(c, s, n + 1);
    t->owned[t->n_owned++] = c;
    return c;
}

static void transcript_free(transcript *t)
{
    size_t i;

    for (i = 0; i < t->n_owned; i++) free(t->owned[i]);
}

/* A message's text: a string, or its text parts. */
static const char *text_of(transcript *t, json_object *content)
{
    lf_buf b;
    const char *s;
    size_t i;

    if (json_object_is_type(content, json_type_string)) return json_object_get_string(content);
    lf_buf_init(&b);
    for (i = 0; content && i < json_object_array_length(content); i++)
        lf_buf_append_str(&b, jstr(json_object_array_get_idx(content, i), "text"));
    s = own(t, lf_buf_cstr(&b));
    lf_buf_free(&b);
    return s;
}

/* Returns how many answers' reasoning it used; -1 when the request has more
 * runs of reasoning items than answers kept any. */
static int transcript_read(transcript *t, json_object *req, lf_buf *answers, size_t n_answers)
{
    json_object *input = jget(req, "input"), *tools = jget(req, "tools");
    const lf_buf *pending = NULL;
    size_t i, used = 0;
    int in_run = 0;

    memset(t, 0, sizeof *t);
    for (i = 0; i < json_object_array_length(input); i++) {
        json_object *item = json_object_array_get_idx(input, i);
        const char *type = jstr(item, "type"), *role = jstr(item, "role");
        lf_message *m = &t->m[t->n];

        if (streq(type, "reasoning")) {
            if (!in_run) {
                if (used == n_answers) return -1;
                pending = &answers[used++];
            }
            in_run = 1;
            continue;
        }
        in_run = 0;
        if (streq(type, "function_call")) {
            lf_message *last = t->n ? &t->m[t->n - 1] : NULL;

            if (!last || !streq(last->role, "assistant") || pending) {
                m->role = "assistant";
                m->content = "";
                m->tool_calls = &t->calls[t->n_calls];
                last = m;
                t->n++;
            }
            t->calls[t->n_calls].id = jstr(item, "call_id");
            t->calls[t->n_calls].name = jstr(item, "name");
            t->calls[t->n_calls].arguments = jstr(item, "arguments");
            t->calls[t->n_calls].arguments_len = strlen(jstr(item, "arguments"));
            t->n_calls++;
            last->n_tool_calls++;
            m = last;
        } else if (streq(type, "function_call_output")) {
            m->role = "tool";
            m->tool_call_id = jstr(item, "call_id");
            m->content = jstr(item, "output");
            m->content_len = strlen(m->content);
            t->n++;
        } else if (role) {
            m->role = role;
            m->content = text_of(t, jget(item, "content"));
            m->content_len = strlen(m->content);
            t->n++;
        }
        if (pending && streq(m->role, "assistant")) {
            m->reasoning = pending->ptr;
            m->reasoning_len = pending->len;
            m->reasoning_api = LF_API_RESPONSES;
            m->reasoning_origin = "openai";
            pending = NULL;
        }
    }
    for (i = 0; tools && i < json_object_array_length(tools) && i < 16; i++) {
        json_object *tool = json_object_array_get_idx(tools, i);

        t->tools[i].name = jstr(tool, "name");
        t->tools[i].description = jstr(tool, "description");
        t->tools[i].parameters = own(t, json_object_to_json_string_ext(jget(tool, "parameters"), JSON_C_TO_STRING_PLAIN));
        t->n_tools++;
    }
    return (int)used;
}

/* A message item's content as an array of text parts, whichever form it was
 * sent in: a string is the same message as one part. */
static json_object *normalized_input(json_object *input)
{
    json_object *out = json_object_new_array();
    size_t i;

    for (i = 0; i < json_object_array_length(input); i++) {
        json_object *item = json_object_array_get_idx(input, i), *copy = NULL, *content = jget(item, "content");

        json_object_deep_copy(item, &copy, NULL);
        if (jstr(item, "role") && json_object_is_type(content, json_type_string)) {
            json_object *parts = json_object_new_array(), *part = json_object_new_object();

            json_object_object_add(part, "type", json_object_new_string(streq(jstr(item, "role"), "assistant")
                                                                            ? "output_text" : "input_text"));
            json_object_object_add(part, "text", json_object_new_string(json_object_get_string(content)));
            json_object_array_add(parts, part);
            json_object_object_add(copy, "content", parts);
        }
        json_object_array_add(out, copy);
    }
    return out;
}

static int same_member(json_object *a, json_object *b, const char *key)
{
    json_object *x = jget(a, key), *y = jget(b, key);

    return (!x && !y) || (x && y && json_object_equal(x, y));
}

static void check_rebuilt(const char *file, size_t at, json_object *req, lf_buf *answers, size_t n_answers)
{
    json_object *format = jget(jget(req, "text"), "format"), *temperature = jget(req, "temperature");
    json_object *built, *want_in, *got_in;
    lf_request_params p;
    transcript t;
    lf_buf out, err, instructions;

    if (transcript_read(&t, req, answers, n_answers) < 0) {
        fprintf(stderr, "%s #%zu: more reasoning runs than answers with reasoning\n", file, at);
        lf_test_current_failed = 1;
        transcript_free(&t);
        return;
    }
    memset(&p, 0, sizeof p);
    p.api = LF_API_RESPONSES;
    p.model = jstr(req, "model");
    p.messages = t.m;
    p.n_messages = t.n;
    p.system = jstr(req, "instructions");
    p.system_len = p.system ? strlen(p.system) : 0;
    p.stream = json_object_get_boolean(jget(req, "stream"));
    p.has_temperature = temperature != NULL;
    p.temperature = temperature ? json_object_get_double(temperature) : 0;
    p.json_mode = streq(jstr(format, "type"), "json_object");
    p.tools = t.tools;
    p.n_tools = t.n_tools;
    p.origin = "openai";
    p.encrypted_reasoning = jget(req, "include") != NULL;
    lf_buf_init(&out);
    lf_buf_init(&err);
    lf_buf_init(&instructions);
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    built = parse(out.ptr, out.len);
    LF_CHECK(built != NULL);
    want_in = normalized_input(jget(req, "input"));
    got_in = normalized_input(jget(built, "input"));
    if (!json_object_equal(want_in, got_in)) {
        fprintf(stderr, "%s #%zu: input differs\n  want %s\n  got  %s\n", file, at,
                json_object_to_json_string(want_in), json_object_to_json_string(got_in));
        lf_test_current_failed = 1;
    }
    /* JSON mode adds its instruction after the caller's. */
    if (p.system) lf_buf_append_str(&instructions, p.system);
    if (p.system && p.json_mode) lf_buf_append_str(&instructions, "\n\n");
    if (p.json_mode) lf_buf_append_str(&instructions, LF_JSON_INSTRUCTION);
    if (instructions.len) LF_CHECK_STR(jstr(built, "instructions"), lf_buf_cstr(&instructions));
    else LF_CHECK(jget(built, "instructions") == NULL);
    LF_CHECK(same_member(req, built, "model"));
    LF_CHECK(same_member(req, built, "tools"));
    LF_CHECK(same_member(req, built, "text"));
    LF_CHECK(same_member(req, built, "stream"));
    LF_CHECK(same_member(req, built, "store"));
    LF_CHECK(same_member(req, built, "include"));
    /* 0.0 and 0 are one temperature. */
    LF_CHECK((temperature != NULL) == (jget(built, "temperature") != NULL));
    if (temperature) LF_CHECK(json_object_get_double(jget(built, "temperature")) == p.temperature);
    json_object_put(want_in);
    json_object_put(got_in);
    json_object_put(built);
    lf_buf_free(&out);
    lf_buf_free(&err);
    lf_buf_free(&instructions);
    transcript_free(&t);
}

/* ---------------------------------------------------------- every recording */

typedef struct counts {
    int files, answers, streams, errors, rebuilt, cuts, secrets;
} counts;

/* Every prefix of the stream that ends before its terminal event, at an
 * event's end and inside an event: incomplete, no calls, no reasoning. */
static void check_cuts(const char *body, counts *c)
{
    const char *end = strstr(body, "event: response.completed");
    const char *p = body;

    LF_CHECK(end != NULL);
    while (end && (p = strstr(p, "\n\n")) != NULL && p < end) {
        size_t at = (size_t)(p - body) + 2, k;

        for (k = 0; k < 2; k++) {
            stream_run r;
            size_t n = k ? at - 7 : at;

            stream_run_body(&r, LF_API_RESPONSES, body, n, n);
            LF_CHECK(!lf_stream_complete(&r.st));
            LF_CHECK_INT(r.st.answer.n_tool_calls, 0);
            LF_CHECK_INT(r.st.answer.reasoning.len, 0);
            stream_run_free(&r);
            c->cuts++;
        }
        p = p + 2;
    }
}

static void check_interaction(const char *file, size_t at, json_object *it, lf_buf *answers, size_t *n_answers,
                              counts *c)
{
    json_object *req = parse(jstr(jget(it, "request"), "body"), strlen(jstr(jget(it, "request"), "body")));
    json_object *resp = jget(it, "response");
    const char *body = jstr(resp, "body");
    size_t n = strlen(body);
    want w;

    check_rebuilt(file, at, req, answers, *n_answers);
    c->rebuilt++;
    memset(&w, 0, sizeof w);
    lf_buf_init(&w.text);
    if (jlong(resp, "status") != 200) {
        lf_wire_error e;
        lf_facts f;

        lf_wire_error_init(&e);
        LF_CHECK_INT(lf_wire_parse_error(body, n, &e), 1);
        memset(&f, 0, sizeof f);
        f.status = jlong(resp, "status");
        f.error_type = lf_buf_cstr(&e.type);
        f.error_code = lf_buf_cstr(&e.code);
        f.error_message = lf_buf_cstr(&e.message);
        f.should_retry = -1;
        /* The one error recorded: the input over the context window. */
        LF_CHECK_INT(lf_classify(&f).kind, LF_E_CONTEXT_LENGTH);
        lf_wire_error_free(&e);
        c->errors++;
    } else if (strstr(jstr(jget(resp, "headers"), "content-type"), "event-stream")) {
        size_t steps[] = { 1, 7, 4096 }, s;
        events e;

        events_read(body, &e);
        want_from_events(&w, &e);
        for (s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            stream_run r;

            stream_run_body(&r, LF_API_RESPONSES, body, n, steps[s]);
            LF_CHECK(lf_stream_complete(&r.st));
            LF_CHECK_INT(r.n_done, 1);
            LF_CHECK_INT(r.n_error + r.n_invalid + r.n_bad_delta, 0);
            LF_CHECK(buf_is(&r.deltas, lf_buf_cstr(&r.st.answer.text)));
            check_answer(file, &r.st.answer, &w);
            if (s == 0) lf_buf_copy(&answers[*n_answers], &r.st.answer.reasoning);
            stream_run_free(&r);
        }
        /* The recording shows why the final item's content is the one kept:
         * the added item's differs. */
        LF_CHECK(w.n_added == w.n_secrets);
        check_cuts(body, c);
        events_free(&e);
        c->streams++;
    } else {
        json_object *root = parse(body, n);
        lf_answer a;
        lf_wire_error e;

        want_from_body(&w, root);
        lf_answer_init(&a);
        lf_wire_error_init(&e);
        LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, body, n, &a, &e), LF_WIRE_OK);
        check_answer(file, &a, &w);
        lf_buf_copy(&answers[*n_answers], &a.reasoning);
        lf_answer_free(&a);
        lf_wire_error_free(&e);
        json_object_put(root);
        c->answers++;
    }
    c->secrets += (int)w.n_secrets;
    if (answers[*n_answers].len) (*n_answers)++;
    lf_buf_free(&w.text);
    json_object_put(req);
}

static void test_recorded(void)
{
    DIR *d = opendir(fixtures_dir());
    struct dirent *de;
    counts c = { 0 };

    LF_CHECK(d != NULL);
    while (d && (de = readdir(d)) != NULL) {
        char path[8192];
        json_object *doc, *its;
        lf_buf answers[8];
        size_t i, n_answers = 0;

        if (!strstr(de->d_name, ".json")) continue;
        snprintf(path, sizeof path, "%s/%s", fixtures_dir(), de->d_name);
        doc = json_object_from_file(path);
        its = jget(doc, "interactions");
        for (i = 0; i < 8; i++) lf_buf_init(&answers[i]);
        for (i = 0; i < json_object_array_length(its) && n_answers < 8; i++)
            check_interaction(de->d_name, i, json_object_array_get_idx(its, i), answers, &n_answers, &c);
        for (i = 0; i < 8; i++) lf_buf_free(&answers[i]);
        json_object_put(doc);
        c.files++;
    }
    if (d) closedir(d);
    printf("responses fixtures: %d files, %d plain answers, %d streams, %d errors, %d requests rebuilt, "
           "%d reasoning items, %d cut streams\n", c.files, c.answers, c.streams, c.errors, c.rebuilt, c.secrets,
           c.cuts);
    LF_CHECK(c.files == 14 && c.streams == 5 && c.errors == 1 && c.rebuilt == 27);
}

/* Figures read off the recordings by hand. */
static void test_recorded_by_hand(void)
{
    static const struct {
        const char *file, *text, *model;
        size_t at;
        long in, out;
    } cases[] = {
        { "chat_streaming_responses_openai_gpt-5-nano_supports_streaming_responses.json", "1, 2, 3",
          "gpt-5-nano-2025-08-07", 0, 13, 284 },
        { "chat_basic_chat_functionality_openai_gpt-5-nano_can_have_a_basic_conversation.json", "4",
          "gpt-5-nano-2025-08-07", 0, 13, 157 },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[8192];
        json_object *doc, *resp;
        const char *body;
        lf_answer a;

        snprintf(path, sizeof path, "%s/%s", fixtures_dir(), cases[i].file);
        doc = json_object_from_file(path);
        resp = jget(json_object_array_get_idx(jget(doc, "interactions"), cases[i].at), "response");
        body = jstr(resp, "body");
        lf_answer_init(&a);
        if (strstr(body, "event: ")) {
            stream_run r;

            stream_run_body(&r, LF_API_RESPONSES, body, strlen(body), 64);
            lf_buf_copy(&a.text, &r.st.answer.text);
            lf_buf_copy(&a.model, &r.st.answer.model);
            a.input_tokens = r.st.answer.input_tokens;
            a.output_tokens = r.st.answer.output_tokens;
            stream_run_free(&r);
        } else {
            LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, body, strlen(body), &a, NULL), LF_WIRE_OK);
        }
        CHECK_BUF(a.text, cases[i].text);
        CHECK_BUF(a.model, cases[i].model);
        LF_CHECK_INT(a.input_tokens, cases[i].in);
        LF_CHECK_INT(a.output_tokens, cases[i].out);
        lf_answer_free(&a);
        json_object_put(doc);
    }
}

/* ---------------------------------------------------------- in-stream failures */

static lf_kind in_stream_kind(const lf_wire_error *e)
{
    lf_facts f;

    memset(&f, 0, sizeof f);
    f.status = 200;
    f.in_stream = 1;
    f.should_retry = -1;
    f.error_type = e->type.len ? lf_buf_cstr(&e->type) : NULL;
    f.error_code = e->code.len ? lf_buf_cstr(&e->code) : NULL;
    f.error_message = e->message.len ? lf_buf_cstr(&e->message) : NULL;
    return lf_classify(&f).kind;
}

static void test_stream_failures(void)
{
    static const struct {
        const char *data;
        lf_kind kind;
    } cases[] = {
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\","
          "\"message\":\"slow down\"}}}", LF_E_RATE_LIMIT },
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
          "\"message\":\"oops\"}}}", LF_E_SERVER },
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"invalid_prompt\","
          "\"message\":\"Your input exceeds the context window of this model.\"}}}", LF_E_CONTEXT_LENGTH },
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"invalid_prompt\","
          "\"message\":\"Invalid prompt\"}}}", LF_E_BAD_REQUEST },
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":"
          "\"image_content_policy_violation\",\"message\":\"no\"}}}", LF_E_CONTENT_POLICY },
        { "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":null}}", LF_E_SERVER },
        { "{\"type\":\"error\",\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\","
          "\"param\":null,\"sequence_number\":3}", LF_E_PROVIDER_QUOTA },
        { "{\"type\":\"error\",\"code\":\"invalid_encrypted_content\",\"message\":\"The encrypted content gAAA... "
          "could not be verified.\",\"param\":null,\"sequence_number\":1}", LF_E_BAD_REQUEST },
        { "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"later\"}}", LF_E_RATE_LIMIT },
        { "{\"type\":\"error\",\"code\":null,\"message\":\"An error occurred while processing your request.\","
          "\"param\":null,\"sequence_number\":9}", LF_E_SERVER },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lf_stream_state s;

        lf_stream_init(&s, LF_API_RESPONSES);
        LF_CHECK_INT(ev(&s, "{\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}"), LF_STREAM_CONTINUE);
        LF_CHECK_INT(ev(&s, cases[i].data), LF_STREAM_ERROR);
        LF_CHECK(s.error.message.len > 0 || s.error.code.len > 0);
        LF_CHECK_INT(in_stream_kind(&s.error), cases[i].kind);
        LF_CHECK(!lf_stream_complete(&s));
        lf_stream_free(&s);
    }
}

static void test_stream_ends(void)
{
    lf_stream_state s;

    /* Cut short by max_output_tokens: complete, as chat completions' "length". */
    lf_stream_init(&s, LF_API_RESPONSES);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.output_text.delta\",\"delta\":\"a b\"}"), LF_STREAM_CONTINUE);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":"
                        "\"function_call\",\"status\":\"incomplete\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{\\\"a\"}}"),
                 LF_STREAM_CONTINUE);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
                        "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":5,"
                        "\"output_tokens\":9}}}"),
                 LF_STREAM_DONE);
    LF_CHECK(lf_stream_complete(&s));
    CHECK_BUF(s.answer.finish_reason, "length");
    CHECK_BUF(s.answer.text, "a b");
    /* A call cut by the limit is no call. */
    LF_CHECK_INT(s.answer.n_tool_calls, 0);
    LF_CHECK_INT(s.answer.output_tokens, 9);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.output_text.delta\",\"delta\":\"late\"}"), LF_STREAM_CONTINUE);
    CHECK_BUF(s.answer.text, "a b");
    lf_stream_free(&s);

    /* A server that sends no output_item.done: the terminal event's output. */
    lf_stream_init(&s, LF_API_RESPONSES);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":"
                        "\"completed\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],"
                        "\"encrypted_content\":\"ENC\"},{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\","
                        "\"arguments\":\"{}\"}]}}"),
                 LF_STREAM_DONE);
    LF_CHECK_INT(s.answer.n_tool_calls, 1);
    CHECK_BUF(s.answer.finish_reason, LF_FINISH_TOOL_CALLS);
    CHECK_BUF(s.answer.reasoning, "[{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"ENC\"}]");
    lf_stream_free(&s);

    /* Malformed: not JSON, no type, a terminal event without its response. */
    lf_stream_init(&s, LF_API_RESPONSES);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.output_text.delta\",\"delta\":"), LF_STREAM_INVALID);
    LF_CHECK_INT(ev(&s, "{\"delta\":\"x\"}"), LF_STREAM_INVALID);
    LF_CHECK_INT(ev(&s, "{\"type\":\"response.completed\"}"), LF_STREAM_INVALID);
    LF_CHECK_INT(ev(&s, "[1]"), LF_STREAM_INVALID);
    LF_CHECK(!lf_stream_complete(&s));
    lf_stream_free(&s);
}

static void test_plain_answers(void)
{
    lf_answer a;
    lf_wire_error e;
    const char *b;

    lf_answer_init(&a);
    lf_wire_error_init(&e);
    b = "{\"id\":\"resp_2\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, b, strlen(b), &a, &e), LF_WIRE_ERROR_BODY);
    CHECK_BUF(e.code, "server_error");
    CHECK_BUF(e.message, "boom");
    b = "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\",\"param\":null,"
        "\"code\":\"invalid_api_key\"}}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, b, strlen(b), &a, &e), LF_WIRE_ERROR_BODY);
    CHECK_BUF(e.code, "invalid_api_key");
    b = "{\"id\":\"resp_3\",\"status\":\"in_progress\",\"output\":[]}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, b, strlen(b), &a, &e), LF_WIRE_INVALID);
    b = "{\"choices\":[]}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, b, strlen(b), &a, &e), LF_WIRE_INVALID);
    /* Content filtered: an answer whose finish says so. A refusal is no text. */
    b = "{\"id\":\"resp_4\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"content_filter\"},"
        "\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"no\"},{\"type\":"
        "\"output_text\",\"text\":\"par\"}]}],\"error\":null}";
    LF_CHECK_INT(lf_wire_parse_response(LF_API_RESPONSES, b, strlen(b), &a, &e), LF_WIRE_OK);
    CHECK_BUF(a.finish_reason, "content_filter");
    CHECK_BUF(a.text, "par");
    LF_CHECK_INT(a.input_tokens, -1);
    lf_answer_free(&a);
    lf_wire_error_free(&e);
}

/* ---------------------------------------------------------- requests by hand */

static json_object *built(lf_request_params *p)
{
    lf_buf out, err;
    json_object *o;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(p, &out, &err), 0);
    if (err.len) fprintf(stderr, "build: %s\n", lf_buf_cstr(&err));
    o = parse(out.ptr, out.len);
    LF_CHECK(o != NULL);
    lf_buf_free(&out);
    lf_buf_free(&err);
    return o;
}

static void check_json(json_object *o, const char *key, const char *want)
{
    json_object *w = json_tokener_parse(want);
    int same = w && jget(o, key) && json_object_equal(jget(o, key), w);

    if (!same) {
        fprintf(stderr, "%s: want %s, got %s\n", key, want, json_object_to_json_string(jget(o, key)));
        lf_test_current_failed = 1;
    }
    json_object_put(w);
}

static void test_request_parts(void)
{
    static const char png[] = "iVBORw0KGgo=";
    lf_attachment files[] = {
        { "image/png", "a.png", png, sizeof png - 1, NULL },
        { "image/jpeg", NULL, NULL, 0, "https://example.com/b.jpg" },
        { "application/pdf", "c.pdf", "JVBERi0=", 8, NULL },
        { "application/pdf", NULL, NULL, 0, "https://example.com/d.pdf" },
    };
    lf_tool tools[] = { { "weather", "The weather", "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}" },
                        { "clock", NULL, NULL } };
    lf_tool_call call = { .id = "call_1", .name = "weather", .arguments = "{\"city\":\"Oslo\"}", .arguments_len = 15 };
    lf_message m[] = {
        { .role = "developer", .content = "Be brief.", .content_len = 9 },
        { .role = "user", .content = "What is this?", .content_len = 13, .attachments = files, .n_attachments = 4 },
        { .role = "assistant", .content = "Let me see.", .content_len = 11, .tool_calls = &call, .n_tool_calls = 1 },
        { .role = "tool", .content = "{\"t\":3}", .content_len = 7, .tool_call_id = "call_1", .is_error = 1 },
    };
    lf_request_params p;
    json_object *o;

    memset(&p, 0, sizeof p);
    p.api = LF_API_RESPONSES;
    p.model = "gpt-5";
    p.messages = m;
    p.n_messages = 4;
    p.system = "You help.";
    p.system_len = 9;
    p.max_tokens = 300;
    p.tools = tools;
    p.n_tools = 2;
    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "clock";
    p.has_parallel_tool_calls = 1;
    p.json_mode = 1;
    o = built(&p);
    check_json(o, "input",
               "[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
               "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"What is this?\"},"
               "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,iVBORw0KGgo=\",\"detail\":\"auto\"},"
               "{\"type\":\"input_image\",\"image_url\":\"https://example.com/b.jpg\",\"detail\":\"auto\"},"
               "{\"type\":\"input_file\",\"filename\":\"c.pdf\",\"file_data\":\"data:application/pdf;base64,JVBERi0=\"},"
               "{\"type\":\"input_file\",\"file_url\":\"https://example.com/d.pdf\"}]},"
               "{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Let me see.\"}]},"
               "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"{\\\"t\\\":3}\"}]");
    LF_CHECK_STR(jstr(o, "instructions"), "You help.\n\n" LF_JSON_INSTRUCTION);
    check_json(o, "max_output_tokens", "300");
    check_json(o, "text", "{\"format\":{\"type\":\"json_object\"}}");
    check_json(o, "tools", "[{\"type\":\"function\",\"name\":\"weather\",\"description\":\"The weather\",\"parameters\":"
                           "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},\"strict\":false},"
                           "{\"type\":\"function\",\"name\":\"clock\",\"parameters\":{\"type\":\"object\",\"properties\":{}},"
                           "\"strict\":false}]");
    check_json(o, "tool_choice", "{\"type\":\"function\",\"name\":\"clock\"}");
    check_json(o, "parallel_tool_calls", "false");
    check_json(o, "store", "false");
    LF_CHECK(jget(o, "include") == NULL);
    LF_CHECK(jget(o, "max_tokens") == NULL && jget(o, "messages") == NULL && jget(o, "stream_options") == NULL);
    json_object_put(o);

    /* A schema: strict json_schema text format, beside tools (Responses takes both). */
    p.schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],"
               "\"additionalProperties\":false}";
    p.schema_name = "pick";
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    p.stream = 1;
    o = built(&p);
    check_json(o, "text", "{\"format\":{\"type\":\"json_schema\",\"name\":\"pick\",\"schema\":{\"type\":\"object\","
                          "\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],\"additionalProperties\":false},"
                          "\"strict\":true}}");
    LF_CHECK_STR(jstr(o, "instructions"), "You help.");
    check_json(o, "tool_choice", "\"required\"");
    check_json(o, "stream", "true");
    LF_CHECK(lf_wire_schema_with_tools_refusal(LF_API_RESPONSES) == NULL);
    json_object_put(o);
}

/* The reasoning state goes back to the protocol and origin that made it,
 * and nowhere else. */
static void test_reasoning_state(void)
{
    static const char state[] = "[{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"gAAAA-final\"}]";
    lf_tool_call call = { .id = "call_1", .name = "f", .arguments = "{}", .arguments_len = 2 };
    lf_message m[] = {
        { .role = "user", .content = "go", .content_len = 2 },
        { .role = "assistant", .content = "", .tool_calls = &call, .n_tool_calls = 1, .reasoning = state,
          .reasoning_len = sizeof state - 1, .reasoning_api = LF_API_RESPONSES, .reasoning_origin = "openai" },
        { .role = "tool", .content = "ok", .content_len = 2, .tool_call_id = "call_1" },
    };
    lf_tool tool = { "f", NULL, NULL };
    lf_api apis[] = { LF_API_OPENAI, LF_API_ANTHROPIC, LF_API_RESPONSES };
    lf_request_params p;
    lf_buf out, err;
    json_object *o;
    size_t i;

    memset(&p, 0, sizeof p);
    p.model = "m";
    p.messages = m;
    p.n_messages = 3;
    p.tools = &tool;
    p.n_tools = 1;
    p.origin = "openai";
    p.encrypted_reasoning = 1;
    p.api = LF_API_RESPONSES;
    o = built(&p);
    check_json(o, "input", "[{\"role\":\"user\",\"content\":\"go\"},"
                           "{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"gAAAA-final\"},"
                           "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"},"
                           "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"ok\"}]");
    check_json(o, "include", "[\"reasoning.encrypted_content\"]");
    json_object_put(o);

    lf_buf_init(&out);
    lf_buf_init(&err);
    /* Another protocol, another origin, a target that asks for none: dropped. */
    for (i = 0; i < 3; i++) {
        p.api = apis[i];
        p.origin = i == 2 ? "azure_east" : "openai";
        LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
        LF_CHECK(strstr(lf_buf_cstr(&out), "gAAAA-final") == NULL);
    }
    p.origin = "openai";
    p.encrypted_reasoning = 0;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    LF_CHECK(strstr(lf_buf_cstr(&out), "gAAAA-final") == NULL && strstr(lf_buf_cstr(&out), "include") == NULL);

    /* Malformed state where it would go: refused; where it is dropped: unread. */
    m[1].reasoning = "{\"type\":\"reasoning\"}";
    m[1].reasoning_len = strlen(m[1].reasoning);
    p.encrypted_reasoning = 1;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), -1);
    LF_CHECK(strstr(lf_buf_cstr(&err), "reasoning state") != NULL);
    p.api = LF_API_ANTHROPIC;
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

/* ---------------------------------------------------------- where requests go */

static void expect_url(lf_endpoint e, const char *want)
{
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_url(&e, &out, &err), want ? 0 : -1);
    if (want) CHECK_BUF(out, want);
    else LF_CHECK(err.len > 0 && out.len == 0);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static void test_urls(void)
{
    lf_api api;

    LF_CHECK_INT(lf_wire_api_named("responses", 9, &api), 0);
    LF_CHECK_INT(api, LF_API_RESPONSES);
    LF_CHECK_STR(lf_wire_path(LF_API_RESPONSES), "/responses");
    LF_CHECK_STR(lf_wire_path_for(LF_API_RESPONSES, LF_REQUEST_EMBEDDINGS), "/embeddings");
    expect_url((lf_endpoint){ .api = LF_API_RESPONSES, .base_url = "https://api.openai.com/v1", .model = "gpt-5" },
               "https://api.openai.com/v1/responses");
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .base_url = "https://api.openai.com/v1", .model = "gpt-5" },
               "https://api.openai.com/v1/chat/completions");
    expect_url((lf_endpoint){ .api = LF_API_ANTHROPIC, .base_url = "https://api.anthropic.com", .model = "c" },
               "https://api.anthropic.com/v1/messages");
    /* Azure OpenAI v1: Responses, chat completions and embeddings, no api-version. */
    expect_url((lf_endpoint){ .api = LF_API_RESPONSES, .layout = LF_LAYOUT_AZURE,
                              .base_url = "https://me.openai.azure.com", .model = "gpt-5" },
               "https://me.openai.azure.com/openai/v1/responses");
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .layout = LF_LAYOUT_AZURE,
                              .base_url = "https://me.openai.azure.com", .model = "gpt-5" },
               "https://me.openai.azure.com/openai/v1/chat/completions");
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .kind = LF_REQUEST_EMBEDDINGS, .layout = LF_LAYOUT_AZURE,
                              .base_url = "https://me.openai.azure.com", .model = "emb" },
               "https://me.openai.azure.com/openai/v1/embeddings");
    /* A deployment: its name in the path, escaped; the api-version in the query. */
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .layout = LF_LAYOUT_AZURE_DEPLOYMENT,
                              .base_url = "https://me.openai.azure.com", .model = "gpt-4o mini/../x",
                              .api_version = "2024-10-21" },
               "https://me.openai.azure.com/openai/deployments/gpt-4o%20mini%2F..%2Fx/chat/completions"
               "?api-version=2024-10-21");
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .kind = LF_REQUEST_EMBEDDINGS,
                              .layout = LF_LAYOUT_AZURE_DEPLOYMENT, .base_url = "https://me.openai.azure.com",
                              .model = "emb-3", .api_version = "2024-10-21" },
               "https://me.openai.azure.com/openai/deployments/emb-3/embeddings?api-version=2024-10-21");
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .layout = LF_LAYOUT_AZURE_FOUNDRY,
                              .base_url = "https://me.services.ai.azure.com/models", .model = "Phi-4",
                              .api_version = "2024-05-01-preview" },
               "https://me.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview");
    /* What a layout does not serve, or lacks. */
    expect_url((lf_endpoint){ .api = LF_API_RESPONSES, .layout = LF_LAYOUT_AZURE_DEPLOYMENT,
                              .base_url = "https://me.openai.azure.com", .model = "m", .api_version = "v" },
               NULL);
    expect_url((lf_endpoint){ .api = LF_API_OPENAI, .layout = LF_LAYOUT_AZURE_FOUNDRY,
                              .base_url = "https://me.services.ai.azure.com/models", .model = "m" },
               NULL);
    expect_url((lf_endpoint){ .api = LF_API_ANTHROPIC, .layout = LF_LAYOUT_AZURE,
                              .base_url = "https://me.openai.azure.com", .model = "m" },
               NULL);
    /* What a layout does not serve is not built either (lf_wire_layout_serves). */
    {
        lf_message m = { .role = "user", .content = "hi", .content_len = 2 };
        lf_request_params p = { .api = LF_API_RESPONSES, .model = "m", .messages = &m, .n_messages = 1,
                                .layout = LF_LAYOUT_AZURE_DEPLOYMENT };
        lf_buf out, err;

        lf_buf_init(&out);
        lf_buf_init(&err);
        LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), -1);
        LF_CHECK(strstr(lf_buf_cstr(&err), "does not serve the Responses API") != NULL && out.len == 0);
        p.layout = LF_LAYOUT_AZURE;
        LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
        lf_buf_free(&out);
        lf_buf_free(&err);
    }
}

/* A Responses host's embeddings are OpenAI's /embeddings. */
static void test_embeddings(void)
{
    lf_text inputs[] = { { "a cat", 5 } };
    lf_request_params p = { .api = LF_API_RESPONSES, .model = "text-embedding-3-small", .kind = LF_REQUEST_EMBEDDINGS,
                            .inputs = inputs, .n_inputs = 1 };
    lf_buf out, err;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(&p, &out, &err), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "{\"model\":\"text-embedding-3-small\",\"input\":[\"a cat\"],"
                                    "\"encoding_format\":\"float\"}");
    lf_buf_free(&out);
    lf_buf_free(&err);
}

static int has_header(const struct curl_slist *l, const char *line)
{
    for (; l; l = l->next)
        if (strcmp(l->data, line) == 0) return 1;
    return 0;
}

static void test_prepared_targets(void)
{
    lf_message m = { .role = "user", .content = "hi", .content_len = 2 };
    lf_target t[] = {
        { .api = LF_API_RESPONSES, .base_url = "https://me.openai.azure.com", .api_key = "azure-key-0123456789",
          .model = "gpt-5", .layout = LF_LAYOUT_AZURE, .origin = "azure", .encrypted_reasoning = 1 },
        { .api = LF_API_OPENAI, .base_url = "https://me.openai.azure.com", .api_key = "entra-token-0123456789",
          .model = "dep", .layout = LF_LAYOUT_AZURE_DEPLOYMENT, .api_version = "2024-10-21", .bearer = 1 },
    };
    lf_request_params params;
    lf_prepared_call pc;
    lf_buf err;

    memset(&params, 0, sizeof params);
    params.messages = &m;
    params.n_messages = 1;
    lf_prepared_call_init(&pc);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t[0], &params, &err), 0);
    LF_CHECK_INT(lf_prepare_target(&pc, 1, &t[1], &params, &err), 0);
    LF_CHECK_STR(pc.target[0].url, "https://me.openai.azure.com/openai/v1/responses");
    LF_CHECK(has_header(pc.target[0].headers, "api-key: azure-key-0123456789"));
    LF_CHECK(strstr(lf_buf_cstr(&pc.target[0].body), "\"include\":[\"reasoning.encrypted_content\"]") != NULL);
    LF_CHECK_STR(pc.target[1].url, "https://me.openai.azure.com/openai/deployments/dep/chat/completions"
                                   "?api-version=2024-10-21");
    LF_CHECK(has_header(pc.target[1].headers, "Authorization: Bearer entra-token-0123456789"));
    LF_CHECK(!has_header(pc.target[1].headers, "api-key: entra-token-0123456789"));
    lf_prepared_call_free(&pc);

    /* A deployment without its api-version is a request that cannot be built. */
    t[1].api_version = NULL;
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t[1], &params, &err), -1);
    LF_CHECK(strstr(lf_buf_cstr(&err), "api_version") != NULL);
    lf_prepared_call_free(&pc);
    lf_buf_free(&err);
}

int main(void)
{
    LF_RUN(test_recorded);
    LF_RUN(test_recorded_by_hand);
    LF_RUN(test_stream_failures);
    LF_RUN(test_stream_ends);
    LF_RUN(test_plain_answers);
    LF_RUN(test_request_parts);
    LF_RUN(test_reasoning_state);
    LF_RUN(test_urls);
    LF_RUN(test_embeddings);
    LF_RUN(test_prepared_targets);
    return lf_test_summary("test_wire_responses");
}
