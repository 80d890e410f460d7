/* loss.c — CPU class losses (the reference for kernels/loss.cl): per-row
 * cross-entropy with class weights, ignore_index and label smoothing, or
 * the negative log-likelihood of log-probabilities, and their gradients.
 * Computed in double; float32 rows take the row passes in float (rowf32.h)
 * and combine the per-row scalars in double. A row's result never depends
 * on the thread that ran it; a target out of range is an error naming it. */
#include "cpu.h"
#include "rowf32.h"
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct {
    const nc_desc *out, *wsum, *x, *t, *w, *g;
    int logp;
    int64_t base, ignore, C, rows;
    double eps, sw;         /* sw: the sum of the class weights (C without weights) */
    atomic_llong bad_row;   /* first row with a target out of range, or -1 */
} cl_ctx;

static inline double weight(const cl_ctx *c, int64_t k) { return c->w ? ld(c->w, c->w->offset + k) : 1.0; }

static double row_lse(const cl_ctx *c, int64_t xb)
{
    if (c->logp) return 0;
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < c->C; j++) {
        double v = ld(c->x, xb + j);
        if (v > mx || v != v) mx = v;
    }
    if (mx == -INFINITY) mx = 0;
    for (int64_t j = 0; j < c->C; j++) s += exp(ld(c->x, xb + j) - mx);
    return mx + log(s);
}

/* the row's class, -1 when ignored, -2 when out of range (recorded) */
static int64_t target(cl_ctx *c, int64_t r)
{
    int64_t t = ((const int64_t *)c->t->buf)[c->t->offset + r];
    if (t == c->ignore) return -1;
    int64_t y = t - c->base;
    if (y < 0 || y >= c->C) {
        long long expect = -1;
        atomic_compare_exchange_strong(&c->bad_row, &expect, (long long)r);
        return -2;
    }
    return y;
}

static void fwd_rows(void *v, int64_t r0, int64_t r1)
{
    cl_ctx *c = v;
    for (int64_t r = r0; r < r1; r++) {
        int64_t xb = c->x->offset + r * c->C, y = target(c, r);
        double lv = 0, wv = 0;
        if (y >= 0) {
            double lse = row_lse(c, xb), swx = 0;
            if (c->eps != 0)
                for (int64_t j = 0; j < c->C; j++) swx += weight(c, j) * ld(c->x, xb + j);
            wv = weight(c, y);
            lv = (1 - c->eps) * wv * (lse - ld(c->x, xb + y)) + (c->eps != 0 ? c->eps / (double)c->C * (lse * c->sw - swx) : 0);
        } else if (y == -2) {
            lv = wv = NAN;
        }
        nc_store_double(c->out->buf, c->out->dtype, c->out->offset + r, lv);
        nc_store_double(c->wsum->buf, c->wsum->dtype, c->wsum->offset + r, wv);
    }
}

static void bwd_rows(void *v, int64_t r0, int64_t r1)
{
    cl_ctx *c = v;
    for (int64_t r = r0; r < r1; r++) {
        int64_t xb = c->x->offset + r * c->C, ob = c->out->offset + r * c->C, y = target(c, r);
        double gr = y >= 0 ? ld(c->g, c->g->offset + r) : 0, wy = y >= 0 ? weight(c, y) : 0;
        double lse = y >= 0 ? row_lse(c, xb) : 0, sw = c->sw;
        for (int64_t j = 0; j < c->C; j++) {
            double d;
            if (y < 0) d = 0;
            else if (c->logp) d = j == y ? -wy : 0;
            else {
                double p = exp(ld(c->x, xb + j) - lse);
                d = (1 - c->eps) * wy * (p - (j == y)) + (c->eps != 0 ? c->eps / (double)c->C * (p * sw - weight(c, j)) : 0);
            }
            nc_store_double(c->out->buf, c->out->dtype, ob + j, gr * d);
        }
    }
}

/* ---- float32 rows ---------------------------------------------------------------
 * x: contiguous (rows, C) float32, w: C float32 or NULL, out/gx float32.
 * The row passes (max, sum of e^(x - max), the gradient row) are float
 * vector loops; lse and the loss combine in double. */
NC_ROW_CLONES static void fwd_rows_f32(void *v, int64_t r0, int64_t r1)
{
    cl_ctx *c = v;
    int64_t C = c->C;
    const float *w = c->w ? (const float *)c->w->buf + c->w->offset : NULL;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)c->x->buf + c->x->offset + r * C;
        int64_t y = target(c, r);
        double lv = 0, wv = 0;
        if (y >= 0) {
            float mx = nc_row_max_f32(x, C);
            if (mx == -INFINITY) mx = 0;
            double lse = (double)mx + log((double)nc_row_expsum_f32(x, mx, C)), swx = 0;
            if (c->eps != 0) swx = w ? nc_row_dot_f32(w, x, C) : nc_row_sum_f32(x, C);
            wv = w ? w[y] : 1.0;
            lv = (1 - c->eps) * wv * (lse - x[y]) + (c->eps != 0 ? c->eps / (double)C * (lse * c->sw - swx) : 0);
        } else if (y == -2) {
            lv = wv = NAN;
        }
        ((float *)c->out->buf)[c->out->offset + r] = (float)lv;
        ((float *)c->wsum->buf)[c->wsum->offset + r] = (float)wv;
    }
}

/* dx_j = gr ((1 - eps) wy (p_j - [j = y]) + eps/C (p_j sw - w_j)), p = softmax(x):
 * e^(x - max) goes into the gradient row, which is then scaled in place;
 * the target's entry, where p_y - 1 cancels, is redone in double. */
NC_ROW_CLONES static void bwd_rows_f32(void *v, int64_t r0, int64_t r1)
{
    cl_ctx *c = v;
    int64_t C = c->C;
    const float *w = c->w ? (const float *)c->w->buf + c->w->offset : NULL;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)c->x->buf + c->x->offset + r * C;
        float *o = (float *)c->out->buf + c->out->offset + r * C;
        int64_t y = target(c, r);
        if (y < 0) { memset(o, 0, sizeof(float) * (size_t)C); continue; }
        double gr = ld(c->g, c->g->offset + r), wy = w ? w[y] : 1.0;
        if (c->logp) {
            memset(o, 0, sizeof(float) * (size_t)C);
            o[y] = (float)(gr * -wy);
            continue;
        }
        float mx = nc_row_max_f32(x, C);
        if (mx == -INFINITY) mx = 0;
        nc_row_exp_f32(o, x, mx, C);
        float s = nc_row_sum_f32(o, C);
        double k = c->eps / (double)C;
        float a = (float)(gr * ((1 - c->eps) * wy + k * c->sw)), b = (float)(gr * k);
        if (c->eps == 0) for (int64_t j = 0; j < C; j++) o[j] = a * (o[j] / s);
        else if (!w) for (int64_t j = 0; j < C; j++) o[j] = a * (o[j] / s) - b;
        else for (int64_t j = 0; j < C; j++) o[j] = a * (o[j] / s) - b * w[j];
        double py = exp((double)x[y] - ((double)mx + log((double)s)));
        o[y] = (float)(gr * ((1 - c->eps) * wy * (py - 1) + k * (py * c->sw - wy)));
    }
}

static netcl_status run(cl_ctx *c, nc_range_fn fn)
{
    atomic_init(&c->bad_row, -1);
    c->sw = (double)c->C;
    if (c->w) {
        c->sw = 0;
        for (int64_t j = 0; j < c->C; j++) c->sw += weight(c, j);
    }
    nc_parallel_for(c->rows, c->C >= 4096 ? 1 : 4096 / c->C, fn, c);
    long long bad = atomic_load(&c->bad_row);
    if (bad >= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "target %lld of row %lld is out of range for %lld classes (targets are %s)",
                       (long long)((const int64_t *)c->t->buf)[c->t->offset + bad], bad, (long long)c->C,
                       c->base ? "1-based in Lua" : "0-based in C");
    return NETCL_OK;
}

netcl_status nc_cpu_class_loss(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                               const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps)
{
    (void)dev;
    cl_ctx c = {loss, wsum, x, t, w, NULL, logp, base, ignore, x->sizes[1], x->sizes[0], eps, 0, 0};
    int f32 = !logp && x->dtype == NETCL_DTYPE_FLOAT32 && loss->dtype == NETCL_DTYPE_FLOAT32 &&
              wsum->dtype == NETCL_DTYPE_FLOAT32 && (!w || w->dtype == NETCL_DTYPE_FLOAT32);
    return run(&c, f32 ? fwd_rows_f32 : fwd_rows);
}

netcl_status nc_cpu_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                        const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                        double eps)
{
    (void)dev;
    cl_ctx c = {gx, NULL, x, t, w, g, logp, base, ignore, x->sizes[1], x->sizes[0], eps, 0, 0};
    int f32 = x->dtype == NETCL_DTYPE_FLOAT32 && gx->dtype == NETCL_DTYPE_FLOAT32 &&
              (!w || w->dtype == NETCL_DTYPE_FLOAT32);
    return run(&c, f32 ? bwd_rows_f32 : bwd_rows);
}
