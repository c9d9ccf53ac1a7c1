/* The hub: readiness-driven transfers (lf_conn_evented), for a host that
 * waits on one descriptor per call (a Fiber scheduler). One multi handle per
 * thread (and process) runs all of them: CURLMOPT_SOCKETFUNCTION puts each
 * socket into the epoll set of the slot whose transfer uses it, and
 * CURLMOPT_TIMERFUNCTION's one timer is run by whichever slot waits; a
 * slot's timerfd in its epoll set ends its wait when the hub needs it to. */
#include "lf_transport_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/timerfd.h>
#endif

#include "lf_clock.h"

#include "lf_banned.h"

#ifdef __linux__
/* Idle keep-alive connections a hub's cache keeps. */
#define LF_HUB_MAX_CONNECTS 32L

/* One thread's readiness-driven transfers (see lf_conn_evented). */
struct lf_hub {
    CURLM *multi;
    pid_t pid;
    double timer_at;       /* monotonic seconds when libcurl wants to run, -1 for none */
    lf_conn *current;      /* the slot whose libcurl call is under way */
    lf_conn *keeper;       /* the slot whose next wait ends by timer_at */
    lf_conn *active;       /* the slots with a transfer in multi */
};
typedef struct lf_hub lf_hub;

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

void lf_hub_saw(lf_conn *c)
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


int lf_hub_attach(lf_conn *c, lf_response *resp)
{
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
    return -1;
}

void lf_hub_detach(lf_conn *c)
{
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
}

int lf_hub_restart(lf_conn *c)
{
    lf_hub_remove(c->hub, c);
    return lf_hub_add(c->hub, c);
}

/* One pass of a readiness-driven transfer: the sockets that are ready now
 * (the epoll set, without waiting), then the hub's timer when it is due or
 * when no socket was ready (the wait ended on its timerfd or timeout, or the
 * slot was woken: a timer libcurl did not announce again is never lost that
 * way). Finished transfers' messages go to their slots. */
int lf_hub_drive(lf_conn *c, int *running)
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
        if (ev[i].data.fd == c->peer_fd) continue; /* the peer's own step drives it */
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

#else
void lf_hub_saw(lf_conn *c)
{
    (void)c;
}

int lf_hub_attach(lf_conn *c, lf_response *resp)
{
    (void)c;
    (void)resp;
    return -1;
}

void lf_hub_detach(lf_conn *c)
{
    c->hub = NULL;
}

int lf_hub_restart(lf_conn *c)
{
    (void)c;
    return -1;
}

int lf_hub_drive(lf_conn *c, int *running)
{
    (void)c;
    (void)running;
    return -1;
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

int lf_conn_watch_peer(lf_conn *lead, lf_conn *peer)
{
#ifdef __linux__
    struct epoll_event ev;

    if (lead->evfd < 0 || peer->evfd < 0 || lead->peer_fd >= 0) return -1;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = peer->evfd;
    if (epoll_ctl(lead->evfd, EPOLL_CTL_ADD, peer->evfd, &ev) != 0) return -1;
    lead->peer_fd = peer->evfd;
    return 0;
#else
    (void)lead;
    (void)peer;
    return -1;
#endif
}

void lf_conn_unwatch_peer(lf_conn *lead)
{
#ifdef __linux__
    if (lead->peer_fd >= 0) epoll_ctl(lead->evfd, EPOLL_CTL_DEL, lead->peer_fd, NULL);
#endif
    lead->peer_fd = -1;
}

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
