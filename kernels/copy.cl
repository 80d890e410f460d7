/* copy.cl — strided copy with dtype conversion (TA -> TO), fill and range.
 * copy_strided / copy_contig: dst[i] = convert(src[i]); dst and src must not
 * overlap. fill_strided: dst[i] = value (compute type of TO). range_contig:
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

__kernel void fill_strided(__global O_T *dst, meta_t m, O_CT value)
{
    GRID_LOOP(i, m.n) { O_STORE(dst, meta_offset(&m, 0, i), value); }
}

__kernel void fill_contig(__global O_T *dst, long off, long n, O_CT value)
{
    GRID_LOOP(i, n) { O_STORE(dst, off + i, value); }
}

#if O_FLOAT
__kernel void range_contig(__global O_T *dst, long off, long n, O_CT start, O_CT step)
{
    GRID_LOOP(i, n) { O_STORE(dst, off + i, start + (O_CT)i * step); }
}
#else
__kernel void range_contig(__global O_T *dst, long off, long n, long start, long step)
{
    GRID_LOOP(i, n) { O_STORE(dst, off + i, start + i * step); }
}
#endif
