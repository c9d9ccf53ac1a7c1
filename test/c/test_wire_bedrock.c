/* Bedrock Converse in the wire layer: every recorded exchange
 * (spec/fixtures/recorded/bedrock) parsed to the text, tool calls and tokens
 * it holds, read here with json-c alone, its error classified, and its request
 * rebuilt from its own messages; ConverseStream answers framed here as AWS
 * frames them, whole, in slices and cut at every byte; then the request
 * builder, the path and the classification of Bedrock's errors by hand. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "lf_buf.h"
#include "lf_classify.h"
#include "lf_eventstream.h"
#include "lf_prepare.h"
#include "lf_transport.h"
#include "lf_wire.h"
#include "lf_test.h"
#include "lf_test_eventstream.h"

#include "lf_banned.h"

#define MAX_MESSAGES 64
#define MAX_CALLS 16
#define MAX_TOOLS 8

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

static long jlong(json_object *o, const char *key)
{
    json_object *v = jget(o, key);

    return v ? (long)json_object_get_int64(v) : 0;
}

/* The path of request p: lf_wire_url's on a base URL of "". */
static int path_of(const lf_request_params *p, lf_buf *out)
{
    lf_endpoint e = { .api = p->api, .kind = p->kind, .layout = p->layout, .base_url = "", .model = p->model,
                      .stream = p->stream };

    return lf_wire_url(&e, out, NULL);
}

static json_object *parse(const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);

    json_tokener_free(tok);
    return o;
}

static json_object *parse_str(const char *s)
{
    return parse(s, strlen(s));
}

/* Two values equal, or both absent. */
static int same(json_object *a, json_object *b)
{
    return (!a && !b) || (a && b && json_object_equal(a, b));
}

/* %XX undone, for comparing a path as sent with one as recorded. */
static void percent_decode(const char *s, lf_buf *out)
{
    lf_buf_clear(out);
    for (; *s; s++) {
        if (s[0] == '%' && s[1] && s[2]) {
            char hex[3] = { s[1], s[2], 0 };

            lf_buf_append_char(out, (char)strtol(hex, NULL, 16));
            s += 2;
        } else {
            lf_buf_append_char(out, *s);
        }
    }
}

/* A Bedrock request body built for p, parsed back; NULL (and a failed
 * check) when it could not be built. */
static json_object *built(const lf_request_params *p)
{
    lf_buf body, err;
    json_object *o;

    lf_buf_init(&body);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(p, &body, &err), 0);
    if (err.len) fprintf(stderr, "build: %s\n", lf_buf_cstr(&err));
    o = body.len ? parse(body.ptr, body.len) : NULL;
    LF_CHECK(o != NULL);
    lf_buf_free(&body);
    lf_buf_free(&err);
    return o;
}

/* ---------------------------------------------------------- recordings */

typedef struct counts {
    int files, answers, calls, errors, rebuilt, paths;
} counts;

/* The recorded request's messages in the gem's form (strings live as long as
 * the parsed request). */
typedef struct transcript {
    lf_message msgs[MAX_MESSAGES];
    lf_tool_call calls[MAX_MESSAGES][MAX_CALLS];
    lf_tool tools[MAX_TOOLS];
    size_t n_msgs, n_tools;
} transcript;

static void transcript_read(json_object *req, transcript *t)
{
    json_object *messages = jget(req, "messages"), *system = jget(req, "system");
    json_object *tools = jget(jget(req, "toolConfig"), "tools");
    size_t i, k;

    memset(t, 0, sizeof *t);
    for (i = 0; system && i < json_object_array_length(system); i++) {
        const char *text = jstr(json_object_array_get_idx(system, i), "text");

        t->msgs[t->n_msgs++] = (lf_message){ .role = "system", .content = text, .content_len = strlen(text) };
    }
    for (i = 0; messages && i < json_object_array_length(messages); i++) {
        json_object *m = json_object_array_get_idx(messages, i), *content = jget(m, "content");
        const char *text = NULL;

        if (strcmp(jstr(m, "role"), "assistant") == 0) {
            size_t at = t->n_msgs++;
            lf_message *msg = &t->msgs[at];

            *msg = (lf_message){ .role = "assistant", .content = "", .tool_calls = t->calls[at] };
            for (k = 0; k < json_object_array_length(content); k++) {
                json_object *block = json_object_array_get_idx(content, k), *use = jget(block, "toolUse");

                if (jstr(block, "text")) {
                    msg->content = jstr(block, "text");
                    msg->content_len = strlen(msg->content);
                } else if (use) {
                    const char *args = json_object_to_json_string_ext(jget(use, "input"), JSON_C_TO_STRING_PLAIN);

                    t->calls[at][msg->n_tool_calls++] =
                        (lf_tool_call){ .id = jstr(use, "toolUseId"), .name = jstr(use, "name"), .arguments = args,
                                        .arguments_len = strlen(args) };
                }
            }
            continue;
        }
        /* A user message: each result a tool message of its own in the
         * gem's form, then the words. */
        for (k = 0; k < json_object_array_length(content); k++) {
            json_object *block = json_object_array_get_idx(content, k), *result = jget(block, "toolResult");

            if (jstr(block, "text")) text = jstr(block, "text");
            if (result) {
                const char *out = jstr(json_object_array_get_idx(jget(result, "content"), 0), "text");

                t->msgs[t->n_msgs++] = (lf_message){ .role = "tool", .content = out, .content_len = strlen(out),
                                                     .tool_call_id = jstr(result, "toolUseId") };
            }
        }
        if (text) t->msgs[t->n_msgs++] = (lf_message){ .role = "user", .content = text, .content_len = strlen(text) };
    }
    for (i = 0; tools && i < json_object_array_length(tools); i++) {
        json_object *spec = jget(json_object_array_get_idx(tools, i), "toolSpec");

        t->tools[t->n_tools++] = (lf_tool){
            jstr(spec, "name"), jstr(spec, "description"),
            json_object_to_json_string_ext(jget(jget(spec, "inputSchema"), "json"), JSON_C_TO_STRING_PLAIN) };
    }
}

/* The request as recorded is the request the builder makes of its messages:
 * the same messages, system blocks, tools and inference settings, at the
 * same path (the model id escaped where the recording has it raw). */
static void check_request(const char *name, json_object *interaction, counts *c)
{
    json_object *request = jget(interaction, "request");
    const char *path = jstr(request, "path"), *slash;
    json_object *req = parse(jstr(request, "body"), strlen(jstr(request, "body"))), *mine;
    json_object *inference = jget(req, "inferenceConfig");
    lf_buf model, ours, decoded;
    transcript t;
    lf_request_params p;

    lf_buf_init(&model);
    lf_buf_init(&ours);
    lf_buf_init(&decoded);
    slash = strrchr(path, '/');
    lf_buf_set(&model, path + strlen("/model/"), (size_t)(slash - path) - strlen("/model/"));
    transcript_read(req, &t);
    memset(&p, 0, sizeof p);
    p.api = LF_API_BEDROCK;
    p.model = lf_buf_cstr(&model);
    p.messages = t.msgs;
    p.n_messages = t.n_msgs;
    p.tools = t.tools;
    p.n_tools = t.n_tools;
    p.stream = strcmp(slash, "/converse-stream") == 0;
    p.has_temperature = jget(inference, "temperature") != NULL;
    p.temperature = p.has_temperature ? json_object_get_double(jget(inference, "temperature")) : 0;
    p.max_tokens = jlong(inference, "maxTokens");

    LF_CHECK_INT(path_of(&p, &ours), 0);
    LF_CHECK(strstr(lf_buf_cstr(&ours), ":") == NULL);
    percent_decode(lf_buf_cstr(&ours), &decoded);
    LF_CHECK_STR(lf_buf_cstr(&decoded), path);
    c->paths++;

    mine = built(&p);
    if (mine && !(same(jget(mine, "messages"), jget(req, "messages")) &&
                  same(jget(mine, "system"), jget(req, "system")) &&
                  same(jget(mine, "toolConfig"), jget(req, "toolConfig")))) {
        fprintf(stderr, "%s: rebuilt %s\n  recorded %s\n", name, json_object_to_json_string(mine),
                json_object_to_json_string(req));
        LF_CHECK(0);
    }
    /* Numbers as numbers: the recording writes 0.0, the builder 0. */
    LF_CHECK(json_object_get_double(jget(jget(mine, "inferenceConfig"), "temperature")) == p.temperature);
    LF_CHECK_INT(jlong(jget(mine, "inferenceConfig"), "maxTokens"), p.max_tokens);
    c->rebuilt++;
    json_object_put(mine);
    json_object_put(req);
    lf_buf_free(&model);
    lf_buf_free(&ours);
    lf_buf_free(&decoded);
}

/* What the recorded answer holds, read with json-c alone: its text, tool
 * calls, stop reason and tokens; and the calls the client sent back next. */
static void check_answer(const char *name, json_object *interaction, json_object *next, counts *c)
{
    const char *body = jstr(jget(interaction, "response"), "body");
    json_object *root = parse(body, strlen(body));
    json_object *content = jget(jget(jget(root, "output"), "message"), "content"), *usage = jget(root, "usage");
    lf_buf text;
    lf_answer a;
    size_t i, n_calls = 0;
    const char *stop = jstr(root, "stopReason");

    lf_buf_init(&text);
    lf_answer_init(&a);
    LF_CHECK_INT(lf_wire_parse_response(LF_API_BEDROCK, body, strlen(body), &a, NULL), LF_WIRE_OK);
    for (i = 0; i < json_object_array_length(content); i++) {
        json_object *block = json_object_array_get_idx(content, i), *use = jget(block, "toolUse");

        if (jstr(block, "text")) lf_buf_append_str(&text, jstr(block, "text"));
        if (!use || n_calls >= a.n_tool_calls) continue;
        LF_CHECK_STR(lf_buf_cstr(&a.tool_calls[n_calls].id), jstr(use, "toolUseId"));
        LF_CHECK_STR(lf_buf_cstr(&a.tool_calls[n_calls].name), jstr(use, "name"));
        {
            json_object *args = parse(a.tool_calls[n_calls].arguments.ptr, a.tool_calls[n_calls].arguments.len);

            LF_CHECK(same(args, jget(use, "input")));
            json_object_put(args);
        }
        n_calls++;
        c->calls++;
    }
    LF_CHECK_INT(a.n_tool_calls, n_calls);
    LF_CHECK_STR(lf_buf_cstr(&a.text), lf_buf_cstr(&text));
    LF_CHECK_STR(lf_buf_cstr(&a.finish_reason), strcmp(stop, "tool_use") == 0 ? LF_FINISH_TOOL_CALLS : stop);
    LF_CHECK_INT(a.input_tokens, jlong(usage, "inputTokens") + jlong(usage, "cacheReadInputTokens") +
                                     jlong(usage, "cacheWriteInputTokens"));
    LF_CHECK_INT(a.output_tokens, jlong(usage, "outputTokens"));
    LF_CHECK_INT(a.cached_input_tokens, jget(usage, "cacheReadInputTokens") ? jlong(usage, "cacheReadInputTokens") : -1);
    LF_CHECK_INT(a.cache_write_tokens,
                 jget(usage, "cacheWriteInputTokens") ? jlong(usage, "cacheWriteInputTokens") : -1);
    /* The calls went back as the next request's last assistant message. */
    if (n_calls && next) {
        const char *nb = jstr(jget(next, "request"), "body");
        json_object *nreq = parse(nb, strlen(nb)), *messages = jget(nreq, "messages"), *sent = NULL;

        for (i = 0; i < json_object_array_length(messages); i++) {
            json_object *m = json_object_array_get_idx(messages, i);

            if (strcmp(jstr(m, "role"), "assistant") == 0) sent = jget(m, "content");
        }
        LF_CHECK(sent && json_object_array_length(sent) == n_calls);
        for (i = 0; sent && i < n_calls && i < json_object_array_length(sent); i++) {
            json_object *use = jget(json_object_array_get_idx(sent, i), "toolUse");

            LF_CHECK_STR(jstr(use, "toolUseId"), lf_buf_cstr(&a.tool_calls[i].id));
        }
        json_object_put(nreq);
    }
    c->answers++;
    if (lf_test_current_failed) fprintf(stderr, "  in %s\n", name);
    lf_answer_free(&a);
    lf_buf_free(&text);
    json_object_put(root);
}

/* A recorded error: its body read, its name taken from x-amzn-errortype,
 * and classified as DESIGN.md says. */
static void check_error(const char *name, json_object *interaction, counts *c)
{
    json_object *response = jget(interaction, "response");
    const char *body = jstr(response, "body"), *header = jstr(jget(response, "headers"), "x-amzn-errortype");
    lf_wire_error e;
    lf_facts f;
    lf_verdict v;
    char error_name[64];

    lf_wire_error_init(&e);
    LF_CHECK_INT(lf_wire_parse_error(body, strlen(body), &e), 1);
    LF_CHECK(e.message.len > 0);
    LF_CHECK(header != NULL);
    snprintf(error_name, sizeof error_name, "%.*s", (int)strcspn(header, ":"), header);
    memset(&f, 0, sizeof f);
    f.status = jlong(response, "status");
    f.should_retry = -1;
    f.error_name = error_name;
    f.error_message = lf_buf_cstr(&e.message);
    v = lf_classify(&f);
    if (strstr(name, "auth_error")) {
        LF_CHECK_INT(f.status, 403);
        LF_CHECK_INT(v.kind, LF_E_UNAUTHORIZED);
    } else {
        LF_CHECK(strstr(name, "context_length") != NULL);
        LF_CHECK_INT(v.kind, LF_E_CONTEXT_LENGTH);
    }
    LF_CHECK_INT(v.failover, 0);
    c->errors++;
    lf_wire_error_free(&e);
}

static void check_file(const char *dir, const char *file, counts *c)
{
    char path[8192];
    json_object *doc, *interactions;
    size_t i, n;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    doc = json_object_from_file(path);
    LF_CHECK(doc != NULL);
    interactions = jget(doc, "interactions");
    n = interactions ? json_object_array_length(interactions) : 0;
    for (i = 0; i < n; i++) {
        json_object *it = json_object_array_get_idx(interactions, i);
        const char *api = jstr(jget(it, "request"), "api");
        long status = jlong(jget(it, "response"), "status");

        if (!api || strcmp(api, "bedrock") != 0) continue;
        check_request(file, it, c);
        if (status == 200) check_answer(file, it, i + 1 < n ? json_object_array_get_idx(interactions, i + 1) : NULL, c);
        else check_error(file, it, c);
    }
    c->files++;
    json_object_put(doc);
}

static void test_recorded(void)
{
    const char *base = getenv("LF_FIXTURES");
    char dir[4096];
    struct dirent *de;
    counts c = { 0 };
    DIR *d;

    snprintf(dir, sizeof dir, "%s/bedrock", base && *base ? base : "spec/fixtures/recorded");
    d = opendir(dir);
    LF_CHECK(d != NULL);
    if (!d) return;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) check_file(dir, de->d_name, &c);
    }
    closedir(d);
    printf("bedrock recordings: %d files, %d answers (%d tool calls), %d errors, %d requests rebuilt, %d paths\n",
           c.files, c.answers, c.calls, c.errors, c.rebuilt, c.paths);
    LF_CHECK_INT(c.files, 28);
    LF_CHECK(c.answers >= 40 && c.calls >= 20 && c.errors == 4 && c.rebuilt == c.paths && c.rebuilt >= 40);
}

/* ---------------------------------------------------------- streams */

/* What a stream amounted to: the text delivered piece by piece, the last
 * code, and whether it completed. */
typedef struct run {
    lf_stream_state s;
    lf_buf delivered;
    int rc;
    int frame_rc;
} run;

static int on_message(void *ud, const lf_es_message *m)
{
    run *r = ud;
    const char *delta;
    size_t n;

    r->rc = lf_stream_message(&r->s, m, &delta, &n);
    lf_buf_append(&r->delivered, delta, n);
    return r->rc == LF_STREAM_ERROR || r->rc == LF_STREAM_INVALID;
}

/* Feeds n bytes of body in slices of step bytes (0: whole). */
static void run_stream(run *r, const lf_buf *body, size_t n, size_t step, int tool_input)
{
    lf_es_reader es;
    size_t at;

    lf_stream_init(&r->s, LF_API_BEDROCK);
    r->s.tool_input = tool_input;
    lf_buf_init(&r->delivered);
    r->rc = LF_STREAM_CONTINUE;
    r->frame_rc = 0;
    lf_es_init(&es);
    for (at = 0; at < n && !r->frame_rc; at += step ? step : n) {
        size_t k = step && n - at > step ? step : n - at;

        r->frame_rc = lf_es_feed(&es, body->ptr + at, k, on_message, r);
    }
    lf_es_free(&es);
}

static void run_free(run *r)
{
    lf_stream_free(&r->s);
    lf_buf_free(&r->delivered);
}

/* A ConverseStream answer as AWS sends it: every payload padded with "p". */
static void text_stream(lf_buf *b)
{
    event(b, "messageStart", "{\"p\":\"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\",\"role\":\"assistant\"}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hello\"},\"p\":\"abcdefghijk\"}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\" caf\\u00e9\"},\"p\":\"ab\"}");
    event(b, "contentBlockStop", "{\"contentBlockIndex\":0,\"p\":\"abcdefghijklmnopqrstu\"}");
    event(b, "messageStop", "{\"p\":\"abcdefghijklmnopqrstuvwxyzABCDEF\",\"stopReason\":\"end_turn\"}");
    event(b, "metadata",
          "{\"metrics\":{\"latencyMs\":432},\"p\":\"abc\",\"usage\":{\"cacheReadInputTokens\":100,"
          "\"cacheWriteInputTokens\":20,\"inputTokens\":5,\"outputTokens\":7,\"totalTokens\":132}}");
}

/* Text, then two calls (one without input), as Claude on Bedrock streams them. */
static void tool_stream(lf_buf *b)
{
    event(b, "messageStart", "{\"p\":\"abcdef\",\"role\":\"assistant\"}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Let me look.\"},\"p\":\"ab\"}");
    event(b, "contentBlockStop", "{\"contentBlockIndex\":0,\"p\":\"abcd\"}");
    event(b, "contentBlockStart",
          "{\"contentBlockIndex\":1,\"p\":\"abc\",\"start\":{\"toolUse\":{\"name\":\"weather\","
          "\"toolUseId\":\"tooluse_a1\"}}}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{\\\"ci\"}},\"p\":\"a\"}");
    event(b, "contentBlockDelta",
          "{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"ty\\\":\\\"Oslo\\\"}\"}},\"p\":\"abcde\"}");
    event(b, "contentBlockStop", "{\"contentBlockIndex\":1,\"p\":\"abcdefg\"}");
    event(b, "contentBlockStart",
          "{\"contentBlockIndex\":2,\"p\":\"ab\",\"start\":{\"toolUse\":{\"name\":\"clock\",\"toolUseId\":\"tooluse_b2\"}}}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":2,\"delta\":{\"toolUse\":{\"input\":\"\"}},\"p\":\"abcd\"}");
    event(b, "contentBlockStop", "{\"contentBlockIndex\":2,\"p\":\"abc\"}");
    event(b, "messageStop", "{\"p\":\"abcdefgh\",\"stopReason\":\"tool_use\"}");
    event(b, "metadata", "{\"metrics\":{\"latencyMs\":90},\"p\":\"a\",\"usage\":{\"inputTokens\":40,\"outputTokens\":12,"
                         "\"totalTokens\":52}}");
}

static void test_stream_text(void)
{
    static const size_t steps[] = { 0, 1, 3, 12, 13, 64 };
    lf_buf body;
    size_t k;

    lf_buf_init(&body);
    text_stream(&body);
    for (k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        run r;

        run_stream(&r, &body, body.len, steps[k], 0);
        LF_CHECK_INT(r.frame_rc, 0);
        LF_CHECK_INT(r.rc, LF_STREAM_DONE);
        LF_CHECK_INT(lf_stream_complete(&r.s), 1);
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.text), "Hello caf\xc3\xa9");
        LF_CHECK_STR(lf_buf_cstr(&r.delivered), "Hello caf\xc3\xa9");
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.finish_reason), "end_turn");
        /* Cache reads and writes are input billed too. */
        LF_CHECK_INT(r.s.answer.input_tokens, 125);
        LF_CHECK_INT(r.s.answer.cached_input_tokens, 100);
        LF_CHECK_INT(r.s.answer.cache_write_tokens, 20);
        LF_CHECK_INT(r.s.answer.output_tokens, 7);
        LF_CHECK_INT(r.s.answer.model.len, 0); /* Converse names no model: the request's is the answer's */
        run_free(&r);
    }
    lf_buf_free(&body);
}

static void test_stream_tool_calls(void)
{
    lf_buf body;
    run r;

    lf_buf_init(&body);
    tool_stream(&body);
    run_stream(&r, &body, body.len, 7, 0);
    LF_CHECK_INT(r.rc, LF_STREAM_DONE);
    LF_CHECK_STR(lf_buf_cstr(&r.delivered), "Let me look.");
    LF_CHECK_STR(lf_buf_cstr(&r.s.answer.finish_reason), LF_FINISH_TOOL_CALLS);
    LF_CHECK_INT(r.s.answer.n_tool_calls, 2);
    if (r.s.answer.n_tool_calls == 2) {
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.tool_calls[0].id), "tooluse_a1");
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.tool_calls[0].name), "weather");
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.tool_calls[0].arguments), "{\"city\":\"Oslo\"}");
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.tool_calls[1].id), "tooluse_b2");
        LF_CHECK_STR(lf_buf_cstr(&r.s.answer.tool_calls[1].arguments), "{}");
    }
    LF_CHECK_INT(r.s.answer.input_tokens, 40);
    LF_CHECK_INT(r.s.answer.cached_input_tokens, -1);
    run_free(&r);
    lf_buf_free(&body);
}

/* Cut anywhere before its last byte, a stream is incomplete and has no
 * calls, even cut between messageStop and the metadata that ends it. */
static void test_stream_cut(void)
{
    lf_buf body;
    size_t n;

    lf_buf_init(&body);
    tool_stream(&body);
    for (n = 0; n < body.len; n++) {
        run r;

        run_stream(&r, &body, n, 0, 0);
        LF_CHECK_INT(r.frame_rc, 0);
        LF_CHECK_INT(lf_stream_complete(&r.s), 0);
        LF_CHECK_INT(r.s.answer.n_tool_calls, 0);
        if (lf_test_current_failed) {
            fprintf(stderr, "cut after %zu of %zu bytes\n", n, body.len);
            run_free(&r);
            break;
        }
        run_free(&r);
    }
    lf_buf_free(&body);
}

/* A schema's answer is the forced call's input, as text; its stop reason stays. */
static void test_stream_schema_answer(void)
{
    lf_buf body;
    run r;

    lf_buf_init(&body);
    event(&body, "messageStart", "{\"p\":\"abc\",\"role\":\"assistant\"}");
    event(&body, "contentBlockStart",
          "{\"contentBlockIndex\":0,\"p\":\"a\",\"start\":{\"toolUse\":{\"name\":\"answer\",\"toolUseId\":\"tooluse_x\"}}}");
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":\"{\\\"n\\\":\"}},\"p\":\"ab\"}");
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":\"8}\"}},\"p\":\"abc\"}");
    event(&body, "messageStop", "{\"p\":\"ab\",\"stopReason\":\"tool_use\"}");
    event(&body, "metadata", "{\"p\":\"a\",\"usage\":{\"inputTokens\":3,\"outputTokens\":4,\"totalTokens\":7}}");
    run_stream(&r, &body, body.len, 0, 1);
    LF_CHECK_INT(r.rc, LF_STREAM_DONE);
    LF_CHECK_STR(lf_buf_cstr(&r.s.answer.text), "{\"n\":8}");
    LF_CHECK_STR(lf_buf_cstr(&r.s.answer.finish_reason), "tool_use");
    LF_CHECK_INT(r.s.answer.n_tool_calls, 0);
    run_free(&r);
    lf_buf_free(&body);
}

/* A schema's plain answer is the forced call's input written back as JSON:
 * a stray byte in it becomes U+FFFD, as everywhere else (found by
 * fuzz_converse: test/c/fuzz/converse/tool_input_bytes). */
static void test_schema_answer_bytes(void)
{
    static const char body[] =
        "{\"output\":{\"message\":{\"content\":[{\"toolUse\":{\"input\":{\"lo\x8bgitude\":\"13.4\"},"
        "\"name\":\"answer\",\"toolUseId\":\"t1\"}}],\"role\":\"assistant\"}},\"stopReason\":\"tool_use\","
        "\"usage\":{\"inputTokens\":9,\"outputTokens\":4,\"totalTokens\":13}}";
    lf_answer a;

    lf_answer_init(&a);
    LF_CHECK_INT(lf_wire_parse_tool_response(LF_API_BEDROCK, body, sizeof body - 1, &a, NULL), LF_WIRE_OK);
    LF_CHECK_STR(lf_buf_cstr(&a.text), "{\"lo\xef\xbf\xbdgitude\":\"13.4\"}");
    LF_CHECK_STR(lf_buf_cstr(&a.finish_reason), "tool_use");
    LF_CHECK_INT(a.n_tool_calls, 0);
    lf_answer_free(&a);
}

/* Each exception ConverseStream may send, after some text: an error event
 * that names it, classified as DESIGN.md lists. */
static void test_stream_exceptions(void)
{
    static const struct {
        const char *type, *payload;
        lf_kind kind;
    } cases[] = {
        { "throttlingException", "{\"message\":\"Too many requests, please wait before trying again.\"}",
          LF_E_RATE_LIMIT },
        { "serviceUnavailableException", "{\"message\":\"Bedrock is unable to process your request.\"}",
          LF_E_SERVICE_UNAVAILABLE },
        { "modelStreamErrorException", "{\"message\":\"Model stream error\",\"originalStatusCode\":500}", LF_E_SERVER },
        { "internalServerException", "{\"message\":\"The server encountered an internal error.\"}", LF_E_SERVER },
        { "validationException", "{\"message\":\"Input is too long for requested model.\"}", LF_E_CONTEXT_LENGTH },
        { "validationException", "{\"message\":\"The model returned the following errors: bad\"}", LF_E_BAD_REQUEST },
    };
    size_t k;

    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lf_buf body;
        lf_facts f;
        run r;

        lf_buf_init(&body);
        event(&body, "messageStart", "{\"p\":\"abc\",\"role\":\"assistant\"}");
        event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Half\"},\"p\":\"a\"}");
        exception_event(&body, cases[k].type, cases[k].payload);
        event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\" more\"},\"p\":\"a\"}");
        run_stream(&r, &body, body.len, 0, 0);
        LF_CHECK_INT(r.rc, LF_STREAM_ERROR);
        LF_CHECK_STR(lf_buf_cstr(&r.delivered), "Half");
        LF_CHECK_STR(lf_buf_cstr(&r.s.error.type), cases[k].type);
        LF_CHECK(r.s.error.message.len > 0);
        memset(&f, 0, sizeof f);
        f.status = 200;
        f.should_retry = -1;
        f.in_stream = 1;
        f.error_type = lf_buf_cstr(&r.s.error.type);
        f.error_message = lf_buf_cstr(&r.s.error.message);
        LF_CHECK_INT(lf_classify(&f).kind, cases[k].kind);
        run_free(&r);
        lf_buf_free(&body);
    }
}

/* Broken payloads are malformed events; unknown events and those after the
 * end are stepped over; a Bedrock stream is never SSE, nor another's an
 * event stream. */
static void test_stream_edges(void)
{
    lf_buf body;
    lf_sse_event ev = { 0 };
    lf_stream_state s;
    lf_es_message m;
    run r;

    lf_buf_init(&body);
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":");
    run_stream(&r, &body, body.len, 0, 0);
    LF_CHECK_INT(r.rc, LF_STREAM_INVALID);
    run_free(&r);

    lf_buf_clear(&body);
    event(&body, "someNewEvent", "not json at all");
    text_stream(&body);
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"late\"},\"p\":\"a\"}");
    run_stream(&r, &body, body.len, 0, 0);
    LF_CHECK_INT(r.rc, LF_STREAM_CONTINUE); /* the last one, after the end */
    LF_CHECK_INT(lf_stream_complete(&r.s), 1);
    LF_CHECK_STR(lf_buf_cstr(&r.s.answer.text), "Hello caf\xc3\xa9");
    run_free(&r);

    /* metadata without a messageStop before it does not end the stream. */
    lf_buf_clear(&body);
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"},\"p\":\"a\"}");
    event(&body, "metadata", "{\"p\":\"a\",\"usage\":{\"inputTokens\":1,\"outputTokens\":1,\"totalTokens\":2}}");
    run_stream(&r, &body, body.len, 0, 0);
    LF_CHECK_INT(lf_stream_complete(&r.s), 0);
    run_free(&r);
    lf_buf_free(&body);

    ev.data = "{}";
    ev.data_len = 2;
    lf_stream_init(&s, LF_API_BEDROCK);
    LF_CHECK_INT(lf_stream_event(&s, &ev, NULL, NULL), LF_STREAM_INVALID);
    lf_stream_free(&s);
    memset(&m, 0, sizeof m);
    m.payload = "{}";
    m.payload_len = 2;
    lf_stream_init(&s, LF_API_ANTHROPIC);
    LF_CHECK_INT(lf_stream_message(&s, &m, NULL, NULL), LF_STREAM_INVALID);
    lf_stream_free(&s);
    LF_CHECK_INT(lf_wire_stream_framing(LF_API_BEDROCK), LF_FRAMING_EVENTSTREAM);
    LF_CHECK_INT(lf_wire_stream_framing(LF_API_OPENAI), LF_FRAMING_SSE);
    LF_CHECK_INT(lf_wire_stream_framing(LF_API_ANTHROPIC), LF_FRAMING_SSE);
}

/* ---------------------------------------------------------- requests */

static void test_build_exact(void)
{
    lf_message msgs[] = {
        { .role = "system", .content = "Be brief.", .content_len = 9 },
        { .role = "user", .content = "Hi \"there\"", .content_len = 10 },
        { .role = "assistant", .content = " \n", .content_len = 2 },  /* blank: left out */
        { .role = "user", .content = "And?", .content_len = 4 },
    };
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "m", .messages = msgs, .n_messages = 4,
                            .system = "Caller's.", .system_len = 9, .has_temperature = 1, .temperature = 0.5,
                            .max_tokens = 300 };
    lf_buf body, err;

    lf_buf_init(&body);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), 0);
    /* Two user messages in a row are one: Converse wants the roles to alternate. */
    LF_CHECK_STR(lf_buf_cstr(&body),
                 "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"Hi \\\"there\\\"\"},{\"text\":\"And?\"}]}],"
                 "\"system\":[{\"text\":\"Caller's.\"},{\"text\":\"Be brief.\"}],"
                 "\"inferenceConfig\":{\"maxTokens\":300,\"temperature\":0.5}}");
    p.system = NULL;
    p.max_tokens = 0;
    p.has_temperature = 0;
    p.json_mode = 1;
    LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), 0);
    LF_CHECK(strstr(lf_buf_cstr(&body), "\"system\":[{\"text\":\"Be brief.\"},{\"text\":\"" LF_JSON_INSTRUCTION "\"}]") != NULL);
    LF_CHECK(strstr(lf_buf_cstr(&body), "\"inferenceConfig\":{}") != NULL);
    lf_buf_free(&body);
    lf_buf_free(&err);
}

static void test_build_tool_turns(void)
{
    lf_tool_call calls[] = { { .id = "call_1", .name = "weather", .arguments = "{\"city\":\"Oslo\"}", .arguments_len = 15 },
                             { .id = "an id with spaces", .name = "clock", .arguments = "not json", .arguments_len = 8 } };
    lf_message msgs[] = {
        { .role = "user", .content = "Weather and time?", .content_len = 17 },
        { .role = "assistant", .content = "", .tool_calls = calls, .n_tool_calls = 2 },
        { .role = "tool", .content = "12C", .content_len = 3, .tool_call_id = "call_1" },
        { .role = "tool", .content = "", .tool_call_id = "an id with spaces", .is_error = 1 },
        { .role = "user", .content = "Thanks", .content_len = 6 },
    };
    lf_tool tools[] = { { "weather", "Weather in a city", "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}" },
                        { "clock", NULL, NULL } };
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "m", .messages = msgs, .n_messages = 5,
                            .tools = tools, .n_tools = 2 };
    lf_buf mapped;
    json_object *o, *m, *want;

    lf_buf_init(&mapped);
    lf_wire_call_id("an id with spaces", 17, &mapped);
    o = built(&p);
    m = jget(o, "messages");
    LF_CHECK_INT(json_object_array_length(m), 3);
    {
        char expect[1024];

        snprintf(expect, sizeof expect,
                 "[{\"role\":\"user\",\"content\":[{\"text\":\"Weather and time?\"}]},"
                 "{\"role\":\"assistant\",\"content\":[{\"toolUse\":{\"toolUseId\":\"call_1\",\"name\":\"weather\","
                 "\"input\":{\"city\":\"Oslo\"}}},{\"toolUse\":{\"toolUseId\":\"%s\",\"name\":\"clock\",\"input\":{}}}]},"
                 "{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":\"call_1\",\"content\":[{\"text\":\"12C\"}]}},"
                 "{\"toolResult\":{\"toolUseId\":\"%s\",\"content\":[{\"text\":\"(no output)\"}]}},{\"text\":\"Thanks\"}]}]",
                 lf_buf_cstr(&mapped), lf_buf_cstr(&mapped));
        want = parse_str(expect);
        LF_CHECK(same(m, want));
        json_object_put(want);
    }
    want = parse_str("{\"tools\":[{\"toolSpec\":{\"name\":\"weather\",\"description\":\"Weather in a city\",\"inputSchema\":"
                 "{\"json\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}},"
                 "{\"toolSpec\":{\"name\":\"clock\",\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":{}}}}}]}");
    LF_CHECK(same(jget(o, "toolConfig"), want));
    json_object_put(want);
    json_object_put(o);

    /* Choices: auto, any, a tool; none keeps the tools the turns need. */
    p.tool_choice = LF_TOOL_CHOICE_AUTO;
    o = built(&p);
    LF_CHECK(jget(jget(jget(o, "toolConfig"), "toolChoice"), "auto") != NULL);
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_REQUIRED;
    o = built(&p);
    LF_CHECK(jget(jget(jget(o, "toolConfig"), "toolChoice"), "any") != NULL);
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_TOOL;
    p.tool_choice_name = "clock";
    o = built(&p);
    LF_CHECK_STR(jstr(jget(jget(jget(o, "toolConfig"), "toolChoice"), "tool"), "name"), "clock");
    json_object_put(o);
    p.tool_choice = LF_TOOL_CHOICE_NONE;
    o = built(&p);
    LF_CHECK(jget(o, "toolConfig") != NULL && jget(jget(o, "toolConfig"), "toolChoice") == NULL);
    json_object_put(o);
    p.n_messages = 1; /* no tool turns: none sends no tools */
    o = built(&p);
    LF_CHECK(jget(o, "toolConfig") == NULL);
    json_object_put(o);
    lf_buf_free(&mapped);
}

static void test_build_refusals_and_schema(void)
{
    lf_tool_call call = { .id = "c1", .name = "weather", .arguments = "{}", .arguments_len = 2 };
    lf_message msgs[] = {
        { .role = "user", .content = "Q", .content_len = 1 },
        { .role = "assistant", .content = "", .tool_calls = &call, .n_tool_calls = 1 },
        { .role = "tool", .content = "ok", .content_len = 2, .tool_call_id = "c1" },
    };
    lf_tool tool = { "weather", NULL, NULL };
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "m", .messages = msgs, .n_messages = 3 };
    lf_buf body, err;
    json_object *o;

    lf_buf_init(&body);
    lf_buf_init(&err);
    LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "a Bedrock request whose messages hold tool calls needs its tools");
    p.n_messages = 0;
    LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "a Bedrock request needs at least one user or assistant message");
    /* A schema is a forced call of a tool whose input schema it is... */
    p.n_messages = 1;
    p.schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"],"
               "\"additionalProperties\":false}";
    p.schema_name = "count";
    o = built(&p);
    LF_CHECK_STR(jstr(jget(jget(jget(o, "toolConfig"), "toolChoice"), "tool"), "name"), "count");
    LF_CHECK_STR(jstr(jget(json_object_array_get_idx(jget(jget(o, "toolConfig"), "tools"), 0), "toolSpec"), "name"),
                 "count");
    LF_CHECK(jget(o, "system") == NULL);
    json_object_put(o);
    /* ...so it cannot go beside tools, with the words Ruby quotes. */
    p.tools = &tool;
    p.n_tools = 1;
    LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), lf_wire_schema_with_tools_refusal(LF_API_BEDROCK));
    LF_CHECK(lf_wire_schema_with_tools_refusal(LF_API_BEDROCK) != NULL);
    lf_buf_free(&body);
    lf_buf_free(&err);
}

/* Reasoning state (lf_wire_reasoning_goes): Converse has no form for another
 * protocol's, nor keeps its own yet, so none goes out, whatever made it. */
static void test_reasoning_dropped(void)
{
    static const lf_api made_by[] = { LF_API_RESPONSES, LF_API_GEMINI, LF_API_BEDROCK };
    lf_tool_call call = { .id = "c1", .name = "weather", .arguments = "{}", .arguments_len = 2,
                          .signature = "SIG-of-the-call", .signature_len = 15 };
    lf_message msgs[] = {
        { .role = "user", .content = "Q", .content_len = 1 },
        { .role = "assistant", .content = "A", .content_len = 1, .tool_calls = &call, .n_tool_calls = 1,
          .reasoning = "[{\"type\":\"reasoning\",\"encrypted_content\":\"STATE-of-the-turn\"}]",
          .reasoning_len = 62, .reasoning_origin = "bedrock" },
        { .role = "tool", .content = "12C", .content_len = 3, .tool_call_id = "c1" },
    };
    lf_tool tool = { "weather", NULL, NULL };
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "m", .messages = msgs, .n_messages = 3,
                            .tools = &tool, .n_tools = 1, .origin = "bedrock" };
    lf_buf body, err;
    size_t k;

    lf_buf_init(&body);
    lf_buf_init(&err);
    LF_CHECK_INT(msgs[1].reasoning_len, strlen(msgs[1].reasoning));
    for (k = 0; k < sizeof made_by / sizeof made_by[0]; k++) {
        msgs[1].reasoning_api = made_by[k];
        LF_CHECK_INT(lf_wire_build_request(&p, &body, &err), 0);
        LF_CHECK(strstr(lf_buf_cstr(&body), "STATE-of-the-turn") == NULL);
        LF_CHECK(strstr(lf_buf_cstr(&body), "SIG-of-the-call") == NULL);
        LF_CHECK(strstr(lf_buf_cstr(&body), "\"toolUseId\":\"c1\"") != NULL);
    }
    lf_buf_free(&body);
    lf_buf_free(&err);
}

static void test_build_attachments(void)
{
    lf_attachment files[] = {
        { "image/png", "photo.png", "iVBORw0KGgo=", 12, NULL },
        { "application/pdf", "Q3 report_final (v2).pdf", "JVBERi0xLjQ=", 12, "https://example.com/r.pdf" },
        { "application/pdf", "__ ..pdf", "JVBERi0=", 8, NULL },
    };
    lf_message msg = { .role = "user", .content = "What is in these?", .content_len = 17, .attachments = files,
                       .n_attachments = 3 };
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "m", .messages = &msg, .n_messages = 1 };
    lf_attachment url_only = { "image/jpeg", "x.jpg", NULL, 0, "https://example.com/x.jpg" };
    lf_buf why;
    json_object *o, *want;

    o = built(&p);
    /* The bytes, never the URL; a document's name as Converse takes it. */
    want = parse_str("[{\"role\":\"user\",\"content\":["
                 "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":\"iVBORw0KGgo=\"}}},"
                 "{\"document\":{\"format\":\"pdf\",\"name\":\"Q3 report final (v2)\",\"source\":{\"bytes\":\"JVBERi0xLjQ=\"}}},"
                 "{\"document\":{\"format\":\"pdf\",\"name\":\"document\",\"source\":{\"bytes\":\"JVBERi0=\"}}},"
                 "{\"text\":\"What is in these?\"}]}]");
    LF_CHECK(same(jget(o, "messages"), want));
    if (lf_test_current_failed) fprintf(stderr, "built %s\n", json_object_to_json_string(jget(o, "messages")));
    json_object_put(want);
    json_object_put(o);
    lf_buf_init(&why);
    msg.attachments = &url_only;
    msg.n_attachments = 1;
    LF_CHECK_INT(lf_wire_attachments_refusal(&p, &why), 1);
    LF_CHECK(strstr(lf_buf_cstr(&why), "x.jpg") != NULL);
    lf_buf_free(&why);
}

static void test_path(void)
{
    lf_request_params p = { .api = LF_API_BEDROCK, .model = "us.amazon.nova-2-lite-v1:0" };
    lf_endpoint e = { .api = LF_API_BEDROCK, .base_url = "https://bedrock-runtime.us-east-1.amazonaws.com",
                      .model = "anthropic.claude-3-haiku" };
    lf_buf out, err;
    lf_api api;

    lf_buf_init(&out);
    lf_buf_init(&err);
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/model/us.amazon.nova-2-lite-v1%3A0/converse");
    p.stream = 1;
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/model/us.amazon.nova-2-lite-v1%3A0/converse-stream");
    /* An inference profile's ARN stays one segment. */
    p.model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0";
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile"
                                    "%2Fus.anthropic.claude-sonnet-4-5-v1%3A0/converse-stream");
    /* AWS's escaping is the SDKs': '@' too, which Google's hosts keep. */
    p.model = "m@1";
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/model/m%401/converse-stream");
    p.api = LF_API_GEMINI;
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/v1beta/models/m@1:streamGenerateContent?alt=sse");
    p.api = LF_API_BEDROCK;
    /* The one builder of URLs: base_url, then the path. */
    LF_CHECK_INT(lf_wire_url(&e, &out, &err), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku/converse");
    /* The model is the path's: none is no URL. */
    e.model = "";
    LF_CHECK_INT(lf_wire_url(&e, &out, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "model is missing");
    LF_CHECK_INT(out.len, 0);
    /* Bedrock is its own host: no layout of another serves it, and says so by name. */
    e.model = "anthropic.claude-3-haiku";
    e.layout = LF_LAYOUT_AZURE;
    LF_CHECK_INT(lf_wire_url(&e, &out, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "Azure OpenAI v1 does not serve Bedrock Converse");
    e.layout = LF_LAYOUT_VERTEX;
    e.vertex = (lf_vertex){ .project = "p", .location = "us-east5" };
    LF_CHECK_INT(lf_wire_url(&e, &out, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "Vertex AI is spoken here for Gemini and Claude models only");
    /* SigV4's canonical URI of a path: escaped once more by the same
     * escaper, slashes kept. */
    lf_buf_clear(&out);
    LF_CHECK_INT(lf_wire_uri_escape(&out, "/model/m%3A0/converse", 21, "/"), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/model/m%253A0/converse");
    lf_buf_clear(&out);
    LF_CHECK_INT(lf_wire_uri_escape(&out, "a b~\xc3\xa9", 6, ""), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "a%20b~%C3%A9");
    /* Other protocols keep their fixed paths. */
    p.api = LF_API_ANTHROPIC;
    LF_CHECK_INT(path_of(&p, &out), 0);
    LF_CHECK_STR(lf_buf_cstr(&out), "/v1/messages");
    LF_CHECK(lf_wire_path(LF_API_BEDROCK) == NULL);
    LF_CHECK_INT(lf_wire_api_named("bedrock", 7, &api), 0);
    LF_CHECK_INT(api, LF_API_BEDROCK);
    lf_buf_free(&out);
    lf_buf_free(&err);
}

/* What libcurl signs is what AWS checks: on a libcurl that signs the URL's
 * path as it is, the URL carries the path escaped once more (base_url's own
 * path too) and the request line the path itself; on one that escapes it
 * itself, the URL is the path. A path escaping leaves alone needs neither. */
static int has_header_named(const struct curl_slist *l, const char *name)
{
    for (; l; l = l->next)
        if (strncasecmp(l->data, name, strlen(name)) == 0 && l->data[strlen(name)] == ':') return 1;
    return 0;
}

static void test_prepared_url(void)
{
    lf_message msg = { .role = "user", .content = "hi", .content_len = 2 };
    lf_request_params params = { .messages = &msg, .n_messages = 1, .stream = 1 };
    lf_target t = { .api = LF_API_BEDROCK, .base_url = "http://127.0.0.1:9/providers/aws",
                    .model = "us.amazon.nova-2-lite-v1:0", .region = "eu-west-3",
                    .aws_access_key_id = "AKIDPREPARE", .aws_secret_access_key = "prepare/SECRET" };
    lf_prepared_call pc;
    lf_buf err;

    lf_buf_init(&err);
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t, &params, &err), 0);
    if (lf_transport_sigv4_escapes_path()) {
        LF_CHECK_STR(pc.target[0].url, "http://127.0.0.1:9/providers/aws/model/us.amazon.nova-2-lite-v1%3A0/converse-stream");
        LF_CHECK(pc.target[0].request_target == NULL);
    } else {
        LF_CHECK_STR(pc.target[0].url,
                     "http://127.0.0.1:9/providers/aws/model/us.amazon.nova-2-lite-v1%253A0/converse-stream");
        LF_CHECK_STR(pc.target[0].request_target, "/providers/aws/model/us.amazon.nova-2-lite-v1%3A0/converse-stream");
    }
    lf_prepared_call_free(&pc);
    t.model = "anthropic.claude-3-haiku";
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t, &params, &err), 0);
    LF_CHECK_STR(pc.target[0].url, "http://127.0.0.1:9/providers/aws/model/anthropic.claude-3-haiku/converse-stream");
    LF_CHECK(pc.target[0].request_target == NULL);
    LF_CHECK(!has_header_named(pc.target[0].headers, "authorization"));
    /* Signed by libcurl for the region, with the target's credentials; a
     * session token, when there is one, in its header. */
    LF_CHECK_STR(pc.target[0].aws_sigv4, "aws:amz:eu-west-3:bedrock");
    LF_CHECK_STR(pc.target[0].aws_key_id, "AKIDPREPARE");
    LF_CHECK_STR(pc.target[0].aws_secret, "prepare/SECRET");
    LF_CHECK(!has_header_named(pc.target[0].headers, "x-amz-security-token"));
    lf_prepared_call_free(&pc);
    t.aws_session_token = "prepare-SESSION";
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t, &params, &err), 0);
    LF_CHECK(has_header_named(pc.target[0].headers, "x-amz-security-token"));
    lf_prepared_call_free(&pc);
    /* Signed without credentials: refused before anything is built. */
    t.aws_secret_access_key = NULL;
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t, &params, &err), -1);
    LF_CHECK_STR(lf_buf_cstr(&err), "a signed target needs a region and AWS credentials");
    lf_prepared_call_free(&pc);
    t.aws_secret_access_key = "prepare/SECRET";
    t.aws_session_token = NULL;
    /* A Bedrock API key is a bearer token: sent as one, and nothing is
     * signed, so the URL is lf_wire_url's whatever libcurl. */
    t.model = "us.amazon.nova-2-lite-v1:0";
    t.api_key = "bedrock-api-key-0123456789";
    t.bearer = 1;
    lf_prepared_call_init(&pc);
    LF_CHECK_INT(lf_prepare_target(&pc, 0, &t, &params, &err), 0);
    LF_CHECK_STR(pc.target[0].url, "http://127.0.0.1:9/providers/aws/model/us.amazon.nova-2-lite-v1%3A0/converse-stream");
    LF_CHECK(pc.target[0].request_target == NULL);
    LF_CHECK(has_header_named(pc.target[0].headers, "authorization"));
    LF_CHECK(pc.target[0].aws_sigv4 == NULL);
    lf_prepared_call_free(&pc);
    lf_buf_free(&err);
}

/* ---------------------------------------------------------- errors */

/* Errors named by x-amzn-errortype: the name wins over the status, as
 * DESIGN.md maps them; a name we do not know leaves it to the status. */
static void test_header_named_errors(void)
{
    static const struct {
        long status;
        const char *name, *message;
        lf_kind kind;
    } cases[] = {
        { 429, "ThrottlingException", "Too many requests, please wait before trying again.", LF_E_RATE_LIMIT },
        { 429, "ModelNotReadyException", "Model is not ready.", LF_E_SERVICE_UNAVAILABLE },
        { 503, "ServiceUnavailableException", "Bedrock is unable to process your request.", LF_E_SERVICE_UNAVAILABLE },
        { 400, "ServiceQuotaExceededException", "Your request exceeds the service quota.", LF_E_RATE_LIMIT },
        { 500, "InternalServerException", "internal", LF_E_SERVER },
        { 424, "ModelErrorException", "The model failed.", LF_E_SERVER },
        { 403, "AccessDeniedException", "You don't have access to the model.", LF_E_FORBIDDEN },
        { 403, "UnrecognizedClientException", "The security token included in the request is invalid.",
          LF_E_UNAUTHORIZED },
        { 403, "ExpiredTokenException", "The security token included in the request is expired", LF_E_UNAUTHORIZED },
        { 403, "InvalidSignatureException", "The request signature we calculated does not match", LF_E_UNAUTHORIZED },
        { 404, "ResourceNotFoundException", "Model not found.", LF_E_NOT_FOUND },
        { 400, "ValidationException", "Malformed input request.", LF_E_BAD_REQUEST },
        { 400, "ValidationException", "The model returned the following errors: Input is too long for requested model.",
          LF_E_CONTEXT_LENGTH },
        { 400, "ValidationException", "Output blocked by content filtering policy", LF_E_CONTENT_POLICY },
        { 408, "ModelTimeoutException", "The request took too long.", LF_E_RETRYABLE },
        { 502, "SomethingNewException", "?", LF_E_SERVICE_UNAVAILABLE },
    };
    size_t k;

    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lf_facts f;

        memset(&f, 0, sizeof f);
        f.status = cases[k].status;
        f.should_retry = -1;
        f.error_name = cases[k].name;
        f.error_message = cases[k].message;
        LF_CHECK_INT(lf_classify(&f).kind, cases[k].kind);
        if (lf_test_current_failed) {
            fprintf(stderr, "case %s\n", cases[k].name);
            break;
        }
    }
}

int main(void)
{
    LF_RUN(test_recorded);
    LF_RUN(test_stream_text);
    LF_RUN(test_stream_tool_calls);
    LF_RUN(test_stream_cut);
    LF_RUN(test_stream_schema_answer);
    LF_RUN(test_schema_answer_bytes);
    LF_RUN(test_stream_exceptions);
    LF_RUN(test_stream_edges);
    LF_RUN(test_build_exact);
    LF_RUN(test_build_tool_turns);
    LF_RUN(test_build_refusals_and_schema);
    LF_RUN(test_build_attachments);
    LF_RUN(test_reasoning_dropped);
    LF_RUN(test_path);
    LF_RUN(test_prepared_url);
    LF_RUN(test_header_named_errors);
    return lf_test_summary("wire_bedrock");
}
