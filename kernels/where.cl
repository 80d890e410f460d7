/* where.cl — the elementwise family's where kernels.
 * where_strided: out = cond ? a : b as raw words of dtype TO (a, b and out
 *   share it; a scalar operand arrives as its raw word); meta_t operands:
 *   0 out, 1 cond (uchar), 2 a, 3 b (absent ones alias out and are unread);
 *   where_c the same over contiguous operands. */
__kernel void where_strided(__global O_RAW *out, __global const uchar *cond, __global const O_RAW *a,
                            __global const O_RAW *b, meta_t m, ulong sa, ulong sb, int has_a, int has_b)
{
    GRID_LOOP(i, m.n) {
        int c = cond[meta_offset(&m, 1, i)] != 0;
        O_RAW v = c ? (has_a ? a[meta_offset(&m, 2, i)] : (O_RAW)sa) : (has_b ? b[meta_offset(&m, 3, i)] : (O_RAW)sb);
        out[meta_offset(&m, 0, i)] = v;
    }
}

/* where_c: every operand contiguous over the same n elements (with their
 * offsets), 4 elements per item (ceil(n / 4) items, the first few also
 * take the tail): no per-element index arithmetic (where_strided's
 * divisions cost several times the copy) */
#define O_RAW4 CAT(O_RAW, 4)
#define WHERE_LOOP(VA, VB)                                                                       \
    GRID_LOOP(i, n >> 2) {                                                                       \
        uchar4 c = vload4(i, cond + co);                                                         \
        O_RAW4 x = (VA), y = (VB), r;                                                            \
        r.x = c.x ? x.x : y.x; r.y = c.y ? x.y : y.y; r.z = c.z ? x.z : y.z; r.w = c.w ? x.w : y.w; \
        vstore4(r, i, out + oo);                                                                 \
    }
__kernel void where_c(__global O_RAW *out, long oo, __global const uchar *cond, long co, __global const O_RAW *a,
                      long ao, __global const O_RAW *b, long bo, ulong sa, ulong sb, int has_a, int has_b, long n)
{
    const O_RAW4 va = (O_RAW4)((O_RAW)sa), vb = (O_RAW4)((O_RAW)sb);
    if (has_a && has_b) WHERE_LOOP(vload4(i, a + ao), vload4(i, b + bo))
    else if (has_a) WHERE_LOOP(vload4(i, a + ao), vb)
    else if (has_b) WHERE_LOOP(va, vload4(i, b + bo))
    else WHERE_LOOP(va, vb)
    for (long t = (n & ~3L) + get_global_id(0); t < n; t += get_global_size(0))
        out[oo + t] = cond[co + t] ? (has_a ? a[ao + t] : (O_RAW)sa) : (has_b ? b[bo + t] : (O_RAW)sb);
}
