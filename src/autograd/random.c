/* random.c — random draws built from recorded ops: bernoulli (uniform
 * draws compared with p; not differentiable). The draws themselves
 * (rand/randn/randint, randperm, multinomial) are in src/ops/random.c. */
#include "autograd/expr.h"

netcl_status netcl_bernoulli(netcl_tensor **out, netcl_tensor *p)
{
    *out = NULL;
    if (!nc_dtype_is_float(p->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "bernoulli: the probabilities must be a floating tensor, got %s", nc_describe(p));
    netcl_dtype dt = p->dtype == NETCL_DTYPE_FLOAT64 ? NETCL_DTYPE_FLOAT64 : NETCL_DTYPE_FLOAT32;
    nc_x x = NC_X("bernoulli");
    netcl_tensor *u = XC(&x, netcl_tensor_rand, nc_dev(p), dt, p->ndim, p->sizes, NETCL_RNG_UNIFORM, 0, 1);
    netcl_tensor *hit = x_bin(&x, NETCL_OP_LT, u, p);
    return nc_x_return(&x, out, x_cast(&x, hit, p->dtype));
}
