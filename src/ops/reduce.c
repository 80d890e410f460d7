/* reduce.c — the forward op layer of reductions over one dim (sum, mean,
 * prod, max/min with or without indices, argmax/argmin): the dim is moved
 * last (a view) and the backend's reduce.run reduces the last dim. The
 * multi-dim and composite reductions are in src/autograd/reduce.c. */
#include "ops/ops.h"
#include <string.h>

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
    netcl_status st = nc_cast_in_place(&a, reduce_dtype(op, a->dtype), &cast);
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
