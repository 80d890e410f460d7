/* softmax.c — the forward op layer of softmax/log_softmax and their
 * backward: argument checks with clear messages and the permutation that
 * brings the dim last for the row kernels (backend softmax.forward and
 * softmax.backward). */
#include "ops/ops.h"

/* t with `dim` moved last (a view), and the permutation that undoes it */
static netcl_status dim_last(netcl_tensor *t, int dim, netcl_tensor **v, int *inverse)
{
    int perm[NC_MAX_DIMS], n = 0;
    for (int i = 0; i < t->ndim; i++) if (i != dim) perm[n++] = i;
    perm[n] = dim;
    for (int i = 0; i < t->ndim; i++) inverse[perm[i]] = i;
    return nc_fwd_tensor_permute(v, t, t->ndim, perm);
}

static netcl_status softmax_check(const char *op, netcl_tensor *a, int dim)
{
    if (!nc_dtype_is_float(a->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: needs a floating tensor, got %s (cast it with :float())", op, nc_describe(a));
    if (a->ndim == 0) return NETCL_OK;
    if (dim < 0 || dim >= a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d out of range for %s (0-based in C)", op, dim, nc_describe(a));
    return NETCL_OK;
}

/* Runs the row kernel on `dim` of the inputs: fwd (g == NULL) or backward. */
static netcl_status softmax_run(const char *op, netcl_tensor **out, netcl_tensor *x, netcl_tensor *g, int dim, int log)
{
    *out = NULL;
    NC_TRY(softmax_check(op, x, dim));
    if (g) NC_TRY(nc_same_device(op, x, g));
    if (x->ndim == 0) dim = 0;
    netcl_tensor *xv = NULL, *xc = NULL, *gv = NULL, *gc = NULL, *r = NULL;
    int inv[NC_MAX_DIMS];
    netcl_status st = x->ndim ? dim_last(x, dim, &xv, inv) : nc_fwd_tensor_reshape(&xv, x, 1, (int64_t[]){1});
    if (st == NETCL_OK) st = nc_fwd_tensor_contiguous(&xc, xv);
    if (st == NETCL_OK && g) st = x->ndim ? dim_last(g, dim, &gv, inv) : nc_fwd_tensor_reshape(&gv, g, 1, (int64_t[]){1});
    if (st == NETCL_OK && g) st = gv->dtype == xc->dtype ? nc_fwd_tensor_contiguous(&gc, gv) : nc_fwd_tensor_cast(&gc, gv, xc->dtype);
    if (st == NETCL_OK) st = nc_tensor_new(&r, nc_dev(x), x->dtype, xc->ndim, xc->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(r) > 0) {
        nc_desc o, a, b;
        nc_desc_of(&o, r);
        nc_desc_of(&a, xc);
        if (g) {
            nc_desc_of(&b, gc);
            st = nc_dev(x)->backend->softmax.backward(nc_dev(x), &o, &b, &a, log);
        } else {
            st = nc_dev(x)->backend->softmax.forward(nc_dev(x), &o, &a, log);
        }
    }
    if (st == NETCL_OK) st = x->ndim ? nc_fwd_tensor_permute(out, r, r->ndim, inv) : nc_fwd_tensor_reshape(out, r, 0, NULL);
    netcl_tensor_release(xv); netcl_tensor_release(xc); netcl_tensor_release(gv); netcl_tensor_release(gc);
    netcl_tensor_release(r);
    if (st != NETCL_OK) nc_error_prefix("%s %s: ", op, nc_describe(x));
    return st;
}

netcl_status nc_fwd_softmax(netcl_tensor **out, netcl_tensor *a, int dim, int log)
{
    return softmax_run(log ? "log_softmax" : "softmax", out, a, NULL, dim, log);
}

netcl_status nc_fwd_softmax_backward(netcl_tensor **gin, netcl_tensor *g, netcl_tensor *y, int dim, int log)
{
    return softmax_run(log ? "log_softmax backward" : "softmax backward", gin, y, g, dim, log);
}
