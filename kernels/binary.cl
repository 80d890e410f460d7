/* binary.cl — the elementwise family's binary kernels: one kernel per
 * binary op (OP_<NAME>, generated from src/base/elementwise_ops.h) in four forms:
 * strided (meta_t: out 0, a 1, b 2), contiguous "_c", and with a scalar s
 * ("_s" strided, "_sc" contiguous; s op a when rev). The contiguous forms
 * take 4 elements per work item (ceil(n / 4) items; the first few also take
 * the tail). With -DCOMPARE only the
 * comparisons, storing 0/1 (TO = bool). */
#define BINARY(kname, F)                                                                         \
    __kernel void kname(__global O_T *out, __global const A_T *a, __global const A_T *b, meta_t m) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i)), y = A_LOAD(b, meta_offset(&m, 2, i));    \
            O_STORE(out, meta_offset(&m, 0, i), F(x, y));                                       \
        }                                                                                       \
    }                                                                                           \
    __kernel void kname##_c(__global O_T *out, long oo, __global const A_T *a, long ao, \
                                    __global const A_T *b, long bo, long n)                     \
    {                                                                                           \
        GRID_LOOP(i, n >> 2) { VEC4_APPLY2(a + ao, b + bo, out + oo, i, F); }                   \
        long t = (n & ~3L) + get_global_id(0);                                                  \
        if (t < n) { A_CT x = A_LOAD(a, ao + t), y = A_LOAD(b, bo + t); O_STORE(out, oo + t, F(x, y)); } \
    }                                                                                           \
    __kernel void kname##_s(__global O_T *out, __global const A_T *a, A_CT s, int rev, meta_t m) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i));                                          \
            O_STORE(out, meta_offset(&m, 0, i), rev ? F(s, x) : F(x, s));                       \
        }                                                                                       \
    }                                                                                           \
    __kernel void kname##_sc(__global O_T *out, long oo, __global const A_T *a, long ao, A_CT s, \
                                     int rev, long n)                                           \
    {                                                                                           \
        if (rev) { GRID_LOOP(i, n >> 2) { VEC4_APPLY_SR(a + ao, out + oo, i, F, s); } }        \
        else { GRID_LOOP(i, n >> 2) { VEC4_APPLY_SL(a + ao, out + oo, i, F, s); } }            \
        long t = (n & ~3L) + get_global_id(0);                                                  \
        if (t < n) { A_CT x = A_LOAD(a, ao + t); O_STORE(out, oo + t, rev ? F(s, x) : F(x, s)); } \
    }

/* one kernel set per op the compute type has (the generated lists) */
#define BINARY_OF(kname, NAME) BINARY(kname, OP_##NAME)
#define ARITH_OF(kname, ka, kb, NAME) BINARY(kname, OP_##NAME)
#ifdef COMPARE
NC_COMPARE_KERNELS(BINARY_OF)
#else
NC_BINARY_KERNELS(ARITH_OF)
#endif

/* binary_grad_a_<op> / binary_grad_b_<op>: out = the gradient of operand a
 * (b) from g and the operands (meta_t: 0 out, 1 g, 2 a, 3 b; an absent
 * operand aliases out, is not read, and its scalar sa / sb stands in), by
 * the op's GRAD_A / GRAD_B formula (base/elementwise_ops.h); one float
 * dtype */
#if !defined(COMPARE) && A_FLOAT
#define BINARY_GRAD(kname, G)                                                                   \
    __kernel void kname(__global O_T *out, __global const A_T *g, __global const A_T *a,        \
                        __global const A_T *b, meta_t m, A_CT sa, A_CT sb, int has_a, int has_b) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT gv = A_LOAD(g, meta_offset(&m, 1, i));                                         \
            A_CT av = has_a ? A_LOAD(a, meta_offset(&m, 2, i)) : sa;                            \
            A_CT bv = has_b ? A_LOAD(b, meta_offset(&m, 3, i)) : sb;                            \
            O_STORE(out, meta_offset(&m, 0, i), G(gv, av, bv));                                 \
        }                                                                                       \
    }
#define BINARY_GRADS_OF(kname, ka, kb, NAME) BINARY_GRAD(ka, GRAD_A_##NAME) BINARY_GRAD(kb, GRAD_B_##NAME)
NC_BINARY_KERNELS(BINARY_GRADS_OF)
#endif
