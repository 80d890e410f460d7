/* conv_vec.c — the cpu's float32 direct convolution for the "tiled" strategy
 * (forward, and backward-data as the flipped convolution): output channels
 * are the vector lanes. The weights are transposed once per call to
 * [C][KH][KW][O'] (O' = O rounded up to whole vectors, zero-filled), and a
 * block of P output pixels x up to 4 vectors of channels is accumulated in
 * registers: per tap, one broadcast input value times one weight vector per
 * accumulator. A part is one output row of one image, and an output's sum
 * runs over (c, kh, kw) in that order, so the bits never depend on the
 * thread count; this file may contract multiply-adds into FMAs (Makefile). */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define VL 16   /* floats per vector */
typedef float vf __attribute__((vector_size(VL * sizeof(float))));

typedef struct {
    const nc_conv_args *g;
    const nc_desc *y, *x;
    const nc_conv_epi *epi;
    const float *wt;        /* [C][KH][KW][OV] */
    int64_t OV;             /* O rounded up to whole vectors */
    atomic_int *oom;        /* a part could not get its patch */
    int64_t R, RH, WP;      /* output rows of a part; its patch's rows and width */
} job;

/* A block: pixels [ox0, ox0 + pc) of row (n, oy) x vectors [v0, v0 + NV),
 * from the part's zero-padded input patch xp[C][RH][WP], its top row the
 * first tap row of output row oy (every tap of every pixel of the block
 * inside it); results through the epilogue into y. */
#define BLOCK(NAME, NV, P)                                                                                \
    NC_CPU_WIDE static void NAME(const job *j, const float *xp, int64_t WP, int64_t n, int64_t oy, int64_t ox0, \
                                 int64_t pc, int64_t v0)                                                  \
    {                                                                                                     \
        const nc_conv_args *g = j->g;                                                                     \
        vf acc[P][NV];                                                                                    \
        for (int p = 0; p < P; p++)                                                                       \
            for (int v = 0; v < NV; v++) acc[p][v] = (vf){0};                                             \
        const int64_t SW = g->SW, DW = g->DW, KW = g->KW, KH = g->KH, OV = j->OV;                         \
        for (int64_t ck = 0; ck < g->C * KH; ck++) {                                                      \
            const float *row = xp + ((ck / KH) * j->RH + (ck % KH) * g->DH) * WP + ox0 * SW;              \
            const float *wr = j->wt + ck * KW * OV + v0 * VL;                                             \
            for (int64_t kw = 0; kw < KW; kw++, wr += OV) {                                               \
                vf wv[NV];                                                                                \
                for (int v = 0; v < NV; v++) memcpy(&wv[v], wr + v * VL, sizeof(vf));                     \
                const float *r = row + kw * DW;                                                           \
                for (int p = 0; p < P; p++) {                                                             \
                    float xv = r[p * SW];                                                                 \
                    for (int v = 0; v < NV; v++) acc[p][v] += wv[v] * xv;                                 \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        float lanes[P][NV * VL];                                                                          \
        memcpy(lanes, acc, sizeof lanes);                                                                 \
        epilogue(j, &lanes[0][0], NV * VL, pc, n, oy, ox0, v0 * VL);                                      \
    }

/* lanes[p * stride + l]: channel o0 + l of pixel ox0 + p, into y with the
 * bias (added in float: the double sum rounds the same) and the activation */
static void epilogue(const job *j, const float *lanes, int64_t stride, int64_t pc, int64_t n, int64_t oy, int64_t ox0,
                     int64_t o0)
{
    const nc_conv_args *g = j->g;
    const nc_conv_epi *e = j->epi;
    const float *bias = e && e->bias ? (const float *)e->bias->buf + e->bias->offset : NULL;
    int act = e ? e->act : -1;
    for (int64_t l = 0; l < stride && o0 + l < g->O; l++) {
        float b = bias ? bias[(o0 + l) * e->bias->strides[0]] : 0.0f;
        float *y = (float *)j->y->buf + j->y->offset + ((n * g->O + o0 + l) * g->OH + oy) * g->OW + ox0;
        for (int64_t p = 0; p < pc; p++) {
            float v = lanes[p * stride + l];
            if (bias) v = v + b;
            if (act == NETCL_OP_RELU) v = v > 0 ? v : 0.0f;
            else if (act >= 0) v = (float)nc_cpu_activate(act, v, e->act_p);
            y[p] = v;
        }
    }
}

typedef void (*block_fn)(const job *, const float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);

BLOCK(block1_p8, 1, 8)
BLOCK(block1_p12, 1, 12)
BLOCK(block1_p14, 1, 14)
BLOCK(block2_p6, 2, 6)
BLOCK(block2_p8, 2, 8)
BLOCK(block2_p10, 2, 10)
BLOCK(block2_p12, 2, 12)
BLOCK(block4_p4, 4, 4)
BLOCK(block4_p5, 4, 5)
BLOCK(block4_p6, 4, 6)
BLOCK(block4_p7, 4, 7)

typedef struct { int nv, p; block_fn fn; } variant;
static const variant variants[] = {
    {1, 14, block1_p14}, {1, 12, block1_p12}, {1, 8, block1_p8},
    {2, 12, block2_p12}, {2, 10, block2_p10}, {2, 8, block2_p8}, {2, 6, block2_p6},
    {4, 7, block4_p7},   {4, 6, block4_p6},   {4, 5, block4_p5}, {4, 4, block4_p4},
};

/* the block width for nv vectors that wastes the fewest pixels of a row of
 * OW (the wider on a tie) */
static const variant *pick(int nv, int64_t OW)
{
    const variant *best = NULL;
    int64_t best_waste = 0;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        if (variants[i].nv != nv) continue;
        int64_t P = variants[i].p, waste = (OW + P - 1) / P * P - OW;
        if (!best || waste < best_waste) best = &variants[i], best_waste = waste;
    }
    return best;
}

/* parts [s, e) of (image, block of R output rows): the block's zero-padded
 * input patch, then its rows' blocks */
static void rows_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t WP = j->WP, RH = j->RH, nvec = j->OV / VL, blocks = (g->OH + j->R - 1) / j->R;
    float *xp = malloc(sizeof(float) * (size_t)(g->C * RH * WP));
    if (!xp) { atomic_store(j->oom, 1); return; }
    const float *x = (const float *)j->x->buf + j->x->offset;
    int64_t w0 = g->PW < WP ? g->PW : WP, w1 = g->PW + g->W < WP ? g->PW + g->W : WP;   /* the input's columns */
    for (int64_t i = s; i < e; i++) {
        int64_t n = i / blocks, oy0 = (i % blocks) * j->R, oy1 = oy0 + j->R < g->OH ? oy0 + j->R : g->OH;
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t r = 0; r < RH; r++) {
                float *d = xp + (c * RH + r) * WP;
                int64_t ih = oy0 * g->SH - g->PH + r;
                if (ih < 0 || ih >= g->H) { memset(d, 0, sizeof(float) * (size_t)WP); continue; }
                memset(d, 0, sizeof(float) * (size_t)w0);
                memcpy(d + w0, x + ((n * g->C + c) * g->H + ih) * g->W, sizeof(float) * (size_t)(w1 - w0));
                memset(d + w1, 0, sizeof(float) * (size_t)(WP - w1));
            }
        for (int64_t oy = oy0; oy < oy1; oy++) {
            const float *rows = xp + (oy - oy0) * g->SH * WP;
            for (int64_t v0 = 0; v0 < nvec;) {
                int64_t left = nvec - v0;
                int nv = left >= 4 ? 4 : left >= 2 ? 2 : 1;
                const variant *b = pick(nv, g->OW);
                for (int64_t ox0 = 0; ox0 < g->OW; ox0 += b->p)
                    b->fn(j, rows, WP, n, oy, ox0, g->OW - ox0 < b->p ? g->OW - ox0 : b->p, v0);
                v0 += nv;
            }
        }
    }
    free(xp);
}

int nc_cpu_conv_vec(const nc_conv_args *g, const nc_desc *y, const nc_desc *x, const nc_desc *w, const nc_conv_epi *epi,
                    int flip)
{
    if (g->G != 1 || y->dtype != NETCL_DTYPE_FLOAT32 || x->dtype != NETCL_DTYPE_FLOAT32 ||
        w->dtype != NETCL_DTYPE_FLOAT32 || (epi && epi->bias && epi->bias->dtype != NETCL_DTYPE_FLOAT32))
        return 0;
    int64_t OV = (g->O + VL - 1) / VL * VL, taps = g->KH * g->KW;
    float *wt = calloc((size_t)(g->C * taps * OV), sizeof(float));
    if (!wt) return 0;
    const float *wp = (const float *)w->buf + w->offset;
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t o = 0; o < g->O; o++) {
                int64_t kh = t / g->KW, kw = t % g->KW;
                /* flip: w is [C', O', KH, KW] of the convolution whose backward-data this is */
                float v = flip ? wp[((c * g->O + o) * g->KH + (g->KH - 1 - kh)) * g->KW + (g->KW - 1 - kw)]
                               : wp[((o * g->C + c) * g->KH + kh) * g->KW + kw];
                wt[(c * taps + t) * OV + o] = v;
            }
    atomic_int oom = 0;
    job j = {g, y, x, epi, wt, OV, &oom, 1, 0, 0};
    /* rows per part: about four parts per thread, at most a quarter of the image */
    int64_t want = 4 * nc_cpu_threads(), per_img = (want + g->N - 1) / g->N;
    j.R = (g->OH + per_img - 1) / per_img;
    if (j.R < 1) j.R = 1;
    j.RH = (j.R - 1) * g->SH + (g->KH - 1) * g->DH + 1;
    /* the patch covers the widest block's overrun past the last pixel */
    j.WP = (g->OW + 14) * g->SW + (g->KW - 1) * g->DW + 1;
    int64_t parts = g->N * ((g->OH + j.R - 1) / j.R);
    int64_t work = j.R * g->C * taps * g->OW * OV;   /* multiply-adds of a part */
    nc_parallel_for(parts, 262144 / (work + 1) + 1, rows_part, &j);
    free(wt);
    return !atomic_load(&oom);
}
