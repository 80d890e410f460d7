/* unary.cl — the elementwise family's unary kernels: one kernel per unary
 * op (OP_<NAME>, generated from src/base/elementwise_ops.h), in a strided form
 * (meta_t: out is operand 0, input operand 1) and a contiguous "_c" form
 * that takes 4 elements per work item (16-byte loads for float32; launch
 * ceil(n / 4) items: the first few also take the n % 4 tail).
 * Parameters p1, p2: leaky_relu slope, elu alpha, clamp bounds. */
#define UNARY(kname, F)                                                                         \
    __kernel void kname(__global O_T *out, __global const A_T *a, meta_t m, A_CT p1, A_CT p2)   \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i));                                          \
            O_STORE(out, meta_offset(&m, 0, i), F(x));                                          \
        }                                                                                       \
    }                                                                                           \
    __kernel void kname##_c(__global O_T *out, long oo, __global const A_T *a, long ao, long n, A_CT p1, \
                                   A_CT p2)                                                     \
    {                                                                                           \
        GRID_LOOP(i, n >> 2) {                                                                  \
            VEC4_APPLY1(a + ao, out + oo, i, F);                                                \
        }                                                                                       \
        long t = (n & ~3L) + get_global_id(0);                                                  \
        if (t < n) { A_CT x = A_LOAD(a, ao + t); O_STORE(out, oo + t, F(x)); }                 \
    }

/* one kernel pair per op the compute type has (the generated list) */
#define UNARY_OF(kname, gname, NAME) UNARY(kname, OP_##NAME)
NC_UNARY_KERNELS(UNARY_OF)

/* unary_grad_<op>: gin = the input's gradient from g (the output's), the
 * input x and the output y (meta_t operands 0 gin, 1 g, 2 x, 3 y; one
 * float dtype), by the op's GRAD formula (base/elementwise_ops.h); the "_c"
 * form for contiguous operands takes 4 elements per item, as above */
#if A_FLOAT
#define UNARY_GRAD(kname, gname, NAME)                                                          \
    __kernel void gname(__global O_T *gin, __global const A_T *g, __global const A_T *x, \
                                    __global const A_T *y, meta_t m, A_CT p1, A_CT p2)          \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT gv = A_LOAD(g, meta_offset(&m, 1, i)), xv = A_LOAD(x, meta_offset(&m, 2, i));  \
            A_CT yv = A_LOAD(y, meta_offset(&m, 3, i));                                         \
            O_STORE(gin, meta_offset(&m, 0, i), GRAD_##NAME(gv, xv, yv));                      \
        }                                                                                       \
    }                                                                                           \
    __kernel void gname##_c(__global O_T *gin, long oo, __global const A_T *g, long go,         \
                            __global const A_T *x, long xo, __global const A_T *y, long yo,     \
                            long n, A_CT p1, A_CT p2)                                           \
    {                                                                                           \
        GRID_LOOP(i, n >> 2) {                                                                  \
            VEC4_APPLY3(g + go, x + xo, y + yo, gin + oo, i, GRAD_##NAME);                      \
        }                                                                                       \
        long t = (n & ~3L) + get_global_id(0);                                                  \
        if (t < n) {                                                                            \
            A_CT gv = A_LOAD(g, go + t), xv = A_LOAD(x, xo + t), yv = A_LOAD(y, yo + t);        \
            O_STORE(gin, oo + t, GRAD_##NAME(gv, xv, yv));                                      \
        }                                                                                       \
    }
NC_UNARY_KERNELS(UNARY_GRAD)
#endif
