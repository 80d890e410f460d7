/* softmax.cl — the softmax family's kernels.
 * softmax_group / softmax_back_group: one work-group per row of contiguous
 *   [rows, R] (grid-strided over rows), local size a power of two <= 256;
 *   max, sum of exp and the write are three passes over the row (it stays
 *   in cache). softmax_item / softmax_back_item: one work item per row, for
 *   short rows. LOGSM selects log_softmax. TA = TO, a float dtype. */
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
