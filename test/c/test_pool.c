#define _GNU_SOURCE
/* Pools: a host's headroom read from its rate-limit headers (lf_headroom),
 * the pick by weight among hosts with headroom (lf_tier), and the attempt
 * loop over a pool of hosts on loopback, with the in-process store
 * (lf_circuits) as its breaker: a sibling before the backup, a wrong key
 * raised, a host that said it has nothing left passed over until its reset,
 * the stream-reset rule between hosts, the turn's host first, a short
 * cooldown waited for and a long one failed over. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lf_circuits.h"
#include "lf_clock.h"
#include "lf_failover.h"
#include "lf_test.h"
#include "lf_test_server.h"
#include "lf_tier.h"

/* ---- headroom ------------------------------------------------------------- */

static void test_durations(void)
{
    LF_CHECK(lf_headroom_duration("1s") == 1);
    LF_CHECK(lf_headroom_duration("6m0s") == 360);
    LF_CHECK(lf_headroom_duration("1h2m3.5s") == 3723.5);
    LF_CHECK(lf_headroom_duration("20ms") == 0.02);
    LF_CHECK(lf_headroom_duration("2.5") == 2.5);
    LF_CHECK(lf_headroom_duration("") == -1);
    LF_CHECK(lf_headroom_duration("soon") == -1);
    LF_CHECK(lf_headroom_duration("5x") == -1);
    LF_CHECK(lf_headroom_duration("-1s") == -1);
}

static void test_openai_headers(void)
{
    lf_rate_headers h = { .requests = "0", .tokens = "5000", .requests_reset = "2.5s", .tokens_reset = "1m" };
    lf_headroom r = lf_headroom_read(&h, -1, 1000);

    LF_CHECK_INT(r.requests, 0);
    LF_CHECK_INT(r.tokens, 5000);
    LF_CHECK(r.requests_for == 2.5);
    LF_CHECK(r.tokens_for == 60);
    LF_CHECK(lf_headroom_wait(&r, 100) == 2.5);   /* no request left */
    r.requests = 3;
    LF_CHECK(lf_headroom_wait(&r, 100) == 0);     /* room for it */
    LF_CHECK(lf_headroom_wait(&r, 6000) == 60);   /* too few tokens for this call */
    LF_CHECK(lf_headroom_wait(&r, 0) == 0);       /* a call of unknown size counts as one token */
}

/* Anthropic's resets are RFC 3339 times; a Retry-After is none left until
 * it is over; a count without its reset (Azure) refills in the time taken
 * for one; garbage is not said. */
static void test_anthropic_azure_and_retry_after(void)
{
    lf_rate_headers a = { .requests = "0", .requests_reset = "1970-01-01T00:17:00Z", .tokens = "12000",
                          .tokens_reset = "1970-01-01T00:16:50.5+00:00" };
    lf_rate_headers azure = { .requests = "0", .tokens = "90" };
    lf_rate_headers junk = { .requests = "many", .requests_reset = "later", .tokens = "12 tokens" };
    lf_headroom r = lf_headroom_read(&a, -1, 1000); /* 00:16:40 */

    LF_CHECK(r.requests_for == 20);
    LF_CHECK(r.tokens_for == 10.5);
    r = lf_headroom_read(&(lf_rate_headers){ 0 }, 7, 1000);
    LF_CHECK_INT(r.requests, 0);
    LF_CHECK(r.requests_for == 7);
    LF_CHECK_INT(r.tokens, -1);
    r = lf_headroom_read(&azure, -1, 1000);
    LF_CHECK(r.requests_for == LF_HEADROOM_UNSAID_RESET && r.tokens_for == LF_HEADROOM_UNSAID_RESET);
    r = lf_headroom_read(&junk, -1, 1000);
    LF_CHECK(!lf_headroom_said(&r));
    /* fuzz_headroom's find: a second too large for a time is no time (it overflowed tm_sec). */
    r = lf_headroom_read(&(lf_rate_headers){ .requests = "0", .requests_reset = "2025-05-01T12:00:34444444444444430Z" },
                         -1, 1000);
    LF_CHECK(r.requests_for == LF_HEADROOM_UNSAID_RESET);
    r = lf_headroom_read(&(lf_rate_headers){ .requests = "0", .requests_reset = "2025-13-01T12:00:00Z" }, -1, 1000);
    LF_CHECK(r.requests_for == LF_HEADROOM_UNSAID_RESET);
    r = LF_HEADROOM_UNSAID;
    LF_CHECK(!lf_headroom_said(&r));
}

static void test_aged(void)
{
    lf_headroom h = { .requests = 0, .requests_for = 3, .tokens = 10, .tokens_for = 30 };
    lf_headroom later = lf_headroom_aged(&h, 5);

    LF_CHECK_INT(later.requests, -1); /* refilled: nothing known of it */
    LF_CHECK(later.requests_for == -1);
    LF_CHECK_INT(later.tokens, 10);
    LF_CHECK(later.tokens_for == 25);
}

/* ---- the pick ------------------------------------------------------------- */

static const double WEIGHTS[3] = { 2, 1, 1 };

static void healthy(lf_health *h, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) h[i] = (lf_health){ .route = LF_ROUTE_SEND, .headroom = LF_HEADROOM_UNSAID };
}

/* u in [0, 1) falls in each host's share of the weights: 2/4, 1/4, 1/4. */
static void test_pick_by_weight(void)
{
    lf_tier t = { .first = 1, .n_hosts = 3, .pooled = 1, .weights = WEIGHTS };
    lf_health h[4];

    healthy(h, 4);
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, -1, 1, 0.0).ready, 1);
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, -1, 1, 0.49).ready, 1);
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, -1, 1, 0.5).ready, 2);
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, -1, 1, 0.99).ready, 3);
    /* excluded, open, dry: out of the draw; the turn's host first */
    LF_CHECK_INT(lf_tier_pick(&t, h, 1u << 1, -1, 1, 0.0).ready, 2);
    h[2].route = LF_ROUTE_SKIP;
    h[2].open_for = 9;
    h[3].headroom = (lf_headroom){ .requests = 0, .requests_for = 4, .tokens = -1, .tokens_for = -1 };
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, -1, 1, 0.99).ready, 1);
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, 3, 1, 0.99).ready, 1); /* the turn's host has none left */
    h[3].headroom = LF_HEADROOM_UNSAID;
    LF_CHECK_INT(lf_tier_pick(&t, h, 0, 3, 1, 0.0).ready, 3);
}

/* None ready: the host whose headroom comes back first, and the open one. */
static void test_pick_when_all_are_cooling(void)
{
    lf_tier t = { .first = 0, .n_hosts = 3, .pooled = 1, .weights = WEIGHTS };
    lf_health h[3];
    lf_tier_choice ch;

    healthy(h, 3);
    h[0].headroom = (lf_headroom){ .requests = 0, .requests_for = 8, .tokens = -1, .tokens_for = -1 };
    h[1].headroom = (lf_headroom){ .requests = 50, .requests_for = 1, .tokens = 100, .tokens_for = 3 };
    h[2].route = LF_ROUTE_SKIP;
    h[2].open_for = 30;
    ch = lf_tier_pick(&t, h, 0, -1, 500, 0.3);
    LF_CHECK_INT(ch.ready, -1);
    LF_CHECK_INT(ch.cooling, 1); /* its tokens refill in 3 s */
    LF_CHECK(ch.wait == 3);
    LF_CHECK_INT(ch.open, 2);
    ch = lf_tier_pick(&t, h, (1u << 1) | (1u << 2), -1, 500, 0.3);
    LF_CHECK_INT(ch.cooling, 0);
    LF_CHECK_INT(ch.open, -1);
}

/* ---- the loop over a pool on loopback ---------------------------------------- */

#define HOSTS 4 /* three pool hosts, then the backup */

/* A host: answers every request with `reply` (a format with one %d, the
 * host's number, in its body), or the first `n_first` with `first`. */
typedef struct host {
    int fd, port, n;
    const char *reply, *first;
    int n_first;
    volatile int served;
    pthread_t thread;
} host;

static void read_request(int c)
{
    char buf[16384];
    size_t have = 0;
    char *end;
    long clen;

    for (;;) {
        ssize_t k = recv(c, buf + have, sizeof buf - 1 - have, 0);
        if (k <= 0) return;
        have += (size_t)k;
        buf[have] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strcasestr(buf, "content-length:");
            clen = cl ? strtol(cl + 15, NULL, 10) : 0;
            if ((long)(have - (size_t)(end + 4 - buf)) >= clen) return;
        }
        if (have >= sizeof buf - 1) return;
    }
}

static void *host_serve(void *arg)
{
    host *h = arg;
    for (;;) {
        char body[1024], out[2048];
        const char *fmt;
        int c = accept(h->fd, NULL, NULL), head;

        if (c < 0) return NULL;
        read_request(c);
        fmt = h->served < h->n_first ? h->first : h->reply;
        snprintf(body, sizeof body, strstr(fmt, "\r\n\r\n") + 4, h->n);
        head = (int)(strstr(fmt, "\r\n\r\n") - fmt);
        snprintf(out, sizeof out, "%.*s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", head, fmt,
                 strlen(body), body);
        h->served++;
        if (send(c, out, strlen(out), MSG_NOSIGNAL) < 0) { /* gone */ }
        close(c);
    }
}

#define OK_FROM(headers) \
    "HTTP/1.1 200 OK\r\nContent-Type: application/json" headers "\r\n\r\n" \
    "{\"model\":\"m\",\"choices\":[{\"message\":{\"content\":\"from %d\"},\"finish_reason\":\"stop\"}]," \
    "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}"
static const char *OK = OK_FROM("");
static const char *OK_NONE_LEFT = OK_FROM("\r\nx-ratelimit-remaining-requests: 0\r\nx-ratelimit-reset-requests: 30s");
static const char *OK_SOON_NONE_LEFT =
    OK_FROM("\r\nanthropic-ratelimit-requests-remaining: 0\r\nx-ratelimit-reset-requests: 300ms");
static const char *OK_FEW_TOKENS = OK_FROM("\r\nx-ratelimit-remaining-tokens: 40\r\nx-ratelimit-reset-tokens: 1m");
static const char *BUSY = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n"
                          "{\"error\":{\"message\":\"busy %d\"}}";
static const char *LIMITED = "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 40"
                             "\r\n\r\n{\"error\":{\"message\":\"slow down %d\",\"code\":\"rate_limit_exceeded\"}}";
static const char *BAD_KEY = "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n\r\n"
                             "{\"error\":{\"message\":\"bad key %d\",\"type\":\"invalid_request_error\"}}";
/* A stream of one delta, cut before its end (the %d goes in the delta). */
static const char *CUT = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                         "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"half %d \"}}]}\n\n";
static const char *STREAM = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                            "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"whole %d\"}}]}\n\n"
                            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

typedef struct pool_run {
    host hosts[HOSTS];
    char urls[HOSTS][64];
    char keys[HOSTS][32];
    lf_target targets[HOSTS];
    lf_tier tiers[2];
    lf_message msg;
    lf_request_params params;
    lf_policy pol;
    lf_listener l;
    lf_circuits *table;
    lf_circuits_call cc;
    lf_breaker breaker;
    lf_outcome o;
    lf_pool *pool;
    char log[1024];
    const lf_target *stay;
    int resets;
} pool_run;

static int on_chunk(void *ud, int target, const char *text, size_t len)
{
    pool_run *p = ud;
    size_t used = strlen(p->log);
    snprintf(p->log + used, sizeof p->log - used, "c%d:%.*s|", target, (int)len, text);
    return 0;
}

static int on_reset(void *ud, int target)
{
    pool_run *p = ud;
    size_t used = strlen(p->log);
    p->resets++;
    snprintf(p->log + used, sizeof p->log - used, "reset%d|", target);
    return 0;
}

static int on_attempt(void *ud, const lf_attempt_record *rec)
{
    pool_run *p = ud;
    size_t used = strlen(p->log);
    snprintf(p->log + used, sizeof p->log - used, "h%d:%s|", rec->target,
             rec->skipped ? "skip" : rec->success ? "ok" : "fail");
    return 0;
}

static int wait_fn(void *ud, lf_wait *w)
{
    lf_wait_block(w);
    return 0;
}

/* Three pool hosts (weights 2, 1, 1) and a backup, each answering `reply`. */
static void pool_start(pool_run *p, const char *reply)
{
    int i;

    memset(p, 0, sizeof *p);
    for (i = 0; i < HOSTS; i++) {
        host *h = &p->hosts[i];
        h->n = i;
        h->reply = reply;
        h->fd = lf_test_listen(&h->port);
        pthread_create(&h->thread, NULL, host_serve, h);
        snprintf(p->urls[i], sizeof p->urls[i], "http://127.0.0.1:%d/v1", h->port);
        snprintf(p->keys[i], sizeof p->keys[i], "sk-host-%d-key", i);
        p->targets[i] = (lf_target){ .api = LF_API_OPENAI, .base_url = p->urls[i], .api_key = p->keys[i],
                                     .model = i < 3 ? "pooled" : "backup" };
    }
    p->tiers[0] = (lf_tier){ .first = 0, .n_hosts = 3, .pooled = 1, .weights = WEIGHTS };
    p->tiers[1] = (lf_tier){ .first = 3, .n_hosts = 1 };
    p->msg = (lf_message){ .role = "user", .content = "hello", .content_len = 5 };
    p->params.messages = &p->msg;
    p->params.n_messages = 1;
    p->pol = (lf_policy){ .max_retries = 2, .backoff = { .interval = 0.001, .factor = 1, .max_interval = 5 },
                          .connect_timeout = 2, .first_token_timeout = 5, .idle_timeout = 5, .request_timeout = 10,
                          .max_response_bytes = 1 << 20 };
    p->l = (lf_listener){ .ud = p, .on_chunk = on_chunk, .on_reset = on_reset, .on_attempt = on_attempt,
                          .wait = wait_fn };
    p->table = lf_circuits_new();
    p->cc = (lf_circuits_call){ .table = p->table, .keys = { "a:pooled", "b:pooled", "c:pooled", "z:backup" },
                                .n_keys = HOSTS, .token = "call", .rules = { .threshold = 5, .cooldown = 60 },
                                .probe_ttl = 11 };
    lf_circuits_bind(&p->cc, &p->breaker);
    p->pool = lf_pool_new();
    lf_outcome_init(&p->o);
}

static int pool_call(pool_run *p, size_t n_tiers)
{
    lf_outcome_free(&p->o);
    lf_outcome_init(&p->o);
    p->log[0] = '\0';
    return lf_run(&(lf_run_args){ .pool = p->pool, .targets = p->targets, .n_targets = n_tiers == 2 ? HOSTS : 3,
                                  .tiers = p->tiers, .n_tiers = n_tiers, .params = &p->params, .policy = &p->pol,
                                  .listener = &p->l, .breaker = &p->breaker, .stay = p->stay, .tokens = 100 },
                  &p->o);
}

static void pool_stop(pool_run *p)
{
    int i;
    for (i = 0; i < HOSTS; i++) lf_test_server_stop(p->hosts[i].fd, p->hosts[i].thread);
    lf_outcome_free(&p->o);
    lf_pool_free(p->pool);
    lf_circuits_free(p->table);
}

static int served(const pool_run *p, int i)
{
    return p->hosts[i].served;
}

/* 400 calls split about 2:1:1 (each host's share within 0.08 of its weight's). */
static void test_split_by_weight(void)
{
    pool_run p;
    int i;

    pool_start(&p, OK);
    for (i = 0; i < 400; i++) LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK(served(&p, 0) > 0.42 * 400 && served(&p, 0) < 0.58 * 400);
    LF_CHECK(served(&p, 1) > 0.17 * 400 && served(&p, 1) < 0.33 * 400);
    LF_CHECK(served(&p, 2) > 0.17 * 400 && served(&p, 2) < 0.33 * 400);
    LF_CHECK_INT(served(&p, 3), 0);
    pool_stop(&p);
}

/* A failing host's call lands on a sibling at once (no retry, no backup); a
 * 401 is raised, never answered by a sibling. */
static void test_sibling_before_backup_and_bad_key_raised(void)
{
    pool_run p;

    pool_start(&p, OK);
    p.hosts[0].reply = BUSY;
    p.hosts[1].reply = BUSY;
    p.stay = &p.targets[0];
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(p.o.ok, 1);
    LF_CHECK_INT(p.o.target, 2);
    LF_CHECK(strncmp(p.log, "h0:fail|h", 9) == 0 && strstr(p.log, "h2:ok|") && !strstr(p.log, "h3"));
    LF_CHECK_INT(served(&p, 0), 1);
    LF_CHECK_INT(served(&p, 3), 0);

    p.hosts[0].reply = BAD_KEY;
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(p.o.ok, 0);
    LF_CHECK_INT(p.o.kind, LF_E_UNAUTHORIZED);
    LF_CHECK_STR(p.log, "h0:fail|");
    LF_CHECK(strstr(lf_buf_cstr(&p.o.message), "bad key 0") != NULL);
    LF_CHECK_INT(served(&p, 3), 0);
    pool_stop(&p);
}

/* A host whose credential source failed (unusable) is picked as any host:
 * a call that goes to it fails there with LF_E_CONFIGURATION, nothing sent,
 * no sibling or backup answering; a call picked elsewhere is answered, and a
 * sibling's failure that moves the call to it ends the call there too. */
static void test_unusable_host_fails_its_calls_only(void)
{
    pool_run p;
    int i, failed = 0, answered = 0;

    pool_start(&p, OK);
    p.targets[1].api_key = NULL;
    p.targets[1].unusable = "provider :b: the access_token: source raised IOError";
    for (i = 0; i < 200; i++) {
        LF_CHECK_INT(pool_call(&p, 2), 0);
        if (p.o.ok) {
            answered++;
            LF_CHECK(p.o.target != 1);
            continue;
        }
        failed++;
        LF_CHECK_INT(p.o.kind, LF_E_CONFIGURATION);
        LF_CHECK_INT(p.o.target, 1);
        LF_CHECK_INT(p.o.retryable, 0);
        LF_CHECK_STR(lf_buf_cstr(&p.o.message), "provider :b: the access_token: source raised IOError");
        LF_CHECK_STR(p.log, "h1:skip|");
    }
    LF_CHECK(failed > 0.13 * 200 && failed < 0.37 * 200); /* its weight's quarter */
    LF_CHECK_INT(answered + failed, 200);
    LF_CHECK_INT(served(&p, 1), 0);
    LF_CHECK_INT(served(&p, 3), 0);

    p.hosts[0].reply = BUSY;
    p.hosts[2].reply = BUSY;
    p.stay = &p.targets[0];
    for (i = 0; i < 3; i++) { /* under the circuits' threshold: h0 stays the first */
        LF_CHECK_INT(pool_call(&p, 2), 0);
        LF_CHECK_INT(p.o.ok, 0);
        LF_CHECK_INT(p.o.kind, LF_E_CONFIGURATION);
        LF_CHECK(strncmp(p.log, "h0:fail|", 8) == 0 && strstr(p.log, "h1:skip|"));
    }
    LF_CHECK_INT(served(&p, 1) + served(&p, 3), 0);
    pool_stop(&p);
}

/* Every host failing: each tried once, then the backup; without one, the
 * pool's attempts are its hosts' (or max_retries + 1, when it has fewer). */
static void test_every_host_fails_then_backup(void)
{
    pool_run p;

    pool_start(&p, BUSY);
    p.hosts[3].reply = OK;
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(p.o.ok, 1);
    LF_CHECK_INT(p.o.target, 3);
    LF_CHECK_INT(served(&p, 0) + served(&p, 1) + served(&p, 2), 3);
    LF_CHECK(strstr(p.log, "h3:ok|") != NULL);
    LF_CHECK_INT(pool_call(&p, 1), 0);
    LF_CHECK_INT(p.o.ok, 0);
    LF_CHECK_INT(p.o.kind, LF_E_SERVICE_UNAVAILABLE);
    LF_CHECK_INT(served(&p, 0) + served(&p, 1) + served(&p, 2), 3 + 3);
    p.pol.max_retries = 4;
    LF_CHECK_INT(pool_call(&p, 1), 0);
    LF_CHECK_INT(served(&p, 0) + served(&p, 1) + served(&p, 2), 3 + 3 + 5);
    pool_stop(&p);
}

/* A host that said it has no requests left gets none until its reset (30
 * s): the next calls go to its siblings; the same for one with too few
 * tokens for the call. */
static void test_no_requests_left_gets_none(void)
{
    pool_run p;
    int i;

    pool_start(&p, OK);
    p.hosts[0].reply = OK_NONE_LEFT;
    p.hosts[1].reply = OK_FEW_TOKENS;
    p.stay = &p.targets[0];
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_STR(p.log, "h0:ok|");
    p.stay = &p.targets[1];
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_STR(p.log, "h1:ok|");
    p.stay = NULL;
    for (i = 0; i < 30; i++) {
        LF_CHECK_INT(pool_call(&p, 2), 0);
        LF_CHECK_STR(p.log, "h2:ok|");
    }
    LF_CHECK_INT(served(&p, 0), 1);
    LF_CHECK_INT(served(&p, 1), 1);
    pool_stop(&p);
}

/* Every host cooling: a refill within what the policy would sleep is
 * waited for (one sleep, no spin), then that host answers; a longer one
 * fails over to the backup, each host passed over recorded. */
static void test_every_host_cooling(void)
{
    pool_run p;

    pool_start(&p, OK_SOON_NONE_LEFT);
    p.hosts[0].reply = LIMITED;
    p.hosts[1].reply = LIMITED;
    p.stay = &p.targets[2];
    LF_CHECK_INT(pool_call(&p, 2), 0); /* host 2 answers, and has none left for 300 ms */
    LF_CHECK_STR(p.log, "h2:ok|");
    p.stay = &p.targets[0];
    LF_CHECK_INT(pool_call(&p, 2), 0); /* 0 and 1 ask for 40 s; 2 refills sooner */
    LF_CHECK_STR(p.log, "h0:fail|h1:fail|h2:ok|");
    LF_CHECK_INT(pool_call(&p, 2), 0); /* 0 and 1 open now; 2's refill waited for */
    LF_CHECK_STR(p.log, "h2:ok|");

    p.pol.backoff.max_interval = 0.01; /* now 300 ms is too long to wait */
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(p.o.target, 3);
    LF_CHECK_STR(p.log, "h0:skip|h1:skip|h2:skip|h3:ok|");
    pool_stop(&p);
}

/* A stream cut on one host after its first words: they are withdrawn
 * before the sibling answers. */
static void test_stream_reset_between_hosts(void)
{
    pool_run p;

    pool_start(&p, STREAM);
    p.params.stream = 1;
    p.hosts[0].reply = CUT;
    p.stay = &p.targets[0];
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(p.o.ok, 1);
    LF_CHECK_INT(p.resets, 1);
    LF_CHECK(strncmp(p.log, "c0:half 0 |h0:fail|reset", 24) == 0);
    LF_CHECK_INT(served(&p, 3), 0);
    pool_stop(&p);
}

/* The in-process store keeps what each host said, for the next calls and
 * for LlmFailover.health. */
static void test_store_keeps_headroom(void)
{
    pool_run p;
    lf_circuits_view v;

    pool_start(&p, OK);
    p.hosts[1].reply = OK_FEW_TOKENS;
    p.stay = &p.targets[1];
    LF_CHECK_INT(pool_call(&p, 2), 0);
    LF_CHECK_INT(lf_circuits_get(p.table, "b:pooled", lf_now_wall(), &v), 1);
    LF_CHECK_INT(v.headroom.tokens, 40);
    LF_CHECK(v.headroom.tokens_for > 50 && v.headroom.tokens_for <= 60);
    LF_CHECK_INT(v.headroom.requests, -1);
    LF_CHECK_INT(lf_circuits_get(p.table, "z:backup", lf_now_wall(), &v), 0);
    pool_stop(&p);
}

int main(void)
{
    LF_RUN(test_durations);
    LF_RUN(test_openai_headers);
    LF_RUN(test_anthropic_azure_and_retry_after);
    LF_RUN(test_aged);
    LF_RUN(test_pick_by_weight);
    LF_RUN(test_pick_when_all_are_cooling);
    LF_RUN(test_split_by_weight);
    LF_RUN(test_sibling_before_backup_and_bad_key_raised);
    LF_RUN(test_unusable_host_fails_its_calls_only);
    LF_RUN(test_every_host_fails_then_backup);
    LF_RUN(test_no_requests_left_gets_none);
    LF_RUN(test_every_host_cooling);
    LF_RUN(test_stream_reset_between_hosts);
    LF_RUN(test_store_keeps_headroom);
    return lf_test_summary("pool");
}
