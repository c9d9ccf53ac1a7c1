/* Tests of quota arithmetic and of the model picker's choice. */
#include <math.h>

#include "lf_quota.h"
#include "lf_test.h"

#include "lf_banned.h"

static void test_zero_or_negative_limit_is_unlimited(void)
{
    lf_quota zero = { .limit = 0, .used = 1e9 };
    lf_quota neg = { .limit = -5, .used = 10 };
    lf_quota nan_limit = { .limit = NAN, .used = 10 };

    LF_CHECK(lf_quota_unlimited(&zero));
    LF_CHECK(!lf_quota_exceeded(&zero)); /* a quota of 0 never stops a call */
    LF_CHECK(isinf(lf_quota_remaining(&zero)) && lf_quota_remaining(&zero) > 0);
    LF_CHECK(lf_quota_percent_used(&zero) == 0);
    LF_CHECK(lf_quota_unlimited(&neg));
    LF_CHECK(!lf_quota_exceeded(&neg));
    LF_CHECK(lf_quota_unlimited(&nan_limit));
    LF_CHECK(!lf_quota_exceeded(&nan_limit));
}

static void test_limited_quota(void)
{
    lf_quota q = { .limit = 1000, .used = 250 };

    LF_CHECK(!lf_quota_unlimited(&q));
    LF_CHECK(!lf_quota_exceeded(&q));
    LF_CHECK(lf_quota_remaining(&q) == 750);
    LF_CHECK(lf_quota_percent_used(&q) == 25);

    q.used = 999.5;
    LF_CHECK(!lf_quota_exceeded(&q));
    LF_CHECK(lf_quota_remaining(&q) == 0.5);

    q.used = 1000; /* used == limit is exceeded: nothing is left to spend */
    LF_CHECK(lf_quota_exceeded(&q));
    LF_CHECK(lf_quota_remaining(&q) == 0);
    LF_CHECK(lf_quota_percent_used(&q) == 100);

    q.used = 1500;
    LF_CHECK(lf_quota_exceeded(&q));
    LF_CHECK(lf_quota_remaining(&q) == 0); /* never negative */
    LF_CHECK(lf_quota_percent_used(&q) == 150);

    q.used = 0;
    LF_CHECK(!lf_quota_exceeded(&q));
    LF_CHECK(lf_quota_percent_used(&q) == 0);

    q.limit = 0.5;
    q.used = 0.5;
    LF_CHECK(lf_quota_exceeded(&q)); /* fractional budgets (dollars) work the same */
}

static void test_pick(void)
{
    lf_quota under = { .limit = 10, .used = 3 };
    lf_quota over = { .limit = 10, .used = 10 };
    lf_quota unlimited = { .limit = 0, .used = 100 };
    int backup, enforce;

    for (backup = 0; backup <= 1; backup++) {
        for (enforce = 0; enforce <= 1; enforce++) {
            LF_CHECK_INT(lf_pick(&under, backup, enforce), LF_PICK_PRIMARY);
            LF_CHECK_INT(lf_pick(&unlimited, backup, enforce), LF_PICK_PRIMARY);
            LF_CHECK_INT(lf_pick(NULL, backup, enforce), LF_PICK_PRIMARY);
        }
    }
    LF_CHECK_INT(lf_pick(&over, 1, 0), LF_PICK_BACKUP);
    LF_CHECK_INT(lf_pick(&over, 1, 1), LF_PICK_BACKUP);
    LF_CHECK_INT(lf_pick(&over, 0, 0), LF_PICK_PRIMARY); /* a budget, not a switch */
    LF_CHECK_INT(lf_pick(&over, 0, 1), LF_PICK_REFUSE);
}

int main(void)
{
    LF_RUN(test_zero_or_negative_limit_is_unlimited);
    LF_RUN(test_limited_quota);
    LF_RUN(test_pick);
    return lf_test_summary("quota");
}
