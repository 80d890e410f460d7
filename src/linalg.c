/* linalg.c — matmul with numpy/PyTorch semantics: 1-D·1-D dot, matrix
 * products, and batched products with broadcast batch dims, all lowered to
 * the backend's [B,M,K] x [B,K,N] entry. */
#include "ops.h"
#include <string.h>

/* Views t (batch dims + 2 matrix dims) as [B, rows, cols] after expanding
 * its batch dims to `bshape`; copies only when no strided view fits. */
static netcl_status as_batched(netcl_tensor **out, netcl_tensor *t, int bndim, const int64_t *bshape)
{
    int64_t want[NC_MAX_DIMS];
    memcpy(want, bshape, sizeof(int64_t) * (size_t)bndim);
    want[bndim] = t->sizes[t->ndim - 2];
    want[bndim + 1] = t->sizes[t->ndim - 1];
    netcl_tensor *e;
    NC_TRY(nc_fwd_tensor_expand(&e, t, bndim + 2, want));
    int64_t b = nc_numel(bndim, bshape), shape3[3] = {b, want[bndim], want[bndim + 1]};
    /* a batch with a single broadcast dim stays a stride-0 view */
    netcl_status st = nc_fwd_tensor_view(out, e, 3, shape3);
    if (st != NETCL_OK) st = nc_fwd_tensor_reshape(out, e, 3, shape3);
    netcl_tensor_release(e);
    return st;
}

static netcl_status matmul_nd(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    /* a [..., M, K], b [..., K, N] (both >= 2-D) */
    int64_t M = a->sizes[a->ndim - 2], K = a->sizes[a->ndim - 1], N = b->sizes[b->ndim - 1];
    if (b->sizes[b->ndim - 2] != K)
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: inner sizes differ: %s @ %s (%lld vs %lld)",
                       nc_describe(a), nc_describe(b), (long long)K, (long long)b->sizes[b->ndim - 2]);
    int an = a->ndim - 2, bn = b->ndim - 2, bndim = an > bn ? an : bn;
    int64_t bshape[NC_MAX_DIMS];
    for (int i = 0; i < bndim; i++) {
        int ia = i - (bndim - an), ib = i - (bndim - bn);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "matmul: batch dims do not broadcast: %s @ %s", nc_describe(a), nc_describe(b));
        bshape[i] = sa == 1 ? sb : sa;
    }
    netcl_tensor *a3 = NULL, *b3 = NULL, *o3 = NULL;
    netcl_status st = as_batched(&a3, a, bndim, bshape);
    if (st == NETCL_OK) st = as_batched(&b3, b, bndim, bshape);
    int64_t oshape[NC_MAX_DIMS], o3shape[3] = {nc_numel(bndim, bshape), M, N};
    memcpy(oshape, bshape, sizeof(int64_t) * (size_t)bndim);
    oshape[bndim] = M;
    oshape[bndim + 1] = N;
    if (st == NETCL_OK) st = nc_tensor_new(&o3, nc_dev(a), a->dtype, 3, o3shape);
    if (st == NETCL_OK && nc_numel(3, o3shape) > 0) {
        nc_desc o, x, y;
        nc_desc_of(&o, o3);
        nc_desc_of(&x, a3);
        nc_desc_of(&y, b3);
        if (K == 0) st = nc_dev(a)->backend->fill(nc_dev(a), &o, 0);
        else st = nc_dev(a)->backend->matmul(nc_dev(a), &o, &x, &y);
    }
    if (st == NETCL_OK) st = nc_fwd_tensor_view(out, o3, bndim + 2, oshape);
    netcl_tensor_release(a3);
    netcl_tensor_release(b3);
    netcl_tensor_release(o3);
    return st;
}

netcl_status nc_fwd_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    *out = NULL;
    if (nc_dev(a) != nc_dev(b))
        return nc_fail(NETCL_ERR_DEVICE, "matmul: tensors on different devices: %s and %s", nc_describe(a), nc_describe(b));
    if (a->ndim == 0 || b->ndim == 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: both arguments need at least 1 dim: %s @ %s", nc_describe(a), nc_describe(b));
    if (a->dtype != b->dtype || !nc_dtype_is_float(a->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: needs two tensors of one floating dtype: %s @ %s (cast with :float())",
                       nc_describe(a), nc_describe(b));
    /* 1-D operands become matrices, and the added dim is dropped after */
    netcl_tensor *a2 = a, *b2 = b, *r = NULL;
    netcl_status st = NETCL_OK;
    if (a->ndim == 1) st = nc_fwd_tensor_unsqueeze(&a2, a, 0);
    if (st == NETCL_OK && b->ndim == 1) st = nc_fwd_tensor_unsqueeze(&b2, b, 1);
    if (st == NETCL_OK) st = matmul_nd(&r, a2, b2);
    if (st == NETCL_OK) {
        int drop_row = a->ndim == 1, drop_col = b->ndim == 1;
        int64_t shape[NC_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < r->ndim; i++) {
            if (drop_row && i == r->ndim - 2) continue;
            if (drop_col && i == r->ndim - 1) continue;
            shape[n++] = r->sizes[i];
        }
        st = nc_fwd_tensor_view(out, r, n, shape);
    }
    if (a2 != a) netcl_tensor_release(a2);
    if (b2 != b) netcl_tensor_release(b2);
    netcl_tensor_release(r);
    if (st != NETCL_OK && strncmp(netcl_last_error(), "matmul", 6) != 0) nc_error_prefix("matmul: ");
    return st;
}
