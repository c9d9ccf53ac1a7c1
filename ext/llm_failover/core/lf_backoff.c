/* Retry delays and the server's Retry-After hints; see lf_backoff.h. */
#include "lf_backoff.h"

#include <math.h>
#include <stddef.h>

#include <curl/curl.h>

#include "lf_banned.h"

static double lf_backoff_clamp01(double x)
{
    if (!(x > 0)) return 0; /* also NaN */
    return x > 1 ? 1 : x;
}

double lf_backoff_delay(const lf_backoff *b, int retry, double u)
{
    double factor = b->factor, base, delay;

    if (!(b->interval > 0) || !(b->max_interval > 0)) return 0;
    if (retry < 1) retry = 1;
    if (!(factor > 0)) factor = 1;
    /* pow may overflow to +inf; fmin then yields max_interval. */
    base = fmin(b->interval * pow(factor, (double)(retry - 1)), b->max_interval);
    delay = base * (1.0 + lf_backoff_clamp01(b->randomness) * lf_backoff_clamp01(u));
    return fmin(delay, b->max_interval);
}

static int lf_backoff_is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses the whole of s (surrounding spaces and tabs allowed) as DIGITS with
 * an optional fraction. strtod is not used: it accepts "inf", "0x1p3" and
 * exponents, and it reads a comma as the decimal point in some locales.
 * Returns -1 unless s is such a number. */
static double lf_backoff_number(const char *s)
{
    double value = 0, scale = 1;
    int digits = 0;

    while (lf_backoff_is_ows(*s)) s++;
    for (; *s >= '0' && *s <= '9'; s++, digits++) value = value * 10 + (*s - '0');
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
            scale /= 10;
            value += (*s - '0') * scale;
        }
    }
    while (lf_backoff_is_ows(*s)) s++;
    if (*s != '\0' || digits == 0) return -1;
    return value; /* +inf for hundreds of digits: the caller caps it */
}

static double lf_backoff_cap(double seconds)
{
    return seconds > LF_RETRY_AFTER_MAX ? LF_RETRY_AFTER_MAX : seconds;
}

double lf_retry_after_seconds(const char *retry_after, const char *retry_after_ms, time_t now)
{
    double v;

    if (retry_after_ms && *retry_after_ms) {
        v = lf_backoff_number(retry_after_ms);
        if (v >= 0) return lf_backoff_cap(v / 1000.0);
    }
    if (!retry_after || !*retry_after) return -1;
    v = lf_backoff_number(retry_after);
    if (v >= 0) return lf_backoff_cap(v);
    {
        /* HTTP date. curl_getdate answers -1 for what it cannot read (and for
         * 1969-12-31T23:59:59Z, which no server sends as a retry time). */
        time_t at = curl_getdate(retry_after, NULL);
        if (at == (time_t)-1) return -1;
        if (at <= now) return 0;
        return lf_backoff_cap(difftime(at, now));
    }
}
