/* The gem's C core alone, without Ruby: lf_run (request building, the
 * libcurl multi transfer, parsing, the attempt record) in a loop, with a C
 * listener that runs the core's waits (lf_wait_block). The difference between this and
 * curl_floor is the core's own cost; the difference between this and
 * chat.ask is the binding's and the Ruby layer's.
 *
 *   core_loop BASE_URL N [stream]
 *
 * Prints the microseconds per call (streamed or not), wall clock then this
 * process's CPU time (user and system).
 *
 * Built with -DCORE_LOOP_SHARED (-fPIC -shared) it has no main: a Ruby process
 * calls core_loop_run(argc, argv) through Fiddle, to time the same loop inside
 * a Ruby process with the gem loaded but no Ruby code between calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lf_failover.h"
#include "lf_transport.h"

#include "lf_banned.h"

static long core_chunks;

static int core_on_chunk(void *ud, int target, const char *text, size_t len)
{
    core_chunks++;
    return 0;
}

static int core_on_reset(void *ud, int target)
{
    return 0;
}

static int core_on_attempt(void *ud, const lf_attempt_record *rec)
{
    return 0;
}

static int core_wait(void *ud, lf_wait *w)
{
    lf_wait_block(w);
    return 0;
}

static double core_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int core_loop_run(int argc, char **argv);

int core_loop_run(int argc, char **argv)
{
    lf_target t;
    lf_message msg = { .role = "user", .content = "Hello", .content_len = 5 };
    lf_request_params params;
    lf_policy pol;
    lf_listener l = { .on_chunk = core_on_chunk, .on_reset = core_on_reset,
                      .on_attempt = core_on_attempt, .wait = core_wait };
    lf_pool *pool;
    long n, i, warm;
    double t0 = 0, c0 = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: core_loop BASE_URL N [stream]\n");
        return 2;
    }
    n = strtol(argv[2], NULL, 10);
    if (lf_transport_global_init() != 0 || !(pool = lf_pool_new())) return 1;
    memset(&t, 0, sizeof(t));
    t.api = LF_API_OPENAI;
    t.base_url = argv[1];
    t.api_key = "bench-key";
    t.model = "gpt-4o-mini";
    memset(&params, 0, sizeof(params));
    params.messages = &msg;
    params.n_messages = 1;
    params.stream = argc > 3 && strcmp(argv[3], "stream") == 0;
    memset(&pol, 0, sizeof(pol));
    pol.backoff.interval = 0.1;
    pol.backoff.factor = 2;
    pol.backoff.max_interval = 30;
    pol.connect_timeout = 5;
    pol.first_token_timeout = 30;
    pol.idle_timeout = 30;
    pol.request_timeout = 300;
    pol.max_response_bytes = 32u << 20;

    warm = n / 10 > 0 ? n / 10 : 1;
    for (i = 0; i < warm + n; i++) {
        lf_outcome o;
        if (i == warm) {
            t0 = core_clock(CLOCK_MONOTONIC);
            c0 = core_clock(CLOCK_PROCESS_CPUTIME_ID);
        }
        lf_outcome_init(&o);
        if (lf_run(&(lf_run_args){ .pool = pool, .targets = &t, .n_targets = 1, .params = &params, .policy = &pol,
                                   .listener = &l },
                   &o) != 0 ||
            !o.ok) {
            fprintf(stderr, "core_loop: call failed: %.*s\n", (int)o.message.len,
                    o.message.ptr ? o.message.ptr : "");
            return 1;
        }
        lf_outcome_free(&o);
    }
    printf("%.3f %.3f\n", (core_clock(CLOCK_MONOTONIC) - t0) * 1e6 / (double)n,
           (core_clock(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e6 / (double)n);
    lf_pool_free(pool);
    fflush(stdout); /* a Ruby caller prints after this */
    return core_chunks < 0;
}

#ifndef CORE_LOOP_SHARED
int main(int argc, char **argv)
{
    return core_loop_run(argc, argv);
}
#endif
