/* conv_tiled_weight.cl — the convolution family's tiled backward-weight
 * (the "tiled" strategy's weight pass; src/backend/cl/conv_tiled.c) for
 * small weights (LeNet's layers), where im2col's unfold, copies and
 * split-K sum are most of the time.
 * parts [S, O, Cg, KH, KW] <- x [N, C, H, W], dy [N, O, OH, OW]: part s
 * sums images [s*per, min(N, (s+1)*per)). A work-group per (part, group,
 * block of OB output channels) stages one image at a time in local memory,
 * the input window the taps read (zeros outside the image) and the block's
 * dy; each thread owns up to JR weight rows (o, c, kh) and adds, per output
 * position, dy times the KW inputs of the row's taps into KW accumulators
 * each (1 + KW local loads for KW multiply-adds). Rows of the window and
 * channels of dy have odd strides, so the rows a warp reads (distinct kh,
 * c or o) fall in distinct banks. Where the block has at most WG / 2 rows,
 * ps threads (a power of two) share each row and split the output rows,
 * their sums added through local memory at the end. Limits (src/backend/backend.h,
 * nc_tw_fits): 1024 rows a block (WG x JR), 6144 staged values plus
 * padding. KH, KW, SH, SW, DH, DW compiled in; contiguous NCHW, one float
 * dtype. */
typedef struct { long N, C, H, W, O, G, KH_, KW_, SH_, SW_, PH, PW, DH_, DW_, OH, OW; } conv_t;

#define WG 256
#define OB 8
#define JR 4

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_tiled_weight(__global O_T *parts, long po, __global const A_T *x_, long xo, __global const A_T *dy_, long dyo,
                       conv_t g, long per, int ps, __local A_CT *lm)
{
    const int tid = get_local_id(0);
    const long Cg = g.C / g.G, Og = g.O / g.G, oblocks = (Og + OB - 1) / OB;
    const long z = get_group_id(0), part = z / (g.G * oblocks), grp = (z / oblocks) % g.G, ob0 = (z % oblocks) * OB;
    const int nob = (int)min((long)OB, Og - ob0), OH = (int)g.OH, OW = (int)g.OW, L = OH * OW;
    const int R = (OH - 1) * SH + (KH - 1) * DH + 1, Q = (OW - 1) * SW + (KW - 1) * DW + 1;
    const int Qs = Q | 1, Ls = L | 1, win = (int)Cg * R * Qs;   /* odd strides: no bank conflicts */
    const int rows = nob * (int)Cg * KH, span = WG / ps, lane = tid % span, split = tid / span;
    __local A_CT *xs = lm, *ds = lm + win;
    /* this thread's rows j = lane + k * span, as offsets into the window and dy */
    int xoff[JR], doff[JR];
    A_CT acc[JR][KW];
    UNROLL for (int k = 0; k < JR; k++) {
        const int j = lane + k * span, kh = j % KH, c = (j / KH) % (int)Cg, o = j / (KH * (int)Cg);
        xoff[k] = (c * R + kh * DH) * Qs;
        doff[k] = o * Ls;
        UNROLL for (int t = 0; t < KW; t++) acc[k][t] = 0;
    }
    const int nk = rows > lane ? min(JR, (rows - lane + span - 1) / span) : 0;
    const long n0 = part * per, n1 = min(g.N, n0 + per);
    for (long n = n0; n < n1; n++) {
        __global const A_T *x = x_ + xo + (n * g.C + grp * Cg) * g.H * g.W;
        __global const A_T *dy = dy_ + dyo + (n * g.O + grp * Og + ob0) * L;
        for (int i = tid; i < (int)Cg * R * Q; i += WG) {
            const int c = i / (R * Q), r = (i / Q) % R, q = i % Q;
            const long iy = r - g.PH, ix = q - g.PW;
            xs[(c * R + r) * Qs + q] = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W ? A_LOAD(x, (c * g.H + iy) * g.W + ix) : (A_CT)0;
        }
        for (int i = tid; i < nob * L; i += WG) ds[(i / L) * Ls + i % L] = A_LOAD(dy, i);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int oy = split; oy < OH; oy += ps)
            for (int ox = 0; ox < OW; ox++) {
                const int xp = oy * SH * Qs + ox * SW, dp = oy * OW + ox;
                UNROLL for (int k = 0; k < JR; k++)
                    if (k < nk) {
                        const A_CT d = ds[doff[k] + dp];
                        UNROLL for (int t = 0; t < KW; t++) acc[k][t] += d * xs[xoff[k] + xp + t * DW];
                    }
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* the splits' sums, tap by tap (ps > 1: one row a thread, rows <= span).
     * Not under `if (ps > 1)`: PoCL mixed up work-items' private values
     * across a barrier inside that branch */
    UNROLL for (int t = 0; t < KW; t++) {
        lm[tid] = acc[0][t];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (split == 0)
            for (int p = 1; p < ps; p++) acc[0][t] += lm[p * span + lane];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (split == 0) {
        __global O_T *out = parts + po + (part * g.O + grp * Og + ob0) * Cg * KH * KW;
        UNROLL for (int k = 0; k < JR; k++)
            if (k < nk)
                UNROLL for (int t = 0; t < KW; t++) O_STORE(out, (lane + k * span) * KW + t, acc[k][t]);
    }
}
