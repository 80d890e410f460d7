/* ops.cl — the fused activation of the GEMM and convolution epilogues,
 * prepended to every program after the elementwise ops' definitions
 * (generated from src/base/elementwise_ops.h, so fused and unfused results
 * agree). */
#if defined(TA) && A_FLOAT
/* A fused activation by netcl_op code (the GEMM and convolution epilogues;
 * the same formulas as the elementwise ops, so fused and unfused results
 * agree); any other code means none. */
inline A_CT activate(A_CT x, int act, A_CT p1)
{
    const A_CT p2 = 0;   /* the op macros read both parameters; no activation here uses p2 */
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
