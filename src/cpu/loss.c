/* loss.c — CPU class losses (the reference for kernels/loss.cl): per-row
 * cross-entropy with class weights, ignore_index and label smoothing, or
 * the negative log-likelihood of log-probabilities, and their gradients.
 * Computed in double; a target out of range is an error naming the row. */
#include "cpu.h"
#include <math.h>
#include <stdatomic.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct {
    const nc_desc *out, *wsum, *x, *t, *w, *g;
    int logp;
    int64_t base, ignore, C, rows;
    double eps;
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
            double lse = row_lse(c, xb), sw = 0, swx = 0;
            if (c->eps != 0)
                for (int64_t j = 0; j < c->C; j++) { double wc = weight(c, j); sw += wc; swx += wc * ld(c->x, xb + j); }
            wv = weight(c, y);
            lv = (1 - c->eps) * wv * (lse - ld(c->x, xb + y)) + (c->eps != 0 ? c->eps / (double)c->C * (lse * sw - swx) : 0);
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
        double lse = y >= 0 ? row_lse(c, xb) : 0, sw = 0;
        if (!c->logp && c->eps != 0) for (int64_t j = 0; j < c->C; j++) sw += weight(c, j);
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

static netcl_status run(cl_ctx *c, nc_range_fn fn)
{
    atomic_init(&c->bad_row, -1);
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
    cl_ctx c = {loss, wsum, x, t, w, NULL, logp, base, ignore, x->sizes[1], x->sizes[0], eps, 0};
    return run(&c, fwd_rows);
}

netcl_status nc_cpu_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                        const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                        double eps)
{
    (void)dev;
    cl_ctx c = {gx, NULL, x, t, w, g, logp, base, ignore, x->sizes[1], x->sizes[0], eps, 0};
    return run(&c, bwd_rows);
}
