/* conv_depthwise.c — the CPU convolution family's depthwise kernels (the
 * NC_DW_* kinds) for float32: one part per plane (forward: output plane
 * (n, o); backward-data: input plane (n, c); backward-weight: (slice of
 * images, o)), each tap a scaled row added along the row with its
 * in-bounds columns worked out once, sums in float (backward-weight in
 * double: sums over whole slices of images). Other dtypes run
 * conv_direct.c's loops. Operands contiguous. */
#include "cpu.h"
#include <string.h>

typedef struct { const nc_conv_args *g; const float *a, *b; float *out; int64_t ip; int data; } job;

/* the outputs ox in [*lo, *hi) whose tap kj reads a column inside [0, W) */
static void inside(int64_t n_out, int64_t stride, int64_t off, int64_t size, int64_t *lo, int64_t *hi)
{
    /* column = ox * stride + off */
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = size - 1 - off < 0 ? 0 : (size - 1 - off) / stride + 1;
    if (*hi > n_out) *hi = n_out;
    if (*hi < *lo) *hi = *lo;
}

/* every tap of filter wk between input plane xp [H, W] and output plane
 * yp [OH, OW]: the forward pass adds w * x into y, backward-data (to_x)
 * w * y into x (the plane not written may be a const one cast) */
static void plane_taps(const nc_conv_args *g, const float *wk, float *xp, float *yp, int to_x)
{
    for (int64_t kj = 0; kj < g->KW; kj++) {
        int64_t lo, hi, off = kj * g->DW - g->PW;
        inside(g->OW, g->SW, off, g->W, &lo, &hi);
        for (int64_t ki = 0; ki < g->KH; ki++) {
            float wv = wk[ki * g->KW + kj];
            for (int64_t oy = 0; oy < g->OH; oy++) {
                int64_t h = oy * g->SH - g->PH + ki * g->DH;
                if (h < 0 || h >= g->H) continue;
                float *xr = xp + h * g->W + off, *yr = yp + oy * g->OW;
                if (to_x)
                    for (int64_t ox = lo; ox < hi; ox++) xr[ox * g->SW] += wv * yr[ox];
                else
                    for (int64_t ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * g->SW];
            }
        }
    }
}

/* forward: output plane p = (n, o); backward-data (j->data): input plane
 * p = (n, c), from its M output channels */
static void planes(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t L = g->OH * g->OW, M = g->O / g->C, KT = g->KH * g->KW, HW = g->H * g->W;
    for (int64_t p = s; p < e; p++) {
        float *out = j->out + p * (j->data ? HW : L);
        memset(out, 0, sizeof(float) * (size_t)(j->data ? HW : L));
        if (!j->data) {
            int64_t n = p / g->O, o = p % g->O;
            plane_taps(g, j->b + o * KT, (float *)(j->a + (n * g->C + o / M) * HW), out, 0);
            continue;
        }
        for (int64_t o = p % g->C * M; o < (p % g->C + 1) * M; o++)
            plane_taps(g, j->b + o * KT, out, (float *)(j->a + (p / g->C * g->O + o) * L), 1);
    }
}

/* part [S, O, KH*KW]: q = slice * O + o */
static void weight(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t L = g->OH * g->OW, M = g->O / g->C;
    for (int64_t q = s; q < e; q++) {
        int64_t o = q % g->O, n0 = q / g->O * j->ip, n1 = n0 + j->ip < g->N ? n0 + j->ip : g->N;
        for (int64_t ki = 0; ki < g->KH; ki++)
            for (int64_t kj = 0; kj < g->KW; kj++) {
                int64_t lo, hi, off = kj * g->DW - g->PW;
                inside(g->OW, g->SW, off, g->W, &lo, &hi);
                double sum = 0;
                for (int64_t n = n0; n < n1; n++) {
                    const float *xc = j->a + (n * g->C + o / M) * g->H * g->W, *dp = j->b + (n * g->O + o) * L;
                    for (int64_t oy = 0; oy < g->OH; oy++) {
                        int64_t h = oy * g->SH - g->PH + ki * g->DH;
                        if (h < 0 || h >= g->H) continue;
                        const float *xr = xc + h * g->W + off, *dr = dp + oy * g->OW;
                        float row = 0;
                        for (int64_t ox = lo; ox < hi; ox++) row += xr[ox * g->SW] * dr[ox];
                        sum += row;
                    }
                }
                j->out[q * g->KH * g->KW + ki * g->KW + kj] = (float)sum;
            }
    }
}

netcl_status nc_cpu_conv_depthwise(nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out, const nc_desc *a,
                                   const nc_desc *b, int64_t ip)
{
    job j = {g, (const float *)a->buf + a->offset, (const float *)b->buf + b->offset, (float *)out->buf + out->offset,
             ip > 0 ? ip : g->N, kind == NC_DW_DATA};
    int64_t taps = g->KH * g->KW, L = g->OH * g->OW;
    if (kind == NC_DW_FWD) nc_parallel_for(g->N * g->O, 1 + 16384 / (L * taps + 1), planes, &j);
    else if (kind == NC_DW_DATA) nc_parallel_for(g->N * g->C, 1 + 16384 / (L * taps * (g->O / g->C) + 1), planes, &j);
    else nc_parallel_for((g->N + j.ip - 1) / j.ip * g->O, 1 + 16384 / (j.ip * L * taps + 1), weight, &j);
    return NETCL_OK;
}
