/* autocast.c — mixed precision by op (netcl.amp's autocast): while a
 * thread's innermost autocast region is enabled, the public entry points
 * of the products (matmul, gemm, addmm, linear, convolutions) read their
 * float32 tensor arguments cast to the region's 16-bit dtype (the GEMM
 * kernels accumulate in float32), and the ops that need range or precision
 * (softmax, reductions that sum, exp and log and their kin, pow, norms,
 * losses) read 16-bit arguments cast to float32; every other op runs in
 * its arguments' promoted dtype. The casts are recorded, so gradients flow
 * back to float32 parameters in float32. Regions nest per thread; an entry
 * point calls itself again with the cast arguments, which then pass. */
#include "autograd/expr.h"

#define NC_AUTOCAST_DEPTH 64

typedef struct { int enabled; netcl_dtype dtype; } region;

static _Thread_local region stack[NC_AUTOCAST_DEPTH];
static _Thread_local int depth;

netcl_status netcl_autocast_begin(int enabled, netcl_dtype dtype)
{
    if (dtype != NETCL_DTYPE_FLOAT16 && dtype != NETCL_DTYPE_BFLOAT16)
        return nc_fail(NETCL_ERR_ARGUMENT, "autocast: the dtype must be float16 or bfloat16, got %s", netcl_dtype_name(dtype));
    if (depth == NC_AUTOCAST_DEPTH)
        return nc_fail(NETCL_ERR_ARGUMENT, "autocast: more than %d nested regions", NC_AUTOCAST_DEPTH);
    stack[depth++] = (region){enabled != 0, dtype};
    return NETCL_OK;
}

netcl_status netcl_autocast_end(void)
{
    if (depth == 0) return nc_fail(NETCL_ERR_ARGUMENT, "autocast_end: no autocast region is open on this thread");
    depth--;
    return NETCL_OK;
}

int netcl_autocast_depth(void) { return depth; }
int netcl_autocast_enabled(void) { return depth > 0 && stack[depth - 1].enabled; }
netcl_dtype netcl_autocast_dtype(void) { return depth > 0 ? stack[depth - 1].dtype : NETCL_DTYPE_FLOAT16; }

int nc_autocast_float32_op(netcl_op op)
{
    switch (op) {
    case NETCL_OP_EXP: case NETCL_OP_EXPM1: case NETCL_OP_LOG: case NETCL_OP_LOG1P: case NETCL_OP_LOG2:
    case NETCL_OP_RECIPROCAL: case NETCL_OP_RSQRT: case NETCL_OP_TAN: case NETCL_OP_SOFTPLUS:
        return 1;
    default: return 0;
    }
}

static int is_half(netcl_dtype dt) { return dt == NETCL_DTYPE_FLOAT16 || dt == NETCL_DTYPE_BFLOAT16; }

/* the dtype policy pol wants t read in, or t's own */
static netcl_dtype wanted(nc_autocast_policy pol, const netcl_tensor *t)
{
    if (pol == NC_AUTOCAST_LOWER && t->dtype == NETCL_DTYPE_FLOAT32) return stack[depth - 1].dtype;
    if (pol == NC_AUTOCAST_FLOAT32 && is_half(t->dtype)) return NETCL_DTYPE_FLOAT32;
    return t->dtype;
}

int nc_autocast_args(nc_autocast_policy pol, int n, netcl_tensor **t, netcl_status *st)
{
    *st = NETCL_OK;
    if (!netcl_autocast_enabled()) return 0;
    int any = 0;
    for (int i = 0; i < n; i++) any |= t[i] && wanted(pol, t[i]) != t[i]->dtype;
    if (!any) return 0;
    for (int i = 0; i < n; i++) {
        netcl_tensor *c = NULL;
        if (t[i] && *st == NETCL_OK && wanted(pol, t[i]) != t[i]->dtype) *st = netcl_tensor_cast(&c, t[i], wanted(pol, t[i]));
        else if (t[i]) netcl_tensor_retain(c = t[i]);
        t[i] = c;
    }
    return 1;
}

void nc_autocast_release(int n, netcl_tensor **t)
{
    for (int i = 0; i < n; i++)
        if (t[i]) netcl_tensor_release(t[i]);
}
