/* A host's headroom (lf_headroom.h): its rate-limit headers read, and how
 * long it cannot take a call. */
#define _GNU_SOURCE /* timegm */
#include "lf_headroom.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_banned.h"

/* Longest refill taken from a header: a day (a value past it is garbled). */
#define LF_HEADROOM_MAX_RESET 86400.0

static int lf_said(const char *s)
{
    return s && *s;
}

/* A count of what is left: a whole number, 0 or more; -1 when not one. */
static long lf_count(const char *s)
{
    char *end;
    long n;

    if (!lf_said(s) || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    n = strtol(s, &end, 10);
    while (*end == ' ') end++;
    return errno || *end ? -1 : n;
}

double lf_headroom_duration(const char *s)
{
    double total = 0;
    int parts = 0;

    if (!lf_said(s)) return -1;
    while (*s) {
        char *end;
        double v;

        if (!isdigit((unsigned char)*s) && *s != '.') return -1;
        v = strtod(s, &end);
        if (end == s || !isfinite(v) || v < 0) return -1;
        s = end;
        if (s[0] == 'm' && s[1] == 's') {
            total += v / 1000.0;
            s += 2;
        } else if (*s == 'h' || *s == 'm' || *s == 's') {
            total += v * (*s == 'h' ? 3600 : *s == 'm' ? 60 : 1);
            s++;
        } else if (!*s && !parts) {
            total = v; /* a bare number: seconds */
        } else {
            return -1;
        }
        parts++;
    }
    return total;
}

/* An RFC 3339 time ("2025-05-01T12:00:30Z", fractions and offsets allowed)
 * as seconds after now (0 when past), or -1 when it is not one. */
static double lf_time_after(const char *s, time_t now)
{
    struct tm tm;
    int y, mo, d, h, mi, n = 0, sign = 0, oh = 0, om = 0;
    double sec;
    const char *p;
    time_t t;

    if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || !n) return -1;
    /* The fields of a time, or not one (a second past 60 would not fit tm_sec). */
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        !(sec >= 0 && sec < 61))
        return -1;
    p = s + n;
    if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2) return -1;
    } else if (*p != 'Z' && *p != 'z') {
        return -1;
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = (int)sec;
    t = timegm(&tm);
    if (t == (time_t)-1) return -1;
    sec = (double)t + (sec - floor(sec)) - sign * (oh * 3600.0 + om * 60.0) - (double)now;
    return sec > 0 ? sec : 0;
}

/* When a window refills: a duration, or a time; capped, -1 when neither. */
static double lf_reset(const char *s, time_t now)
{
    double v;

    if (!lf_said(s)) return -1;
    v = strchr(s, '-') ? lf_time_after(s, now) : lf_headroom_duration(s);
    return v > LF_HEADROOM_MAX_RESET ? LF_HEADROOM_MAX_RESET : v;
}

lf_headroom lf_headroom_read(const lf_rate_headers *h, double retry_after, time_t now)
{
    lf_headroom r = LF_HEADROOM_UNSAID;

    r.requests = lf_count(h->requests);
    r.tokens = lf_count(h->tokens);
    r.requests_for = lf_reset(h->requests_reset, now);
    r.tokens_for = lf_reset(h->tokens_reset, now);
    /* A count without its reset (Azure's) refills in the time taken for one. */
    if (r.requests >= 0 && r.requests_for < 0) r.requests_for = LF_HEADROOM_UNSAID_RESET;
    if (r.tokens >= 0 && r.tokens_for < 0) r.tokens_for = LF_HEADROOM_UNSAID_RESET;
    /* "Not before then" is none left until then, whatever the counts said. */
    if (retry_after >= 0) {
        r.requests = 0;
        if (r.requests_for < retry_after) r.requests_for = retry_after;
    }
    return r;
}

int lf_headroom_said(const lf_headroom *h)
{
    return h->requests >= 0 || h->tokens >= 0 || h->requests_for >= 0 || h->tokens_for >= 0;
}

double lf_headroom_wait(const lf_headroom *h, long need)
{
    double wait = 0;

    if (need < 1) need = 1;
    if (h->requests == 0) wait = h->requests_for >= 0 ? h->requests_for : LF_HEADROOM_UNSAID_RESET;
    if (h->tokens >= 0 && h->tokens < need) {
        double t = h->tokens_for >= 0 ? h->tokens_for : LF_HEADROOM_UNSAID_RESET;
        if (t > wait) wait = t;
    }
    return wait;
}

/* One window `elapsed` seconds on: past its refill, nothing of it is known. */
static void lf_age(long *left, double *refill, double elapsed)
{
    if (*refill < 0) return;
    *refill -= elapsed;
    if (*refill <= 0) {
        *left = -1;
        *refill = -1;
    }
}

lf_headroom lf_headroom_aged(const lf_headroom *h, double elapsed)
{
    lf_headroom r = *h;

    if (elapsed <= 0) return r;
    lf_age(&r.requests, &r.requests_for, elapsed);
    lf_age(&r.tokens, &r.tokens_for, elapsed);
    return r;
}
