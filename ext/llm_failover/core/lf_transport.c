/* The connection pool and one transfer driven step by step (lf_transport.h).
 * The response's callbacks are lf_response.c's, readiness-driven transfers
 * lf_hub.c's, the clocks and the pid cache lf_clock.c's. */
#include "lf_transport_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lf_clock.h"

#include "lf_banned.h"

/* Idle connections kept per pool; more are closed on check-in. */
#define LF_POOL_MAX_IDLE 16
/* The receive buffer of a readiness-driven transfer. libcurl's 16 kB default
 * stays for poll-driven ones (one thread per call: fewer reads of a large
 * answer); a thread waiting for a thousand streams of events of a few hundred
 * bytes keeps 12 kB per call less. */
#define LF_EVENTED_BUFFER_SIZE 4096L

struct lf_pool {
    pthread_mutex_t lock;
    lf_conn *idle;
    size_t n_idle;
    pid_t pid;
    lf_conn *abandoned;    /* in a forked child: the parent's handles, see below */
};

static pthread_once_t lf_global_once = PTHREAD_ONCE_INIT;
static int lf_global_rc = -1;

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

int lf_transport_sigv4_escapes_path(void)
{
    /* curl 8.14.0 (PR 17129) made its canonical path the path escaped, for every
     * service but s3, s3-express and s3-outposts. */
    return curl_version_info(CURLVERSION_NOW)->version_num >= 0x080e00;
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
    c->peer_fd = -1;
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

void lf_wait_block(struct lf_wait *w)
{
    int numfds = 0;
    curl_multi_poll(w->multi, NULL, 0, w->timeout_ms, &numfds);
}

void lf_wait_wake(struct lf_wait *w)
{
    curl_multi_wakeup(w->multi);
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

/* The options every request shares, set once per handle: the handle is never
 * reset, so these hold for its whole life, and lf_transfer_start sets every
 * option that differs between requests, so that no option of one request can
 * leak into the next without a curl_easy_reset and every setopt again. */
static void lf_conn_setup(lf_conn *c)
{
    CURL *e = c->easy;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lf_response_on_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, lf_response_on_header);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    /* TLS verification stays on: these are the library defaults, set
     * explicitly so that no environment can turn them off. */
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    /* No CURLOPT_USERAGENT: libcurl would format "User-Agent: ..." anew for
     * every request even when the request's list names its own; the line
     * comes from lf_transport_default_headers instead. */
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c); /* the hub finds the slot of a transfer */
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, lf_on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, c);
}

/* SigV4 for a signed request, and none for any other: a reused handle keeps
 * no credentials of the last request, and without a user libcurl adds no
 * Authorization of its own. */
static void lf_transfer_sign(CURL *e, const lf_http_request *req)
{
    const int sign = req->aws_sigv4 && req->aws_key_id && req->aws_secret;

#if LIBCURL_VERSION_NUM >= 0x074b00 /* 7.75.0: CURLOPT_AWS_SIGV4 */
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sign ? req->aws_sigv4 : NULL);
#endif
    if (!sign) curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERNAME, sign ? req->aws_key_id : NULL);
    curl_easy_setopt(e, CURLOPT_PASSWORD, sign ? req->aws_secret : NULL);
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
    curl_easy_setopt(e, CURLOPT_REQUEST_TARGET, req->request_target);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
    lf_transfer_sign(e, req);
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
    if (evented) {
        if (lf_hub_attach(c, resp) == 0) return 0;
        lf_transfer_end(c);
        return -1;
    }
    c->runs_in = req->lead ? lf_conn_multi(req->lead) : lf_conn_multi(c);
    c->done = 0;
    if (!c->runs_in) return -1;
    if (curl_multi_add_handle(c->runs_in, e) == CURLM_OK) return 0;
    c->runs_in = NULL;
    return -1;
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

/* The transfer finished with result: *done set, or, when the request never
 * left, started again on a new connection (*again set). 0, or -1 when it
 * could not be started again. */
static int lf_transfer_finished(lf_conn *c, CURLcode result, int *done, CURLcode *res, int *again)
{
    if (c->resp && lf_never_sent(c, result)) {
        /* libcurl closed the dead connection: the same request starts
         * again, on a new one. */
        c->resp->restarted = 1;
        c->resp->requests_sent = 0;
        if (c->errbuf) c->errbuf[0] = '\0';
        if (c->evented) {
            if (lf_hub_restart(c) != 0) return -1;
        } else {
            curl_multi_remove_handle(c->runs_in, c->easy);
            if (curl_multi_add_handle(c->runs_in, c->easy) != CURLM_OK) return -1;
        }
        *again = 1;
        return 0;
    }
    *done = 1;
    *res = result;
    return 0;
}

/* The response's first_byte_at / last_byte_at, once per step in which bytes
 * arrived. */
static void lf_stamp_bytes(lf_response *r)
{
    double now;

    if (!r || !r->got_bytes) return;
    now = lf_now_monotonic();
    r->got_bytes = 0;
    r->last_byte_at = now;
    if (!r->first_byte_at && r->body_bytes) r->first_byte_at = now;
}

/* The messages of the finished transfers in a poll-driven multi handle go to
 * their slots (two run in one when a request is hedged). */
static void lf_collect(CURLM *m)
{
    CURLMsg *msg;
    int left = 0;

    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        lf_conn *o = NULL;
        if (msg->msg != CURLMSG_DONE) continue;
        if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&o) != CURLE_OK || !o) continue;
        o->done = 1;
        o->done_result = msg->data.result;
    }
}

int lf_transfer_step(lf_conn *c, int *done, CURLcode *result)
{
    int running = 0, again;

    do {
        again = 0;
        if (c->evented ? lf_hub_drive(c, &running) != 0 : curl_multi_perform(c->runs_in, &running) != CURLM_OK)
            return -1;
        lf_stamp_bytes(c->resp);
        if (!c->evented) lf_collect(c->runs_in);
        if (c->done) {
            c->done = 0;
            if (lf_transfer_finished(c, c->done_result, done, result, &again) != 0) return -1;
        }
    } while (again);
    return 0;
}

void lf_transfer_end(lf_conn *c)
{
    if (c->hub) lf_hub_detach(c);
    else if (c->runs_in) curl_multi_remove_handle(c->runs_in, c->easy);
    c->runs_in = NULL;
    c->done = 0;
    c->resp = NULL;
    c->errbuf = NULL;
    c->evented = 0;
    /* The buffer belongs to the attempt that just ended: an idle handle in
     * the pool must not point at it. */
    curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
}
