/* conv_tiled.cl — the convolution family's tiled direct convolution through
 * local memory (the "tiled" strategy; src/backend/cl/conv_tiled.c), for
 * small convolutions where a GEMM's unfold or tiles would be mostly
 * overhead (few channels, 5x5 kernels: LeNet). Contiguous NCHW in a float
 * dtype (TA = TO).
 * conv_tiled: y [N, O, OH, OW] = act(conv(x, w) + bias). A work-group of
 * TX x TY threads computes a TY x (TX*RX) tile of output pixels for OB
 * output channels of one image and group: per chunk of CB input channels
 * it stages the input patch the tile reads (zeros outside the image) and
 * the OB x CB x KH x KW weights in local memory, then each thread
 * accumulates RX pixels (columns tx + j*TX) x OB channels in registers.
 * Kernel geometry (KH, KW, SH, SW, DH, DW) and the tile are compiled in
 * (-D) so the tap loops unroll; sizes and padding are arguments. FLIP: w is [C, O, KH, KW]
 * read flipped and transposed (a stride-1 backward-data pass run as this
 * forward one). HAS_BIAS, ACT (netcl_op code or -1), P1: the epilogue.
 * Grid: dim 0 = column tiles * TX, dim 1 = row tiles * TY, dim 2 =
 * N * G * channel blocks. */
typedef struct { long N, C, H, W, O, G, KH_, KW_, SH_, SW_, PH, PW, DH_, DW_, OH, OW; } conv_t;

#if !defined(TX) || !defined(TY) || !defined(RX) || !defined(OB) || !defined(CB)
#error "conv_tiled.cl: the tile (TX, TY, RX, OB, CB) comes from the host (nc_conv_tile_for, src/backend/backend.h)"
#endif
#define PTH ((TY - 1) * SH + (KH - 1) * DH + 1)        /* patch rows */
#define PTW ((TX * RX - 1) * SW + (KW - 1) * DW + 1)   /* patch columns */

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void conv_tiled(__global O_T *y_, long yo, __global const A_T *x_, long xo, __global const A_T *w_, long wo,
                __global const A_T *bias, long bo, conv_t g, A_CT p1)
{
    __local A_CT patch[CB][PTH][PTW];
    __local A_CT wt[CB][KH][KW][OB];
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * TX + tx;
    const long Cg = g.C / g.G, Og = g.O / g.G, oblocks = (Og + OB - 1) / OB;
    const long z = get_group_id(2), n = z / (g.G * oblocks), grp = (z / oblocks) % g.G, ob0 = (z % oblocks) * OB;
    const long oy0 = get_group_id(1) * TY, ox0 = get_group_id(0) * (TX * RX);
    const long iy0 = oy0 * SH - g.PH, ix0 = ox0 * SW - g.PW;   /* the patch's corner in the image */
    __global const A_T *x = x_ + xo + (n * g.C + grp * Cg) * g.H * g.W;
    A_CT acc[RX][OB];
    UNROLL for (int j = 0; j < RX; j++)
        UNROLL for (int o = 0; o < OB; o++) acc[j][o] = 0;
    for (long c0 = 0; c0 < Cg; c0 += CB) {
        for (int i = tid; i < CB * PTH * PTW; i += TX * TY) {
            const int c = i / (PTH * PTW), r = (i / PTW) % PTH, q = i % PTW;
            const long iy = iy0 + r, ix = ix0 + q;
            A_CT v = 0;
            if (c0 + c < Cg && iy >= 0 && iy < g.H && ix >= 0 && ix < g.W) v = A_LOAD(x, ((c0 + c) * g.H + iy) * g.W + ix);
            patch[c][r][q] = v;
        }
        for (int i = tid; i < CB * KH * KW * OB; i += TX * TY) {
            const int o = i % OB, kw = (i / OB) % KW, kh = (i / (OB * KW)) % KH, c = i / (OB * KW * KH);
            const long oo = grp * Og + ob0 + o, cc = c0 + c;
            A_CT v = 0;
            if (ob0 + o < Og && cc < Cg) {
#ifdef FLIP
                v = A_LOAD(w_, wo + ((cc * g.O + oo) * KH + (KH - 1 - kh)) * KW + (KW - 1 - kw));
#else
                v = A_LOAD(w_, wo + ((oo * Cg + cc) * KH + kh) * KW + kw);
#endif
            }
            wt[c][kh][kw][o] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int c = 0; c < CB; c++)
            UNROLL for (int kh = 0; kh < KH; kh++)
                UNROLL for (int kw = 0; kw < KW; kw++) {
                    A_CT xv[RX];
                    UNROLL for (int j = 0; j < RX; j++) xv[j] = patch[c][ty * SH + kh * DH][(tx + j * TX) * SW + kw * DW];
                    UNROLL for (int o = 0; o < OB; o++) {
                        const A_CT wv = wt[c][kh][kw][o];
                        UNROLL for (int j = 0; j < RX; j++) acc[j][o] = fma(xv[j], wv, acc[j][o]);
                    }
                }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long oy = oy0 + ty;
    if (oy >= g.OH) return;
    UNROLL for (int o = 0; o < OB; o++) {
        const long oo = grp * Og + ob0 + o;
        if (ob0 + o >= Og) break;
        const A_CT b = HAS_BIAS ? A_LOAD(bias, bo + oo) : (A_CT)0;
        UNROLL for (int j = 0; j < RX; j++) {
            const long ox = ox0 + tx + j * TX;
            if (ox < g.OW) O_STORE(y_, yo + ((n * g.O + oo) * g.OH + oy) * g.OW + ox, activate(acc[j][o] + b, ACT, p1));
        }
    }
}
