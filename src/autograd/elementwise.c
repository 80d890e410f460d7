/* elementwise.c — elementwise ops built from others (autograd comes free):
 * lerp. */
#include "autograd/expr.h"

/* a + w (b - a); w a tensor (broadcast) or, with w NULL, the scalar ws */
netcl_status netcl_lerp(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *w, double ws)
{
    nc_x x = NC_X("lerp");
    netcl_tensor *d = x_sub(&x, b, a);
    netcl_tensor *step = w ? x_mul(&x, d, w) : x_sc(&x, NETCL_OP_MUL, d, ws);
    return nc_x_return(&x, out, x_add(&x, a, step));
}
