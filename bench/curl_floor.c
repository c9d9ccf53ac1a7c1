/* The floor: the cheapest a client can make our request with libcurl. One
 * easy handle (so one keep-alive connection per host), the same POST body and
 * headers the gem sends, the body read into a growable buffer, nothing else.
 *
 *   curl_floor URL[,URL2] N BODY_FILE
 *
 * Runs N/10 warm-up calls, then N calls, and prints the microseconds per call,
 * wall clock then this process's CPU time (user and system).
 * With two URLs it alternates between them (the hand-off bench's baseline:
 * the peer measures the gap between a response to URL and the next request
 * to URL2). Exits non-zero if any call fails or answers other than 2xx/503. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lf_banned.h"

typedef struct sink {
    char *ptr;
    size_t len, cap;
} sink;

static size_t floor_on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    sink *s = ud;
    size_t n = size * nmemb;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        char *np;
        while (cap < s->len + n + 1) cap *= 2;
        np = realloc(s->ptr, cap);
        if (!np) return 0;
        s->ptr = np;
        s->cap = cap;
    }
    memcpy(s->ptr + s->len, p, n);
    s->len += n;
    s->ptr[s->len] = '\0';
    return n;
}

static double floor_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *floor_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

static int floor_call(CURL *e, const char *url, sink *s)
{
    long status = 0;
    CURLcode rc;
    s->len = 0;
    curl_easy_setopt(e, CURLOPT_URL, url);
    rc = curl_easy_perform(e);
    if (rc != CURLE_OK) {
        fprintf(stderr, "curl_floor: %s: %s\n", url, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (!((status >= 200 && status < 300) || status == 503) || s->len == 0) {
        fprintf(stderr, "curl_floor: %s: HTTP %ld, %zu bytes\n", url, status, s->len);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char *urls[2] = { NULL, NULL }, *comma, *body;
    size_t body_len = 0;
    long n, i, warm;
    int n_urls = 1;
    sink s = { NULL, 0, 0 };
    struct curl_slist *h = NULL;
    CURL *e;
    double t0, t1, c0, c1;

    if (argc != 4) {
        fprintf(stderr, "usage: curl_floor URL[,URL2] N BODY_FILE\n");
        return 2;
    }
    urls[0] = argv[1];
    comma = strchr(argv[1], ',');
    if (comma) {
        *comma = '\0';
        urls[1] = comma + 1;
        n_urls = 2;
    }
    n = strtol(argv[2], NULL, 10);
    body = floor_read_file(argv[3], &body_len);
    if (n < 1 || !body) {
        fprintf(stderr, "curl_floor: bad N or unreadable body file\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    e = curl_easy_init();
    /* The gem's request headers, minus the key's value. */
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "Authorization: Bearer bench-key");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, floor_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "curl_floor");

    warm = n / 10 > 0 ? n / 10 : 1;
    for (i = 0; i < warm; i++)
        if (floor_call(e, urls[i % n_urls], &s) != 0) return 1;
    t0 = floor_clock(CLOCK_MONOTONIC);
    c0 = floor_clock(CLOCK_PROCESS_CPUTIME_ID);
    for (i = 0; i < n; i++)
        if (floor_call(e, urls[i % n_urls], &s) != 0) return 1;
    t1 = floor_clock(CLOCK_MONOTONIC);
    c1 = floor_clock(CLOCK_PROCESS_CPUTIME_ID);
    printf("%.3f %.3f\n", (t1 - t0) * 1e6 / (double)n, (c1 - c0) * 1e6 / (double)n);

    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    curl_global_cleanup();
    free(s.ptr);
    free(body);
    return 0;
}
