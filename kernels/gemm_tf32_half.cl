/* gemm_tf32_half.cl — a float32 GEMM operand in tf32 mode carried by float16
 * (src/backend/cl/gemm_tf32.c). The operand is seen as rows r of K elements,
 * element (r, k) at in[off + r sr + k sk]; `a`'s rows are its m, `w`'s
 * its n. The output's rows along its contiguous dim are ldo apart (the
 * host pads them to whole 128-byte lines). The absmax kernels gather each row's largest finite magnitude as
 * float32 bits (positive floats order as their bits); the to_half kernels
 * write tf32(x) 2^e, e from tf32_half_exp (the row's largest to [2^14,
 * 2^15)), which float16 holds exactly down to 2^-28 of the row's largest.
 * Memory-bound passes: VW = 4 moves float4s where the host found the
 * contiguous dim aligned, else 1. */

#ifndef VW
#define VW 1
#endif

inline uint finite_bits(float v)
{
    const uint b = as_uint(v) & 0x7fffffffu;
    return b < 0x7f800000u ? b : 0u;
}
inline uint4 finite_bits4(float4 v)
{
    return (uint4)(finite_bits(v.x), finite_bits(v.y), finite_bits(v.z), finite_bits(v.w));
}
inline uint max4(uint4 m) { return max(max(m.x, m.y), max(m.z, m.w)); }
#define to_h(v, e) scale_pow2(nearest_tf32(v), (e))

/* k contiguous (sk == 1): a warp per row, the maximum stored */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void absmax_k(__global uint *mx, int moff, __global const float *in, long off, long sr, int R, int K)
{
    __local uint red[256];
    const int lid = get_local_id(0), lane = lid % 32, r = get_group_id(0) * 8 + lid / 32;
    uint m = 0;
    if (r < R) {
        __global const float *p = in + off + (long)r * sr;
#pragma unroll 4
        for (int k = lane * VW; k < K; k += 32 * VW) {
#if VW == 4
            m = max(m, max4(finite_bits4(vload4(0, p + k))));
#else
            m = max(m, finite_bits(p[k]));
#endif
        }
    }
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && r < R) {
        for (int j = 1; j < 32; j++) m = max(m, red[lid + j]);
        mx[moff + r] = m;
    }
}

/* Both passes at once where k is contiguous and a row fits in local
 * memory: a work-group a row, read once into `row`, its maximum, then its
 * float16 copy to out [R][K] */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void to_half_rows(__global half *out, __global const float *in, long off, long sr, int R, int K,
                  __global uint *mx, int moff, int ldo, __local float *row)
{
    __local uint red[256];
    const int lid = get_local_id(0), r = get_group_id(0);
    __global const float *p = in + off + (long)r * sr;
    uint m = 0;
    for (int k = lid * VW; k < K; k += 256 * VW) {
#if VW == 4
        const float4 v = vload4(0, p + k);
        vstore4(v, 0, row + k);
        m = max(m, max4(finite_bits4(v)));
#else
        row[k] = p[k];
        m = max(m, finite_bits(row[k]));
#endif
    }
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (lid < s) red[lid] = max(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) mx[moff + r] = red[0];
    const int e = tf32_half_exp(red[0]);
    __global half *o = out + (long)r * ldo;
    for (int k = lid * VW; k < K; k += 256 * VW) {   /* this thread's own elements */
#if VW == 4
        const float4 v = vload4(0, row + k);
        vstore_half4_rte((float4)(to_h(v.x, e), to_h(v.y, e), to_h(v.z, e), to_h(v.w, e)), 0, o + k);
#else
        vstore_half_rte(to_h(row[k], e), k, o);
#endif
    }
}

/* any other layout (rows adjacent where sr == 1): VW rows a work item
 * over KCH of k, atomic_max into maxima that start at 0 */
#define KCH 64 /* the fastest of 16, 32, 64 and 128 (measurements: docs/notes/kernels.md) */
__kernel void absmax_r(__global uint *mx, int moff, __global const float *in, long off, long sr, long sk, int R, int K)
{
    const int r = get_global_id(0) * VW, k0 = get_global_id(1) * KCH, kend = min(K, k0 + KCH);
    if (r >= R) return;
#if VW == 4
    uint4 m = 0;
#pragma unroll 8
    for (int k = k0; k < kend; k++) m = max(m, finite_bits4(vload4(0, in + off + r + k * sk)));
    atomic_max(mx + moff + r, m.x), atomic_max(mx + moff + r + 1, m.y);
    atomic_max(mx + moff + r + 2, m.z), atomic_max(mx + moff + r + 3, m.w);
#else
    uint m = 0;
#pragma unroll 4
    for (int k = k0; k < kend; k++) m = max(m, finite_bits(in[off + r * sr + k * sk]));
    atomic_max(mx + moff + r, m);
#endif
}

/* Without a transpose: -DRCONT, rows adjacent in and out (sr == 1, out
 * [K][R]); else k contiguous in and out (sk == 1, out [R][K]). VW
 * elements along the contiguous dim a work item. */
__kernel void to_half_e(__global half *out, __global const float *in, long off, long sr, long sk, int R, int K,
                        __global const uint *mx, int moff, int ldo)
{
#ifdef RCONT
    const int r = get_global_id(0) * VW, k = get_global_id(1);
    if (r >= R) return;
    __global const float *p = in + off + r + (long)k * sk;
    const long o = (long)k * ldo + r;
#if VW == 4
    const float4 v = vload4(0, p);
    const float4 t = (float4)(to_h(v.x, tf32_half_exp(mx[moff + r])), to_h(v.y, tf32_half_exp(mx[moff + r + 1])),
                              to_h(v.z, tf32_half_exp(mx[moff + r + 2])), to_h(v.w, tf32_half_exp(mx[moff + r + 3])));
    vstore_half4_rte(t, 0, out + o);
#else
    vstore_half_rte(to_h(*p, tf32_half_exp(mx[moff + r])), o, out);
#endif
#else
    const int k = get_global_id(0) * VW, r = get_global_id(1);
    if (k >= K) return;
    __global const float *p = in + off + (long)r * sr + k;
    const long o = (long)r * ldo + k;
    const int e = tf32_half_exp(mx[moff + r]);
#if VW == 4
    const float4 v = vload4(0, p);
    vstore_half4_rte((float4)(to_h(v.x, e), to_h(v.y, e), to_h(v.z, e), to_h(v.w, e)), 0, out + o);
#else
    vstore_half_rte(to_h(*p, e), o, out);
#endif
#endif
}

/* With a transpose or any strides: out [R][K] (k contiguous) from any
 * layout, a 32 x 32 tile through local memory (-DIN_RCONT: the input's
 * rows adjacent, so that reads run along memory too) */
__kernel __attribute__((reqd_work_group_size(32, 8, 1)))
void to_half_t(__global half *out, __global const float *in, long off, long sr, long sk, int R, int K,
               __global const uint *mx, int moff, int ldo)
{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int k0 = get_group_id(0) * 32, r0 = get_group_id(1) * 32;
    __local float tile[32][33];   /* [k][r], padded against bank conflicts */
    for (int j = ty; j < 32; j += 8) {
#ifdef IN_RCONT
        const int r = r0 + tx, k = k0 + j;
        tile[j][tx] = r < R && k < K ? in[off + r * sr + k * sk] : 0.0f;
#else
        const int r = r0 + j, k = k0 + tx;
        tile[tx][j] = r < R && k < K ? in[off + r * sr + k * sk] : 0.0f;
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = ty; j < 32; j += 8) {
        const int r = r0 + j, k = k0 + tx;
        if (r < R && k < K) vstore_half_rte(to_h(tile[tx][j], tf32_half_exp(mx[moff + r])), (long)r * ldo + k, out);
    }
}
