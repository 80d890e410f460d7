/* ops.c — the forward op layer: argument checks with clear messages,
 * broadcasting, dtype promotion, then one backend call. Elementwise,
 * reductions and matmul for the first op set. */
#include "ops/ops.h"
#include <math.h>
#include <string.h>

netcl_status nc_same_device(const char *op, const netcl_tensor *a, const netcl_tensor *b)
{
    if (nc_dev(a) != nc_dev(b))
        return nc_fail(NETCL_ERR_DEVICE, "%s: tensors on different devices: %s and %s (move one with :to())",
                       op, nc_describe(a), nc_describe(b));
    return NETCL_OK;
}

/* Replaces *t by a cast copy when its dtype differs from dt. */
static netcl_status cast_in_place(netcl_tensor **t, netcl_dtype dt, netcl_tensor **owned)
{
    if ((*t)->dtype == dt) return NETCL_OK;
    NC_TRY(nc_fwd_tensor_cast(owned, *t, dt));
    *t = *owned;
    return NETCL_OK;
}

/* Descriptor of t broadcast to (ndim, sizes): leading dims and size-1 dims
 * get stride 0. The caller has checked that the shapes broadcast. */
void nc_broadcast_desc(nc_desc *d, const netcl_tensor *t, int ndim, const int64_t *sizes)
{
    nc_desc_of(d, t);
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int s = i - lead;
        d->sizes[i] = sizes[i];
        d->strides[i] = (s >= 0 && t->sizes[s] == sizes[i]) ? t->strides[s] : 0;
    }
    d->ndim = ndim;
}

netcl_status nc_broadcast_shape(const char *op, const netcl_tensor *a, const netcl_tensor *b, int *ndim, int64_t *sizes)
{
    *ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < *ndim; i++) {
        int ia = i - (*ndim - a->ndim), ib = i - (*ndim - b->ndim);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: shapes do not broadcast: %s and %s (dim %d: %lld vs %lld)",
                           op, nc_describe(a), nc_describe(b), i, (long long)sa, (long long)sb);
        sizes[i] = sa == 1 ? sb : sa;
    }
    return NETCL_OK;
}

/* Result dtype of an elementwise op on operands meeting at `dt`. */
netcl_dtype nc_compute_dtype(netcl_op op, netcl_dtype dt)
{
    bool int_like = !nc_dtype_is_float(dt);
    if (int_like && !nc_op_int_ok(op)) return NETCL_DTYPE_FLOAT32;
    if (dt == NETCL_DTYPE_BOOL && !nc_op_is_predicate(op)) return NETCL_DTYPE_INT64;
    return dt;
}

void nc_unary_params(netcl_op op, double *p1, double *p2)
{
    if (op == NETCL_OP_SOFTPLUS) {   /* beta 0 and threshold 0 mean PyTorch's defaults 1 and 20 */
        if (*p1 == 0) *p1 = 1;
        if (*p2 == 0) *p2 = 20;
    }
}

netcl_status nc_fwd_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2)
{
    *out = NULL;
    nc_unary_params(op, &p1, &p2);
    if (!nc_op_is_unary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "unary: %s (%d) is not a unary op", netcl_op_name(op), (int)op);
    netcl_tensor *cast = NULL;
    netcl_status st = cast_in_place(&a, nc_compute_dtype(op, a->dtype), &cast);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), a->dtype, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc o, x;
        nc_desc_of(&o, *out);
        nc_desc_of(&x, a);
        st = nc_dev(a)->backend->elementwise.unary(nc_dev(a), op, &o, &x, p1, p2);
    }
    netcl_tensor_release(cast);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s: ", netcl_op_name(op), nc_describe(a));
    }
    return st;
}

netcl_status nc_fwd_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    *out = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_binary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "binary: %s (%d) is not a binary op", name, (int)op);
    NC_TRY(nc_same_device(name, a, b));
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(nc_broadcast_shape(name, a, b, &ndim, sizes));
    netcl_dtype dt = nc_compute_dtype(op, nc_dtype_promote(a->dtype, b->dtype));
    netcl_tensor *ca = NULL, *cb = NULL;
    netcl_status st = cast_in_place(&a, dt, &ca);
    if (st == NETCL_OK) st = cast_in_place(&b, dt, &cb);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), nc_op_is_predicate(op) ? NETCL_DTYPE_BOOL : dt, ndim, sizes);
    if (st == NETCL_OK && nc_numel(ndim, sizes) > 0) {
        nc_desc o, x, y;
        nc_desc_of(&o, *out);
        nc_broadcast_desc(&x, a, ndim, sizes);
        nc_broadcast_desc(&y, b, ndim, sizes);
        st = nc_dev(a)->backend->elementwise.binary(nc_dev(a), op, &o, &x, &y, 0, 0);
    }
    netcl_tensor_release(ca);
    netcl_tensor_release(cb);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s: ", name);
    }
    return st;
}

netcl_status nc_fwd_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed)
{
    *out = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_binary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "binary: %s (%d) is not a binary op", name, (int)op);
    netcl_dtype dt = a->dtype;
    if (!nc_dtype_is_float(dt) && s != floor(s)) dt = NETCL_DTYPE_FLOAT32;
    dt = nc_compute_dtype(op, dt);
    netcl_tensor *ca = NULL;
    netcl_status st = cast_in_place(&a, dt, &ca);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), nc_op_is_predicate(op) ? NETCL_DTYPE_BOOL : dt, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc o, x;
        nc_desc_of(&o, *out);
        nc_desc_of(&x, a);
        st = nc_dev(a)->backend->elementwise.binary(nc_dev(a), op, &o, &x, NULL, s, reversed);
    }
    netcl_tensor_release(ca);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s with scalar %g: ", name, nc_describe(a), s);
    }
    return st;
}

/* ---- reductions ----------------------------------------------------------- */

static netcl_dtype reduce_dtype(netcl_op op, netcl_dtype dt)
{
    if (op == NETCL_OP_MEAN && !nc_dtype_is_float(dt)) return NETCL_DTYPE_FLOAT32;
    if ((op == NETCL_OP_SUM || op == NETCL_OP_PROD) && !nc_dtype_is_float(dt)) return NETCL_DTYPE_INT64;
    return dt;
}

/* The reduction as the backend sees it: `src` with the reduced dim last,
 * and the output shape without it. */
static netcl_status reduce_layout(const char *op, netcl_tensor *a, int dim, netcl_tensor **src, int *ondim, int64_t *osizes)
{
    if (dim < 0) { /* all elements: one row */
        int64_t n = netcl_tensor_numel(a);
        *ondim = 0;
        return nc_fwd_tensor_reshape(src, a, 1, &n);
    }
    if (dim >= a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d out of range for %s (valid 0..%d, 0-based in C)",
                       op, dim, nc_describe(a), a->ndim - 1);
    int perm[NC_MAX_DIMS], n = 0;
    for (int i = 0; i < a->ndim; i++)
        if (i != dim) { perm[n] = i; osizes[n] = a->sizes[i]; n++; }
    perm[n] = dim;
    *ondim = n;
    return nc_fwd_tensor_permute(src, a, a->ndim, perm);
}

static netcl_status reduce_impl(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    const char *name = netcl_op_name(op);
    netcl_tensor *src = NULL, *cast = NULL, *v = NULL, *ix = NULL;
    int ondim = 0;
    int64_t osizes[NC_MAX_DIMS];
    netcl_status st = cast_in_place(&a, reduce_dtype(op, a->dtype), &cast);
    if (st == NETCL_OK) st = reduce_layout(name, a, dim, &src, &ondim, osizes);
    if (st != NETCL_OK) goto fail;
    int64_t rlen = src->sizes[src->ndim - 1];
    if (rlen == 0 && op != NETCL_OP_SUM && op != NETCL_OP_PROD) {
        st = nc_fail(NETCL_ERR_ARGUMENT, "%s: cannot reduce over an empty dimension of %s", name, nc_describe(a));
        goto fail;
    }
    bool arg = op == NETCL_OP_ARGMAX || op == NETCL_OP_ARGMIN;
    if ((st = nc_tensor_new(&v, nc_dev(a), arg ? NETCL_DTYPE_INT64 : a->dtype, ondim, osizes)) != NETCL_OK) goto fail;
    if (indices && (st = nc_tensor_new(&ix, nc_dev(a), NETCL_DTYPE_INT64, ondim, osizes)) != NETCL_OK) goto fail;
    if (netcl_tensor_numel(v) > 0) {
        nc_desc o, i, x;
        nc_desc_of(&o, v);
        nc_desc_of(&x, src);
        if (ix) nc_desc_of(&i, ix);
        st = nc_dev(a)->backend->reduce.run(nc_dev(a), op, &o, ix ? &i : NULL, &x);
        if (st != NETCL_OK) goto fail;
    }
    if (keepdim && dim >= 0) {
        netcl_tensor *kv, *ki = NULL;
        if ((st = nc_fwd_tensor_unsqueeze(&kv, v, dim)) != NETCL_OK) goto fail;
        if (ix && (st = nc_fwd_tensor_unsqueeze(&ki, ix, dim)) != NETCL_OK) { netcl_tensor_release(kv); goto fail; }
        netcl_tensor_release(v); v = kv;
        netcl_tensor_release(ix); ix = ki;
    }
    netcl_tensor_release(src);
    netcl_tensor_release(cast);
    *values = v;
    if (indices) *indices = ix;
    return NETCL_OK;
fail:
    netcl_tensor_release(src);
    netcl_tensor_release(cast);
    netcl_tensor_release(v);
    netcl_tensor_release(ix);
    nc_error_prefix("%s: ", name);
    return st;
}

netcl_status nc_fwd_reduce(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    *out = NULL;
    if (!nc_op_is_reduce(op)) return nc_fail(NETCL_ERR_ARGUMENT, "reduce: %s (%d) is not a reduction", netcl_op_name(op), (int)op);
    return reduce_impl(out, NULL, op, a, dim, keepdim);
}

netcl_status nc_fwd_reduce_with_index(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    *values = *indices = NULL;
    if (op != NETCL_OP_MAX && op != NETCL_OP_MIN)
        return nc_fail(NETCL_ERR_ARGUMENT, "reduce_with_index: %s is not max or min", netcl_op_name(op));
    if (dim < 0) return nc_fail(NETCL_ERR_ARGUMENT, "%s: a dim is needed for values with indices", netcl_op_name(op));
    return reduce_impl(values, indices, op, a, dim, keepdim);
}
