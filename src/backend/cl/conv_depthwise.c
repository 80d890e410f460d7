/* conv_depthwise.c — host side of the convolution family's depthwise
 * kernels (kernels/conv_depthwise.cl; nc_cl_conv's NC_DW_* kinds): window
 * and strides compiled in, 32-bit indices with magic-number divisions where
 * the element counts allow, backward-weight one work-group per (output
 * channel, slice of images). */
#include "cl.h"
#include <stdio.h>
#include <string.h>

netcl_status nc_cl_conv_depthwise(netcl_device *dev, nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out,
                                  const nc_desc *a, const nc_desc *b, int64_t ip)
{
    static const char *const names[3] = {"dw_fwd", "dw_data", "dw_weight"};
    const char *name = names[kind - NC_DW_FWD];
    NC_TRY(nc_cl_enter(dev, name, a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    int64_t xn = g->N * g->C * g->H * g->W, yn = g->N * g->O * g->OH * g->OW;
    char opts[200];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    nc_cl_index_opts(opts, sizeof opts, xn > yn ? xn : yn);
    /* backward-weight's work-group: a power of two up to 256 whose KH*KW
     * sums per item fit 32 KiB of local memory (all three kernels share the
     * program, so the forward passes build it with the same size) */
    size_t local = 256, elem = a->dtype == NETCL_DTYPE_FLOAT64 ? 8 : 4;
    while (local > 1 && (local > (size_t)dev->max_work_group || (size_t)(g->KH * g->KW) * local * elem > 32768)) local /= 2;
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DDW_KH=%d -DDW_KW=%d -DDW_SH=%d -DDW_SW=%d -DDW_LOCAL=%d",
             (int)g->KH, (int)g->KW, (int)g->SH, (int)g->SW, (int)local);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "conv_depthwise", opts, name, &k, &wg));
    cl_mem o = out->buf, x = a->buf, y = b->buf;
    cl_long oo = out->offset, xo = a->offset, yo = b->offset;
    NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, x); NC_ARG(k, 3, xo); NC_ARG(k, 4, y); NC_ARG(k, 5, yo);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, 6, sizeof *g, g));
    /* the divisors each kernel takes (conv_depthwise.cl), with their magic numbers */
    int64_t L = g->OH * g->OW, divs[3][4] = {{L, g->O, g->O / g->C, g->OW}, {g->W, g->H, g->C, 1}, {L, g->OW, 1, 1}};
    cl_int4 dv;
    cl_uint4 dm;
    cl_int4 ds;
    for (int i = 0; i < 4; i++) {
        int64_t d = divs[kind - NC_DW_FWD][i];
        if (d >= INT32_MAX)
            return nc_fail(NETCL_ERR_UNSUPPORTED, "conv2d (depthwise): a plane of %lld x %lld outputs or %lld channels "
                           "exceeds the kernels' 32-bit sizes", (long long)g->OH, (long long)g->OW, (long long)g->O);
        dv.s[i] = (cl_int)d;
        nc_cl_fdiv_magic(dv.s[i], &dm.s[i], &ds.s[i]);
    }
    int i = 7;
    cl_long ipl = ip > 0 ? ip : g->N;
    if (kind == NC_DW_WEIGHT) NC_ARG(k, i++, ipl);
    NC_ARG(k, i++, dv); NC_ARG(k, i++, dm); NC_ARG(k, i++, ds);
    if (kind == NC_DW_FWD) return nc_cl_launch(cd, k, wg, yn);
    if (kind == NC_DW_DATA) return nc_cl_launch(cd, k, wg, xn);
    if (local > wg) return nc_fail(NETCL_ERR_UNSUPPORTED, "conv2d (depthwise) backward-weight: work-groups of %zu items "
                                   "exceed the kernel's %zu on %s", local, wg, dev->name);
    int64_t groups = (g->N + ipl - 1) / ipl * g->O;
    size_t global = (size_t)(groups < (1 << 20) ? groups : (1 << 20)) * local;
    return nc_cl_launch_nd(cd, k, 1, &global, &local);
}
