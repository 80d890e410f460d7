/* elementwise.cl — unary and binary ops, one kernel per op stamped by the
 * macros below, each in a strided form (meta_t: out is operand 0, inputs 1
 * and 2) and a contiguous form. Compute type A_CT; comparisons store 0/1
 * (TO = bool). Unary kernels take parameters p1, p2 (leaky_relu slope, elu
 * alpha, clamp bounds). Binary "_s" kernels take a scalar s (s op a when rev). */
#if A_FLOAT
#define OP_NEG(x) (-(x))
#define OP_ABS(x) fabs(x)
#define OP_EXP(x) exp(x)
#define OP_LOG(x) log(x)
#define OP_SQRT(x) sqrt(x)
#define OP_RELU(x) ((x) > 0 ? (x) : (A_CT)0)
#define OP_SIGMOID(x) ((x) >= 0 ? (A_CT)1 / ((A_CT)1 + exp(-(x))) : exp(x) / ((A_CT)1 + exp(x)))
#define OP_TANH(x) tanh(x)
#define OP_SIGN(x) ((A_CT)(((x) > 0) - ((x) < 0)))
#define OP_RECIPROCAL(x) ((A_CT)1 / (x))
#define OP_SQUARE(x) ((x) * (x))
#define OP_RSQRT(x) ((A_CT)1 / sqrt(x))
#define OP_EXPM1(x) expm1(x)
#define OP_LOG1P(x) log1p(x)
#define OP_LOG2(x) log2(x)
#define OP_SIN(x) sin(x)
#define OP_COS(x) cos(x)
#define OP_TAN(x) tan(x)
#define OP_FLOOR(x) floor(x)
#define OP_CEIL(x) ceil(x)
#define OP_ROUND(x) rint(x)
#define OP_TRUNC(x) trunc(x)
#define OP_SILU(x) ((x) < 0 ? (x) * exp(x) / ((A_CT)1 + exp(x)) : (x) / ((A_CT)1 + exp(-(x))))
#define OP_GELU(x) ((A_CT)0.5 * (x) * ((A_CT)1 + erf((x) * (A_CT)0.70710678118654752440)))
#define OP_GELU_TANH(x) \
    ((A_CT)0.5 * (x) * ((A_CT)1 + tanh((A_CT)0.79788456080286535588 * ((x) + (A_CT)0.044715 * (x) * (x) * (x)))))
#define OP_SOFTPLUS(x) (((x) > 0 ? (x) : (A_CT)0) + log1p(exp(-fabs(x))))
#define OP_RELU6(x) ((x) > 0 ? ((x) < 6 ? (x) : (A_CT)6) : (A_CT)0)
#define OP_LEAKY_RELU(x) ((x) > 0 ? (x) : p1 * (x))
#define OP_ELU(x) ((x) > 0 ? (x) : p1 * expm1(x))
#define OP_ERF(x) erf(x)
#define OP_DIV(x, y) ((x) / (y))
#define OP_POW(x, y) pow((x), (y))
#define OP_MAXIMUM(x, y) ((isnan(x) || isnan(y)) ? (x) + (y) : fmax((x), (y)))
#define OP_MINIMUM(x, y) ((isnan(x) || isnan(y)) ? (x) + (y) : fmin((x), (y)))
#else
#define OP_NEG(x) ((long)(0 - (ulong)(x)))
#define OP_ABS(x) ((x) < 0 ? (long)(0 - (ulong)(x)) : (x))
#define OP_RELU(x) ((x) > 0 ? (x) : 0)
#define OP_SIGN(x) ((long)(((x) > 0) - ((x) < 0)))
#define OP_SQUARE(x) ((long)((ulong)(x) * (ulong)(x)))
#define OP_DIV(x, y) ((y) == 0 ? 0 : ((y) == -1 ? (long)(0 - (ulong)(x)) : (x) / (y)))
#define OP_MAXIMUM(x, y) ((x) > (y) ? (x) : (y))
#define OP_MINIMUM(x, y) ((x) < (y) ? (x) : (y))
#endif
#define OP_CLAMP(x) ((x) < p1 ? p1 : ((x) > p2 ? p2 : (x)))
#define OP_ADD(x, y) ((x) + (y))
#define OP_SUB(x, y) ((x) - (y))
#define OP_MUL(x, y) ((x) * (y))
#define OP_EQ(x, y) ((x) == (y))
#define OP_NE(x, y) ((x) != (y))
#define OP_LT(x, y) ((x) < (y))
#define OP_LE(x, y) ((x) <= (y))
#define OP_GT(x, y) ((x) > (y))
#define OP_GE(x, y) ((x) >= (y))

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
        GRID_LOOP(i, n) { A_CT x = A_LOAD(a, ao + i); O_STORE(out, oo + i, F(x)); }            \
    }

#define BINARY(name, F)                                                                         \
    __kernel void binary_##name(__global O_T *out, __global const A_T *a, __global const A_T *b, meta_t m) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i)), y = A_LOAD(b, meta_offset(&m, 2, i));    \
            O_STORE(out, meta_offset(&m, 0, i), F(x, y));                                       \
        }                                                                                       \
    }                                                                                           \
    __kernel void binary_##name##_c(__global O_T *out, long oo, __global const A_T *a, long ao, \
                                    __global const A_T *b, long bo, long n)                     \
    {                                                                                           \
        GRID_LOOP(i, n) {                                                                       \
            A_CT x = A_LOAD(a, ao + i), y = A_LOAD(b, bo + i);                                  \
            O_STORE(out, oo + i, F(x, y));                                                      \
        }                                                                                       \
    }                                                                                           \
    __kernel void binary_##name##_s(__global O_T *out, __global const A_T *a, A_CT s, int rev, meta_t m) \
    {                                                                                           \
        GRID_LOOP(i, m.n) {                                                                     \
            A_CT x = A_LOAD(a, meta_offset(&m, 1, i));                                          \
            O_STORE(out, meta_offset(&m, 0, i), rev ? F(s, x) : F(x, s));                       \
        }                                                                                       \
    }                                                                                           \
    __kernel void binary_##name##_sc(__global O_T *out, long oo, __global const A_T *a, long ao, A_CT s, \
                                     int rev, long n)                                           \
    {                                                                                           \
        GRID_LOOP(i, n) {                                                                       \
            A_CT x = A_LOAD(a, ao + i);                                                         \
            O_STORE(out, oo + i, rev ? F(s, x) : F(x, s));                                      \
        }                                                                                       \
    }

#ifdef COMPARE
BINARY(eq, OP_EQ)
BINARY(ne, OP_NE)
BINARY(lt, OP_LT)
BINARY(le, OP_LE)
BINARY(gt, OP_GT)
BINARY(ge, OP_GE)
#else
UNARY(neg, OP_NEG)
UNARY(abs, OP_ABS)
UNARY(relu, OP_RELU)
UNARY(sign, OP_SIGN)
UNARY(square, OP_SQUARE)
UNARY(clamp, OP_CLAMP)
BINARY(add, OP_ADD)
BINARY(sub, OP_SUB)
BINARY(mul, OP_MUL)
BINARY(div, OP_DIV)
BINARY(maximum, OP_MAXIMUM)
BINARY(minimum, OP_MINIMUM)
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
BINARY(pow, OP_POW)
#endif
#endif
