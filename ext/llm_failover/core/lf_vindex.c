/* The vector index (lf_vindex.h). Layout: a hash table of partitions; each
 * partition keeps its entries' int8 codes, float vectors and per-entry figures
 * in contiguous arrays indexed by slot (a scan streams through memory), and a
 * removal moves the last slot into the hole. Entries of all partitions share
 * one recency list for eviction. */
#include "lf_vindex.h"
#include "lf_vindex_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_banned.h"

struct lf_vi_entry {
    lf_vi_part *part;
    size_t slot;
    struct lf_vi_entry *newer, *older; /* the recency list */
    size_t bytes;                      /* lf_vindex_entry_bytes */
    size_t value_len;
    char value[];
};

struct lf_vi_part {
    lf_vi_part *next;     /* hash chain */
    uint64_t hash;
    char *name;
    size_t name_len;
    size_t dim, cstride, fstride;
    size_t hstride, tstride; /* cstride split in head and tail (tail 0: not split) */
    size_t n, cap;
    int8_t *head;         /* cap * hstride: the first hstride codes of each entry */
    int8_t *tail;         /* cap * tstride: the rest */
    float *vecs;          /* cap * fstride, normalised */
    float *scale;         /* a code times its scale is the component */
    float *resid;         /* the norm of the vector minus its decoded codes */
    float *tnorm;         /* the norm of the vector's components past the head */
    uint64_t *vhash;      /* of the normalised vector, to find a repeat */
    lf_vi_entry **entries;
};


size_t lf_vindex_entry_bytes(size_t dim, size_t value_len)
{
    return lf_vi_round_up(dim, LF_VI_FLOAT_PAD) * sizeof(float) + lf_vi_round_up(dim, LF_VI_CODE_PAD) +
           3 * sizeof(float) + sizeof(uint64_t) + sizeof(lf_vi_entry *) + sizeof(lf_vi_entry) + value_len;
}

const char *lf_vindex_strerror(int status)
{
    switch (status) {
    case LF_VINDEX_OK: return "ok";
    case LF_VINDEX_EDIM: return "the partition holds vectors of another dimension";
    case LF_VINDEX_EVECTOR: return "a vector must have 1 to 65536 finite components, not all zero";
    case LF_VINDEX_ETOOBIG: return "the entry alone is larger than max_bytes";
    case LF_VINDEX_ENOMEM: return "out of memory";
    case LF_VINDEX_EARG: return "the threshold must be a number";
    default: return "unknown error";
    }
}

/* ---- partitions ------------------------------------------------------------ */

static lf_vi_part **lf_vi_slot_of(lf_vindex *ix, const char *name, size_t len, uint64_t hash)
{
    lf_vi_part **p = &ix->buckets[hash & (ix->nbuckets - 1)];

    while (*p && !((*p)->hash == hash && (*p)->name_len == len && memcmp((*p)->name, name, len) == 0))
        p = &(*p)->next;
    return p;
}

static void lf_vi_part_free(lf_vi_part *p)
{
    free(p->name);
    free(p->head);
    free(p->tail);
    free(p->vecs);
    free(p->scale);
    free(p->resid);
    free(p->tnorm);
    free(p->vhash);
    free(p->entries);
    free(p);
}

/* Grows the table when partitions outnumber buckets; a failure keeps the old
 * (longer chains, still correct). */
static void lf_vi_rehash(lf_vindex *ix)
{
    size_t nb = ix->nbuckets * 2;
    lf_vi_part **b;

    if (ix->nparts <= ix->nbuckets || !(b = calloc(nb, sizeof(*b)))) return;
    for (size_t i = 0; i < ix->nbuckets; i++) {
        lf_vi_part *p = ix->buckets[i];

        while (p) {
            lf_vi_part *next = p->next;
            p->next = b[p->hash & (nb - 1)];
            b[p->hash & (nb - 1)] = p;
            p = next;
        }
    }
    free(ix->buckets);
    ix->buckets = b;
    ix->nbuckets = nb;
}

static lf_vi_part *lf_vi_part_new(lf_vindex *ix, lf_vi_part **slot, const char *name, size_t len, uint64_t hash,
                                  size_t dim)
{
    lf_vi_part *p = calloc(1, sizeof(*p));

    if (!p || !(p->name = malloc(len ? len : 1))) {
        free(p);
        return NULL;
    }
    if (len) memcpy(p->name, name, len);
    p->name_len = len;
    p->hash = hash;
    p->dim = dim;
    p->cstride = lf_vi_round_up(dim, LF_VI_CODE_PAD);
    p->hstride = lf_vi_head_bytes(p->cstride);
    p->tstride = p->cstride - p->hstride;
    p->fstride = lf_vi_round_up(dim, LF_VI_FLOAT_PAD);
    *slot = p;
    ix->nparts++;
    lf_vi_rehash(ix);
    return p;
}

/* Resizes every per-slot array to cap slots (cap >= n). */
static int lf_vi_part_resize(lf_vi_part *p, size_t cap)
{
    int8_t *head = realloc(p->head, cap * p->hstride);
    if (head) p->head = head;
    /* At least a byte: realloc of 0 bytes may free and answer NULL. */
    int8_t *tail = realloc(p->tail, cap * p->tstride + 1);
    if (tail) p->tail = tail;
    float *vecs = realloc(p->vecs, cap * p->fstride * sizeof(float));
    if (vecs) p->vecs = vecs;
    float *scale = realloc(p->scale, cap * sizeof(float));
    if (scale) p->scale = scale;
    float *resid = realloc(p->resid, cap * sizeof(float));
    if (resid) p->resid = resid;
    float *tnorm = realloc(p->tnorm, cap * sizeof(float));
    if (tnorm) p->tnorm = tnorm;
    uint64_t *vhash = realloc(p->vhash, cap * sizeof(uint64_t));
    if (vhash) p->vhash = vhash;
    lf_vi_entry **entries = realloc(p->entries, cap * sizeof(lf_vi_entry *));
    if (entries) p->entries = entries;
    /* A failed realloc left its array as it was (at least n slots): still consistent. */
    if (!head || !tail || !vecs || !scale || !resid || !tnorm || !vhash || !entries) return LF_VINDEX_ENOMEM;
    p->cap = cap;
    return LF_VINDEX_OK;
}

static size_t lf_vi_part_allocated(const lf_vi_part *p)
{
    return sizeof(*p) + p->name_len +
           p->cap * (p->cstride + p->fstride * sizeof(float) + 3 * sizeof(float) + sizeof(uint64_t) +
                     sizeof(lf_vi_entry *));
}

/* ---- the recency list ------------------------------------------------------ */

static void lf_vi_unlink(lf_vindex *ix, lf_vi_entry *e)
{
    if (e->newer) e->newer->older = e->older;
    else ix->newest = e->older;
    if (e->older) e->older->newer = e->newer;
    else ix->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void lf_vi_push_newest(lf_vindex *ix, lf_vi_entry *e)
{
    e->newer = NULL;
    e->older = ix->newest;
    if (ix->newest) ix->newest->newer = e;
    ix->newest = e;
    if (!ix->oldest) ix->oldest = e;
}

static void lf_vi_touch(lf_vindex *ix, lf_vi_entry *e)
{
    if (ix->newest == e) return;
    lf_vi_unlink(ix, e);
    lf_vi_push_newest(ix, e);
}

/* ---- entries --------------------------------------------------------------- */

/* Removes e (write lock held): the last slot moves into its place; a partition
 * left empty is dropped. */
static void lf_vi_remove(lf_vindex *ix, lf_vi_entry *e)
{
    lf_vi_part *p = e->part;
    size_t s = e->slot, last = p->n - 1;

    lf_vi_unlink(ix, e);
    if (s != last) {
        memcpy(p->head + s * p->hstride, p->head + last * p->hstride, p->hstride);
        memcpy(p->tail + s * p->tstride, p->tail + last * p->tstride, p->tstride);
        memcpy(p->vecs + s * p->fstride, p->vecs + last * p->fstride, p->fstride * sizeof(float));
        p->scale[s] = p->scale[last];
        p->resid[s] = p->resid[last];
        p->tnorm[s] = p->tnorm[last];
        p->vhash[s] = p->vhash[last];
        p->entries[s] = p->entries[last];
        p->entries[s]->slot = s;
    }
    p->n--;
    ix->count--;
    ix->bytes -= e->bytes;
    ix->value_bytes -= e->value_len;
    free(e);
    if (p->n == 0) {
        lf_vi_part **slot = lf_vi_slot_of(ix, p->name, p->name_len, p->hash);
        *slot = p->next;
        ix->nparts--;
        lf_vi_part_free(p);
    } else if (p->cap > 64 && p->n < p->cap / 4) {
        lf_vi_part_resize(p, p->cap / 2); /* a failure keeps the larger arrays */
    }
}

static int lf_vi_over(const lf_vindex *ix, size_t more_entries, size_t more_bytes)
{
    return (ix->max_entries && ix->count + more_entries > ix->max_entries) ||
           (ix->max_bytes && ix->bytes + more_bytes > ix->max_bytes);
}

/* The slot of an entry of p holding exactly v's vector, or SIZE_MAX. */
static size_t lf_vi_find_same(const lf_vi_part *p, const lf_vi_vec *v)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->vhash[i] == v->hash && memcmp(p->vecs + i * p->fstride, v->f, p->dim * sizeof(float)) == 0)
            return i;
    }
    return SIZE_MAX;
}

lf_vindex *lf_vindex_new(size_t max_entries, size_t max_bytes)
{
    lf_vindex *ix = calloc(1, sizeof(*ix));

    if (!ix) return NULL;
    ix->nbuckets = 16;
    if (!(ix->buckets = calloc(ix->nbuckets, sizeof(*ix->buckets)))) {
        free(ix);
        return NULL;
    }
    ix->max_entries = max_entries;
    ix->max_bytes = max_bytes;
    lf_vi_locks_init(ix);
    lf_vi_live_add(ix);
    return ix;
}

static void lf_vi_clear_locked(lf_vindex *ix)
{
    for (size_t i = 0; i < ix->nbuckets; i++) {
        lf_vi_part *p = ix->buckets[i];

        while (p) {
            lf_vi_part *next = p->next;
            for (size_t k = 0; k < p->n; k++) free(p->entries[k]);
            lf_vi_part_free(p);
            p = next;
        }
        ix->buckets[i] = NULL;
    }
    ix->count = ix->bytes = ix->nparts = ix->value_bytes = 0;
    ix->newest = ix->oldest = NULL;
}

void lf_vindex_free(lf_vindex *ix)
{
    if (!ix) return;
    lf_vi_live_remove(ix);
    lf_vi_clear_locked(ix);
    free(ix->buckets);
    pthread_rwlock_destroy(&ix->lock);
    pthread_mutex_destroy(&ix->lru_lock);
    free(ix);
}

void lf_vindex_clear(lf_vindex *ix)
{
    pthread_rwlock_wrlock(&ix->lock);
    lf_vi_clear_locked(ix);
    pthread_rwlock_unlock(&ix->lock);
}

/* add with the write lock held; v prepared for dim. */
static int lf_vi_add_locked(lf_vindex *ix, const char *name, size_t name_len, uint64_t h, const lf_vi_vec *v,
                            size_t dim, const char *value, size_t value_len)
{
    size_t bytes = lf_vindex_entry_bytes(dim, value_len);
    lf_vi_part **slot = lf_vi_slot_of(ix, name, name_len, h);
    lf_vi_part *p = *slot;
    lf_vi_entry *e, *same = NULL;

    if (p && p->dim != dim) return LF_VINDEX_EDIM;
    if (ix->max_bytes && bytes > ix->max_bytes) return LF_VINDEX_ETOOBIG;
    if (!(e = malloc(sizeof(*e) + value_len))) return LF_VINDEX_ENOMEM;
    e->bytes = bytes;
    e->value_len = value_len;
    if (value_len) memcpy(e->value, value, value_len);

    if (p) {
        size_t s = lf_vi_find_same(p, v);
        if (s != SIZE_MAX) same = p->entries[s];
    }
    if (same) {
        /* The same vector again: the new value takes the old entry's slot. */
        p->entries[same->slot] = e;
        e->part = p;
        e->slot = same->slot;
        e->newer = same->newer;
        e->older = same->older;
        if (e->newer) e->newer->older = e;
        else ix->newest = e;
        if (e->older) e->older->newer = e;
        else ix->oldest = e;
        ix->bytes += bytes - same->bytes;
        ix->value_bytes += value_len - same->value_len;
        free(same);
        lf_vi_touch(ix, e);
        /* Evict older entries if the value grew: e is the newest, so goes last,
         * and it fits alone (checked above). */
        while (lf_vi_over(ix, 0, 0)) lf_vi_remove(ix, ix->oldest);
        return LF_VINDEX_OK;
    }

    while (ix->count && lf_vi_over(ix, 1, bytes)) lf_vi_remove(ix, ix->oldest);
    /* The eviction may have dropped the partition: look again. */
    slot = lf_vi_slot_of(ix, name, name_len, h);
    if (!(p = *slot) && !(p = lf_vi_part_new(ix, slot, name, name_len, h, dim))) {
        free(e);
        return LF_VINDEX_ENOMEM;
    }
    if (p->n == p->cap && lf_vi_part_resize(p, p->cap < 16 ? 16 : p->cap + p->cap / 2) != LF_VINDEX_OK) {
        free(e);
        if (p->n == 0) {
            *lf_vi_slot_of(ix, name, name_len, h) = p->next;
            ix->nparts--;
            lf_vi_part_free(p);
        }
        return LF_VINDEX_ENOMEM;
    }
    memcpy(p->head + p->n * p->hstride, v->c, p->hstride);
    memcpy(p->tail + p->n * p->tstride, v->c + p->hstride, p->tstride);
    memcpy(p->vecs + p->n * p->fstride, v->f, p->fstride * sizeof(float));
    p->scale[p->n] = v->scale;
    p->resid[p->n] = v->resid;
    p->tnorm[p->n] = v->tnorm;
    p->vhash[p->n] = v->hash;
    p->entries[p->n] = e;
    e->part = p;
    e->slot = p->n++;
    lf_vi_push_newest(ix, e);
    ix->count++;
    ix->bytes += bytes;
    ix->value_bytes += value_len;
    return LF_VINDEX_OK;
}

int lf_vindex_add(lf_vindex *ix, const char *part, size_t part_len, const float *vec, size_t dim,
                  const char *value, size_t value_len)
{
    size_t fstride = lf_vi_round_up(dim, LF_VI_FLOAT_PAD), cstride = lf_vi_round_up(dim, LF_VI_CODE_PAD);
    uint64_t h = lf_vi_fnv(part, part_len);
    lf_vi_vec v;
    int rc;

    if (dim == 0 || dim > LF_VINDEX_MAX_DIM) return LF_VINDEX_EVECTOR;
    if (lf_vi_vec_alloc(&v, fstride, cstride) != LF_VINDEX_OK) return LF_VINDEX_ENOMEM;
    /* Normalised and quantised before the lock: other threads go on meanwhile. */
    rc = lf_vi_prepare(vec, dim, fstride, cstride, &v);
    if (rc == LF_VINDEX_OK) {
        pthread_rwlock_wrlock(&ix->lock);
        rc = lf_vi_add_locked(ix, part, part_len, h, &v, dim, value, value_len);
        pthread_rwlock_unlock(&ix->lock);
    }
    lf_vi_vec_release(&v);
    return rc;
}

/* ---- lookups --------------------------------------------------------------- */

typedef struct lf_vi_cand {
    double upper;
    size_t slot;
} lf_vi_cand;

static int lf_vi_cand_cmp(const void *a, const void *b)
{
    const lf_vi_cand *x = a, *y = b;
    if (x->upper != y->upper) return x->upper > y->upper ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* How far a quantised score can be from the float one. With a = sa*qa + ra,
 * b = sb*qb + rb: a.b - sa*sb*qa.qb = a.rb + ra.b - ra.rb, and by
 * Cauchy-Schwarz |a.rb| <= |a||rb|, with |a| = 1 up to float rounding (the
 * 1e-5 covers it, and the double sums' rounding; the 1e-6 covers the
 * rescoring's own rounding). */
static double lf_vi_error_bound(double rq, double re)
{
    return (rq + re) * (1 + 1e-5) + rq * re + 1e-6;
}

/* The scan under the read lock: *best set to the slot of the answer, or
 * SIZE_MAX.
 *
 * Stage 1 scans every entry's head codes. q.e = qh.eh + qt.et, and
 * |qt.et| <= |qt||et| (Cauchy-Schwarz): an entry whose head score plus its
 * error bound plus that product is below the threshold cannot reach it, and
 * its tail is never read. With a high threshold (a cache's 0.9 or so) that is
 * nearly every entry, and the scan reads a quarter of the bytes. Stage 2 adds
 * the tail's dot product for the entries left, and the rescoring decides among
 * those whose bound can still win. */
static int lf_vi_nearest_locked(const lf_vi_part *p, const lf_vi_vec *q, double threshold, size_t *best,
                                double *best_score, size_t *rescored)
{
    /* Scanned in chunks into a buffer on the stack: a heap buffer of n dot
     * products would be new pages, and their faults, on every lookup. */
    enum { CHUNK = 1024 };
    int32_t dots[CHUNK];
    lf_vi_scan_fn scan = lf_vi_scan_pick(NULL);
    lf_vi_cand *cand = NULL;
    size_t ncand = 0, cap = 0;
    double floor = threshold;

    *best = SIZE_MAX;
    *rescored = 0;
    for (size_t base = 0; base < p->n; base += CHUNK) {
        size_t m = p->n - base < CHUNK ? p->n - base : CHUNK;

        scan(q->c, p->head + base * p->hstride, p->hstride, m, dots);
        for (size_t j = 0; j < m; j++) {
            size_t i = base + j;
            double err = lf_vi_error_bound(q->resid, p->resid[i]), approx, upper;
            int32_t dot = dots[j];

            if (p->tstride) {
                int32_t t;
                if ((double)dot * q->scale * p->scale[i] + err + (double)q->tnorm * p->tnorm[i] < floor) continue;
                scan(q->c + p->hstride, p->tail + i * p->tstride, p->tstride, 1, &t);
                dot += t;
            }
            approx = (double)dot * q->scale * p->scale[i];
            upper = approx + err;
            if (upper < floor) continue;
            if (approx - err > floor) floor = approx - err;
            if (ncand == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                lf_vi_cand *c = realloc(cand, ncap * sizeof(*c));
                if (!c) {
                    free(cand);
                    return LF_VINDEX_ENOMEM;
                }
                cand = c;
                cap = ncap;
            }
            cand[ncand++] = (lf_vi_cand){ upper, i };
        }
    }
    /* Candidates kept before the floor rose may be below it now: rescoring goes
     * in order of upper bound and stops below the best exact score, which is at
     * least the floor, so they are never read. */
    if (ncand > 1) qsort(cand, ncand, sizeof(*cand), lf_vi_cand_cmp);
    for (size_t k = 0; k < ncand; k++) {
        double exact;

        if (cand[k].upper < floor) break;
        if (*best != SIZE_MAX && cand[k].upper < *best_score) break;
        exact = lf_vi_dot_float(q->f, p->vecs + cand[k].slot * p->fstride, p->fstride);
        (*rescored)++;
        if (exact >= threshold && (*best == SIZE_MAX || exact > *best_score)) {
            *best = cand[k].slot;
            *best_score = exact;
        }
    }
    free(cand);
    return LF_VINDEX_OK;
}

int lf_vindex_nearest(lf_vindex *ix, const char *part, size_t part_len, const float *vec, size_t dim,
                      double threshold, lf_vindex_hit *hit)
{
    size_t fstride = lf_vi_round_up(dim, LF_VI_FLOAT_PAD), cstride = lf_vi_round_up(dim, LF_VI_CODE_PAD);
    uint64_t h = lf_vi_fnv(part, part_len);
    lf_vi_vec q;
    int rc;

    memset(hit, 0, sizeof(*hit));
    if (isnan(threshold)) return LF_VINDEX_EARG;
    if (dim == 0 || dim > LF_VINDEX_MAX_DIM) return LF_VINDEX_EVECTOR;
    if (lf_vi_vec_alloc(&q, fstride, cstride) != LF_VINDEX_OK) return LF_VINDEX_ENOMEM;
    rc = lf_vi_prepare(vec, dim, fstride, cstride, &q);
    if (rc == LF_VINDEX_OK) {
        lf_vi_part *p;

        pthread_rwlock_rdlock(&ix->lock);
        p = *lf_vi_slot_of(ix, part, part_len, h);
        if (!p) {
            rc = 0;
        } else if (p->dim != dim) {
            rc = LF_VINDEX_EDIM;
        } else {
            size_t best;
            double score = 0;

            rc = lf_vi_nearest_locked(p, &q, threshold, &best, &score, &hit->rescored);
            if (rc == LF_VINDEX_OK && best != SIZE_MAX) {
                lf_vi_entry *e = p->entries[best];

                rc = 1;
                hit->similarity = score;
                hit->value_len = e->value_len;
                if (!(hit->value = malloc(e->value_len ? e->value_len : 1))) {
                    rc = LF_VINDEX_ENOMEM;
                } else {
                    if (e->value_len) memcpy(hit->value, e->value, e->value_len);
                    pthread_mutex_lock(&ix->lru_lock);
                    lf_vi_touch(ix, e);
                    pthread_mutex_unlock(&ix->lru_lock);
                }
            }
        }
        pthread_rwlock_unlock(&ix->lock);
    }
    lf_vi_vec_release(&q);
    return rc;
}

void lf_vindex_stats_get(lf_vindex *ix, lf_vindex_stats *out)
{
    size_t allocated;

    pthread_rwlock_rdlock(&ix->lock);
    allocated = sizeof(*ix) + ix->nbuckets * sizeof(*ix->buckets);
    for (size_t i = 0; i < ix->nbuckets; i++) {
        for (const lf_vi_part *p = ix->buckets[i]; p; p = p->next) allocated += lf_vi_part_allocated(p);
    }
    allocated += ix->count * sizeof(lf_vi_entry) + ix->value_bytes;
    out->entries = ix->count;
    out->bytes = ix->bytes;
    out->partitions = ix->nparts;
    out->allocated = allocated;
    pthread_rwlock_unlock(&ix->lock);
}

size_t lf_vindex_size(lf_vindex *ix)
{
    size_t n;

    pthread_rwlock_rdlock(&ix->lock);
    n = ix->count;
    pthread_rwlock_unlock(&ix->lock);
    return n;
}
