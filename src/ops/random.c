/* random.c — random tensors: rand/randn/randint drawn on the device from
 * the global Philox stream (backend random.draw), and random permutations
 * and multinomial draws generated on the host from the same stream and
 * uploaded, so every backend returns the same numbers for the same seed.
 * Draw k of a host call uses counter offset + k (nc_rng_take): randperm
 * takes n counters, multinomial B * n (with replacement) or B * C
 * (without). */
#include "ops/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 64 random bits of counter c */
static uint64_t bits64(uint64_t seed, uint64_t c)
{
    uint32_t w[4];
    nc_philox(c, seed, w);
    return ((uint64_t)w[1] << 32) | w[0];
}

/* uniform in [0, 1) with 53 bits */
static double unit(uint64_t seed, uint64_t c) { return (double)(bits64(seed, c) >> 11) * 0x1p-53; }

/* largest n whose 0..n-1 the dtype holds exactly */
static double exact_limit(netcl_dtype dt)
{
    switch (dt) {
    case NETCL_DTYPE_UINT8: return 256;
    case NETCL_DTYPE_INT32: return 2147483648.0;
    case NETCL_DTYPE_FLOAT16: return 2049;
    case NETCL_DTYPE_BFLOAT16: return 257;
    case NETCL_DTYPE_FLOAT32: return 16777217;
    case NETCL_DTYPE_BOOL: return 1;
    default: return 9007199254740993.0;
    }
}

netcl_status netcl_randperm(netcl_tensor **out, netcl_device *dev, int64_t n, netcl_dtype dtype)
{
    *out = NULL;
    if (!dev) return nc_fail(NETCL_ERR_DEVICE, "randperm: no device given");
    if ((unsigned)dtype >= NETCL_DTYPE_COUNT) return nc_fail(NETCL_ERR_ARGUMENT, "randperm: invalid dtype %d", (int)dtype);
    if (n < 0 || (double)n > exact_limit(dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "randperm: n = %lld is negative or too large for %s", (long long)n,
                       netcl_dtype_name(dtype));
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    void *host = malloc((size_t)(n ? n : 1) * (size_t)netcl_dtype_size(dtype));
    if (!perm || !host) { free(perm); free(host); return nc_fail(NETCL_ERR_OOM, "randperm: out of host memory for %lld elements", (long long)n); }
    uint64_t seed = netcl_rng_get_seed(), off = nc_rng_take((uint64_t)n);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates with counter off + i */
        int64_t j = (int64_t)(bits64(seed, off + (uint64_t)i) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) nc_store_double(host, dtype, i, (double)perm[i]);
    netcl_status st = netcl_tensor_from_host(out, dev, dtype, 1, &n, host);
    free(perm);
    free(host);
    if (st != NETCL_OK) nc_error_prefix("randperm: ");
    return st;
}

/* ---- multinomial ---------------------------------------------------------------- */

typedef struct { double key; int64_t idx; } keyed;

static int by_key_desc(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Checks one row of weights; *nonzero gets its count of positive ones. */
static netcl_status check_row(const netcl_tensor *probs, const double *p, int64_t C, int64_t row, int64_t *nonzero, double *sum)
{
    *nonzero = 0;
    *sum = 0;
    for (int64_t i = 0; i < C; i++) {
        if (!(p[i] >= 0) || isinf(p[i]))
            return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: weight %g at row %lld, column %lld of %s is negative, inf or NaN",
                           p[i], (long long)row, (long long)i, nc_describe(probs));
        *nonzero += p[i] > 0;
        *sum += p[i];
    }
    if (*sum <= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: row %lld of %s has no positive weight", (long long)row, nc_describe(probs));
    return NETCL_OK;
}

/* with replacement: inverse of the cumulative weights at u * total */
static void draw_with(const double *p, int64_t C, int64_t n, uint64_t seed, uint64_t off, double *cdf, int64_t *out)
{
    double acc = 0;
    int64_t last = 0;
    for (int64_t i = 0; i < C; i++) { acc += p[i]; cdf[i] = acc; if (p[i] > 0) last = i; }
    for (int64_t k = 0; k < n; k++) {
        double u = unit(seed, off + (uint64_t)k) * acc;
        int64_t lo = 0, hi = C;   /* first i with cdf[i] > u */
        while (lo < hi) { int64_t mid = (lo + hi) / 2; if (cdf[mid] > u) hi = mid; else lo = mid + 1; }
        out[k] = lo < C ? lo : last;
    }
}

/* without replacement: the n largest keys log(u_i) / p_i (Efraimidis-Spirakis),
 * which is sequential draws without replacement in distribution */
static void draw_without(const double *p, int64_t C, int64_t n, uint64_t seed, uint64_t off, keyed *keys, int64_t *out)
{
    for (int64_t i = 0; i < C; i++) {
        double u = 1.0 - unit(seed, off + (uint64_t)i);   /* (0, 1] */
        keys[i].key = p[i] > 0 ? log(u) / p[i] : -INFINITY;
        keys[i].idx = i;
    }
    qsort(keys, (size_t)C, sizeof *keys, by_key_desc);
    for (int64_t k = 0; k < n; k++) out[k] = keys[k].idx;
}

netcl_status netcl_multinomial(netcl_tensor **out, netcl_tensor *probs, int64_t n, int replacement)
{
    *out = NULL;
    if (!nc_dtype_is_float(probs->dtype) || probs->ndim < 1 || probs->ndim > 2)
        return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: probs must be a 1-D or 2-D floating tensor, got %s", nc_describe(probs));
    int64_t B = probs->ndim == 2 ? probs->sizes[0] : 1, C = probs->sizes[probs->ndim - 1];
    if (C == 0) return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: %s has no categories", nc_describe(probs));
    if (n < 0) return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: negative number of samples %lld", (long long)n);
    if (!replacement && n > C)
        return nc_fail(NETCL_ERR_ARGUMENT, "multinomial: %lld samples without replacement from %lld categories (%s)",
                       (long long)n, (long long)C, nc_describe(probs));
    double *p = malloc(sizeof(double) * (size_t)(B * C));
    int64_t *res = malloc(sizeof(int64_t) * (size_t)(B * n + 1));
    void *scratch = malloc((replacement ? sizeof(double) : sizeof(keyed)) * (size_t)C);
    netcl_status st = p && res && scratch ? netcl_tensor_to_doubles(probs, p, B * C)
                                         : nc_fail(NETCL_ERR_OOM, "multinomial: out of host memory for %s", nc_describe(probs));
    for (int64_t b = 0; st == NETCL_OK && b < B; b++) {
        int64_t nonzero;
        double sum;
        st = check_row(probs, p + b * C, C, b, &nonzero, &sum);
        if (st == NETCL_OK && !replacement && n > nonzero)
            st = nc_fail(NETCL_ERR_ARGUMENT, "multinomial: %lld samples without replacement, but row %lld of %s has only %lld "
                         "non-zero weights", (long long)n, (long long)b, nc_describe(probs), (long long)nonzero);
    }
    if (st == NETCL_OK) {
        uint64_t seed = netcl_rng_get_seed(), per = (uint64_t)(replacement ? n : C), off = nc_rng_take(per * (uint64_t)B);
        for (int64_t b = 0; b < B; b++) {
            if (replacement) draw_with(p + b * C, C, n, seed, off + per * (uint64_t)b, scratch, res + b * n);
            else draw_without(p + b * C, C, n, seed, off + per * (uint64_t)b, scratch, res + b * n);
        }
        int64_t shape[2] = {B, n};
        st = probs->ndim == 2 ? netcl_tensor_from_host(out, nc_dev(probs), NETCL_DTYPE_INT64, 2, shape, res)
                              : netcl_tensor_from_host(out, nc_dev(probs), NETCL_DTYPE_INT64, 1, &n, res);
    }
    free(p);
    free(res);
    free(scratch);
    return st;
}

netcl_status netcl_tensor_rand(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes,
                               netcl_rng_kind kind, double p1, double p2)
{
    static const char *const names[] = {"rand", "randn", "randint"};
    *out = NULL;
    if ((unsigned)kind > NETCL_RNG_RANDINT) return nc_fail(NETCL_ERR_ARGUMENT, "rand: invalid kind %d", (int)kind);
    const char *op = names[kind];
    if (kind != NETCL_RNG_RANDINT && !nc_dtype_is_float(dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dtype %s is not a floating type", op, netcl_dtype_name(dtype));
    if (kind == NETCL_RNG_RANDINT && (p2 <= p1 || p1 != floor(p1) || p2 != floor(p2)))
        return nc_fail(NETCL_ERR_ARGUMENT, "randint: invalid range [%g, %g)", p1, p2);
    /* every value drawn must be one the dtype holds (uint8 would wrap 256..999) */
    double lo = dtype == NETCL_DTYPE_INT32 ? -2147483648.0 : 0, hi = dtype == NETCL_DTYPE_UINT8 ? 255 :
                dtype == NETCL_DTYPE_BOOL ? 1 : dtype == NETCL_DTYPE_INT32 ? 2147483647.0 : INFINITY;
    if (kind == NETCL_RNG_RANDINT && (dtype == NETCL_DTYPE_UINT8 || dtype == NETCL_DTYPE_BOOL || dtype == NETCL_DTYPE_INT32) &&
        (p1 < lo || p2 - 1 > hi))
        return nc_fail(NETCL_ERR_ARGUMENT, "randint: the range [%g, %g) does not fit %s (values %g to %g)", p1, p2,
                       netcl_dtype_name(dtype), lo, hi);
    if (kind == NETCL_RNG_NORMAL && p2 < 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "randn: negative std %g", p2);
    netcl_status st = nc_tensor_new(out, dev, dtype, ndim, sizes);
    if (st != NETCL_OK) { nc_error_prefix("%s: ", op); return st; }
    int64_t n = netcl_tensor_numel(*out);
    if (n == 0) return NETCL_OK;
    nc_desc d;
    nc_desc_of(&d, *out);
    st = dev->backend->random.draw(dev, &d, kind, netcl_rng_get_seed(), nc_rng_take((uint64_t)n), p1, p2);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; nc_error_prefix("%s: ", op); }
    return st;
}
