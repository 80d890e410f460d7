/* reduce.cl — reductions over the last dim of a strided input. -DROP=<op>
 * (netcl_op code). reduce_part: work-group g handles row g / nparts, part
 * g % nparts, a contiguous slice of the row; lanes accumulate with a stride
 * of the group size, then a tree in local memory. With nparts == 1 it
 * writes the result; otherwise partials (value, index) for reduce_final.
 * Extremum ties keep the lower index; NaN beats numbers (first NaN wins).
 * reduce_rows: one work item per row, for short rows or strided rows whose
 * neighbours are adjacent in memory (a reduction over a leading dim).
 * reduce_cols (at the end): the latter when they are too few for that.
 * Indices (has_idx) go to oidx, contiguous with out's shape, at its own
 * offset ioff. */
#define RSUM 96
#define RMEAN 97
#define RMAX 98
#define RMIN 99
#define RARGMAX 100
#define RARGMIN 101
#define RPROD 102
#define LOCAL_MAX 256

#if A_FLOAT
#define ISNAN(x) isnan(x)
#else
#define ISNAN(x) 0
#endif

#if ROP == RSUM || ROP == RMEAN
#define IDENT ((A_CT)0)
#elif ROP == RPROD
#define IDENT ((A_CT)1)
#else
#define IDENT ((A_CT)0)
#define EXTREMUM 1
#if ROP == RMAX || ROP == RARGMAX
#define BEATS(b, a) ((b) > (a))
#else
#define BEATS(b, a) ((b) < (a))
#endif
#endif

/* folds (bv, bi) into (*av, *ai) */
inline void combine(A_CT *av, long *ai, A_CT bv, long bi)
{
#ifdef EXTREMUM
    if (bi < 0) return;
    if (*ai >= 0) {
        int na = ISNAN(*av), nb = ISNAN(bv);
        int take = (na && nb) ? bi < *ai : na ? 0 : nb ? 1 : (BEATS(bv, *av) || (bv == *av && bi < *ai));
        if (!take) return;
    }
    *av = bv;
    *ai = bi;
#elif ROP == RPROD
    *av = *av * bv;
#else
    *av = *av + bv;
#endif
}

#ifndef EXTREMUM
/* sums and products carry no index: the tree moves values only */
inline void group_reduce(__local A_CT *lv, __local long *li, A_CT v, long idx)
{
    int lid = get_local_id(0), n = get_local_size(0);
    (void)li; (void)idx;
    lv[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = n / 2; s > 0; s /= 2) {
        if (lid < s) {
            A_CT a = lv[lid];
            long ai = -1;
            combine(&a, &ai, lv[lid + s], -1);
            lv[lid] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    li[0] = -1;
}
#else
inline void group_reduce(__local A_CT *lv, __local long *li, A_CT v, long idx)
{
    int lid = get_local_id(0), n = get_local_size(0);
    lv[lid] = v;
    li[lid] = idx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = n / 2; s > 0; s /= 2) {
        if (lid < s) {
            A_CT a = lv[lid];
            long ai = li[lid];
            combine(&a, &ai, lv[lid + s], li[lid + s]);
            lv[lid] = a;
            li[lid] = ai;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
#endif

/* o: out's element; io: idx's (its own offset) */
inline void write_result(__global O_T *out, __global long *oidx, int has_idx, long o, long io, A_CT v, long idx, long R)
{
#if ROP == RARGMAX || ROP == RARGMIN
    O_STORE(out, o, idx);
#elif ROP == RMEAN
    O_STORE(out, o, R > 0 ? v / (A_CT)R : (A_CT)NAN);
#else
    O_STORE(out, o, v);
    if (has_idx) oidx[io] = idx;
#endif
}

__kernel void reduce_part(__global O_T *out, __global long *oidx, int has_idx, long ioff, __global const A_T *a, meta_t m,
                          long R, long rstride, long nparts, __global A_CT *pval, __global long *pidx)
{
    __local A_CT lv[LOCAL_MAX];
    __local long li[LOCAL_MAX];
    long g = get_group_id(0), row = g / nparts, part = g % nparts;
    long chunk = (R + nparts - 1) / nparts, from = part * chunk, to = min(R, from + chunk);
    long base = meta_offset(&m, 1, row);
    A_CT v = IDENT;
    long vi = -1;
#if !defined(EXTREMUM) && TA == 0
    if (rstride == 1) { /* 16-byte loads over the whole float4s of the span, scalars at its ends */
        long lid = get_local_id(0), ls = get_local_size(0), f4 = (from + 3) >> 2, t4 = to >> 2;
        for (long j4 = f4 + lid; j4 < t4; j4 += ls) {
            float4 x = vload4(j4, a + base);
            combine(&v, &vi, x.s0, 0); combine(&v, &vi, x.s1, 0); combine(&v, &vi, x.s2, 0); combine(&v, &vi, x.s3, 0);
        }
        long j = from + lid;
        if (j < min(4 * f4, to)) combine(&v, &vi, A_LOAD(a, base + j), j);
        j = 4 * t4 + lid;
        if (j < to && j >= 4 * f4) combine(&v, &vi, A_LOAD(a, base + j), j);
    } else
#endif
    for (long j = from + get_local_id(0); j < to; j += get_local_size(0)) combine(&v, &vi, A_LOAD(a, base + j * rstride), j);
    group_reduce(lv, li, v, vi);
    if (get_local_id(0) != 0) return;
    if (nparts == 1) write_result(out, oidx, has_idx, meta_offset(&m, 0, row), ioff + row, lv[0], li[0], R);
    else { pval[g] = lv[0]; pidx[g] = li[0]; }
}

__kernel void reduce_final(__global O_T *out, __global long *oidx, int has_idx, long ioff, long ooff, long nparts,
                           __global const A_CT *pval, __global const long *pidx, long R)
{
    __local A_CT lv[LOCAL_MAX];
    __local long li[LOCAL_MAX];
    long row = get_group_id(0);
    A_CT v = IDENT;
    long vi = -1;
    /* partials are combined in part order within each lane: deterministic */
    for (long p = get_local_id(0); p < nparts; p += get_local_size(0)) combine(&v, &vi, pval[row * nparts + p], pidx[row * nparts + p]);
    group_reduce(lv, li, v, vi);
    if (get_local_id(0) == 0) write_result(out, oidx, has_idx, ooff + row, ioff + row, lv[0], li[0], R);
}

__kernel void reduce_rows(__global O_T *out, __global long *oidx, int has_idx, long ioff, __global const A_T *a, meta_t m,
                          long R, long rstride)
{
    GRID_LOOP(row, m.n) {
        long base = meta_offset(&m, 1, row);
        A_CT v = IDENT;
        long vi = -1;
        for (long j = 0; j < R; j++) combine(&v, &vi, A_LOAD(a, base + j * rstride), j);
        write_result(out, oidx, has_idx, meta_offset(&m, 0, row), ioff + row, v, vi, R);
    }
}

/* reduce_cols: rows whose neighbours are adjacent in memory (a reduction
 * over a leading dim) but too few to give every lane a row of its own. A
 * work-group of 32 x CY lanes (CY <= 8) takes 32 neighbouring rows; lane (x, y) adds
 * elements y, y + CY, ... of row x, so a warp reads 32 adjacent words at
 * each step, and the CY partials of a row meet in local memory (in a fixed
 * order: deterministic). */
#define COLS 32
#define COLS_MAXY 8   /* 256 lanes: the cap of the host's work-groups */
__kernel void reduce_cols(__global O_T *out, __global long *oidx, int has_idx, long ioff, __global const A_T *a, meta_t m,
                          long R, long rstride)
{
    __local A_CT lv[COLS_MAXY * COLS];
    __local long li[COLS_MAXY * COLS];
    const int x = get_local_id(0), y = get_local_id(1), cy = get_local_size(1);
    const long row = get_group_id(0) * COLS + x;
    A_CT v = IDENT, v1 = IDENT, v2 = IDENT, v3 = IDENT;
    long vi = -1, vi1 = -1, vi2 = -1, vi3 = -1;
    if (row < m.n) {
        /* four chains in flight: a lane's loads are independent, their adds not */
        const long base = meta_offset(&m, 1, row);
        long j = y;
        for (; j + 3 * cy < R; j += 4 * cy) {
            combine(&v, &vi, A_LOAD(a, base + j * rstride), j);
            combine(&v1, &vi1, A_LOAD(a, base + (j + cy) * rstride), j + cy);
            combine(&v2, &vi2, A_LOAD(a, base + (j + 2 * cy) * rstride), j + 2 * cy);
            combine(&v3, &vi3, A_LOAD(a, base + (j + 3 * cy) * rstride), j + 3 * cy);
        }
        for (; j < R; j += cy) combine(&v, &vi, A_LOAD(a, base + j * rstride), j);
        combine(&v, &vi, v1, vi1);
        combine(&v2, &vi2, v3, vi3);
        combine(&v, &vi, v2, vi2);
    }
    lv[y * COLS + x] = v;
    li[y * COLS + x] = vi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = cy / 2; s > 0; s /= 2) {
        if (y < s) {
            A_CT av = lv[y * COLS + x];
            long ai = li[y * COLS + x];
            combine(&av, &ai, lv[(y + s) * COLS + x], li[(y + s) * COLS + x]);
            lv[y * COLS + x] = av;
            li[y * COLS + x] = ai;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (y == 0 && row < m.n) write_result(out, oidx, has_idx, meta_offset(&m, 0, row), ioff + row, lv[x], li[x], R);
}
