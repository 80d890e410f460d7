/* optim.c — host side of kernels/optim.cl: one launch per fused optimizer
 * update, whatever the number of parameters in the flat buffer. */
#include "cl.h"
#include <stdio.h>

netcl_status nc_cl_optim_step(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                              const nc_desc *const *s, const double *hyper)
{
    static const char *const names[NETCL_OPTIM_KIND_END] = {"optim_sgd", "optim_adam", "optim_rmsprop", "optim_adagrad"};
    NC_TRY(nc_cl_enter(dev, names[kind], p->dtype, p->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, p->dtype, p->dtype);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "optim", opts, names[kind], &k, &wg));
    cl_mem pb = p->buf, gb = g->buf, sb[3];
    cl_long po = p->offset, go = g->offset, so[3], n = p->sizes[0];
    cl_int has = 0, fl = flags;
    for (int i = 0; i < 3; i++) {
        sb[i] = s[i] ? (cl_mem)s[i]->buf : pb;   /* absent: never touched by the kernel */
        so[i] = s[i] ? s[i]->offset : 0;
        if (s[i]) has |= 1 << i;
    }
    NC_ARG(k, 0, pb); NC_ARG(k, 1, po); NC_ARG(k, 2, gb); NC_ARG(k, 3, go);
    NC_ARG(k, 4, sb[0]); NC_ARG(k, 5, so[0]); NC_ARG(k, 6, sb[1]); NC_ARG(k, 7, so[1]);
    NC_ARG(k, 8, sb[2]); NC_ARG(k, 9, so[2]); NC_ARG(k, 10, n);
    static const int hyper_index[7] = {NETCL_OPTIM_LR, NETCL_OPTIM_WEIGHT_DECAY, NETCL_OPTIM_BETA1, NETCL_OPTIM_BETA2,
                                       NETCL_OPTIM_EPS, NETCL_OPTIM_BC2_SQRT, NETCL_OPTIM_PARAM_SCALE};
    for (int i = 0; i < 7; i++) NC_TRY(nc_cl_set_scalar(k, 11 + i, p->dtype, hyper[hyper_index[i]]));
    NC_ARG(k, 18, fl); NC_ARG(k, 19, has);
    return nc_cl_launch(cd, k, wg, n);
}

netcl_status nc_cl_amp_unscale(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found)
{
    NC_TRY(nc_cl_enter(dev, "amp_unscale", g->dtype, g->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, g->dtype, g->dtype);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "optim", opts, "amp_unscale", &k, &wg));
    cl_mem gb = g->buf, ib = inv->buf, fb = found->buf;
    cl_long go = g->offset, io = inv->offset, fo = found->offset, n = g->sizes[0];
    NC_ARG(k, 0, gb); NC_ARG(k, 1, go); NC_ARG(k, 2, ib); NC_ARG(k, 3, io); NC_ARG(k, 4, fb); NC_ARG(k, 5, fo);
    NC_ARG(k, 6, n);
    return nc_cl_launch(cd, k, wg, n);
}
