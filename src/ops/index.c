/* index.c — forward ops of the index family: cat/stack (strided copies into
 * narrowed views of one output: no kernel of their own), gather and scatter
 * along a dim (one backend call each), nonzero (on the host). Shapes, dtypes
 * and devices are checked here; index values are checked by the backends
 * while they run. */
#include "ops/ops.h"
#include <stdlib.h>
#include <string.h>

netcl_status nc_check_index(const char *op, const netcl_tensor *idx, int base)
{
    if (idx->dtype != NETCL_DTYPE_INT64 && idx->dtype != NETCL_DTYPE_INT32)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the index must be an int64 or int32 tensor, got %s", op, nc_describe(idx));
    if (base != 0 && base != 1) return nc_fail(NETCL_ERR_ARGUMENT, "%s: index_base must be 0 or 1, got %d", op, base);
    return NETCL_OK;
}

static netcl_status check_dim(const char *op, const netcl_tensor *t, int dim, int limit)
{
    if (dim < 0 || dim >= limit)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d out of range for %s (valid 0..%d, 0-based in C)", op, dim,
                       nc_describe(t), limit - 1);
    return NETCL_OK;
}

static void desc_narrow(nc_desc *d, int dim, int64_t start, int64_t len)
{
    d->offset += start * d->strides[dim];
    d->sizes[dim] = len;
}

static void desc_drop(nc_desc *d, int dim)
{
    for (int i = dim; i + 1 < d->ndim; i++) { d->sizes[i] = d->sizes[i + 1]; d->strides[i] = d->strides[i + 1]; }
    d->ndim--;
}

/* ---- cat / stack --------------------------------------------------------------- */

/* Torch7 and PyTorch let cat skip 1-D empty tensors whatever the others' shape */
static int cat_skips(const netcl_tensor *t, int stack) { return !stack && t->ndim == 1 && t->sizes[0] == 0; }

/* Output shape and dtype of cat/stack, after checking every operand. */
static netcl_status cat_shape(const char *op, int n, netcl_tensor *const *ts, int dim, int stack, int *nd,
                              int64_t *sizes, netcl_dtype *dt)
{
    const netcl_tensor *ref = ts[0];
    for (int i = 0; i < n; i++)
        if (!cat_skips(ts[i], stack)) { ref = ts[i]; break; }
    *nd = ref->ndim + stack;
    if (ref->ndim == 0 && !stack)
        return nc_fail(NETCL_ERR_ARGUMENT, "cat: 0-dim tensors cannot be joined (%s); use stack", nc_describe(ref));
    NC_TRY(check_dim(op, ref, dim, *nd));
    *dt = ref->dtype;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const netcl_tensor *t = ts[i];
        NC_TRY(nc_same_device(op, ref, t));
        *dt = nc_dtype_promote(*dt, t->dtype);
        if (cat_skips(t, stack)) continue;
        int same = t->ndim == ref->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            if (t->sizes[d] != ref->sizes[d] && (stack || d != dim)) same = 0;
        if (!same)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: tensor %d is %s but tensor 1 is %s: %s", op, i + 1, nc_describe(t),
                           nc_describe(ref), stack ? "stack needs one shape" : "sizes must match except along the dim");
        total += stack ? 1 : t->sizes[dim];
    }
    /* ref's dims, with the joined dim's total (stack: a new dim of n) */
    for (int d = 0, s = 0; d < *nd; d++) {
        if (stack && d == dim) { sizes[d] = total; continue; }
        sizes[d] = d == dim ? total : ref->sizes[s];
        s++;
    }
    return NETCL_OK;
}

netcl_status nc_fwd_cat(netcl_tensor **out, int n, netcl_tensor *const *ts, int dim, int stack)
{
    const char *op = stack ? "stack" : "cat";
    *out = NULL;
    if (n < 1 || !ts) return nc_fail(NETCL_ERR_ARGUMENT, "%s: needs at least one tensor, got %d", op, n);
    for (int i = 0; i < n; i++)
        if (!ts[i]) return nc_fail(NETCL_ERR_ARGUMENT, "%s: tensor %d is NULL", op, i + 1);
    int nd;
    int64_t sizes[NC_MAX_DIMS];
    netcl_dtype dt = ts[0]->dtype;
    if (ts[0]->ndim + stack > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "stack: %s already has %d dims", nc_describe(ts[0]), NC_MAX_DIMS);
    NC_TRY(cat_shape(op, n, ts, dim, stack, &nd, sizes, &dt));
    netcl_device *dev = nc_dev(ts[0]);
    NC_TRY(nc_tensor_new(out, dev, dt, nd, sizes));
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        const netcl_tensor *t = ts[i];
        if (cat_skips(t, stack)) continue;
        int64_t len = stack ? 1 : t->sizes[dim];
        if (len > 0 && netcl_tensor_numel(t) > 0) {
            nc_desc o, s;
            nc_desc_of(&o, *out);
            nc_desc_of(&s, t);
            desc_narrow(&o, dim, pos, len);
            if (stack) desc_drop(&o, dim);
            netcl_status st = dev->backend->elementwise.copy(dev, &o, &s);
            if (st != NETCL_OK) {
                netcl_tensor_release(*out);
                *out = NULL;
                nc_error_prefix("%s: ", op);
                return st;
            }
        }
        pos += len;
    }
    return NETCL_OK;
}

/* ---- gather / scatter ----------------------------------------------------------- */

netcl_status nc_fwd_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, int base)
{
    *out = NULL;
    NC_TRY(nc_same_device("gather", a, idx));
    NC_TRY(nc_check_index("gather", idx, base));
    if (a->ndim == 0 || idx->ndim != a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "gather: the index needs the input's number of dims (at least 1): input %s, index %s",
                       nc_describe(a), nc_describe(idx));
    NC_TRY(check_dim("gather", a, dim, a->ndim));
    for (int d = 0; d < a->ndim; d++)
        if (d != dim && idx->sizes[d] > a->sizes[d])
            return nc_fail(NETCL_ERR_ARGUMENT, "gather: index %s is larger than input %s in dim %d (only dim %d may differ)",
                           nc_describe(idx), nc_describe(a), d + 1, dim + 1);
    NC_TRY(nc_tensor_new(out, nc_dev(a), a->dtype, idx->ndim, idx->sizes));
    if (netcl_tensor_numel(idx) == 0) return NETCL_OK;
    nc_desc o, x, i;
    nc_desc_of(&o, *out);
    nc_desc_of(&x, a);
    nc_desc_of(&i, idx);
    netcl_status st = nc_dev(a)->backend->index.gather(nc_dev(a), &o, &x, &i, dim, base);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

static netcl_status scatter_checks(const char *op, const netcl_tensor *a, int dim, const netcl_tensor *idx,
                                   const netcl_tensor *src, int base)
{
    NC_TRY(nc_same_device(op, a, idx));
    NC_TRY(nc_same_device(op, a, src));
    NC_TRY(nc_check_index(op, idx, base));
    if (a->ndim == 0 || idx->ndim != a->ndim || src->ndim != a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: input %s, index %s and source %s need one number of dims (at least 1)", op,
                       nc_describe(a), nc_describe(idx), nc_describe(src));
    NC_TRY(check_dim(op, a, dim, a->ndim));
    for (int d = 0; d < a->ndim; d++) {
        if (idx->sizes[d] > src->sizes[d])
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: index %s is larger than source %s in dim %d", op, nc_describe(idx),
                           nc_describe(src), d + 1);
        if (d != dim && idx->sizes[d] > a->sizes[d])
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: index %s is larger than input %s in dim %d (only dim %d may differ)", op,
                           nc_describe(idx), nc_describe(a), d + 1, dim + 1);
    }
    return NETCL_OK;
}

/* backends accumulate in float32/float64/int32/int64 only */
static netcl_dtype acc_dtype(netcl_dtype dt)
{
    if (dt == NETCL_DTYPE_FLOAT16 || dt == NETCL_DTYPE_BFLOAT16) return NETCL_DTYPE_FLOAT32;
    if (dt == NETCL_DTYPE_UINT8 || dt == NETCL_DTYPE_BOOL) return NETCL_DTYPE_INT32;
    return dt;
}

/* The backend call into out (already checked, of an accumulating dtype);
 * src is cast to out's dtype, and src or idx sharing out's storage are
 * copied first so no element is read after it was written. */
static netcl_status scatter_run(netcl_tensor *out, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base)
{
    if (netcl_tensor_numel(idx) == 0) return NETCL_OK;
    netcl_tensor *s = NULL, *ix = NULL;
    netcl_status st = NETCL_OK;
    if (src->dtype != out->dtype || src->storage == out->storage) st = nc_fwd_tensor_cast(&s, src, out->dtype);
    if (st == NETCL_OK && idx->storage == out->storage) st = nc_fwd_tensor_cast(&ix, idx, idx->dtype);
    if (st == NETCL_OK) {
        nc_desc o, i, x;
        nc_desc_of(&o, out);
        nc_desc_of(&i, ix ? ix : idx);
        nc_desc_of(&x, s ? s : src);
        memcpy(x.sizes, idx->sizes, sizeof x.sizes);   /* the leading box of src */
        st = nc_dev(out)->backend->index.scatter(nc_dev(out), &o, &i, &x, dim, base, acc);
    }
    netcl_tensor_release(s);
    netcl_tensor_release(ix);
    return st;
}

netcl_status nc_fwd_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base)
{
    const char *op = acc ? "scatter_add" : "scatter";
    *out = NULL;
    NC_TRY(scatter_checks(op, a, dim, idx, src, base));
    netcl_dtype dt = acc ? acc_dtype(a->dtype) : a->dtype;
    netcl_tensor *r;
    NC_TRY(nc_fwd_tensor_cast(&r, a, dt));   /* a fresh contiguous copy */
    netcl_status st = scatter_run(r, dim, idx, src, acc, base);
    if (st == NETCL_OK && dt != a->dtype) {
        netcl_tensor *back;
        st = nc_fwd_tensor_cast(&back, r, a->dtype);
        netcl_tensor_release(r);
        r = st == NETCL_OK ? back : NULL;
    }
    if (st != NETCL_OK) { netcl_tensor_release(r); return st; }
    *out = r;
    return NETCL_OK;
}

netcl_status nc_fwd_scatter_into(netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base)
{
    const char *op = acc ? "scatter_add_" : "scatter_";
    NC_TRY(scatter_checks(op, a, dim, idx, src, base));
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] == 0 && a->sizes[d] > 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: %s has elements that share memory (an expanded view); clone() it first",
                           op, nc_describe(a));
    atomic_fetch_add(&a->storage->version, 1);
    netcl_dtype dt = acc ? acc_dtype(a->dtype) : a->dtype;
    if (dt == a->dtype) return scatter_run(a, dim, idx, src, acc, base);
    netcl_tensor *wide;
    NC_TRY(nc_fwd_tensor_cast(&wide, a, dt));
    netcl_status st = scatter_run(wide, dim, idx, src, acc, base);
    if (st == NETCL_OK) st = nc_fwd_copy_into(a, wide);
    netcl_tensor_release(wide);
    return st;
}

/* ---- nonzero (host) --------------------------------------------------------------- */

static int is_nonzero(const void *buf, netcl_dtype dt, int64_t i)
{
    if (dt == NETCL_DTYPE_BOOL || dt == NETCL_DTYPE_UINT8) return ((const uint8_t *)buf)[i] != 0;
    return nc_load_double(buf, dt, i) != 0;   /* NaN counts, -0.0 does not */
}

netcl_status nc_fwd_nonzero(netcl_tensor **out, netcl_tensor *a)
{
    *out = NULL;
    int64_t n = netcl_tensor_numel(a), es = netcl_dtype_size(a->dtype), count = 0;
    void *buf = malloc((size_t)(n ? n : 1) * (size_t)es);
    if (!buf) return nc_fail(NETCL_ERR_OOM, "nonzero: out of host memory reading %s", nc_describe(a));
    netcl_status st = netcl_tensor_to_host(a, buf, n * es);
    for (int64_t i = 0; st == NETCL_OK && i < n; i++) count += is_nonzero(buf, a->dtype, i);
    int64_t *coords = st == NETCL_OK ? malloc((size_t)(count * a->ndim + 1) * sizeof(int64_t)) : NULL;
    if (st == NETCL_OK && !coords) st = nc_fail(NETCL_ERR_OOM, "nonzero: out of host memory for %lld coordinates", (long long)count);
    if (st == NETCL_OK) {
        int64_t pos[NC_MAX_DIMS] = {0}, k = 0;
        for (int64_t i = 0; i < n; i++) {
            if (is_nonzero(buf, a->dtype, i)) { memcpy(coords + k, pos, sizeof(int64_t) * (size_t)a->ndim); k += a->ndim; }
            for (int d = a->ndim - 1; d >= 0 && ++pos[d] == a->sizes[d]; d--) pos[d] = 0;
        }
        int64_t shape[2] = {count, a->ndim};
        st = netcl_tensor_from_host(out, nc_dev(a), NETCL_DTYPE_INT64, 2, shape, coords);
    }
    free(coords);
    free(buf);
    if (st != NETCL_OK) nc_error_prefix("nonzero: ");
    return st;
}
