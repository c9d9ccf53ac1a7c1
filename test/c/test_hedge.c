#define _GNU_SOURCE
/* Hedged requests (lf_hedge.c) end to end under ASan/UBSan: two loopback
 * servers that each hold their streamed answer back for a while, the attempt
 * loop hedging from the first to the second, waits both poll-driven and
 * readiness-driven. Each server notes whether the client hung up while it
 * held the answer back (the loser's connection is closed at once). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lf_failover.h"
#include "lf_test.h"
#include "lf_test_server.h"

typedef struct slow_server {
    int fd, port;
    int delay_ms;          /* before the answer's first byte */
    int hung_up;           /* the client closed the connection during the delay */
    int served;
    const char *answer;
    pthread_t thread;
} slow_server;

static const char *OPENAI_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"content\":\"from openai\"}}]}\n\n"
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: [DONE]\n\n";

static const char *ANTHROPIC_STREAM =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\","
    "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"from anthropic\"}}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
    "\"usage\":{\"output_tokens\":4}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static void *slow_serve(void *arg)
{
    slow_server *s = arg;
    char buf[8192];
    struct pollfd p;
    int c = accept(s->fd, NULL, NULL);

    if (c < 0) return NULL;
    if (recv(c, buf, sizeof buf, 0) <= 0) {
        close(c);
        return NULL;
    }
    s->served = 1;
    /* Held back: a client that closes meanwhile makes the socket readable (EOF). */
    p.fd = c;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, s->delay_ms) > 0 && recv(c, buf, sizeof buf, MSG_DONTWAIT) <= 0) s->hung_up = 1;
    else if (send(c, s->answer, strlen(s->answer), MSG_NOSIGNAL) < 0) s->hung_up = 1;
    close(c);
    return NULL;
}

static void slow_start(slow_server *s, int delay_ms, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->delay_ms = delay_ms;
    s->answer = answer;
    s->fd = lf_test_listen(&s->port);
    pthread_create(&s->thread, NULL, slow_serve, s);
}

typedef struct seen {
    char text[256];
    int chunk_targets[2];  /* chunks delivered per target */
    int attempts, hedged, cancelled, cancelled_target, success_target;
} seen;

static int on_chunk(void *ud, int target, const char *t, size_t len)
{
    seen *s = ud;
    size_t have = strlen(s->text);
    if (have + len < sizeof s->text) memcpy(s->text + have, t, len);
    s->chunk_targets[target]++;
    return 0;
}

static int on_reset(void *ud, int target)
{
    (void)ud;
    (void)target;
    return 0;
}

static int on_attempt(void *ud, const lf_attempt_record *rec)
{
    seen *s = ud;
    s->attempts++;
    s->hedged += rec->hedge;
    if (rec->lost) {
        s->cancelled++;
        s->cancelled_target = rec->target;
    }
    if (rec->success) s->success_target = rec->target;
    return 0;
}

static int wait_fn(void *ud, lf_wait *w)
{
    (void)ud;
    lf_wait_block(w);
    return 0;
}

static int wait_fd_fn(void *ud, int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
    (void)ud;
    if (fd < 0) poll(NULL, 0, timeout_ms);
    else poll(&p, 1, timeout_ms);
    return 0;
}

static int evented_run;

/* One hedged call: the primary (OpenAI) answers after first_ms, the backup
 * (Anthropic) after backup_ms; hedge_after 0.2 s. */
static void run_call(int first_ms, int backup_ms, slow_server srv[2], seen *s, lf_outcome *o)
{
    char url[2][64];
    lf_target targets[2];
    lf_message msg = { .role = "user", .content = "hello", .content_len = 5 };
    lf_request_params params;
    lf_policy pol;
    lf_listener l;
    lf_pool *pool = lf_pool_new();
    int i;

    slow_start(&srv[0], first_ms, OPENAI_STREAM);
    slow_start(&srv[1], backup_ms, ANTHROPIC_STREAM);
    memset(targets, 0, sizeof targets);
    for (i = 0; i < 2; i++) {
        snprintf(url[i], sizeof url[i], "http://127.0.0.1:%d%s", srv[i].port, i == 0 ? "/v1" : "");
        targets[i].base_url = url[i];
        targets[i].api_key = "sk-test";
        targets[i].model = i == 0 ? "primary-model" : "backup-model";
    }
    targets[0].api = LF_API_OPENAI;
    targets[1].api = LF_API_ANTHROPIC;
    memset(&params, 0, sizeof params);
    params.messages = &msg;
    params.n_messages = 1;
    params.stream = 1;
    memset(&pol, 0, sizeof pol);
    pol.backoff.interval = 0.001;
    pol.backoff.factor = 1;
    pol.backoff.max_interval = 5;
    pol.connect_timeout = 2;
    pol.first_token_timeout = 10;
    pol.idle_timeout = 10;
    pol.request_timeout = 20;
    pol.max_response_bytes = 1 << 20;
    pol.hedge_after = 0.2;
    memset(&l, 0, sizeof l);
    memset(s, 0, sizeof *s);
    l.ud = s;
    l.on_chunk = on_chunk;
    l.on_reset = on_reset;
    l.on_attempt = on_attempt;
    l.wait = wait_fn;
    l.wait_fd = evented_run ? wait_fd_fn : NULL;
    lf_outcome_init(o);
    LF_CHECK_INT(lf_run(&(lf_run_args){ .pool = pool, .targets = targets, .n_targets = 2, .params = &params,
                                        .policy = &pol, .listener = &l },
                        o),
                 0);
    lf_pool_free(pool);
    for (i = 0; i < 2; i++) lf_test_server_stop(srv[i].fd, srv[i].thread);
}

/* One hedged call and what it should end with. */
typedef struct hedge_case {
    const char *what;
    int first_ms, backup_ms;  /* when each server sends its answer */
    int winner;               /* the target that answers */
    int hedged;               /* whether the backup was sent (the loser then cut) */
} hedge_case;

static const hedge_case CASES[] = {
    /* The backup is sent at 0.2 s, answers, and the primary's connection is closed at once. */
    { "the primary holds its answer for seconds: the backup wins", 3000, 0, 1, 1 },
    /* No second request. */
    { "the primary answers before hedge_after", 20, 0, 0, 0 },
    { "both slow, the primary less so: it wins, the backup is cut", 500, 3000, 0, 1 },
};

static void test_hedge_cases(void)
{
    size_t k;

    for (k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        const hedge_case *c = &CASES[k];
        int loser = 1 - c->winner;
        slow_server srv[2];
        seen s;
        lf_outcome o;
        int failed_before = lf_test_current_failed;

        run_call(c->first_ms, c->backup_ms, srv, &s, &o);
        LF_CHECK_INT(o.ok, 1);
        LF_CHECK_INT(o.target, c->winner);
        LF_CHECK_STR(s.text, c->winner == 0 ? "from openai" : "from anthropic");
        LF_CHECK_INT(s.chunk_targets[loser], 0);
        LF_CHECK_INT(s.attempts, c->hedged ? 2 : 1);
        LF_CHECK_INT(s.hedged, c->hedged ? 2 : 0);
        LF_CHECK_INT(s.cancelled, c->hedged);
        if (c->hedged) {
            LF_CHECK_INT(s.cancelled_target, loser);
            LF_CHECK_INT(srv[loser].hung_up, 1);
        } else {
            LF_CHECK_INT(srv[1].served, 0);
        }
        if (lf_test_current_failed && !failed_before)
            fprintf(stderr, "  in: %s%s\n", c->what, evented_run ? " (readiness-driven waits)" : "");
        lf_outcome_free(&o);
    }
}

int main(void)
{
    if (lf_transport_global_init() != 0) return 2;
    for (evented_run = 0; evented_run < 2; evented_run++) {
        LF_RUN(test_hedge_cases);
    }
    curl_global_cleanup();
    return lf_test_summary("hedge");
}
