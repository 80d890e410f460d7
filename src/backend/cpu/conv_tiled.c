/* conv_tiled.c — the CPU convolution family's tiled direct convolution (the
 * "tiled" strategy): one part per (image, group, block of OB output
 * channels, output row) keeps OB rows of accumulators in cache and adds,
 * per input channel and tap, a scaled input row into each (loops along the
 * row that vectorise at stride 1). float64 accumulates in double, the
 * other float dtypes in float (float32 reads and writes its rows in place).
 * FLIP: w is [C, O, KH, KW] of the stride-1 convolution whose
 * backward-data pass this is (see the backend's conv_tiled). */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define OB 4   /* output channels per part */

typedef struct {
    const nc_conv_args *g;
    const nc_desc *y, *x, *w;
    const nc_conv_epi *epi;
    int flip;
    int64_t Cg, Og, oblocks;
    atomic_int oom;
} job;

static double weight(const job *j, int64_t o, int64_t c, int64_t kh, int64_t kw)
{
    const nc_conv_args *g = j->g;
    if (j->flip) return nc_cpu_ld(j->w, j->w->offset + ((c * g->O + o) * g->KH + (g->KH - 1 - kh)) * g->KW + (g->KW - 1 - kw));
    return nc_cpu_ld(j->w, j->w->offset + ((o * j->Cg + c) * g->KH + kh) * g->KW + kw);
}

/* The body for accumulator type T: rows acc[OB][OW], the part's weights
 * wb[OB][C/G][KH][KW] gathered once, an input row xr[W] (float32 rows are
 * read in place). */
#define TILED_PART(NAME, T, DIRECT)                                                                         \
    static void NAME(void *v, int64_t s, int64_t e)                                                         \
    {                                                                                                       \
        job *j = v;                                                                                         \
        const nc_conv_args *g = j->g;                                                                       \
        int64_t taps = g->KH * g->KW, wn = OB * j->Cg * taps;                                               \
        T *acc = malloc(sizeof(T) * (size_t)(OB * g->OW)), *xr = malloc(sizeof(T) * (size_t)g->W);         \
        T *wb = malloc(sizeof(T) * (size_t)wn);                                                             \
        if (!acc || !xr || !wb) { atomic_store(&j->oom, 1); free(acc); free(xr); free(wb); return; }        \
        int64_t wkey = -1;                                                                                  \
        for (int64_t i = s; i < e; i++) {                                                                   \
            int64_t oy = i % g->OH, ob = (i / g->OH) % j->oblocks, grp = (i / (g->OH * j->oblocks)) % g->G; \
            int64_t img = i / (g->OH * j->oblocks * g->G), o0 = ob * OB, no = j->Og - o0 < OB ? j->Og - o0 : OB; \
            if (wkey != i / g->OH) { /* a new channel block: its weights */                                 \
                wkey = i / g->OH;                                                                           \
                for (int64_t k = 0; k < no; k++)                                                            \
                    for (int64_t c = 0; c < j->Cg; c++)                                                     \
                        for (int64_t t = 0; t < taps; t++)                                                  \
                            wb[(k * j->Cg + c) * taps + t] = (T)weight(j, grp * j->Og + o0 + k, c, t / g->KW, t % g->KW); \
            }                                                                                               \
            memset(acc, 0, sizeof(T) * (size_t)(OB * g->OW));                                               \
            for (int64_t c = 0; c < j->Cg; c++)                                                             \
                for (int64_t kh = 0; kh < g->KH; kh++) {                                                    \
                    int64_t ih = oy * g->SH - g->PH + kh * g->DH;                                           \
                    if (ih < 0 || ih >= g->H) continue;                                                     \
                    int64_t xb = j->x->offset + ((img * g->C + grp * j->Cg + c) * g->H + ih) * g->W;        \
                    const T *row = xr;                                                                      \
                    if (DIRECT) row = (const T *)j->x->buf + xb;                                            \
                    else for (int64_t q = 0; q < g->W; q++) xr[q] = (T)nc_cpu_ld(j->x, xb + q);             \
                    for (int64_t kw = 0; kw < g->KW; kw++) {                                                \
                        /* output columns whose tap lands inside the row */                                  \
                        int64_t off = kw * g->DW - g->PW, lo = off >= 0 ? 0 : (-off + g->SW - 1) / g->SW;   \
                        int64_t hi = g->W - off <= 0 ? 0 : (g->W - off + g->SW - 1) / g->SW;                \
                        if (hi > g->OW) hi = g->OW;                                                         \
                        for (int64_t k = 0; k < no; k++) {                                                  \
                            T wv = wb[(k * j->Cg + c) * taps + kh * g->KW + kw];                             \
                            T *restrict ar = acc + k * g->OW;                                               \
                            const T *restrict xs = row + off;                                               \
                            if (g->SW == 1)                                                                 \
                                for (int64_t ox = lo; ox < hi; ox++) ar[ox] += wv * xs[ox];                 \
                            else                                                                            \
                                for (int64_t ox = lo; ox < hi; ox++) ar[ox] += wv * xs[ox * g->SW];         \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
            int a = j->epi ? j->epi->act : -1;                                                              \
            double p = j->epi ? j->epi->act_p : 0;                                                          \
            for (int64_t k = 0; k < no; k++) {                                                              \
                int64_t o = grp * j->Og + o0 + k, yb = j->y->offset + ((img * g->O + o) * g->OH + oy) * g->OW; \
                double b = j->epi && j->epi->bias ? nc_cpu_ld(j->epi->bias, j->epi->bias->offset + o) : 0;  \
                if (DIRECT && a < 0 && b == 0)                                                              \
                    memcpy((T *)j->y->buf + yb, acc + k * g->OW, sizeof(T) * (size_t)g->OW);               \
                else                                                                                        \
                    for (int64_t ox = 0; ox < g->OW; ox++)                                                  \
                        nc_cpu_st(j->y, yb + ox, nc_cpu_activate(a, (double)acc[k * g->OW + ox] + b, p));    \
            }                                                                                               \
        }                                                                                                   \
        free(acc);                                                                                          \
        free(xr);                                                                                           \
        free(wb);                                                                                           \
    }

TILED_PART(part_f32, float, 1)
TILED_PART(part_any, float, 0)
TILED_PART(part_f64, double, 1)

netcl_status nc_cpu_conv_tiled(netcl_device *dev, const nc_conv_args *g, const nc_desc *y, const nc_desc *x,
                               const nc_desc *w, const nc_conv_epi *epi, int flip)
{
    (void)dev;
    if (nc_cpu_conv_vec(g, y, x, w, epi, flip)) return NETCL_OK;
    job j = {g, y, x, w, epi, flip, g->C / g->G, g->O / g->G, (g->O / g->G + OB - 1) / OB, 0};
    int64_t parts = g->N * g->G * j.oblocks * g->OH;
    /* a part is about Cg*KH*KW*OW*OB multiply-adds; aim for 64k a task */
    int64_t work = j.Cg * g->KH * g->KW * g->OW * OB;
    nc_range_fn fn = y->dtype == NETCL_DTYPE_FLOAT64 ? part_f64 : y->dtype == NETCL_DTYPE_FLOAT32 ? part_f32 : part_any;
    nc_parallel_for(parts, 65536 / (work + 1) + 1, fn, &j);
    if (atomic_load(&j.oom)) return nc_fail(NETCL_ERR_OOM, "conv2d (tiled): out of host memory for its rows");
    return NETCL_OK;
}

/* ---- backward-weight (conv_tiled_weight) ------------------------------------------
 * One task per (part, output channel): each of its Cg x KH x KW weights is
 * the direct reference's sum (conv_direct.c) over the part's images. */
typedef struct {
    const nc_conv_args *g;
    const nc_desc *parts, *x, *dy;
    int64_t per;
} wjob;

static void weight_part(void *v, int64_t s, int64_t e)
{
    const wjob *j = v;
    const nc_conv_args *g = j->g;
    int64_t Cg = g->C / g->G, taps = g->KH * g->KW;
    for (int64_t i = s; i < e; i++) {
        int64_t part = i / g->O, o = i % g->O;
        int64_t n0 = part * j->per, n1 = n0 + j->per < g->N ? n0 + j->per : g->N;
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t t = 0; t < taps; t++)
                nc_cpu_st(j->parts, j->parts->offset + ((part * g->O + o) * Cg + c) * taps + t,
                          nc_cpu_conv_weight_sum(g, j->x, j->dy, o, c, t / g->KW, t % g->KW, n0, n1));
    }
}

netcl_status nc_cpu_conv_tiled_weight(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                      const nc_desc *dy, int64_t per)
{
    (void)dev;
    wjob j = {g, parts, x, dy, per};
    int64_t S = parts->sizes[0], work = (g->C / g->G) * g->KH * g->KW * per * g->OH * g->OW;
    nc_parallel_for(S * g->O, 65536 / (work + 1) + 1, weight_part, &j);
    return NETCL_OK;
}
