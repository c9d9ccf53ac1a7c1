#include "lf_transport.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/timerfd.h>
#endif

#include "lf_utf8.h"

#include "lf_banned.h"

/* Idle connections kept per pool; more are closed on check-in. */
#define LF_POOL_MAX_IDLE 16
/* Idle keep-alive connections a hub's cache keeps. */
#define LF_HUB_MAX_CONNECTS 32L
/* The receive buffer of a readiness-driven transfer. libcurl's 16 kB default
 * stays for poll-driven ones (one thread per call: fewer reads of a large
 * answer); a thread waiting for a thousand streams of events of a few hundred
 * bytes keeps 12 kB per call less. */
#define LF_EVENTED_BUFFER_SIZE 4096L

/* One thread's readiness-driven transfers (see lf_conn_evented). */
typedef struct lf_hub {
    CURLM *multi;
    pid_t pid;
    double timer_at;       /* monotonic seconds when libcurl wants to run, -1 for none */
    lf_conn *current;      /* the slot whose libcurl call is under way */
    lf_conn *keeper;       /* the slot whose next wait ends by timer_at */
    lf_conn *active;       /* the slots with a transfer in multi */
} lf_hub;

struct lf_pool {
    pthread_mutex_t lock;
    lf_conn *idle;
    size_t n_idle;
    pid_t pid;
    lf_conn *abandoned;    /* in a forked child: the parent's handles, see below */
};

static pthread_once_t lf_global_once = PTHREAD_ONCE_INIT;
static int lf_global_rc = -1;

/* The process id, known without a system call per use (glibc does not cache
 * getpid): 0 until first asked, and again in a forked child, whose
 * pthread_atfork handler forgets the parent's. Every fork made through the C
 * library runs the handler (Ruby's Process.fork does). A pid_t is written
 * whole, and every thread that writes it writes the same value. */
static volatile pid_t lf_pid;
static pthread_once_t lf_pid_once = PTHREAD_ONCE_INIT;
static int lf_pid_cacheable;

static void lf_forget_pid(void)
{
    lf_pid = 0;
}

static void lf_pid_init_once(void)
{
    lf_pid_cacheable = pthread_atfork(NULL, NULL, lf_forget_pid) == 0;
}

pid_t lf_current_pid(void)
{
    pid_t pid = lf_pid;
    if (pid != 0) return pid;
    pthread_once(&lf_pid_once, lf_pid_init_once);
    pid = getpid();
    if (lf_pid_cacheable) lf_pid = pid; /* without the handler, ask every time */
    return pid;
}

static void lf_global_init_once(void)
{
    lf_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int lf_transport_global_init(void)
{
    pthread_once(&lf_global_once, lf_global_init_once);
    return lf_global_rc;
}

static pthread_once_t lf_encodings_once = PTHREAD_ONCE_INIT;
static char lf_accept_encoding[64];

/* The codings libcurl decodes, in the order and spelling of the
 * Accept-Encoding header it writes for CURLOPT_ACCEPT_ENCODING "". */
static void lf_encodings_init(void)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    lf_buf b;

    lf_buf_init(&b);
    if (v && (v->features & CURL_VERSION_LIBZ)) lf_buf_append_str(&b, "deflate, gzip");
#ifdef CURL_VERSION_BROTLI
    if (v && (v->features & CURL_VERSION_BROTLI)) lf_buf_append_str(&b, b.len ? ", br" : "br");
#endif
#ifdef CURL_VERSION_ZSTD
    if (v && (v->features & CURL_VERSION_ZSTD)) lf_buf_append_str(&b, b.len ? ", zstd" : "zstd");
#endif
    if (b.len && b.len + sizeof "Accept-Encoding: " <= sizeof lf_accept_encoding) {
        memcpy(lf_accept_encoding, "Accept-Encoding: ", sizeof "Accept-Encoding: " - 1);
        memcpy(lf_accept_encoding + sizeof "Accept-Encoding: " - 1, b.ptr, b.len + 1);
    }
    lf_buf_free(&b);
}

size_t lf_transport_default_headers(const char *lines[2])
{
    size_t n = 0;

    pthread_once(&lf_encodings_once, lf_encodings_init);
    lines[n++] = "User-Agent: llm_failover";
    /* Without a coding to offer, libcurl's own header stays (it then
     * writes none, or "identity"). */
    if (lf_accept_encoding[0]) lines[n++] = lf_accept_encoding;
    return n;
}

double lf_now_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double lf_now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lf_conn_destroy(lf_conn *c)
{
    if (!c) return;
    /* Handles made by another process share sockets (and TLS state) with
     * it: closing them here would write on the parent's connections. They
     * are abandoned instead; the child pays a little memory. */
    if (c->pid == lf_current_pid()) {
        /* Never in a hub here: lf_transfer_end took it out. */
        if (c->easy) curl_easy_cleanup(c->easy);
        if (c->multi) curl_multi_cleanup(c->multi);
        if (c->evfd >= 0) close(c->evfd);
        if (c->tfd >= 0) close(c->tfd);
        free(c);
    }
}

static void lf_conn_setup(lf_conn *c);

static lf_conn *lf_conn_new(void)
{
    lf_conn *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->pid = lf_current_pid();
    c->connect_timeout_ms = -1;
    c->evfd = -1;
    c->wake_fd = -1;
    c->tfd = -1;
    c->tfd_at = -1;
    c->easy = curl_easy_init();
    if (!c->easy) {
        lf_conn_destroy(c);
        return NULL;
    }
    lf_conn_setup(c);
    return c;
}

CURLM *lf_conn_multi(lf_conn *c)
{
    if (!c->multi) {
        c->multi = curl_multi_init();
        if (c->multi) curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 8L);
    }
    return c->multi;
}

lf_pool *lf_pool_new(void)
{
    lf_pool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->pid = lf_current_pid();
    return p;
}

/* Called with the lock held. */
static void lf_pool_forget_if_forked(lf_pool *p)
{
    lf_conn *tail;

    if (p->pid == lf_current_pid()) return;
    /* A forked child: the parent's handles are never reused, and never
     * closed either (that would write on the parent's connections). They
     * move to a list of their own, so that their memory stays accounted
     * for (valgrind saw it as lost) instead of unreachable. */
    if (p->idle) {
        for (tail = p->idle; tail->next; tail = tail->next) {}
        tail->next = p->abandoned;
        p->abandoned = p->idle;
    }
    p->idle = NULL;
    p->n_idle = 0;
    p->pid = lf_current_pid();
}

void lf_pool_free(lf_pool *p)
{
    lf_conn *c, *next;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    lf_pool_forget_if_forked(p);
    c = p->idle;
    p->idle = NULL;
    pthread_mutex_unlock(&p->lock);
    for (; c; c = next) {
        next = c->next;
        lf_conn_destroy(c);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

lf_conn *lf_pool_checkout(lf_pool *p)
{
    lf_conn *c;
    pthread_mutex_lock(&p->lock);
    lf_pool_forget_if_forked(p);
    c = p->idle;
    if (c) {
        p->idle = c->next;
        p->n_idle--;
    }
    pthread_mutex_unlock(&p->lock);
    if (c) {
        c->next = NULL;
        return c;
    }
    return lf_conn_new();
}

void lf_pool_checkin(lf_pool *p, lf_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&p->lock);
    lf_pool_forget_if_forked(p);
    if (c->pid == lf_current_pid() && p->n_idle < LF_POOL_MAX_IDLE) {
        c->next = p->idle;
        p->idle = c;
        p->n_idle++;
        c = NULL;
    } else if (c->pid != lf_current_pid()) {
        /* Checked out before a fork: the parent's, kept like the idle ones. */
        c->next = p->abandoned;
        p->abandoned = c;
        c = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    lf_conn_destroy(c);
}

size_t lf_pool_idle_count(lf_pool *p)
{
    size_t n;
    pthread_mutex_lock(&p->lock);
    lf_pool_forget_if_forked(p);
    n = p->n_idle;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void lf_response_init(lf_response *r, size_t max_bytes)
{
    memset(r, 0, sizeof(*r));
    lf_buf_init(&r->inbox);
    lf_buf_init(&r->retry_after);
    lf_buf_init(&r->retry_after_ms);
    lf_buf_init(&r->request_id);
    r->should_retry = -1;
    r->max_bytes = max_bytes;
}

void lf_response_reset(lf_response *r, size_t max_bytes)
{
    r->status = 0;
    lf_buf_clear(&r->inbox);
    r->event_stream = 0;
    lf_buf_clear(&r->retry_after);
    lf_buf_clear(&r->retry_after_ms);
    lf_buf_clear(&r->request_id);
    r->body_bytes = 0;
    r->max_bytes = max_bytes;
    r->too_large = 0;
    r->should_retry = -1;
    r->headers_done = 0;
    r->first_byte_at = 0;
    r->last_byte_at = 0;
    r->got_bytes = 0;
    r->requests_sent = 0;
    r->resend_refused = 0;
    r->restarted = 0;
}

void lf_response_free(lf_response *r)
{
    lf_buf_free(&r->inbox);
    lf_buf_free(&r->retry_after);
    lf_buf_free(&r->retry_after_ms);
    lf_buf_free(&r->request_id);
}

static void lf_hub_saw(lf_conn *c);

/* Body bytes are only buffered here: parsing and every call into the host
 * happen after curl_multi_perform has returned, so nothing of the host ever
 * runs (or unwinds) inside libcurl. */
static size_t lf_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    lf_response *r = ud;
    size_t n = size * nmemb;

    if (r->body_bytes + n > r->max_bytes) {
        r->too_large = 1;
        return 0; /* CURLE_WRITE_ERROR ends the transfer */
    }
    if (lf_buf_append(&r->inbox, ptr, n) != 0) return 0;
    r->got_bytes = 1;
    r->body_bytes += n;
    if (r->hub_conn) lf_hub_saw(r->hub_conn);
    return n;
}

/* Whether the header name n[0..len) is want (lower case, len bytes), in
 * any case. */
static int lf_header_name_is(const char *n, size_t len, const char *want)
{
    size_t i;
    for (i = 0; i < len; i++)
        if (tolower((unsigned char)n[i]) != want[i]) return 0;
    return 1;
}

/* Whether w[0..wn) occurs in s[0..n) (glibc's memmem sets up a table
 * first: several times the cost of this for a header value). */
static int lf_contains(const char *s, size_t n, const char *w, size_t wn)
{
    const char *p = s, *e = s + n;

    while (wn && (size_t)(e - p) >= wn && (p = memchr(p, w[0], (size_t)(e - p) - wn + 1)) != NULL) {
        if (memcmp(p, w, wn) == 0) return 1;
        p++;
    }
    return 0;
}

/* The response headers the policy reads. A line is told apart by the length
 * of its name first, so the everyday ones (Date, Server, Content-Length,
 * Connection, ...) cost one comparison of a byte or none. */
enum {
    LF_H_OTHER = 0,
    LF_H_CONTENT_TYPE,
    LF_H_RETRY_AFTER,
    LF_H_RETRY_AFTER_MS,
    LF_H_REQUEST_ID,
    LF_H_SHOULD_RETRY
};

/* Bytes of a provider's request id kept (see lf_on_header). */
#define LF_REQUEST_ID_MAX 200

static int lf_header_kind(const char *name, size_t len)
{
    switch (len) {
    case 10: return lf_header_name_is(name, len, "request-id") ? LF_H_REQUEST_ID : LF_H_OTHER;
    case 11: return lf_header_name_is(name, len, "retry-after") ? LF_H_RETRY_AFTER : LF_H_OTHER;
    case 12:
        if (lf_header_name_is(name, len, "content-type")) return LF_H_CONTENT_TYPE;
        return lf_header_name_is(name, len, "x-request-id") ? LF_H_REQUEST_ID : LF_H_OTHER;
    case 14:
        if (lf_header_name_is(name, len, "retry-after-ms")) return LF_H_RETRY_AFTER_MS;
        return lf_header_name_is(name, len, "x-should-retry") ? LF_H_SHOULD_RETRY : LF_H_OTHER;
    default: return LF_H_OTHER;
    }
}

static size_t lf_on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    lf_response *r = ud;
    size_t n = size * nmemb;
    const char *colon, *v, *end;
    size_t vlen;
    int kind;

    r->got_bytes = 1;
    if (r->hub_conn) lf_hub_saw(r->hub_conn);
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        /* A new status line (after a 100 Continue, say): start over. */
        r->event_stream = 0;
        lf_buf_clear(&r->retry_after);
        lf_buf_clear(&r->retry_after_ms);
        lf_buf_clear(&r->request_id);
        r->should_retry = -1;
        r->headers_done = 0;
        r->status = 0;
        {
            /* "HTTP/1.1 200 OK" or "HTTP/2 200" */
            const char *sp = memchr(ptr, ' ', n);
            if (sp && (size_t)(sp - ptr) + 4 <= n && isdigit((unsigned char)sp[1]) &&
                isdigit((unsigned char)sp[2]) && isdigit((unsigned char)sp[3]))
                r->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
        }
        return n;
    }
    if (n <= 2 && (ptr[0] == '\r' || ptr[0] == '\n')) {
        r->headers_done = 1;
        return n;
    }
    colon = memchr(ptr, ':', n);
    if (!colon) return n;
    kind = lf_header_kind(ptr, (size_t)(colon - ptr));
    if (kind == LF_H_OTHER) return n;
    v = colon + 1;
    end = ptr + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    vlen = (size_t)(end - v);
    switch (kind) {
    case LF_H_CONTENT_TYPE:
        /* All the loop asks of it (the last one counts, up to a NUL as
         * when it was kept as text). */
        r->event_stream = lf_contains(v, strnlen(v, vlen), "event-stream", 12);
        break;
    case LF_H_RETRY_AFTER: lf_buf_set(&r->retry_after, v, vlen); break;
    case LF_H_RETRY_AFTER_MS: lf_buf_set(&r->retry_after_ms, v, vlen); break;
    case LF_H_REQUEST_ID:
        /* Kept as text (records, errors, the cache, a varchar(255) column): a
         * provider's stray byte becomes U+FFFD rather than a string nothing can
         * serialise, and a huge value is cut (real ids are under 100 bytes). */
        if (vlen > LF_REQUEST_ID_MAX) {
            vlen = LF_REQUEST_ID_MAX; /* at a character's start, not inside one */
            while (vlen > 0 && ((unsigned char)v[vlen] & 0xC0) == 0x80) vlen--;
        }
        lf_buf_clear(&r->request_id);
        (void)lf_utf8_append_sanitized(&r->request_id, v, vlen);
        break;
    case LF_H_SHOULD_RETRY:
        if (vlen == 4 && strncasecmp(v, "true", 4) == 0) r->should_retry = 1;
        else if (vlen == 5 && strncasecmp(v, "false", 5) == 0) r->should_retry = 0;
        break;
    }
    return n;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Called by libcurl each time it is about to send the request on a
 * connection. When a reused keep-alive connection turns out dead, libcurl
 * sends the same POST again on a new connection by itself. Two cases:
 * - the request never left: the send itself failed (a connection the server
 *   reset while it was idle; libcurl 7.88 takes a reset connection for alive
 *   and reuses it). Not one byte was written, so the provider cannot have
 *   received it: the send on the new connection is the first, and goes
 *   through without a failed attempt.
 * - it may have arrived: the request was written and the connection died
 *   before any byte of the response. The provider may have received (and
 *   billed) it, and neither the attempt records nor max_retries would know
 *   of a second one: it is refused, the attempt fails as a connection
 *   failure, and the call's own retry and failover policy decides, with
 *   every request recorded.
 * libcurl counts the bytes of the requests it wrote in this transfer
 * (CURLINFO_REQUEST_SIZE, 0 when the transfer starts, added to only after a
 * successful write): 0 before a resend means every earlier send failed before
 * any byte left. */
static int lf_on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    lf_conn *c = ud;
    lf_response *r = c->resp;
    long written = -1;
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    if (!r) return CURL_PREREQFUNC_OK;
    if (r->requests_sent++ == 0) return CURL_PREREQFUNC_OK;
    if (curl_easy_getinfo(c->easy, CURLINFO_REQUEST_SIZE, &written) == CURLE_OK && written == 0)
        return CURL_PREREQFUNC_OK;
    r->resend_refused = 1;
    return CURL_PREREQFUNC_ABORT;
}
#endif

/* The options every request shares, set once per handle: the handle is never
 * reset, so these hold for its whole life, and lf_transfer_start sets every
 * option that differs between requests (measured: a curl_easy_reset plus
 * twenty setopts on every attempt cost more than building the request). */
static void lf_conn_setup(lf_conn *c)
{
    CURL *e = c->easy;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lf_on_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, lf_on_header);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    /* TLS verification stays on: these are the library defaults, set
     * explicitly so that no environment can turn them off. */
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    /* No CURLOPT_USERAGENT: libcurl would format "User-Agent: ..." anew for
     * every request even when the request's list names its own; the line
     * comes from lf_transport_default_headers instead. */
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c); /* the hub finds the slot of a transfer */
#if LIBCURL_VERSION_NUM >= 0x075000
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, lf_on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, c);
#endif
}

#ifdef __linux__
/* ------------------------------------------------------------- the hub */

static pthread_once_t lf_hub_once = PTHREAD_ONCE_INIT;
static pthread_key_t lf_hub_key;
static int lf_hub_key_ok;

/* A thread that ends takes its hub with it (its transfers ended before). */
static void lf_hub_free(void *p)
{
    lf_hub *hub = p;
    if (hub->pid == lf_current_pid()) {
        curl_multi_cleanup(hub->multi);
        free(hub);
    }
    /* A forked child's copy of its parent's hub shares the parent's sockets:
     * abandoned, like the pool's handles. */
}

static void lf_hub_key_init(void)
{
    lf_hub_key_ok = pthread_key_create(&lf_hub_key, lf_hub_free) == 0;
}

/* Arms c's timerfd for at (monotonic seconds) unless it is armed for that
 * moment or sooner already (and not past). */
static void lf_conn_arm(lf_conn *c, double at)
{
    struct itimerspec its;

    /* A poked slot's wait ends now anyway, and counts the hub's timer in. */
    if (c->tfd < 0 || c->poked) return;
    if (c->tfd_at > 0 && c->tfd_at <= at && c->tfd_at > lf_now_monotonic()) return;
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t)at;
    its.it_value.tv_nsec = (long)((at - (double)its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_nsec >= 1000000000L) its.it_value.tv_nsec = 999999999L;
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1; /* 0 disarms */
    if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) c->tfd_at = at;
}

/* Another slot's libcurl call did something for c's transfer: c's wait ends
 * now, and its lf_transfer_step takes it from there. Once per wait. */
static void lf_hub_poke(lf_conn *c)
{
    struct itimerspec its;

    if (c->poked || c->tfd < 0) return; /* without a timerfd: its wait's own timeout */
    memset(&its, 0, sizeof(its));
    its.it_value.tv_nsec = 1; /* relative: at once */
    if (timerfd_settime(c->tfd, 0, &its, NULL) == 0) {
        c->poked = 1;
        c->tfd_at = lf_now_monotonic();
    }
}

static void lf_hub_saw(lf_conn *c)
{
    if (c->hub && c->hub->current != c) lf_hub_poke(c);
}

/* CURLMOPT_SOCKETFUNCTION: libcurl names a socket it wants watched, or one
 * it is done with. The socket goes into the epoll set of the slot whose
 * transfer uses it; the set it is in is remembered as the socket's
 * pointer (the epoll fd + 1, not the slot: a slot may be gone by the time
 * libcurl closes a cached connection). Only epoll sets change here: nothing
 * of the host runs inside libcurl. Level-triggered, so that bytes libcurl
 * left unread wake the next wait again. */
static int lf_on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    lf_hub *hub = userp;
    int was = (int)(intptr_t)socketp - 1;
    lf_conn *c = NULL;
    struct epoll_event ev;

    if (what == CURL_POLL_REMOVE) {
        if (was >= 0) epoll_ctl(was, EPOLL_CTL_DEL, s, NULL); /* a closed socket has left the set already */
        curl_multi_assign(hub->multi, s, NULL);
        return 0;
    }
    if (curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&c) != CURLE_OK || !c || c->evfd < 0) return 0;
    if (was >= 0 && was != c->evfd) epoll_ctl(was, EPOLL_CTL_DEL, s, NULL);
    memset(&ev, 0, sizeof(ev));
    ev.data.fd = s;
    if (what & CURL_POLL_IN) ev.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) ev.events |= EPOLLOUT;
    /* A descriptor number libcurl reuses may still be in the set, or a
     * socket it names again may have been closed meanwhile. */
    if (epoll_ctl(c->evfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT)
        epoll_ctl(c->evfd, EPOLL_CTL_ADD, s, &ev);
    if (was != c->evfd) curl_multi_assign(hub->multi, s, (void *)(intptr_t)(c->evfd + 1));
    return 0;
}

/* Makes sure some slot's wait ends by the hub's timer: the slot whose
 * libcurl call is under way (its next wait counts the timer in), else the
 * keeper, else any slot with a transfer (its timerfd armed for it). */
static void lf_hub_keep_timer(lf_hub *hub)
{
    lf_conn *k;

    if (hub->timer_at < 0) return;
    k = hub->current ? hub->current : hub->keeper ? hub->keeper : hub->active;
    hub->keeper = k;
    if (k && k != hub->current) lf_conn_arm(k, hub->timer_at);
}

/* CURLMOPT_TIMERFUNCTION: when libcurl wants to run next without a socket
 * event (connect and resolver polling, its own timeouts); a one-shot timer
 * for all of the hub's transfers. */
static int lf_on_timer(CURLM *m, long timeout_ms, void *userp)
{
    lf_hub *hub = userp;
    (void)m;
    hub->timer_at = timeout_ms < 0 ? -1 : lf_now_monotonic() + (double)timeout_ms / 1000.0;
    lf_hub_keep_timer(hub);
    return 0;
}

/* This thread's hub, made on first use; NULL when out of memory. */
static lf_hub *lf_hub_get(void)
{
    lf_hub *hub;

    pthread_once(&lf_hub_once, lf_hub_key_init);
    if (!lf_hub_key_ok) return NULL;
    hub = pthread_getspecific(lf_hub_key);
    if (hub && hub->pid == lf_current_pid()) return hub;
    /* None yet, or the parent's (a forked child): a new one. */
    hub = calloc(1, sizeof(*hub));
    if (!hub) return NULL;
    hub->multi = curl_multi_init();
    if (!hub->multi) {
        free(hub);
        return NULL;
    }
    hub->pid = lf_current_pid();
    hub->timer_at = -1;
    curl_multi_setopt(hub->multi, CURLMOPT_SOCKETFUNCTION, lf_on_socket);
    curl_multi_setopt(hub->multi, CURLMOPT_SOCKETDATA, hub);
    curl_multi_setopt(hub->multi, CURLMOPT_TIMERFUNCTION, lf_on_timer);
    curl_multi_setopt(hub->multi, CURLMOPT_TIMERDATA, hub);
    curl_multi_setopt(hub->multi, CURLMOPT_MAXCONNECTS, LF_HUB_MAX_CONNECTS);
    /* One transfer per connection, as with a multi handle per slot: a
     * socket's readiness then concerns one slot's wait. */
    curl_multi_setopt(hub->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    if (pthread_setspecific(lf_hub_key, hub) != 0) {
        curl_multi_cleanup(hub->multi);
        free(hub);
        return NULL;
    }
    return hub;
}

/* The messages of the hub's finished transfers go to their slots; a slot
 * other than c is woken. */
static void lf_hub_collect(lf_hub *hub, lf_conn *c)
{
    CURLMsg *msg;
    int left = 0;

    while ((msg = curl_multi_info_read(hub->multi, &left)) != NULL) {
        lf_conn *o = NULL;
        if (msg->msg != CURLMSG_DONE) continue;
        if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&o) != CURLE_OK || !o) continue;
        o->done = 1;
        o->done_result = msg->data.result;
        if (o != c) lf_hub_poke(o);
    }
}

static int lf_hub_add(lf_hub *hub, lf_conn *c)
{
    CURLMcode rc;

    hub->current = c;
    rc = curl_multi_add_handle(hub->multi, c->easy);
    hub->current = NULL;
    return rc == CURLM_OK ? 0 : -1;
}

static void lf_hub_remove(lf_hub *hub, lf_conn *c)
{
    hub->current = c;
    curl_multi_remove_handle(hub->multi, c->easy);
    lf_hub_collect(hub, c); /* a removal can finish nothing else, but drains */
    hub->current = NULL;
    c->done = 0;
}

#else
static void lf_hub_saw(lf_conn *c)
{
    (void)c;
}
#endif

int lf_conn_evented(lf_conn *c)
{
#ifdef __linux__
    if (c->evfd < 0) {
        c->evfd = epoll_create1(EPOLL_CLOEXEC);
        if (c->evfd < 0) return -1;
        c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (c->tfd >= 0) {
            struct epoll_event ev;
            memset(&ev, 0, sizeof(ev));
            ev.events = EPOLLIN;
            ev.data.fd = c->tfd;
            if (epoll_ctl(c->evfd, EPOLL_CTL_ADD, c->tfd, &ev) != 0) {
                close(c->tfd); /* then every wait has a timeout of its own */
                c->tfd = -1;
            }
        }
    }
    return c->evfd;
#else
    (void)c;
    return -1;
#endif
}

int lf_conn_watch_wake(lf_conn *c, int fd)
{
#ifdef __linux__
    struct epoll_event ev;

    if (c->evfd < 0 || fd < 0) return -1;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(c->evfd, EPOLL_CTL_ADD, fd, &ev) != 0) return -1;
    c->wake_fd = fd;
    c->woken = 0;
    return 0;
#else
    (void)c;
    (void)fd;
    return -1;
#endif
}

void lf_conn_unwatch_wake(lf_conn *c)
{
#ifdef __linux__
    if (c->wake_fd >= 0) epoll_ctl(c->evfd, EPOLL_CTL_DEL, c->wake_fd, NULL);
#endif
    c->wake_fd = -1;
    c->woken = 0;
}

int lf_transfer_start(lf_conn *c, const lf_http_request *req, lf_response *resp)
{
    CURL *e = c->easy;
    int evented = req->evented && c->evfd >= 0;
    long bufsize = evented ? LF_EVENTED_BUFFER_SIZE : 0;

    /* Everything a request may change, set on every request (the connect
     * timeout and buffer size when they differ from what the handle holds):
     * nothing of the previous one can leak into this one. */
    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, resp);
    {
        long cto = req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 0L;
        if (cto != c->connect_timeout_ms) {
            curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, cto);
            c->connect_timeout_ms = cto;
        }
    }
    if (bufsize != c->buffer_size) {
        /* 0: libcurl's default (CURL_MAX_WRITE_SIZE); between transfers
         * libcurl 7.88 makes the buffer anew at the size asked. */
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, bufsize ? bufsize : (long)CURL_MAX_WRITE_SIZE);
        c->buffer_size = bufsize;
    }
    if (req->errbuf) req->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, req->errbuf);
    c->resp = resp;
    c->errbuf = req->errbuf;
    c->evented = evented;
#ifdef __linux__
    if (evented) {
        lf_hub *hub = lf_hub_get();
        if (!hub) return -1;
        c->hub = hub;
        c->done = 0;
        c->hub_prev = NULL;
        c->hub_next = hub->active;
        if (hub->active) hub->active->hub_prev = c;
        hub->active = c;
        resp->hub_conn = c;
        if (lf_hub_add(hub, c) == 0) return 0;
        resp->hub_conn = NULL;
        lf_transfer_end(c);
        return -1;
    }
#endif
    if (!lf_conn_multi(c)) return -1;
    return curl_multi_add_handle(c->multi, e) == CURLM_OK ? 0 : -1;
}

/* Whether a transfer that ended on result never wrote a byte of its request,
 * so that the provider cannot have received it: the send failed (a reused
 * connection the server had reset while it was idle). libcurl sends such a
 * request again on a new connection by itself, but only five times over an
 * easy handle's whole life (7.88 never resets that count between transfers),
 * and after that the call would fail on a request that never left. */
static int lf_never_sent(lf_conn *c, CURLcode result)
{
    long written = -1;

    if (result != CURLE_SEND_ERROR || c->resp->restarted || c->resp->resend_refused || c->resp->status) return 0;
    return curl_easy_getinfo(c->easy, CURLINFO_REQUEST_SIZE, &written) == CURLE_OK && written == 0;
}

#ifdef __linux__
/* One pass of a readiness-driven transfer: the sockets that are ready now
 * (the epoll set, without waiting), then the hub's timer when it is due or
 * when no socket was ready (the wait ended on its timerfd or timeout, or the
 * slot was woken: a timer libcurl did not announce again is never lost that
 * way). Finished transfers' messages go to their slots. */
static int lf_transfer_drive(lf_conn *c, int *running)
{
    struct epoll_event ev[8];
    lf_hub *hub = c->hub;
    int n, i, due, sockets = 0, rc = 0;

    hub->current = c;
    c->poked = 0;
    n = epoll_wait(c->evfd, ev, 8, 0);
    for (i = 0; i < n && rc == 0; i++) {
        int mask = 0;
        if (ev[i].data.fd == c->wake_fd) {
            c->woken = 1; /* the host's: not libcurl's business */
            continue;
        }
        if (ev[i].data.fd == c->tfd) {
            /* The wait's timeout, as lf_transfer_wait_ms set it, or a poke:
             * not a socket, so the hub's timer runs below. */
            uint64_t expirations;
            if (read(c->tfd, &expirations, sizeof expirations) < 0) { /* EAGAIN: drained already */ }
            c->tfd_at = -1;
            continue;
        }
        sockets++;
        if (ev[i].events & (EPOLLIN | EPOLLHUP)) mask |= CURL_CSELECT_IN;
        if (ev[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
        if (ev[i].events & EPOLLERR) mask |= CURL_CSELECT_ERR;
        if (curl_multi_socket_action(hub->multi, ev[i].data.fd, mask, running) != CURLM_OK) rc = -1;
    }
    due = hub->timer_at >= 0 && lf_now_monotonic() >= hub->timer_at;
    if (rc == 0 && (!sockets || due)) {
        if (due) hub->timer_at = -1; /* fired; libcurl sets the next one */
        if (curl_multi_socket_action(hub->multi, CURL_SOCKET_TIMEOUT, 0, running) != CURLM_OK) rc = -1;
    }
    lf_hub_collect(hub, c);
    hub->current = NULL;
    return rc;
}
#endif

int lf_transfer_wait_ms(lf_conn *c, int ms)
{
    double now, at;

    if (!c->evented) return ms;
#ifdef __linux__
    /* Woken while its own code ran (a callback into the host): the
     * timerfd fires already, and setting it again would lose that. */
    if (c->poked) return -1;
    now = lf_now_monotonic();
    if (c->hub->timer_at >= 0 && (!c->hub->keeper || c->hub->keeper == c)) {
        /* The keeper's wait ends by the hub's timer; the others' waits
         * leave it alone (with a thousand transfers in the hub its timer
         * moves all the time: every wait setting its timerfd for it cost
         * a system call per chunk). */
        double left = c->hub->timer_at - now;
        int t;
        c->hub->keeper = c;
        if (left <= 0) return 0;
        t = (int)ceil(left * 1000.0);
        if (t < ms) ms = t;
    }
    if (c->tfd < 0 || ms <= 0) return ms;
    at = now + ms / 1000.0;
    /* Armed for no later than that (and not past): it stays as it is. */
    if (c->tfd_at > now && c->tfd_at <= at) return -1;
    c->tfd_at = -1;
    lf_conn_arm(c, at);
    return c->tfd_at == at ? -1 : ms;
#else
    (void)now;
    (void)at;
    return ms;
#endif
}

/* The transfer finished with result: *done set, or, when the request never
 * left, started again on a new connection (returns 1). */
static int lf_transfer_finished(lf_conn *c, CURLM *multi, CURLcode result, int *done, CURLcode *res, int *again)
{
    if (c->resp && lf_never_sent(c, result)) {
        /* libcurl closed the dead connection: the same request starts
         * again, on a new one. */
        c->resp->restarted = 1;
        c->resp->requests_sent = 0;
        if (c->errbuf) c->errbuf[0] = '\0';
#ifdef __linux__
        if (c->evented) {
            lf_hub_remove(c->hub, c);
            if (lf_hub_add(c->hub, c) != 0) return -1;
            *again = 1;
            return 0;
        }
#endif
        curl_multi_remove_handle(multi, c->easy);
        if (curl_multi_add_handle(multi, c->easy) != CURLM_OK) return -1;
        *again = 1;
        return 0;
    }
    *done = 1;
    *res = result;
    return 0;
}

int lf_transfer_step(lf_conn *c, int *done, CURLcode *result)
{
    int running = 0, left = 0, again;
    CURLMsg *msg;

    do {
        again = 0;
#ifdef __linux__
        if (c->evented) {
            if (lf_transfer_drive(c, &running) != 0) return -1;
        } else
#endif
        if (curl_multi_perform(c->multi, &running) != CURLM_OK) return -1;
        if (c->resp && c->resp->got_bytes) {
            lf_response *r = c->resp;
            double now = lf_now_monotonic();

            r->got_bytes = 0;
            r->last_byte_at = now;
            if (!r->first_byte_at && r->body_bytes) r->first_byte_at = now;
        }
        if (c->evented) {
            if (c->done) {
                c->done = 0;
                if (lf_transfer_finished(c, NULL, c->done_result, done, result, &again) != 0) return -1;
            }
            continue;
        }
        while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE || msg->easy_handle != c->easy) continue;
            if (lf_transfer_finished(c, c->multi, msg->data.result, done, result, &again) != 0) return -1;
            if (again) break;
        }
    } while (again);
    return 0;
}

void lf_transfer_end(lf_conn *c)
{
#ifdef __linux__
    if (c->hub) {
        lf_hub *hub = c->hub;
        lf_hub_remove(hub, c);
        if (c->hub_prev) c->hub_prev->hub_next = c->hub_next;
        else hub->active = c->hub_next;
        if (c->hub_next) c->hub_next->hub_prev = c->hub_prev;
        c->hub_prev = c->hub_next = NULL;
        c->hub = NULL;
        if (c->resp) c->resp->hub_conn = NULL;
        if (hub->keeper == c) {
            /* The hub's timer needs another slot's wait. */
            hub->keeper = NULL;
            lf_hub_keep_timer(hub);
        }
    } else
#endif
    if (c->multi) curl_multi_remove_handle(c->multi, c->easy);
    c->resp = NULL;
    c->errbuf = NULL;
    c->evented = 0;
    /* The buffer belongs to the attempt that just ended: an idle handle in
     * the pool must not point at it. */
    curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
}
