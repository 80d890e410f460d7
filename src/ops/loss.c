/* loss.c — the forward op layer for the class losses (cross-entropy on
 * logits, nll on log-probabilities): argument checks with clear messages,
 * targets as contiguous int64, weights in x's dtype, then one kernel. */
#include "ops/ops.h"

/* x [rows, C] float, t [rows] integer, w [C] or NULL */
static netcl_status check(const char *op, const netcl_tensor *x, const netcl_tensor *t, const netcl_tensor *w, int logp,
                          double eps)
{
    if (x->ndim != 2 || !nc_dtype_is_float(x->dtype) || x->sizes[1] == 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: input must be a floating [rows, classes] tensor with classes > 0, got %s", op, nc_describe(x));
    NC_TRY(nc_same_device(op, x, t));
    if (nc_dtype_is_float(t->dtype) || t->dtype == NETCL_DTYPE_BOOL || t->ndim != 1 || t->sizes[0] != x->sizes[0])
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: target must be an integer tensor of %lld class indices, got %s (input %s)",
                       op, (long long)x->sizes[0], nc_describe(t), nc_describe(x));
    if (w) {
        NC_TRY(nc_same_device(op, x, w));
        if (w->ndim != 1 || w->sizes[0] != x->sizes[1] || !nc_dtype_is_float(w->dtype))
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: weight must be a floating tensor of %lld class weights, got %s", op,
                           (long long)x->sizes[1], nc_describe(w));
    }
    if (!(eps >= 0 && eps <= 1) || (logp && eps != 0))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: label_smoothing must be in [0, 1] (and 0 for nll), got %g", op, eps);
    return NETCL_OK;
}

/* contiguous int64 targets and x-dtype contiguous weights */
static netcl_status prepare(const netcl_tensor *x, netcl_tensor *t, netcl_tensor *w, netcl_tensor **tc, netcl_tensor **wc)
{
    *tc = *wc = NULL;
    NC_TRY(t->dtype == NETCL_DTYPE_INT64 ? nc_fwd_tensor_contiguous(tc, t) : nc_fwd_tensor_cast(tc, t, NETCL_DTYPE_INT64));
    if (w) NC_TRY(w->dtype == x->dtype ? nc_fwd_tensor_contiguous(wc, w) : nc_fwd_tensor_cast(wc, w, x->dtype));
    return NETCL_OK;
}

netcl_status nc_fwd_class_loss(netcl_tensor **loss, netcl_tensor **wsum, netcl_tensor *x, netcl_tensor *t, netcl_tensor *w,
                               int logp, int64_t base, int64_t ignore, double eps)
{
    const char *op = logp ? "nll_loss" : "cross_entropy";
    *loss = *wsum = NULL;
    NC_TRY(check(op, x, t, w, logp, eps));
    netcl_tensor *xc = NULL, *tc = NULL, *wc = NULL;
    netcl_status st = nc_fwd_tensor_contiguous(&xc, x);
    if (st == NETCL_OK) st = prepare(x, t, w, &tc, &wc);
    if (st == NETCL_OK) st = nc_tensor_new(loss, nc_dev(x), x->dtype, 1, x->sizes);
    if (st == NETCL_OK) st = nc_tensor_new(wsum, nc_dev(x), x->dtype, 1, x->sizes);
    if (st == NETCL_OK && x->sizes[0] > 0) {
        nc_desc l, s, xd, td, wd;
        nc_desc_of(&l, *loss); nc_desc_of(&s, *wsum); nc_desc_of(&xd, xc); nc_desc_of(&td, tc);
        if (wc) nc_desc_of(&wd, wc);
        st = nc_dev(x)->backend->loss.class_loss(nc_dev(x), &l, &s, &xd, &td, wc ? &wd : NULL, logp, base, ignore, eps);
    }
    netcl_tensor_release(xc); netcl_tensor_release(tc); netcl_tensor_release(wc);
    if (st != NETCL_OK) {
        netcl_tensor_release(*loss); netcl_tensor_release(*wsum);
        *loss = *wsum = NULL;
        nc_error_prefix("%s: ", op);
    }
    return st;
}

netcl_status nc_fwd_class_loss_backward(netcl_tensor **gx, netcl_tensor *g, netcl_tensor *x, netcl_tensor *t,
                                        netcl_tensor *w, int logp, int64_t base, int64_t ignore, double eps)
{
    const char *op = logp ? "nll_loss backward" : "cross_entropy backward";
    *gx = NULL;
    netcl_tensor *xc = NULL, *tc = NULL, *wc = NULL, *gc = NULL;
    netcl_status st = nc_fwd_tensor_contiguous(&xc, x);
    if (st == NETCL_OK) st = prepare(x, t, w, &tc, &wc);
    if (st == NETCL_OK) st = g->dtype == x->dtype ? nc_fwd_tensor_contiguous(&gc, g) : nc_fwd_tensor_cast(&gc, g, x->dtype);
    if (st == NETCL_OK) st = nc_tensor_new(gx, nc_dev(x), x->dtype, 2, x->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(x) > 0) {
        nc_desc o, gd, xd, td, wd;
        nc_desc_of(&o, *gx); nc_desc_of(&gd, gc); nc_desc_of(&xd, xc); nc_desc_of(&td, tc);
        if (wc) nc_desc_of(&wd, wc);
        st = nc_dev(x)->backend->loss.class_loss_backward(nc_dev(x), &o, &gd, &xd, &td, wc ? &wd : NULL, logp, base, ignore, eps);
    }
    netcl_tensor_release(xc); netcl_tensor_release(tc); netcl_tensor_release(wc); netcl_tensor_release(gc);
    if (st != NETCL_OK) {
        netcl_tensor_release(*gx);
        *gx = NULL;
        nc_error_prefix("%s: ", op);
    }
    return st;
}
