/* index_scan.cl — the index family's scan: inclusive prefix sum (or with
 * -DPROD product) along the last dim. -DTA=-DTO=<dtype>. Accumulates in
 * ACC_T: WIDE_T for floats (double where the device has fp64, as the cpu
 * does), ulong for integers (wrap around). Row geometry (meta_t, one entry
 * per row): operand 0 out's row start, 1 a's. Row strides may be negative
 * (reverse scans). out must not alias a.
 * scan_rows: one work item per row, sequential (many rows, or short ones).
 * scan_group: one work-group per row: each lane totals its contiguous
 *   chunk, lane 0 turns the totals into exclusive prefixes in local memory,
 *   then each lane rescans its chunk from its prefix (few long rows). */
#if A_FLOAT
#define ACC_T WIDE_T
#define LOAD(p, i) ((ACC_T)A_LOAD(p, i))
#define STORE(p, i, v) O_STORE(p, i, v)
#else
#define ACC_T ulong
#define LOAD(p, i) ((ulong)A_LOAD(p, i))
#define STORE(p, i, v) O_STORE(p, i, (long)(v))
#endif
#ifdef PROD
#define IDENT ((ACC_T)1)
#define OP(x, y) ((x) * (y))
#else
#define IDENT ((ACC_T)0)
#define OP(x, y) ((x) + (y))
#endif
#define LOCAL_MAX 256

__kernel void scan_rows(__global O_T *out, __global const A_T *a, meta_t m, long R, long ostride, long astride)
{
    GRID_LOOP(row, m.n) {
        long o = meta_offset(&m, 0, row), x = meta_offset(&m, 1, row);
        ACC_T acc = IDENT;
        for (long j = 0; j < R; j++) {
            acc = OP(acc, LOAD(a, x + j * astride));
            STORE(out, o + j * ostride, acc);
        }
    }
}

__kernel void scan_group(__global O_T *out, __global const A_T *a, meta_t m, long R, long ostride, long astride)
{
    __local ACC_T part[LOCAL_MAX];
    long row = get_group_id(0), o = meta_offset(&m, 0, row), x = meta_offset(&m, 1, row);
    int lid = get_local_id(0), n = get_local_size(0);
    long chunk = (R + n - 1) / n, from = lid * chunk, to = min(R, from + chunk);
    ACC_T acc = IDENT;
    for (long j = from; j < to; j++) acc = OP(acc, LOAD(a, x + j * astride));
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        ACC_T run = IDENT;
        for (int t = 0; t < n; t++) { ACC_T v = part[t]; part[t] = run; run = OP(run, v); }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    acc = part[lid];
    for (long j = from; j < to; j++) {
        acc = OP(acc, LOAD(a, x + j * astride));
        STORE(out, o + j * ostride, acc);
    }
}
