/* copy.cl — the elementwise family's copy kernels: strided copy with dtype
 * conversion (TA -> TO), fill and range.
 * copy_strided / copy_contig: dst[i] = convert(src[i]); dst and src must not
 * overlap. fill_strided / fill_contig: dst[i] = raw bits. range_contig:
 * dst[i] = start + i * step. */
#if A_FLOAT && !O_FLOAT
#define CONVERT(v) CAT(SAT_, TO)(v)
#else
#define CONVERT(v) (v)
#endif

__kernel void copy_strided(__global O_T *dst, __global const A_T *src, meta_t m)
{
    GRID_LOOP(i, m.n) {
        O_STORE(dst, meta_offset(&m, 0, i), CONVERT(A_LOAD(src, meta_offset(&m, 1, i))));
    }
}

__kernel void copy_contig(__global O_T *dst, long doff, __global const A_T *src, long soff, long n)
{
    GRID_LOOP(i, n) { O_STORE(dst, doff + i, CONVERT(A_LOAD(src, soff + i))); }
}

/* copy_transpose: m is [R, C] or [B, R, C] with dst's unit stride along C
 * and src's along R (a transposed matrix made contiguous). A TT x TT tile
 * passes through local memory so that both sides move whole rows: the
 * strided kernel reads or writes one element per 32-byte sector there.
 * Each work item moves TT^2 / 256 elements, all loads issued before the
 * barrier: what bounds a transpose is the bytes in flight, so 64 x 64
 * tiles (16 elements an item) outrun 32 x 32 ones (4), float16 most of
 * all (measurements: docs/notes/kernels.md). TT is 64 where the tile holds
 * floats (float32, float16, bfloat16), 32 where it holds 8-byte values
 * (the other dtypes), so it stays within the 32 KiB of local memory
 * OpenCL promises (elementwise.c takes the same TT). Work-groups 32 x 8,
 * grid (R tiles, C tiles, B). */
#define TT (sizeof(A_CT) > 4 ? 32 : 64)
__kernel __attribute__((reqd_work_group_size(32, 8, 1)))
void copy_transpose(__global O_T *dst, __global const A_T *src, meta_t m)
{
    __local A_CT tile[TT][TT + 1];
    const int nd = (int)m.ndim, tx = get_local_id(0), ty = get_local_id(1);
    const long R = m.sizes[nd - 2], C = m.sizes[nd - 1], r0 = get_group_id(0) * TT, c0 = get_group_id(1) * TT;
    const long b = get_group_id(2);
    const long doff = m.offsets[0] + (nd == 3 ? b * m.strides[0][0] : 0);
    const long soff = m.offsets[1] + (nd == 3 ? b * m.strides[1][0] : 0);
    const long ls = m.strides[1][nd - 1], ld = m.strides[0][nd - 2];
    UNROLL for (int j = ty; j < TT; j += 8)
        UNROLL for (int h = 0; h < TT; h += 32)
            if (r0 + tx + h < R && c0 + j < C) tile[j][tx + h] = A_LOAD(src, soff + (r0 + tx + h) + (c0 + j) * ls);
    barrier(CLK_LOCAL_MEM_FENCE);
    UNROLL for (int j = ty; j < TT; j += 8)
        UNROLL for (int h = 0; h < TT; h += 32)
            if (r0 + j < R && c0 + tx + h < C) O_STORE(dst, doff + (r0 + j) * ld + c0 + tx + h, CONVERT(tile[tx + h][j]));
}

/* copy_rows: m is [R, C] or [B, R, C] with both sides' unit stride along
 * C and any row strides (a narrowed view, rows padded to whole lines):
 * RW elements a work item, a grid's width apart: at each step the
 * items cover consecutive elements, so every load is coalesced, and RW of
 * them are in flight. Grid (items along C, R, B). */
#define RW 8
__kernel void copy_rows(__global O_T *dst, __global const A_T *src, meta_t m)
{
    const int nd = (int)m.ndim;
    const long C = m.sizes[nd - 1], R = m.sizes[nd - 2], r = get_global_id(1), b = get_global_id(2);
    const long step = get_global_size(0);
    if (r >= R) return;
    const long d = m.offsets[0] + (nd == 3 ? b * m.strides[0][0] : 0) + r * m.strides[0][nd - 2];
    const long s = m.offsets[1] + (nd == 3 ? b * m.strides[1][0] : 0) + r * m.strides[1][nd - 2];
    UNROLL for (int e = 0; e < RW; e++) {
        const long c = get_global_id(0) + e * step;
        if (c < C) O_STORE(dst, d + c, CONVERT(A_LOAD(src, s + c)));
    }
}

/* fill: `bits` is the value already converted by the host exactly as the CPU
 * backend stores it (saturation, NaN rules), written as the raw word. */
__kernel void fill_strided(__global O_RAW *dst, meta_t m, ulong bits)
{
    GRID_LOOP(i, m.n) { dst[meta_offset(&m, 0, i)] = (O_RAW)bits; }
}

__kernel void fill_contig(__global O_RAW *dst, long off, long n, ulong bits)
{
    GRID_LOOP(i, n) { dst[off + i] = (O_RAW)bits; }
}

/* range: start + i * step in WIDE_T (double where the device has it, like
 * the CPU reference), then stored with float -> int saturation. */
#if O_FLOAT
#define WIDE_STORE(p, i, v) O_STORE(p, i, v)
#else
#define WIDE_STORE(p, i, v) O_STORE(p, i, CAT(SAT_, TO)(v))
#endif
__kernel void range_contig(__global O_T *dst, long off, long n, WIDE_T start, WIDE_T step)
{
    GRID_LOOP(i, n) { WIDE_STORE(dst, off + i, start + (WIDE_T)i * step); }
}
