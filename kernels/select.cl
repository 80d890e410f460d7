/* select.cl — where and the row-wise softmax family.
 * where_strided: out = cond ? a : b as raw words of dtype TO (a, b and out
 *   share it; a scalar operand arrives as its raw word); meta_t operands:
 *   0 out, 1 cond (uchar), 2 a, 3 b (absent ones alias out and are unread);
 *   where_c the same over contiguous operands.
 * softmax_group / softmax_back_group: one work-group per row of contiguous
 *   [rows, R] (grid-strided over rows), local size a power of two <= 256;
 *   max, sum of exp and the write are three passes over the row (it stays
 *   in cache). softmax_item / softmax_back_item: one work item per row, for
 *   short rows. LOGSM selects log_softmax. TA = TO, a float dtype. */
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

#if A_FLOAT
#define SM_LOCAL 256

__kernel void softmax_group(__global O_T *out, long ooff, __global const A_T *a, long aoff, long rows, long R)
{
    __local A_CT l[SM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    for (long row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        long ib = aoff + row * R, ob = ooff + row * R;
        A_CT mx = -INFINITY, s = 0;
        for (long j = lid; j < R; j += ls) mx = NAN_MAX(mx, A_LOAD(a, ib + j));
        mx = group_all(l, mx, 1);
        if (mx == -INFINITY) mx = 0;
        for (long j = lid; j < R; j += ls) s += exp(A_LOAD(a, ib + j) - mx);
        s = group_all(l, s, 0);
#ifdef LOGSM
        A_CT lse = log(s);
        for (long j = lid; j < R; j += ls) O_STORE(out, ob + j, A_LOAD(a, ib + j) - mx - lse);
#else
        A_CT inv = (A_CT)1 / s;
        for (long j = lid; j < R; j += ls) O_STORE(out, ob + j, exp(A_LOAD(a, ib + j) - mx) * inv);
#endif
    }
}

__kernel void softmax_item(__global O_T *out, long ooff, __global const A_T *a, long aoff, long rows, long R)
{
    GRID_LOOP(row, rows) {
        long ib = aoff + row * R, ob = ooff + row * R;
        A_CT mx = -INFINITY, s = 0;
        for (long j = 0; j < R; j++) mx = NAN_MAX(mx, A_LOAD(a, ib + j));
        if (mx == -INFINITY) mx = 0;
        for (long j = 0; j < R; j++) s += exp(A_LOAD(a, ib + j) - mx);
#ifdef LOGSM
        A_CT lse = log(s);
        for (long j = 0; j < R; j++) O_STORE(out, ob + j, A_LOAD(a, ib + j) - mx - lse);
#else
        for (long j = 0; j < R; j++) O_STORE(out, ob + j, exp(A_LOAD(a, ib + j) - mx) / s);
#endif
    }
}

/* gin = y (g - sum(g y)); log_softmax: g - exp(y) sum(g). gin may alias g. */
__kernel void softmax_back_group(__global O_T *gin, long ioff, __global const A_T *g, long goff,
                                 __global const A_T *y, long yoff, long rows, long R)
{
    __local A_CT l[SM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    for (long row = get_group_id(0); row < rows; row += get_num_groups(0)) {
        long gb = goff + row * R, yb = yoff + row * R, ob = ioff + row * R;
        A_CT s = 0;
#ifdef LOGSM
        for (long j = lid; j < R; j += ls) s += A_LOAD(g, gb + j);
        s = group_all(l, s, 0);
        for (long j = lid; j < R; j += ls) O_STORE(gin, ob + j, A_LOAD(g, gb + j) - exp(A_LOAD(y, yb + j)) * s);
#else
        for (long j = lid; j < R; j += ls) s += A_LOAD(g, gb + j) * A_LOAD(y, yb + j);
        s = group_all(l, s, 0);
        for (long j = lid; j < R; j += ls) O_STORE(gin, ob + j, A_LOAD(y, yb + j) * (A_LOAD(g, gb + j) - s));
#endif
    }
}

__kernel void softmax_back_item(__global O_T *gin, long ioff, __global const A_T *g, long goff,
                                __global const A_T *y, long yoff, long rows, long R)
{
    GRID_LOOP(row, rows) {
        long gb = goff + row * R, yb = yoff + row * R, ob = ioff + row * R;
        A_CT s = 0;
#ifdef LOGSM
        for (long j = 0; j < R; j++) s += A_LOAD(g, gb + j);
        for (long j = 0; j < R; j++) O_STORE(gin, ob + j, A_LOAD(g, gb + j) - exp(A_LOAD(y, yb + j)) * s);
#else
        for (long j = 0; j < R; j++) s += A_LOAD(g, gb + j) * A_LOAD(y, yb + j);
        for (long j = 0; j < R; j++) O_STORE(gin, ob + j, A_LOAD(y, yb + j) * (A_LOAD(g, gb + j) - s));
#endif
    }
}
#endif
