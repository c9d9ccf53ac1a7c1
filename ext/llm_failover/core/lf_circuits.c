/* The in-process store of circuits (lf_circuits.h): an open-addressed table
 * of entries by key, each one target's lf_circuit, its probe's holder and
 * its last failure, under one mutex held only for a lookup and a transition. */
#include "lf_circuits.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_clock.h"

#include "lf_banned.h"

typedef struct lf_circuits_entry {
    char *key;
    lf_circuit circuit;
    char *holder;             /* the token of the caller holding the probe, or NULL */
    lf_kind last_kind;
    lf_headroom headroom;     /* as it was said at headroom_at (epoch seconds) */
    double headroom_at;
} lf_circuits_entry;

struct lf_circuits {
    pthread_mutex_t lock;
    pid_t pid;                /* the process the lock and the probes belong to */
    lf_circuits_entry **slots; /* open addressing, linear probing; NULL: free */
    size_t cap;               /* a power of two, or 0 */
    size_t count;             /* written under the lock, read without it (atomics) */
};

static uint64_t lf_circuits_hash(const char *key)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *key; key++) h = (h ^ (unsigned char)*key) * 1099511628211ULL;
    return h;
}

lf_circuits *lf_circuits_new(void)
{
    lf_circuits *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    pthread_mutex_init(&t->lock, NULL);
    t->pid = lf_current_pid();
    return t;
}

static void lf_entry_free(lf_circuits_entry *e)
{
    free(e->key);
    free(e->holder);
    free(e);
}

static void lf_circuits_drop_all(lf_circuits *t)
{
    size_t i;
    for (i = 0; i < t->cap; i++)
        if (t->slots[i]) lf_entry_free(t->slots[i]);
    free(t->slots);
    t->slots = NULL;
    t->cap = 0;
    __atomic_store_n(&t->count, 0, __ATOMIC_RELEASE);
}

void lf_circuits_free(lf_circuits *t)
{
    if (!t) return;
    lf_circuits_drop_all(t);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* A forked child's copy: a lock of its own (another thread of the parent
 * may have held the copied one), and no probe: the parent reports on those. */
static void lf_circuits_after_fork(lf_circuits *t, pid_t pid)
{
    size_t i;
    pthread_mutex_init(&t->lock, NULL);
    t->pid = pid;
    for (i = 0; i < t->cap; i++) {
        lf_circuits_entry *e = t->slots[i];
        if (!e) continue;
        e->circuit.probe_until = 0;
        free(e->holder);
        e->holder = NULL;
    }
}

static void lf_lock(lf_circuits *t)
{
    pid_t pid = lf_current_pid();
    if (t->pid != pid) lf_circuits_after_fork(t, pid);
    pthread_mutex_lock(&t->lock);
}

static void lf_unlock(lf_circuits *t)
{
    pthread_mutex_unlock(&t->lock);
}

static lf_circuits_entry *lf_find(const lf_circuits *t, const char *key)
{
    size_t i;
    if (!t->cap) return NULL;
    for (i = lf_circuits_hash(key) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
        if (strcmp(t->slots[i]->key, key) == 0) return t->slots[i];
    return NULL;
}

static void lf_place(lf_circuits_entry **slots, size_t cap, lf_circuits_entry *e)
{
    size_t i = lf_circuits_hash(e->key) & (cap - 1);
    while (slots[i]) i = (i + 1) & (cap - 1);
    slots[i] = e;
}

/* The entry of `key`, made (closed) when there is none; NULL when out of
 * memory. Kept at most half full. */
static lf_circuits_entry *lf_find_or_add(lf_circuits *t, const char *key)
{
    lf_circuits_entry *e = lf_find(t, key);
    size_t len, i;

    if (e) return e;
    if (2 * (t->count + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        lf_circuits_entry **slots = calloc(cap, sizeof(*slots));
        if (!slots) return NULL;
        for (i = 0; i < t->cap; i++)
            if (t->slots[i]) lf_place(slots, cap, t->slots[i]);
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    e = calloc(1, sizeof(*e));
    len = strlen(key);
    if (!e || !(e->key = malloc(len + 1))) {
        free(e);
        return NULL;
    }
    memcpy(e->key, key, len + 1);
    e->headroom = LF_HEADROOM_UNSAID;
    lf_place(t->slots, t->cap, e);
    __atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELEASE);
    return e;
}

static int lf_holds(const lf_circuits_entry *e, const char *token)
{
    return token && e->holder && strcmp(e->holder, token) == 0;
}

static void lf_set_holder(lf_circuits_entry *e, const char *token)
{
    size_t len;
    free(e->holder);
    e->holder = NULL;
    if (!token) return;
    len = strlen(token);
    if ((e->holder = malloc(len + 1))) memcpy(e->holder, token, len + 1);
}

static void lf_no_change(lf_circuit_change *chg)
{
    chg->from = chg->to = LF_CIRCUIT_CLOSED;
    chg->reason = LF_REASON_NONE;
}

size_t lf_circuits_size(const lf_circuits *t)
{
    return __atomic_load_n(&t->count, __ATOMIC_ACQUIRE);
}

/* The entry's headroom as of now. */
static lf_headroom lf_headroom_now(const lf_circuits_entry *e, double now)
{
    return lf_headroom_aged(&e->headroom, now - e->headroom_at);
}

/* *out for an entry (NULL: none known): its route, failures, how long a
 * skip holds, its headroom as of now. */
static void lf_fill_health(const lf_circuits_entry *e, lf_route route, double now, lf_health *out)
{
    *out = (lf_health){ .route = route, .headroom = LF_HEADROOM_UNSAID };
    if (!e) return;
    out->failures = e->circuit.failures;
    out->open_for = route == LF_ROUTE_SKIP ? lf_circuit_open_for(&e->circuit, now) : 0;
    out->headroom = lf_headroom_now(e, now);
}

lf_route lf_circuits_peek(lf_circuits *t, const char *key, const char *token, double now, lf_health *out)
{
    lf_circuits_entry *e;
    lf_route route = LF_ROUTE_SEND;

    lf_fill_health(NULL, route, now, out);
    /* While no attempt has failed or said its headroom in this process (the
     * usual case without pools) there is nothing to look up. */
    if (!lf_circuits_size(t)) return LF_ROUTE_SEND;
    lf_lock(t);
    if ((e = lf_find(t, key))) {
        route = lf_circuit_peek(&e->circuit, now);
        if (route == LF_ROUTE_SKIP && e->circuit.state == LF_CIRCUIT_HALF_OPEN && lf_holds(e, token))
            route = LF_ROUTE_PROBE;
        lf_fill_health(e, route, now, out);
    }
    lf_unlock(t);
    return route;
}

lf_route lf_circuits_admit(lf_circuits *t, const char *key, const char *token, double now, double probe_ttl,
                           lf_health *out, lf_circuit_change *chg)
{
    lf_circuits_entry *e;
    lf_route route = LF_ROUTE_SEND;

    lf_fill_health(NULL, route, now, out);
    lf_no_change(chg);
    if (!lf_circuits_size(t)) return LF_ROUTE_SEND;
    lf_lock(t);
    if ((e = lf_find(t, key))) {
        route = lf_circuit_admit(&e->circuit, now, probe_ttl, chg);
        if (route == LF_ROUTE_PROBE) lf_set_holder(e, token);
        else if (route == LF_ROUTE_SKIP && lf_holds(e, token) && lf_circuit_renew_probe(&e->circuit, now, probe_ttl))
            route = LF_ROUTE_PROBE; /* its holder asking again */
        lf_fill_health(e, route, now, out);
    }
    lf_unlock(t);
    return route;
}

int lf_circuits_unsettled(lf_circuits *t, const char *key)
{
    lf_circuits_entry *e;
    int unsettled = 0;

    if (!lf_circuits_size(t)) return 0;
    lf_lock(t);
    if ((e = lf_find(t, key))) unsettled = e->circuit.failures > 0 || e->circuit.state != LF_CIRCUIT_CLOSED;
    lf_unlock(t);
    return unsettled;
}

int lf_circuits_record(lf_circuits *t, const char *key, const lf_circuit_rules *rules,
                       const lf_circuits_outcome *out, lf_circuit_change *chg)
{
    lf_circuits_entry *e;
    lf_circuit_outcome o = { .now = out->now, .success = out->success, .hold = out->hold };
    int open;

    int said = out->headroom && lf_headroom_said(out->headroom);

    lf_no_change(chg);
    if (out->success && !said && !lf_circuits_unsettled(t, key)) return 0;
    lf_lock(t);
    e = out->success && !said ? lf_find(t, key) : lf_find_or_add(t, key);
    if (!e) {
        lf_unlock(t);
        return 0; /* a success on nothing; or out of memory: the attempt is not counted */
    }
    if (said) {
        e->headroom = *out->headroom;
        e->headroom_at = out->now;
    }
    if (!out->success) e->last_kind = out->kind;
    o.probe = lf_holds(e, out->token);
    lf_circuit_record(&e->circuit, rules, &o, chg);
    /* The probe ended with the circuit's change. */
    if (e->circuit.state != LF_CIRCUIT_HALF_OPEN) lf_set_holder(e, NULL);
    open = e->circuit.state != LF_CIRCUIT_CLOSED;
    lf_unlock(t);
    return open;
}

void lf_circuits_release(lf_circuits *t, const char *key, const char *token)
{
    lf_circuits_entry *e;

    if (!token || !lf_circuits_size(t)) return;
    lf_lock(t);
    if ((e = lf_find(t, key)) && lf_holds(e, token)) {
        lf_set_holder(e, NULL);
        e->circuit.probe_until = 0;
    }
    lf_unlock(t);
}

void lf_circuits_note_headroom(lf_circuits *t, const char *key, double now, const lf_headroom *h)
{
    lf_circuits_entry *e;

    if (!lf_headroom_said(h) && !lf_circuits_size(t)) return; /* nothing to forget */
    lf_lock(t);
    e = lf_headroom_said(h) ? lf_find_or_add(t, key) : lf_find(t, key);
    if (e) {
        e->headroom = *h;
        e->headroom_at = now;
    }
    lf_unlock(t);
}

void lf_circuits_adopt(lf_circuits *t, const char *key, double now, int failures, double open_for)
{
    lf_circuits_entry *e;
    int healthy = failures == 0 && open_for <= 0;

    if (healthy && !lf_circuits_size(t)) return; /* nothing to forget */
    lf_lock(t);
    e = healthy ? lf_find(t, key) : lf_find_or_add(t, key);
    if (e) {
        lf_circuit_adopt(&e->circuit, now, failures, open_for);
        lf_set_holder(e, NULL);
    }
    lf_unlock(t);
}

int lf_circuits_get(lf_circuits *t, const char *key, double now, lf_circuits_view *out)
{
    lf_circuits_entry *e;
    int found = 0;

    if (!lf_circuits_size(t)) return 0;
    lf_lock(t);
    if ((e = lf_find(t, key))) {
        out->key = NULL;
        out->circuit = e->circuit;
        out->last_kind = e->last_kind;
        out->headroom = lf_headroom_now(e, now);
        found = 1;
    }
    lf_unlock(t);
    return found;
}

void lf_circuits_views_free(lf_circuits_view *v, long n)
{
    long i;
    for (i = 0; i < n; i++) free(v[i].key);
    free(v);
}

long lf_circuits_snapshot(lf_circuits *t, double now, lf_circuits_view **out)
{
    lf_circuits_view *v;
    size_t i;
    long n = 0;

    *out = NULL;
    lf_lock(t);
    v = calloc(t->count ? t->count : 1, sizeof(*v));
    if (!v) {
        lf_unlock(t);
        return -1;
    }
    for (i = 0; i < t->cap; i++) {
        const lf_circuits_entry *e = t->slots[i];
        size_t len;
        if (!e) continue;
        len = strlen(e->key);
        if (!(v[n].key = malloc(len + 1))) {
            lf_unlock(t);
            lf_circuits_views_free(v, n);
            return -1;
        }
        memcpy(v[n].key, e->key, len + 1);
        v[n].circuit = e->circuit;
        v[n].last_kind = e->last_kind;
        v[n].headroom = lf_headroom_now(e, now);
        n++;
    }
    lf_unlock(t);
    *out = v;
    return n;
}

void lf_circuits_clear(lf_circuits *t)
{
    lf_lock(t);
    lf_circuits_drop_all(t);
    lf_unlock(t);
}

/* ---- one call's breaker ---------------------------------------------------- */

static int lf_cc_changed(lf_circuits_call *cc, int target, const lf_circuit_change *chg, lf_kind kind)
{
    if (chg->reason == LF_REASON_NONE || !cc->on_change) return 0;
    return cc->on_change(cc->ud, target, chg, kind);
}

static int lf_cc_health(void *ud, size_t n, lf_health *out)
{
    lf_circuits_call *cc = ud;
    double now = lf_now_wall();
    size_t i;

    for (i = 0; i < n && i < cc->n_keys; i++) lf_circuits_peek(cc->table, cc->keys[i], cc->token, now, &out[i]);
    return 0;
}

static int lf_cc_admit(void *ud, int target, lf_health *out)
{
    lf_circuits_call *cc = ud;
    lf_circuit_change chg;

    lf_circuits_admit(cc->table, cc->keys[target], cc->token, lf_now_wall(), cc->probe_ttl, out, &chg);
    if (out->route == LF_ROUTE_PROBE) cc->probes |= 1u << target;
    return lf_cc_changed(cc, target, &chg, LF_OK);
}

static int lf_cc_report(void *ud, const lf_circuit_report *r, int *open)
{
    lf_circuits_call *cc = ud;
    lf_circuit_change chg;
    lf_circuits_outcome out = {
        .now = lf_now_wall(),
        .success = r->success,
        .kind = r->kind,
        .hold = r->hold,
        .token = cc->token,
        .headroom = &r->headroom,
    };

    *open = lf_circuits_record(cc->table, cc->keys[r->target], &cc->rules, &out, &chg);
    return lf_cc_changed(cc, r->target, &chg, r->kind);
}

/* A probe the call sent has been reported (the store let it go with the
 * circuit's change); one it never sent, or whose request ended in a way that
 * does not count (a 4xx, a cancel), frees the target for the next call. */
static void lf_cc_finish(void *ud)
{
    lf_circuits_call *cc = ud;
    size_t i;

    for (i = 0; i < cc->n_keys; i++)
        if (cc->probes & (1u << i)) lf_circuits_release(cc->table, cc->keys[i], cc->token);
    cc->probes = 0;
}

void lf_circuits_bind(lf_circuits_call *cc, lf_breaker *b)
{
    b->ud = cc;
    b->health = lf_cc_health;
    b->admit = lf_cc_admit;
    b->report = lf_cc_report;
    b->finish = lf_cc_finish;
}
