/* The semantic cache's in-memory vector index (issue 26): per partition (the
 * cache's tenant namespace, model and request digest, an opaque byte string),
 * entries of one dimension each holding a normalised float vector and a value
 * (bytes). A lookup answers the entry of highest cosine similarity at or above
 * a threshold, exactly: no approximate search, so the index never misses an
 * entry a full float scan would find.
 *
 * How: every vector is also kept as int8 codes (one scale per vector) and a
 * lookup first scans those (a plain loop the compiler vectorises). The
 * quantisation error of each score is bounded (the residual norms, below), so
 * the scan yields an interval per entry; only entries whose interval can reach
 * both the threshold and the best lower bound are rescored with the float
 * vectors, best upper bound first, until no interval can beat the best exact
 * score. A quantised score never decides alone.
 *
 * Bounds: at most max_entries entries and max_bytes bytes (lf_vindex_entry_bytes
 * each) over all partitions; past either, the least recently used entry (added
 * or answered) goes. A partition left empty goes too, and with it its dimension.
 *
 * Thread safe: a read-write lock (lookups share it, add and clear take it
 * alone) and a mutex for the recency list. No function calls back.
 *
 * Fork safe: a fork (through the C library) waits for the lookups and adds
 * under way in other threads, and the child gets every index whole with its
 * locks free (pthread_atfork handlers, lf_vindex.c). */
#ifndef LF_VINDEX_H
#define LF_VINDEX_H

#include <stddef.h>

/* Past this the int8 dot product could overflow 32 bits. */
#define LF_VINDEX_MAX_DIM 65536

enum lf_vindex_status {
    LF_VINDEX_OK = 0,
    LF_VINDEX_EDIM = -1,    /* the partition holds vectors of another dimension */
    LF_VINDEX_EVECTOR = -2, /* empty, longer than LF_VINDEX_MAX_DIM, a NaN or infinity, or all zero */
    LF_VINDEX_ETOOBIG = -3, /* one entry is larger than max_bytes */
    LF_VINDEX_ENOMEM = -4,
    LF_VINDEX_EARG = -5     /* a NaN threshold */
};

typedef struct lf_vindex lf_vindex;

/* A lookup's answer. value is a copy the caller frees with free(). */
typedef struct lf_vindex_hit {
    char *value;
    size_t value_len;
    double similarity;  /* cosine, of the float vectors */
    size_t rescored;    /* entries whose float vector was read (for tests and the bench) */
} lf_vindex_hit;

/* 0 for either bound means none. NULL when out of memory. */
lf_vindex *lf_vindex_new(size_t max_entries, size_t max_bytes);
void lf_vindex_free(lf_vindex *ix);

/* Adds vec (dim floats, any nonzero norm: the index normalises) with value to
 * the partition, the most recently used entry. An entry of the same partition
 * with the same normalised vector is replaced, not repeated. Evicts as the
 * bounds ask. LF_VINDEX_OK or an error (nothing changed). */
int lf_vindex_add(lf_vindex *ix, const char *part, size_t part_len, const float *vec, size_t dim,
                  const char *value, size_t value_len);

/* The entry of the partition with the highest similarity to vec that is >=
 * threshold: 1 and *hit filled (the entry becomes the most recently used), 0
 * for none (also when the partition does not exist), or an error: EDIM when
 * the partition's dimension is another, EVECTOR, EARG, ENOMEM. */
int lf_vindex_nearest(lf_vindex *ix, const char *part, size_t part_len, const float *vec, size_t dim,
                      double threshold, lf_vindex_hit *hit);

/* What the index would store of vec: dim floats of norm 1 into out (room for
 * dim), or LF_VINDEX_EVECTOR (the rule every add and lookup applies). The
 * shared indexes that search on a server check and normalise with it. */
int lf_vindex_normalise(const float *in, size_t dim, float *out);

void lf_vindex_clear(lf_vindex *ix);

/* Entries in all partitions. */
size_t lf_vindex_size(lf_vindex *ix);

typedef struct lf_vindex_stats {
    size_t entries;
    size_t bytes;       /* the sum of lf_vindex_entry_bytes: what max_bytes bounds */
    size_t partitions;
    size_t allocated;   /* what the index holds from malloc, spare capacity and tables included */
} lf_vindex_stats;

void lf_vindex_stats_get(lf_vindex *ix, lf_vindex_stats *out);

/* What one entry of dim dimensions and a value_len bytes value counts against
 * max_bytes: its float vector, its codes, its bookkeeping and its value. */
size_t lf_vindex_entry_bytes(size_t dim, size_t value_len);

/* The scan kernel in use: "avx512bw", "avx2" or "sse2" (x86-64), or "generic". */
const char *lf_vindex_kernel(void);

/* A short English message for a status. */
const char *lf_vindex_strerror(int status);

#endif
