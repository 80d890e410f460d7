/* index.cl — the index family's gather and scatter along one dim with an
 * index of any strides.
 * -DTA=<data dtype> (elements move as raw words W_T), -DTI=<4 int32 | 5
 * int64>; -DACC: scatter adds instead of storing (atomics: atomic_add for
 * int32, atom_add for int64 with -DINT64_ATOMICS, compare-and-swap on the
 * 32-bit word for float32 and on the 64-bit word for float64). An index
 * outside [0, size) is never used to address memory: the element is
 * skipped (gather stores 0) and the first such index is recorded in `err`
 * (8 ints: flag, value lo/hi, size lo/hi, op, dim, base) for the host
 * (src/backend/cl/index.c) to report at its next blocking read. */
#ifdef INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
#define I_T CAT(T_, TI)
#define W_T CAT(RAW_, TA)


/* element offsets of operands 0..2 for linear index i, in one pass */
inline void offsets3(const meta_t *m, long i, long *o0, long *o1, long *o2)
{
    long a = m->offsets[0], b = m->offsets[1], c = m->offsets[2];
    for (int d = (int)m->ndim - 1; d >= 0; d--) {
        long s = m->sizes[d], k = i % s;
        i /= s;
        a += k * m->strides[0][d];
        b += k * m->strides[1][d];
        c += k * m->strides[2][d];
    }
    *o0 = a; *o1 = b; *o2 = c;
}

/* gather_any: for i < m.n (the index's shape; operands 0 out, 1 idx, 2 a
 * with the dim's stride 0): out[o0] = a[o2 + (idx[o1] - base) * astride].
 * out must not alias a; one work item per element, grid-stride loop. */
__kernel void gather_any(__global W_T *out, __global const I_T *idx, __global const W_T *a, meta_t m,
                         long astride, long asize, long base, int dim, __global int *err)
{
    GRID_LOOP(i, m.n) {
        long o, x, y;
        offsets3(&m, i, &o, &x, &y);
        long v = (long)idx[x] - base;
        if (v < 0 || v >= asize) {
            index_report(err, v + base, asize, 0, dim, base);
            out[o] = 0;
            continue;
        }
        out[o] = a[y + v * astride];
    }
}

#ifdef ACC
/* *p += v for the word of dtype TA, atomically */
inline void add_to(__global W_T *p, W_T bits)
{
#if TA == 0
    volatile __global uint *q = (volatile __global uint *)p;
    uint old = *q, seen;
    do {
        seen = old;
        old = atomic_cmpxchg(q, seen, as_uint(as_float(seen) + as_float(bits)));
    } while (old != seen);
#elif TA == 3
    volatile __global ulong *q = (volatile __global ulong *)p;
    ulong old = *q, seen;
    do {
        seen = old;
        old = atom_cmpxchg(q, seen, as_ulong(as_double(seen) + as_double(bits)));
    } while (old != seen);
#elif TA == 4
    atomic_add((volatile __global int *)p, (int)bits);
#elif TA == 5
    atom_add((volatile __global long *)p, (long)bits);
#endif
}
#endif

/* scatter_any: for i < m.n (the index's shape; operands 0 idx, 1 src, 2 out
 * with the dim's stride 0): out[o2 + (idx[o0] - base) * ostride] = src[o1]
 * (ACC: +=). out must not alias src or idx; duplicate indices without ACC
 * leave one of the values, which one is unspecified. */
__kernel void scatter_any(__global W_T *out, __global const I_T *idx, __global const W_T *src, meta_t m,
                          long ostride, long osize, long base, int dim, int op, __global int *err)
{
    GRID_LOOP(i, m.n) {
        long x, s, o;
        offsets3(&m, i, &x, &s, &o);
        long v = (long)idx[x] - base;
        if (v < 0 || v >= osize) {
            index_report(err, v + base, osize, op, dim, base);
            continue;
        }
#ifdef ACC
        add_to(out + o + v * ostride, src[s]);
#else
        out[o + v * ostride] = src[s];
#endif
    }
}
