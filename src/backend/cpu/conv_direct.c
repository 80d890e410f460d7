/* conv_direct.c — the CPU convolution family's direct kernels (forward,
 * backward-data, backward-weight) and the Winograd F(m x m, 3 x 3)
 * transforms: the references for kernels/conv_direct.cl (same loops),
 * computed in double, parallel over output elements (float32 Winograd
 * transforms run conv_winograd.c's vectorised ones instead). Operands contiguous
 * from their offsets. */
#include "cpu.h"
#include <math.h>

/* operand-relative element access (offsets added) */
#define ld(d, i) nc_cpu_ld((d), (d)->offset + (i))
#define st(d, i, v) nc_cpu_st((d), (d)->offset + (i), (v))

/* m: Winograd tile; flip: wino_weight's flipped weight; ps: tiles per block
 * of the blocked layouts (see nc_conv_kernel) */
typedef struct { const nc_conv_args *g; const nc_desc *out, *a, *b; int64_t m, flip, th, tw, ps; } job;

static void fwd(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t Cg = g->C / g->G, Og = g->O / g->G;
    for (int64_t i = s; i < e; i++) {
        int64_t ox = i % g->OW, oy = (i / g->OW) % g->OH, o = (i / (g->OW * g->OH)) % g->O, n = i / (g->OW * g->OH * g->O);
        int64_t c0 = (o / Og) * Cg;
        double acc = 0;
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t ki = 0; ki < g->KH; ki++) {
                int64_t h = oy * g->SH - g->PH + ki * g->DH;
                if (h < 0 || h >= g->H) continue;
                for (int64_t kj = 0; kj < g->KW; kj++) {
                    int64_t w = ox * g->SW - g->PW + kj * g->DW;
                    if (w < 0 || w >= g->W) continue;
                    acc += ld(j->a, ((n * g->C + c0 + c) * g->H + h) * g->W + w) * ld(j->b, ((o * Cg + c) * g->KH + ki) * g->KW + kj);
                }
            }
        st(j->out, i, acc);
    }
}

static void bwd_data(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t Cg = g->C / g->G, Og = g->O / g->G;
    for (int64_t i = s; i < e; i++) {
        int64_t w = i % g->W, h = (i / g->W) % g->H, c = (i / (g->W * g->H)) % g->C, n = i / (g->W * g->H * g->C);
        int64_t grp = c / Cg, cg = c % Cg;
        double acc = 0;
        for (int64_t ki = 0; ki < g->KH; ki++) {
            int64_t th = h + g->PH - ki * g->DH;
            if (th < 0 || th % g->SH || th / g->SH >= g->OH) continue;
            for (int64_t kj = 0; kj < g->KW; kj++) {
                int64_t tw = w + g->PW - kj * g->DW;
                if (tw < 0 || tw % g->SW || tw / g->SW >= g->OW) continue;
                for (int64_t og = 0; og < Og; og++) {
                    int64_t o = grp * Og + og;
                    acc += ld(j->a, ((n * g->O + o) * g->OH + th / g->SH) * g->OW + tw / g->SW) *
                           ld(j->b, ((o * Cg + cg) * g->KH + ki) * g->KW + kj);
                }
            }
        }
        st(j->out, i, acc);
    }
}

double nc_cpu_conv_weight_sum(const nc_conv_args *g, const nc_desc *x, const nc_desc *dy, int64_t o, int64_t cg, int64_t ki,
                              int64_t kj, int64_t n0, int64_t n1)
{
    int64_t c = (o / (g->O / g->G)) * (g->C / g->G) + cg, S = g->OH * g->OW;
    double acc = 0;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < g->OH; oy++) {
            int64_t h = oy * g->SH - g->PH + ki * g->DH;
            if (h < 0 || h >= g->H) continue;
            for (int64_t ox = 0; ox < g->OW; ox++) {
                int64_t w = ox * g->SW - g->PW + kj * g->DW;
                if (w >= 0 && w < g->W) acc += ld(x, ((n * g->C + c) * g->H + h) * g->W + w) * ld(dy, (n * g->O + o) * S + oy * g->OW + ox);
            }
        }
    return acc;
}

static void bwd_weight(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t Cg = g->C / g->G;
    for (int64_t i = s; i < e; i++) {
        int64_t kj = i % g->KW, ki = (i / g->KW) % g->KH, cg = (i / (g->KW * g->KH)) % Cg, o = i / (g->KW * g->KH * Cg);
        st(j->out, i, nc_cpu_conv_weight_sum(g, j->a, j->b, o, cg, ki, kj, 0, g->N));
    }
}

/* depthwise backward-weight (NC_DW_WEIGHT): part [S, O, KH*KW], slice s
 * summing images s*ip .. s*ip + ip - 1 (j->m = ip) */
static void dw_weight_part(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int64_t KT = g->KH * g->KW, ip = j->m;
    for (int64_t i = s; i < e; i++) {
        int64_t t = i % KT, o = (i / KT) % g->O, sl = i / (KT * g->O), n0 = sl * ip, n1 = n0 + ip < g->N ? n0 + ip : g->N;
        st(j->out, i, nc_cpu_conv_weight_sum(g, j->a, j->b, o, 0, t / g->KW, t % g->KW, n0, n1));
    }
}

/* ---- Winograd: the transform matrices of F(2x2, 3x3) and F(4x4, 3x3) ---------------- */
static const double BT2[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double AT2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
static const double BT4[6][6] = {{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                 {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
static const double G4[6][3] = {{0.25, 0, 0}, {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
static const double AT4[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

/* The transform matrix of F(m x m, 3 x 3) and its row length. */
static const double *mat(int which, int64_t m, int *ls)
{
    *ls = which == 1 ? 3 : (int)m + 2;   /* 0 B^T, 1 G, 2 A^T */
    if (which == 0) return m == 2 ? BT2[0] : BT4[0];
    return which == 1 ? (m == 2 ? G2[0] : G4[0]) : (m == 2 ? AT2[0] : AT4[0]);
}

/* out (r x r) = L X L^T for X (c x c) and L (r x c) = M, or M^T when tr:
 * every transform and adjoint below is one of these */
static void sandwich(const double *M, int ls, int tr, int r, int c, const double *X, double *out)
{
    double t[6 * 6];
    for (int i = 0; i < r; i++)
        for (int b = 0; b < c; b++) {
            double acc = 0;
            for (int k = 0; k < c; k++) acc += (tr ? M[k * ls + i] : M[i * ls + k]) * X[k * c + b];
            t[i * c + b] = acc;
        }
    for (int i = 0; i < r; i++)
        for (int b = 0; b < r; b++) {
            double acc = 0;
            for (int k = 0; k < c; k++) acc += t[i * c + k] * (tr ? M[k * ls + b] : M[b * ls + k]);
            out[i * r + b] = acc;
        }
}

/* the tile count P and its blocks: S blocks of ps tiles (ps = 0: one of P) */
static int64_t blocks(const job *j, int64_t *ps)
{
    int64_t P = j->g->N * j->th * j->tw;
    *ps = j->ps > 0 ? j->ps : P;
    return (P + *ps - 1) / *ps;
}

/* V = B^T d B per input tile, in the blocked layout */
static void wino_input(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int ls;
    const double *BT = mat(0, j->m, &ls);
    int64_t m = j->m, A = m + 2, P = g->N * j->th * j->tw, ps, S = blocks(j, &ps), Q = S * ps;
    double d[36], u[36];
    for (int64_t i = s; i < e; i++) {
        int64_t p = i % Q, c = i / Q, n = p / (j->th * j->tw), ty = (p / j->tw) % j->th, tx = p % j->tw;
        for (int64_t a = 0; a < A; a++)
            for (int64_t b = 0; b < A; b++) {
                int64_t h = ty * m - g->PH + a, w = tx * m - g->PW + b;
                d[a * A + b] = p < P && h >= 0 && h < g->H && w >= 0 && w < g->W ? ld(j->a, ((n * g->C + c) * g->H + h) * g->W + w) : 0;
            }
        sandwich(BT, ls, 0, (int)A, (int)A, d, u);
        for (int64_t t = 0; t < A * A; t++) st(j->out, ((t * S + p / ps) * g->C + c) * ps + p % ps, u[t]);
    }
}

/* U = G k G^T per (o, c); flip: k from the flipped, transposed w [C, O, 3, 3] */
static void wino_weight(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int ls;
    const double *G = mat(1, j->m, &ls);
    int64_t A = j->m + 2, O = g->O, C = g->C;
    double k[9], u[36];
    for (int64_t i = s; i < e; i++) {
        int64_t c = i % C, o = i / C;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                k[a * 3 + b] = j->flip ? ld(j->a, ((c * O + o) * 3 + 2 - a) * 3 + 2 - b) : ld(j->a, ((o * C + c) * 3 + a) * 3 + b);
        sandwich(G, ls, 0, (int)A, 3, k, u);
        for (int64_t t = 0; t < A * A; t++) st(j->out, (t * O + o) * C + c, u[t]);
    }
}

/* y = A^T M A per output tile, the part inside the output */
static void wino_output(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int ls;
    const double *AT = mat(2, j->m, &ls);
    int64_t m = j->m, A = m + 2, P = g->N * j->th * j->tw;
    double x[36], y[16];
    for (int64_t i = s; i < e; i++) {
        int64_t p = i % P, o = i / P, n = p / (j->th * j->tw), ty = (p / j->tw) % j->th, tx = p % j->tw;
        for (int64_t t = 0; t < A * A; t++) x[t] = ld(j->a, (t * g->O + o) * P + p);
        sandwich(AT, ls, 0, (int)m, (int)A, x, y);
        for (int64_t a = 0; a < m; a++)
            for (int64_t b = 0; b < m; b++) {
                int64_t oy = ty * m + a, ox = tx * m + b;
                if (oy < g->OH && ox < g->OW) st(j->out, ((n * g->O + o) * g->OH + oy) * g->OW + ox, y[a * m + b]);
            }
    }
}

/* dM = A dy A^T per output tile (the adjoint of wino_output; rows and
 * columns past the output are zero), in wino_input's blocked layout */
static void wino_output_grad(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int ls;
    const double *AT = mat(2, j->m, &ls);
    int64_t m = j->m, A = m + 2, P = g->N * j->th * j->tw, ps, S = blocks(j, &ps), Q = S * ps;
    double d[16], u[36];
    for (int64_t i = s; i < e; i++) {
        int64_t p = i % Q, o = i / Q, n = p / (j->th * j->tw), ty = (p / j->tw) % j->th, tx = p % j->tw;
        for (int64_t a = 0; a < m; a++)
            for (int64_t b = 0; b < m; b++) {
                int64_t oy = ty * m + a, ox = tx * m + b;
                d[a * m + b] = p < P && oy < g->OH && ox < g->OW ? ld(j->a, ((n * g->O + o) * g->OH + oy) * g->OW + ox) : 0;
            }
        sandwich(AT, ls, 1, (int)A, (int)m, d, u);
        for (int64_t t = 0; t < A * A; t++) st(j->out, ((t * S + p / ps) * g->O + o) * ps + p % ps, u[t]);
    }
}

/* dw = G^T dU G per (o, c): the adjoint of wino_weight (unflipped) */
static void wino_weight_grad(void *v, int64_t s, int64_t e)
{
    const job *j = v;
    const nc_conv_args *g = j->g;
    int ls;
    const double *G = mat(1, j->m, &ls);
    int64_t A = j->m + 2, O = g->O, C = g->C;
    double x[36], k[9];
    for (int64_t i = s; i < e; i++) {
        int64_t c = i % C, o = i / C;
        for (int64_t t = 0; t < A * A; t++) x[t] = ld(j->a, (t * O + o) * C + c);
        sandwich(G, ls, 1, 3, (int)A, x, k);
        for (int t = 0; t < 9; t++) st(j->out, (o * C + c) * 9 + t, k[t]);
    }
}

netcl_status nc_cpu_conv(netcl_device *dev, nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out,
                         const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1)
{
    (void)dev;
    if (kind >= NC_DW_FWD && out->dtype == NETCL_DTYPE_FLOAT32) return nc_cpu_conv_depthwise(kind, g, out, a, b, p0);
    if (kind >= NC_WINO_INPUT && kind <= NC_WINO_WEIGHT_GRAD && nc_cpu_winograd_f32(kind, g, out, a, p0, p1)) return NETCL_OK;
    int64_t m = p0 > 0 ? p0 : 1;
    job j = {g, out, a, b, p0, p1, (g->OH + m - 1) / m, (g->OW + m - 1) / m, kind == NC_WINO_WEIGHT ? 0 : p1};
    int64_t per, n, ps = 0, S = 1;
    if (kind == NC_WINO_INPUT || kind == NC_WINO_OUTPUT_GRAD) S = blocks(&j, &ps);
    nc_range_fn fn;
    switch (kind) {
    case NC_DW_WEIGHT:
        j.m = p0 > 0 ? p0 : g->N;
        fn = dw_weight_part, n = (g->N + j.m - 1) / j.m * g->O * g->KH * g->KW, per = j.m * g->OH * g->OW;
        break;
    case NC_DW_FWD:
    case NC_CONV_FWD: fn = fwd; n = g->N * g->O * g->OH * g->OW; per = (g->C / g->G) * g->KH * g->KW; break;
    case NC_DW_DATA:
    case NC_CONV_BWD_DATA: fn = bwd_data; n = g->N * g->C * g->H * g->W; per = (g->O / g->G) * g->KH * g->KW; break;
    case NC_CONV_BWD_WEIGHT: fn = bwd_weight; n = g->O * (g->C / g->G) * g->KH * g->KW; per = g->N * g->OH * g->OW; break;
    case NC_WINO_INPUT: fn = wino_input; n = g->C * S * ps; per = 100; break;
    case NC_WINO_WEIGHT: fn = wino_weight; n = g->O * g->C; per = 100; break;
    case NC_WINO_OUTPUT_GRAD: fn = wino_output_grad; n = g->O * S * ps; per = 100; break;
    case NC_WINO_WEIGHT_GRAD: fn = wino_weight_grad; n = g->O * g->C; per = 400; break;
    default: fn = wino_output; n = g->O * g->N * j.th * j.tw; per = 100; break;
    }
    nc_parallel_for(n, per >= 16384 ? 1 : 16384 / (per + 1) + 1, fn, &j);
    return NETCL_OK;
}
