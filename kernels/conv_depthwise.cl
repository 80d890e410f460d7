/* conv_depthwise.cl — the convolution family's depthwise kernels: groups =
 * C, input channel c convolved with its own M = O / C filters into output
 * channels c*M .. c*M + M - 1 (M the channel multiplier), contiguous NCHW
 * in a float dtype (TA = TO). The window and strides are compiled in
 * (DW_KH, DW_KW, DW_SH, DW_SW: the taps unroll, stride tests are masks);
 * index arithmetic in IX, dividing through the host's magic numbers where
 * it is 32-bit (integer division bound these kernels, as it did im2col).
 * conv_t mirrors nc_conv_args.
 * dw_fwd:    y [N, O, OH, OW]; one work item per output.
 * dw_data:   dx [N, C, H, W]; one work item per input pixel, gathering the
 *            outputs that read it (no atomics, a fixed summation order).
 * dw_weight: part [S, O, KH*KW], the sums over slices of ip images; one
 *            work-group per (output channel, slice), each item keeping
 *            KH*KW sums over its pixels (dy read once, x through the
 *            cache), reduced in local memory all at once. The direct kernels spend a
 *            work-group per weight element and read dy KH*KW times. */
typedef struct { long N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW; } conv_t;
#define KT (DW_KH * DW_KW)
/* the kernels' divisors dv (dw_fwd: L, O, M, OW; dw_data: W, H, C;
 * dw_weight: L, OW) with their magic numbers dm, ds */
#define DW_DIV , int4 dv, uint4 dm, int4 ds
#ifdef IX32
#define DIVK(n, k) fdiv((n), dm.s##k, ds.s##k)
#else
#define DIVK(n, k) ((n) / (IX)dv.s##k)
#endif

__kernel void dw_fwd(__global O_T *y, long yo, __global const A_T *x, long xo, __global const A_T *w, long wo, conv_t g DW_DIV)
{
    const IX C = g.C, H = g.H, W = g.W, O = g.O, OW = g.OW, L = g.OH * g.OW;
    const int ph = g.PH, pw = g.PW, dh = g.DH, dw = g.DW;
    const IX n_all = g.N * O * L;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        const IX p = DIVK(i, 0), l = i - p * L, n = DIVK(p, 1), o = p - n * O;   /* p = n * O + o */
        const IX oy = DIVK(l, 3), ox = l - oy * OW;
        const int h0 = (int)oy * DW_SH - ph, w0 = (int)ox * DW_SW - pw;
        __global const A_T *xc = x + xo + (n * C + DIVK(o, 2)) * H * W;
        __global const A_T *wk = w + wo + o * KT;
        A_CT acc = 0;
        UNROLL for (int ki = 0; ki < DW_KH; ki++) {
            const int h = h0 + ki * dh;
            const bool hin = h >= 0 && h < (int)H;
            UNROLL for (int kj = 0; kj < DW_KW; kj++) {
                const int ww = w0 + kj * dw;
                if (hin && ww >= 0 && ww < (int)W) acc += A_LOAD(xc, (IX)h * W + (IX)ww) * A_LOAD(wk, ki * DW_KW + kj);
            }
        }
        O_STORE(y, yo + i, acc);
    }
}

__kernel void dw_data(__global O_T *dx, long dxo, __global const A_T *dy, long dyo, __global const A_T *w, long wo, conv_t g DW_DIV)
{
    const IX C = g.C, H = g.H, W = g.W, O = g.O, OH = g.OH, OW = g.OW, L = g.OH * g.OW, M = g.O / g.C;
    const int ph = g.PH, pw = g.PW, dh = g.DH, dw = g.DW;
    const IX n_all = g.N * C * H * W;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        const IX t = DIVK(i, 0), xw = i - t * W, nc = DIVK(t, 1), xh = t - nc * H, n = DIVK(nc, 2), c = nc - n * C;
        A_CT acc = 0;
        for (IX m = 0; m < M; m++) {
            const IX o = c * M + m;
            __global const A_T *dp = dy + dyo + (n * O + o) * L;
            __global const A_T *wk = w + wo + o * KT;
            UNROLL for (int ki = 0; ki < DW_KH; ki++) {
                const int th = (int)xh + ph - ki * dh;
                if (th < 0 || th % DW_SH) continue;
                const int oy = th / DW_SH;
                if (oy >= (int)OH) continue;
                UNROLL for (int kj = 0; kj < DW_KW; kj++) {
                    const int tw = (int)xw + pw - kj * dw;
                    if (tw < 0 || tw % DW_SW) continue;
                    const int ox = tw / DW_SW;
                    if (ox < (int)OW) acc += A_LOAD(dp, (IX)oy * OW + (IX)ox) * A_LOAD(wk, ki * DW_KW + kj);
                }
            }
        }
        O_STORE(dx, dxo + i, acc);
    }
}

/* DW_LOCAL: the local size, a power of two (the host's choice); the KT
 * sums of every item are staged in local memory at once and reduced in
 * one tree, so no barrier sits in an unrolled loop (barriers in KT
 * unrolled copies of a tree took PoCL minutes to compile) */
__kernel void dw_weight(__global O_T *part, long po, __global const A_T *x, long xo, __global const A_T *dy, long dyo, conv_t g,
                        long ip DW_DIV)
{
    __local A_CT red[KT * DW_LOCAL];
    const IX C = g.C, H = g.H, W = g.W, O = g.O, OW = g.OW, L = g.OH * g.OW, M = g.O / g.C, N = g.N;
    const int ph = g.PH, pw = g.PW, dh = g.DH, dw = g.DW;
    const int lid = get_local_id(0);
    const IX S = (N + (IX)ip - 1) / (IX)ip;
    for (IX e = get_group_id(0); e < S * O; e += get_num_groups(0)) {
        const IX o = e % O, s = e / O, n0 = s * (IX)ip, n1 = min(N, n0 + (IX)ip), c = o / M;
        A_CT acc[KT];
        UNROLL for (int t = 0; t < KT; t++) acc[t] = 0;
        for (IX r = lid; r < (n1 - n0) * L; r += DW_LOCAL) {
            const IX q = DIVK(r, 0), n = n0 + q, l = r - q * L, oy = DIVK(l, 1), ox = l - oy * OW;
            const int h0 = (int)oy * DW_SH - ph, w0 = (int)ox * DW_SW - pw;
            const A_CT d = A_LOAD(dy, dyo + (n * O + o) * L + l);
            __global const A_T *xc = x + xo + (n * C + c) * H * W;
            UNROLL for (int ki = 0; ki < DW_KH; ki++) {
                const int h = h0 + ki * dh;
                const bool hin = h >= 0 && h < (int)H;
                UNROLL for (int kj = 0; kj < DW_KW; kj++) {
                    const int ww = w0 + kj * dw;
                    if (hin && ww >= 0 && ww < (int)W) acc[ki * DW_KW + kj] += d * A_LOAD(xc, (IX)h * W + (IX)ww);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);   /* the previous round's reads are done */
        UNROLL for (int t = 0; t < KT; t++) red[t * DW_LOCAL + lid] = acc[t];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int st = DW_LOCAL / 2; st > 0; st >>= 1) {
            if (lid < st)
                for (int t = 0; t < KT; t++) red[t * DW_LOCAL + lid] += red[t * DW_LOCAL + lid + st];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        for (int t = lid; t < KT; t += DW_LOCAL) O_STORE(part, po + e * KT + t, red[t * DW_LOCAL]);
    }
}
