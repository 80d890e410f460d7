/* copy.cl — strided copy with dtype conversion (TA -> TO), fill and range.
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
