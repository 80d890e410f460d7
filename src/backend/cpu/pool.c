/* pool.c — the CPU pool family: 2-D max, average and adaptive-average
 * pooling over contiguous NCHW and their backward, the reference for
 * kernels/pool.cl (same loops, same summation order), computed in double.
 * Parallel over planes. float32 max pooling has row-wise paths that give
 * the same bits as the reference loops. */
#include "cpu.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct { const nc_desc *a, *b, *idx; const nc_pool_geom *p; } job;

static void pool_back_part(void *v, int64_t s, int64_t e);

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

/* x[i] replaces the running maximum (best, its index *bi) as pool_part's
 * scan does: the first tap always, later ones when larger or NaN, nothing
 * after a NaN */
static inline void max_take(float xv, int64_t i, float *best, int64_t *bi)
{
    if (*bi < 0 || (*best == *best && (xv > *best || xv != xv))) { *best = xv; *bi = i; }
}

/* The 2x2 stride-2 window with every window inside (no padding or
 * dilation): pairs compared without branches, which give the scan's first
 * largest tap when no tap is NaN (a later tap wins only when strictly
 * larger); a window holding a NaN takes the scan itself. */
static void max_pool_2x2_plane(const nc_pool_geom *g, const float *x, float *out, int64_t *idx)
{
    for (int64_t oh = 0; oh < g->oh; oh++) {
        const float *r0 = x + 2 * oh * g->W, *r1 = r0 + g->W;
        for (int64_t ow = 0; ow < g->ow; ow++) {
            float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
            int64_t ia = 2 * oh * g->W + 2 * ow, bi;
            float best;
            if ((a == a) & (b == b) & (c == c) & (d == d)) {
                int tb = b > a, td = d > c;
                float m1 = tb ? b : a, m2 = td ? d : c;
                int64_t i1 = ia + tb, i2 = ia + g->W + td;
                int t2 = m2 > m1;
                best = t2 ? m2 : m1;
                bi = t2 ? i2 : i1;
            } else {
                bi = -1;
                best = -INFINITY;
                max_take(a, ia, &best, &bi);
                max_take(b, ia + 1, &best, &bi);
                max_take(c, ia + g->W, &best, &bi);
                max_take(d, ia + g->W + 1, &best, &bi);
            }
            out[oh * g->ow + ow] = best;
            idx[oh * g->ow + ow] = bi;
        }
    }
}

/* float32 max pooling: pool_part's loops and comparisons on the floats
 * themselves (widening to double changes no comparison). Window rows and
 * columns outside the input are cut off up front. */
static void max_pool_part_f32(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_pool_geom *g = j->p;
    int64_t *idx = (int64_t *)j->idx->buf + j->idx->offset;
    int two = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->ph == 0 &&
              g->pw == 0 && 2 * g->oh <= g->H && 2 * g->ow <= g->W;
    for (int64_t p = s; p < e; p++) {
        if (two) {
            int64_t ob = p * g->oh * g->ow;
            max_pool_2x2_plane(g, (const float *)j->b->buf + j->b->offset + p * g->H * g->W,
                               (float *)j->a->buf + j->a->offset + ob, idx + ob);
            continue;
        }
        const float *x = (const float *)j->b->buf + j->b->offset + p * g->H * g->W;
        int64_t ob = p * g->oh * g->ow;
        float *out = (float *)j->a->buf + j->a->offset + ob;
        const int64_t span = (g->kw - 1) * g->dw, dw = g->dw, W = g->W;
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t k0, k1, h0 = oh * g->sh - g->ph;   /* ki whose row h0 + ki * dh is inside */
            nc_cpu_tap_range(g->kh, g->dh, h0, g->H, &k0, &k1);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t w0 = ow * g->sw - g->pw, l0 = 0, l1 = g->kw, bi = -1;
                /* a window wholly inside the row needs no clipping (tap_range's divisions) */
                if (w0 < 0 || w0 + span >= W) nc_cpu_tap_range(g->kw, dw, w0, W, &l0, &l1);
                float best = -INFINITY;
                for (int64_t ki = k0; ki < k1; ki++) {
                    int64_t r = (h0 + ki * g->dh) * W + w0;
                    for (int64_t kj = l0; kj < l1; kj++) max_take(x[r + kj * dw], r + kj * dw, &best, &bi);
                }
                out[oh * g->ow + ow] = best;
                idx[ob + oh * g->ow + ow] = bi;
            }
        }
    }
}

/* float32 max-pool gradient: each output's gradient goes to its winner, in
 * double sums over the plane (stored directly where windows cannot overlap). Outputs are taken last to first: the order in
 * which pool_grad_at meets a pixel's windows (ki, kj ascending), so the bits
 * are the reference's. */
static void max_pool_back_part_f32(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_pool_geom *g = j->p;
    int64_t HW = g->H * g->W, OL = g->oh * g->ow;
    if (g->sh > (g->kh - 1) * g->dh && g->sw > (g->kw - 1) * g->dw) {
        /* windows that do not overlap: a pixel gets at most one term, and
         * 0 + that term (-0 becomes +0, as in the sums) */
        for (int64_t p = s; p < e; p++) {
            const float *go = (const float *)j->b->buf + j->b->offset + p * OL;
            const int64_t *idx = (const int64_t *)j->idx->buf + j->idx->offset + p * OL;
            float *gin = (float *)j->a->buf + j->a->offset + p * HW;
            memset(gin, 0, sizeof(float) * (size_t)HW);
            for (int64_t o = 0; o < OL; o++)
                if (idx[o] >= 0) gin[idx[o]] = 0.0f + go[o];
        }
        return;
    }
    double *acc = malloc(sizeof(double) * (size_t)HW);
    for (int64_t p = s; p < e; p++) {
        if (!acc) { pool_back_part(v, p, p + 1); continue; }   /* no scratch: the reference */
        const float *go = (const float *)j->b->buf + j->b->offset + p * OL;
        const int64_t *idx = (const int64_t *)j->idx->buf + j->idx->offset + p * OL;
        float *gin = (float *)j->a->buf + j->a->offset + p * HW;
        memset(acc, 0, sizeof(double) * (size_t)HW);
        for (int64_t o = OL - 1; o >= 0; o--)
            if (idx[o] >= 0) acc[idx[o]] += go[o];
        for (int64_t i = 0; i < HW; i++) gin[i] = (float)acc[i];
    }
    free(acc);
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
    job j = {out, x, idx, g};
    int f32max = g->mode == 0 && out->dtype == NETCL_DTYPE_FLOAT32 && x->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(g->N * g->C, nc_cpu_plane_grain(g->H * g->W), f32max ? max_pool_part_f32 : pool_part, &j);
    return NETCL_OK;
}

netcl_status nc_cpu_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                  const nc_pool_geom *g)
{
    (void)dev;
    job j = {gin, gout, idx, g};
    int f32max = g->mode == 0 && gin->dtype == NETCL_DTYPE_FLOAT32 && gout->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(g->N * g->C, nc_cpu_plane_grain(g->H * g->W * g->kh * g->kw),
                    f32max ? max_pool_back_part_f32 : pool_back_part, &j);
    return NETCL_OK;
}
