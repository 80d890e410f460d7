/* loss.c — host side of kernels/loss.cl: one work-group per row of the
 * class losses and their gradients, every operand at its own offset. */
#include "cl.h"
#include <string.h>

static netcl_status launch(netcl_device *dev, const char *kname, const nc_desc *o1, const nc_desc *o2, const nc_desc *x,
                           const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps)
{
    NC_TRY(nc_cl_enter(dev, kname, x->dtype, x->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, x->dtype, x->dtype);
    if (logp) strcat(opts, " -DLOGP");
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "loss", opts, kname, &k, &wg));
    cl_long rows = x->sizes[0], C = x->sizes[1], xo = x->offset, to = t->offset, wo = w ? w->offset : 0;
    cl_long b = base, ig = ignore;
    cl_int has_w = w != NULL;
    cl_mem xb = x->buf, tb = t->buf, wb = w ? (cl_mem)w->buf : x->buf, b1 = o1->buf, b2 = o2->buf;
    cl_long off1 = o1->offset, off2 = o2->offset;
    int i = 0;
    NC_ARG(k, i++, b1); NC_ARG(k, i++, off1); NC_ARG(k, i++, b2); NC_ARG(k, i++, off2);
    NC_ARG(k, i++, xb); NC_ARG(k, i++, xo); NC_ARG(k, i++, tb); NC_ARG(k, i++, to);
    NC_ARG(k, i++, wb); NC_ARG(k, i++, wo); NC_ARG(k, i++, has_w);
    NC_ARG(k, i++, rows); NC_ARG(k, i++, C); NC_ARG(k, i++, b); NC_ARG(k, i++, ig);
    NC_TRY(nc_cl_set_scalar(k, i++, x->dtype, eps));
    if (strcmp(kname, "class_loss_fwd") == 0) {
        cl_mem eb;
        NC_TRY(nc_cl_error_word(cd, &eb));
        NC_ARG(k, i, eb);
        cd->err_pending = 1;   /* a bad target is reported at the next blocking read */
    }
    while (wg > 32 && (cl_long)wg / 2 >= C) wg /= 2;
    int64_t cap = (int64_t)(cd->dev->compute_units > 0 ? cd->dev->compute_units : 1) * 64;
    size_t groups = (size_t)(rows < cap ? rows : cap), global = groups * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}

netcl_status nc_cl_class_loss(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                              const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps)
{
    return launch(dev, "class_loss_fwd", loss, wsum, x, t, w, logp, base, ignore, eps);
}

netcl_status nc_cl_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                       const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                       double eps)
{
    return launch(dev, "class_loss_bwd", gx, g, x, t, w, logp, base, ignore, eps);
}
