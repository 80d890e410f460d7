/* ops.cl — the elementwise family's scalar op definitions (compute type
 * A_CT), used by unary.cl and binary.cl: the host prepends it (after
 * common.cl) to every program. Unary ops may read parameters p1, p2. */
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
#define OP_SOFTPLUS(x) \
    ((x) * p1 > p2 ? (x) : (((x) * p1 > 0 ? (x) * p1 : (A_CT)0) + log1p(exp(-fabs((x) * p1)))) / p1)
#define OP_RELU6(x) ((x) > 0 ? ((x) < 6 ? (x) : (A_CT)6) : (A_CT)0)
#define OP_LEAKY_RELU(x) ((x) > 0 ? (x) : p1 * (x))
#define OP_ELU(x) ((x) > 0 ? (x) : p1 * expm1(x))
#define OP_ERF(x) erf(x)
#define OP_DIV(x, y) ((x) / (y))
#define OP_POW(x, y) pow((x), (y))
#define OP_MAXIMUM(x, y) ((isnan(x) || isnan(y)) ? (x) + (y) : fmax((x), (y)))
#define OP_MINIMUM(x, y) ((isnan(x) || isnan(y)) ? (x) + (y) : fmin((x), (y)))
#define OP_FMOD(x, y) fmod((x), (y))
#define OP_ATAN2(x, y) atan2((x), (y))
#else
#define OP_NEG(x) ((long)(0 - (ulong)(x)))
#define OP_ABS(x) ((x) < 0 ? (long)(0 - (ulong)(x)) : (x))
#define OP_RELU(x) ((x) > 0 ? (x) : 0)
#define OP_SIGN(x) ((long)(((x) > 0) - ((x) < 0)))
#define OP_SQUARE(x) ((long)((ulong)(x) * (ulong)(x)))
#define OP_DIV(x, y) ((y) == 0 ? 0 : ((y) == -1 ? (long)(0 - (ulong)(x)) : (x) / (y)))
#define OP_MAXIMUM(x, y) ((x) > (y) ? (x) : (y))
#define OP_MINIMUM(x, y) ((x) < (y) ? (x) : (y))
#define OP_FMOD(x, y) (((y) == 0 || (y) == -1) ? 0 : (x) % (y))
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
#define OP_LOGICAL_AND(x, y) ((x) != 0 && (y) != 0)
#define OP_LOGICAL_OR(x, y) ((x) != 0 || (y) != 0)
#define OP_LOGICAL_XOR(x, y) (((x) != 0) != ((y) != 0))

#if defined(TA) && A_FLOAT
/* A fused activation by netcl_op code (the GEMM and convolution epilogues;
 * the same formulas as the elementwise ops, so fused and unfused results
 * agree); any other code means none. */
inline A_CT activate(A_CT x, int act, A_CT p1)
{
    switch (act) {
    case 5: return OP_RELU(x);
    case 6: return OP_SIGMOID(x);
    case 7: return OP_TANH(x);
    case 22: return OP_SILU(x);
    case 23: return OP_GELU(x);
    case 24: return OP_GELU_TANH(x);
    case 26: return OP_RELU6(x);
    case 27: return OP_LEAKY_RELU(x);
    default: return x;
    }
}
#endif
