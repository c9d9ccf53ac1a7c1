/* A host's headroom: what its own rate-limit headers say is left of its
 * window (requests, tokens) and when each refills, read from an answer or a
 * failure (x-ratelimit-remaining-requests / -tokens with x-ratelimit-reset-*
 * as durations, "6m0s": OpenAI, Azure, compatible servers;
 * anthropic-ratelimit-requests- / -tokens-remaining with their -reset as RFC
 * 3339 times; a Retry-After: no request until it is over), and the one rule
 * on it: how long a host cannot take a call that may be counted for `need`
 * tokens. A pool picks among the hosts that can (lf_tier.h). */
#ifndef LF_HEADROOM_H
#define LF_HEADROOM_H

#include <time.h>

typedef struct lf_headroom {
    long requests;        /* requests left in the host's window; -1: not said */
    long tokens;          /* tokens left; -1: not said */
    double requests_for;  /* seconds until the requests refill; -1: not said */
    double tokens_for;    /* seconds until the tokens refill; -1: not said */
} lf_headroom;

#define LF_HEADROOM_UNSAID ((lf_headroom){ -1, -1, -1, -1 })

/* Seconds a window whose reset the host does not say (Azure's headers give
 * only what is left) is taken to refill in: Azure counts its per-minute
 * limits over windows of 1 to 10 seconds. */
#define LF_HEADROOM_UNSAID_RESET 10.0

/* The raw header values of one response (NULL or "" when absent): what is
 * left, and when it refills (a duration, "1s", "6m0s", "20ms", or an RFC 3339
 * time, which is relative to `now`). */
typedef struct lf_rate_headers {
    const char *requests;
    const char *tokens;
    const char *requests_reset;
    const char *tokens_reset;
} lf_rate_headers;

/* What a response says of its host's headroom: its rate-limit headers, and
 * `retry_after` (seconds, < 0: none), which leaves no request until it is
 * over. A value that does not parse is taken as not said; a count said
 * without its reset refills in LF_HEADROOM_UNSAID_RESET. */
lf_headroom lf_headroom_read(const lf_rate_headers *h, double retry_after, time_t now);

/* Whether anything is said (a field that is not -1). */
int lf_headroom_said(const lf_headroom *h);

/* Seconds the host cannot take a call that may be counted for `need` tokens
 * (< 1: one): none left of its requests, or fewer tokens than that, until the
 * window refills (LF_HEADROOM_UNSAID_RESET when it did not say). 0: it can. */
double lf_headroom_wait(const lf_headroom *h, long need);

/* `h` as seen `elapsed` seconds later: each refill that much nearer, and a
 * window that refilled meanwhile not said any more. */
lf_headroom lf_headroom_aged(const lf_headroom *h, double elapsed);

/* A duration as OpenAI writes it ("1s", "6m0s", "1h2m3.5s", "20ms", or a
 * bare number of seconds) in seconds, or -1 when it is not one. */
double lf_headroom_duration(const char *s);

#endif
