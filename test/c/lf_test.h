/* A tiny test harness for the C core: each test_*.c is a program whose main
 * calls LF_RUN(test_fn) for each test and returns lf_test_summary(). */
#ifndef LF_TEST_H
#define LF_TEST_H

#include <stdio.h>
#include <string.h>

static int lf_test_failures;
static int lf_test_count;
static int lf_test_current_failed;

#define LF_CHECK(cond) do { \
    if (!(cond)) { \
        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        lf_test_current_failed = 1; \
    } \
} while (0)

#define LF_CHECK_STR(actual, expected) do { \
    const char *lf_a_ = (actual), *lf_e_ = (expected); \
    if (!lf_a_ || strcmp(lf_a_, lf_e_) != 0) { \
        fprintf(stderr, "%s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, \
                lf_e_, lf_a_ ? lf_a_ : "(null)"); \
        lf_test_current_failed = 1; \
    } \
} while (0)

#define LF_CHECK_INT(actual, expected) do { \
    long long lf_a_ = (long long)(actual), lf_e_ = (long long)(expected); \
    if (lf_a_ != lf_e_) { \
        fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n", __FILE__, __LINE__, \
                #actual, lf_e_, lf_a_); \
        lf_test_current_failed = 1; \
    } \
} while (0)

#define LF_RUN(fn) do { \
    lf_test_current_failed = 0; \
    fn(); \
    lf_test_count++; \
    if (lf_test_current_failed) { lf_test_failures++; fprintf(stderr, "FAIL %s\n", #fn); } \
} while (0)

static int lf_test_summary(const char *suite)
{
    /* The plain closing line CI reads. */
    printf("%s: %d passed, %d failed\n", suite, lf_test_count - lf_test_failures, lf_test_failures);
    return lf_test_failures ? 1 : 0;
}

#endif
