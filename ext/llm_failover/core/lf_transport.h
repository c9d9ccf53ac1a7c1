/* libcurl transport: a pool of reusable connections and one HTTP exchange at
 * a time per connection. The attempt loop (lf_failover.c) drives a transfer
 * step by step so that it can enforce deadlines, feed the stream parser
 * outside libcurl's callbacks, and abort at once. */
#ifndef LF_TRANSPORT_H
#define LF_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>
#include <curl/curl.h>
#include "lf_buf.h"

struct lf_hub;

/* A connection slot: one easy handle, and the multi handle (which owns the
 * connection cache, so keep-alive connections survive between calls) of its
 * poll-driven transfers, made on first use (lf_conn_multi). A slot's
 * readiness-driven transfers run in its thread's hub instead (see
 * lf_conn_evented). */
typedef struct lf_conn {
    CURLM *multi;          /* NULL until a poll-driven transfer needs it */
    /* The multi handle the poll-driven transfer under way runs in: the
     * slot's own, or its lead's when it runs beside another (a hedge). */
    CURLM *runs_in;
    CURL *easy;
    pid_t pid;             /* the process that created the handles */
    long connect_timeout_ms; /* what the easy handle was last given; -1 before */
    long buffer_size;      /* CURLOPT_BUFFERSIZE the easy handle was last given; 0: libcurl's */
    struct lf_response *resp; /* the transfer's response, between start and end */
    char *errbuf;          /* the transfer's error buffer, between start and end */
    struct lf_conn *next;  /* idle list */
    /* Readiness-driven transfers (lf_conn_evented): an epoll fd that watches
     * the sockets of this slot's transfer, which the hub's
     * CURLMOPT_SOCKETFUNCTION names. */
    int evfd;              /* -1 until the first readiness-driven transfer */
    int evented;           /* the transfer under way is readiness-driven */
    int wake_fd;           /* the host's descriptor in the epoll set (lf_conn_watch_wake), -1 */
    int woken;             /* wake_fd was ready in the last lf_transfer_step */
    int peer_fd;           /* another slot's epoll fd watched in this set (lf_conn_watch_peer), -1 */
    /* A timerfd in the epoll set, so that a wait needs no timeout of its own
     * (lf_transfer_wait_ms), and so that the hub can wake this slot's wait
     * (another slot's libcurl call ran this transfer, or the hub's timer is
     * this slot's to run): -1 where none could be made. */
    int tfd;
    double tfd_at;         /* monotonic seconds it is armed for, -1 disarmed */
    /* In the hub, while a readiness-driven transfer runs. */
    struct lf_hub *hub;
    struct lf_conn *hub_prev, *hub_next; /* the hub's slots with a transfer */
    int done;              /* the hub (or the lead's multi) reported the transfer finished ... */
    CURLcode done_result;  /* ... with this */
    int poked;             /* its timerfd was set to fire now, not yet seen by its wait */
} lf_conn;

typedef struct lf_pool lf_pool;

/* curl_global_init, once per process; 0 on success. */
int lf_transport_global_init(void);

/* The header lines libcurl would otherwise write itself: "User-Agent: ..."
 * and, when libcurl can decode any content coding, "Accept-Encoding: ..."
 * naming exactly those it can (what CURLOPT_ACCEPT_ENCODING "" would send).
 * A request puts them in its own header list: libcurl then leaves its own
 * out, instead of formatting them anew for every request. Decoding stays on
 * (CURLOPT_ACCEPT_ENCODING is still set).
 * Fills lines[] with static strings and returns how many (at most 2). */
size_t lf_transport_default_headers(const char *lines[2]);

/* Whether libcurl, signing with CURLOPT_AWS_SIGV4 for a service other than
 * S3, escapes the URL's path once more itself, as AWS does when it checks the
 * signature (its canonical URI: a %3A in the path signs as %253A): libcurl
 * 8.14 and later. An older one (Debian 12's 7.88) signs the path as it is, so
 * such a path must be given to it escaped once more, and sent as the request
 * target (lf_http_request.request_target; lf_prepare does it). */
int lf_transport_sigv4_escapes_path(void);

lf_pool *lf_pool_new(void);
void lf_pool_free(lf_pool *p);
/* An idle connection (most recently used first, so that its keep-alive
 * connections are warm) or a new one; NULL when out of memory. In a forked
 * child the parent's connections are never handed out. */
lf_conn *lf_pool_checkout(lf_pool *p);
void lf_pool_checkin(lf_pool *p, lf_conn *c);
size_t lf_pool_idle_count(lf_pool *p);

/* What one response looks like while it arrives. */
typedef struct lf_response {
    long status;
    lf_buf inbox;            /* body bytes not yet consumed by the caller */
    size_t body_bytes;       /* all body bytes received */
    size_t max_bytes;        /* cap; the transfer fails past it */
    int too_large;
    int event_stream;        /* the Content-Type names "event-stream" */
    int aws_event_stream;    /* the Content-Type names "vnd.amazon.eventstream" (Bedrock) */
    lf_buf retry_after;
    lf_buf retry_after_ms;
    lf_buf request_id;       /* x-request-id, request-id or x-amzn-requestid */
    int should_retry;        /* x-should-retry: -1 absent, 0 false, 1 true */
    lf_buf error_name;       /* x-amzn-errortype's name, before its ':' (Bedrock names an error
                              * only there: "ThrottlingException:http://internal..."); empty if none */
    /* The host's rate-limit headers as it sent them (lf_headroom_read reads
     * them): x-ratelimit-remaining-requests / -tokens, x-ratelimit-reset-
     * requests / -tokens, or Anthropic's anthropic-ratelimit-requests- /
     * -tokens- remaining and reset; empty when absent. */
    lf_buf rate_requests, rate_tokens, rate_requests_reset, rate_tokens_reset;
    int headers_done;
    /* Both taken once per lf_transfer_step in which bytes arrived (not per
     * callback: a response's head alone is half a dozen callbacks). */
    double first_byte_at;    /* monotonic seconds of the first body byte, 0 if none */
    double last_byte_at;     /* monotonic seconds of the last byte received */
    int got_bytes;           /* bytes arrived in the step under way */
    int requests_sent;       /* times libcurl was about to send the request */
    int resend_refused;      /* libcurl wanted to send it again after it was written; refused
                              * (see lf_on_prereq) */
    int restarted;           /* started again after a send that wrote nothing (lf_transfer_step) */
    struct lf_conn *hub_conn; /* a readiness-driven transfer's slot, else NULL (bytes for it wake it) */
} lf_response;

void lf_response_init(lf_response *r, size_t max_bytes);
void lf_response_reset(lf_response *r, size_t max_bytes);
void lf_response_free(lf_response *r);

typedef struct lf_http_request {
    const char *url;
    const char *request_target;  /* NULL: the URL's path; else what the request line says
                                  * (CURLOPT_REQUEST_TARGET), the URL's path being what is signed */
    struct curl_slist *headers;  /* with lf_transport_default_headers' lines */
    /* NULL, or signed with SigV4: CURLOPT_AWS_SIGV4's "aws:amz:REGION:SERVICE"
     * and the AWS access key id and secret (CURLOPT_USERNAME, _PASSWORD). */
    const char *aws_sigv4;
    const char *aws_key_id;
    const char *aws_secret;
    const char *body;
    size_t body_len;
    long connect_timeout_ms;
    char *errbuf;            /* CURL_ERROR_SIZE bytes for libcurl's message */
    int evented;             /* drive it by readiness of lf_conn_evented's fd */
    /* NULL, or the slot whose transfer this one runs beside (a hedged
     * request): a poll-driven transfer then runs in the lead's multi handle,
     * so that one curl_multi_poll waits for both; a readiness-driven one
     * needs lf_conn_watch_peer(lead, this slot) for one wait to cover both. */
    lf_conn *lead;
} lf_http_request;

/* Lets c's transfers be driven by socket readiness instead of
 * curl_multi_poll: returns a file descriptor that becomes readable whenever
 * a socket of the transfer is ready (an epoll fd, made on first use and kept
 * with the connection), or -1 where that is not available (not Linux, out of
 * descriptors). A host that waits on it can wait for many transfers in one
 * thread (a Fiber scheduler).
 *
 * Such transfers run in the thread's hub: one multi handle per thread (and
 * process) for all of them, with CURLMOPT_SOCKETFUNCTION putting each
 * socket into the epoll set of the slot whose transfer uses it, and
 * CURLMOPT_TIMERFUNCTION's one timer run by whichever slot waits. A multi
 * handle per call cost 40 kB (libcurl 7.88 allocates a 911-slot socket hash,
 * 29 kB, for the socket API, beside its connection cache, DNS cache and
 * closure handle) and a wakeup socketpair. The hub's connection cache is
 * shared by the thread's calls (no multiplexing: one transfer per
 * connection at a time, as with a multi per slot). Whatever a libcurl call
 * in one slot does for another slot's transfer (bytes, its end) wakes that
 * slot's wait through its timerfd. */
int lf_conn_evented(lf_conn *c);
/* The slot's own multi handle for poll-driven transfers, made on first use;
 * NULL when out of memory. */
CURLM *lf_conn_multi(lf_conn *c);
/* Adds a descriptor of the host's to lf_conn_evented's set for the call
 * under way: when it is readable the fd wakes the host's wait too, and
 * lf_transfer_step sets c->woken instead of handing it to libcurl. 0 on
 * success. lf_conn_unwatch_wake takes it out again (before check-in). */
int lf_conn_watch_wake(lf_conn *c, int fd);
void lf_conn_unwatch_wake(lf_conn *c);
/* Adds peer's epoll set (lf_conn_evented) to lead's, so that a wait on
 * lead's fd also ends when peer's transfer has work: two transfers of one
 * call, one wait. lead's steps leave it to peer's own. 0 on success.
 * lf_conn_unwatch_peer takes it out again. */
int lf_conn_watch_peer(lf_conn *lead, lf_conn *peer);
void lf_conn_unwatch_peer(lf_conn *lead);

/* One wait of a poll-driven transfer (the listener's wait): until the multi
 * handle has activity or timeout_ms passes. lf_wait_block runs it (the host
 * may let other threads run meanwhile); lf_wait_wake ends it at once, from
 * any thread or a signal handler (curl_multi_wakeup). */
struct lf_wait {
    CURLM *multi;
    int timeout_ms;
};
void lf_wait_block(struct lf_wait *w);
void lf_wait_wake(struct lf_wait *w);

/* Prepares c->easy for the request and adds it to c->multi. 0 on success. */
int lf_transfer_start(lf_conn *c, const lf_http_request *req, lf_response *resp);
/* Runs curl_multi_perform once; *done is set when the transfer finished
 * (*result holds its CURLcode). Never calls back into the host. Stamps
 * the response's first_byte_at / last_byte_at when bytes arrived. A transfer
 * that failed before any byte of its request was written is started again,
 * once, instead of finishing (the request never left). */
int lf_transfer_step(lf_conn *c, int *done, CURLcode *result);
/* The timeout of the wait for a readiness-driven transfer that must end
 * within ms: shortened to when libcurl's own timer is due (0 when it is due
 * now: the wait only lets other work run). Otherwise -1, no timeout: the
 * connection's timerfd, armed for that moment, makes the epoll fd readable
 * then. A timer per wait costs a Fiber scheduler more than the wait itself
 * with a thousand streams in flight (bench/README.md, the Async streams
 * bench); the timerfd is set again only when the moment comes sooner than it
 * is armed for, or after it fired.
 * Poll-driven transfers and connections without a timerfd: the shortened
 * ms. */
int lf_transfer_wait_ms(lf_conn *c, int ms);
/* Removes the easy handle from the multi (aborting the transfer if it is
 * still running: libcurl then closes its connection, which cannot be reused
 * with half a response on it). */
void lf_transfer_end(lf_conn *c);

#endif
