/* finite.c — the finiteness tests and nan_to_num, composites over the
 * comparisons, clamp and where (AMP's overflow checks use them): isnan is
 * a != a, isinf |a| == inf, isfinite |a| < inf (false for NaN); integer and
 * bool tensors are all finite. nan_to_num is differentiable where a is
 * finite (clamp and where carry the gradient). */
#include "autograd/expr.h"
#include <float.h>
#include <math.h>

/* the largest finite value of a float dtype */
static double largest(netcl_dtype dt)
{
    switch (dt) {
    case NETCL_DTYPE_FLOAT16: return 65504.0;
    case NETCL_DTYPE_BFLOAT16: return 3.3895313892515355e38;
    case NETCL_DTYPE_FLOAT64: return DBL_MAX;
    default: return FLT_MAX;
    }
}

/* the answer for an integer or bool tensor: every element is finite */
static netcl_tensor *constant(nc_x *x, netcl_tensor *a, int v)
{
    return x_full(x, a, NETCL_DTYPE_BOOL, a->ndim, a->sizes, v);
}

netcl_status netcl_isnan(netcl_tensor **out, netcl_tensor *a)
{
    nc_x x = NC_X("isnan");
    return nc_x_return(&x, out, nc_dtype_is_float(a->dtype) ? x_bin(&x, NETCL_OP_NE, a, a) : constant(&x, a, 0));
}

netcl_status netcl_isinf(netcl_tensor **out, netcl_tensor *a)
{
    nc_x x = NC_X("isinf");
    if (!nc_dtype_is_float(a->dtype)) return nc_x_return(&x, out, constant(&x, a, 0));
    return nc_x_return(&x, out, x_sc(&x, NETCL_OP_EQ, x_un(&x, NETCL_OP_ABS, a), INFINITY));
}

netcl_status netcl_isfinite(netcl_tensor **out, netcl_tensor *a)
{
    nc_x x = NC_X("isfinite");
    if (!nc_dtype_is_float(a->dtype)) return nc_x_return(&x, out, constant(&x, a, 1));
    return nc_x_return(&x, out, x_sc(&x, NETCL_OP_LT, x_un(&x, NETCL_OP_ABS, a), INFINITY));
}

netcl_status netcl_nan_to_num(netcl_tensor **out, netcl_tensor *a, double nan, double posinf, double neginf)
{
    nc_x x = NC_X("nan_to_num");
    if (!nc_dtype_is_float(a->dtype)) return nc_x_return(&x, out, x_sc(&x, NETCL_OP_ADD, a, 0));   /* a copy */
    double hi = posinf == INFINITY ? largest(a->dtype) : posinf;
    double lo = neginf == -INFINITY ? -largest(a->dtype) : neginf;
    /* infinities go to the bounds (NaN passes clamp), then NaN to its value */
    netcl_tensor *r = XC(&x, netcl_unary, NETCL_OP_CLAMP, a, -largest(a->dtype), largest(a->dtype));
    if (hi != largest(a->dtype)) r = XC(&x, netcl_where, x_sc(&x, NETCL_OP_EQ, a, INFINITY), NULL, r, hi, 0);
    if (lo != -largest(a->dtype)) r = XC(&x, netcl_where, x_sc(&x, NETCL_OP_EQ, a, -INFINITY), NULL, r, lo, 0);
    r = XC(&x, netcl_where, x_bin(&x, NETCL_OP_NE, a, a), NULL, r, nan, 0);
    return nc_x_return(&x, out, r);
}
