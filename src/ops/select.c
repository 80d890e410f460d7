/* select.c — the forward op layer for where and softmax/log_softmax:
 * argument checks with clear messages, broadcasting and dtypes for where,
 * and the permutation that brings softmax's dim last for the row kernels. */
#include "ops/ops.h"
#include <math.h>
#include <string.h>

/* Broadcast shape of up to three tensors (NULL entries skipped). */
static netcl_status broadcast3(const char *op, netcl_tensor *const *ts, int *ndim, int64_t *sizes)
{
    *ndim = 0;
    for (int k = 0; k < 3; k++) if (ts[k] && ts[k]->ndim > *ndim) *ndim = ts[k]->ndim;
    for (int i = 0; i < *ndim; i++) sizes[i] = 1;
    for (int k = 0; k < 3; k++) {
        const netcl_tensor *t = ts[k];
        if (!t) continue;
        for (int i = 0; i < t->ndim; i++) {
            int o = i + *ndim - t->ndim;
            if (t->sizes[i] == sizes[o] || t->sizes[i] == 1) continue;
            if (sizes[o] != 1)
                return nc_fail(NETCL_ERR_ARGUMENT, "%s: shapes do not broadcast: %s has size %lld in dim %d where "
                               "another input has %lld", op, nc_describe(t), (long long)t->sizes[i], i, (long long)sizes[o]);
            sizes[o] = t->sizes[i];
        }
    }
    return NETCL_OK;
}

/* dtype of where's result: the tensors' promotion; a lone tensor meets a
 * fractional scalar in float32; two scalars give float32. */
static netcl_dtype where_dtype(const netcl_tensor *a, const netcl_tensor *b, double sa, double sb)
{
    if (a && b) return nc_dtype_promote(a->dtype, b->dtype);
    if (!a && !b) return NETCL_DTYPE_FLOAT32;
    const netcl_tensor *t = a ? a : b;
    double s = a ? sb : sa;
    if (nc_dtype_is_float(t->dtype)) return t->dtype;
    if (s != floor(s)) return NETCL_DTYPE_FLOAT32;
    if (t->dtype == NETCL_DTYPE_BOOL && s != 0 && s != 1) return NETCL_DTYPE_INT64;
    return t->dtype;
}

netcl_status nc_fwd_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb)
{
    *out = NULL;
    if (a) NC_TRY(nc_same_device("where", cond, a));
    if (b) NC_TRY(nc_same_device("where", cond, b));
    netcl_tensor *ts[3] = {cond, a, b}, *tmp[3] = {NULL, NULL, NULL};
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(broadcast3("where", ts, &ndim, sizes));
    netcl_dtype dt = where_dtype(a, b, sa, sb);
    netcl_status st = NETCL_OK;
    for (int k = 0; k < 3 && st == NETCL_OK; k++) {
        netcl_dtype want = k == 0 ? NETCL_DTYPE_BOOL : dt;
        if (ts[k] && ts[k]->dtype != want && (st = nc_fwd_tensor_cast(&tmp[k], ts[k], want)) == NETCL_OK) ts[k] = tmp[k];
    }
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(cond), dt, ndim, sizes);
    if (st == NETCL_OK && nc_numel(ndim, sizes) > 0) {
        nc_desc o, c, x, y;
        nc_desc_of(&o, *out);
        nc_broadcast_desc(&c, ts[0], ndim, sizes);
        if (a) nc_broadcast_desc(&x, ts[1], ndim, sizes);
        if (b) nc_broadcast_desc(&y, ts[2], ndim, sizes);
        st = nc_dev(cond)->backend->elementwise.where(nc_dev(cond), &o, &c, a ? &x : NULL, b ? &y : NULL, sa, sb);
    }
    for (int k = 0; k < 3; k++) netcl_tensor_release(tmp[k]);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("where: ");
    }
    return st;
}

/* ---- softmax ------------------------------------------------------------------------ */

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
