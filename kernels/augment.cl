/* augment.cl — per-sample image augmentations with host-supplied randomness
 * (params [N, k] floats), the exact formulas of src/backend/cpu/augment.c.
 * x and out are contiguous [N,C,H,W] / [N,C,OH,OW] of one dtype (-DTA: 0
 * float32, 6 uint8) and never alias. One work item per output element.
 *   augment_flip:   params (flip): out[..,i,j] = x[..,i, flip ? W-1-j : j]
 *   augment_jitter: params (b, c): x*c + b (uint8: round half even, clamp)
 *   augment_erase:  params (top, left, h, w, value): the box = value
 *   augment_crop:   params (top, left) in the image padded by `pad`
 *                   (reflect, or the constant `value`) */
#pragma OPENCL FP_CONTRACT OFF

#if TA == 6
#define LD(p, i) ((float)(p)[i])
inline void st(__global uchar *p, long i, float v)
{
    float r = rint(v);
    p[i] = (uchar)(isnan(r) ? 0.0f : clamp(r, 0.0f, 255.0f));
}
#else
#define LD(p, i) ((p)[i])
inline void st(__global float *p, long i, float v) { p[i] = v; }
#endif

#define AUG_ARGS __global A_T *out, long ooff, __global const A_T *x, long xoff, __global const float *params, \
                 long C, long H, long W, long OH, long OW, long pad, int reflect, float value, long total
/* decomposes the output index o into plane, row i, col j; pl is the plane's first input element */
#define AUG_INDEX(o) long j = (o) % OW, i = ((o) / OW) % OH, plane = (o) / (OW * OH), n = plane / C, \
                     pl = xoff + plane * H * W

__kernel void augment_flip(AUG_ARGS)
{
    GRID_LOOP(o, total) {
        AUG_INDEX(o);
        long sj = params[n] != 0.0f ? W - 1 - j : j;
        st(out, ooff + o, LD(x, pl + i * W + sj));
    }
}

__kernel void augment_jitter(AUG_ARGS)
{
    GRID_LOOP(o, total) {
        AUG_INDEX(o);
        float prod = LD(x, pl + i * W + j) * params[2 * n + 1];
        st(out, ooff + o, prod + params[2 * n]);
    }
}

__kernel void augment_erase(AUG_ARGS)
{
    GRID_LOOP(o, total) {
        AUG_INDEX(o);
        __global const float *p = params + 5 * n;
        long top = (long)p[0], left = (long)p[1], bh = (long)p[2], bw = (long)p[3];
        int in = i >= top && i < top + bh && j >= left && j < left + bw;
        st(out, ooff + o, in ? p[4] : LD(x, pl + i * W + j));
    }
}

inline long source(long p, long pad, long n, int reflect)
{
    long s = p - pad;
    if (s >= 0 && s < n) return s;
    if (!reflect) return -1;
    return s < 0 ? -s : 2 * (n - 1) - s;
}

__kernel void augment_crop(AUG_ARGS)
{
    GRID_LOOP(o, total) {
        AUG_INDEX(o);
        long sy = source((long)params[2 * n] + i, pad, H, reflect);
        long sx = source((long)params[2 * n + 1] + j, pad, W, reflect);
        st(out, ooff + o, sy < 0 || sx < 0 ? value : LD(x, pl + sy * W + sx));
    }
}
