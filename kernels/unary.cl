/* unary.cl — the elementwise family's unary kernels: one kernel per unary
 * op (macros in ops.cl), in a strided form
 * (meta_t: out is operand 0, input operand 1) and a contiguous "_c" form
 * that takes 4 elements per work item (16-byte loads for float32; launch
 * ceil(n / 4) items: the first few also take the n % 4 tail).
 * Parameters p1, p2: leaky_relu slope, elu alpha, clamp bounds. */
#define UNARY(name, F)                                                                          \
    __kernel void unary_##name(__global O_T *out, __global const A_T *a, meta_t m, A_CT p1, A_CT p2) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i));                                          \
            O_STORE(out, meta_offset(&m, 0, i), F(x));                                          \
        }                                                                                       \
    }                                                                                           \
    __kernel void unary_##name##_c(__global O_T *out, long oo, __global const A_T *a, long ao, long n, A_CT p1, \
                                   A_CT p2)                                                     \
    {                                                                                           \
        GRID_LOOP(i, n >> 2) {                                                                  \
            VEC4_APPLY1(a + ao, out + oo, i, F);                                                \
        }                                                                                       \
        long t = (n & ~3L) + get_global_id(0);                                                  \
        if (t < n) { A_CT x = A_LOAD(a, ao + t); O_STORE(out, oo + t, F(x)); }                 \
    }

UNARY(neg, OP_NEG)
UNARY(abs, OP_ABS)
UNARY(relu, OP_RELU)
UNARY(sign, OP_SIGN)
UNARY(square, OP_SQUARE)
UNARY(clamp, OP_CLAMP)
#if A_FLOAT
UNARY(exp, OP_EXP)
UNARY(log, OP_LOG)
UNARY(sqrt, OP_SQRT)
UNARY(sigmoid, OP_SIGMOID)
UNARY(tanh, OP_TANH)
UNARY(reciprocal, OP_RECIPROCAL)
UNARY(rsqrt, OP_RSQRT)
UNARY(expm1, OP_EXPM1)
UNARY(log1p, OP_LOG1P)
UNARY(log2, OP_LOG2)
UNARY(sin, OP_SIN)
UNARY(cos, OP_COS)
UNARY(tan, OP_TAN)
UNARY(floor, OP_FLOOR)
UNARY(ceil, OP_CEIL)
UNARY(round, OP_ROUND)
UNARY(trunc, OP_TRUNC)
UNARY(silu, OP_SILU)
UNARY(gelu, OP_GELU)
UNARY(gelu_tanh, OP_GELU_TANH)
UNARY(softplus, OP_SOFTPLUS)
UNARY(relu6, OP_RELU6)
UNARY(leaky_relu, OP_LEAKY_RELU)
UNARY(elu, OP_ELU)
UNARY(erf, OP_ERF)
#endif
