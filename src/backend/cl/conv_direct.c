/* conv_direct.c — host side of the convolution family's direct kernels
 * (kernels/conv_direct.cl): the direct convolution kernels and the
 * Winograd transforms. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

typedef struct { cl_long v[16]; } cl_conv2d_t;
_Static_assert(sizeof(nc_conv_args) == sizeof(cl_conv2d_t), "conv_t mirrors nc_conv_args");

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

netcl_status nc_cl_conv(netcl_device *dev, nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out,
                        const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1)
{
    static const char *names[] = {"conv_fwd",    "conv_bwd_data", "conv_bwd_weight",  "wino_input",
                                  "wino_weight", "wino_output",   "wino_output_grad", "wino_weight_grad"};
    if (kind >= NC_DW_FWD) return nc_cl_conv_depthwise(dev, kind, g, out, a, b, p0);
    NC_TRY(nc_cl_enter(dev, names[kind], a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    if (kind >= NC_WINO_INPUT) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DWM=%d", (int)p0);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "conv_direct", opts, names[kind], &k, &wg));
    cl_mem o = out->buf, x = a->buf;
    cl_long oo = out->offset, xo = a->offset;
    int i = 0;
    NC_ARG(k, i++, o); NC_ARG(k, i++, oo);
    NC_ARG(k, i++, x); NC_ARG(k, i++, xo);
    if (b) { cl_mem y = b->buf; cl_long yo = b->offset; NC_ARG(k, i++, y); NC_ARG(k, i++, yo); }
    cl_long th = ceil_div(g->OH, p0 > 0 ? p0 : 1), tw = ceil_div(g->OW, p0 > 0 ? p0 : 1), P = g->N * th * tw;
    /* the blocked layouts: S blocks of ps tiles (p1 = 0: one block of P) */
    cl_long ps = p1 > 0 ? p1 : P, Q = ceil_div(P, ps) * ps;
    int64_t n;
    switch (kind) {
    case NC_CONV_FWD: n = g->N * g->O * g->OH * g->OW; break;
    case NC_CONV_BWD_DATA: n = g->N * g->C * g->H * g->W; break;
    case NC_CONV_BWD_WEIGHT: n = g->O * (g->C / g->G) * g->KH * g->KW; break;
    case NC_WINO_INPUT: n = g->C * Q; break;
    case NC_WINO_WEIGHT: case NC_WINO_WEIGHT_GRAD: n = g->O * g->C; break;
    case NC_WINO_OUTPUT_GRAD: n = g->O * Q; break;
    default: n = g->O * P; break;
    }
    if (kind == NC_WINO_WEIGHT || kind == NC_WINO_WEIGHT_GRAD) {
        cl_long O = g->O, C = g->C;
        NC_ARG(k, i++, O); NC_ARG(k, i++, C);
        if (kind == NC_WINO_WEIGHT) { cl_int flip = (cl_int)p1; NC_ARG(k, i++, flip); }
    } else {
        NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, (cl_uint)i++, sizeof *g, g));
        if (kind >= NC_WINO_INPUT) { NC_ARG(k, i++, th); NC_ARG(k, i++, tw); }
        if (kind == NC_WINO_INPUT || kind == NC_WINO_OUTPUT_GRAD) NC_ARG(k, i++, ps);
    }
    if (kind != NC_CONV_BWD_WEIGHT) return nc_cl_launch(cd, k, wg, n);
    /* a work-group per weight element, grid-strided */
    int64_t cap = (int64_t)(cd->dev->compute_units > 0 ? cd->dev->compute_units : 1) * 64;
    size_t groups = (size_t)(n < cap ? n : cap), global = groups * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}
