/* conv_winograd.c — the CPU's float32 Winograd F(2x2, 3x3) and F(4x4, 3x3)
 * transforms (conv_direct.c's double loops stay the reference, and serve
 * the other dtypes). Each transform matrix is written out as sums, applied
 * to runs of up to TX consecutive tiles of one channel at a time, so that
 * the inner loops run across tiles (vectorised) and the results go out as
 * contiguous runs of the [T, ..., tiles] layouts. Same layouts and meaning
 * as the reference (backend.h's nc_conv_kernel). */
#include "cpu.h"
#include <string.h>

#define TX 64 /* consecutive tiles per run */


/* ---- the 1-D transforms: o = M d for B^T, G, A^T and the adjoints A, G^T ---- */
static inline void bt4(const float *d, float *o)
{
    o[0] = 4 * d[0] - 5 * d[2] + d[4];
    o[1] = -4 * (d[1] + d[2]) + d[3] + d[4];
    o[2] = 4 * (d[1] - d[2]) - d[3] + d[4];
    o[3] = 2 * (d[3] - d[1]) - d[2] + d[4];
    o[4] = 2 * (d[1] - d[3]) - d[2] + d[4];
    o[5] = 4 * d[1] - 5 * d[3] + d[5];
}
static inline void bt2(const float *d, float *o)
{
    o[0] = d[0] - d[2];
    o[1] = d[1] + d[2];
    o[2] = d[2] - d[1];
    o[3] = d[1] - d[3];
}
static inline void at4(const float *d, float *o)
{
    o[0] = d[0] + d[1] + d[2] + d[3] + d[4];
    o[1] = d[1] - d[2] + 2 * (d[3] - d[4]);
    o[2] = d[1] + d[2] + 4 * (d[3] + d[4]);
    o[3] = d[1] - d[2] + 8 * (d[3] - d[4]) + d[5];
}
static inline void at2(const float *d, float *o)
{
    o[0] = d[0] + d[1] + d[2];
    o[1] = d[1] - d[2] - d[3];
}
/* A d: the adjoint of A^T (output gradients into tiles) */
static inline void ata4(const float *d, float *o)
{
    o[0] = d[0];
    o[1] = d[0] + d[1] + d[2] + d[3];
    o[2] = d[0] - d[1] + d[2] - d[3];
    o[3] = d[0] + 2 * d[1] + 4 * d[2] + 8 * d[3];
    o[4] = d[0] - 2 * d[1] + 4 * d[2] - 8 * d[3];
    o[5] = d[3];
}
static inline void ata2(const float *d, float *o)
{
    o[0] = d[0];
    o[1] = d[0] + d[1];
    o[2] = d[0] - d[1];
    o[3] = -d[1];
}
static inline void g4(const float *k, float *o)
{
    o[0] = 0.25f * k[0];
    o[1] = -(k[0] + k[1] + k[2]) / 6;
    o[2] = (k[1] - k[0] - k[2]) / 6;
    o[3] = k[0] / 24 + k[1] / 12 + k[2] / 6;
    o[4] = k[0] / 24 - k[1] / 12 + k[2] / 6;
    o[5] = k[2];
}
static inline void g2(const float *k, float *o)
{
    o[0] = k[0];
    o[1] = 0.5f * (k[0] + k[1] + k[2]);
    o[2] = 0.5f * (k[0] - k[1] + k[2]);
    o[3] = k[2];
}
/* G^T d: the adjoint of G (tile gradients into the 3x3 weight) */
static inline void ga4(const float *d, float *o)
{
    o[0] = 0.25f * d[0] - (d[1] + d[2]) / 6 + (d[3] + d[4]) / 24;
    o[1] = (d[2] - d[1]) / 6 + (d[3] - d[4]) / 12;
    o[2] = (d[3] + d[4] - d[1] - d[2]) / 6 + d[5];
}
static inline void ga2(const float *d, float *o)
{
    o[0] = d[0] + 0.5f * (d[1] + d[2]);
    o[1] = 0.5f * (d[1] - d[2]);
    o[2] = 0.5f * (d[1] + d[2]) + d[3];
}

typedef struct {
    const nc_conv_args *g;
    float *out;
    const float *a;
    int64_t m, flip, th, tw, P, ps, S;
} wjob;

/* tile p's element in a blocked [T, S, R, ps] layout (row r of R) */
static inline int64_t blocked(const wjob *j, int64_t t, int64_t R, int64_t r, int64_t p)
{
    return ((t * j->S + p / j->ps) * R + r) * j->ps + p % j->ps;
}

/* writes nt values of each of the T planes of buf (TX apart) as tiles p0.. of
 * row r in the blocked layout, in runs that stop at block boundaries */
static void store_blocked(const wjob *j, int64_t T, int64_t R, int64_t r, int64_t p0, int64_t nt, const float *buf)
{
    for (int64_t k = 0; k < nt;) {
        int64_t run = j->ps - (p0 + k) % j->ps;
        if (run > nt - k) run = nt - k;
        for (int64_t t = 0; t < T; t++) memcpy(j->out + blocked(j, t, R, r, p0 + k), buf + t * TX + k, (size_t)run * 4);
        k += run;
    }
}

/* tile p's place: image n, tile row ty, tile column tx */
static inline void tile_of(const wjob *j, int64_t p, int64_t *n, int64_t *ty, int64_t *tx)
{
    int64_t per = j->th * j->tw, r = p % per;
    *n = p / per, *ty = r / j->tw, *tx = r % j->tw;
}

/* an R x R patch of a plane [H, W] at (h0, w0), zero outside, into column t
 * of d[R * R][TX] */
static inline void gather(float (*d)[TX], int64_t t, const float *x, int64_t h0, int64_t w0, int64_t H, int64_t W, int R)
{
    if (h0 >= 0 && w0 >= 0 && h0 + R <= H && w0 + R <= W) {
        for (int a = 0; a < R; a++)
            for (int b = 0; b < R; b++) d[a * R + b][t] = x[(h0 + a) * W + w0 + b];
        return;
    }
    for (int a = 0; a < R; a++)
        for (int b = 0; b < R; b++) {
            int64_t h = h0 + a, w = w0 + b;
            d[a * R + b][t] = h >= 0 && h < H && w >= 0 && w < W ? x[h * W + w] : 0.f;
        }
}

/* out = F d F^T for the R x R tiles of a run, F taking R values to Q: d's
 * element (k, t) (k = row * R + column, t the run's tile) at src[k * ss + t],
 * out's at dst[k * TX + t]; rows first, then columns, each across the run */
#define SEPARABLE(NAME, R_, Q_, F)                                                                                \
    static inline __attribute__((always_inline)) void NAME(const float *src, int64_t ss, float *dst, int64_t nt)  \
    {                                                                                                             \
        float tmp[R_ * Q_][TX];                                                                                   \
        for (int a = 0; a < R_; a++)                                                                              \
            for (int64_t t = 0; t < nt; t++) {                                                                    \
                float in[R_], o[Q_];                                                                              \
                for (int k = 0; k < R_; k++) in[k] = src[(a * R_ + k) * ss + t];                                  \
                F(in, o);                                                                                         \
                for (int b = 0; b < Q_; b++) tmp[a * Q_ + b][t] = o[b];                                           \
            }                                                                                                     \
        for (int b = 0; b < Q_; b++)                                                                              \
            for (int64_t t = 0; t < nt; t++) {                                                                    \
                float in[R_], o[Q_];                                                                              \
                for (int a = 0; a < R_; a++) in[a] = tmp[a * Q_ + b][t];                                          \
                F(in, o);                                                                                         \
                for (int r = 0; r < Q_; r++) dst[(r * Q_ + b) * TX + t] = o[r];                                   \
            }                                                                                                     \
    }
SEPARABLE(input_tiles2, 4, 4, bt2)
SEPARABLE(input_tiles4, 6, 6, bt4)
SEPARABLE(output_tiles2, 4, 2, at2)
SEPARABLE(output_tiles4, 6, 4, at4)
SEPARABLE(grad_tiles2, 2, 4, ata2)
SEPARABLE(grad_tiles4, 4, 6, ata4)

/* Into the tile domain: INPUT (V = B^T d B, patches of x) and OUTPUT_GRAD
 * (dM = A dy A^T, patches of dy). An item is a channel and a run of TX
 * consecutive tiles (across tile rows and images, so small images fill the
 * run too): the patches are gathered tile by tile, transformed across the
 * run, and leave as contiguous runs of the blocked layout. */
#define TO_TILES(NAME, M_, A_, R_, TILES, CH, HH, WW, PH_, PW_)                                                  \
    NC_CPU_WIDE static void NAME(void *v, int64_t s, int64_t e)                                                  \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        const nc_conv_args *g = j->g;                                                                             \
        int64_t runs = (j->P + TX - 1) / TX;                                                                      \
        float d[R_ * R_][TX], out[A_ * A_ * TX];                                                                  \
        for (int64_t i = s; i < e; i++) {                                                                         \
            int64_t c = i / runs, p0 = i % runs * TX, nt = j->P - p0 < TX ? j->P - p0 : TX, n, ty, tx;            \
            for (int64_t t = 0; t < nt; t++) {                                                                    \
                tile_of(j, p0 + t, &n, &ty, &tx);                                                                 \
                gather(d, t, j->a + (n * (CH) + c) * (HH) * (WW), ty * M_ - (PH_), tx * M_ - (PW_), HH, WW, R_);  \
            }                                                                                                     \
            TILES(d[0], TX, out, nt);                                                                             \
            store_blocked(j, A_ * A_, CH, c, p0, nt, out);                                                        \
        }                                                                                                         \
    }
TO_TILES(input2, 2, 4, 4, input_tiles2, g->C, g->H, g->W, g->PH, g->PW)
TO_TILES(input4, 4, 6, 6, input_tiles4, g->C, g->H, g->W, g->PH, g->PW)
TO_TILES(output_grad2, 2, 4, 2, grad_tiles2, g->O, g->OH, g->OW, 0, 0)
TO_TILES(output_grad4, 4, 6, 4, grad_tiles4, g->O, g->OH, g->OW, 0, 0)

/* Out of the tile domain: OUTPUT (y = A^T M A) for an output channel and a
 * run of tiles, each tile's m x m result scattered into y (clipped at its
 * edges). */
#define FROM_TILES(NAME, M_, TILES)                                                                               \
    NC_CPU_WIDE static void NAME(void *v, int64_t s, int64_t e)                                                  \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        const nc_conv_args *g = j->g;                                                                             \
        int64_t runs = (j->P + TX - 1) / TX;                                                                      \
        float ys[M_ * M_ * TX];                                                                                   \
        for (int64_t i = s; i < e; i++) {                                                                         \
            int64_t o = i / runs, p0 = i % runs * TX, nt = j->P - p0 < TX ? j->P - p0 : TX, n, ty, tx;            \
            TILES(j->a + o * j->P + p0, g->O * j->P, ys, nt);                                                     \
            for (int64_t t = 0; t < nt; t++) {                                                                    \
                tile_of(j, p0 + t, &n, &ty, &tx);                                                                 \
                float *y = j->out + (n * g->O + o) * g->OH * g->OW;                                               \
                for (int q = 0; q < M_ && ty * M_ + q < g->OH; q++)                                               \
                    for (int u = 0; u < M_ && tx * M_ + u < g->OW; u++)                                           \
                        y[(ty * M_ + q) * g->OW + tx * M_ + u] = ys[(q * M_ + u) * TX + t];                       \
            }                                                                                                     \
        }                                                                                                         \
    }
FROM_TILES(output2, 2, output_tiles2)
FROM_TILES(output4, 4, output_tiles4)

/* The weight transform U = G k G^T and its adjoint dw = G^T dU G, per
 * output channel o over runs of CH input channels c: the loops over c run
 * across the channels (the contiguous dim of U and dU). flip: k from the
 * flipped, transposed w [C, O, 3, 3]. */
#define CH 64
#define WEIGHT_PASSES(M_, A_, G, GA)                                                                              \
    NC_CPU_WIDE static void weight##M_(void *v, int64_t s, int64_t e)                                            \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        int64_t O = j->g->O, C = j->g->C;                                                                         \
        float u[A_ * A_][CH];                                                                                     \
        for (int64_t o = s; o < e; o++)                                                                           \
            for (int64_t c0 = 0; c0 < C; c0 += CH) {                                                              \
                int64_t n = C - c0 < CH ? C - c0 : CH;                                                            \
                for (int64_t q = 0; q < n; q++) {                                                                 \
                    int64_t c = c0 + q;                                                                           \
                    float k[9], row[3][A_], d[3], col[A_];                                                        \
                    for (int a = 0; a < 3; a++)                                                                   \
                        for (int b = 0; b < 3; b++)                                                               \
                            k[a * 3 + b] = j->flip ? j->a[((c * O + o) * 3 + 2 - a) * 3 + 2 - b]                  \
                                                   : j->a[((o * C + c) * 3 + a) * 3 + b];                         \
                    for (int a = 0; a < 3; a++) G(k + 3 * a, row[a]);                                             \
                    for (int b = 0; b < A_; b++) {                                                                \
                        for (int a = 0; a < 3; a++) d[a] = row[a][b];                                             \
                        G(d, col);                                                                                \
                        for (int r = 0; r < A_; r++) u[r * A_ + b][q] = col[r];                                   \
                    }                                                                                             \
                }                                                                                                 \
                for (int t = 0; t < A_ * A_; t++) memcpy(j->out + ((int64_t)t * O + o) * C + c0, u[t], (size_t)n * 4); \
            }                                                                                                     \
    }                                                                                                             \
    NC_CPU_WIDE static void weight_grad##M_(void *v, int64_t s, int64_t e)                                       \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        int64_t O = j->g->O, C = j->g->C;                                                                         \
        for (int64_t o = s; o < e; o++)                                                                           \
            for (int64_t c = 0; c < C; c++) {                                                                     \
                float x[A_ * A_], row[A_][3], d[A_], k[3];                                                        \
                for (int t = 0; t < A_ * A_; t++) x[t] = j->a[((int64_t)t * O + o) * C + c];                      \
                for (int r = 0; r < A_; r++) GA(x + r * A_, row[r]);                                              \
                for (int b = 0; b < 3; b++) {                                                                     \
                    for (int r = 0; r < A_; r++) d[r] = row[r][b];                                                \
                    GA(d, k);                                                                                     \
                    for (int a = 0; a < 3; a++) j->out[(o * C + c) * 9 + a * 3 + b] = k[a];                       \
                }                                                                                                 \
            }                                                                                                     \
    }

WEIGHT_PASSES(2, 4, g2, ga2)
WEIGHT_PASSES(4, 6, g4, ga4)

/* the tiles past P in the last block of a blocked layout are zeros */
static void zero_tail(const wjob *j, int64_t T, int64_t R)
{
    int64_t Q = j->S * j->ps;
    if (Q == j->P) return;
    for (int64_t t = 0; t < T; t++)
        for (int64_t r = 0; r < R; r++) memset(j->out + blocked(j, t, R, r, j->P), 0, (size_t)(Q - j->P) * 4);
}

int nc_cpu_winograd_f32(nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out, const nc_desc *a, int64_t m,
                        int64_t p1)
{
    if (out->dtype != NETCL_DTYPE_FLOAT32 || a->dtype != NETCL_DTYPE_FLOAT32 || (m != 2 && m != 4)) return 0;
    int64_t th = (g->OH + m - 1) / m, tw = (g->OW + m - 1) / m, A = m + 2;
    wjob j = {g, NC_CPU_F32(out), NC_CPU_CF32(a), m, kind == NC_WINO_WEIGHT ? p1 : 0, th, tw, g->N * th * tw, 0, 1};
    j.ps = p1 > 0 && kind != NC_WINO_WEIGHT ? p1 : j.P;
    if (j.ps < 1) j.ps = 1;
    j.S = (j.P + j.ps - 1) / j.ps;
    int64_t runs = (j.P + TX - 1) / TX;
    switch (kind) {
    case NC_WINO_INPUT:
        zero_tail(&j, A * A, g->C);
        nc_parallel_for(g->C * runs, 1, m == 4 ? input4 : input2, &j);
        return 1;
    case NC_WINO_OUTPUT_GRAD:
        zero_tail(&j, A * A, g->O);
        nc_parallel_for(g->O * runs, 1, m == 4 ? output_grad4 : output_grad2, &j);
        return 1;
    case NC_WINO_OUTPUT: nc_parallel_for(g->O * runs, 1, m == 4 ? output4 : output2, &j); return 1;
    case NC_WINO_WEIGHT: nc_parallel_for(g->O, 1, m == 4 ? weight4 : weight2, &j); return 1;
    case NC_WINO_WEIGHT_GRAD: nc_parallel_for(g->O, 1, m == 4 ? weight_grad4 : weight_grad2, &j); return 1;
    default: return 0;
    }
}
