/* views.c — views that share storage: view/reshape, transpose, permute,
 * narrow, select, slice, expand, squeeze, unsqueeze. Only geometry changes;
 * reshape alone may copy (when no stride pattern fits). */
#include "ops/ops.h"
#include <string.h>

static netcl_status check_dim(const char *op, const netcl_tensor *t, int dim, int ndim_limit)
{
    if (dim < 0 || dim >= ndim_limit)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d out of range for %s (valid 0..%d, 0-based in C)",
                       op, dim, nc_describe(t), ndim_limit - 1);
    return NETCL_OK;
}

/* Resolves one -1 and checks the element count. */
static netcl_status infer_shape(const char *op, const netcl_tensor *t, int ndim, const int64_t *in, int64_t *outs)
{
    if (ndim < 0 || ndim > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: %d dims requested for %s (at most %d)", op, ndim, nc_describe(t), NC_MAX_DIMS);
    int64_t known = 1, numel = netcl_tensor_numel(t);
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        outs[i] = in[i];
        if (in[i] == -1 && infer < 0) infer = i;
        else if (in[i] < 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: invalid size %lld in shape %s for %s", op,
                           (long long)in[i], nc_shape_str(ndim, in), nc_describe(t));
        else known *= in[i];
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: shape %s is invalid for %s (%lld elements)", op,
                           nc_shape_str(ndim, in), nc_describe(t), (long long)numel);
        outs[infer] = numel / known;
    } else if (known != numel) {
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: shape %s is invalid for %s (%lld elements)", op,
                       nc_shape_str(ndim, in), nc_describe(t), (long long)numel);
    }
    return NETCL_OK;
}

/* Strides for viewing t as `sizes` without a copy; 0 when impossible.
 * Walks t's dims from the back in chunks whose elements are laid out
 * contiguously relative to each other, and spreads each chunk over the
 * new dims of the same element count. */
static int view_strides(const netcl_tensor *t, int ndim, const int64_t *sizes, int64_t *strides)
{
    if (netcl_tensor_numel(t) == 0 || t->ndim == 0) {
        int64_t s = 1;
        for (int i = ndim - 1; i >= 0; i--) { strides[i] = s; s *= sizes[i] ? sizes[i] : 1; }
        return 1;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tensor_numel *= t->sizes[d];
        if (d == 0 || (t->sizes[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= sizes[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (d > 0) { chunk_base = t->strides[d - 1]; tensor_numel = 1; view_numel = 1; }
        }
    }
    return view_d == -1;
}

netcl_status nc_fwd_tensor_view(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{
    int64_t shape[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    *out = NULL;
    NC_TRY(infer_shape("view", t, ndim, sizes, shape));
    if (!view_strides(t, ndim, shape, strides))
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "view: shape %s is incompatible with the strides of %s (non-contiguous); use reshape or contiguous() first",
                       nc_shape_str(ndim, shape), nc_describe(t));
    return nc_tensor_view_of(out, t, ndim, shape, strides, t->offset);
}

netcl_status nc_fwd_tensor_reshape(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{
    int64_t shape[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    *out = NULL;
    NC_TRY(infer_shape("reshape", t, ndim, sizes, shape));
    if (view_strides(t, ndim, shape, strides)) return nc_tensor_view_of(out, t, ndim, shape, strides, t->offset);
    netcl_tensor *c;
    NC_TRY(nc_fwd_tensor_contiguous(&c, t));
    netcl_status st = nc_fwd_tensor_view(out, c, ndim, shape);
    netcl_tensor_release(c);
    return st;
}

netcl_status nc_fwd_tensor_transpose(netcl_tensor **out, netcl_tensor *t, int d0, int d1)
{
    *out = NULL;
    NC_TRY(check_dim("transpose", t, d0, t->ndim));
    NC_TRY(check_dim("transpose", t, d1, t->ndim));
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof sizes);
    memcpy(strides, t->strides, sizeof strides);
    sizes[d0] = t->sizes[d1]; sizes[d1] = t->sizes[d0];
    strides[d0] = t->strides[d1]; strides[d1] = t->strides[d0];
    return nc_tensor_view_of(out, t, t->ndim, sizes, strides, t->offset);
}

netcl_status nc_fwd_tensor_permute(netcl_tensor **out, netcl_tensor *t, int ndim, const int *dims)
{
    *out = NULL;
    if (ndim != t->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "permute: %d dims given for %s", ndim, nc_describe(t));
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    int seen[NC_MAX_DIMS] = {0};
    for (int i = 0; i < ndim; i++) {
        NC_TRY(check_dim("permute", t, dims[i], t->ndim));
        if (seen[dims[i]]++)
            return nc_fail(NETCL_ERR_ARGUMENT, "permute: dim %d repeated for %s", dims[i] + 1, nc_describe(t));
        sizes[i] = t->sizes[dims[i]];
        strides[i] = t->strides[dims[i]];
    }
    return nc_tensor_view_of(out, t, ndim, sizes, strides, t->offset);
}

netcl_status nc_fwd_tensor_slice(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t stop, int64_t step)
{
    *out = NULL;
    NC_TRY(check_dim("slice", t, dim, t->ndim));
    if (step <= 0) return nc_fail(NETCL_ERR_ARGUMENT, "slice: step %lld must be positive for %s", (long long)step, nc_describe(t));
    if (start < 0 || stop > t->sizes[dim] || start > stop)
        return nc_fail(NETCL_ERR_ARGUMENT, "slice: range [%lld, %lld) out of bounds for dim %d of %s",
                       (long long)start, (long long)stop, dim + 1, nc_describe(t));
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof sizes);
    memcpy(strides, t->strides, sizeof strides);
    sizes[dim] = (stop - start + step - 1) / step;
    strides[dim] = t->strides[dim] * step;
    return nc_tensor_view_of(out, t, t->ndim, sizes, strides, t->offset + start * t->strides[dim]);
}

netcl_status nc_fwd_tensor_narrow(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t length)
{
    *out = NULL;
    NC_TRY(check_dim("narrow", t, dim, t->ndim));
    if (start < 0 || length < 0 || start + length > t->sizes[dim])
        return nc_fail(NETCL_ERR_ARGUMENT, "narrow: start %lld (0-based) length %lld out of range for dim %d of %s",
                       (long long)start, (long long)length, dim + 1, nc_describe(t));
    return nc_fwd_tensor_slice(out, t, dim, start, start + length, 1);
}

netcl_status nc_fwd_tensor_select(netcl_tensor **out, netcl_tensor *t, int dim, int64_t index)
{
    *out = NULL;
    NC_TRY(check_dim("select", t, dim, t->ndim));
    if (index < 0 || index >= t->sizes[dim])
        return nc_fail(NETCL_ERR_ARGUMENT, "select: index %lld (0-based) out of range for dim %d of %s (size %lld)",
                       (long long)index, dim + 1, nc_describe(t), (long long)t->sizes[dim]);
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != dim) { sizes[n] = t->sizes[i]; strides[n] = t->strides[i]; n++; }
    return nc_tensor_view_of(out, t, n, sizes, strides, t->offset + index * t->strides[dim]);
}

netcl_status nc_fwd_tensor_expand(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *want)
{
    *out = NULL;
    if (ndim < t->ndim || ndim > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "expand: cannot expand %s to %d dims %s", nc_describe(t), ndim, nc_shape_str(ndim, want));
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int src = i - lead;
        int64_t have = src >= 0 ? t->sizes[src] : 1, w = want[i];
        if (w == -1) {
            if (src < 0) return nc_fail(NETCL_ERR_ARGUMENT, "expand: -1 not allowed for new leading dim %d of %s", i + 1, nc_shape_str(ndim, want));
            w = have;
        }
        if (w < 0 || (have != w && have != 1))
            return nc_fail(NETCL_ERR_ARGUMENT, "expand: cannot expand %s to %s (dim %d: %lld vs %lld)",
                           nc_describe(t), nc_shape_str(ndim, want), i + 1, (long long)have, (long long)w);
        sizes[i] = w;
        strides[i] = (src >= 0 && have == w) ? t->strides[src] : 0;
    }
    return nc_tensor_view_of(out, t, ndim, sizes, strides, t->offset);
}

netcl_status nc_fwd_tensor_squeeze(netcl_tensor **out, netcl_tensor *t, int dim)
{
    *out = NULL;
    if (dim >= t->ndim) return check_dim("squeeze", t, dim, t->ndim);
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        int drop = t->sizes[i] == 1 && (dim < 0 || dim == i);
        if (!drop) { sizes[n] = t->sizes[i]; strides[n] = t->strides[i]; n++; }
    }
    return nc_tensor_view_of(out, t, n, sizes, strides, t->offset);
}

netcl_status nc_fwd_tensor_unsqueeze(netcl_tensor **out, netcl_tensor *t, int dim)
{
    *out = NULL;
    if (t->ndim >= NC_MAX_DIMS) return nc_fail(NETCL_ERR_ARGUMENT, "unsqueeze: %s already has %d dims", nc_describe(t), NC_MAX_DIMS);
    NC_TRY(check_dim("unsqueeze", t, dim, t->ndim + 1));
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    for (int i = 0, s = 0; i <= t->ndim; i++) {
        if (i == dim) {
            sizes[i] = 1;
            strides[i] = s < t->ndim ? t->strides[s] * t->sizes[s] : 1;
        } else {
            sizes[i] = t->sizes[s];
            strides[i] = t->strides[s];
            s++;
        }
    }
    return nc_tensor_view_of(out, t, t->ndim + 1, sizes, strides, t->offset);
}
