/* Delay before a retry, and the server's Retry-After hints. */
#ifndef LF_BACKOFF_H
#define LF_BACKOFF_H

#include <time.h>

typedef struct lf_backoff {
    double interval;      /* seconds before the first retry */
    double factor;        /* multiplier per retry */
    double max_interval;  /* no delay is ever longer */
    double randomness;    /* 0..1: up to this fraction of the delay is added at random */
} lf_backoff;

/* Delay in seconds before retry number `retry` (1 = the first retry);
 * u is a uniform random number in [0, 1). base = min(interval * factor^(retry-1),
 * max_interval); delay = min(base * (1 + randomness * u), max_interval). */
/* Out-of-range inputs are clamped rather than trusted: retry < 1 counts as 1,
 * u and randomness are kept in [0, 1], a NaN or non-positive interval or
 * max_interval gives 0, a NaN or non-positive factor counts as 1. */
double lf_backoff_delay(const lf_backoff *b, int retry, double u);

/* Seconds the server asked to wait, or -1 when neither header says.
 * retry-after-ms (milliseconds) wins over retry-after, which is seconds
 * (possibly fractional) or an HTTP date (relative to now). Past dates are 0.
 * NULL or empty means the header is absent. A value that is not a
 * non-negative number (or, for retry-after, a date) is ignored as if absent,
 * so a garbled retry-after-ms falls back to retry-after. Results are capped at
 * LF_RETRY_AFTER_MAX so that callers may convert them to integer milliseconds. */
#define LF_RETRY_AFTER_MAX (365.0 * 24 * 3600)
double lf_retry_after_seconds(const char *retry_after, const char *retry_after_ms, time_t now);

#endif
