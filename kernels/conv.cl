/* conv.cl — im2col / col2im for convolutions over contiguous NCHW (TA = TO,
 * a float dtype; float16/bfloat16 accumulate in float). Geometry conv_t
 * mirrors the host's nc_conv_geom (all 64-bit).
 * im2col: cols [N, C*kh*kw, oh*ow] <- x [N, C, H, W], zero outside the
 *   input (padding); one work item per cols element (coalesced writes).
 * col2im: x [N, C, H, W] <- the sum of every cols entry that read the
 *   pixel; one work item per pixel gathering over the kernel taps, so no
 *   atomics and a fixed summation order. cols and x never alias. */
typedef struct { long N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; } conv_t;

__kernel void im2col(__global O_T *cols, long co, __global const A_T *x, long xo, conv_t g)
{
    long L = g.oh * g.ow, K = g.C * g.kh * g.kw;
    GRID_LOOP(i, g.N * K * L) {
        long l = i % L, r = i / L, k = r % K, n = r / K;
        long kj = k % g.kw, ki = (k / g.kw) % g.kh, c = k / (g.kw * g.kh);
        long h = (l / g.ow) * g.sh - g.ph + ki * g.dh, w = (l % g.ow) * g.sw - g.pw + kj * g.dw;
        A_CT v = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? A_LOAD(x, xo + ((n * g.C + c) * g.H + h) * g.W + w) : (A_CT)0;
        O_STORE(cols, co + i, v);
    }
}

__kernel void col2im(__global O_T *x, long xo, __global const A_T *cols, long co, conv_t g)
{
    long L = g.oh * g.ow, K = g.C * g.kh * g.kw;
    GRID_LOOP(i, g.N * g.C * g.H * g.W) {
        long w = i % g.W, h = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, n = i / (g.W * g.H * g.C);
        A_CT acc = 0;
        for (long ki = 0; ki < g.kh; ki++) {
            long th = h + g.ph - ki * g.dh;
            if (th < 0 || th % g.sh) continue;
            long oh_ = th / g.sh;
            if (oh_ >= g.oh) continue;
            for (long kj = 0; kj < g.kw; kj++) {
                long tw = w + g.pw - kj * g.dw;
                if (tw < 0 || tw % g.sw) continue;
                long ow_ = tw / g.sw;
                if (ow_ >= g.ow) continue;
                acc += A_LOAD(cols, co + (n * K + (c * g.kh + ki) * g.kw + kj) * L + oh_ * g.ow + ow_);
            }
        }
        O_STORE(x, xo + i, acc);
    }
}
