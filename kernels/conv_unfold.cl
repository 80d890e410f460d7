/* conv_unfold.cl — the convolution family's unfold: im2col / col2im over
 * contiguous NCHW (TA = TO, a float dtype; float16/bfloat16 accumulate in
 * float). Geometry conv_t mirrors the host's nc_conv_geom (all 64-bit).
 * im2col: cols [N, C*kh*kw, oh*ow] <- x [N, C, H, W], zero outside the
 *   input (padding); one work item per cols element (coalesced writes).
 *   cols has element strides csn (samples) and csk (rows) and unit stride
 *   along oh*ow: contiguous is (K*L, L), the [K, N, L] layout that one
 *   GEMM over all samples reads is (L, N*L); with COLS_NFAST (that layout)
 *   neighbouring items take neighbouring samples after l, so the writes
 *   stay contiguous when L is short.
 * col2im: x [N, C, H, W] <- the sum of every cols entry that read the
 *   pixel; one work item per pixel (per sh x sw block of pixels for a
 *   compiled strided window) gathering over the kernel taps, so no
 *   atomics and a fixed summation order. cols and x never alias.
 * Index arithmetic runs in IX (common.cl): 64-bit division made these
 * copies several times slower than memory speed. Windows up to 7x7 with
 * strides up to 4 are compiled in (CG_KH, CG_KW, CG_SH, CG_SW): im2col
 * then unrolls its taps, col2im divides by constant strides. */
typedef struct { long N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; } conv_t;
#define KCH 16   /* cols rows per im2col work item */

/* one work item per (n, chunk of KCH cols rows, l): the (c, ki, kj) of
 * successive rows advance by increments, so a chunk costs two divisions
 * where one item per element spent five (integer division, not memory,
 * bound that copy; measurements: docs/notes/kernels.md); neighbouring
 * items take neighbouring l, so the writes stay coalesced */
__kernel void im2col(__global O_T *cols, long co, __global const A_T *x, long xo, conv_t g, long csn, long csk)
{
#ifdef CG_KH
    /* the window compiled in (CG_KH, CG_KW, CG_SH, CG_SW): one item per (n,
     * c, l) writes its KH*KW rows with the taps unrolled, no carries */
    const IX C = g.C, H = g.H, W = g.W, ow = g.ow, L = g.oh * g.ow, sn = csn, sk = csk;
    const int ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
    const IX n_all = g.N * C * L;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
#ifdef COLS_NFAST
        IX l = i % L, r = i / L, n = r % (IX)g.N, c = r / (IX)g.N;
#else
        IX l = i % L, r = i / L, c = r % C, n = r / C;
#endif
        int h0 = (int)(l / ow) * CG_SH - ph, w0 = (int)(l % ow) * CG_SW - pw;
        __global const A_T *xc = x + xo + (n * C + c) * H * W;
        const IX base = n * sn + c * (CG_KH * CG_KW) * sk + l;   /* from cols + co: offsets stay long */
        /* every tap loaded before any is stored: cols and x may alias as far
         * as the compiler knows, so interleaved stores kept each load
         * waiting for the one before it (a memory latency per tap) */
        A_CT v[CG_KH * CG_KW];
        UNROLL for (int ki = 0; ki < CG_KH; ki++) {
            const int h = h0 + ki * dh;
            const bool hin = h >= 0 && h < (int)H;
            UNROLL for (int kj = 0; kj < CG_KW; kj++) {
                const int w = w0 + kj * dw;
                v[ki * CG_KW + kj] = (hin && w >= 0 && w < (int)W) ? A_LOAD(xc, (IX)h * W + (IX)w) : (A_CT)0;
            }
        }
        UNROLL for (int t = 0; t < CG_KH * CG_KW; t++) O_STORE(cols + co, base + (IX)t * sk, v[t]);
    }
#else
    const IX C = g.C, H = g.H, W = g.W, kh = g.kh, kw = g.kw, ow = g.ow, L = g.oh * g.ow, K = C * kh * kw;
    const IX sn = csn, sk = csk;
    const int sh = g.sh, sw = g.sw, ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
    const IX nkb = (K + KCH - 1) / KCH, n_all = g.N * nkb * L;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        IX l = i % L, r = i / L, kb = r % nkb, n = r / nkb;
        int h0 = (int)(l / ow) * sh - ph, w0 = (int)(l % ow) * sw - pw;
        IX k = kb * KCH, k1 = min(k + (IX)KCH, K);
        IX kj = k % kw, t = k / kw, ki = t % kh, c = t / kh;
        __global const A_T *xc = x + xo + (n * C + c) * H * W;
        for (; k < k1; k++) {
            int h = h0 + (int)ki * dh, w = w0 + (int)kj * dw;
            A_CT v = (h >= 0 && h < (int)H && w >= 0 && w < (int)W) ? A_LOAD(xc, (IX)h * W + (IX)w) : (A_CT)0;
            O_STORE(cols, co + n * sn + k * sk + l, v);
            if (++kj == kw) {
                kj = 0;
                if (++ki == kh) { ki = 0; xc += H * W; }
            }
        }
    }
#endif
}

#if defined(CG_KH) && (CG_SH > 1 || CG_SW > 1)
/* Strided windows: one item per CG_SH x CG_SW block of pixels. A block's
 * pixels take every tap parity between them, so all items of a warp run
 * the same taps (one pixel per item diverged on the parity of its row and
 * column), and for each tap neighbouring items read neighbouring cols
 * entries. */
__kernel void col2im(__global O_T *x, long xo, __global const A_T *cols, long co, conv_t g, long csn, long csk)
{
    const IX C = g.C, H = g.H, W = g.W, oh = g.oh, ow = g.ow, sk = csk;
    const int ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
    const IX HB = (H + CG_SH - 1) / CG_SH, WB = (W + CG_SW - 1) / CG_SW, n_all = g.N * C * HB * WB;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        IX bw = i % WB, t = i / WB, bh = t % HB, nc = t / HB;   /* nc = n * C + c */
        A_CT acc[CG_SH][CG_SW];
        UNROLL for (int a = 0; a < CG_SH; a++)
            UNROLL for (int b = 0; b < CG_SW; b++) acc[a][b] = 0;
        __global const A_T *cn = cols + co + (nc / C) * (IX)csn + (nc % C) * (CG_KH * CG_KW) * sk;
        UNROLL for (int ki = 0; ki < CG_KH; ki++)
            UNROLL for (int a = 0; a < CG_SH; a++) {
                const int th = (int)bh * CG_SH + a + ph - ki * dh;
                if (th < 0 || th % CG_SH) continue;
                const int oy = th / CG_SH;
                if (oy >= (int)oh) continue;
                UNROLL for (int kj = 0; kj < CG_KW; kj++)
                    UNROLL for (int b = 0; b < CG_SW; b++) {
                        const int tw = (int)bw * CG_SW + b + pw - kj * dw;
                        if (tw < 0 || tw % CG_SW) continue;
                        const int ox = tw / CG_SW;
                        if (ox < (int)ow) acc[a][b] += A_LOAD(cn, (IX)(ki * CG_KW + kj) * sk + (IX)oy * ow + (IX)ox);
                    }
            }
        UNROLL for (int a = 0; a < CG_SH; a++)
            UNROLL for (int b = 0; b < CG_SW; b++) {
                const IX h = bh * CG_SH + a, w = bw * CG_SW + b;
                if (h < H && w < W) O_STORE(x, xo + (nc * H + h) * W + w, acc[a][b]);
            }
    }
}
#else
__kernel void col2im(__global O_T *x, long xo, __global const A_T *cols, long co, conv_t g, long csn, long csk)
{
#ifdef CG_KH /* the window compiled in: divisions by the strides and tap loops fold */
    const IX C = g.C, H = g.H, W = g.W, kh = CG_KH, kw = CG_KW, oh = g.oh, ow = g.ow;
    const int sh = CG_SH, sw = CG_SW, ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
#else
    const IX C = g.C, H = g.H, W = g.W, kh = g.kh, kw = g.kw, oh = g.oh, ow = g.ow;
    const int sh = g.sh, sw = g.sw, ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
#endif
    const IX sk = csk;
    const IX n_all = g.N * C * H * W;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        IX w = i % W, t = i / W, h = t % H, nc = t / H;   /* nc = n * C + c */
        const IX cb = (nc / C) * (IX)csn + (nc % C) * kh * kw * sk;   /* row (n, c, 0, 0) from cols + co */
        A_CT acc = 0;
        for (int ki = 0; ki < (int)kh; ki++) {
            int th = (int)h + ph - ki * dh;
            if (th < 0 || (sh > 1 && th % sh)) continue;   /* stride 1: no division */
            int oh_ = sh > 1 ? th / sh : th;
            if (oh_ >= (int)oh) continue;
            for (int kj = 0; kj < (int)kw; kj++) {
                int tw = (int)w + pw - kj * dw;
                if (tw < 0 || (sw > 1 && tw % sw)) continue;
                int ow_ = sw > 1 ? tw / sw : tw;
                if (ow_ >= (int)ow) continue;
                acc += A_LOAD(cols + co, cb + ((IX)ki * kw + (IX)kj) * sk + (IX)oh_ * ow + (IX)ow_);
            }
        }
        O_STORE(x, xo + i, acc);
    }
}
#endif
