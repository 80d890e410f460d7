/* tensor.c — tensor handles: refcounted views (sizes, strides, offset, all
 * in elements) over a refcounted storage; metadata getters and the
 * human-readable descriptions every error message uses. */
#include "core/core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Released tensor structs wait in a per-thread list for the next tensor:
 * small ops create and drop one per call, and malloc/free showed up in
 * their profile. */
#if defined(__SANITIZE_ADDRESS__)   /* ASan must see every free to catch a use after it */
#define SPARE_TENSORS 0
#else
#define SPARE_TENSORS 256
#endif
static _Thread_local netcl_tensor *spare[SPARE_TENSORS + 1];
static _Thread_local int nspare;

static netcl_tensor *tensor_alloc(void)
{
    if (nspare > 0) {
        netcl_tensor *t = spare[--nspare];
        memset(t, 0, sizeof *t);
        return t;
    }
    return calloc(1, sizeof(netcl_tensor));
}

static void tensor_free(netcl_tensor *t)
{
    if (nspare < SPARE_TENSORS) spare[nspare++] = t;
    else free(t);
}

/* A shape with a zero dim passes check_shape whatever its other sizes, so
 * the running product saturates instead of overflowing (a stride of an
 * empty tensor is never used to address memory). */
static void contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        if (__builtin_mul_overflow(s, sizes[i] > 1 ? sizes[i] : 1, &s)) s = INT64_MAX;
    }
}

/* Validates a shape: 0..8 dims, sizes >= 0, total bytes below 2^62. */
static netcl_status check_shape(const char *op, netcl_dtype dt, int ndim, const int64_t *sizes)
{
    if ((unsigned)dt >= NETCL_DTYPE_COUNT) return nc_fail(NETCL_ERR_ARGUMENT, "%s: invalid dtype %d", op, (int)dt);
    if (ndim < 0 || ndim > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: %d dims requested, netcl supports 0 to %d", op, ndim, NC_MAX_DIMS);
    double total = netcl_dtype_size(dt);
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] < 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: negative size %lld in dim %d of shape %s", op,
                           (long long)sizes[i], i + 1, nc_shape_str(ndim, sizes));
        total *= (double)sizes[i];
    }
    if (total > 4.0e18)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: shape %s of %s is too large (%.3g bytes)", op,
                       nc_shape_str(ndim, sizes), netcl_dtype_name(dt), total);
    return NETCL_OK;
}

/* pinned_for: NULL for ordinary memory of dev, else pinned memory (dev the cpu) */
static netcl_status tensor_new(netcl_tensor **out, netcl_device *dev, netcl_device *pinned_for, netcl_dtype dtype, int ndim,
                               const int64_t *sizes)
{
    *out = NULL;
    if (!dev) return nc_fail(NETCL_ERR_DEVICE, "tensor: no device given");
    NC_TRY(check_shape("tensor", dtype, ndim, sizes));
    netcl_tensor *t = tensor_alloc();
    if (!t) return nc_fail(NETCL_ERR_OOM, "tensor: out of host memory");
    size_t nbytes = (size_t)nc_numel(ndim, sizes) * (size_t)netcl_dtype_size(dtype);
    netcl_status st = pinned_for ? nc_storage_new_pinned(&t->storage, dev, pinned_for, nbytes)
                                 : nc_storage_new(&t->storage, dev, nbytes);
    if (st != NETCL_OK) { tensor_free(t); return st; }
    atomic_init(&t->refcount, 1);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    contiguous_strides(ndim, sizes, t->strides);
    *out = t;
    return NETCL_OK;
}

netcl_status nc_tensor_new(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes)
{
    return tensor_new(out, dev, NULL, dtype, ndim, sizes);
}

netcl_status netcl_tensor_empty_pinned(netcl_tensor **out, netcl_device *for_dev, netcl_dtype dtype, int ndim,
                                       const int64_t *sizes)
{
    netcl_device *cpu = netcl_device_at(0);
    if (!for_dev) return nc_fail(NETCL_ERR_DEVICE, "empty_pinned: no device given");
    return tensor_new(out, cpu, for_dev == cpu ? NULL : for_dev, dtype, ndim, sizes);
}

int netcl_tensor_is_pinned(const netcl_tensor *t) { return t->storage->pinned_by != NULL; }

netcl_status nc_tensor_view_of(netcl_tensor **out, const netcl_tensor *src, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset)
{
    *out = NULL;
    netcl_tensor *t = tensor_alloc();
    if (!t) return nc_fail(NETCL_ERR_OOM, "view: out of host memory");
    atomic_init(&t->refcount, 1);
    t->storage = src->storage;
    nc_storage_retain(t->storage);
    t->dtype = src->dtype;
    t->ndim = ndim;
    t->offset = offset;
    memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    *out = t;
    return NETCL_OK;
}

void nc_desc_of(nc_desc *d, const netcl_tensor *t)
{
    if (t->storage->pending) nc_storage_settle(t->storage);   /* every kernel operand passes here */
    d->buf = t->storage->buf;
    d->dtype = t->dtype;
    d->ndim = t->ndim;
    d->offset = t->offset;
    memcpy(d->sizes, t->sizes, sizeof(int64_t) * NC_MAX_DIMS);
    memcpy(d->strides, t->strides, sizeof(int64_t) * NC_MAX_DIMS);
}

void netcl_tensor_retain(netcl_tensor *t) { if (t) atomic_fetch_add(&t->refcount, 1); }

static void (*_Atomic autograd_release)(netcl_tensor *t);
void nc_tensor_set_autograd_release(void (*release)(netcl_tensor *t)) { atomic_store(&autograd_release, release); }

void netcl_tensor_release(netcl_tensor *t)
{
    if (!t || atomic_fetch_sub(&t->refcount, 1) != 1) return;
    netcl_tensor_release(t->grad);
    if (t->grad_fn || t->hooks) atomic_load(&autograd_release)(t);
    nc_storage_release(t->storage);
    tensor_free(t);
}

int netcl_tensor_ndim(const netcl_tensor *t) { return t->ndim; }
int64_t netcl_tensor_size(const netcl_tensor *t, int d) { return d >= 0 && d < t->ndim ? t->sizes[d] : -1; }
int64_t netcl_tensor_stride(const netcl_tensor *t, int d) { return d >= 0 && d < t->ndim ? t->strides[d] : 0; }
int64_t netcl_tensor_offset(const netcl_tensor *t) { return t->offset; }

netcl_status netcl_tensor_storage_range(netcl_tensor **out, netcl_tensor *t, int64_t offset, int64_t numel)
{
    *out = NULL;
    size_t es = (size_t)netcl_dtype_size(t->dtype);
    if (offset < 0 || numel < 0 || (size_t)(offset + numel) * es > t->storage->nbytes)
        return nc_fail(NETCL_ERR_ARGUMENT, "storage_range: elements %lld..%lld are outside the storage of %s (%zu bytes)",
                       (long long)offset, (long long)(offset + numel), nc_describe(t), t->storage->nbytes);
    int64_t stride = 1;
    return nc_tensor_view_of(out, t, 1, &numel, &stride, offset);
}
int64_t netcl_tensor_numel(const netcl_tensor *t) { return nc_numel(t->ndim, t->sizes); }
netcl_dtype netcl_tensor_dtype(const netcl_tensor *t) { return t->dtype; }
netcl_device *netcl_tensor_device(const netcl_tensor *t) { return t->storage->dev; }
int netcl_tensor_same_storage(const netcl_tensor *a, const netcl_tensor *b) { return a->storage == b->storage; }

int netcl_tensor_is_contiguous(const netcl_tensor *t) { return nc_is_contiguous(t->ndim, t->sizes, t->strides); }

int netcl_tensor_version(const netcl_tensor *t) { return atomic_load(&t->storage->version); }

int netcl_tensor_is_whole(const netcl_tensor *t)
{
    return t->offset == 0 && nc_is_contiguous(t->ndim, t->sizes, t->strides) &&
           (size_t)nc_numel(t->ndim, t->sizes) * (size_t)netcl_dtype_size(t->dtype) == t->storage->nbytes;
}

const char *nc_describe(const netcl_tensor *t)
{
    char *b = nc_msg_scratch();
    snprintf(b, NC_MSG_SCRATCH, "%s%s on %s", netcl_dtype_name(t->dtype), nc_shape_str(t->ndim, t->sizes), t->storage->dev->name);
    return b;
}

void netcl_tensor_describe(const netcl_tensor *t, char *buf, int buflen)
{
    if (buflen <= 0) return;
    snprintf(buf, (size_t)buflen, "%s", nc_describe(t));
}
