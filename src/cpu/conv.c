/* conv.c — CPU im2col/col2im and 2-D pooling over contiguous NCHW, the
 * references for kernels/conv.cl and kernels/pool.cl (same loops, same
 * summation order), computed in double. Parallel over planes. */
#include "cpu.h"
#include <math.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct { const nc_desc *a, *b, *idx; const nc_conv_geom *c; const nc_pool_geom *p; } job;

/* planes [s, e) of (n, c): the cols rows of that channel */
static void im2col_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    int64_t L = g->oh * g->ow, K = g->C * g->kh * g->kw;
    for (int64_t p = s; p < e; p++) {
        int64_t n = p / g->C, c = p % g->C, xb = j->b->offset + p * g->H * g->W;
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                int64_t row = j->a->offset + (n * K + (c * g->kh + ki) * g->kw + kj) * L;
                for (int64_t l = 0; l < L; l++) {
                    int64_t h = (l / g->ow) * g->sh - g->ph + ki * g->dh, w = (l % g->ow) * g->sw - g->pw + kj * g->dw;
                    st(j->a, row + l, h >= 0 && h < g->H && w >= 0 && w < g->W ? ld(j->b, xb + h * g->W + w) : 0.0);
                }
            }
    }
}

static void col2im_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    int64_t L = g->oh * g->ow, K = g->C * g->kh * g->kw;
    for (int64_t p = s; p < e; p++) {
        int64_t n = p / g->C, c = p % g->C;
        for (int64_t h = 0; h < g->H; h++)
            for (int64_t w = 0; w < g->W; w++) {
                double acc = 0;
                for (int64_t ki = 0; ki < g->kh; ki++) {
                    int64_t th = h + g->ph - ki * g->dh;
                    if (th < 0 || th % g->sh || th / g->sh >= g->oh) continue;
                    for (int64_t kj = 0; kj < g->kw; kj++) {
                        int64_t tw = w + g->pw - kj * g->dw;
                        if (tw < 0 || tw % g->sw || tw / g->sw >= g->ow) continue;
                        acc += ld(j->b, j->b->offset + (n * K + (c * g->kh + ki) * g->kw + kj) * L + (th / g->sh) * g->ow + tw / g->sw);
                    }
                }
                st(j->a, j->a->offset + (p * g->H + h) * g->W + w, acc);
            }
    }
}

static int64_t plane_grain(int64_t work) { return work >= 65536 ? 1 : 65536 / (work ? work : 1); }

netcl_status nc_cpu_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g)
{
    (void)dev;
    job j = {cols, x, NULL, g, NULL};
    nc_parallel_for(g->N * g->C, plane_grain(g->kh * g->kw * g->oh * g->ow), im2col_part, &j);
    return NETCL_OK;
}

netcl_status nc_cpu_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g)
{
    (void)dev;
    job j = {x, cols, NULL, g, NULL};
    nc_parallel_for(g->N * g->C, plane_grain(g->kh * g->kw * g->H * g->W), col2im_part, &j);
    return NETCL_OK;
}

/* ---- pooling -------------------------------------------------------------------- */

static int64_t avg_div(const nc_pool_geom *g, int64_t oh, int64_t ow)
{
    if (g->divisor > 0) return g->divisor;
    int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
    int64_t he = hs + g->kh < g->H + g->ph ? hs + g->kh : g->H + g->ph;
    int64_t we = ws + g->kw < g->W + g->pw ? ws + g->kw : g->W + g->pw;
    if (g->count_pad) return (he - hs) * (we - ws);
    return ((he < g->H ? he : g->H) - (hs > 0 ? hs : 0)) * ((we < g->W ? we : g->W) - (ws > 0 ? ws : 0));
}

static void adaptive_window(int64_t i, int64_t in, int64_t out, int64_t *s, int64_t *e)
{
    *s = i * in / out;
    *e = ((i + 1) * in + out - 1) / out;
}

static void pool_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_pool_geom *g = j->p;
    for (int64_t p = s; p < e; p++) {
        int64_t xb = j->b->offset + p * g->H * g->W, ob = p * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++)
            for (int64_t ow = 0; ow < g->ow; ow++) {
                double r;
                if (g->mode == 0) {
                    double best = -INFINITY;
                    int64_t bi = -1;
                    for (int64_t ki = 0; ki < g->kh; ki++) {
                        int64_t h = oh * g->sh - g->ph + ki * g->dh;
                        if (h < 0 || h >= g->H) continue;
                        for (int64_t kj = 0; kj < g->kw; kj++) {
                            int64_t w = ow * g->sw - g->pw + kj * g->dw;
                            if (w < 0 || w >= g->W) continue;
                            double x = ld(j->b, xb + h * g->W + w);
                            if (bi < 0 || (best == best && (x > best || x != x))) { best = x; bi = h * g->W + w; }
                        }
                    }
                    r = best;
                    ((int64_t *)j->idx->buf)[j->idx->offset + ob + oh * g->ow + ow] = bi;
                } else {
                    int64_t hs, he, ws, we, div;
                    if (g->mode == 2) {
                        adaptive_window(oh, g->H, g->oh, &hs, &he);
                        adaptive_window(ow, g->W, g->ow, &ws, &we);
                        div = (he - hs) * (we - ws);
                    } else {
                        hs = oh * g->sh - g->ph; ws = ow * g->sw - g->pw;
                        he = hs + g->kh < g->H ? hs + g->kh : g->H;
                        we = ws + g->kw < g->W ? ws + g->kw : g->W;
                        div = avg_div(g, oh, ow);
                        if (hs < 0) hs = 0;
                        if (ws < 0) ws = 0;
                    }
                    double sum = 0;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++) sum += ld(j->b, xb + h * g->W + w);
                    r = sum / (double)div;
                }
                st(j->a, j->a->offset + ob + oh * g->ow + ow, r);
            }
    }
}

/* gin for one input pixel: every window covering it (see kernels/pool.cl) */
static double pool_grad_at(const job *j, int64_t p, int64_t h, int64_t w)
{
    const nc_pool_geom *g = j->p;
    int64_t ob = p * g->oh * g->ow, go = j->b->offset;
    double acc = 0;
    if (g->mode == 2) {
        for (int64_t a = 0; a < g->oh; a++) {
            int64_t hs, he;
            adaptive_window(a, g->H, g->oh, &hs, &he);
            if (h < hs || h >= he) continue;
            for (int64_t b = 0; b < g->ow; b++) {
                int64_t ws, we;
                adaptive_window(b, g->W, g->ow, &ws, &we);
                if (w >= ws && w < we) acc += ld(j->b, go + ob + a * g->ow + b) / (double)((he - hs) * (we - ws));
            }
        }
        return acc;
    }
    for (int64_t ki = 0; ki < g->kh; ki++) {
        int64_t th = h + g->ph - ki * g->dh;
        if (th < 0 || th % g->sh || th / g->sh >= g->oh) continue;
        for (int64_t kj = 0; kj < g->kw; kj++) {
            int64_t tw = w + g->pw - kj * g->dw;
            if (tw < 0 || tw % g->sw || tw / g->sw >= g->ow) continue;
            int64_t o = ob + (th / g->sh) * g->ow + tw / g->sw;
            if (g->mode == 0) {
                if (((const int64_t *)j->idx->buf)[j->idx->offset + o] == h * g->W + w) acc += ld(j->b, go + o);
            } else {
                acc += ld(j->b, go + o) / (double)avg_div(g, th / g->sh, tw / g->sw);
            }
        }
    }
    return acc;
}

static void pool_back_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_pool_geom *g = j->p;
    for (int64_t p = s; p < e; p++)
        for (int64_t h = 0; h < g->H; h++)
            for (int64_t w = 0; w < g->W; w++)
                st(j->a, j->a->offset + (p * g->H + h) * g->W + w, pool_grad_at(j, p, h, w));
}

netcl_status nc_cpu_pool(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x, const nc_pool_geom *g)
{
    (void)dev;
    job j = {out, x, idx, NULL, g};
    nc_parallel_for(g->N * g->C, plane_grain(g->H * g->W), pool_part, &j);
    return NETCL_OK;
}

netcl_status nc_cpu_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                  const nc_pool_geom *g)
{
    (void)dev;
    job j = {gin, gout, idx, NULL, g};
    nc_parallel_for(g->N * g->C, plane_grain(g->H * g->W * g->kh * g->kw), pool_back_part, &j);
    return NETCL_OK;
}
