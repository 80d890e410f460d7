/* random.c — random draws built from recorded ops: bernoulli (uniform
 * draws compared with p; not differentiable). The draws themselves
 * (rand/randn/randint, randperm, multinomial) are in src/ops/random.c. */
#include "autograd/expr.h"

/* p outside [0, 1] or NaN is an error, as in PyTorch. The check reads two
 * numbers back; a capture (which cannot read) skips it. */
static netcl_status check_probabilities(netcl_tensor *p)
{
    if (netcl_tensor_numel(p) == 0 || nc_dev(p)->capturing) return NETCL_OK;
    netcl_tensor *mn = NULL, *mx = NULL;
    double lo = 0, hi = 0;
    netcl_status st = nc_fwd_reduce(&mn, NETCL_OP_MIN, p, -1, 0);
    if (st == NETCL_OK) st = nc_fwd_reduce(&mx, NETCL_OP_MAX, p, -1, 0);
    if (st == NETCL_OK) st = netcl_tensor_to_doubles(mn, &lo, 1);
    if (st == NETCL_OK) st = netcl_tensor_to_doubles(mx, &hi, 1);
    netcl_tensor_release(mn);
    netcl_tensor_release(mx);
    if (st != NETCL_OK) return st;
    if (!(lo >= 0 && hi <= 1))
        return nc_fail(NETCL_ERR_ARGUMENT, "bernoulli: probabilities must lie in [0, 1]; %s holds values from %g to %g",
                       nc_describe(p), lo, hi);
    return NETCL_OK;
}

netcl_status netcl_bernoulli(netcl_tensor **out, netcl_tensor *p)
{
    *out = NULL;
    if (!nc_dtype_is_float(p->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "bernoulli: the probabilities must be a floating tensor, got %s", nc_describe(p));
    NC_TRY(check_probabilities(p));
    netcl_dtype dt = p->dtype == NETCL_DTYPE_FLOAT64 ? NETCL_DTYPE_FLOAT64 : NETCL_DTYPE_FLOAT32;
    nc_x x = NC_X("bernoulli");
    netcl_tensor *u = XC(&x, netcl_tensor_rand, nc_dev(p), dt, p->ndim, p->sizes, NETCL_RNG_UNIFORM, 0, 1);
    netcl_tensor *hit = x_bin(&x, NETCL_OP_LT, u, p);
    return nc_x_return(&x, out, x_cast(&x, hit, p->dtype));
}
