/* conv_direct.cl — the convolution family's direct kernels (the reference
 * strategy, also the depthwise one) and the Winograd transforms, over
 * contiguous NCHW in a float dtype (TA = TO). conv_t mirrors nc_conv_args
 * (all 64-bit).
 * conv_fwd:        y [N, O, OH, OW] from x [N, C, H, W], w [O, C/G, KH, KW];
 *                  one work item per output element.
 * conv_bwd_data:   dx [N, C, H, W] from dy, w; one work item per input
 *                  pixel gathering over the taps that read it (no atomics).
 * conv_bwd_weight: dw [O, C/G, KH, KW] from x, dy; one work-group per
 *                  weight element reducing over N*OH*OW in local memory.
 * wino_input/weight/output: F(M x M, 3 x 3) Winograd transforms (WM = 2 or
 *   4, tile WA = WM + 2) for stride 1, dilation 1, groups 1: V [WA*WA, C, P],
 *   U [WA*WA, O, C] (FLIP: the flipped, transposed weights that turn a
 *   backward-data pass into a forward one), Y from M [WA*WA, O, P], P =
 *   N * tiles_h * tiles_w; V may be laid out in blocks of ps tiles
 *   [WA*WA, S, C, ps] so the backward-weight GEMM can split its long K.
 * wino_output_grad/weight_grad: the adjoints of wino_output and
 *   wino_weight, for backward-weight: dM [WA*WA, S, O, ps] from dy, and dw
 *   from dU [WA*WA, O, C]. Outputs never alias inputs. */
typedef struct { long N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW; } conv_t;

__kernel void conv_fwd(__global O_T *y_, long yo, __global const A_T *x_, long xo, __global const A_T *w_, long wo, conv_t g)
{
    __global O_T *y = y_ + yo;
    __global const A_T *x = x_ + xo, *w = w_ + wo;
    long Cg = g.C / g.G, Og = g.O / g.G;
    GRID_LOOP(i, g.N * g.O * g.OH * g.OW) {
        long ox = i % g.OW, oy = (i / g.OW) % g.OH, o = (i / (g.OW * g.OH)) % g.O, n = i / (g.OW * g.OH * g.O);
        long c0 = (o / Og) * Cg;
        A_CT acc = 0;
        for (long c = 0; c < Cg; c++) {
            long xb = ((n * g.C + c0 + c) * g.H) * g.W, wb = ((o * Cg + c) * g.KH) * g.KW;
            for (long ki = 0; ki < g.KH; ki++) {
                long h = oy * g.SH - g.PH + ki * g.DH;
                if (h < 0 || h >= g.H) continue;
                for (long kj = 0; kj < g.KW; kj++) {
                    long ww = ox * g.SW - g.PW + kj * g.DW;
                    if (ww < 0 || ww >= g.W) continue;
                    acc += A_LOAD(x, xb + h * g.W + ww) * A_LOAD(w, wb + ki * g.KW + kj);
                }
            }
        }
        O_STORE(y, i, acc);
    }
}

__kernel void conv_bwd_data(__global O_T *dx_, long dxo, __global const A_T *dy_, long dyo, __global const A_T *w_, long wo, conv_t g)
{
    __global O_T *dx = dx_ + dxo;
    __global const A_T *dy = dy_ + dyo, *w = w_ + wo;
    long Cg = g.C / g.G, Og = g.O / g.G;
    GRID_LOOP(i, g.N * g.C * g.H * g.W) {
        long ww = i % g.W, h = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, n = i / (g.W * g.H * g.C);
        long grp = c / Cg, cg = c % Cg;
        A_CT acc = 0;
        for (long ki = 0; ki < g.KH; ki++) {
            long th = h + g.PH - ki * g.DH;
            if (th < 0 || th % g.SH) continue;
            long oy = th / g.SH;
            if (oy >= g.OH) continue;
            for (long kj = 0; kj < g.KW; kj++) {
                long tw = ww + g.PW - kj * g.DW;
                if (tw < 0 || tw % g.SW) continue;
                long ox = tw / g.SW;
                if (ox >= g.OW) continue;
                for (long og = 0; og < Og; og++) {
                    long o = grp * Og + og;
                    acc += A_LOAD(dy, ((n * g.O + o) * g.OH + oy) * g.OW + ox) * A_LOAD(w, ((o * Cg + cg) * g.KH + ki) * g.KW + kj);
                }
            }
        }
        O_STORE(dx, i, acc);
    }
}

#define CONV_LOCAL 256
__kernel void conv_bwd_weight(__global O_T *dw_, long dwo, __global const A_T *x_, long xo, __global const A_T *dy_, long dyo, conv_t g)
{
    __global O_T *dw = dw_ + dwo;
    __global const A_T *x = x_ + xo, *dy = dy_ + dyo;
    __local A_CT l[CONV_LOCAL];
    long Cg = g.C / g.G, Og = g.O / g.G, S = g.OH * g.OW, R = g.N * S;
    int lid = get_local_id(0), ls = get_local_size(0);
    for (long e = get_group_id(0); e < g.O * Cg * g.KH * g.KW; e += get_num_groups(0)) {
        long kj = e % g.KW, ki = (e / g.KW) % g.KH, cg = (e / (g.KW * g.KH)) % Cg, o = e / (g.KW * g.KH * Cg);
        long c = (o / Og) * Cg + cg;
        A_CT acc = 0;
        for (long r = lid; r < R; r += ls) {
            long n = r / S, s = r % S, oy = s / g.OW, ox = s % g.OW;
            long h = oy * g.SH - g.PH + ki * g.DH, ww = ox * g.SW - g.PW + kj * g.DW;
            if (h >= 0 && h < g.H && ww >= 0 && ww < g.W)
                acc += A_LOAD(x, ((n * g.C + c) * g.H + h) * g.W + ww) * A_LOAD(dy, (n * g.O + o) * S + s);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        l[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int st = ls / 2; st > 0; st >>= 1) {
            if (lid < st) l[lid] += l[lid + st];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) O_STORE(dw, e, l[0]);
    }
}

/* ---- Winograd F(WM x WM, 3 x 3) ---------------------------------------------- */
#ifdef WM
#define WA (WM + 2)
/* the transforms' constants in the compute type: 1/6 and 1/24 as floats
 * cost float64 passes 4e-8 of their value */
#if WM == 2
__constant A_CT BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
__constant A_CT GM[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
__constant A_CT AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
#else
__constant A_CT BT[6][6] = {{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                             {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
__constant A_CT GM[6][3] = {{0.25f, 0, 0}, {(A_CT)-1 / 6, (A_CT)-1 / 6, (A_CT)-1 / 6}, {(A_CT)-1 / 6, (A_CT)1 / 6, (A_CT)-1 / 6},
                             {(A_CT)1 / 24, (A_CT)1 / 12, (A_CT)1 / 6}, {(A_CT)1 / 24, (A_CT)-1 / 12, (A_CT)1 / 6}, {0, 0, 1}};
__constant A_CT AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
#endif

/* V[t, s, c, k] = (B^T d B)[t] for the input tile (c, p = s*ps + k), zeros
 * for p >= P (th/tw tile counts; ps = P: one block, V[t, c, p]) */
__kernel void wino_input(__global O_T *v_, long vo, __global const A_T *x_, long xo, conv_t g, long th, long tw, long ps)
{
    __global O_T *v = v_ + vo;
    __global const A_T *x = x_ + xo;
    long P = g.N * th * tw, S = (P + ps - 1) / ps, Q = S * ps;
    GRID_LOOP(i, g.C * Q) {
        long p = i % Q, c = i / Q, n = p / (th * tw), ty = (p / tw) % th, tx = p % tw;
        A_CT d[WA][WA], t[WA][WA];
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WA; b++) {
                long h = ty * WM - g.PH + a, w = tx * WM - g.PW + b;
                d[a][b] = (p < P && h >= 0 && h < g.H && w >= 0 && w < g.W) ? A_LOAD(x, ((n * g.C + c) * g.H + h) * g.W + w)
                                                                            : (A_CT)0;
            }
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WA; b++) {
                A_CT s = 0;
                for (int k = 0; k < WA; k++) s += (A_CT)BT[a][k] * d[k][b];
                t[a][b] = s;
            }
        long at = ((p / ps) * g.C + c) * ps + p % ps;
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WA; b++) {
                A_CT s = 0;
                for (int k = 0; k < WA; k++) s += t[a][k] * (A_CT)BT[b][k];
                O_STORE(v, (long)(a * WA + b) * S * g.C * ps + at, s);
            }
    }
}

/* U[t, o, c] = (G w G^T)[t]; FLIP: from w[c, o] rotated by 180 degrees */
__kernel void wino_weight(__global O_T *u_, long uo, __global const A_T *w_, long wo, long O, long C, int flip)
{
    __global O_T *u = u_ + uo;
    __global const A_T *w = w_ + wo;
    GRID_LOOP(i, O * C) {
        long c = i % C, o = i / C;
        A_CT k[3][3], t[WA][3];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                k[a][b] = flip ? A_LOAD(w, ((c * O + o) * 3 + 2 - a) * 3 + 2 - b) : A_LOAD(w, ((o * C + c) * 3 + a) * 3 + b);
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < 3; b++) t[a][b] = (A_CT)GM[a][0] * k[0][b] + (A_CT)GM[a][1] * k[1][b] + (A_CT)GM[a][2] * k[2][b];
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WA; b++)
                O_STORE(u, ((long)(a * WA + b) * O + o) * C + c,
                        t[a][0] * (A_CT)GM[b][0] + t[a][1] * (A_CT)GM[b][1] + t[a][2] * (A_CT)GM[b][2]);
    }
}

/* y[n, o, ty*WM + i, tx*WM + j] = (A^T M A)[i][j] for the tile (o, p) */
__kernel void wino_output(__global O_T *y_, long yo, __global const A_T *m_, long mo, conv_t g, long th, long tw)
{
    __global O_T *y = y_ + yo;
    __global const A_T *m = m_ + mo;
    long P = g.N * th * tw;
    GRID_LOOP(i, g.O * P) {
        long p = i % P, o = i / P, n = p / (th * tw), ty = (p / tw) % th, tx = p % tw;
        A_CT t[WM][WA];
        for (int a = 0; a < WM; a++)
            for (int b = 0; b < WA; b++) {
                A_CT s = 0;
                for (int k = 0; k < WA; k++) s += (A_CT)AT[a][k] * A_LOAD(m, ((long)(k * WA + b) * g.O + o) * P + p);
                t[a][b] = s;
            }
        for (int a = 0; a < WM; a++)
            for (int b = 0; b < WM; b++) {
                long oy = ty * WM + a, ox = tx * WM + b;
                if (oy >= g.OH || ox >= g.OW) continue;
                A_CT s = 0;
                for (int k = 0; k < WA; k++) s += t[a][k] * (A_CT)AT[b][k];
                O_STORE(y, ((n * g.O + o) * g.OH + oy) * g.OW + ox, s);
            }
    }
}

/* dM[t, s, o, k] = (A dy A^T)[t] for the output tile (o, p = s*ps + k): the
 * adjoint of wino_output, dy zero past the output and for p >= P */
__kernel void wino_output_grad(__global O_T *m_, long mo, __global const A_T *dy_, long yo, conv_t g, long th, long tw,
                               long ps)
{
    __global O_T *m = m_ + mo;
    __global const A_T *dy = dy_ + yo;
    long P = g.N * th * tw, S = (P + ps - 1) / ps, Q = S * ps;
    GRID_LOOP(i, g.O * Q) {
        long p = i % Q, o = i / Q, n = p / (th * tw), ty = (p / tw) % th, tx = p % tw;
        A_CT d[WM][WM], t[WA][WM];
        for (int a = 0; a < WM; a++)
            for (int b = 0; b < WM; b++) {
                long oy = ty * WM + a, ox = tx * WM + b;
                d[a][b] = (p < P && oy < g.OH && ox < g.OW) ? A_LOAD(dy, ((n * g.O + o) * g.OH + oy) * g.OW + ox) : (A_CT)0;
            }
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WM; b++) {
                A_CT s = 0;
                for (int k = 0; k < WM; k++) s += (A_CT)AT[k][a] * d[k][b];
                t[a][b] = s;
            }
        long at = ((p / ps) * g.O + o) * ps + p % ps;
        for (int a = 0; a < WA; a++)
            for (int b = 0; b < WA; b++) {
                A_CT s = 0;
                for (int k = 0; k < WM; k++) s += t[a][k] * (A_CT)AT[k][b];
                O_STORE(m, (long)(a * WA + b) * S * g.O * ps + at, s);
            }
    }
}

/* dw[o, c] = (G^T dU G) over dU[t, o, c]: the adjoint of wino_weight */
__kernel void wino_weight_grad(__global O_T *dw_, long wo, __global const A_T *du_, long uo, long O, long C)
{
    __global O_T *dw = dw_ + wo;
    __global const A_T *du = du_ + uo;
    GRID_LOOP(i, O * C) {
        long c = i % C, o = i / C;
        A_CT t[3][WA];
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < WA; b++) t[a][b] = 0;
        for (int k = 0; k < WA; k++)
            for (int b = 0; b < WA; b++) {
                A_CT u = A_LOAD(du, ((long)(k * WA + b) * O + o) * C + c);
                for (int a = 0; a < 3; a++) t[a][b] += (A_CT)GM[k][a] * u;
            }
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                A_CT s = 0;
                for (int k = 0; k < WA; k++) s += t[a][k] * (A_CT)GM[k][b];
                O_STORE(dw, ((o * C + c) * 3 + a) * 3 + b, s);
            }
    }
}
#endif
