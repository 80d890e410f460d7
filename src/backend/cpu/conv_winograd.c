/* conv_winograd.c — the CPU's float32 Winograd F(2x2, 3x3) and F(4x4, 3x3)
 * transforms (conv_direct.c's double loops stay the reference, and serve
 * the other dtypes). Each transform matrix is written out as sums, and the
 * tile transforms run over a run of up to TX tiles of one tile row at a
 * time: the input rows are staged with their zero padding in a row buffer,
 * one direction is applied across the run's tiles (the inner loops run
 * along the tiles, which vectorises), then the other, and the results go
 * out as contiguous runs of the [T, ..., tiles] layouts. Same layouts and
 * meaning as the reference (backend.h's nc_conv_kernel). */
#include "cpu.h"
#include <string.h>

#define TX 64 /* tiles of one tile row per run */

#define F32(d) ((float *)(d)->buf + (d)->offset)
#define CF32(d) ((const float *)(d)->buf + (d)->offset)

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

/* a row's values at columns w0 + t*m + k, t < nt, as A planes sk[k][t] (zero
 * outside [0, W) or where the row is not valid): the tile transforms then
 * read each tap contiguously across the tiles */
static void stage_split(float (*sk)[TX], const float *row, int64_t w0, int64_t nt, int64_t m, int64_t A, int64_t W, int valid)
{
    for (int64_t k = 0; k < A; k++) {
        int64_t first = w0 + k, lo = 0, hi = 0;   /* tiles [lo, hi) read inside the row */
        if (valid) {
            lo = first >= 0 ? 0 : (-first + m - 1) / m;
            hi = W - 1 - first < 0 ? 0 : (W - 1 - first) / m + 1;
        }
        if (lo > nt) lo = nt;
        if (hi > nt) hi = nt;
        if (hi < lo) hi = lo;
        for (int64_t t = 0; t < lo; t++) sk[k][t] = 0;
        for (int64_t t = lo; t < hi; t++) sk[k][t] = row[first + t * m];
        for (int64_t t = hi; t < nt; t++) sk[k][t] = 0;
    }
}

/* The passes for one tile size: INPUT (V = B^T d B), OUTPUT (y = A^T M A),
 * OUTPUT_GRAD (dM = A dy A^T); items are (channel, image, tile row). */
#define WINO_PASSES(M_, A_, BT, AT, ATA)                                                                          \
    NC_CPU_WIDE static void input##M_(void *v, int64_t s, int64_t e)                                             \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        const nc_conv_args *g = j->g;                                                                             \
        float sk[A_][TX], tmp[A_ * A_][TX], out[A_ * A_ * TX];                                                    \
        for (int64_t i = s; i < e; i++) {                                                                         \
            int64_t c = i / (g->N * j->th), n = i % (g->N * j->th) / j->th, ty = i % j->th;                       \
            const float *x = j->a + (n * g->C + c) * g->H * g->W;                                                 \
            for (int64_t tx0 = 0; tx0 < j->tw; tx0 += TX) {                                                       \
                int64_t nt = j->tw - tx0 < TX ? j->tw - tx0 : TX;                                                 \
                for (int a = 0; a < A_; a++) {                                                                    \
                    int64_t h = ty * M_ - g->PH + a;                                                              \
                    int ok = h >= 0 && h < g->H;                                                                  \
                    stage_split(sk, ok ? x + h * g->W : x, tx0 * M_ - g->PW, nt, M_, A_, g->W, ok);               \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[A_], o[A_];                                                                       \
                        for (int k = 0; k < A_; k++) d[k] = sk[k][t];                                             \
                        BT(d, o);                                                                                 \
                        for (int b = 0; b < A_; b++) tmp[a * A_ + b][t] = o[b];                                   \
                    }                                                                                             \
                }                                                                                                 \
                for (int b = 0; b < A_; b++)                                                                      \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[A_], o[A_];                                                                       \
                        for (int a = 0; a < A_; a++) d[a] = tmp[a * A_ + b][t];                                   \
                        BT(d, o);                                                                                 \
                        for (int r = 0; r < A_; r++) out[(r * A_ + b) * TX + t] = o[r];                           \
                    }                                                                                             \
                store_blocked(j, A_ * A_, g->C, c, (n * j->th + ty) * j->tw + tx0, nt, out);                      \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    NC_CPU_WIDE static void output##M_(void *v, int64_t s, int64_t e)                                            \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        const nc_conv_args *g = j->g;                                                                             \
        float tmp[M_ * A_][TX], ys[M_][TX];                                                                       \
        for (int64_t i = s; i < e; i++) {                                                                         \
            int64_t o = i / (g->N * j->th), n = i % (g->N * j->th) / j->th, ty = i % j->th;                       \
            float *y = j->out + (n * g->O + o) * g->OH * g->OW;                                                   \
            for (int64_t tx0 = 0; tx0 < j->tw; tx0 += TX) {                                                       \
                int64_t nt = j->tw - tx0 < TX ? j->tw - tx0 : TX, p0 = (n * j->th + ty) * j->tw + tx0;            \
                const float *mp = j->a + o * j->P + p0;                                                           \
                int64_t plane = g->O * j->P;                                                                      \
                for (int b = 0; b < A_; b++)                                                                      \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[A_], r[M_];                                                                       \
                        for (int a = 0; a < A_; a++) d[a] = mp[(a * A_ + b) * plane + t];                         \
                        AT(d, r);                                                                                 \
                        for (int q = 0; q < M_; q++) tmp[q * A_ + b][t] = r[q];                                   \
                    }                                                                                             \
                for (int q = 0; q < M_ && ty * M_ + q < g->OH; q++) {                                            \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[A_], r[M_];                                                                       \
                        for (int b = 0; b < A_; b++) d[b] = tmp[q * A_ + b][t];                                   \
                        AT(d, r);                                                                                 \
                        for (int u = 0; u < M_; u++) ys[u][t] = r[u];                                             \
                    }                                                                                             \
                    float *yr = y + (ty * M_ + q) * g->OW + tx0 * M_;                                             \
                    int64_t full = (g->OW - tx0 * M_) / M_ < nt ? (g->OW - tx0 * M_) / M_ : nt;                   \
                    for (int64_t t = 0; t < full; t++)                                                            \
                        for (int u = 0; u < M_; u++) yr[t * M_ + u] = ys[u][t];                                   \
                    for (int u = 0; full < nt && tx0 * M_ + full * M_ + u < g->OW; u++) yr[full * M_ + u] = ys[u][full]; \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }                                                                                                             \
    NC_CPU_WIDE static void output_grad##M_(void *v, int64_t s, int64_t e)                                       \
    {                                                                                                             \
        const wjob *j = v;                                                                                        \
        const nc_conv_args *g = j->g;                                                                             \
        float sk[A_][TX], tmp[M_ * A_][TX], out[A_ * A_ * TX];                                                    \
        for (int64_t i = s; i < e; i++) {                                                                         \
            int64_t o = i / (g->N * j->th), n = i % (g->N * j->th) / j->th, ty = i % j->th;                       \
            const float *dy = j->a + (n * g->O + o) * g->OH * g->OW;                                              \
            for (int64_t tx0 = 0; tx0 < j->tw; tx0 += TX) {                                                       \
                int64_t nt = j->tw - tx0 < TX ? j->tw - tx0 : TX;                                                 \
                for (int a = 0; a < M_; a++) {                                                                    \
                    int64_t oy = ty * M_ + a;                                                                     \
                    stage_split(sk, oy < g->OH ? dy + oy * g->OW : dy, tx0 * M_, nt, M_, M_, g->OW, oy < g->OH);  \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[M_], r[A_];                                                                       \
                        for (int k = 0; k < M_; k++) d[k] = sk[k][t];                                             \
                        ATA(d, r);                                                                                \
                        for (int b = 0; b < A_; b++) tmp[a * A_ + b][t] = r[b];                                   \
                    }                                                                                             \
                }                                                                                                 \
                for (int b = 0; b < A_; b++)                                                                      \
                    for (int64_t t = 0; t < nt; t++) {                                                            \
                        float d[M_], r[A_];                                                                       \
                        for (int a = 0; a < M_; a++) d[a] = tmp[a * A_ + b][t];                                   \
                        ATA(d, r);                                                                                \
                        for (int q = 0; q < A_; q++) out[(q * A_ + b) * TX + t] = r[q];                           \
                    }                                                                                             \
                store_blocked(j, A_ * A_, g->O, o, (n * j->th + ty) * j->tw + tx0, nt, out);                      \
            }                                                                                                     \
        }                                                                                                         \
    }

WINO_PASSES(2, 4, bt2, at2, ata2)
WINO_PASSES(4, 6, bt4, at4, ata4)

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
    wjob j = {g, F32(out), CF32(a), m, kind == NC_WINO_WEIGHT ? p1 : 0, th, tw, g->N * th * tw, 0, 1};
    j.ps = p1 > 0 && kind != NC_WINO_WEIGHT ? p1 : j.P;
    if (j.ps < 1) j.ps = 1;
    j.S = (j.P + j.ps - 1) / j.ps;
    int64_t rows = g->N * th, grain = tw >= 64 ? 1 : 64 / tw;
    switch (kind) {
    case NC_WINO_INPUT:
        zero_tail(&j, A * A, g->C);
        nc_parallel_for(g->C * rows, grain, m == 4 ? input4 : input2, &j);
        return 1;
    case NC_WINO_OUTPUT_GRAD:
        zero_tail(&j, A * A, g->O);
        nc_parallel_for(g->O * rows, grain, m == 4 ? output_grad4 : output_grad2, &j);
        return 1;
    case NC_WINO_OUTPUT: nc_parallel_for(g->O * rows, grain, m == 4 ? output4 : output2, &j); return 1;
    case NC_WINO_WEIGHT: nc_parallel_for(g->O, 1, m == 4 ? weight4 : weight2, &j); return 1;
    case NC_WINO_WEIGHT_GRAD: nc_parallel_for(g->O, 1, m == 4 ? weight_grad4 : weight_grad2, &j); return 1;
    default: return 0;
    }
}
