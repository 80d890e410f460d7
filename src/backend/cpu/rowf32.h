/* rowf32.h — float32 row pieces shared by the softmax family (softmax.c) and
 * the class losses (loss.c): an expf that vectorises, and row sums over 16
 * fixed lanes (lane = index mod 16, folded in a fixed tree). A row's result
 * depends only on its values and length, so a row gives the same bits on
 * any thread; the loops are written for GCC's vectoriser at -O3. */
#ifndef NETCL_CPU_ROWF32_H
#define NETCL_CPU_ROWF32_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The row kernels that use these are cloned for AVX-512, AVX2 and baseline
 * x86-64 and picked when the library loads: the exp loops are compute bound
 * and run 3-4x faster in 8- or 16-wide vectors than in SSE2. Each clone does
 * the same IEEE operations in the same order (ISO C mode: nothing contracts
 * into FMA), so the bits do not depend on the machine either. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NC_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NC_ROW_CLONES
#endif

/* the helpers must inline into each clone to get its vector width */
#define NC_RINLINE static inline __attribute__((always_inline))

#define NC_RL 16      /* lanes of a row sum */
#define NC_RCHUNK 256 /* scratch block of exp values when they are not kept */

/* e^x in float for x <= 88 (above: +inf; the callers pass x <= 0), a NaN
 * gives NaN, below about -87.3 it flushes to 0 (the true value is subnormal).
 * x = n ln2 + r with |r| <= ln2/2; e^r by its Taylor series to r^7 (the
 * truncation is under 1e-8 relative); 2^n built in the exponent bits.
 * Within 2 ulp of the true value. glibc's expf is a call per element and
 * does not vectorise; this inlines into the row loops. */
NC_RINLINE float nc_expf(float x)
{
    const float log2e = 1.44269504088896341f;
    /* ln 2 split so that n * LN2_HI is exact for |n| < 256: 15 significant
     * bits in the high part, the remainder in the low part */
    const float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606820309417232e-6f;
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x > 88.0f ? 88.0f : x;
    xc = xc < -88.0f ? -88.0f : xc;  /* NaN passes both */
    float t = xc * log2e + shift, n = t - shift;
    float r = (xc - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* t's low mantissa bits hold n; n = -127 gives a zero scale (flush) */
    uint32_t tb, sb;
    memcpy(&tb, &t, sizeof tb);
    sb = (tb - 0x4B400000u + 127u) << 23;
    float s;
    memcpy(&s, &sb, sizeof s);
    float e = p * s;
    return x > 88.0f ? INFINITY : e;
}

/* Lane sums use 8-wide vector types: GCC's vectoriser leaves the 16-lane
 * loops scalar in places (the max's select), and these lower to whatever
 * width the clone has (two SSE registers in the baseline). */
typedef float nc_v8f __attribute__((vector_size(32)));
typedef int32_t nc_v8i __attribute__((vector_size(32)));

/* *a += p[0..8); vectors go by pointer: by value GCC warns of the AVX ABI */
NC_RINLINE void nc_v8_add_load(nc_v8f *a, const float *p)
{
    nc_v8f v;
    memcpy(&v, p, sizeof v);
    *a += v;
}

/* the fixed fold of the 16 lanes */
NC_RINLINE float nc_lanes_fold(const float *l)
{
    float a[8];
    for (int k = 0; k < 8; k++) a[k] = l[k] + l[k + 8];
    for (int k = 0; k < 4; k++) a[k] = a[k] + a[k + 4];
    return (a[0] + a[2]) + (a[1] + a[3]);
}

/* l[j mod 16] += p[j] for j < n, in order */
NC_RINLINE void nc_lanes_add(float *l, const float *p, int64_t n)
{
    nc_v8f a, b;
    memcpy(&a, l, sizeof a);
    memcpy(&b, l + 8, sizeof b);
    int64_t j = 0;
    for (; j + NC_RL <= n; j += NC_RL) {
        nc_v8_add_load(&a, p + j);
        nc_v8_add_load(&b, p + j + 8);
    }
    memcpy(l, &a, sizeof a);
    memcpy(l + 8, &b, sizeof b);
    for (int k = 0; j < n; j++, k++) l[k] += p[j];
}

/* sum of p[0..n) */
NC_RINLINE float nc_row_sum_f32(const float *p, int64_t n)
{
    float l[NC_RL] = {0};
    nc_lanes_add(l, p, n);
    return nc_lanes_fold(l);
}

/* sum of x[j] * y[j] over [0, n) */
NC_RINLINE float nc_row_dot_f32(const float *x, const float *y, int64_t n)
{
    float l[NC_RL];
    nc_v8f a = {0}, b = {0};
    int64_t j = 0;
    for (; j + NC_RL <= n; j += NC_RL) {
        nc_v8f x0, x1, y0, y1;
        memcpy(&x0, x + j, sizeof x0);
        memcpy(&x1, x + j + 8, sizeof x1);
        memcpy(&y0, y + j, sizeof y0);
        memcpy(&y1, y + j + 8, sizeof y1);
        a += x0 * y0;
        b += x1 * y1;
    }
    memcpy(l, &a, sizeof a);
    memcpy(l + 8, &b, sizeof b);
    for (int k = 0; j < n; j++, k++) l[k] += x[j] * y[j];
    return nc_lanes_fold(l);
}

/* a = max(a, p[0..8)) lane-wise, keeping a where p is NaN; a select in
 * bits, as vector ?: is C++ only */
NC_RINLINE void nc_v8_max_load(nc_v8f *a, const float *p)
{
    nc_v8f v;
    memcpy(&v, p, sizeof v);
    nc_v8i gt = v > *a;
    *a = (nc_v8f)(((nc_v8i)v & gt) | ((nc_v8i)*a & ~gt));
}

/* max of p[0..n), NaNs skipped (a NaN still reaches the exp sum, which
 * then makes the whole row NaN, as the double path does) */
NC_RINLINE float nc_row_max_f32(const float *p, int64_t n)
{
    float l[NC_RL];
    for (int k = 0; k < NC_RL; k++) l[k] = -INFINITY;
    nc_v8f a, b;
    memcpy(&a, l, sizeof a);
    b = a;
    int64_t j = 0;
    for (; j + NC_RL <= n; j += NC_RL) {
        nc_v8_max_load(&a, p + j);
        nc_v8_max_load(&b, p + j + 8);
    }
    memcpy(l, &a, sizeof a);
    memcpy(l + 8, &b, sizeof b);
    for (int k = 0; j < n; j++, k++) l[k] = p[j] > l[k] ? p[j] : l[k];
    float m = l[0];
    for (int k = 1; k < NC_RL; k++) m = l[k] > m ? l[k] : m;
    return m;
}

/* e[j] = e^(p[j] - m) for j < n */
NC_RINLINE void nc_row_exp_f32(float *e, const float *p, float m, int64_t n)
{
    for (int64_t j = 0; j < n; j++) e[j] = nc_expf(p[j] - m);
}

/* sum over j < n of e^(p[j] - m) through a scratch block, so the values need
 * not be kept; the lanes are nc_row_sum_f32's over the row (NC_RCHUNK is a
 * multiple of NC_RL), so it equals nc_row_sum_f32 of nc_row_exp_f32's row */
NC_RINLINE float nc_row_expsum_f32(const float *p, float m, int64_t n)
{
    float e[NC_RCHUNK], l[NC_RL] = {0};
    for (int64_t j0 = 0; j0 < n; j0 += NC_RCHUNK) {
        int64_t c = n - j0 < NC_RCHUNK ? n - j0 : NC_RCHUNK;
        nc_row_exp_f32(e, p + j0, m, c);
        nc_lanes_add(l, e, c);
    }
    return nc_lanes_fold(l);
}

#endif
