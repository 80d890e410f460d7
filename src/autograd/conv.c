/* conv.c — conv1d as a conv2d of height 1 (autograd comes free). conv2d
 * and conv_transpose2d are primitives with strategies: src/conv2d.c. */
#include "autograd/expr.h"

netcl_status netcl_conv1d(netcl_tensor **out, netcl_tensor *in, netcl_tensor *w, netcl_tensor *b, int64_t stride,
                          int64_t padding, int64_t dilation, int64_t groups)
{
    nc_x x = NC_X("conv1d");
    if (in->ndim != 3 || w->ndim != 3)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "input %s and weight %s must be 3-dimensional (N, C, L) and "
                              "(out, in/groups, k)", nc_describe(in), nc_describe(w)));
    netcl_tensor *in4 = XC(&x, netcl_tensor_unsqueeze, in, 2);
    netcl_tensor *w4 = XC(&x, netcl_tensor_unsqueeze, w, 2);
    int64_t s[2] = {1, stride}, p[2] = {0, padding}, d[2] = {1, dilation};
    netcl_tensor *y = XC(&x, netcl_conv2d, in4, w4, b, s, p, d, groups);
    return nc_x_return(&x, out, XC(&x, netcl_tensor_squeeze, y, 2));
}
