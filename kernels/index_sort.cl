/* index_sort.cl — the index family's sort: a bitonic sort of every row of
 * the last dim. -DTA=-DTO=<dtype>, -DDESC=0|1. Keys compare in K_T (float
 * for float32/float16/bfloat16, double for float64, long for integers and
 * bool) with ties broken by the element's index: a total order, so the
 * result equals a stable sort and every backend returns the same indices.
 * NaN is greater than any number (first when descending); padding slots
 * (index >= R) go last either way.
 * A row of R elements is padded to P = 2^p slots; L (a power of two, at
 * most P) slots fit in local memory. Row geometry (meta_t, one entry per
 * row): operand 0 the input's row start, 1 the values', 2 the indices'.
 * Scratch (long rows): keys and int indices, P slots per row, row-major.
 *
 * sort_local: work-group g sorts slots [b L, b L + L) of row g / (P / L),
 *   loaded from the input, through every stage k <= L in local memory;
 *   then writes them to the outputs when L == P, else to scratch.
 * sort_global: one compare-exchange step (k, j), j >= L, on scratch; one
 *   work item per slot pair, grid-stride loop.
 * sort_merge: the steps j < L of stage k for one block of L scratch slots
 *   in local memory; the last stage (k == P) writes the outputs.
 * Local arrays come from the host (L keys + L ints). Outputs and input
 * must not alias. */
#define K_T A_CT
#if A_FLOAT
#define KNAN(x) isnan(x)
#else
#define KNAN(x) 0
#endif

/* (ka, ia) strictly before (kb, ib) */
inline int before(K_T ka, int ia, K_T kb, int ib, int R)
{
    if (ia >= R) return 0;
    if (ib >= R) return 1;
    int na = KNAN(ka), nb = KNAN(kb);
    if (na || nb) return (na && nb) ? ia < ib : DESC ? na : nb;
    if (ka != kb) return DESC ? ka > kb : ka < kb;
    return ia < ib;
}

/* slots p < q of one stage: in order when `up`, else reversed */
inline void cmpx_local(__local K_T *lk, __local int *li, int p, int q, int up, int R)
{
    K_T kp = lk[p], kq = lk[q];
    int ip = li[p], iq = li[q];
    if (up ? before(kq, iq, kp, ip, R) : before(kp, ip, kq, iq, R)) {
        lk[p] = kq; lk[q] = kp;
        li[p] = iq; li[q] = ip;
    }
}

/* the steps j = jmax .. 1 of stage k on L local slots starting at slot `base` */
inline void local_steps(__local K_T *lk, __local int *li, int L, int base, int k, int jmax, int R)
{
    for (int j = jmax; j > 0; j >>= 1) {
        for (int q = get_local_id(0); q < L / 2; q += get_local_size(0)) {
            int i = 2 * j * (q / j) + (q % j);
            cmpx_local(lk, li, i, i + j, ((base + i) & k) == 0, R);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

inline void write_block(__local K_T *lk, __local int *li, int L, int base, int R, int final, long row, long P,
                        __global K_T *skey, __global int *sidx, __global O_T *vals, __global long *inds,
                        const meta_t *m, long vstride, long istride)
{
    long vo = meta_offset(m, 1, row), io = meta_offset(m, 2, row);
    for (int t = get_local_id(0); t < L; t += get_local_size(0)) {
        if (final) {
            if (base + t < R) {
                O_STORE(vals, vo + (base + t) * vstride, lk[t]);
                inds[io + (base + t) * istride] = li[t];
            }
        } else {
            skey[row * P + base + t] = lk[t];
            sidx[row * P + base + t] = li[t];
        }
    }
}

__kernel void sort_local(__global const A_T *a, meta_t m, long astride, int R, int P, int L,
                         __global K_T *skey, __global int *sidx, __global O_T *vals, __global long *inds,
                         long vstride, long istride, __local K_T *lk, __local int *li)
{
    int nb = P / L, base = (int)(get_group_id(0) % nb) * L;
    long row = get_group_id(0) / nb, ao = meta_offset(&m, 0, row);
    for (int t = get_local_id(0); t < L; t += get_local_size(0)) {
        int pos = base + t;
        li[t] = pos;
        lk[t] = pos < R ? A_LOAD(a, ao + pos * astride) : (K_T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 2; k <= L; k <<= 1) local_steps(lk, li, L, base, k, k >> 1, R);
    write_block(lk, li, L, base, R, L == P, row, P, skey, sidx, vals, inds, &m, vstride, istride);
}

__kernel void sort_global(__global K_T *skey, __global int *sidx, long rows, int P, int k, int j, int R)
{
    long npairs = P / 2;
    GRID_LOOP(t, rows * npairs) {
        long row = t / npairs;
        int q = (int)(t % npairs), i = 2 * j * (q / j) + (q % j);
        long p = row * P + i, r = p + j;
        K_T kp = skey[p], kr = skey[r];
        int ip = sidx[p], ir = sidx[r];
        if ((i & k) == 0 ? before(kr, ir, kp, ip, R) : before(kp, ip, kr, ir, R)) {
            skey[p] = kr; skey[r] = kp;
            sidx[p] = ir; sidx[r] = ip;
        }
    }
}

__kernel void sort_merge(meta_t m, int R, int P, int L, int k, __global K_T *skey, __global int *sidx,
                         __global O_T *vals, __global long *inds, long vstride, long istride,
                         __local K_T *lk, __local int *li)
{
    int nb = P / L, base = (int)(get_group_id(0) % nb) * L;
    long row = get_group_id(0) / nb;
    for (int t = get_local_id(0); t < L; t += get_local_size(0)) {
        lk[t] = skey[row * P + base + t];
        li[t] = sidx[row * P + base + t];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    local_steps(lk, li, L, base, k, L >> 1, R);
    write_block(lk, li, L, base, R, k == P, row, P, skey, sidx, vals, inds, &m, vstride, istride);
}
