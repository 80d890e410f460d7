/* op.c — properties of the netcl_op codes every layer shares: their names
 * (as Lua and messages spell them) and which keep integer dtypes. */
#include "base/base.h"

static const char *const op_names[NETCL_OP_REDUCE_END] = {
    [NETCL_OP_NEG] = "neg", [NETCL_OP_ABS] = "abs", [NETCL_OP_EXP] = "exp", [NETCL_OP_LOG] = "log",
    [NETCL_OP_SQRT] = "sqrt", [NETCL_OP_RELU] = "relu", [NETCL_OP_SIGMOID] = "sigmoid", [NETCL_OP_TANH] = "tanh",
    [NETCL_OP_SIGN] = "sign", [NETCL_OP_RECIPROCAL] = "reciprocal", [NETCL_OP_SQUARE] = "square",
    [NETCL_OP_RSQRT] = "rsqrt", [NETCL_OP_EXPM1] = "expm1", [NETCL_OP_LOG1P] = "log1p", [NETCL_OP_LOG2] = "log2",
    [NETCL_OP_SIN] = "sin", [NETCL_OP_COS] = "cos", [NETCL_OP_TAN] = "tan", [NETCL_OP_FLOOR] = "floor",
    [NETCL_OP_CEIL] = "ceil", [NETCL_OP_ROUND] = "round", [NETCL_OP_TRUNC] = "trunc", [NETCL_OP_SILU] = "silu",
    [NETCL_OP_GELU] = "gelu", [NETCL_OP_GELU_TANH] = "gelu_tanh", [NETCL_OP_SOFTPLUS] = "softplus",
    [NETCL_OP_RELU6] = "relu6", [NETCL_OP_LEAKY_RELU] = "leaky_relu", [NETCL_OP_ELU] = "elu",
    [NETCL_OP_CLAMP] = "clamp", [NETCL_OP_ERF] = "erf",
    [NETCL_OP_ADD] = "add", [NETCL_OP_SUB] = "sub", [NETCL_OP_MUL] = "mul", [NETCL_OP_DIV] = "div",
    [NETCL_OP_POW] = "pow", [NETCL_OP_MAXIMUM] = "maximum", [NETCL_OP_MINIMUM] = "minimum",
    [NETCL_OP_EQ] = "eq", [NETCL_OP_NE] = "ne", [NETCL_OP_LT] = "lt", [NETCL_OP_LE] = "le",
    [NETCL_OP_GT] = "gt", [NETCL_OP_GE] = "ge", [NETCL_OP_FMOD] = "fmod", [NETCL_OP_ATAN2] = "atan2",
    [NETCL_OP_LOGICAL_AND] = "logical_and", [NETCL_OP_LOGICAL_OR] = "logical_or", [NETCL_OP_LOGICAL_XOR] = "logical_xor",
    [NETCL_OP_SUM] = "sum", [NETCL_OP_MEAN] = "mean", [NETCL_OP_MAX] = "max", [NETCL_OP_MIN] = "min",
    [NETCL_OP_ARGMAX] = "argmax", [NETCL_OP_ARGMIN] = "argmin", [NETCL_OP_PROD] = "prod",
};

const char *netcl_op_name(netcl_op op)
{
    return (unsigned)op < NETCL_OP_REDUCE_END && op_names[op] ? op_names[op] : "invalid-op";
}

/* Unary ops that integers keep their dtype for; every other unary op (and
 * true division, pow) computes integer inputs in float32. */
bool nc_op_int_ok(netcl_op op)
{
    return op == NETCL_OP_NEG || op == NETCL_OP_ABS || op == NETCL_OP_RELU || op == NETCL_OP_SIGN ||
           op == NETCL_OP_SQUARE || op == NETCL_OP_CLAMP || (nc_op_is_binary(op) && op != NETCL_OP_DIV && op != NETCL_OP_POW && op != NETCL_OP_ATAN2);
}

