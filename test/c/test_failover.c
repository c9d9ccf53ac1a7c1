#define _GNU_SOURCE
/* The attempt loop (lf_run) end to end against a tiny scripted HTTP server on
 * loopback, under ASan/UBSan: retries, failover, reset, fatal errors,
 * refused connections and a host that stops the call. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lf_circuits.h"
#include "lf_failover.h"
#include "lf_test.h"
#include "lf_test_eventstream.h"
#include "lf_test_server.h"

#define MAX_SCRIPT 8

/* A server that answers the i-th connection with script[i] and closes it. */
typedef struct server {
    int fd;
    int port;
    const char *script[MAX_SCRIPT];
    size_t script_len[MAX_SCRIPT];  /* 0: strlen (binary bodies give their length) */
    char request[MAX_SCRIPT][4096]; /* what each connection sent (head and body, cut) */
    int n_script;
    int served;
    int keep_then_drop;  /* the first connection answers script[0] and stays open, then reads
                          * one more request (slot 1, no script) and closes unanswered */
    int keep_then_reset; /* every connection answers one request and stays open until
                          * reset_now, then is reset (RST) while idle, as servers do to idle
                          * keep-alive connections; reset_done counts them */
    volatile int reset_now, reset_done;
    pthread_t thread;
} server;

/* Reads one request; returns how many bytes arrived (0: closed unused). */
static size_t read_request(int c, char *keep, size_t keep_size)
{
    char buf[8192];
    size_t have = 0;
    long clen = -1;
    char *hdr_end = NULL;
    for (;;) {
        ssize_t n = recv(c, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0) return have;
        have += (size_t)n;
        buf[have] = '\0';
        snprintf(keep, keep_size, "%s", buf);
        if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strcasestr(buf, "content-length:");
            clen = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (hdr_end && (long)(have - (size_t)(hdr_end + 4 - buf)) >= clen) return have;
        if (have >= sizeof buf - 1) return have;
    }
}

/* Sends a scripted response, filling in "Content-Length: @@" with the real
 * length of the body. */
static void send_response(int c, const char *resp, size_t len)
{
    char out[8192];
    const char *mark = strstr(resp, "Content-Length: @@");
    const char *body = strstr(resp, "\r\n\r\n");
    if (mark && body) {
        snprintf(out, sizeof out, "%.*sContent-Length: %zu%s", (int)(mark - resp), resp,
                 strlen(body + 4), mark + strlen("Content-Length: @@"));
        resp = out;
    }
    if (len == 0) len = strlen(resp);
    if (send(c, resp, len, MSG_NOSIGNAL) < 0) { /* the client went away */ }
}

static void *serve(void *arg)
{
    server *s = arg;
    while (s->served < s->n_script) {
        int c = accept(s->fd, NULL, NULL);
        const char *resp;
        if (c < 0) return NULL;
        if (read_request(c, s->request[s->served], sizeof s->request[0]) == 0) {
            close(c); /* opened and closed without a request: not one of the script's */
            continue;
        }
        resp = s->script[s->served];
        send_response(c, resp, s->script_len[s->served]);
        s->served++;
        if (s->keep_then_drop && s->served == 1) {
            read_request(c, s->request[s->served], sizeof s->request[0]);
            s->served++;
        }
        if (s->keep_then_reset) {
            struct linger rst = { 1, 0 };
            while (!s->reset_now) usleep(1000);
            s->reset_now = 0;
            setsockopt(c, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
        }
        close(c);
        if (s->keep_then_reset) s->reset_done++;
    }
    return NULL;
}

static void server_start(server *s)
{
    s->fd = lf_test_listen(&s->port);
    pthread_create(&s->thread, NULL, serve, s);
}

static void server_stop(server *s)
{
    lf_test_server_stop(s->fd, s->thread);
}

/* What the listener saw. */
typedef struct seen {
    char log[2048];
    int chunks, resets, attempts;
    lf_kind kinds[8];
    int reached[8], cancelled[8];
    int stop_on_wait;
    int stop_on_chunk;     /* what on_chunk returns (0: go on) */
    int fd_waits, poll_waits;
    struct waker *waker;   /* the host's wake fd, when a test sets one */
} seen;

static void log_add(seen *s, const char *what, const char *text, size_t len)
{
    size_t used = strlen(s->log);
    snprintf(s->log + used, sizeof s->log - used, "%s%.*s|", what, (int)len, text);
}

static int on_chunk(void *ud, int target, const char *text, size_t len)
{
    seen *s = ud;
    s->chunks++;
    log_add(s, target ? "c1:" : "c0:", text, len);
    return s->stop_on_chunk;
}

static int on_reset(void *ud, int target)
{
    seen *s = ud;
    s->resets++;
    log_add(s, target ? "reset1" : "reset0", "", 0);
    return 0;
}

static int on_attempt(void *ud, const lf_attempt_record *rec)
{
    seen *s = ud;
    char tag[32];
    if (s->attempts < 8) {
        s->kinds[s->attempts] = rec->kind;
        s->reached[s->attempts] = rec->reached;
        s->cancelled[s->attempts] = rec->cancelled;
    }
    s->attempts++;
    snprintf(tag, sizeof tag, "a%d/t%d:", rec->attempt, rec->target);
    if (rec->skipped) log_add(s, tag, "skip", 4);
    else log_add(s, tag, rec->success ? "ok" : "fail", rec->success ? 2 : 4);
    return 0;
}

static int wait_fn(void *ud, lf_wait *w)
{
    seen *s = ud;
    s->poll_waits++;
    if (s->stop_on_wait) return s->stop_on_wait;
    lf_wait_block(w);
    return 0;
}

/* The readiness-driven wait (what the Ruby binding does through a Fiber
 * scheduler), with poll(2) standing in for the scheduler. */
static int wait_fd_fn(void *ud, int fd, int timeout_ms)
{
    seen *s = ud;
    struct pollfd p;
    s->fd_waits++;
    if (s->stop_on_wait) return s->stop_on_wait;
    if (fd < 0) {
        poll(NULL, 0, timeout_ms);
        return 0;
    }
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    poll(&p, 1, timeout_ms);
    return 0;
}

/* Every test runs twice: waits through wait, then through wait_fd. */
static int evented_run;

static const char *OK_JSON =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: @@\r\nConnection: close\r\n\r\n"
    "{\"model\":\"m-1\",\"choices\":[{\"message\":{\"content\":\"hi there\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}";

static const char *UNAVAILABLE =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: @@\r\n"
    "Connection: close\r\n\r\n{\"error\":{\"message\":\"busy now\"}}";

static const char *UNAUTHORIZED =
    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: @@\r\n"
    "Connection: close\r\n\r\n{\"error\":{\"message\":\"bad key\",\"type\":\"invalid_request_error\",\"code\":null}}";

static const char *KEY_QUOTED =
    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: @@\r\n"
    "Connection: close\r\n\r\n{\"error\":{\"message\":\"Incorrect API key provided: sk-test. Check it.\"}}";

static const char *RATE_LIMITED_LONG =
    "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 3600\r\n"
    "Content-Length: @@\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"slow\",\"code\":\"rate_limit\"}}";

static const char *ANTHROPIC_PLAIN =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: @@\r\nConnection: close\r\n\r\n"
    "{\"type\":\"message\",\"model\":\"claude-x\",\"content\":[{\"type\":\"text\",\"text\":\"backup\"}],"
    "\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}";

/* OpenAI stream: two deltas, then the connection closes mid-body. */
static const char *CUT_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"content\":\"half \"}}]}\n\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"content\":\"an answer\"}}]}\n\n";

/* OpenAI stream: a tool call whose arguments stream in two pieces, cut
 * before the call is complete. */
static const char *CUT_TOOL_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
    "\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}]}}]}\n\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
    "\"function\":{\"arguments\":\"{\\\"ci\"}}]}}]}\n\n";

/* Anthropic stream: a complete tool_use call. */
static const char *ANTHROPIC_TOOL_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\","
    "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"weather\",\"input\":{}}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
    "\"usage\":{\"output_tokens\":4}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/* Anthropic stream, complete. */
static const char *ANTHROPIC_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\","
    "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"whole\"}}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
    "\"usage\":{\"output_tokens\":4}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

typedef struct fixture {
    server srv[2];
    char url[2][64];
    lf_target targets[2];
    lf_message msg;
    lf_request_params params;
    lf_policy pol;
    seen seen;
    lf_listener l;
    lf_breaker breaker;   /* used when its health is set */
    lf_outcome o;
    lf_pool *pool;
} fixture;

static void fixture_init(fixture *f, int stream)
{
    int i;
    memset(f, 0, sizeof *f);
    for (i = 0; i < 2; i++) {
        f->targets[i].base_url = f->url[i];
        f->targets[i].api_key = "sk-test";
        f->targets[i].model = i == 0 ? "primary-model" : "backup-model";
    }
    f->targets[0].api = LF_API_OPENAI;
    f->targets[1].api = LF_API_ANTHROPIC;
    f->msg.role = "user";
    f->msg.content = "hello";
    f->msg.content_len = 5;
    f->params.messages = &f->msg;
    f->params.n_messages = 1;
    f->params.stream = stream;
    f->pol.max_retries = 2;
    f->pol.backoff.interval = 0.001;
    f->pol.backoff.factor = 1;
    f->pol.backoff.max_interval = 5;
    f->pol.connect_timeout = 2;
    f->pol.first_token_timeout = 5;
    f->pol.idle_timeout = 5;
    f->pol.request_timeout = 10;
    f->pol.max_response_bytes = 1 << 20;
    f->l.ud = &f->seen;
    f->l.on_chunk = on_chunk;
    f->l.on_reset = on_reset;
    f->l.on_attempt = on_attempt;
    f->l.wait = wait_fn;
    f->l.wait_fd = evented_run ? wait_fd_fn : NULL;
    lf_outcome_init(&f->o);
    f->pool = lf_pool_new();
}

static void fixture_serve(fixture *f, int i)
{
    server_start(&f->srv[i]);
    snprintf(f->url[i], sizeof f->url[i], "http://127.0.0.1:%d%s", f->srv[i].port, i == 0 ? "/v1" : "");
}

/* Target i as an OpenAI-compatible server at /v1, answering `script` once. */
static void fixture_serve_openai(fixture *f, int i, const char *script)
{
    f->targets[i].api = LF_API_OPENAI;
    f->srv[i].script[0] = script;
    f->srv[i].n_script = 1;
    server_start(&f->srv[i]);
    snprintf(f->url[i], sizeof f->url[i], "http://127.0.0.1:%d/v1", f->srv[i].port);
}

static int fixture_run(fixture *f, size_t n_targets)
{
    return lf_run(&(lf_run_args){
                      .pool = f->pool,
                      .targets = f->targets,
                      .n_targets = n_targets,
                      .params = &f->params,
                      .policy = &f->pol,
                      .listener = &f->l,
                      .breaker = f->breaker.health || f->breaker.report ? &f->breaker : NULL,
                  },
                  &f->o);
}

/* The same fixture called again: a fresh outcome and nothing seen yet; the
 * servers, the pool and its connections carry over. */
static int fixture_rerun(fixture *f, size_t n_targets)
{
    lf_outcome_free(&f->o);
    lf_outcome_init(&f->o);
    memset(&f->seen, 0, sizeof f->seen);
    return fixture_run(f, n_targets);
}

static void fixture_free(fixture *f)
{
    int i;
    for (i = 0; i < 2; i++)
        if (f->srv[i].fd) server_stop(&f->srv[i]);
    /* Each run waited only the way it was given. */
    LF_CHECK_INT(evented_run ? f->seen.poll_waits : f->seen.fd_waits, 0);
    lf_outcome_free(&f->o);
    lf_pool_free(f->pool);
}

static void test_retry_then_success(void)
{
    fixture f;
    fixture_init(&f, 0);
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = OK_JSON;
    f.srv[0].n_script = 2;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "hi there");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.model), "m-1");
    LF_CHECK_INT(f.o.answer.input_tokens, 3);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:ok|");
    fixture_free(&f);
}

#if LIBCURL_VERSION_NUM >= 0x075000 /* CURLOPT_PREREQFUNCTION */
static const char *OK_JSON_KEEP_ALIVE =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: @@\r\n\r\n"
    "{\"model\":\"m-1\",\"choices\":[{\"message\":{\"content\":\"first\"},\"finish_reason\":\"stop\"}]}";

/* A reused keep-alive connection closed after the request and before any
 * response: libcurl would send the request again on a new connection by
 * itself, unrecorded. The attempt fails instead, and the request goes again
 * only as the policy's next attempt (max_retries 2), or not at all (0). */
static void run_on_dropped_reused_connection(fixture *f, int max_retries)
{
    f->srv[0].keep_then_drop = 1;
    f->srv[0].script[0] = OK_JSON_KEEP_ALIVE;
    f->srv[0].script[2] = OK_JSON;
    f->srv[0].n_script = max_retries ? 3 : 2;
    fixture_serve(f, 0);
    LF_CHECK_INT(fixture_run(f, 1), 0);
    LF_CHECK_STR(lf_buf_cstr(&f->o.answer.text), "first");
    f->pol.max_retries = max_retries;
    LF_CHECK_INT(fixture_rerun(f, 1), 0);
}

static void test_dropped_reused_connection_is_an_attempt(void)
{
    fixture f;
    fixture_init(&f, 0);
    run_on_dropped_reused_connection(&f, 2);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "hi there");
    LF_CHECK_INT(f.seen.kinds[0], LF_E_CONNECTION);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:ok|");
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 3); /* one request per attempt, none unrecorded */
}

static void test_dropped_reused_connection_not_sent_again(void)
{
    fixture f;
    fixture_init(&f, 0);
    run_on_dropped_reused_connection(&f, 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.attempts, 1);
    LF_CHECK_INT(f.o.kind, LF_E_CONNECTION);
    LF_CHECK(strstr(lf_buf_cstr(&f.o.message), "reused connection closed before any response") != NULL);
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 2);
}

/* A reused keep-alive connection the server reset while it was idle: the
 * send fails before any byte of the request leaves, so the provider cannot
 * have received it, and the request goes on a new connection: one attempt,
 * no failure, even with max_retries 0 (libcurl 7.88 takes a reset connection
 * for alive and reuses it). Seven times on one connection slot: libcurl's own
 * resends of such a request stop after five over a handle's life. */
static void test_idle_reset_connection_is_sent_on_a_new_one(void)
{
    fixture f;
    int i, waited;
    fixture_init(&f, 0);
    f.srv[0].keep_then_reset = 1;
    for (i = 0; i < 8; i++) f.srv[0].script[i] = OK_JSON_KEEP_ALIVE;
    f.srv[0].n_script = 8;
    fixture_serve(&f, 0);
    f.pol.max_retries = 0;
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "first");
    for (i = 1; i < 8; i++) {
        f.srv[0].reset_now = 1;
        for (waited = 0; f.srv[0].reset_done < i && waited < 5000; waited++) usleep(1000);
        LF_CHECK_INT(f.srv[0].reset_done, i);
        LF_CHECK_INT(fixture_rerun(&f, 1), 0);
        LF_CHECK_INT(f.o.ok, 1);
        LF_CHECK_INT(f.o.attempts, 1);
        LF_CHECK_STR(f.seen.log, "a1/t0:ok|");
    }
    LF_CHECK_INT(lf_pool_idle_count(f.pool), 1); /* one slot, one easy handle, all along */
    f.srv[0].reset_now = 1;
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 8);
}
#endif

static void test_cut_stream_resets_then_backup(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.srv[0].script[0] = CUT_STREAM;
    f.srv[0].n_script = 1;
    f.srv[1].script[0] = ANTHROPIC_STREAM;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_INT(f.o.attempts, 2); /* content was shown: never retried on the primary */
    LF_CHECK_STR(f.seen.log, "c0:half |c0:an answer|a1/t0:fail|reset1|c1:whole|a2/t1:ok|");
    LF_CHECK_INT(f.seen.kinds[0], LF_E_STREAM_INTERRUPTED);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "whole");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.model), "claude-x");
    LF_CHECK_INT(f.o.answer.output_tokens, 4);
    fixture_free(&f);
}

/* A stream cut while a tool call streams is a failed attempt like any cut:
 * nothing of the call reaches the outcome. The backup's complete call does,
 * with JSON mode on (it judges only an answer without tool calls). */
static void test_cut_tool_call_then_backup_call(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.params.json_mode = 1;
    f.srv[0].script[0] = CUT_TOOL_STREAM;
    f.srv[0].n_script = 1;
    f.srv[1].script[0] = ANTHROPIC_TOOL_STREAM;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_STREAM_INTERRUPTED);
    LF_CHECK_INT((int)f.o.answer.n_tool_calls, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.tool_calls[0].id), "toolu_1");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.tool_calls[0].name), "weather");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.tool_calls[0].arguments), "{\"city\":\"Oslo\"}");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.finish_reason), LF_FINISH_TOOL_CALLS);
    LF_CHECK_INT((int)f.o.json.len, 0);
    fixture_free(&f);
}

static void test_cut_stream_without_backup_keeps_partial(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.srv[0].script[0] = CUT_STREAM;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_STREAM_INTERRUPTED);
    LF_CHECK_STR(lf_buf_cstr(&f.o.partial), "half an answer");
    LF_CHECK_INT(f.seen.resets, 0);
    fixture_free(&f);
}

static void test_unauthorized_never_fails_over(void)
{
    fixture f;
    fixture_init(&f, 0);
    f.srv[0].script[0] = UNAUTHORIZED;
    f.srv[0].n_script = 1;
    f.srv[1].script[0] = OK_JSON;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_UNAUTHORIZED);
    LF_CHECK_INT(f.o.status, 401);
    LF_CHECK_INT(f.o.attempts, 1);
    LF_CHECK_INT(f.srv[1].served, 0);
    LF_CHECK_STR(lf_buf_cstr(&f.o.message), "HTTP 401: bad key");
    /* Unblock the backup's accept() so that it can be joined. */
    f.srv[1].n_script = 0;
    fixture_free(&f);
}

static void test_key_quoted_back_is_scrubbed(void)
{
    fixture f;
    fixture_init(&f, 0);
    f.srv[0].script[0] = KEY_QUOTED;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.kind, LF_E_UNAUTHORIZED);
    LF_CHECK_STR(lf_buf_cstr(&f.o.message), "HTTP 401: Incorrect API key provided: [REDACTED]. Check it.");
    LF_CHECK(strstr(lf_buf_cstr(&f.o.body), "sk-test") == NULL);
    LF_CHECK(strstr(lf_buf_cstr(&f.o.body), "[REDACTED]") != NULL);
    LF_CHECK(strstr(f.seen.log, "sk-test") == NULL);
    fixture_free(&f);
}

static void test_long_retry_after_fails_over_at_once(void)
{
    fixture f;
    fixture_init(&f, 0);
    f.srv[0].script[0] = RATE_LIMITED_LONG;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve_openai(&f, 1, OK_JSON);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_RATE_LIMIT);
    fixture_free(&f);
}

static void test_refused(void)
{
    fixture f;
    int port;
    fixture_init(&f, 0);
    server_start(&f.srv[0]);
    port = f.srv[0].port;
    server_stop(&f.srv[0]);
    f.srv[0].fd = 0;
    snprintf(f.url[0], sizeof f.url[0], "http://127.0.0.1:%d/v1", port);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_CONNECTION_REFUSED);
    LF_CHECK_INT(f.o.attempts, 1);
    LF_CHECK_INT(f.seen.reached[0], 0); /* no connection: the provider never saw it */
    fixture_free(&f);
}

/* The host cancels a stream mid-answer (LF_CANCEL): the outcome is cancelled,
 * not aborted, with the text delivered so far, and the attempt it cut is
 * recorded as cancelled. */
static void test_host_cancels_a_stream(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.seen.stop_on_chunk = LF_CANCEL;
    f.srv[0].script[0] = CUT_STREAM;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.cancelled, 1);
    LF_CHECK_INT(f.o.aborted, 0);
    LF_CHECK_INT(f.o.target, 0);
    LF_CHECK_INT(f.o.attempts, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.partial), "half ");
    LF_CHECK_STR(f.seen.log, "c0:half |a1/t0:fail|");
    LF_CHECK_INT(f.seen.cancelled[0], 1);
    LF_CHECK_INT(f.seen.reached[0], 1);
    fixture_free(&f);
}

/* The in-process store as the call's breaker (lf_circuits_bind): the
 * primary's second counted failure opens its circuit mid-call and the call
 * fails over; the host hears of the change, and the next call skips the
 * primary without asking it. */
static int circuits_changes, circuits_change_to;

static int circuits_on_change(void *ud, int target, const lf_circuit_change *chg, lf_kind kind)
{
    circuits_changes++;
    circuits_change_to = target * 10 + (int)chg->to;
    return 0;
}

static void test_in_process_circuits(void)
{
    fixture f;
    lf_circuits *table = lf_circuits_new();
    lf_circuits_call cc = {
        .table = table,
        .keys = { "openai:primary-model", "anthropic:backup-model" },
        .n_keys = 2,
        .token = "call",
        .rules = { .threshold = 2, .cooldown = 60 },
        .probe_ttl = 11,
        .on_change = circuits_on_change,
    };
    lf_circuits_view v;

    circuits_changes = 0;
    fixture_init(&f, 0);
    lf_circuits_bind(&cc, &f.breaker);
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = UNAVAILABLE;
    f.srv[0].n_script = 2;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].script[1] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 2;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:fail|a3/t1:ok|");
    LF_CHECK_INT(circuits_changes, 1);
    LF_CHECK_INT(circuits_change_to, LF_CIRCUIT_OPEN); /* target 0 */
    LF_CHECK_INT(lf_circuits_get(table, "openai:primary-model", 0, &v), 1);
    LF_CHECK_INT(v.last_kind, LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK_INT(lf_circuits_get(table, "anthropic:backup-model", 0, &v), 0); /* its success reset nothing */

    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_STR(f.seen.log, "a1/t0:skip|a2/t1:ok|");
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 2);
    lf_circuits_free(table);
}

static void test_host_stops_the_call(void)
{
    fixture f;
    fixture_init(&f, 0);
    f.seen.stop_on_wait = 1;
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.aborted, 1);
    /* The attempt the host cut is still recorded, as aborted. */
    LF_CHECK_INT(f.seen.attempts, 1);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_ABORTED);
    /* Let the server's accept() finish if the request never arrived. */
    if (f.srv[0].served == 0) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((unsigned short)f.srv[0].port);
        if (connect(c, (struct sockaddr *)&a, sizeof a) == 0 &&
            send(c, "POST / HTTP/1.1\r\nContent-Length: @@\r\n\r\n", 38, MSG_NOSIGNAL) < 0) {
            /* nothing to do */
        }
        close(c);
    }
    fixture_free(&f);
}

/* The host's wake fd (evented runs): a pipe another thread writes to. */
typedef struct waker {
    int pipe[2];
    int wakes;
    pthread_t thread;
} waker;

static int on_wake(void *ud)
{
    waker *w = ((seen *)ud)->waker;
    w->wakes++;
    return 1; /* stop the call */
}

static void *wake_later(void *arg)
{
    waker *w = arg;
    usleep(100 * 1000);
    if (write(w->pipe[1], "!", 1) != 1) { /* the test then ends on its timeout */ }
    return NULL;
}

static void test_host_wakes_a_silent_wait(void)
{
    waker w;
    fixture f;
    int silent;
    struct sockaddr_in a;
    socklen_t len = sizeof a;

    if (!evented_run) return;
    fixture_init(&f, 1);
    memset(&w, 0, sizeof w);
    f.seen.waker = &w;
    LF_CHECK_INT(pipe(w.pipe), 0);
    f.l.wake_fd = w.pipe[0];
    f.l.on_wake = on_wake;
    f.pol.request_timeout = 3; /* without the wake the call would end here, on a timeout */
    /* A server that accepts (the kernel's backlog) and never answers. */
    silent = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(silent, (struct sockaddr *)&a, sizeof a);
    listen(silent, 8);
    getsockname(silent, (struct sockaddr *)&a, &len);
    snprintf(f.url[0], sizeof f.url[0], "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
    pthread_create(&w.thread, NULL, wake_later, &w);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    pthread_join(w.thread, NULL);
    LF_CHECK_INT(w.wakes, 1);
    LF_CHECK_INT(f.o.aborted, 1);
    LF_CHECK_INT(f.seen.attempts, 1);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_ABORTED);
    close(silent);
    close(w.pipe[0]);
    close(w.pipe[1]);
    fixture_free(&f);
}

/* The host cancels during the sleep before a retry: nothing is under way, so
 * the cancel gets a record of its own after the 503's. */
static int on_wake_cancel(void *ud)
{
    ((seen *)ud)->waker->wakes++;
    return LF_CANCEL;
}

static void test_host_cancels_a_retry_sleep(void)
{
    waker w;
    fixture f;

    if (!evented_run) return;
    fixture_init(&f, 0);
    memset(&w, 0, sizeof w);
    f.seen.waker = &w;
    LF_CHECK_INT(pipe(w.pipe), 0);
    f.l.wake_fd = w.pipe[0];
    f.l.on_wake = on_wake_cancel;
    f.pol.backoff.interval = 3;
    f.pol.backoff.max_interval = 5;
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = OK_JSON;
    f.srv[0].n_script = 2;
    fixture_serve(&f, 0);
    pthread_create(&w.thread, NULL, wake_later, &w);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    pthread_join(w.thread, NULL);
    LF_CHECK_INT(f.o.cancelled, 1);
    LF_CHECK_INT(f.o.aborted, 0);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_INT(f.seen.attempts, 2);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK_INT(f.seen.cancelled[0], 0);
    LF_CHECK_INT(f.seen.cancelled[1], 1);
    LF_CHECK_INT(f.seen.reached[1], 0);
    close(w.pipe[0]);
    close(w.pipe[1]);
    fixture_free(&f);
}

static void test_host_wakes_a_retry_sleep(void)
{
    waker w;
    fixture f;

    if (!evented_run) return;
    fixture_init(&f, 0);
    memset(&w, 0, sizeof w);
    f.seen.waker = &w;
    LF_CHECK_INT(pipe(w.pipe), 0);
    f.l.wake_fd = w.pipe[0];
    f.l.on_wake = on_wake;
    f.pol.backoff.interval = 3; /* the sleep before the retry */
    f.pol.backoff.max_interval = 5;
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = OK_JSON;
    f.srv[0].n_script = 2;
    fixture_serve(&f, 0);
    pthread_create(&w.thread, NULL, wake_later, &w);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    pthread_join(w.thread, NULL);
    LF_CHECK_INT(w.wakes, 1);
    LF_CHECK_INT(f.o.aborted, 1);
    LF_CHECK_INT(f.seen.attempts, 1); /* the 503; the retry was never sent */
    LF_CHECK_INT(f.seen.kinds[0], LF_E_SERVICE_UNAVAILABLE);
    close(w.pipe[0]);
    close(w.pipe[1]);
    /* The server waits in accept() for the retry: server_stop ends that. */
    fixture_free(&f);
}

static void test_bad_request_params_fail_before_network(void)
{
    fixture f;
    fixture_init(&f, 0);
    snprintf(f.url[0], sizeof f.url[0], "http://127.0.0.1:9/v1");
    f.targets[0].model = "";
    LF_CHECK_INT(fixture_run(&f, 1), -1);
    LF_CHECK(f.o.message.len > 0);
    LF_CHECK_INT(f.seen.attempts, 0);
    fixture_free(&f);
}

/* How many times the header named name (any case) starts a line of req. */
static int header_count(const char *req, const char *name)
{
    const char *line = req;
    size_t n = strlen(name);
    int count = 0;

    while (line && *line) {
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') count++;
        line = strstr(line, "\r\n");
        if (line) line += 2;
    }
    return count;
}

static int curl_decodes_gzip(void)
{
    return (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_LIBZ) != 0;
}

/* The lines the providers need, ours once each (User-Agent and
 * Accept-Encoding come from the request's list, not from libcurl). */
static void test_request_headers(void)
{
    static const char *const extra[] = { "X-Trace: 1" };
    const char *req;
    fixture f;
    fixture_init(&f, 0);
    f.targets[0].headers = extra;
    f.targets[0].n_headers = 1;
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    fixture_free(&f);
    req = f.srv[0].request[0];
    LF_CHECK(strncmp(req, "POST /v1/chat/completions HTTP/1.1\r\n", 36) == 0);
    LF_CHECK(strstr(req, "\r\nUser-Agent: llm_failover\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nContent-Type: application/json\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nAccept: application/json\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nAuthorization: Bearer sk-test\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nX-Trace: 1\r\n") != NULL);
    LF_CHECK_INT(header_count(req, "user-agent"), 1);
    LF_CHECK_INT(header_count(req, "accept"), 1);
    LF_CHECK_INT(header_count(req, "content-type"), 1);
    LF_CHECK_INT(header_count(req, "expect"), 0);
    LF_CHECK_INT(header_count(req, "x-api-key"), 0);
    if (curl_decodes_gzip()) {
        LF_CHECK_INT(header_count(req, "accept-encoding"), 1);
        LF_CHECK(strstr(req, "\r\nAccept-Encoding: deflate, gzip") != NULL);
    }
}

static void test_anthropic_request_headers(void)
{
    const char *req;
    fixture f;
    fixture_init(&f, 1);
    f.targets[0].api = LF_API_ANTHROPIC;
    f.srv[0].script[0] = ANTHROPIC_STREAM;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "whole");
    fixture_free(&f);
    req = f.srv[0].request[0];
    LF_CHECK(strncmp(req, "POST /v1/v1/messages HTTP/1.1\r\n", 31) == 0);
    LF_CHECK(strstr(req, "\r\nx-api-key: sk-test\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nanthropic-version: 2023-06-01\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nAccept: text/event-stream\r\n") != NULL);
    LF_CHECK(strstr(req, "\r\nUser-Agent: llm_failover\r\n") != NULL);
    LF_CHECK_INT(header_count(req, "authorization"), 0);
    LF_CHECK_INT(header_count(req, "user-agent"), 1);
}

/* A target's own User-Agent or Accept-Encoding is sent instead of ours,
 * never beside it. */
static void test_target_headers_replace_ours(void)
{
    static const char *const extra[] = { "user-agent: mine/2", "Accept-Encoding: identity" };
    const char *req;
    fixture f;
    fixture_init(&f, 0);
    f.targets[0].headers = extra;
    f.targets[0].n_headers = 2;
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    fixture_free(&f);
    req = f.srv[0].request[0];
    LF_CHECK_INT(header_count(req, "user-agent"), 1);
    LF_CHECK(strstr(req, "\r\nuser-agent: mine/2\r\n") != NULL);
    LF_CHECK_INT(header_count(req, "accept-encoding"), 1);
    LF_CHECK(strstr(req, "\r\nAccept-Encoding: identity\r\n") != NULL);
}

/* The answer gzip-compressed: libcurl still decodes it. */
static const char GZIP_JSON[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
    "Content-Length: 96\r\nConnection: close\r\n\r\n"
    "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff\x0d\xca\x31\x0e\x80\x20\x0c\x05\xd0\xab\x98\x3f"
    "\xe3\xe0\xca\x55\x8c\x31\x04\xaa\x34\x91\x96\x58\x26\x09\x77\x97\xf9\xbd\x8e\xa2\x89\x1e"
    "\x78\x94\x75\x83\x43\xcc\xca\x91\x0c\x7e\xef\x28\x64\x16\x6e\x82\xef\x88\x2a\x8d\xa4\xcd"
    "\xf6\x71\xad\x94\x96\xcc\x18\x0e\x17\x0b\x5b\x3e\x5f\x0a\xa6\x32\xd1\x9a\x56\x8c\x63\xfc"
    "\xcd\x0d\xec\xf0\x56\x00\x00\x00";

static void test_gzip_answer_is_decoded(void)
{
    fixture f;
    if (!curl_decodes_gzip()) return;
    fixture_init(&f, 0);
    f.srv[0].script[0] = GZIP_JSON;
    f.srv[0].script_len[0] = sizeof GZIP_JSON - 1;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "zipped hi");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.finish_reason), "stop");
    fixture_free(&f);
}

/* A streamed call answered with a plain JSON body (no event-stream
 * Content-Type): the answer is read as a body and handed out whole. */
static void test_stream_answered_with_plain_body(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "hi there");
    LF_CHECK_STR(f.seen.log, "c0:hi there|a1/t0:ok|");
    fixture_free(&f);
}

/* ---- Bedrock: ConverseStream's event stream, errors named by a header ---- */

static const char *BEDROCK_MODEL = "us.amazon.nova-2-lite-v1:0";
/* Its request lines: the model's ':' escaped, as AWS's SDKs send it. */
#define BEDROCK_STREAM_LINE "POST /v1/model/us.amazon.nova-2-lite-v1%3A0/converse-stream HTTP/1.1\r\n"
#define BEDROCK_LINE "POST /v1/model/us.amazon.nova-2-lite-v1%3A0/converse HTTP/1.1\r\n"

/* A ConverseStream answer: two text deltas, messageStop, metadata. */
static void bedrock_stream(lf_buf *b)
{
    event(b, "messageStart", "{\"p\":\"abcdefgh\",\"role\":\"assistant\"}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hello\"},\"p\":\"abc\"}");
    event(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\" world\"},\"p\":\"a\"}");
    event(b, "contentBlockStop", "{\"contentBlockIndex\":0,\"p\":\"abcdef\"}");
    event(b, "messageStop", "{\"p\":\"ab\",\"stopReason\":\"end_turn\"}");
    event(b, "metadata", "{\"metrics\":{\"latencyMs\":12},\"p\":\"abc\",\"usage\":{\"inputTokens\":9,"
                         "\"outputTokens\":2,\"totalTokens\":11}}");
}

/* The HTTP answer: a 200 event stream whose Content-Length says the whole
 * body, of which only the first `sent` bytes are sent before the close. */
static void bedrock_answer(lf_buf *out, const lf_buf *body, size_t sent)
{
    lf_buf_setf(out, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\n"
                     "x-amzn-RequestId: 8475a760-aws\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                body->len);
    lf_buf_append(out, body->ptr, sent);
}

/* Target i a Bedrock host, its requests signed with these AWS credentials. */
static void fixture_bedrock_target(fixture *f, int i)
{
    f->targets[i].api = LF_API_BEDROCK;
    f->targets[i].model = BEDROCK_MODEL;
    f->targets[i].region = "us-east-1";
    f->targets[i].aws_access_key_id = "AKIDFAILOVERTEST";
    f->targets[i].aws_secret_access_key = "failover/test+SECRET";
    f->targets[i].aws_session_token = "failover-SESSION-token";
}

/* Target 0 a Bedrock host answering `answer` once (binary: its length given). */
static void fixture_serve_bedrock(fixture *f, const lf_buf *answer)
{
    fixture_bedrock_target(f, 0);
    f->srv[0].script[0] = answer->ptr;
    f->srv[0].script_len[0] = answer->len;
    f->srv[0].n_script = 1;
    fixture_serve(f, 0);
}

static void test_bedrock_stream_answers(void)
{
    lf_buf body, answer;
    const char *req;
    fixture f;

    lf_buf_init(&body);
    lf_buf_init(&answer);
    bedrock_stream(&body);
    bedrock_answer(&answer, &body, body.len);
    fixture_init(&f, 1);
    fixture_serve_bedrock(&f, &answer);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "c0:Hello|c0: world|a1/t0:ok|");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "Hello world");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.finish_reason), "end_turn");
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.model), BEDROCK_MODEL); /* Converse names none: the one asked */
    LF_CHECK_INT(f.o.answer.input_tokens, 9);
    LF_CHECK_INT(f.o.answer.output_tokens, 2);
    LF_CHECK_STR(lf_buf_cstr(&f.o.provider_request_id), "8475a760-aws");
    fixture_free(&f);
    /* The model in the path, escaped; no key: Bedrock's requests are signed
     * (SigV4, by libcurl), the session token beside the signature. */
    req = f.srv[0].request[0];
    LF_CHECK(strncmp(req, BEDROCK_STREAM_LINE, strlen(BEDROCK_STREAM_LINE)) == 0);
    LF_CHECK(strstr(req, "\r\nAccept: application/vnd.amazon.eventstream\r\n") != NULL);
    LF_CHECK_INT(header_count(req, "authorization"), 1);
    LF_CHECK(strstr(req, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDFAILOVERTEST/") != NULL);
    LF_CHECK(strstr(req, "/us-east-1/bedrock/aws4_request, SignedHeaders=") != NULL);
    LF_CHECK_INT(header_count(req, "x-amz-date"), 1);
    LF_CHECK(strstr(req, "\r\nx-amz-security-token: failover-SESSION-token\r\n") != NULL);
    LF_CHECK(strstr(req, "SECRET") == NULL);
    LF_CHECK(strstr(req, "\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hello\"}]}]") != NULL);
    lf_buf_free(&body);
    lf_buf_free(&answer);
}

/* Cut inside its third message: an interrupted stream, reset, the backup. */
static void test_bedrock_cut_stream_then_backup(void)
{
    lf_buf body, answer, one;
    fixture f;

    lf_buf_init(&body);
    lf_buf_init(&answer);
    lf_buf_init(&one);
    bedrock_stream(&body);
    event(&one, "messageStart", "{\"p\":\"abcdefgh\",\"role\":\"assistant\"}");
    event(&one, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hello\"},\"p\":\"abc\"}");
    bedrock_answer(&answer, &body, one.len + 20);
    fixture_init(&f, 1);
    f.srv[1].script[0] = ANTHROPIC_STREAM;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 1);
    fixture_serve_bedrock(&f, &answer);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_STR(f.seen.log, "c0:Hello|a1/t0:fail|reset1|c1:whole|a2/t1:ok|");
    LF_CHECK_INT(f.seen.kinds[0], LF_E_STREAM_INTERRUPTED);
    fixture_free(&f);
    lf_buf_free(&body);
    lf_buf_free(&answer);
    lf_buf_free(&one);
}

/* An exception event after some text: its kind, then the backup; a broken
 * frame: a malformed stream. */
static void test_bedrock_exception_and_broken_frame(void)
{
    lf_buf body, answer;
    fixture f;

    lf_buf_init(&body);
    lf_buf_init(&answer);
    event(&body, "messageStart", "{\"p\":\"abcdefgh\",\"role\":\"assistant\"}");
    event(&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hel\"},\"p\":\"abc\"}");
    exception_event(&body, "throttlingException", "{\"message\":\"Too many requests, please wait.\"}");
    bedrock_answer(&answer, &body, body.len);
    fixture_init(&f, 1);
    f.srv[1].script[0] = ANTHROPIC_STREAM;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 1);
    fixture_serve_bedrock(&f, &answer);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "c0:Hel|a1/t0:fail|reset1|c1:whole|a2/t1:ok|");
    LF_CHECK_INT(f.seen.kinds[0], LF_E_RATE_LIMIT);
    fixture_free(&f);

    /* The same stream with a byte of its last message flipped. */
    body.ptr[body.len - 10] ^= 1;
    bedrock_answer(&answer, &body, body.len);
    fixture_init(&f, 1);
    fixture_serve_bedrock(&f, &answer);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_INVALID_RESPONSE);
    LF_CHECK_STR(lf_buf_cstr(&f.o.message), "malformed event in the Bedrock Converse stream");
    LF_CHECK_STR(lf_buf_cstr(&f.o.partial), "Hel");
    fixture_free(&f);
    lf_buf_free(&body);
    lf_buf_free(&answer);
}

static const char *BEDROCK_UNRECOGNIZED =
    "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nx-amzn-RequestId: ee1ff1e8\r\n"
    "x-amzn-ErrorType: UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/\r\n"
    "Content-Length: @@\r\nConnection: close\r\n\r\n"
    "{\"message\":\"The security token included in the request is invalid.\"}";

static const char *BEDROCK_NOT_READY =
    "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
    "x-amzn-ErrorType: ModelNotReadyException:http://internal.amazon.com/coral/com.amazon.bedrock/\r\n"
    "Content-Length: @@\r\nConnection: close\r\n\r\n{\"message\":\"Model is not ready.\"}";

static const char *BEDROCK_OK =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: @@\r\nConnection: close\r\n\r\n"
    "{\"metrics\":{\"latencyMs\":538},\"output\":{\"message\":{\"content\":[{\"text\":\"4\"}],"
    "\"role\":\"assistant\"}},\"stopReason\":\"end_turn\",\"usage\":{\"inputTokens\":53,\"outputTokens\":39,"
    "\"totalTokens\":92}}";

/* Errors named by x-amzn-errortype: a wrong key is never failed over,
 * whatever its status; a model not ready is retried. */
static void test_bedrock_header_named_errors(void)
{
    fixture f;

    fixture_init(&f, 0);
    fixture_bedrock_target(&f, 0);
    f.srv[0].script[0] = BEDROCK_UNRECOGNIZED;
    f.srv[0].n_script = 1;
    f.srv[1].script[0] = OK_JSON;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_UNAUTHORIZED);
    LF_CHECK_INT(f.o.status, 403);
    LF_CHECK_INT(f.o.attempts, 1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.error_type), "UnrecognizedClientException");
    LF_CHECK_STR(lf_buf_cstr(&f.o.provider_request_id), "ee1ff1e8");
    LF_CHECK_STR(lf_buf_cstr(&f.o.message), "HTTP 403: The security token included in the request is invalid.");
    f.srv[1].n_script = 0;
    fixture_free(&f);

    fixture_init(&f, 0);
    fixture_bedrock_target(&f, 0);
    f.srv[0].script[0] = BEDROCK_NOT_READY;
    f.srv[0].script[1] = BEDROCK_OK;
    f.srv[0].n_script = 2;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 1), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_INT(f.seen.kinds[0], LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK_STR(lf_buf_cstr(&f.o.answer.text), "4");
    LF_CHECK_INT(f.o.answer.input_tokens, 53);
    fixture_free(&f);
    LF_CHECK(strncmp(f.srv[0].request[1], BEDROCK_LINE, strlen(BEDROCK_LINE)) == 0);
}

/* ---- the breaker: a host whose store is one lf_circuit per target -------- */


static lf_circuit breaker_circuits[2];
static int breaker_threshold = 2, breaker_reports;
static double breaker_now = 1000;

static int breaker_health(void *ud, size_t n, lf_health *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        out[i].route = lf_circuit_peek(&breaker_circuits[i], breaker_now); /* admit takes a probe */
        out[i].failures = breaker_circuits[i].failures;
    }
    return 0;
}

static lf_circuit_rules breaker_rules(void)
{
    return (lf_circuit_rules){ .threshold = breaker_threshold, .cooldown = 60 };
}

/* A failure another call reports on target `target`. */
static void breaker_fail_elsewhere(int target)
{
    lf_circuit_rules rules = breaker_rules();
    lf_circuit_change chg;
    lf_circuit_record(&breaker_circuits[target], &rules, &(lf_circuit_outcome){ .now = breaker_now }, &chg);
}

static int breaker_report(void *ud, const lf_circuit_report *r, int *open)
{
    lf_circuit_rules rules = breaker_rules();
    lf_circuit_change chg;
    breaker_reports++;
    /* the fixture's one call holds any probe it was handed (the circuit knows until when) */
    lf_circuit_record(&breaker_circuits[r->target], &rules,
                      &(lf_circuit_outcome){ .now = breaker_now, .success = r->success, .hold = r->hold, .probe = 1 },
                      &chg);
    *open = breaker_circuits[r->target].state != LF_CIRCUIT_CLOSED;
    return 0;
}

/* Another process's failures, landed while this call waited to retry. */
static int breaker_elsewhere, breaker_admits;

static int breaker_admit(void *ud, int target, lf_health *out)
{
    lf_circuit_change chg;
    breaker_admits++;
    for (; breaker_elsewhere > 0; breaker_elsewhere--) breaker_fail_elsewhere(target);
    out->route = lf_circuit_admit(&breaker_circuits[target], breaker_now, 60, &chg);
    out->failures = breaker_circuits[target].failures;
    return 0;
}

static void breaker_fixture(fixture *f)
{
    memset(breaker_circuits, 0, sizeof breaker_circuits);
    breaker_reports = 0;
    breaker_admits = 0;
    breaker_elsewhere = 0;
    breaker_now = 1000;
    f->breaker.health = breaker_health;
    f->breaker.report = breaker_report;
    f->breaker.admit = breaker_admit;
}

/* A PDF with the user message. */
static const lf_attachment A_PDF = { "application/pdf", "r.pdf", "JVBERi0xLjQ=", 12, NULL };

/* A primary that takes no PDFs is left out with a record naming the file
 * (no request, nothing for its circuit); the backup answers. Then the backup
 * is open too: it is the one target that can take the file, so it is tried
 * anyway (an open circuit never fails a call by itself). */
static void test_attachments_a_target_cannot_take(void)
{
    fixture f;
    lf_circuit_change chg;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    f.msg.attachments = &A_PDF;
    f.msg.n_attachments = 1;
    f.targets[0].no_documents = 1;
    snprintf(f.url[0], sizeof f.url[0], "http://127.0.0.1:9/v1"); /* never sent to */
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].script[1] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 2;
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:skip|a2/t1:ok|");
    LF_CHECK_INT(f.seen.kinds[0], LF_E_ATTACHMENTS);
    LF_CHECK_INT(breaker_reports, 1); /* the backup's success alone */
    LF_CHECK_INT(breaker_circuits[0].failures, 0);

    lf_circuit_record(&breaker_circuits[1], &(lf_circuit_rules){ .threshold = 1, .cooldown = 60 },
                      &(lf_circuit_outcome){ .now = breaker_now }, &chg);
    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:skip|a2/t1:ok|");
    fixture_free(&f);
    LF_CHECK_INT(f.srv[1].served, 2);
}

/* No target takes the file: a record of each, no request, and the call
 * fails with LF_E_ATTACHMENTS, not retryable, every reason in its message. */
static void test_attachments_no_target_can_take(void)
{
    fixture f;
    fixture_init(&f, 1);
    f.msg.attachments = &A_PDF;
    f.msg.n_attachments = 1;
    f.targets[0].no_documents = 1;
    f.targets[1].max_attachment_bytes = 4;
    snprintf(f.url[0], sizeof f.url[0], "http://127.0.0.1:9/v1");
    snprintf(f.url[1], sizeof f.url[1], "http://127.0.0.1:9");
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_ATTACHMENTS);
    LF_CHECK_INT(f.o.retryable, 0);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_STR(f.seen.log, "a1/t0:skip|a2/t1:skip|");
    LF_CHECK_STR(f.o.message.ptr, "no target of the call can take the attachments: attachment \"r.pdf\": the "
                                  "target takes no PDFs (documents: false); attachment \"r.pdf\" is 8 bytes, "
                                  "over the target's limit of 4 bytes (max_attachment_bytes)");
    fixture_free(&f);
}

/* Threshold 3: the call's first 503 leaves the circuit closed, then other
 * failures open it while the call waits to retry. The retry asks again
 * and fails over instead of sending to the open target. */
static void test_breaker_retry_asks_again(void)
{
    fixture f;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    breaker_threshold = 3;
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = UNAVAILABLE;
    f.srv[0].n_script = 2;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    breaker_elsewhere = 2;
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t1:ok|");
    LF_CHECK_INT(breaker_admits, 2); /* before the retry, and before the backup */
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 1);
    breaker_threshold = 2;
}

/* Threshold 2, max_retries 2: the second 503 opens the circuit, the call
 * stops retrying and fails over; the next call skips the primary. */
static void test_breaker_opens_mid_call_then_skips(void)
{
    fixture f;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = UNAVAILABLE;
    f.srv[0].n_script = 2;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].script[1] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 2;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:fail|a3/t1:ok|");
    LF_CHECK_INT(breaker_circuits[0].state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(breaker_reports, 3); /* two failures, and the backup's success */

    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 1);
    LF_CHECK_INT(f.o.attempts, 2);
    LF_CHECK_STR(f.seen.log, "a1/t0:skip|a2/t1:ok|");
    fixture_free(&f);
    LF_CHECK_INT(f.srv[0].served, 2);
}

/* Every success is reported, so that failures the store knew of start over;
 * counted failures are reported and open the circuit. A breaker is health
 * and report together: one without the other is a bad argument. */
static void test_breaker_healthy_then_counted(void)
{
    fixture f;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].script[1] = UNAVAILABLE;
    f.srv[0].script[2] = UNAVAILABLE;
    f.srv[0].n_script = 3;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    breaker_circuits[0].failures = 1; /* other calls' failure: this call's success resets it */
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:ok|");
    LF_CHECK_INT(breaker_reports, 1);
    LF_CHECK_INT(breaker_circuits[0].failures, 0);

    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:fail|a3/t1:ok|");
    LF_CHECK_INT(breaker_reports, 4);
    LF_CHECK_INT(breaker_circuits[0].state, LF_CIRCUIT_OPEN);

    f.breaker.health = NULL;
    LF_CHECK_INT(fixture_rerun(&f, 2), -1);
    LF_CHECK_STR(lf_buf_cstr(&f.o.message), "lf_run: bad arguments");
    fixture_free(&f);
}

/* Half-open: one probe request without retries; it fails, the circuit
 * reopens and the backup answers. Then every target open: the primary is
 * tried anyway (with its retries), and its success closes the circuit. */
static void test_breaker_probe_and_every_target_open(void)
{
    fixture f;
    lf_circuit_change chg;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    lf_circuit_record(&breaker_circuits[0], &(lf_circuit_rules){ .threshold = 1, .cooldown = 60 },
                      &(lf_circuit_outcome){ .now = 1000 }, &chg);
    breaker_now = 1061;
    f.srv[0].script[0] = UNAVAILABLE;
    f.srv[0].script[1] = UNAVAILABLE;
    f.srv[0].script[2] = OK_JSON;
    f.srv[0].n_script = 3;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t1:ok|");
    LF_CHECK_INT(breaker_circuits[0].state, LF_CIRCUIT_OPEN);

    lf_circuit_record(&breaker_circuits[1], &(lf_circuit_rules){ .threshold = 1, .cooldown = 60 },
                      &(lf_circuit_outcome){ .now = 1061 }, &chg);
    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 1);
    LF_CHECK_INT(f.o.target, 0);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t0:ok|");
    LF_CHECK_INT(breaker_circuits[0].state, LF_CIRCUIT_CLOSED);
    fixture_free(&f);
}

/* The backup is past its cooldown (its probe free) and the primary answers:
 * the call never takes the backup's probe, so other calls may. */
static void test_breaker_backup_probe_taken_only_when_sent(void)
{
    fixture f;
    lf_circuit_change chg;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    lf_circuit_record(&breaker_circuits[1], &(lf_circuit_rules){ .threshold = 1, .cooldown = 60 },
                      &(lf_circuit_outcome){ .now = 1000 }, &chg);
    breaker_now = 1061;
    f.srv[0].script[0] = OK_JSON;
    f.srv[0].script[1] = UNAUTHORIZED;
    f.srv[0].n_script = 2;
    f.srv[1].script[0] = ANTHROPIC_PLAIN;
    f.srv[1].n_script = 1;
    fixture_serve(&f, 0);
    fixture_serve(&f, 1);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_STR(f.seen.log, "a1/t0:ok|");
    LF_CHECK_INT(breaker_admits, 0);
    LF_CHECK_INT(breaker_circuits[1].state, LF_CIRCUIT_OPEN);
    LF_CHECK(breaker_circuits[1].probe_until == 0);

    /* the primary's 503s send the next call to the backup: it takes the probe then */
    breaker_threshold = 1;
    f.srv[0].script[1] = UNAVAILABLE;
    LF_CHECK_INT(fixture_rerun(&f, 2), 0);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|a2/t1:ok|");
    LF_CHECK_INT(breaker_admits, 1);
    LF_CHECK_INT(breaker_circuits[1].state, LF_CIRCUIT_CLOSED);
    fixture_free(&f);
    breaker_threshold = 2;
}

/* A deterministic 4xx never counts; the open backup gets a skip record only
 * when the primary's error would have failed over. */
static void test_breaker_ignores_4xx(void)
{
    fixture f;
    lf_circuit_change chg;
    fixture_init(&f, 0);
    breaker_fixture(&f);
    lf_circuit_record(&breaker_circuits[1], &(lf_circuit_rules){ .threshold = 1, .cooldown = 60 },
                      &(lf_circuit_outcome){ .now = 1000 }, &chg);
    f.srv[0].script[0] = UNAUTHORIZED;
    f.srv[0].n_script = 1;
    fixture_serve(&f, 0);
    LF_CHECK_INT(fixture_run(&f, 2), 0);
    LF_CHECK_INT(f.o.ok, 0);
    LF_CHECK_INT(f.o.kind, LF_E_UNAUTHORIZED);
    LF_CHECK_STR(f.seen.log, "a1/t0:fail|");
    LF_CHECK_INT(breaker_reports, 0);
    LF_CHECK_INT(breaker_circuits[0].failures, 0);
    fixture_free(&f);
}

int main(void)
{
    if (lf_transport_global_init() != 0) return 2;
    for (evented_run = 0; evented_run < 2; evented_run++) {
        LF_RUN(test_retry_then_success);
        LF_RUN(test_cut_stream_resets_then_backup);
        LF_RUN(test_cut_stream_without_backup_keeps_partial);
        LF_RUN(test_cut_tool_call_then_backup_call);
        LF_RUN(test_unauthorized_never_fails_over);
        LF_RUN(test_key_quoted_back_is_scrubbed);
        LF_RUN(test_long_retry_after_fails_over_at_once);
        LF_RUN(test_refused);
        LF_RUN(test_host_stops_the_call);
        LF_RUN(test_host_wakes_a_silent_wait);
        LF_RUN(test_host_wakes_a_retry_sleep);
        LF_RUN(test_host_cancels_a_retry_sleep);
        LF_RUN(test_host_cancels_a_stream);
        LF_RUN(test_in_process_circuits);
        LF_RUN(test_bad_request_params_fail_before_network);
        LF_RUN(test_request_headers);
        LF_RUN(test_anthropic_request_headers);
        LF_RUN(test_target_headers_replace_ours);
        LF_RUN(test_gzip_answer_is_decoded);
        LF_RUN(test_stream_answered_with_plain_body);
#if LIBCURL_VERSION_NUM >= 0x075000 /* CURLOPT_PREREQFUNCTION */
        LF_RUN(test_dropped_reused_connection_is_an_attempt);
        LF_RUN(test_dropped_reused_connection_not_sent_again);
        LF_RUN(test_idle_reset_connection_is_sent_on_a_new_one);
#endif
        LF_RUN(test_breaker_opens_mid_call_then_skips);
        LF_RUN(test_breaker_healthy_then_counted);
        LF_RUN(test_breaker_probe_and_every_target_open);
        LF_RUN(test_breaker_ignores_4xx);
        LF_RUN(test_breaker_backup_probe_taken_only_when_sent);
        LF_RUN(test_breaker_retry_asks_again);
        LF_RUN(test_attachments_a_target_cannot_take);
        LF_RUN(test_attachments_no_target_can_take);
        LF_RUN(test_bedrock_stream_answers);
        LF_RUN(test_bedrock_cut_stream_then_backup);
        LF_RUN(test_bedrock_exception_and_broken_frame);
        LF_RUN(test_bedrock_header_named_errors);
    }
    curl_global_cleanup();
    return lf_test_summary("failover");
}
