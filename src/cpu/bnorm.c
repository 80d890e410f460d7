/* bnorm.c — CPU fused batch normalisation, the reference for
 * kernels/bnorm.cl: per-channel statistics in double (two passes),
 * normalisation, and the backward's reduction and elementwise pass.
 * Parallel over channels (reductions) or elements. */
#include "cpu.h"
#include <math.h>

/* operand-relative element access (offsets added) */
#define ld(d, i) nc_cpu_ld((d), (d)->offset + (i))
#define st(d, i, v) nc_cpu_st((d), (d)->offset + (i), (v))

/* element k of channel c's i-th value (i over N*S) */
static inline int64_t at(const nc_bn_args *a, int64_t c, int64_t i) { return ((i / a->S) * a->C + c) * a->S + i % a->S; }

static void stats(void *v, int64_t c0, int64_t c1)
{
    const nc_bn_args *a = v;
    int64_t M = a->N * a->S;
    for (int64_t c = c0; c < c1; c++) {
        double s = 0, q = 0;
        for (int64_t i = 0; i < M; i++) s += ld(a->x, at(a, c, i));
        double m = s / (double)M;
        for (int64_t i = 0; i < M; i++) { double d = ld(a->x, at(a, c, i)) - m; q += d * d; }
        double var = q / (double)M;
        st(a->mean, c, m);
        st(a->invstd, c, 1 / sqrt(var + a->eps));
        if (a->rmean) {
            double unbiased = M > 1 ? var * (double)M / (double)(M - 1) : var;
            st(a->rmean, c, (1 - a->momentum) * ld(a->rmean, c) + a->momentum * m);
            st(a->rvar, c, (1 - a->momentum) * ld(a->rvar, c) + a->momentum * unbiased);
        }
    }
}

static void grad_reduce(void *v, int64_t c0, int64_t c1)
{
    const nc_bn_args *a = v;
    int64_t M = a->N * a->S;
    for (int64_t c = c0; c < c1; c++) {
        double m = ld(a->mean, c), sg = 0, sgx = 0;
        for (int64_t i = 0; i < M; i++) {
            int64_t k = at(a, c, i);
            double g = ld(a->g, k);
            sg += g;
            sgx += g * (ld(a->x, k) - m);
        }
        st(a->sg, c, sg);
        st(a->sgx, c, sgx);
    }
}

static void apply(void *v, int64_t s, int64_t e)
{
    const nc_bn_args *a = v;
    for (int64_t i = s; i < e; i++) {
        int64_t c = (i / a->S) % a->C;
        double y = (ld(a->x, i) - ld(a->mean, c)) * ld(a->invstd, c);
        if (a->w) y *= ld(a->w, c);
        if (a->b) y += ld(a->b, c);
        st(a->out, i, y);
    }
}

static void grad_apply(void *v, int64_t s, int64_t e)
{
    const nc_bn_args *a = v;
    double M = (double)(a->N * a->S);
    for (int64_t i = s; i < e; i++) {
        int64_t c = (i / a->S) % a->C;
        double is = ld(a->invstd, c), k = a->w ? ld(a->w, c) * is : is, g = ld(a->g, i), d;
        if (a->training)
            d = k * (g - ld(a->sg, c) / M - (ld(a->x, i) - ld(a->mean, c)) * is * is * ld(a->sgx, c) / M);
        else
            d = k * g;
        st(a->out, i, d);
    }
}

netcl_status nc_cpu_bn(netcl_device *dev, nc_bn_kernel kind, const nc_bn_args *a)
{
    (void)dev;
    int64_t n = a->N * a->C * a->S, per_channel = a->N * a->S;
    int64_t cgrain = per_channel >= 65536 ? 1 : 65536 / (per_channel + 1) + 1;
    switch (kind) {
    case NC_BN_STATS: nc_parallel_for(a->C, cgrain, stats, (void *)a); break;
    case NC_BN_GRAD_REDUCE: nc_parallel_for(a->C, cgrain, grad_reduce, (void *)a); break;
    case NC_BN_APPLY: nc_parallel_for(n, 16384, apply, (void *)a); break;
    default: nc_parallel_for(n, 16384, grad_apply, (void *)a); break;
    }
    return NETCL_OK;
}
