/* conv_vec.c — the cpu's float32 convolutions with output channels as the
 * vector lanes: the "tiled" strategy's forward and backward-data (the
 * flipped convolution), and backward-weight for the implicit_gemm entry
 * (at the end of the file). Forward: the weights are transposed once per
 * call to [C][KH][KW][O'] (O' = O rounded up to whole vectors,
 * zero-filled), and a block of P output pixels x up to 4 vectors of
 * channels is accumulated in registers: per tap, one broadcast input value
 * times one weight vector per accumulator. A part is a block of output rows
 * of one image, read from a zero-padded input patch built once per part.
 * An output's sum runs over (c, kh, kw) in that order, so the bits never
 * depend on the thread count; this file may contract multiply-adds into
 * FMAs (Makefile). */
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

/* ---- backward-weight ----------------------------------------------------------------
 * dW[o, t] (t = (c, kh, kw)) = sum over images and output pixels p of
 * dy[n, o, p] x[n, c, p's tap t]. dy is transposed to [N][OH*OW][O'] so a
 * pixel's channels are vectors, x zero-padded to [N][C][rows][cols] (the
 * window the taps read, from (-PH, -PW)) so a tap needs no bounds check. A
 * block of TB taps x NV vectors of channels accumulates in registers over
 * one image's pixels. Images are cut into at most WCHUNKS chunks, by the
 * shape alone (not the thread count), whose sums are added in order at the
 * end. */
#define WCHUNKS 16

typedef struct {
    const nc_conv_args *g;
    const float *xp, *dyt;      /* padded x, transposed dy */
    int64_t R, Cq, OV, T, L;    /* padded rows and cols; O'; taps; pixels of an image */
    const int64_t *toff;        /* a tap's offset in an image's padded x */
    float *part;                /* [chunks][T][OV] */
    int64_t chunks;
} wjob;

#define WBLOCK(NAME, NV, TB)                                                                              \
    NC_CPU_WIDE static void NAME(const wjob *j, int64_t n, int64_t t0, int64_t nt, int64_t v0, float *acc_mem) \
    {                                                                                                     \
        const nc_conv_args *g = j->g;                                                                     \
        vf acc[TB][NV];                                                                                   \
        for (int t = 0; t < TB; t++)                                                                      \
            for (int v = 0; v < NV; v++) {                                                                \
                if (t < nt) memcpy(&acc[t][v], acc_mem + (t0 + t) * j->OV + (v0 + v) * VL, sizeof(vf));   \
                else acc[t][v] = (vf){0};                                                                 \
            }                                                                                             \
        int64_t off[TB];                                                                                  \
        for (int t = 0; t < TB; t++) off[t] = j->toff[t < nt ? t0 + t : t0];                              \
        const float *xn = j->xp + n * g->C * j->R * j->Cq;                                                \
        const float *dn = j->dyt + n * j->L * j->OV + v0 * VL;                                            \
        for (int64_t oy = 0; oy < g->OH; oy++)                                                            \
            for (int64_t ox = 0; ox < g->OW; ox++) {                                                      \
                const float *dp = dn + (oy * g->OW + ox) * j->OV;                                         \
                const float *xq = xn + oy * g->SH * j->Cq + ox * g->SW;                                   \
                vf dv[NV];                                                                                \
                for (int v = 0; v < NV; v++) memcpy(&dv[v], dp + v * VL, sizeof(vf));                     \
                for (int t = 0; t < TB; t++) {                                                            \
                    float xv = xq[off[t]];                                                                \
                    for (int v = 0; v < NV; v++) acc[t][v] += dv[v] * xv;                                 \
                }                                                                                         \
            }                                                                                             \
        for (int t = 0; t < nt; t++)                                                                      \
            for (int v = 0; v < NV; v++) memcpy(acc_mem + (t0 + t) * j->OV + (v0 + v) * VL, &acc[t][v], sizeof(vf)); \
    }

WBLOCK(wblock1, 1, 16)
WBLOCK(wblock2, 2, 10)
WBLOCK(wblock4, 4, 6)

/* tasks [s, e) of (chunk, vector chunk of 4) */
static void weight_part(void *v, int64_t s, int64_t e)
{
    const wjob *j = v;
    const nc_conv_args *g = j->g;
    int64_t nvec = j->OV / VL, vchunks = (nvec + 3) / 4;
    for (int64_t i = s; i < e; i++) {
        int64_t k = i / vchunks, v0 = (i % vchunks) * 4, nv = nvec - v0 < 4 ? nvec - v0 : 4;
        int64_t n0 = k * g->N / j->chunks, n1 = (k + 1) * g->N / j->chunks;
        float *acc = j->part + k * j->T * j->OV;
        for (int64_t vv = v0; vv < v0 + nv;) {
            int64_t left = v0 + nv - vv;
            int w = left >= 4 ? 4 : left >= 2 ? 2 : 1, TB = w == 4 ? 6 : w == 2 ? 10 : 16;
            for (int64_t n = n0; n < n1; n++)
                for (int64_t t0 = 0; t0 < j->T; t0 += TB) {
                    int64_t nt = j->T - t0 < TB ? j->T - t0 : TB;
                    if (w == 4) wblock4(j, n, t0, nt, vv, acc);
                    else if (w == 2) wblock2(j, n, t0, nt, vv, acc);
                    else wblock1(j, n, t0, nt, vv, acc);
                }
            vv += w;
        }
    }
}

typedef struct { const nc_conv_args *g; const float *x, *dy; float *xp, *dyt; int64_t R, Cq, OV, L; } prep;

/* images [s, e): padded x and transposed dy */
static void prep_part(void *v, int64_t s, int64_t e)
{
    const prep *p = v;
    const nc_conv_args *g = p->g;
    int64_t w0 = g->PW < p->Cq ? g->PW : p->Cq, w1 = g->PW + g->W < p->Cq ? g->PW + g->W : p->Cq;
    for (int64_t n = s; n < e; n++) {
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t r = 0; r < p->R; r++) {
                float *d = p->xp + ((n * g->C + c) * p->R + r) * p->Cq;
                int64_t ih = r - g->PH;
                if (ih < 0 || ih >= g->H) { memset(d, 0, sizeof(float) * (size_t)p->Cq); continue; }
                memset(d, 0, sizeof(float) * (size_t)w0);
                if (w1 > w0) memcpy(d + w0, p->x + ((n * g->C + c) * g->H + ih) * g->W, sizeof(float) * (size_t)(w1 - w0));
                memset(d + w1, 0, sizeof(float) * (size_t)(p->Cq - w1));
            }
        /* dy [O][L] -> [L][OV] in tiles of 16 x 16, the padding lanes zero */
        float *t = p->dyt + n * p->L * p->OV;
        const float *src = p->dy + n * g->O * p->L;
        for (int64_t q0 = 0; q0 < p->L; q0 += 16)
            for (int64_t o0 = 0; o0 < p->OV; o0 += 16) {
                int64_t q1 = q0 + 16 < p->L ? q0 + 16 : p->L;
                for (int64_t q = q0; q < q1; q++)
                    for (int64_t o = o0; o < o0 + 16; o++) t[q * p->OV + o] = o < g->O ? src[o * p->L + q] : 0.0f;
            }
    }
}

int nc_cpu_conv_vec_weight(const nc_conv_args *g, const nc_desc *out, const nc_desc *x, const nc_desc *dy)
{
    if (g->G != 1 || out->dtype != NETCL_DTYPE_FLOAT32 || x->dtype != NETCL_DTYPE_FLOAT32 || dy->dtype != NETCL_DTYPE_FLOAT32)
        return 0;
    int64_t OV = (g->O + VL - 1) / VL * VL, T = g->C * g->KH * g->KW, L = g->OH * g->OW;
    int64_t R = (g->OH - 1) * g->SH + (g->KH - 1) * g->DH + 1, Cq = (g->OW - 1) * g->SW + (g->KW - 1) * g->DW + 1;
    /* the chunks' sums take at most 4 MiB (a shape's rule, not the thread count's) */
    int64_t chunks = g->N < WCHUNKS ? g->N : WCHUNKS;
    while (chunks > 1 && chunks * T * OV > (1 << 20)) chunks /= 2;
    float *xp = aligned_alloc(64, sizeof(float) * (size_t)((g->N * g->C * R * Cq + 15) / 16 * 16));
    float *dyt = aligned_alloc(64, sizeof(float) * (size_t)(g->N * L * OV));
    float *part = aligned_alloc(64, sizeof(float) * (size_t)(chunks * T * OV));
    if (part) memset(part, 0, sizeof(float) * (size_t)(chunks * T * OV));
    int64_t *toff = malloc(sizeof(int64_t) * (size_t)T);
    int ok = xp && dyt && part && toff;
    if (ok) {
        prep p = {g, (const float *)x->buf + x->offset, (const float *)dy->buf + dy->offset, xp, dyt, R, Cq, OV, L};
        nc_parallel_for(g->N, 1, prep_part, &p);
        for (int64_t t = 0; t < T; t++) {
            int64_t c = t / (g->KH * g->KW), kh = t / g->KW % g->KH, kw = t % g->KW;
            toff[t] = (c * R + kh * g->DH) * Cq + kw * g->DW;
        }
        wjob j = {g, xp, dyt, R, Cq, OV, T, L, toff, part, chunks};
        nc_parallel_for(chunks * ((OV / VL + 3) / 4), 1, weight_part, &j);
        float *o = (float *)out->buf + out->offset;   /* [O, T]: the chunks added in order */
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t t = 0; t < T; t++) {
                float s = 0;
                for (int64_t k = 0; k < chunks; k++) s += part[(k * T + t) * OV + oc];
                o[oc * T + t] = s;
            }
    }
    free(xp);
    free(dyt);
    free(part);
    free(toff);
    return ok;
}
