/* bnorm.c — host side of kernels/bnorm.cl: fused batch normalisation
 * (statistics, normalisation, and the two backward kernels). */
#include "cl.h"

static netcl_status groups_launch(nc_cl_device *cd, cl_kernel k, size_t wg, int64_t channels)
{
    int64_t cap = (int64_t)(cd->dev->compute_units > 0 ? cd->dev->compute_units : 1) * 64;
    size_t groups = (size_t)(channels < cap ? channels : cap), global = groups * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}

#define MEM(d) cl_mem d##_m = (a->d) ? (cl_mem)(a->d)->buf : (cl_mem)a->x->buf
netcl_status nc_cl_bn(netcl_device *dev, nc_bn_kernel kind, const nc_bn_args *a)
{
    static const char *names[] = {"bn_stats", "bn_apply", "bn_grad_reduce", "bn_grad_apply"};
    NC_TRY(nc_cl_enter(dev, "batch_norm", a->x->dtype, a->x->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, a->x->dtype, a->x->dtype);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "bnorm", opts, names[kind], &k, &wg));
    cl_long N = a->N, C = a->C, S = a->S, xo = a->x->offset, go = a->g ? a->g->offset : 0;
    cl_int has_w = a->w != NULL, has_b = a->b != NULL, training = a->training, has_running = a->rmean != NULL;
    MEM(x); MEM(g); MEM(mean); MEM(invstd); MEM(w); MEM(b); MEM(rmean); MEM(rvar); MEM(sg); MEM(sgx); MEM(out);
    int i = 0;
    switch (kind) {
    case NC_BN_STATS:
        NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo); NC_ARG(k, i++, mean_m); NC_ARG(k, i++, invstd_m);
        NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S); NC_ARG(k, i++, rmean_m); NC_ARG(k, i++, rvar_m);
        NC_ARG(k, i++, has_running);
        NC_TRY(nc_cl_set_scalar(k, i++, a->x->dtype, a->momentum));
        NC_TRY(nc_cl_set_scalar(k, i, a->x->dtype, a->eps));
        return groups_launch(cd, k, wg, C);
    case NC_BN_APPLY:
        NC_ARG(k, i++, out_m); NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo); NC_ARG(k, i++, mean_m); NC_ARG(k, i++, invstd_m);
        NC_ARG(k, i++, w_m); NC_ARG(k, i++, b_m); NC_ARG(k, i++, has_w); NC_ARG(k, i++, has_b);
        NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S);
        return nc_cl_launch(cd, k, wg, N * C * S);
    case NC_BN_GRAD_REDUCE:
        NC_ARG(k, i++, g_m); NC_ARG(k, i++, go); NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo); NC_ARG(k, i++, mean_m);
        NC_ARG(k, i++, sg_m); NC_ARG(k, i++, sgx_m); NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S);
        return groups_launch(cd, k, wg, C);
    default:
        NC_ARG(k, i++, out_m); NC_ARG(k, i++, g_m); NC_ARG(k, i++, go); NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo);
        NC_ARG(k, i++, mean_m); NC_ARG(k, i++, invstd_m); NC_ARG(k, i++, w_m); NC_ARG(k, i++, has_w);
        NC_ARG(k, i++, sg_m); NC_ARG(k, i++, sgx_m); NC_ARG(k, i++, training);
        NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S);
        return nc_cl_launch(cd, k, wg, N * C * S);
    }
}
