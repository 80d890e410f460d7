/* conv_implicit.cl — the convolution family's implicit GEMM: the operand
 * gathers and the output scatter that turn gemm.cl's gemm_tiled into a
 * convolution pass without unfolding the input (programs
 * "conv_implicit+gemm", -DCONV_PASS=n).
 * Per group (the GEMM's batch index bb = group, or slice * G + group for
 * the split K of backward-weight), with K' = KH*KW, L = OH*OW, P = H*W:
 *   CONV_PASS 0 forward:         y[img, o, p]      M = O/G, N = imgs*L, K = C/G*K'
 *       A = w [O/G, K] (plain strides), B[k = (c, kh, kw)][n = (img, oh, ow)] = x
 *   CONV_PASS 1 backward-data:   dx[img, c, p]     M = C/G, N = imgs*P, K = O/G*K'
 *       A[c][k = (o, kh, kw)] = w[o, c, kh, kw], B[k][n = (img, h, w)] = dy where
 *       (h + PH - kh*DH, w + PW - kw*DW) is a stride multiple inside dy, else 0
 *   CONV_PASS 2 backward-weight: dw[s][o, (c, kh, kw)]  M = O/G, N = C/G*K', K = imgs*L
 *       A[o][k = (img, l)] = dy, B[k = (img, oh, ow)][n = (c, kh, kw)] = x;
 *       slice s of the K range into its own partial sum (the host adds them)
 * Runtime divisors come with magic numbers (fdiv): no integer division in
 * the gathers. Elements outside the input (padding) read as 0. */
#ifdef CONV_PASS
/* mirrors nc_conv_args: N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW */
typedef struct { long N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW; } conv_t;
/* the divisors: x = K' (KH*KW), y = KW, z = L (forward / weight) or P
 * (data), w = OW (forward / weight) or W (data) */
#define CONV_PARAMS , conv_t cg, int4 dv, uint4 dm, int4 ds, int kslices
#define DIV_KK(n) fdiv(n, dm.x, ds.x)
#define DIV_KW(n) fdiv(n, dm.y, ds.y)
#define DIV_PIX(n) fdiv(n, dm.z, ds.z)
#define DIV_ROW(n) fdiv(n, dm.w, ds.w)

/* x at channel c of group grp for kernel tap kk = (kh, kw) and output
 * position q = (img, oh, ow) (forward's B, backward-weight's B) */
inline A_CT conv_x_tap(__global const A_T *x, long xoff, conv_t g, int4 dv, uint4 dm, int4 ds, int grp, int k, int q)
{
    const int c = DIV_KK(k), kk = k - c * dv.x, kh = DIV_KW(kk), kw = kk - kh * dv.y;
    const int img = DIV_PIX(q), p = q - img * dv.z, oh = DIV_ROW(p), ow = p - oh * dv.w;
    const int ih = oh * (int)g.SH - (int)g.PH + kh * (int)g.DH, iw = ow * (int)g.SW - (int)g.PW + kw * (int)g.DW;
    if (ih < 0 || ih >= (int)g.H || iw < 0 || iw >= (int)g.W) return 0;
    const long ch = (long)img * g.C + (long)grp * (g.C / g.G) + c;
    return A_LOAD(x, xoff + (ch * g.H + ih) * g.W + iw);
}

#if CONV_PASS == 0
#define B_GATHER(k, n) conv_x_tap(w, woff, cg, dv, dm, ds, grp, k, n)
#elif CONV_PASS == 1
/* w [O, C/G, K'] read as [C/G][O/G * K'] for group grp */
#define A_GATHER(m, k) conv_wt(a, aoff, cg, dv, dm, ds, grp, m, k)
inline A_CT conv_wt(__global const A_T *w, long woff, conv_t g, int4 dv, uint4 dm, int4 ds, int grp, int m, int k)
{
    const int o = DIV_KK(k), kk = k - o * dv.x;
    const long cg_ = g.C / g.G, og = g.O / g.G;
    return A_LOAD(w, woff + (((long)grp * og + o) * cg_ + m) * dv.x + kk);
}
/* dy at the output position that tap k = (o, kh, kw) takes to input position q = (img, h, w) */
#define B_GATHER(k, n) conv_dy_tap(w, woff, cg, dv, dm, ds, grp, k, n)
inline A_CT conv_dy_tap(__global const A_T *dy, long dyoff, conv_t g, int4 dv, uint4 dm, int4 ds, int grp, int k, int q)
{
    const int o = DIV_KK(k), kk = k - o * dv.x, kh = DIV_KW(kk), kw = kk - kh * dv.y;
    const int img = DIV_PIX(q), p = q - img * dv.z, h = DIV_ROW(p), x = p - h * dv.w;
    int th = h + (int)g.PH - kh * (int)g.DH, tw = x + (int)g.PW - kw * (int)g.DW;
    if (th < 0 || tw < 0) return 0;
    if (g.SH > 1) { if (th % (int)g.SH) return 0; th /= (int)g.SH; }
    if (g.SW > 1) { if (tw % (int)g.SW) return 0; tw /= (int)g.SW; }
    if (th >= (int)g.OH || tw >= (int)g.OW) return 0;
    const long ch = (long)img * g.O + (long)grp * (g.O / g.G) + o;
    return A_LOAD(dy, dyoff + (ch * g.OH + th) * g.OW + tw);
}
#else
/* dy [imgs, O, L] read as [O/G][imgs * L] for group grp */
#define A_GATHER(m, k) conv_dy_rows(a, aoff, cg, dv, dm, ds, grp, m, k)
inline A_CT conv_dy_rows(__global const A_T *dy, long dyoff, conv_t g, int4 dv, uint4 dm, int4 ds, int grp, int m, int k)
{
    const int img = DIV_PIX(k), l = k - img * dv.z;
    const long ch = (long)img * g.O + (long)grp * (g.O / g.G) + m;
    return A_LOAD(dy, dyoff + ch * dv.z + l);
}
#define B_GATHER(k, n) conv_x_tap(w, woff, cg, dv, dm, ds, grp, n, k)
#endif

/* where output element (m, n) of group grp goes */
#if CONV_PASS == 2
#define CONV_OUT(m, n) (((long)bb * M + (m)) * N + (n))
#else
inline long conv_out(conv_t g, int4 dv, uint4 dm, int4 ds, int grp, int M, int m, int n)
{
    const int img = DIV_PIX(n), p = n - img * dv.z;
    const long chans = CONV_PASS == 0 ? g.O : g.C;
    return ((long)img * chans + (long)grp * M + m) * dv.z + p;
}
#define CONV_OUT(m, n) conv_out(cg, dv, dm, ds, grp, M, m, n)
#endif
#endif /* CONV_PASS */
