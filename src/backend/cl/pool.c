/* pool.c — host side of the pool family (kernels/pool.cl: pooling forward
 * and backward): the geometry struct passed by value, one work item per
 * output element, 32-bit index arithmetic whenever the element counts
 * allow it (nc_cl_index_opts). */
#include "cl.h"
#include <stdio.h>
#include <string.h>

/* the kernels' pool_t: the geometry as 64-bit fields */
typedef struct { cl_long v[17]; } cl_pool_t;
_Static_assert(sizeof(nc_pool_geom) == sizeof(cl_pool_t), "pool_t mirrors nc_pool_geom");

/* pool_fwd(out, oo, idx, io, x, xo, g) / pool_bwd(gin, gio, idx, io, gout, go, g): every
 * operand at its own offset */
static netcl_status pool_launch(netcl_device *dev, const char *kname, const nc_desc *out, const nc_desc *idx,
                                const nc_desc *in, const nc_pool_geom *g, int64_t n)
{
    NC_TRY(nc_cl_enter(dev, kname, in->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[160];
    nc_cl_dtype_opts(opts, sizeof opts, in->dtype, out->dtype);
    int64_t img = g->N * g->C * g->H * g->W, outs = g->N * g->C * g->oh * g->ow;
    nc_cl_index_opts(opts, sizeof opts, img > outs ? img : outs);
    /* a window pooling (not the adaptive mode) up to 7x7 with strides up to 4 compiled in */
    if (g->mode != 2 && g->kh <= 7 && g->kw <= 7 && g->sh <= 4 && g->sw <= 4)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DPG_KH=%d -DPG_KW=%d -DPG_SH=%d -DPG_SW=%d",
                 (int)g->kh, (int)g->kw, (int)g->sh, (int)g->sw);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "pool", opts, kname, &k, &wg));
    cl_mem o = out->buf, x = in->buf, ix = idx ? (cl_mem)idx->buf : out->buf;
    cl_long oo = out->offset, io = idx ? idx->offset : 0, xo = in->offset;
    NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, ix); NC_ARG(k, 3, io); NC_ARG(k, 4, x); NC_ARG(k, 5, xo);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, 6, sizeof *g, g));
    return nc_cl_launch(cd, k, wg, n);
}

netcl_status nc_cl_pool(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x, const nc_pool_geom *g)
{
    return pool_launch(dev, "pool_fwd", out, idx, x, g, g->N * g->C * g->oh * g->ow);
}

netcl_status nc_cl_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                 const nc_pool_geom *g)
{
    return pool_launch(dev, "pool_bwd", gin, idx, gout, g, g->N * g->C * g->H * g->W);
}
