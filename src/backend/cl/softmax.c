/* softmax.c — host side of the softmax family (kernels/softmax.cl): softmax
 * and log_softmax over the last dim and their backward, a work-group per
 * row or a work item per short row. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

/* rows of at most this many elements get a work item each */
#define SHORT_ROW 64

static netcl_status softmax_launch(netcl_device *dev, const char *kname, int log, const nc_desc *out,
                                   const nc_desc *a, const nc_desc *b)
{
    NC_TRY(nc_cl_enter(dev, log ? "log_softmax" : "softmax", a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128], name[48];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    if (log) strcat(opts, " -DLOGSM");
    cl_long R = a->sizes[a->ndim - 1], rows = nc_numel(a->ndim, a->sizes) / R;
    int per_item = R <= SHORT_ROW;
    snprintf(name, sizeof name, "%s_%s", kname, per_item ? "item" : "group");
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "softmax", opts, name, &k, &wg));
    cl_mem o = out->buf, x = a->buf;
    cl_long oo = out->offset, ao = a->offset;
    int i = 0;
    NC_ARG(k, i++, o); NC_ARG(k, i++, oo); NC_ARG(k, i++, x); NC_ARG(k, i++, ao);
    if (b) { cl_mem y = b->buf; cl_long bo = b->offset; NC_ARG(k, i++, y); NC_ARG(k, i++, bo); }
    NC_ARG(k, i++, rows); NC_ARG(k, i++, R);
    if (per_item) return nc_cl_launch(cd, k, wg, rows);
    /* a power-of-two group no wider than the row needs */
    while (wg > 32 && (cl_long)wg / 2 >= R) wg /= 2;
    int64_t cap = (int64_t)(cd->dev->compute_units > 0 ? cd->dev->compute_units : 1) * 64;
    size_t groups = (size_t)(rows < cap ? rows : cap), global = groups * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}

netcl_status nc_cl_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log)
{
    return softmax_launch(dev, "softmax", log, out, a, NULL);
}

netcl_status nc_cl_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log)
{
    return softmax_launch(dev, "softmax_back", log, gin, g, y);
}
