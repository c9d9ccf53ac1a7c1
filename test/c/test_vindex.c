/* The vector index (lf_vindex): the quantised scan with its float rescoring
 * against a plain double scan of the same vectors, the bounds, partitions,
 * dimensions, bad input, threads sharing one index, and a fork while they
 * work. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lf_test.h"
#include "lf_vindex.h"

#include "lf_banned.h"

/* A small deterministic generator (xorshift64*), so a failure repeats. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* Uniform in [-1, 1). */
static float rng_unit(void)
{
    return (float)((double)(rng_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Roughly normal (sum of uniforms): embeddings' components look like this. */
static float rng_gauss(void)
{
    return rng_unit() + rng_unit() + rng_unit() + rng_unit();
}

static double ref_cosine(const float *a, const float *b, size_t dim)
{
    double ab = 0, aa = 0, bb = 0;

    for (size_t i = 0; i < dim; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

static int add_id(lf_vindex *ix, const char *part, const float *v, size_t dim, size_t id)
{
    char value[32];
    int len = snprintf(value, sizeof(value), "%zu", id);
    return lf_vindex_add(ix, part, strlen(part), v, dim, value, (size_t)len);
}

/* n entries of dim dimensions, some in tight clusters (near duplicates, where
 * quantised scores tie and only the rescoring can tell), queries near some
 * entries and anywhere: the index's answer is the plain scan's best at or
 * above the threshold every time. Similarities come from the float-normalised
 * vectors, so they match the plain scan's to float precision (1e-6). */
static void check_agreement(size_t n, size_t dim, size_t queries, double threshold)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float *vecs = malloc(n * dim * sizeof(float)), *q = malloc(dim * sizeof(float));
    size_t clusters = n / 20, rescored = 0, hits = 0;

    for (size_t i = 0; i < n; i++) {
        float *v = vecs + i * dim;
        if (i < clusters * 10) {
            /* Ten members per cluster: a centre plus small noise. */
            const float *centre = vecs + (i / 10 * 10) * dim;
            for (size_t k = 0; k < dim; k++) v[k] = i % 10 == 0 ? rng_gauss() : centre[k] + 0.02f * rng_gauss();
        } else {
            for (size_t k = 0; k < dim; k++) v[k] = rng_gauss();
        }
        LF_CHECK_INT(add_id(ix, "p", v, dim, i), LF_VINDEX_OK);
    }
    LF_CHECK_INT(lf_vindex_size(ix), n);

    for (size_t t = 0; t < queries; t++) {
        const float *near = vecs + (rng_next() % n) * dim;
        double noise = (double)(t % 4) * 0.15; /* 0: a stored vector itself */
        double best = -2;
        size_t best_id = SIZE_MAX;
        lf_vindex_hit hit;
        int rc;

        for (size_t k = 0; k < dim; k++) q[k] = t % 5 == 4 ? rng_gauss() : near[k] + (float)noise * rng_gauss();
        for (size_t i = 0; i < n; i++) {
            double c = ref_cosine(q, vecs + i * dim, dim);
            if (c > best) {
                best = c;
                best_id = i;
            }
        }
        rc = lf_vindex_nearest(ix, "p", 1, q, dim, threshold, &hit);
        if (fabs(best - threshold) < 1e-6) {
            /* On the threshold to float precision: either answer is right. */
            free(hit.value);
            continue;
        }
        if (best < threshold) {
            LF_CHECK_INT(rc, 0);
        } else {
            LF_CHECK_INT(rc, 1);
            if (rc == 1) {
                char *end;
                size_t got = strtoul(hit.value, &end, 10);
                double got_ref = ref_cosine(q, vecs + got * dim, dim);

                hits++;
                /* The same entry, or one as similar to float precision. */
                if (got != best_id) LF_CHECK(fabs(got_ref - best) < 1e-6);
                LF_CHECK(fabs(hit.similarity - best) < 1e-6);
                LF_CHECK(hit.rescored >= 1);
                rescored += hit.rescored;
            }
        }
        free(hit.value);
    }
    LF_CHECK(hits > 0);
    /* The point of the codes: far fewer float vectors read than entries. */
    if (hits) LF_CHECK(rescored / hits < n / 4);
    free(vecs);
    free(q);
    lf_vindex_free(ix);
}

static void test_agrees_with_float_scan_1536(void)
{
    check_agreement(2000, 1536, 80, 0.5);
}

static void test_agrees_with_float_scan_small_dims(void)
{
    check_agreement(5000, 24, 1500, 0.9);
    check_agreement(3000, 100, 800, -1.0); /* every entry qualifies: the best one wins */
}

static void test_exact_vector_found(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float a[3] = {1, 2, 3}, b[3] = {3, 2, 1}, a2[3] = {2, 4, 6};
    lf_vindex_hit hit;

    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 3, "a", 1), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, b, 3, "b", 1), LF_VINDEX_OK);
    /* Any norm: a2 is a scaled. */
    LF_CHECK_INT(lf_vindex_nearest(ix, "t", 1, a2, 3, 0.99, &hit), 1);
    LF_CHECK(hit.value_len == 1 && hit.value[0] == 'a');
    LF_CHECK(fabs(hit.similarity - 1) < 1e-6);
    free(hit.value);
    /* cos(a, b) = 10/14: below the threshold, above a lower one. */
    LF_CHECK_INT(lf_vindex_nearest(ix, "t", 1, b, 3, 0.99, &hit), 1);
    LF_CHECK(hit.value[0] == 'b');
    free(hit.value);
    LF_CHECK_INT(lf_vindex_nearest(ix, "t", 1, (float[]){1, 0, 0}, 3, 0.9, &hit), 0);
    LF_CHECK(hit.value == NULL);
    lf_vindex_free(ix);
}

static void test_same_vector_replaces(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float a[4] = {1, 0, 1, 0};
    lf_vindex_hit hit;

    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 4, "old", 3), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 4, "newer", 5), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_size(ix), 1);
    LF_CHECK_INT(lf_vindex_nearest(ix, "t", 1, a, 4, 0.5, &hit), 1);
    LF_CHECK(hit.value_len == 5 && memcmp(hit.value, "newer", 5) == 0);
    free(hit.value);
    /* Another partition keeps its own. */
    LF_CHECK_INT(lf_vindex_add(ix, "u", 1, a, 4, "u", 1), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_size(ix), 2);
    lf_vindex_free(ix);
}

static void test_partitions_isolated(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float a[2] = {1, 0}, b[3] = {0, 1, 0};
    lf_vindex_hit hit;
    lf_vindex_stats st;

    LF_CHECK_INT(lf_vindex_add(ix, "tenant-a", 8, a, 2, "A", 1), LF_VINDEX_OK);
    /* Another partition may have another dimension. */
    LF_CHECK_INT(lf_vindex_add(ix, "tenant-b", 8, b, 3, "B", 1), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_nearest(ix, "tenant-c", 8, a, 2, -1, &hit), 0);
    LF_CHECK_INT(lf_vindex_nearest(ix, "tenant-a", 8, a, 2, -1, &hit), 1);
    LF_CHECK(hit.value[0] == 'A');
    free(hit.value);
    LF_CHECK_INT(lf_vindex_nearest(ix, "tenant-b", 8, b, 3, -1, &hit), 1);
    LF_CHECK(hit.value[0] == 'B');
    free(hit.value);
    /* A prefix of a partition's name is another partition; so is one with a NUL. */
    LF_CHECK_INT(lf_vindex_nearest(ix, "tenant-", 7, a, 2, -1, &hit), 0);
    LF_CHECK_INT(lf_vindex_nearest(ix, "tenant-a\0x", 10, a, 2, -1, &hit), 0);
    lf_vindex_stats_get(ix, &st);
    LF_CHECK_INT(st.partitions, 2);
    /* Many partitions: the table grows, each still found. */
    for (int i = 0; i < 500; i++) {
        char name[16];
        int len = snprintf(name, sizeof(name), "p%d", i);
        float v[2] = {1, (float)i};
        LF_CHECK_INT(lf_vindex_add(ix, name, (size_t)len, v, 2, name, (size_t)len), LF_VINDEX_OK);
    }
    for (int i = 0; i < 500; i++) {
        char name[16];
        int len = snprintf(name, sizeof(name), "p%d", i);
        float v[2] = {1, (float)i};
        LF_CHECK_INT(lf_vindex_nearest(ix, name, (size_t)len, v, 2, 0.999, &hit), 1);
        LF_CHECK(hit.value && hit.value_len == (size_t)len && memcmp(hit.value, name, (size_t)len) == 0);
        free(hit.value);
    }
    lf_vindex_free(ix);
}

static void test_dimensions_checked(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float a[3] = {1, 2, 3};
    lf_vindex_hit hit;

    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 3, "a", 1), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 2, "a", 1), LF_VINDEX_EDIM);
    LF_CHECK_INT(lf_vindex_nearest(ix, "t", 1, a, 2, 0.5, &hit), LF_VINDEX_EDIM);
    LF_CHECK_INT(lf_vindex_size(ix), 1);
    /* Once empty (cleared or evicted), the partition takes another dimension. */
    lf_vindex_clear(ix);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, a, 2, "a", 1), LF_VINDEX_OK);
    lf_vindex_free(ix);
}

static void test_bad_input(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float zero[3] = {0, 0, 0}, nan_v[3] = {1, NAN, 0}, inf_v[3] = {INFINITY, 1, 0}, ok[3] = {1, 0, 0};
    float tiny[2] = {1e-45f, 0}; /* a denormal: normalised in double, it is (1, 0) */
    lf_vindex_hit hit;

    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, zero, 3, "v", 1), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, nan_v, 3, "v", 1), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, inf_v, 3, "v", 1), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, ok, 0, "v", 1), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, ok, LF_VINDEX_MAX_DIM + 1, "v", 1), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_add(ix, "t", 1, tiny, 2, "v", 1), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_size(ix), 1);
    LF_CHECK_INT(lf_vindex_nearest(ix, "u", 1, zero, 3, 0.5, &hit), LF_VINDEX_EVECTOR);
    LF_CHECK_INT(lf_vindex_nearest(ix, "u", 1, ok, 3, NAN, &hit), LF_VINDEX_EARG);
    /* An empty value and an empty partition name are values like any other. */
    LF_CHECK_INT(lf_vindex_add(ix, "", 0, ok, 3, "", 0), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_nearest(ix, "", 0, ok, 3, 0.5, &hit), 1);
    LF_CHECK_INT(hit.value_len, 0);
    free(hit.value);
    LF_CHECK(strlen(lf_vindex_strerror(LF_VINDEX_EDIM)) > 0);
    lf_vindex_free(ix);
}

/* Entries 0..n-1 of 8 dimensions, each its own axis-ish direction. */
static void unit_vec(float v[8], int i)
{
    for (int k = 0; k < 8; k++) v[k] = 0.01f;
    v[i % 8] = 1.0f + (float)(i / 8);
    v[(i / 8) % 8] += 0.5f;
}

static int has(lf_vindex *ix, const char *part, int i)
{
    float v[8];
    lf_vindex_hit hit;
    char want[16];
    int rc, same;

    unit_vec(v, i);
    snprintf(want, sizeof(want), "%d", i);
    rc = lf_vindex_nearest(ix, part, strlen(part), v, 8, 0.99999, &hit);
    same = rc == 1 && hit.value_len == strlen(want) && memcmp(hit.value, want, hit.value_len) == 0;
    free(hit.value);
    return same;
}

static void test_lru_by_entries(void)
{
    lf_vindex *ix = lf_vindex_new(3, 0);
    float v[8];

    for (int i = 0; i < 3; i++) {
        unit_vec(v, i);
        LF_CHECK_INT(add_id(ix, i == 1 ? "b" : "a", v, 8, (size_t)i), LF_VINDEX_OK);
    }
    /* Answering 0 makes it recent: 1 (partition b) is now the oldest. */
    LF_CHECK(has(ix, "a", 0));
    unit_vec(v, 3);
    LF_CHECK_INT(add_id(ix, "a", v, 8, 3), LF_VINDEX_OK);
    LF_CHECK_INT(lf_vindex_size(ix), 3);
    LF_CHECK(!has(ix, "b", 1));
    LF_CHECK(has(ix, "a", 0) && has(ix, "a", 2) && has(ix, "a", 3));
    /* b was emptied and is gone: it may take another dimension now. */
    LF_CHECK_INT(lf_vindex_add(ix, "b", 1, v, 5, "x", 1), LF_VINDEX_OK);
    {
        lf_vindex_stats st;
        lf_vindex_stats_get(ix, &st);
        LF_CHECK_INT(st.entries, 3);
        LF_CHECK_INT(st.partitions, 2);
    }
    lf_vindex_free(ix);
}

static void test_lru_by_bytes(void)
{
    size_t one = lf_vindex_entry_bytes(8, 1); /* values "0" to "9" */
    lf_vindex *ix = lf_vindex_new(0, one * 4);
    char *big = calloc(1, one * 8);
    float v[8], wide[64];
    lf_vindex_stats st;

    for (int i = 0; i < 10; i++) {
        unit_vec(v, i);
        LF_CHECK_INT(add_id(ix, "a", v, 8, (size_t)i), LF_VINDEX_OK);
        lf_vindex_stats_get(ix, &st);
        LF_CHECK(st.bytes <= one * 4);
    }
    LF_CHECK_INT(lf_vindex_size(ix), 4);
    LF_CHECK(has(ix, "a", 9) && has(ix, "a", 6) && !has(ix, "a", 5));
    /* A value of one entry's size more (2 * one + 9 bytes) pushes out three. */
    unit_vec(v, 20);
    LF_CHECK_INT(lf_vindex_add(ix, "a", 1, v, 8, big, one + 10), LF_VINDEX_OK);
    lf_vindex_stats_get(ix, &st);
    LF_CHECK(st.bytes <= one * 4);
    LF_CHECK_INT(st.entries, 2);
    LF_CHECK(has(ix, "a", 6) && !has(ix, "a", 9)); /* 6 was answered after 9 */
    /* An entry larger than the bound alone is refused, nothing evicted for it. */
    for (int k = 0; k < 64; k++) wide[k] = 1;
    LF_CHECK_INT(lf_vindex_add(ix, "z", 1, wide, 64, big, one * 4), LF_VINDEX_ETOOBIG);
    LF_CHECK_INT(lf_vindex_size(ix), 2);
    free(big);
    lf_vindex_free(ix);
}

static void test_shrinks_and_regrows(void)
{
    lf_vindex *ix = lf_vindex_new(0, 0);
    float v[8];
    lf_vindex_stats full, small;

    for (int i = 0; i < 1000; i++) {
        unit_vec(v, i);
        v[7] += (float)i * 0.001f;
        LF_CHECK_INT(add_id(ix, "a", v, 8, (size_t)i), LF_VINDEX_OK);
    }
    lf_vindex_stats_get(ix, &full);
    LF_CHECK_INT(full.entries, 1000);
    LF_CHECK(full.allocated >= 1000 * lf_vindex_entry_bytes(8, 3) / 2);
    lf_vindex_clear(ix);
    lf_vindex_stats_get(ix, &small);
    LF_CHECK_INT(small.entries, 0);
    LF_CHECK_INT(small.bytes, 0);
    LF_CHECK(small.allocated < full.allocated / 10);
    lf_vindex_free(ix);
}

/* Four threads add and look up in one index, two partitions; every lookup of
 * a thread's own last vector finds it (the bound is far away). ASan and the
 * lock's discipline do the rest. */
typedef struct worker {
    lf_vindex *ix;
    int id;
    int missed;
} worker;

static void *work(void *p)
{
    worker *w = p;
    char part[8];
    size_t plen = (size_t)snprintf(part, sizeof(part), "w%d", w->id % 2);

    for (int i = 0; i < 300; i++) {
        float v[32];
        lf_vindex_hit hit;
        for (int k = 0; k < 32; k++) v[k] = (float)((w->id * 7919 + i * 31 + k * k) % 97) - 48.0f;
        if (lf_vindex_add(w->ix, part, plen, v, 32, part, plen) != LF_VINDEX_OK) w->missed++;
        if (lf_vindex_nearest(w->ix, part, plen, v, 32, 0.999, &hit) != 1) w->missed++;
        free(hit.value);
    }
    return NULL;
}

static void test_threads(void)
{
    lf_vindex *ix = lf_vindex_new(100000, 0);
    pthread_t t[4];
    worker w[4];

    for (int i = 0; i < 4; i++) {
        w[i] = (worker){ ix, i, 0 };
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        LF_CHECK_INT(w[i].missed, 0);
    }
    lf_vindex_free(ix);
}

/* Forks while other threads scan and add in loops: the child finds the
 * index whole (every entry the parent had before the threads started, the
 * answer right) and usable (an add, a lookup, a clear: each one would wait
 * for ever on a lock copied held). alarm() turns a deadlock into a failed
 * child. */
typedef struct churner {
    lf_vindex *ix;
    int adds; /* 0: looks up */
    volatile int *stop;
    int missed;
} churner;

#define FORK_DIM 256
#define FORK_ENTRIES 2000

static void fork_vec(float *v, size_t i)
{
    for (size_t k = 0; k < FORK_DIM; k++) v[k] = (float)sin((double)i * 0.37 + (double)k * 0.011);
}

static void *churn(void *p)
{
    churner *c = p;
    float v[FORK_DIM];

    for (size_t i = 0; !__atomic_load_n(c->stop, __ATOMIC_RELAXED); i++) {
        lf_vindex_hit hit;

        fork_vec(v, i % FORK_ENTRIES);
        if (c->adds) {
            if (lf_vindex_add(c->ix, "added", 5, v, FORK_DIM, "x", 1) != LF_VINDEX_OK) c->missed++;
        } else {
            if (lf_vindex_nearest(c->ix, "p", 1, v, FORK_DIM, 0.999, &hit) != 1) c->missed++;
            free(hit.value);
        }
    }
    return NULL;
}

static int child_uses_index(lf_vindex *ix)
{
    float v[FORK_DIM];
    lf_vindex_hit hit;
    int ok = 1;

    alarm(30);
    fork_vec(v, 1234);
    ok &= lf_vindex_nearest(ix, "p", 1, v, FORK_DIM, 0.999, &hit) == 1;
    ok &= hit.value && hit.value_len == 4 && memcmp(hit.value, "1234", 4) == 0;
    free(hit.value);
    ok &= lf_vindex_size(ix) >= FORK_ENTRIES;
    ok &= lf_vindex_add(ix, "child", 5, v, FORK_DIM, "c", 1) == LF_VINDEX_OK;
    ok &= lf_vindex_nearest(ix, "child", 5, v, FORK_DIM, 0.999, &hit) == 1;
    free(hit.value);
    lf_vindex_clear(ix);
    ok &= lf_vindex_size(ix) == 0;
    return ok;
}

/* GCC 12's AddressSanitizer (Debian 12) does not take its allocator's locks
 * around a fork: a child forked while another thread is inside malloc or free
 * waits for ever on the allocator's mutex (seen in gdb: the child's free in
 * lf_vindex_clear blocked in SizeClassAllocator64::GetFromAllocator). That is
 * the sanitizer's, not the index's, so under ASan this case is left to
 * spec/llm_failover/cache/memory_index_spec.rb, which forks beside scanning threads against the
 * normal build in `rake spec`. */
#if defined(__SANITIZE_ADDRESS__)
#define LF_FORK_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LF_FORK_UNDER_ASAN 1
#endif
#endif

static void test_fork_during_scans(void)
{
#ifdef LF_FORK_UNDER_ASAN
    fprintf(stderr, "  fork beside threads: left to spec/llm_failover/cache/memory_index_spec.rb under ASan\n");
    return;
#endif
    lf_vindex *ix = lf_vindex_new(0, 0);
    volatile int stop = 0;
    pthread_t t[3];
    churner c[3];
    float v[FORK_DIM];
    int children_ok = 0;

    for (size_t i = 0; i < FORK_ENTRIES; i++) {
        char value[16];
        int n = snprintf(value, sizeof(value), "%zu", i);

        fork_vec(v, i);
        LF_CHECK_INT(lf_vindex_add(ix, "p", 1, v, FORK_DIM, value, (size_t)n), LF_VINDEX_OK);
    }
    for (int i = 0; i < 3; i++) {
        c[i] = (churner){ ix, i == 2, &stop, 0 };
        pthread_create(&t[i], NULL, churn, &c[i]);
    }
    for (int round = 0; round < 20; round++) {
        int status = 0;
        pid_t pid = fork();

        if (pid == 0) _exit(child_uses_index(ix) ? 0 : 1);
        LF_CHECK(pid > 0);
        if (pid <= 0) break;
        LF_CHECK(waitpid(pid, &status, 0) == pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) children_ok++;
        else fprintf(stderr, "fork round %d: child status %d\n", round, status);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        LF_CHECK_INT(c[i].missed, 0);
    }
    LF_CHECK_INT(children_ok, 20);
    lf_vindex_free(ix);
}

int main(void)
{
    LF_CHECK(lf_vindex_kernel() != NULL);
    LF_RUN(test_exact_vector_found);
    LF_RUN(test_same_vector_replaces);
    LF_RUN(test_partitions_isolated);
    LF_RUN(test_dimensions_checked);
    LF_RUN(test_bad_input);
    LF_RUN(test_lru_by_entries);
    LF_RUN(test_lru_by_bytes);
    LF_RUN(test_shrinks_and_regrows);
    LF_RUN(test_threads);
    LF_RUN(test_fork_during_scans);
    LF_RUN(test_agrees_with_float_scan_small_dims);
    LF_RUN(test_agrees_with_float_scan_1536);
    return lf_test_summary("vindex");
}
