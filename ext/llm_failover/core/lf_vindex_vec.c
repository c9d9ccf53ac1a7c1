/* The vector index's vectors (lf_vindex.h, lf_vindex_internal.h): normalising
 * and quantising a vector to int8 codes, the code scan the compiler vectorises
 * (built for SSE2, AVX2 and AVX-512BW, picked at run time), and the exact float
 * dot product of the rescoring. The partitions, the recency list and lookups
 * are lf_vindex.c's. */
#include "lf_vindex.h"
#include "lf_vindex_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_banned.h"

size_t lf_vi_round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

uint64_t lf_vi_fnv(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* A hash of a vector's floats (FNV-1a over 32-bit words: one step per
 * component instead of four), only to find a repeat quickly. */
static uint64_t lf_vi_hash_floats(const float *f, size_t n)
{
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, &f[i], sizeof(w));
        h ^= w;
        h *= 1099511628211ULL;
    }
    return h;
}


/* ---- the scan kernel ----------------------------------------------------- */

/* out[i] = the dot product of q and row i of codes, n rows of stride bytes
 * (stride a multiple of LF_VI_CODE_PAD). Plain C for the compiler to
 * vectorise: int8 widened to int16, multiplied, summed into int32 (pmaddwd);
 * an int32 sum of integers is exact in any order, so vectorising changes
 * nothing. The stride is rewritten as a multiple of the padding so the
 * vectoriser knows no tail is needed (GCC's -O2 cost model vectorises only
 * such loops). */
static inline __attribute__((always_inline)) void lf_vi_scan_body(const int8_t *restrict q,
                                                                  const int8_t *restrict codes, size_t stride,
                                                                  size_t n, int32_t *restrict out)
{
    size_t m = stride / LF_VI_CODE_PAD * LF_VI_CODE_PAD;

    for (size_t i = 0; i < n; i++) {
        const int8_t *restrict c = codes + i * stride;
        int32_t s = 0;

        for (size_t j = 0; j < m; j++) s += (int16_t)q[j] * (int16_t)c[j];
        out[i] = s;
    }
}

static void lf_vi_scan_generic(const int8_t *restrict q, const int8_t *restrict codes, size_t stride, size_t n,
                               int32_t *restrict out)
{
    lf_vi_scan_body(q, codes, stride, n, out);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same loop compiled for AVX2 (32 bytes a step instead of 16) and
 * AVX-512BW (64), picked at run time by what the CPU has: each step halves the
 * scan's time where the codes are in cache (bench/README.md). */
static __attribute__((target("avx2"))) void lf_vi_scan_avx2(const int8_t *restrict q,
                                                            const int8_t *restrict codes, size_t stride,
                                                            size_t n, int32_t *restrict out)
{
    lf_vi_scan_body(q, codes, stride, n, out);
}

static __attribute__((target("avx512bw"))) void lf_vi_scan_avx512(const int8_t *restrict q,
                                                                  const int8_t *restrict codes, size_t stride,
                                                                  size_t n, int32_t *restrict out)
{
    lf_vi_scan_body(q, codes, stride, n, out);
}
#endif


lf_vi_scan_fn lf_vi_scan_pick(const char **name)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512bw")) {
        if (name) *name = "avx512bw";
        return lf_vi_scan_avx512;
    }
    if (__builtin_cpu_supports("avx2")) {
        if (name) *name = "avx2";
        return lf_vi_scan_avx2;
    }
    if (name) *name = "sse2";
#else
    if (name) *name = "generic";
#endif
    return lf_vi_scan_generic;
}

const char *lf_vindex_kernel(void)
{
    const char *name;
    lf_vi_scan_pick(&name);
    return name;
}

/* The exact score: a double sum in 8 fixed lanes (n a multiple of 8), the
 * same order however the compiler builds it. */
double lf_vi_dot_float(const float *restrict a, const float *restrict b, size_t n)
{
    double lane[8] = {0};

    for (size_t i = 0; i < n; i += 8) {
        for (size_t k = 0; k < 8; k++) lane[k] += (double)a[i + k] * (double)b[i + k];
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* ---- vectors --------------------------------------------------------------- */

/* The head's share of cstride code bytes: all of them below LF_VI_SPLIT_FROM,
 * else a quarter (a multiple of the padding). */
size_t lf_vi_head_bytes(size_t cstride)
{
    if (cstride < LF_VI_SPLIT_FROM) return cstride;
    return lf_vi_round_up(cstride / 4, LF_VI_CODE_PAD);
}

int lf_vindex_normalise(const float *in, size_t dim, float *out)
{
    double sum = 0, norm;
    float maxabs = 0;

    if (dim == 0 || dim > LF_VINDEX_MAX_DIM) return LF_VINDEX_EVECTOR;
    for (size_t i = 0; i < dim; i++) {
        if (!isfinite(in[i])) return LF_VINDEX_EVECTOR;
        sum += (double)in[i] * in[i];
    }
    if (!(sum > 0) || !isfinite(sum)) return LF_VINDEX_EVECTOR;
    norm = sqrt(sum);
    for (size_t i = 0; i < dim; i++) {
        out[i] = (float)(in[i] / norm);
        if (fabsf(out[i]) > maxabs) maxabs = fabsf(out[i]);
    }
    if (!(maxabs > 0)) return LF_VINDEX_EVECTOR; /* components too small for a float once normalised */
    return LF_VINDEX_OK;
}

/* Normalises and quantises in into v (whose f and c have room for the padded
 * sizes). LF_VINDEX_OK or LF_VINDEX_EVECTOR. */
int lf_vi_prepare(const float *in, size_t dim, size_t fstride, size_t cstride, lf_vi_vec *v)
{
    double rsum = 0;
    float maxabs = 0;
    int rc;

    memset(v->f, 0, fstride * sizeof(float));
    memset(v->c, 0, cstride);
    if ((rc = lf_vindex_normalise(in, dim, v->f)) != LF_VINDEX_OK) return rc;
    for (size_t i = 0; i < dim; i++) {
        if (fabsf(v->f[i]) > maxabs) maxabs = fabsf(v->f[i]);
    }
    v->scale = maxabs / 127.0f;
    for (size_t i = 0; i < dim; i++) {
        long q = lrintf(v->f[i] / v->scale);
        double r;

        if (q > 127) q = 127;
        if (q < -127) q = -127;
        v->c[i] = (int8_t)q;
        r = (double)v->f[i] - (double)q * v->scale;
        rsum += r * r;
    }
    v->resid = (float)sqrt(rsum);
    {
        double tsum = 0;
        for (size_t i = lf_vi_head_bytes(cstride); i < dim; i++) tsum += (double)v->f[i] * v->f[i];
        /* Rounded up: it bounds a product below. */
        v->tnorm = (float)(sqrt(tsum) * (1 + 1e-6));
    }
    v->hash = lf_vi_hash_floats(v->f, dim);
    return LF_VINDEX_OK;
}

int lf_vi_vec_alloc(lf_vi_vec *v, size_t fstride, size_t cstride)
{
    v->f = malloc(fstride * sizeof(float));
    v->c = malloc(cstride);
    if (!v->f || !v->c) {
        free(v->f);
        free(v->c);
        return LF_VINDEX_ENOMEM;
    }
    return LF_VINDEX_OK;
}

void lf_vi_vec_release(lf_vi_vec *v)
{
    free(v->f);
    free(v->c);
}
