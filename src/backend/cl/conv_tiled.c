/* conv_tiled.c — host side of the convolution family's tiled strategy
 * (kernels/conv_tiled.cl, its backward-weight kernels/conv_tiled_weight.cl):
 * one program per kernel geometry and tile (taps, strides, dilations and
 * the work-group's shape compiled in), one launch per pass. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

netcl_status nc_cl_conv_tiled(netcl_device *dev, const nc_conv_args *g, const nc_desc *out, const nc_desc *x,
                              const nc_desc *w, const nc_conv_epi *epi, int flip)
{
    NC_TRY(nc_cl_enter(dev, "conv2d (tiled)", x->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    nc_conv_tile t = nc_conv_tile_for(g, x->dtype, dev->local_mem);
    if (t.cb < 1)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "the input patch of a %d x %d output tile under a %lld x %lld window "
                       "(stride %lld x %lld, dilation %lld x %lld) does not fit %s's local memory",
                       t.ty, t.tx * t.rx, (long long)g->KH, (long long)g->KW, (long long)g->SH, (long long)g->SW,
                       (long long)g->DH, (long long)g->DW, dev->name);
    int act = epi && nc_gemm_act_ok(epi->act) ? epi->act : -1, bias = epi && epi->bias;
    char opts[400];
    nc_cl_dtype_opts(opts, sizeof opts, x->dtype, out->dtype);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n,
             " -DKH=%lld -DKW=%lld -DSH=%lld -DSW=%lld -DDH=%lld -DDW=%lld -DACT=%d -DHAS_BIAS=%d%s"
             " -DTX=%d -DTY=%d -DRX=%d -DOB=%d -DCB=%d",
             (long long)g->KH, (long long)g->KW, (long long)g->SH, (long long)g->SW, (long long)g->DH, (long long)g->DW,
             act, bias, flip ? " -DFLIP" : "", t.tx, t.ty, t.rx, t.ob, t.cb);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "conv_tiled", opts, "conv_tiled", &k, &wg));
    if (wg < (size_t)(t.tx * t.ty))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s runs work-groups of at most %zu items, the kernel needs %d",
                       dev->name, wg, t.tx * t.ty);
    cl_mem yb = out->buf, xb = x->buf, wb = w->buf, bb = bias ? epi->bias->buf : x->buf;
    cl_long yo = out->offset, xo = x->offset, wo = w->offset, bo = bias ? epi->bias->offset : 0;
    int i = 0;
    NC_ARG(k, i++, yb); NC_ARG(k, i++, yo); NC_ARG(k, i++, xb); NC_ARG(k, i++, xo); NC_ARG(k, i++, wb); NC_ARG(k, i++, wo);
    NC_ARG(k, i++, bb); NC_ARG(k, i++, bo);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, (cl_uint)i++, sizeof *g, g));
    NC_TRY(nc_cl_set_scalar(k, (cl_uint)i, out->dtype, epi ? epi->act_p : 0));
    int64_t og = g->O / g->G, blocks = (og + t.ob - 1) / t.ob;
    int64_t z = g->N * g->G * blocks, rows = (g->OH + t.ty - 1) / t.ty, cols = (g->OW + t.tx * t.rx - 1) / (t.tx * t.rx);
    if (z > 65535 || rows * t.ty > INT32_MAX || cols * t.tx > INT32_MAX)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "a %lld x %lld output of %lld images is too large for one grid",
                       (long long)g->OH, (long long)g->OW, (long long)g->N);
    size_t global[3] = {(size_t)(cols * t.tx), (size_t)(rows * t.ty), (size_t)z}, local[3] = {(size_t)t.tx, (size_t)t.ty, 1};
    return nc_cl_launch_nd(cd, k, 3, global, local);
}

/* backward-weight (kernels/conv_tiled_weight.cl): a work-group of 256 per (part,
 * group, block of NC_TW_OB output channels) */
netcl_status nc_cl_conv_tiled_weight(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                     const nc_desc *dy, int64_t per)
{
    enum { WG = 256 };
    NC_TRY(nc_cl_enter(dev, "conv2d (tiled backward-weight)", x->dtype, parts->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    if (!nc_tw_fits(g))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "a %lld x %lld x %lld x %lld weight over "
                       "%lld x %lld outputs is past its limits", (long long)g->O, (long long)(g->C / g->G),
                       (long long)g->KH, (long long)g->KW, (long long)g->OH, (long long)g->OW);
    char opts[300];
    nc_cl_dtype_opts(opts, sizeof opts, x->dtype, parts->dtype);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n, " -DKH=%lld -DKW=%lld -DSH=%lld -DSW=%lld -DDH=%lld -DDW=%lld", (long long)g->KH,
             (long long)g->KW, (long long)g->SH, (long long)g->SW, (long long)g->DH, (long long)g->DW);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "conv_tiled_weight", opts, "conv_tiled_weight", &k, &wg));
    int64_t elem = x->dtype == NETCL_DTYPE_FLOAT64 ? 8 : 4;   /* the kernel stages in its compute type */
    int64_t staged = nc_tw_staged(g);
    size_t lbytes = (size_t)((staged > WG ? staged : WG) * elem);
    if (wg < WG || (int64_t)lbytes > dev->local_mem)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s runs work-groups of %zu items with %lld "
                       "bytes of local memory; the kernel needs %d and %zu", dev->name, wg, (long long)dev->local_mem, WG,
                       lbytes);
    /* threads sharing a weight row: the largest power of two that leaves each a row */
    int64_t rows = nc_tw_block(g) * (g->C / g->G) * g->KH;
    cl_int ps = 1;
    while (ps < 16 && rows * ps * 2 <= WG) ps *= 2;
    cl_mem pb = parts->buf, xb = x->buf, db = dy->buf;
    cl_long pof = parts->offset, xof = x->offset, dof = dy->offset, cper = per;
    int i = 0;
    NC_ARG(k, i++, pb); NC_ARG(k, i++, pof); NC_ARG(k, i++, xb); NC_ARG(k, i++, xof); NC_ARG(k, i++, db); NC_ARG(k, i++, dof);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, (cl_uint)i++, sizeof *g, g));
    NC_ARG(k, i++, cper); NC_ARG(k, i++, ps);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, (cl_uint)i, lbytes, NULL));
    int64_t groups = parts->sizes[0] * nc_tw_blocks(g);
    size_t global = (size_t)(groups * WG), local = WG;
    return nc_cl_launch_nd(cd, k, 1, &global, &local);
}
