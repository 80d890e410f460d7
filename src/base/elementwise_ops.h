/* elementwise_ops.h — every elementwise op defined once. Each row gives the
 * op's value as an expression over its operands and, for the
 * differentiable ones, the gradient it passes back. The cpu backend
 * expands the rows into C (switch cases in its block kernels), the OpenCL
 * backend turns the same rows, stringified, into the OP_* / GRAD_* macros
 * every program is built with (src/backend/cl/program.c), and the
 * fused-kernel generator composes them; so the eager kernels, their
 * backward and fused chains compute the same formulas.
 *
 * The expression language is the common subset of C and OpenCL C:
 *   a, b      the operands (b: binary ops), in the compute type CT
 *   y         the op's output (gradients only), g the gradient of y
 *   p1, p2    the unary op's parameters (see netcl_op in netcl.h)
 *   K(c)      the constant or expression c converted to CT
 *   I64, U64  the signed and unsigned 64-bit integer types (wrapping
 *             integer arithmetic goes through U64)
 * and the math functions both languages share (exp, log, fabs, erf, ...).
 *
 * NC_UNARY_OPS(X): X(NAME, name, FLOAT, INT, GRAD)
 *   FLOAT  the value for float compute types (float, double)
 *   INT    the value on I64 operands, or NC_FLOAT_ONLY: integers compute
 *          this op in float32 (nc_op_int_ok)
 *   GRAD   the input's gradient given g, a, y, p1, p2 (piecewise ops take
 *          the branch that produced y: relu at 0 passes 0); autograd saves
 *          for backward only the tensors it names (a, y or both), so a
 *          formula that can be written over y alone (relu) keeps only the
 *          output alive
 * NC_BINARY_OPS(X): X(NAME, name, FLOAT, INT, GRAD_A, GRAD_B)   arithmetic;
 *   the result has the operands' dtype (integer DIV, POW and ATAN2 compute
 *   in float32); GRAD_A and GRAD_B are the operands' gradients given g, a
 *   and b (a tie of maximum/minimum splits g in half, as PyTorch)
 * NC_COMPARE_OPS(X): X(NAME, name, EXPR)        comparisons and logical ops, on
 *   any compute type, giving 0 or 1 (a bool result) */
#ifndef NETCL_ELEMENTWISE_OPS_H
#define NETCL_ELEMENTWISE_OPS_H

#define NC_UNARY_OPS(X)                                                                                   \
    X(NEG, neg, -a, (I64)(0 - (U64)a), -g)                                                                     \
    X(ABS, abs, fabs(a), a < 0 ? (I64)(0 - (U64)a) : a, g * K((a > 0) - (a < 0)))                              \
    X(EXP, exp, exp(a), NC_FLOAT_ONLY, g * y)                                                                  \
    X(LOG, log, log(a), NC_FLOAT_ONLY, g / a)                                                                  \
    X(SQRT, sqrt, sqrt(a), NC_FLOAT_ONLY, g / (K(2) * y))                                                       \
    X(RELU, relu, a > 0 ? a : K(0), a > 0 ? a : 0, y > 0 ? g : K(0))                                            \
    X(SIGMOID, sigmoid, a >= 0 ? K(1) / (K(1) + exp(-a)) : exp(a) / (K(1) + exp(a)), NC_FLOAT_ONLY,                \
      g * (y * (K(1) - y)))                                                                                \
    X(TANH, tanh, tanh(a), NC_FLOAT_ONLY, g * (K(1) - y * y))                                                   \
    X(SIGN, sign, K((a > 0) - (a < 0)), (I64)((a > 0) - (a < 0)), K(0))                                         \
    X(RECIPROCAL, reciprocal, K(1) / a, NC_FLOAT_ONLY, g * -(y * y))                                                  \
    X(SQUARE, square, a * a, (I64)((U64)a * (U64)a), g * (K(2) * a))                                              \
    X(RSQRT, rsqrt, K(1) / sqrt(a), NC_FLOAT_ONLY, g * (K(-0.5) * y * y * y))                                    \
    X(EXPM1, expm1, expm1(a), NC_FLOAT_ONLY, g * (y + K(1)))                                                     \
    X(LOG1P, log1p, log1p(a), NC_FLOAT_ONLY, g / (a + K(1)))                                                     \
    X(LOG2, log2, log2(a), NC_FLOAT_ONLY, g / (a * K(0.69314718055994530942)))                                  \
    X(SIN, sin, sin(a), NC_FLOAT_ONLY, g * cos(a))                                                             \
    X(COS, cos, cos(a), NC_FLOAT_ONLY, -g * sin(a))                                                            \
    X(TAN, tan, tan(a), NC_FLOAT_ONLY, g * (K(1) + y * y))                                                     \
    X(FLOOR, floor, floor(a), NC_FLOAT_ONLY, K(0))                                                               \
    X(CEIL, ceil, ceil(a), NC_FLOAT_ONLY, K(0))                                                                 \
    X(ROUND, round, rint(a), NC_FLOAT_ONLY, K(0))                                                                \
    X(TRUNC, trunc, trunc(a), NC_FLOAT_ONLY, K(0))                                                               \
    X(SILU, silu, a < 0 ? a * exp(a) / (K(1) + exp(a)) : a / (K(1) + exp(-a)), NC_FLOAT_ONLY,                   \
      g * (K(1) / (K(1) + exp(-a)) * (K(1) + a * (K(1) - K(1) / (K(1) + exp(-a))))))                      \
    X(GELU, gelu, K(0.5) * a * (K(1) + erf(a * K(0.70710678118654752440))), NC_FLOAT_ONLY,                      \
      g * (K(0.5) * (K(1) + erf(a * K(0.70710678118654752440))) +                                         \
           a * K(0.39894228040143267794) * exp(K(-0.5) * a * a)))                                         \
    X(GELU_TANH, gelu_tanh, K(0.5) * a * (K(1) + tanh(K(0.79788456080286535588) * (a + K(0.044715) * a * a * a))),   \
      NC_FLOAT_ONLY,                                                                                       \
      g * (K(0.5) * (K(1) + tanh(K(0.79788456080286535588) * (a + K(0.044715) * a * a * a))) +            \
           K(0.5) * a *                                                                                    \
               (K(1) - tanh(K(0.79788456080286535588) * (a + K(0.044715) * a * a * a)) *                  \
                           tanh(K(0.79788456080286535588) * (a + K(0.044715) * a * a * a))) *             \
               K(0.79788456080286535588) * (K(1) + K(0.134145) * a * a)))                              \
    X(SOFTPLUS, softplus, a * p1 > p2 ? a : ((a * p1 > 0 ? a * p1 : K(0)) + log1p(exp(-fabs(a * p1)))) / p1,        \
      NC_FLOAT_ONLY, a * p1 > p2 ? g : g / (K(1) + exp(-(a * p1))))                                       \
    X(RELU6, relu6, a > 0 ? (a < 6 ? a : K(6)) : K(0), NC_FLOAT_ONLY, a > 0 && a < 6 ? g : K(0))                 \
    X(LEAKY_RELU, leaky_relu, a > 0 ? a : p1 * a, NC_FLOAT_ONLY, a > 0 ? g : g * p1)                                  \
    X(ELU, elu, a > 0 ? a : p1 * expm1(a), NC_FLOAT_ONLY, a > 0 ? g : g * (y + p1))                            \
    /* max then min, as PyTorch: a lower bound above the upper gives the upper everywhere; NaN stays NaN */  \
    X(CLAMP, clamp, (a < p1 ? p1 : a) > p2 ? p2 : (a < p1 ? p1 : a),                                          \
      (a < p1 ? p1 : a) > p2 ? p2 : (a < p1 ? p1 : a), a >= p1 && a <= p2 ? g : K(0))                     \
    X(ERF, erf, erf(a), NC_FLOAT_ONLY, g * (K(1.12837916709551257390) * exp(-(a * a))))

/* NaN-propagating max/min: a + b is NaN when either is. */
#define NC_BINARY_OPS(X)                                                                                  \
    X(ADD, add, a + b, (I64)((U64)a + (U64)b), g, g)                                                      \
    X(SUB, sub, a - b, (I64)((U64)a - (U64)b), g, -g)                                                     \
    X(MUL, mul, a * b, (I64)((U64)a * (U64)b), g * b, g * a)                                              \
    X(DIV, div, a / b, b == 0 ? 0 : (b == -1 ? (I64)(0 - (U64)a) : a / b), g / b, -(g * a / (b * b)))     \
    X(POW, pow, pow(a, b), NC_FLOAT_ONLY, g * (b * pow(a, b - K(1))), g * (pow(a, b) * log(a)))           \
    X(MAXIMUM, maximum, a != a || b != b ? a + b : (a > b ? a : b), a > b ? a : b,                        \
      g * (a > b ? K(1) : (a == b ? K(0.5) : K(0))), g * (K(1) - (a > b ? K(1) : (a == b ? K(0.5) : K(0))))) \
    X(MINIMUM, minimum, a != a || b != b ? a + b : (a < b ? a : b), a < b ? a : b,                        \
      g * (a < b ? K(1) : (a == b ? K(0.5) : K(0))), g * (K(1) - (a < b ? K(1) : (a == b ? K(0.5) : K(0))))) \
    X(FMOD, fmod, fmod(a, b), (b == 0 || b == -1) ? 0 : a % b, g, g * -trunc(a / b))                      \
    X(ATAN2, atan2, atan2(a, b), NC_FLOAT_ONLY, g * b / (a * a + b * b), -(g * a / (a * a + b * b)))

#define NC_COMPARE_OPS(X)                                                                                 \
    X(EQ, eq, a == b)                                                                                         \
    X(NE, ne, a != b)                                                                                         \
    X(LT, lt, a < b)                                                                                          \
    X(LE, le, a <= b)                                                                                         \
    X(GT, gt, a > b)                                                                                          \
    X(GE, ge, a >= b)                                                                                         \
    X(LOGICAL_AND, logical_and, a != 0 && b != 0)                                                                      \
    X(LOGICAL_OR, logical_or, a != 0 || b != 0)                                                                       \
    X(LOGICAL_XOR, logical_xor, (a != 0) != (b != 0))

/* The integer column of an op integers compute in float32. */
#define NC_FLOAT_ONLY 0

#endif
