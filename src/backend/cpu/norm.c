/* norm.c — the CPU norm family: fused batch normalisation, the reference
 * for kernels/norm.cl: per-channel statistics in double (two passes; the
 * float32 path one shifted pass),
 * normalisation (and a fused relu), and the backward's reduction and
 * elementwise pass (g masked by the relu's output where one was fused).
 * Parallel over channels (reductions) or elements. */
#include "cpu.h"
#include <math.h>
#include <string.h>

/* operand-relative element access (offsets added) */
#define ld(d, i) nc_cpu_ld((d), (d)->offset + (i))
#define st(d, i, v) nc_cpu_st((d), (d)->offset + (i), (v))

/* element k of channel c's i-th value (i over N*S) */
static inline int64_t at(const nc_batch_norm_args *a, int64_t c, int64_t i) { return ((i / a->S) * a->C + c) * a->S + i % a->S; }

static void stats(void *v, int64_t c0, int64_t c1)
{
    const nc_batch_norm_args *a = v;
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
    const nc_batch_norm_args *a = v;
    int64_t M = a->N * a->S;
    for (int64_t c = c0; c < c1; c++) {
        double m = ld(a->mean, c), sg = 0, sgx = 0;
        for (int64_t i = 0; i < M; i++) {
            int64_t k = at(a, c, i);
            double g = a->y && !(ld(a->y, k) > 0) ? 0 : ld(a->g, k);
            sg += g;
            sgx += g * (ld(a->x, k) - m);
        }
        st(a->sg, c, sg);
        st(a->sgx, c, sgx);
    }
}

static void apply(void *v, int64_t s, int64_t e)
{
    const nc_batch_norm_args *a = v;
    for (int64_t i = s; i < e; i++) {
        int64_t c = (i / a->S) % a->C;
        double y = (ld(a->x, i) - ld(a->mean, c)) * ld(a->invstd, c);
        if (a->w) y *= ld(a->w, c);
        if (a->b) y += ld(a->b, c);
        if (a->res) y += ld(a->res, i);
        st(a->out, i, a->relu && !(y > 0) ? 0 : y);
    }
}

static void grad_apply(void *v, int64_t s, int64_t e)
{
    const nc_batch_norm_args *a = v;
    double M = (double)(a->N * a->S);
    for (int64_t i = s; i < e; i++) {
        int64_t c = (i / a->S) % a->C;
        double is = ld(a->invstd, c), k = a->w ? ld(a->w, c) * is : is, d;
        double g = a->y && !(ld(a->y, i) > 0) ? 0 : ld(a->g, i);
        if (a->training)
            d = k * (g - ld(a->sg, c) / M - (ld(a->x, i) - ld(a->mean, c)) * is * is * ld(a->sgx, c) / M);
        else
            d = k * g;
        st(a->out, i, d);
    }
}

/* ---- float32: plane by plane ------------------------------------------------------
 * Each (n, c) plane is S contiguous floats: no per-element index division
 * or dtype switch. Sums run in double over LANES interleaved partial sums
 * (a single running sum waited on each add's latency), added up in a fixed
 * order, so a result never depends on the thread count; the elementwise
 * passes take their per-channel factors out of the loop. */
#define LANES 8

/* LANES doubles as one vector (GCC vector extensions: AVX-512 registers in
 * the widest clone, pairs of SSE2 ones in the baseline); lane l holds the
 * sum of the elements j = l (mod LANES), as a scalar loop over an array of
 * LANES sums would, which GCC does not vectorise by itself */
typedef float lanes_f __attribute__((vector_size(LANES * sizeof(float))));
typedef double lanes_d __attribute__((vector_size(LANES * sizeof(double))));

/* (macro, not function: a function passing these vectors by value would
 * change the baseline clone's calling convention) */
#define LOAD_LANES(dst, p)                                                    \
    do {                                                                      \
        lanes_f f_;                                                           \
        memcpy(&f_, (p), sizeof f_);                                          \
        (dst) = __builtin_convertvector(f_, lanes_d);                         \
    } while (0)

#define MASK_CHUNK 2048   /* floats of g masked at a time (a multiple of LANES) */

/* t = g where a fused relu's output y is positive, else 0 (a non-finite g
 * too); its own loop, which vectorises, ahead of the unmasked ones */
NC_CPU_WIDE static void relu_mask(float *t, const float *g, const float *y, int64_t n)
{
    for (int64_t j = 0; j < n; j++) t[j] = y[j] > 0 ? g[j] : 0.f;
}

static double vec_total(const lanes_d *v)
{
    double t = 0;
    for (int l = 0; l < LANES; l++) t += (*v)[l];
    return t;
}


/* One pass over the channel: sums of x - K and of its square in double,
 * shifted by K, the channel's first value, so that a mean far from zero
 * cancels nothing (the shifted-data variance; the reference takes two
 * passes, this reads x once). */
NC_CPU_WIDE static void stats_f32(void *v, int64_t c0, int64_t c1)
{
    const nc_batch_norm_args *a = v;
    const float *x = NC_CPU_CF32(a->x);
    int64_t M = a->N * a->S, S = a->S;
    for (int64_t c = c0; c < c1; c++) {
        double K = M ? (double)x[c * S] : 0;
        lanes_d sv = {0}, qv = {0};
        for (int64_t n = 0; n < a->N; n++) {
            const float *p = x + (n * a->C + c) * S;
            int64_t j = 0;
            for (; j + LANES <= S; j += LANES) {
                lanes_d d;
                LOAD_LANES(d, p + j);
                d -= K;
                sv += d;
                qv += d * d;
            }
            for (; j < S; j++) {
                double d = (double)p[j] - K;
                sv[0] += d;
                qv[0] += d * d;
            }
        }
        double s = vec_total(&sv), q = vec_total(&qv);
        double m = K + s / (double)M, var = (q - s * s / (double)M) / (double)M;
        if (var < 0) var = 0;
        NC_CPU_F32(a->mean)[c] = (float)m;
        NC_CPU_F32(a->invstd)[c] = (float)(1 / sqrt(var + a->eps));
        if (a->rmean) {
            double unbiased = M > 1 ? var * (double)M / (double)(M - 1) : var;
            NC_CPU_F32(a->rmean)[c] = (float)((1 - a->momentum) * NC_CPU_CF32(a->rmean)[c] + a->momentum * m);
            NC_CPU_F32(a->rvar)[c] = (float)((1 - a->momentum) * NC_CPU_CF32(a->rvar)[c] + a->momentum * unbiased);
        }
    }
}

NC_CPU_WIDE static void grad_reduce_f32(void *v, int64_t c0, int64_t c1)
{
    const nc_batch_norm_args *a = v;
    const float *x = NC_CPU_CF32(a->x), *g = NC_CPU_CF32(a->g);
    int64_t S = a->S;
    float gm[MASK_CHUNK];   /* a chunk of g masked by a fused relu's output */
    for (int64_t c = c0; c < c1; c++) {
        double m = NC_CPU_CF32(a->mean)[c];
        lanes_d sg = {0}, sgx = {0};
        for (int64_t n = 0; n < a->N; n++) {
            const float *px = x + (n * a->C + c) * S, *pg = g + (n * a->C + c) * S;
            const float *py = a->y ? NC_CPU_CF32(a->y) + (n * a->C + c) * S : NULL;
            /* both sums in one pass over the plane, a chunk at a time (its
             * g masked first where a relu was fused) */
            for (int64_t j0 = 0; j0 < S; j0 += MASK_CHUNK) {
                int64_t len = S - j0 < MASK_CHUNK ? S - j0 : MASK_CHUNK, j = 0;
                const float *gc = pg + j0, *xc = px + j0;
                if (py) {
                    relu_mask(gm, gc, py + j0, len);
                    gc = gm;
                }
                for (; j + LANES <= len; j += LANES) {
                    lanes_d gv, xv;
                    LOAD_LANES(gv, gc + j);
                    LOAD_LANES(xv, xc + j);
                    sg += gv;
                    sgx += gv * (xv - m);
                }
                for (; j < len; j++) {
                    sg[0] += gc[j];
                    sgx[0] += (double)gc[j] * ((double)xc[j] - m);
                }
            }
        }
        NC_CPU_F32(a->sg)[c] = (float)vec_total(&sg);
        NC_CPU_F32(a->sgx)[c] = (float)vec_total(&sgx);
    }
}

/* planes [p0, p1) of (n, c) */
NC_CPU_WIDE static void apply_f32(void *v, int64_t p0, int64_t p1)
{
    const nc_batch_norm_args *a = v;
    const float *x = NC_CPU_CF32(a->x);
    float *o = NC_CPU_F32(a->out);
    int64_t S = a->S;
    for (int64_t p = p0; p < p1; p++) {
        int64_t c = p % a->C;
        double m = NC_CPU_CF32(a->mean)[c], is = NC_CPU_CF32(a->invstd)[c];
        const float *px = x + p * S;
        float *po = o + p * S;
        if (a->w && a->b) {
            double w = NC_CPU_CF32(a->w)[c], b = NC_CPU_CF32(a->b)[c];
            for (int64_t j = 0; j < S; j++) po[j] = (float)((px[j] - m) * is * w + b);
        } else {
            for (int64_t j = 0; j < S; j++) {
                double y = (px[j] - m) * is;
                if (a->w) y *= NC_CPU_CF32(a->w)[c];
                if (a->b) y += NC_CPU_CF32(a->b)[c];
                po[j] = (float)y;
            }
        }
        if (a->res) {   /* the plane is still in cache; added in float, as a separate add would */
            const float *pr = NC_CPU_CF32(a->res) + p * S;
            for (int64_t j = 0; j < S; j++) po[j] += pr[j];
        }
        if (a->relu)
            for (int64_t j = 0; j < S; j++) po[j] = po[j] > 0 ? po[j] : 0;
    }
}

NC_CPU_WIDE static void grad_apply_f32(void *v, int64_t p0, int64_t p1)
{
    const nc_batch_norm_args *a = v;
    const float *x = NC_CPU_CF32(a->x), *g = NC_CPU_CF32(a->g);
    float *o = NC_CPU_F32(a->out);
    int64_t S = a->S;
    double M = (double)(a->N * a->S);
    for (int64_t p = p0; p < p1; p++) {
        int64_t c = p % a->C;
        double is = NC_CPU_CF32(a->invstd)[c], k = a->w ? NC_CPU_CF32(a->w)[c] * is : is;
        const float *px = x + p * S, *pg = g + p * S;
        float *po = o + p * S;
        double m = a->training ? NC_CPU_CF32(a->mean)[c] : 0;
        double sgm = a->training ? NC_CPU_CF32(a->sg)[c] / M : 0, sgxm = a->training ? is * is * NC_CPU_CF32(a->sgx)[c] / M : 0;
        if (a->y) {   /* g masked into the output plane, then updated in place there */
            relu_mask(po, pg, NC_CPU_CF32(a->y) + p * S, S);
            if (a->training)
                for (int64_t j = 0; j < S; j++) po[j] = (float)(k * (po[j] - sgm - (px[j] - m) * sgxm));
            else
                for (int64_t j = 0; j < S; j++) po[j] = (float)(k * po[j]);
        } else if (a->training) {
            for (int64_t j = 0; j < S; j++) po[j] = (float)(k * (pg[j] - sgm - (px[j] - m) * sgxm));
        } else {
            for (int64_t j = 0; j < S; j++) po[j] = (float)(k * pg[j]);
        }
    }
}

netcl_status nc_cpu_batch_norm(netcl_device *dev, nc_batch_norm_kernel kind, const nc_batch_norm_args *a)
{
    (void)dev;
    int64_t n = a->N * a->C * a->S, per_channel = a->N * a->S;
    int64_t cgrain = per_channel >= 65536 ? 1 : 65536 / (per_channel + 1) + 1;
    int64_t pgrain = a->S >= 16384 ? 1 : 16384 / (a->S + 1) + 1;
    if (a->x->dtype == NETCL_DTYPE_FLOAT32) {
        switch (kind) {
        case NC_BATCH_NORM_STATS: nc_parallel_for(a->C, cgrain, stats_f32, (void *)a); break;
        case NC_BATCH_NORM_GRAD_REDUCE: nc_parallel_for(a->C, cgrain, grad_reduce_f32, (void *)a); break;
        case NC_BATCH_NORM_APPLY: nc_parallel_for(a->N * a->C, pgrain, apply_f32, (void *)a); break;
        default: nc_parallel_for(a->N * a->C, pgrain, grad_apply_f32, (void *)a); break;
        }
        return NETCL_OK;
    }
    switch (kind) {
    case NC_BATCH_NORM_STATS: nc_parallel_for(a->C, cgrain, stats, (void *)a); break;
    case NC_BATCH_NORM_GRAD_REDUCE: nc_parallel_for(a->C, cgrain, grad_reduce, (void *)a); break;
    case NC_BATCH_NORM_APPLY: nc_parallel_for(n, 16384, apply, (void *)a); break;
    default: nc_parallel_for(n, 16384, grad_apply, (void *)a); break;
    }
    return NETCL_OK;
}
