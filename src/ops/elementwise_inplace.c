/* elementwise_inplace.c — the forward half of in-place ops: an elementwise result
 * written into an existing tensor (any strides). One kernel when the
 * output has the compute dtype and no operand overlaps it in another
 * layout; otherwise the result is computed out of place and copied in, so
 * `x:add_(x:t())` still reads every element before it is overwritten. */
#include "ops/ops.h"
#include <string.h>

/* comparisons write bool, which the backend expects as their output dtype */

/* True when t (viewed through descriptor d) shares memory with out in a
 * layout other than out's own: element i of the op would read what an
 * earlier element wrote. Same storage + same geometry is safe. */
static int overlaps(const netcl_tensor *out, const netcl_tensor *t, const nc_desc *d)
{
    if (t->storage != out->storage) return 0;
    if (d->offset != out->offset || d->ndim != out->ndim) return 1;
    for (int i = 0; i < out->ndim; i++)
        if (out->sizes[i] != 1 && d->strides[i] != out->strides[i]) return 1;
    return 0;
}

/* A destination where several elements are one memory location (an
 * expanded view) has no well-defined in-place result: refused, as in
 * PyTorch. */
netcl_status nc_check_writable(const char *op, const netcl_tensor *out)
{
    for (int i = 0; i < out->ndim; i++)
        if (out->sizes[i] > 1 && out->strides[i] == 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: %s has several elements in one memory location (dim %d is expanded); "
                           "write into a tensor of its own (clone() or contiguous())", op, nc_describe(out), i + 1);
    return NETCL_OK;
}

static netcl_status check_shape(const char *op, const netcl_tensor *out, int ndim, const int64_t *sizes)
{
    char what[64];
    snprintf(what, sizeof what, "%s_", op);
    NC_TRY(nc_check_writable(what, out));
    if (ndim != out->ndim || memcmp(sizes, out->sizes, sizeof(int64_t) * (size_t)ndim) != 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s_: the result has shape %s, which does not fit in place into %s",
                       op, nc_shape_str(ndim, sizes), nc_describe(out));
    return NETCL_OK;
}

/* dst = src through the backend's strided copy (same device, src already
 * of dst's shape or broadcastable to it). */
netcl_status nc_fwd_copy_into(netcl_tensor *dst, netcl_tensor *src)
{
    NC_TRY(nc_same_device("copy_", dst, src));
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(nc_broadcast_shape("copy_", dst, src, &ndim, sizes));
    NC_TRY(check_shape("copy", dst, ndim, sizes));
    atomic_fetch_add(&dst->storage->version, 1);
    if (netcl_tensor_numel(dst) == 0) return NETCL_OK;
    nc_desc d, s;
    nc_desc_of(&d, dst);
    nc_broadcast_desc(&s, src, ndim, sizes);
    netcl_tensor *tmp = NULL;
    if (overlaps(dst, src, &s)) { /* copy through a temporary */
        NC_TRY(nc_fwd_tensor_contiguous(&tmp, src));
        nc_broadcast_desc(&s, tmp, ndim, sizes);
    }
    netcl_status st = nc_dev(dst)->backend->elementwise.copy(nc_dev(dst), &d, &s);
    netcl_tensor_release(tmp);
    return st;
}

/* The slow path shared by all three: r computed out of place, copied in. */
static netcl_status copy_result(netcl_tensor *out, netcl_status st, netcl_tensor *r)
{
    if (st == NETCL_OK) st = nc_fwd_copy_into(out, r);
    netcl_tensor_release(r);
    return st;
}

netcl_status nc_fwd_binary_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    const char *name = netcl_op_name(op);
    NC_TRY(nc_same_device(name, out, a));
    NC_TRY(nc_same_device(name, a, b));
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(nc_broadcast_shape(name, a, b, &ndim, sizes));
    NC_TRY(check_shape(name, out, ndim, sizes));
    netcl_dtype dt = nc_compute_dtype(op, nc_dtype_promote(a->dtype, b->dtype));
    nc_desc o, x, y;
    nc_desc_of(&o, out);
    nc_broadcast_desc(&x, a, ndim, sizes);
    nc_broadcast_desc(&y, b, ndim, sizes);
    if (nc_op_is_predicate(op) || dt != out->dtype || a->dtype != dt || b->dtype != dt || overlaps(out, a, &x) ||
        overlaps(out, b, &y)) {
        netcl_tensor *r = NULL;
        netcl_status st = nc_fwd_binary(&r, op, a, b);
        return copy_result(out, st, r);
    }
    atomic_fetch_add(&out->storage->version, 1);
    if (netcl_tensor_numel(out) == 0) return NETCL_OK;
    netcl_status st = nc_dev(out)->backend->elementwise.binary(nc_dev(out), op, &o, &x, &y, 0, 0);
    if (st != NETCL_OK) nc_error_prefix("%s_: ", name);
    return st;
}

netcl_status nc_fwd_binary_scalar_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, double s, int reversed)
{
    const char *name = netcl_op_name(op);
    NC_TRY(nc_same_device(name, out, a));
    int64_t sizes[NC_MAX_DIMS];
    memcpy(sizes, a->sizes, sizeof sizes);
    NC_TRY(check_shape(name, out, a->ndim, sizes));
    nc_desc o, x;
    nc_desc_of(&o, out);
    nc_desc_of(&x, a);
    int int_exact = nc_dtype_is_float(a->dtype) || s == (double)(int64_t)s;
    netcl_dtype dt = nc_compute_dtype(op, a->dtype);
    if (nc_op_is_predicate(op) || !int_exact || dt != out->dtype || a->dtype != dt || overlaps(out, a, &x)) {
        netcl_tensor *r = NULL;
        netcl_status st = nc_fwd_binary_scalar(&r, op, a, s, reversed);
        return copy_result(out, st, r);
    }
    atomic_fetch_add(&out->storage->version, 1);
    if (netcl_tensor_numel(out) == 0) return NETCL_OK;
    netcl_status st = nc_dev(out)->backend->elementwise.binary(nc_dev(out), op, &o, &x, NULL, s, reversed);
    if (st != NETCL_OK) nc_error_prefix("%s_: ", name);
    return st;
}

netcl_status nc_fwd_unary_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, double p1, double p2)
{
    nc_unary_params(op, &p1, &p2);
    const char *name = netcl_op_name(op);
    NC_TRY(nc_same_device(name, out, a));
    NC_TRY(check_shape(name, out, a->ndim, a->sizes));
    nc_desc o, x;
    nc_desc_of(&o, out);
    nc_desc_of(&x, a);
    netcl_dtype dt = nc_compute_dtype(op, a->dtype);
    if (dt != out->dtype || a->dtype != dt || overlaps(out, a, &x)) {
        netcl_tensor *r = NULL;
        netcl_status st = nc_fwd_unary(&r, op, a, p1, p2);
        return copy_result(out, st, r);
    }
    atomic_fetch_add(&out->storage->version, 1);
    if (netcl_tensor_numel(out) == 0) return NETCL_OK;
    netcl_status st = nc_dev(out)->backend->elementwise.unary(nc_dev(out), op, &o, &x, p1, p2);
    if (st != NETCL_OK) nc_error_prefix("%s_: ", name);
    return st;
}
