/* Tests of retry delays and Retry-After parsing. No clock is read: every
 * date is compared with a fixed "now". */
#include <math.h>
#include <stdlib.h>

#include <curl/curl.h>

#include "lf_backoff.h"
#include "lf_test.h"

#include "lf_banned.h"

#define CHECK_NEAR(actual, expected) do { \
    double a_ = (actual), e_ = (expected); \
    if (!(fabs(a_ - e_) <= 1e-9 * (fabs(e_) > 1 ? fabs(e_) : 1))) { \
        fprintf(stderr, "%s:%d: %s: expected %.12g, got %.12g\n", __FILE__, __LINE__, #actual, e_, a_); \
        lf_test_current_failed = 1; \
    } \
} while (0)

/* The largest double below 1: u is drawn from [0, 1). */
static const double U_TOP = 1.0 - 1.0 / 9007199254740992.0;

static void test_delay_grows_by_factor(void)
{
    lf_backoff b = { .interval = 0.1, .factor = 2, .max_interval = 30, .randomness = 0.5 };

    CHECK_NEAR(lf_backoff_delay(&b, 1, 0), 0.1);
    CHECK_NEAR(lf_backoff_delay(&b, 2, 0), 0.2);
    CHECK_NEAR(lf_backoff_delay(&b, 3, 0), 0.4);
    CHECK_NEAR(lf_backoff_delay(&b, 4, 0), 0.8);
    /* u near 1 adds almost randomness * base. */
    CHECK_NEAR(lf_backoff_delay(&b, 1, U_TOP), 0.1 * (1 + 0.5 * U_TOP));
    CHECK_NEAR(lf_backoff_delay(&b, 3, U_TOP), 0.4 * (1 + 0.5 * U_TOP));
    CHECK_NEAR(lf_backoff_delay(&b, 3, 0.5), 0.5);

    b.factor = 3;
    CHECK_NEAR(lf_backoff_delay(&b, 3, 0), 0.9);
    b.factor = 1;
    CHECK_NEAR(lf_backoff_delay(&b, 7, 0), 0.1);
}

static void test_delay_capped_by_max_interval(void)
{
    lf_backoff b = { .interval = 0.1, .factor = 2, .max_interval = 30, .randomness = 0.5 };

    CHECK_NEAR(lf_backoff_delay(&b, 9, 0), 25.6);
    CHECK_NEAR(lf_backoff_delay(&b, 9, U_TOP), 30);      /* 25.6 * 1.5 is over the cap */
    CHECK_NEAR(lf_backoff_delay(&b, 10, 0), 30);         /* 51.2: the base itself is capped */
    CHECK_NEAR(lf_backoff_delay(&b, 10, U_TOP), 30);     /* and randomness cannot lift it */
    CHECK_NEAR(lf_backoff_delay(&b, 100000, U_TOP), 30); /* pow overflows to inf */
    CHECK_NEAR(lf_backoff_delay(&b, 2147483647, 0), 30);
}

static void test_delay_clamps_bad_inputs(void)
{
    lf_backoff b = { .interval = 0.1, .factor = 2, .max_interval = 30, .randomness = 0.5 };
    lf_backoff z;

    CHECK_NEAR(lf_backoff_delay(&b, 0, 0), 0.1);   /* retry < 1 counts as the first */
    CHECK_NEAR(lf_backoff_delay(&b, -5, 0), 0.1);
    CHECK_NEAR(lf_backoff_delay(&b, 1, 7), 0.15);  /* u above 1 counts as 1 */
    CHECK_NEAR(lf_backoff_delay(&b, 1, -1), 0.1);
    CHECK_NEAR(lf_backoff_delay(&b, 1, NAN), 0.1);

    z = b;
    z.randomness = 0;
    CHECK_NEAR(lf_backoff_delay(&z, 2, U_TOP), 0.2);
    z.randomness = 4;
    CHECK_NEAR(lf_backoff_delay(&z, 2, 0.5), 0.3);  /* randomness above 1 counts as 1, not 0.6 */
    z = b;
    z.interval = 0;
    CHECK_NEAR(lf_backoff_delay(&z, 3, U_TOP), 0);
    z.interval = NAN;
    CHECK_NEAR(lf_backoff_delay(&z, 3, 0), 0);
    z = b;
    z.max_interval = 0;
    CHECK_NEAR(lf_backoff_delay(&z, 3, 0), 0);
    z = b;
    z.factor = NAN;
    CHECK_NEAR(lf_backoff_delay(&z, 3, 0), 0.1);
}

static void test_retry_after_seconds(void)
{
    CHECK_NEAR(lf_retry_after_seconds("5", NULL, 0), 5);
    CHECK_NEAR(lf_retry_after_seconds("0", NULL, 0), 0);
    CHECK_NEAR(lf_retry_after_seconds("1.5", NULL, 0), 1.5);
    CHECK_NEAR(lf_retry_after_seconds("0.25", NULL, 0), 0.25);
    CHECK_NEAR(lf_retry_after_seconds(" 7\t", NULL, 0), 7);
    CHECK_NEAR(lf_retry_after_seconds("120", "", 0), 120);
    CHECK_NEAR(lf_retry_after_seconds("99999999999", NULL, 0), LF_RETRY_AFTER_MAX);
}

static void test_retry_after_garbage_and_negative(void)
{
    static const char *const bad[] = {
        "", "abc", "-3", "-0.5", "+3", "1e3", "0x10", "inf", "nan", "1,5", "5 s", ".", "soon", "Mon",
    };
    size_t i;

    LF_CHECK_INT(lf_retry_after_seconds(NULL, NULL, 0), -1);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = lf_retry_after_seconds(bad[i], NULL, 1445412480);
        if (v != -1) fprintf(stderr, "  \"%s\" gave %g\n", bad[i], v);
        LF_CHECK(v == -1);
    }
    LF_CHECK(lf_retry_after_seconds(NULL, "-3", 0) == -1);
    LF_CHECK(lf_retry_after_seconds(NULL, "abc", 0) == -1);
}

static void test_retry_after_ms_wins(void)
{
    CHECK_NEAR(lf_retry_after_seconds(NULL, "1500", 0), 1.5);
    CHECK_NEAR(lf_retry_after_seconds("5", "250", 0), 0.25);
    CHECK_NEAR(lf_retry_after_seconds("5", "0", 0), 0);
    CHECK_NEAR(lf_retry_after_seconds("5", "12.5", 0), 0.0125);
    /* A garbled retry-after-ms is ignored, not trusted over retry-after. */
    CHECK_NEAR(lf_retry_after_seconds("5", "abc", 0), 5);
    CHECK_NEAR(lf_retry_after_seconds("5", "-3", 0), 5);
}

static void test_retry_after_http_date(void)
{
    /* Wed, 21 Oct 2015 07:28:00 GMT */
    const time_t now = 1445412480;

    LF_CHECK(curl_getdate("Wed, 21 Oct 2015 07:28:00 GMT", NULL) == now);
    CHECK_NEAR(lf_retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", NULL, now), 30);
    CHECK_NEAR(lf_retry_after_seconds("Wednesday, 21-Oct-15 07:29:00 GMT", NULL, now), 60); /* RFC 850 */
    CHECK_NEAR(lf_retry_after_seconds("Wed Oct 21 07:30:00 2015", NULL, now), 120);         /* asctime */
    CHECK_NEAR(lf_retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", NULL, now), 0);
    CHECK_NEAR(lf_retry_after_seconds("Tue, 20 Oct 2015 07:28:00 GMT", NULL, now), 0);  /* past */
    CHECK_NEAR(lf_retry_after_seconds("Thu, 01 Jan 1970 00:00:00 GMT", NULL, now), 0);
    CHECK_NEAR(lf_retry_after_seconds("Fri, 01 Jan 2100 00:00:00 GMT", NULL, now), LF_RETRY_AFTER_MAX);
    /* retry-after-ms still wins over a date. */
    CHECK_NEAR(lf_retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", "100", now), 0.1);
}

int main(void)
{
    LF_RUN(test_delay_grows_by_factor);
    LF_RUN(test_delay_capped_by_max_interval);
    LF_RUN(test_delay_clamps_bad_inputs);
    LF_RUN(test_retry_after_seconds);
    LF_RUN(test_retry_after_garbage_and_negative);
    LF_RUN(test_retry_after_ms_wins);
    LF_RUN(test_retry_after_http_date);
    return lf_test_summary("backoff");
}
