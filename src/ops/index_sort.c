/* index_sort.c — forward sort and prefix scans along a dim. The backend works on
 * the LAST dim: the dim is moved last in the descriptors (no copy), and the
 * results are written through the same permutation of contiguous outputs,
 * so they come back in the input's layout. A reverse scan walks the row
 * with a negated stride. */
#include "ops/ops.h"

/* t's descriptor with dim moved last */
static void dim_last(nc_desc *d, const netcl_tensor *t, int dim)
{
    nc_desc_of(d, t);
    int64_t size = d->sizes[dim], stride = d->strides[dim];
    for (int i = dim; i + 1 < d->ndim; i++) { d->sizes[i] = d->sizes[i + 1]; d->strides[i] = d->strides[i + 1]; }
    d->sizes[d->ndim - 1] = size;
    d->strides[d->ndim - 1] = stride;
}

static void reverse_last(nc_desc *d)
{
    int last = d->ndim - 1;
    if (d->sizes[last] == 0) return;
    d->offset += (d->sizes[last] - 1) * d->strides[last];
    d->strides[last] = -d->strides[last];
}

static netcl_status check_dim(const char *op, const netcl_tensor *a, int dim)
{
    if (dim < 0 || dim >= a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d out of range for %s (valid 0..%d, 0-based in C)", op, dim,
                       nc_describe(a), a->ndim - 1);
    return NETCL_OK;
}

netcl_status nc_fwd_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending)
{
    *values = *indices = NULL;
    if (a->ndim == 0) { /* one element: itself, at position 0 */
        NC_TRY(nc_fwd_tensor_cast(values, a, a->dtype));
        int64_t no_dims = 0;
        netcl_status st = netcl_tensor_full(indices, nc_dev(a), NETCL_DTYPE_INT64, 0, &no_dims, 0);
        if (st != NETCL_OK) { netcl_tensor_release(*values); *values = NULL; }
        return st;
    }
    NC_TRY(check_dim("sort", a, dim));
    netcl_tensor *v = NULL, *ix = NULL;
    netcl_status st = nc_tensor_new(&v, nc_dev(a), a->dtype, a->ndim, a->sizes);
    if (st == NETCL_OK) st = nc_tensor_new(&ix, nc_dev(a), NETCL_DTYPE_INT64, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc dv, di, dx;
        dim_last(&dv, v, dim);
        dim_last(&di, ix, dim);
        dim_last(&dx, a, dim);
        st = nc_dev(a)->backend->index.sort(nc_dev(a), &dv, &di, &dx, descending);
        if (st != NETCL_OK) nc_error_prefix("sort %s: ", nc_describe(a));
    }
    if (st != NETCL_OK) { netcl_tensor_release(v); netcl_tensor_release(ix); return st; }
    *values = v;
    *indices = ix;
    return NETCL_OK;
}

netcl_status nc_fwd_scan(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int reverse)
{
    *out = NULL;
    if (op != NETCL_OP_SUM && op != NETCL_OP_PROD)
        return nc_fail(NETCL_ERR_ARGUMENT, "scan: %s is not sum or prod", netcl_op_name(op));
    const char *name = op == NETCL_OP_SUM ? "cumsum" : "cumprod";
    netcl_dtype dt = nc_dtype_is_float(a->dtype) ? a->dtype : NETCL_DTYPE_INT64;
    if (a->ndim == 0) return nc_fwd_tensor_cast(out, a, dt);   /* the scan of one element */
    NC_TRY(check_dim(name, a, dim));
    netcl_tensor *x = a, *cast = NULL;
    netcl_status st = NETCL_OK;
    if (a->dtype != dt) { st = nc_fwd_tensor_cast(&cast, a, dt); x = cast; }
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), dt, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc o, i;
        dim_last(&o, *out, dim);
        dim_last(&i, x, dim);
        if (reverse) { reverse_last(&o); reverse_last(&i); }
        st = nc_dev(a)->backend->index.scan(nc_dev(a), op, &o, &i);
    }
    netcl_tensor_release(cast);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s: ", name, nc_describe(a));
    }
    return st;
}
