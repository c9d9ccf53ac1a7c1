/* Tests of the in-process store of circuits (lf_circuits.h): one circuit per
 * key, the probe's one holder, what a success has to reset, the copies the
 * host reads, a forked child's own copy, and one call's breaker over it. */
#include "lf_circuits.h"
#include "lf_clock.h"
#include "lf_test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lf_banned.h"

static const lf_circuit_rules RULES = { .threshold = 2, .cooldown = 60 };
static const char *KEY = "openai:gpt-4o";

static int fail(lf_circuits *t, const char *key, double now, const char *token, lf_circuit_change *chg)
{
    lf_circuits_outcome out = { .now = now, .kind = LF_E_SERVER, .token = token };
    return lf_circuits_record(t, key, &RULES, &out, chg);
}

static int succeed(lf_circuits *t, const char *key, double now, const char *token, lf_circuit_change *chg)
{
    lf_circuits_outcome out = { .now = now, .success = 1, .token = token };
    return lf_circuits_record(t, key, &RULES, &out, chg);
}

static void test_unknown_targets_send_and_cost_nothing(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuit_change chg;
    lf_health hl;

    LF_CHECK_INT(lf_circuits_peek(t, KEY, NULL, 1000, &hl), LF_ROUTE_SEND);
    LF_CHECK_INT(hl.failures, 0);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "a", 1000, 5, &hl, &chg), LF_ROUTE_SEND);
    LF_CHECK_INT(chg.reason, LF_REASON_NONE);
    /* a success on a target with nothing counted makes no entry */
    LF_CHECK_INT(succeed(t, KEY, 1000, NULL, &chg), 0);
    LF_CHECK_INT(lf_circuits_size(t), 0);
    lf_circuits_free(t);
}

static void test_threshold_opens_and_a_success_resets(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuit_change chg;
    lf_circuits_view v;
    lf_health hl;

    LF_CHECK_INT(fail(t, KEY, 1000, NULL, &chg), 0);
    LF_CHECK(lf_circuits_unsettled(t, KEY));
    LF_CHECK_INT(succeed(t, KEY, 1000, NULL, &chg), 0);
    LF_CHECK(!lf_circuits_unsettled(t, KEY));
    LF_CHECK_INT(fail(t, KEY, 1000, NULL, &chg), 0);
    LF_CHECK_INT(fail(t, KEY, 1001, NULL, &chg), 1);
    LF_CHECK_INT(chg.reason, LF_REASON_THRESHOLD);
    LF_CHECK_INT(lf_circuits_peek(t, KEY, NULL, 1002, &hl), LF_ROUTE_SKIP);
    LF_CHECK_INT(hl.failures, 2);
    LF_CHECK_INT(lf_circuits_get(t, KEY, 1000, &v), 1);
    LF_CHECK_INT(v.circuit.state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(v.last_kind, LF_E_SERVER);
    LF_CHECK_INT(lf_circuits_get(t, "other:model", 1000, &v), 0);
    lf_circuits_free(t);
}

/* Past the cooldown one caller holds the probe: others skip, its holder
 * asking again keeps it, peek says it is free only while nobody has it, and
 * a release by anyone else frees nothing. */
static void test_one_holder_of_the_probe(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuit_change chg;
    lf_health hl;

    fail(t, KEY, 1000, NULL, &chg);
    fail(t, KEY, 1000, NULL, &chg);
    LF_CHECK_INT(lf_circuits_peek(t, KEY, "a", 1061, &hl), LF_ROUTE_PROBE); /* free */
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "a", 1061, 5, &hl, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(chg.reason, LF_REASON_COOLDOWN);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "b", 1061, 5, &hl, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuits_peek(t, KEY, "b", 1061, &hl), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuits_peek(t, KEY, "a", 1061, &hl), LF_ROUTE_PROBE); /* its own */
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "a", 1065, 5, &hl, &chg), LF_ROUTE_PROBE); /* renewed */
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "b", 1068, 5, &hl, &chg), LF_ROUTE_SKIP); /* to 1070 */
    lf_circuits_release(t, KEY, "b");
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "b", 1068, 5, &hl, &chg), LF_ROUTE_SKIP);
    lf_circuits_release(t, KEY, "a");
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "b", 1068, 5, &hl, &chg), LF_ROUTE_PROBE);
    lf_circuits_free(t);
}

/* While half-open only the probe's own failure reopens; another caller's is
 * counted. The probe's success closes and lets the probe go. */
static void test_only_the_probe_reopens(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuit_change chg;
    lf_circuits_view v;
    lf_health hl;

    fail(t, KEY, 1000, NULL, &chg);
    fail(t, KEY, 1000, NULL, &chg);
    lf_circuits_admit(t, KEY, "probe", 1061, 5, &hl, &chg);
    LF_CHECK_INT(fail(t, KEY, 1062, "late", &chg), 1);
    LF_CHECK_INT(chg.reason, LF_REASON_NONE);
    LF_CHECK_INT(fail(t, KEY, 1062, "probe", &chg), 1);
    LF_CHECK_INT(chg.reason, LF_REASON_PROBE_FAILED);
    lf_circuits_get(t, KEY, 1000, &v);
    LF_CHECK_INT(v.circuit.state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(v.circuit.failures, 4);
    LF_CHECK_INT(v.circuit.probes_failed, 1);
    /* the next probe, after the schedule's wait, succeeds */
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "next", 2000, 5, &hl, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(succeed(t, KEY, 2001, "next", &chg), 0);
    LF_CHECK_INT(chg.reason, LF_REASON_SUCCESS);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "other", 2001, 5, &hl, &chg), LF_ROUTE_SEND);
    LF_CHECK(!lf_circuits_unsettled(t, KEY));
    lf_circuits_free(t);
}

static void test_adopt_snapshot_and_clear(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuits_view *v;
    lf_circuit_change chg;
    long n, i;
    lf_health hl;
    int seen_open = 0;
    char key[32];

    lf_circuits_adopt(t, KEY, 1000, 0, 0); /* healthy: nothing to keep */
    LF_CHECK_INT(lf_circuits_size(t), 0);
    lf_circuits_adopt(t, KEY, 1000, 3, 30);
    LF_CHECK_INT(lf_circuits_peek(t, KEY, NULL, 1010, &hl), LF_ROUTE_SKIP);
    LF_CHECK_INT(hl.failures, 3);
    /* enough keys to grow the table */
    for (i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "p:m%ld", i);
        fail(t, key, 1000, NULL, &chg);
    }
    n = lf_circuits_snapshot(t, 1000, &v);
    LF_CHECK_INT(n, 41);
    for (i = 0; i < n; i++) seen_open += strcmp(v[i].key, KEY) == 0 && v[i].circuit.state == LF_CIRCUIT_OPEN;
    LF_CHECK_INT(seen_open, 1);
    lf_circuits_views_free(v, n);
    LF_CHECK_INT(lf_circuits_peek(t, "p:m39", NULL, 1000, &hl), LF_ROUTE_SEND);
    LF_CHECK_INT(hl.failures, 1);
    lf_circuits_clear(t);
    LF_CHECK_INT(lf_circuits_size(t), 0);
    LF_CHECK_INT(lf_circuits_snapshot(t, 1000, &v), 0);
    lf_circuits_views_free(v, 0);
    lf_circuits_free(t);
}

/* A forked child keeps the parent's circuits but not its probe. */
static void test_fork_leaves_the_probe_behind(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuit_change chg;
    lf_health hl;
    int status = 0;
    pid_t pid;

    fail(t, KEY, 1000, NULL, &chg);
    fail(t, KEY, 1000, NULL, &chg);
    lf_circuits_admit(t, KEY, "parent", 1061, 5, &hl, &chg);
    pid = fork();
    if (pid == 0) {
        int ok = lf_circuits_admit(t, KEY, "child", 1062, 5, &hl, &chg) == LF_ROUTE_PROBE && hl.failures == 2;
        _exit(ok ? 0 : 1);
    }
    LF_CHECK(pid > 0);
    waitpid(pid, &status, 0);
    LF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "other", 1062, 5, &hl, &chg), LF_ROUTE_SKIP);
    lf_circuits_free(t);
}

/* ---- one call's breaker ---------------------------------------------------- */

typedef struct changes {
    int n;
    int target[4];
    lf_circuit_change chg[4];
    lf_kind kind[4];
} changes;

static int on_change(void *ud, int target, const lf_circuit_change *chg, lf_kind kind)
{
    changes *c = ud;
    if (c->n < 4) {
        c->target[c->n] = target;
        c->chg[c->n] = *chg;
        c->kind[c->n] = kind;
    }
    c->n++;
    return 0;
}

static void call_init(lf_circuits_call *cc, lf_breaker *b, lf_circuits *t, const char *token, changes *seen)
{
    memset(cc, 0, sizeof(*cc));
    cc->table = t;
    cc->keys[0] = KEY;
    cc->keys[1] = "anthropic:claude";
    cc->n_keys = 2;
    cc->token = token;
    cc->rules = (lf_circuit_rules){ .threshold = 2, .cooldown = 0.05 };
    cc->probe_ttl = 5;
    cc->ud = seen;
    cc->on_change = on_change;
    lf_circuits_bind(cc, b);
}

static void test_a_call_reports_and_hears_of_changes(void)
{
    lf_circuits *t = lf_circuits_new();
    lf_circuits_call cc;
    lf_breaker b;
    lf_health h[2];
    changes seen = { 0 };
    int open = 0;

    call_init(&cc, &b, t, "call-1", &seen);
    LF_CHECK_INT(b.health(b.ud, 2, h), 0);
    LF_CHECK_INT(h[0].route, LF_ROUTE_SEND);
    LF_CHECK_INT(b.report(b.ud, &(lf_circuit_report){ .target = 0, .kind = LF_E_SERVER }, &open), 0);
    LF_CHECK_INT(open, 0);
    b.report(b.ud, &(lf_circuit_report){ .target = 0, .kind = LF_E_OVERLOADED }, &open);
    LF_CHECK_INT(open, 1);
    LF_CHECK_INT(seen.n, 1);
    LF_CHECK_INT(seen.target[0], 0);
    LF_CHECK_INT(seen.chg[0].to, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(seen.kind[0], LF_E_OVERLOADED);
    b.finish(b.ud);

    /* past the cooldown: health says the probe is free, admit takes it, and a
     * call that never reports on it gives it back when it finishes */
    usleep(60 * 1000);
    call_init(&cc, &b, t, "call-2", &seen);
    b.health(b.ud, 2, h);
    LF_CHECK_INT(h[0].route, LF_ROUTE_PROBE);
    LF_CHECK_INT(h[0].failures, 2);
    LF_CHECK_INT(b.admit(b.ud, 0, &h[0]), 0);
    LF_CHECK_INT(h[0].route, LF_ROUTE_PROBE);
    LF_CHECK_INT(seen.n, 2);
    LF_CHECK_INT(seen.chg[1].reason, LF_REASON_COOLDOWN);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "call-3", lf_now_wall(), 5, &h[1], &seen.chg[3]),
                 LF_ROUTE_SKIP);
    b.finish(b.ud);
    LF_CHECK_INT(lf_circuits_admit(t, KEY, "call-3", lf_now_wall(), 5, &h[1], &seen.chg[3]),
                 LF_ROUTE_PROBE);
    lf_circuits_free(t);
}

int main(void)
{
    LF_RUN(test_unknown_targets_send_and_cost_nothing);
    LF_RUN(test_threshold_opens_and_a_success_resets);
    LF_RUN(test_one_holder_of_the_probe);
    LF_RUN(test_only_the_probe_reopens);
    LF_RUN(test_adopt_snapshot_and_clear);
    LF_RUN(test_fork_leaves_the_probe_behind);
    LF_RUN(test_a_call_reports_and_hears_of_changes);
    return lf_test_summary("circuits");
}
