/* Shared by the vector index's files only (lf_vindex.c: partitions, recency,
 * lookups; lf_vindex_vec.c: vectors, codes and the scan; lf_vindex_fork.c: the
 * fork handlers). */
#ifndef LF_VINDEX_INTERNAL_H
#define LF_VINDEX_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lf_vindex.h"

/* Codes are padded with zeros to a multiple of this, so the scan loop's trip
 * count is a multiple of any vector width and needs no scalar tail. */
#define LF_VI_CODE_PAD 64
/* Float vectors are padded with zeros to a multiple of this (the rescoring's lanes). */
#define LF_VI_FLOAT_PAD 16
/* Codes of this many bytes or more are split: a head of a quarter of them is
 * scanned first for every entry, the tail only for the entries the head's
 * bound leaves in (lf_vi_nearest_locked). */
#define LF_VI_SPLIT_FROM 256

typedef struct lf_vi_part lf_vi_part;
typedef struct lf_vi_entry lf_vi_entry;

/* The index (lf_vindex.h's lf_vindex): here for lf_vindex_fork.c, which takes
 * and makes its locks; the rest is lf_vindex.c's. */
struct lf_vindex {
    pthread_rwlock_t lock;
    pthread_mutex_t lru_lock; /* the recency list, under a read lock */
    lf_vindex *live_prev, *live_next; /* every index of the process, for fork */
    size_t max_entries, max_bytes;
    size_t count, bytes, nparts;
    size_t value_bytes;       /* of every entry, for lf_vindex_stats_get */
    lf_vi_part **buckets;
    size_t nbuckets;          /* a power of two */
    lf_vi_entry *newest, *oldest;
};

/* A query or a new vector, normalised and quantised. */
typedef struct lf_vi_vec {
    float *f;      /* fstride floats */
    int8_t *c;     /* cstride codes */
    float scale, resid;
    float tnorm;   /* past the head (lf_vi_head_bytes) */
    uint64_t hash;
} lf_vi_vec;

typedef void (*lf_vi_scan_fn)(const int8_t *restrict, const int8_t *restrict, size_t, size_t, int32_t *restrict);

size_t lf_vi_round_up(size_t n, size_t to);
uint64_t lf_vi_fnv(const void *p, size_t len);
/* The scan kernel for this CPU; its name in *name when name is not NULL. */
lf_vi_scan_fn lf_vi_scan_pick(const char **name);
double lf_vi_dot_float(const float *restrict a, const float *restrict b, size_t n);
/* The head of a code row: a quarter of cstride, or all of it below LF_VI_SPLIT_FROM. */
size_t lf_vi_head_bytes(size_t cstride);
int lf_vi_vec_alloc(lf_vi_vec *v, size_t fstride, size_t cstride);
void lf_vi_vec_release(lf_vi_vec *v);
/* Normalises and quantises in (dim floats) into v; LF_VINDEX_* status. */
int lf_vi_prepare(const float *in, size_t dim, size_t fstride, size_t cstride, lf_vi_vec *v);

/* The locks of a new index, or of one in a forked child (lf_vindex_fork.c). */
void lf_vi_locks_init(lf_vindex *ix);
/* Lists a new index for the fork handlers; lf_vi_live_remove before it is freed. */
void lf_vi_live_add(lf_vindex *ix);
void lf_vi_live_remove(lf_vindex *ix);

#endif
