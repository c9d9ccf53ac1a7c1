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
double lf_backoff_delay(const lf_backoff *b, int retry, double u);

/* Seconds the server asked to wait, or -1 when neither header says.
 * retry-after-ms (milliseconds) wins over retry-after, which is seconds
 * (possibly fractional) or an HTTP date (relative to now). Past dates are 0. */
double lf_retry_after_seconds(const char *retry_after, const char *retry_after_ms, time_t now);

#endif
