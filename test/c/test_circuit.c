/* Tests of the circuit breaker's rules: what counts, each transition, the
 * half-open probe and the Retry-After cooldown. */
#include "lf_circuit.h"
#include "lf_test.h"

#include "lf_banned.h"

static void test_what_counts(void)
{
    int k;
    LF_CHECK(lf_circuit_counts(LF_E_RATE_LIMIT));
    LF_CHECK(lf_circuit_counts(LF_E_SERVER));
    LF_CHECK(lf_circuit_counts(LF_E_SERVICE_UNAVAILABLE));
    LF_CHECK(lf_circuit_counts(LF_E_OVERLOADED));
    LF_CHECK(lf_circuit_counts(LF_E_TIMEOUT));
    LF_CHECK(lf_circuit_counts(LF_E_CONNECTION));
    LF_CHECK(lf_circuit_counts(LF_E_STREAM_INTERRUPTED));
    LF_CHECK(lf_circuit_counts(LF_E_INVALID_RESPONSE));
    LF_CHECK(lf_circuit_counts(LF_E_PROVIDER_QUOTA)); /* out of credit: dead until someone pays */
    /* deterministic 4xx, configuration drift, the host's own stop, success */
    LF_CHECK(!lf_circuit_counts(LF_OK));
    LF_CHECK(!lf_circuit_counts(LF_E_BAD_REQUEST));
    LF_CHECK(!lf_circuit_counts(LF_E_CONTEXT_LENGTH));
    LF_CHECK(!lf_circuit_counts(LF_E_CONTENT_POLICY));
    LF_CHECK(!lf_circuit_counts(LF_E_UNAUTHORIZED));
    LF_CHECK(!lf_circuit_counts(LF_E_FORBIDDEN));
    LF_CHECK(!lf_circuit_counts(LF_E_NOT_FOUND));
    LF_CHECK(!lf_circuit_counts(LF_E_CONNECTION_REFUSED));
    LF_CHECK(!lf_circuit_counts(LF_E_ABORTED));
    LF_CHECK(!lf_circuit_counts(LF_E_OTHER));
    LF_CHECK(!lf_circuit_counts(LF_E_RETRYABLE)); /* 408/409: a request's own conflict or wait */
    /* every counted kind is one the attempt loop may fail over on */
    for (k = LF_OK + 1; k < LF_KIND_COUNT; k++) {
        if (lf_circuit_counts((lf_kind)k)) LF_CHECK(k <= LF_E_PROVIDER_QUOTA);
    }
}

static void test_threshold_opens_and_success_resets(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;
    int i;

    for (i = 0; i < 4; i++) LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 100 + i, 0, 0, 0, &chg), 0);
    LF_CHECK_INT(c.failures, 4);
    LF_CHECK_INT(c.state, LF_CIRCUIT_CLOSED);
    /* a success in between starts the count again */
    LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 104, 1, 0, 0, &chg), 0);
    LF_CHECK_INT(c.failures, 0);
    for (i = 0; i < 4; i++) lf_circuit_record(&c, 5, 60, 60, 105, 0, 0, 0, &chg);
    LF_CHECK_INT(c.state, LF_CIRCUIT_CLOSED);
    LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 110, 0, 0, 0, &chg), 1);
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(chg.from, LF_CIRCUIT_CLOSED);
    LF_CHECK_INT(chg.to, LF_CIRCUIT_OPEN);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "threshold");
    LF_CHECK(c.opened_at == 110);
    LF_CHECK(c.until == 170);
}

static void test_open_skips_until_cooldown_then_one_probe(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 1, 0.5, 0.5, 10, 0, 0, 0, &chg);
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(lf_circuit_admit(&c, 10.1, 0.5, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(chg.reason, LF_REASON_NONE);
    LF_CHECK_INT(lf_circuit_admit(&c, 10.49, 0.5, &chg), LF_ROUTE_SKIP);
    /* the cooldown elapsed: the first caller probes, everyone else stays away */
    LF_CHECK_INT(lf_circuit_admit(&c, 10.5, 0.5, &chg), LF_ROUTE_PROBE);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "cooldown_elapsed");
    LF_CHECK_INT(chg.to, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK_INT(lf_circuit_admit(&c, 10.6, 0.5, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(chg.reason, LF_REASON_NONE);
    LF_CHECK_INT(lf_circuit_admit(&c, 10.9, 0.5, &chg), LF_ROUTE_SKIP);
    /* a probe that never reported frees the lock after probe_ttl */
    LF_CHECK_INT(lf_circuit_admit(&c, 11.0, 0.5, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(c.state, LF_CIRCUIT_HALF_OPEN);
}

static void test_probe_success_closes(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 2, 1, 1, 0, 0, 0, 0, &chg);
    lf_circuit_record(&c, 2, 1, 1, 0, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_admit(&c, 1, 1, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_record(&c, 2, 1, 1, 1.2, 1, 0, 1, &chg), 1);
    LF_CHECK_INT(chg.from, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK_INT(chg.to, LF_CIRCUIT_CLOSED);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "success");
    LF_CHECK_INT(c.failures, 0);
    LF_CHECK(c.opened_at == 0 && c.until == 0 && c.probe_until == 0);
    LF_CHECK_INT(lf_circuit_admit(&c, 1.3, 1, &chg), LF_ROUTE_SEND);
}

static void test_probe_failure_reopens_for_another_cooldown(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 1, 2, 2, 100, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_admit(&c, 102, 2, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 103, 0, 0, 1, &chg), 1);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "probe_failed");
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    LF_CHECK(c.until == 105);
    LF_CHECK(c.opened_at == 100); /* the incident began at the first opening */
    LF_CHECK_INT(lf_circuit_admit(&c, 104, 2, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuit_admit(&c, 105, 2, &chg), LF_ROUTE_PROBE);
}

/* The recovery schedule on a fake clock: the first probe 5 s after opening,
 * then waits of a sixth of the incident's age, up to the cooldown; a target
 * that recovers is probed at most a sixth of its outage later; a success
 * starts the schedule again from the first wait. */
static void test_probe_schedule_grows_with_the_outage(void)
{
    /* when each probe is due, the probe failing at once (seconds after opening) */
    static const double due[] = { 5, 10, 15, 20, 25, 30, 35, 35 + 35.0 / 6 };
    lf_circuit c = { 0 };
    lf_circuit_change chg;
    double now = 1000, wait, last = 0;
    size_t i;
    int probes = 0;

    for (i = 0; i < 5; i++) lf_circuit_record(&c, 5, 5, 60, now, 0, 0, 0, &chg);
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    for (i = 0; i < sizeof due / sizeof due[0]; i++) {
        LF_CHECK(c.until == 1000 + due[i]);
        LF_CHECK_INT(lf_circuit_admit(&c, c.until - 0.01, 1, &chg), LF_ROUTE_SKIP);
        now = c.until;
        LF_CHECK_INT(lf_circuit_admit(&c, now, 1, &chg), LF_ROUTE_PROBE);
        LF_CHECK_INT(lf_circuit_record(&c, 5, 5, 60, now, 0, 0, 1, &chg), 1);
        LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "probe_failed");
        LF_CHECK_INT(c.probes_failed, ++probes);
    }
    /* a ten-minute outage: every wait at most a sixth of the age and at most the
     * cooldown, growing, and 26 probes in all */
    while (c.until <= 1600) {
        now = c.until;
        lf_circuit_admit(&c, now, 1, &chg);
        lf_circuit_record(&c, 5, 5, 60, now, 0, 0, 1, &chg);
        probes++;
        wait = c.until - now;
        LF_CHECK(wait >= last && wait <= 60 && wait <= (now - 1000) / 6 + 1e-9);
        last = wait;
    }
    LF_CHECK_INT(probes, 26);
    LF_CHECK(last == 60);
    /* a Retry-After longer than the step still wins */
    now = c.until;
    LF_CHECK_INT(lf_circuit_admit(&c, now, 1, &chg), LF_ROUTE_PROBE);
    lf_circuit_record(&c, 5, 5, 60, now, 0, 90, 1, &chg);
    LF_CHECK(c.until == now + 90);
    /* recovered: closed, and the next incident starts from the first wait again */
    LF_CHECK_INT(lf_circuit_record(&c, 5, 5, 60, now + 100, 1, 0, 0, &chg), 1);
    LF_CHECK_INT(c.probes_failed, 0);
    for (i = 0; i < 5; i++) lf_circuit_record(&c, 5, 5, 60, now + 200, 0, 0, 0, &chg);
    LF_CHECK(c.until == now + 205);
    /* the formula alone; a first wait past the cooldown is the old fixed schedule */
    LF_CHECK(lf_circuit_interval(5, 60, 0) == 5);
    LF_CHECK(lf_circuit_interval(5, 60, 29) == 5);
    LF_CHECK(lf_circuit_interval(5, 60, 60) == 10);
    LF_CHECK(lf_circuit_interval(5, 60, 361) == 60);
    LF_CHECK(lf_circuit_interval(90, 60, 0) == 60);
    LF_CHECK(lf_circuit_interval(90, 60, 600) == 60);
}

static void test_retry_after_cooldown(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    /* within retry_max_interval: the policy sleeps, nothing shared */
    LF_CHECK(lf_circuit_hold(LF_E_RATE_LIMIT, 20, 30) == 0);
    LF_CHECK(lf_circuit_hold(LF_E_RATE_LIMIT, 30, 30) == 0);
    LF_CHECK(lf_circuit_hold(LF_E_RATE_LIMIT, -1, 30) == 0);
    LF_CHECK(lf_circuit_hold(LF_E_SERVICE_UNAVAILABLE, 120, 30) == 120);
    LF_CHECK(lf_circuit_hold(LF_E_BAD_REQUEST, 120, 30) == 0);

    /* one long Retry-After opens the circuit at once, until then */
    LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 1000, 0, 120, 0, &chg), 1);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "retry_after");
    LF_CHECK(c.until == 1120);
    LF_CHECK_INT(lf_circuit_admit(&c, 1119, 60, &chg), LF_ROUTE_SKIP);
    /* a later, longer one while open moves the end */
    LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 1010, 0, 200, 0, &chg), 0);
    LF_CHECK(c.until == 1210);
    LF_CHECK_INT(lf_circuit_record(&c, 5, 60, 60, 1011, 0, 0, 0, &chg), 0);
    LF_CHECK(c.until == 1210);
    LF_CHECK_INT(lf_circuit_admit(&c, 1210, 60, &chg), LF_ROUTE_PROBE);

    /* threshold reached with a Retry-After: the longer of the two */
    c = (lf_circuit){ 0 };
    lf_circuit_record(&c, 1, 60, 60, 0, 0, 10, 0, &chg);
    LF_CHECK(c.until == 60);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "threshold");
}

static void test_success_while_open_closes(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 1, 60, 60, 0, 0, 0, 0, &chg);
    /* an attempt sent before it opened (or to a primary tried because every
     * target was open) answered: the target is healthy again */
    LF_CHECK_INT(lf_circuit_record(&c, 1, 60, 60, 1, 1, 0, 0, &chg), 1);
    LF_CHECK_INT(chg.from, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(c.state, LF_CIRCUIT_CLOSED);
}

/* While half-open, a failure that is not the probe's own (a call sent before
 * the circuit opened, ending late) is counted but leaves the probe out: no
 * second probe while the first is in flight. The probe's own failure, while
 * its lock lasts, reopens; once its lock expired it is anyone's late failure. */
static void test_other_failure_leaves_the_probe(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 1, 2, 2, 100, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_admit(&c, 102, 5, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 103, 0, 0, 0, &chg), 0);
    LF_CHECK_INT(chg.reason, LF_REASON_NONE);
    LF_CHECK_INT(c.state, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK_INT(c.failures, 2);
    LF_CHECK_INT(lf_circuit_admit(&c, 106, 5, &chg), LF_ROUTE_SKIP); /* the probe is still out */
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 106.5, 0, 0, 1, &chg), 1);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "probe_failed");
    LF_CHECK(c.until == 108.5);

    /* a probe that outlived its lock reports late: counted, nothing more */
    LF_CHECK_INT(lf_circuit_admit(&c, 109, 1, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 110.5, 0, 0, 1, &chg), 0);
    LF_CHECK_INT(c.state, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK_INT(lf_circuit_admit(&c, 110.5, 1, &chg), LF_ROUTE_PROBE);

    /* another call's success closes it, as it would an open circuit */
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 111, 1, 0, 0, &chg), 1);
    LF_CHECK_INT(chg.from, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "success");
    LF_CHECK_INT(c.state, LF_CIRCUIT_CLOSED);
    LF_CHECK(c.probe_until == 0);
}

/* A failure that is not the probe's, asking for a long Retry-After while
 * half-open, leaves the probe out and holds the next one back until then:
 * after a lost probe, and after the probe's own failure. */
static void test_retry_after_kept_while_half_open(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_record(&c, 1, 2, 2, 100, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_admit(&c, 102, 1, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 102.5, 0, 30, 0, &chg), 0);
    LF_CHECK_INT(c.state, LF_CIRCUIT_HALF_OPEN);
    LF_CHECK(c.until == 132.5);
    /* the probe's lock expired (its process died): no new probe before the Retry-After is over */
    LF_CHECK_INT(lf_circuit_peek(&c, 110), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuit_admit(&c, 110, 1, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuit_admit(&c, 132.5, 1, &chg), LF_ROUTE_PROBE);
    /* the probe's own failure reopens for the longer of its cooldown and the kept Retry-After */
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 133, 0, 40, 0, &chg), 0); /* another's, while the probe is out */
    LF_CHECK(c.until == 173);
    LF_CHECK_INT(lf_circuit_record(&c, 1, 2, 2, 133.2, 0, 0, 1, &chg), 1);
    LF_CHECK_STR(lf_circuit_reason_name(chg.reason), "probe_failed");
    LF_CHECK(c.until == 173);
    LF_CHECK_INT(lf_circuit_admit(&c, 172, 1, &chg), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuit_admit(&c, 173, 1, &chg), LF_ROUTE_PROBE);
}

/* peek answers what admit would, and changes nothing. */
static void test_peek(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    LF_CHECK_INT(lf_circuit_peek(&c, 0), LF_ROUTE_SEND);
    lf_circuit_record(&c, 1, 2, 2, 100, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_peek(&c, 101), LF_ROUTE_SKIP);
    LF_CHECK_INT(lf_circuit_peek(&c, 102), LF_ROUTE_PROBE); /* free to take */
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    LF_CHECK(c.probe_until == 0);
    LF_CHECK_INT(lf_circuit_admit(&c, 102, 5, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_peek(&c, 103), LF_ROUTE_SKIP); /* taken */
    LF_CHECK_INT(lf_circuit_peek(&c, 107), LF_ROUTE_PROBE); /* its lock expired */
    LF_CHECK(c.probe_until == 107);
}

static void test_names(void)
{
    LF_CHECK_STR(lf_circuit_state_name(LF_CIRCUIT_CLOSED), "closed");
    LF_CHECK_STR(lf_circuit_state_name(LF_CIRCUIT_OPEN), "open");
    LF_CHECK_STR(lf_circuit_state_name(LF_CIRCUIT_HALF_OPEN), "half_open");
    LF_CHECK(lf_circuit_reason_name(LF_REASON_NONE) == NULL);
    LF_CHECK_STR(lf_circuit_reason_name(LF_REASON_PROBE_FAILED), "probe_failed");
}

/* The probe's holder asks again: it keeps the probe for another ttl, and
 * nobody else gets one meanwhile; once the circuit moved on, nothing to renew. */
static void test_renew_probe(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    LF_CHECK_INT(lf_circuit_renew_probe(&c, 0, 5), 0); /* closed */
    lf_circuit_record(&c, 1, 1, 1, 0, 0, 0, 0, &chg);
    LF_CHECK_INT(lf_circuit_renew_probe(&c, 0.5, 5), 0); /* open */
    LF_CHECK_INT(lf_circuit_admit(&c, 1, 2, &chg), LF_ROUTE_PROBE);
    LF_CHECK_INT(lf_circuit_renew_probe(&c, 2.5, 2), 1);
    LF_CHECK_INT(lf_circuit_admit(&c, 3.5, 2, &chg), LF_ROUTE_SKIP); /* 3 without the renewal */
    LF_CHECK_INT(lf_circuit_admit(&c, 4.5, 2, &chg), LF_ROUTE_PROBE);
    lf_circuit_record(&c, 1, 1, 1, 4.6, 1, 0, 1, &chg);
    LF_CHECK_INT(lf_circuit_renew_probe(&c, 4.7, 2), 0);
}

/* A shared store's view taken on: open for a while, then closed again. */
static void test_adopt(void)
{
    lf_circuit c = { 0 };
    lf_circuit_change chg;

    lf_circuit_adopt(&c, 10, 7, 3);
    LF_CHECK_INT(c.state, LF_CIRCUIT_OPEN);
    LF_CHECK_INT(c.failures, 7);
    LF_CHECK(c.opened_at == 10 && c.until == 13);
    LF_CHECK_INT(lf_circuit_admit(&c, 12.9, 1, &chg), LF_ROUTE_SKIP);
    lf_circuit_adopt(&c, 11, 8, 4); /* still open: the incident began at 10 */
    LF_CHECK(c.opened_at == 10 && c.until == 15);
    LF_CHECK_INT(lf_circuit_admit(&c, 15, 1, &chg), LF_ROUTE_PROBE);
    lf_circuit_adopt(&c, 16, 0, 0);
    LF_CHECK_INT(c.state, LF_CIRCUIT_CLOSED);
    LF_CHECK(c.opened_at == 0 && c.until == 0 && c.probe_until == 0);
    LF_CHECK_INT(lf_circuit_admit(&c, 16, 1, &chg), LF_ROUTE_SEND);
}

int main(void)
{
    LF_RUN(test_what_counts);
    LF_RUN(test_threshold_opens_and_success_resets);
    LF_RUN(test_open_skips_until_cooldown_then_one_probe);
    LF_RUN(test_probe_success_closes);
    LF_RUN(test_probe_failure_reopens_for_another_cooldown);
    LF_RUN(test_probe_schedule_grows_with_the_outage);
    LF_RUN(test_retry_after_cooldown);
    LF_RUN(test_success_while_open_closes);
    LF_RUN(test_other_failure_leaves_the_probe);
    LF_RUN(test_retry_after_kept_while_half_open);
    LF_RUN(test_peek);
    LF_RUN(test_names);
    LF_RUN(test_renew_probe);
    LF_RUN(test_adopt);
    return lf_test_summary("circuit");
}
