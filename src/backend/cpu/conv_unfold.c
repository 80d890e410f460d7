/* conv_unfold.c — the CPU convolution family's unfold: im2col/col2im over
 * contiguous NCHW, the reference for kernels/conv_unfold.cl (same loops,
 * same summation order), computed in double. Parallel over planes. float32
 * has row-wise paths for im2col and col2im that give the same bits as the
 * reference loops (copies; sums in double in the same order). */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct { const nc_desc *a, *b; const nc_conv_geom *c; int nfast; } job;

/* the element offset of cols row k of sample n (unit stride along the row) */
static inline int64_t cols_row(const nc_desc *cols, int64_t n, int64_t k)
{
    return cols->offset + n * cols->strides[0] + k * cols->strides[1];
}

/* Plane p's (n, c). Planes are dealt in (n, c) order, or (c, n) when cols
 * keeps samples next to each other ([K, N, L] storage), so that a part's
 * successive planes write (or read) each cols row contiguously. */
static inline void plane_of(const job *j, int64_t p, int64_t *n, int64_t *c)
{
    if (j->nfast) *c = p / j->c->N, *n = p % j->c->N;
    else *n = p / j->c->C, *c = p % j->c->C;
}

/* planes [s, e) of (n, c): the cols rows of that channel */
static void im2col_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    int64_t L = g->oh * g->ow;
    for (int64_t p = s; p < e; p++) {
        int64_t n, c;
        plane_of(j, p, &n, &c);
        int64_t xb = j->b->offset + (n * g->C + c) * g->H * g->W;
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                int64_t row = cols_row(j->a, n, (c * g->kh + ki) * g->kw + kj);
                for (int64_t l = 0; l < L; l++) {
                    int64_t h = (l / g->ow) * g->sh - g->ph + ki * g->dh, w = (l % g->ow) * g->sw - g->pw + kj * g->dw;
                    st(j->a, row + l, h >= 0 && h < g->H && w >= 0 && w < g->W ? ld(j->b, xb + h * g->W + w) : 0.0);
                }
            }
    }
}

static void col2im_part(void *v, int64_t s, int64_t e);

/* float32 im2col: each cols row is a run of output rows, each a copy of
 * part of an input row between zeros */
static void im2col_part_f32(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    for (int64_t p = s; p < e; p++) {
        int64_t n, c;
        plane_of(j, p, &n, &c);
        const float *x = (const float *)j->b->buf + j->b->offset + (n * g->C + c) * g->H * g->W;
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                float *row = (float *)j->a->buf + cols_row(j->a, n, (c * g->kh + ki) * g->kw + kj);
                int64_t bw = kj * g->dw - g->pw, x0, x1;
                nc_cpu_tap_range(g->ow, g->sw, bw, g->W, &x0, &x1);
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    float *o = row + oy * g->ow;
                    int64_t h = oy * g->sh - g->ph + ki * g->dh;
                    if (h < 0 || h >= g->H) { memset(o, 0, sizeof(float) * (size_t)g->ow); continue; }
                    const float *xr = x + h * g->W;   /* tap of ox: xr[ox * sw + bw] */
                    if (g->ow < 32) { /* short rows: library calls would cost more than the copy */
                        int64_t ox = 0;
                        for (; ox < x0; ox++) o[ox] = 0.0f;
                        if (g->sw == 1) for (; ox < x1; ox++) o[ox] = xr[ox + bw];
                        else for (; ox < x1; ox++) o[ox] = xr[ox * g->sw + bw];
                        for (; ox < g->ow; ox++) o[ox] = 0.0f;
                        continue;
                    }
                    memset(o, 0, sizeof(float) * (size_t)x0);
                    if (g->sw == 1) memcpy(o + x0, xr + x0 + bw, sizeof(float) * (size_t)(x1 - x0));
                    else for (int64_t ox = x0; ox < x1; ox++) o[ox] = xr[ox * g->sw + bw];
                    memset(o + x1, 0, sizeof(float) * (size_t)(g->ow - x1));
                }
            }
    }
}

/* float32 col2im: a plane of double sums, scattered into tap by tap. Each
 * pixel receives its terms in (ki, kj) order, as col2im_part adds them. */
static void col2im_part_f32(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    int64_t HW = g->H * g->W;
    double *acc = malloc(sizeof(double) * (size_t)HW);
    for (int64_t p = s; p < e; p++) {
        int64_t n, c;
        plane_of(j, p, &n, &c);
        float *x = (float *)j->a->buf + j->a->offset + (n * g->C + c) * HW;
        if (!acc) { /* no scratch: the reference loops, plane by plane */
            col2im_part(v, p, p + 1);
            continue;
        }
        memset(acc, 0, sizeof(double) * (size_t)HW);
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                const float *row = (const float *)j->b->buf + cols_row(j->b, n, (c * g->kh + ki) * g->kw + kj);
                int64_t bw = kj * g->dw - g->pw, x0, x1;
                nc_cpu_tap_range(g->ow, g->sw, bw, g->W, &x0, &x1);
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    int64_t h = oy * g->sh - g->ph + ki * g->dh;
                    if (h < 0 || h >= g->H) continue;
                    double *ar = acc + h * g->W;
                    const float *cr = row + oy * g->ow;
                    for (int64_t ox = x0; ox < x1; ox++) ar[ox * g->sw + bw] += cr[ox];
                }
            }
        for (int64_t i = 0; i < HW; i++) x[i] = (float)acc[i];
    }
    free(acc);
}

static void col2im_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_geom *g = j->c;
    for (int64_t p = s; p < e; p++) {
        int64_t n, c;
        plane_of(j, p, &n, &c);
        for (int64_t h = 0; h < g->H; h++)
            for (int64_t w = 0; w < g->W; w++) {
                double acc = 0;
                for (int64_t ki = 0; ki < g->kh; ki++) {
                    int64_t th = h + g->ph - ki * g->dh;
                    if (th < 0 || th % g->sh || th / g->sh >= g->oh) continue;
                    for (int64_t kj = 0; kj < g->kw; kj++) {
                        int64_t tw = w + g->pw - kj * g->dw;
                        if (tw < 0 || tw % g->sw || tw / g->sw >= g->ow) continue;
                        acc += ld(j->b, cols_row(j->b, n, (c * g->kh + ki) * g->kw + kj) + (th / g->sh) * g->ow + tw / g->sw);
                    }
                }
                st(j->a, j->a->offset + ((n * g->C + c) * g->H + h) * g->W + w, acc);
            }
    }
}

netcl_status nc_cpu_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g)
{
    (void)dev;
    job j = {cols, x, g, nc_cols_samples_adjacent(cols)};
    int f32 = cols->dtype == NETCL_DTYPE_FLOAT32 && x->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(g->N * g->C, nc_cpu_plane_grain(g->kh * g->kw * g->oh * g->ow), f32 ? im2col_part_f32 : im2col_part,
                    &j);
    return NETCL_OK;
}

netcl_status nc_cpu_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g)
{
    (void)dev;
    job j = {x, cols, g, nc_cols_samples_adjacent(cols)};
    int f32 = cols->dtype == NETCL_DTYPE_FLOAT32 && x->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(g->N * g->C, nc_cpu_plane_grain(g->kh * g->kw * g->H * g->W), f32 ? col2im_part_f32 : col2im_part,
                    &j);
    return NETCL_OK;
}
