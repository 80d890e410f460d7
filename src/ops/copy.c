/* copy.c — moving elements: between host and devices, between dtypes,
 * into contiguous layout, strided copy/fill/set_item into existing tensors,
 * and padding (a copy into the interior of a filled result).
 * Cross-device moves go through contiguous buffers; a cpu tensor is its own
 * staging area, kept alive by the backend until an async write completes. */
#include "ops/ops.h"
#include <stdlib.h>
#include <string.h>

static netcl_device *cpu_device(void)
{
    netcl_device *cpu = NULL;
    netcl_device_get(&cpu, "cpu");
    return cpu;
}

static size_t byte_offset(const netcl_tensor *t) { return (size_t)t->offset * (size_t)netcl_dtype_size(t->dtype); }

/* out = new contiguous tensor of `dtype` with t's elements, on t's device */
static netcl_status cast_contiguous(netcl_tensor **out, const netcl_tensor *t, netcl_dtype dtype)
{
    NC_TRY(nc_tensor_new(out, nc_dev(t), dtype, t->ndim, t->sizes));
    if (netcl_tensor_numel(t) == 0) return NETCL_OK;
    nc_desc dst, src;
    nc_desc_of(&dst, *out);
    nc_desc_of(&src, t);
    netcl_status st = nc_dev(t)->backend->elementwise.copy(nc_dev(t), &dst, &src);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

netcl_status nc_fwd_tensor_contiguous(netcl_tensor **out, netcl_tensor *t)
{
    if (netcl_tensor_is_contiguous(t)) { netcl_tensor_retain(t); *out = t; return NETCL_OK; }
    netcl_status st = cast_contiguous(out, t, t->dtype);
    if (st != NETCL_OK) nc_error_prefix("contiguous %s: ", nc_describe(t));
    return st;
}

netcl_status nc_fwd_tensor_cast(netcl_tensor **out, const netcl_tensor *t, netcl_dtype dtype)
{
    *out = NULL;
    if ((unsigned)dtype >= NETCL_DTYPE_COUNT) return nc_fail(NETCL_ERR_ARGUMENT, "cast: invalid dtype %d for %s", (int)dtype, nc_describe(t));
    netcl_status st = cast_contiguous(out, t, dtype);
    if (st != NETCL_OK) nc_error_prefix("cast %s to %s: ", nc_describe(t), netcl_dtype_name(dtype));
    return st;
}

static void release_tensor(void *t) { netcl_tensor_release(t); }

/* dst (contiguous) <- src (contiguous, same dtype and numel), any devices */
static netcl_status move_bytes(netcl_tensor *dst, netcl_tensor *src)
{
    netcl_device *sd = nc_dev(src), *dd = nc_dev(dst);
    size_t n = (size_t)netcl_tensor_numel(src) * (size_t)netcl_dtype_size(src->dtype);
    if (n == 0) return NETCL_OK;
    nc_storage_settle(src->storage);
    nc_storage_settle(dst->storage);
    /* pinned memory of the destination's driver: an upload on its transfer
     * queue that overlaps the work already queued (settled on first use) */
    void *dbuf = dst->storage->buf, *sbuf = (char *)src->storage->buf + byte_offset(src);
    if (sd->type == NETCL_DEVICE_CPU && src->storage->pinned_by == dd && dd->backend->mem.write_async) {
        void *ev[2];
        netcl_tensor_retain(src);   /* released by the backend once the copy has read it */
        nc_keep keep = {src, release_tensor};
        NC_TRY(dd->backend->mem.write_async(dd, dbuf, byte_offset(dst), sbuf, n, &keep, ev));
        nc_storage_set_pending(src->storage, dd, ev[0]);
        nc_storage_set_pending(dst->storage, dd, ev[1]);
        return NETCL_OK;
    }
    if (sd->type == NETCL_DEVICE_CPU) {   /* a cpu tensor is its own staging area */
        void *ev = NULL;
        netcl_tensor_retain(src);
        nc_keep keep = {src, release_tensor};
        NC_TRY(dd->backend->mem.write(dd, dbuf, byte_offset(dst), sbuf, n, &keep, &ev));
        if (ev) nc_storage_set_pending(src->storage, dd, ev);
        return NETCL_OK;
    }
    if (dd->type == NETCL_DEVICE_CPU)
        return sd->backend->mem.read(sd, src->storage->buf, byte_offset(src), (char *)dst->storage->buf + byte_offset(dst), n);
    netcl_tensor *host;
    NC_TRY(nc_tensor_new(&host, cpu_device(), src->dtype, src->ndim, src->sizes));
    netcl_status st = move_bytes(host, src);
    if (st == NETCL_OK) st = move_bytes(dst, host);
    netcl_tensor_release(host);
    return st;
}

/* Whether src and dst are views of one storage with different geometry:
 * element by element, the copy could read what it already wrote. */
static int aliased(const netcl_tensor *dst, const netcl_tensor *src)
{
    if (dst->storage != src->storage) return 0;
    if (dst->offset != src->offset || dst->ndim != src->ndim) return 1;
    for (int i = 0; i < dst->ndim; i++)
        if (dst->sizes[i] != src->sizes[i] || (dst->sizes[i] > 1 && dst->strides[i] != src->strides[i])) return 1;
    return 0;
}

netcl_status nc_fwd_tensor_copy_(netcl_tensor *dst, const netcl_tensor *src)
{
    netcl_tensor *view = NULL, *tmp = NULL, *moved = NULL, *own = NULL;
    NC_TRY(nc_check_writable("copy_", dst));
    if (aliased(dst, src)) {   /* t:copy_(t:t()): read everything before writing */
        NC_TRY(nc_tensor_new(&own, nc_dev(src), src->dtype, src->ndim, src->sizes));
        netcl_status st = nc_fwd_tensor_copy_(own, src);
        if (st == NETCL_OK) st = nc_fwd_tensor_copy_(dst, own);
        netcl_tensor_release(own);
        return st;
    }
    nc_tensor_bump_version(dst);
    netcl_status st = nc_fwd_tensor_expand(&view, (netcl_tensor *)src, dst->ndim, dst->sizes);
    if (st != NETCL_OK) {
        return nc_fail(NETCL_ERR_ARGUMENT, "copy_: source %s cannot be broadcast to destination %s",
                       nc_describe(src), nc_describe(dst));
    }
    netcl_device *sd = nc_dev(src), *dd = nc_dev(dst);
    if (netcl_tensor_numel(dst) == 0) goto done;
    if (sd == dd) {
        nc_desc a, b;
        nc_desc_of(&a, dst);
        nc_desc_of(&b, view);
        st = dd->backend->elementwise.copy(dd, &a, &b);
        goto done;
    }
    /* different devices: contiguous in the destination dtype, move, then
     * scatter (a contiguous source of that dtype moves as it is, so pinned
     * memory reaches the backend's asynchronous path) */
    if (view->dtype == dst->dtype && netcl_tensor_is_contiguous(view)) { netcl_tensor_retain(view); tmp = view; }
    else if ((st = cast_contiguous(&tmp, view, dst->dtype)) != NETCL_OK) goto done;
    if (netcl_tensor_is_contiguous(dst)) { st = move_bytes(dst, tmp); goto done; }
    if ((st = nc_tensor_new(&moved, dd, dst->dtype, dst->ndim, dst->sizes)) != NETCL_OK) goto done;
    if ((st = move_bytes(moved, tmp)) != NETCL_OK) goto done;
    {
        nc_desc a, b;
        nc_desc_of(&a, dst);
        nc_desc_of(&b, moved);
        st = dd->backend->elementwise.copy(dd, &a, &b);
    }
done:
    netcl_tensor_release(view);
    netcl_tensor_release(tmp);
    netcl_tensor_release(moved);
    if (st != NETCL_OK) nc_error_prefix("copy_ %s <- %s: ", nc_describe(dst), nc_describe(src));
    return st;
}

netcl_status nc_fwd_tensor_fill_(netcl_tensor *dst, double value)
{
    nc_tensor_bump_version(dst);
    if (netcl_tensor_numel(dst) == 0) return NETCL_OK;
    nc_desc d;
    nc_desc_of(&d, dst);
    netcl_status st = nc_dev(dst)->backend->elementwise.fill(nc_dev(dst), &d, value);
    if (st != NETCL_OK) nc_error_prefix("fill_ %s: ", nc_describe(dst));
    return st;
}

netcl_status nc_fwd_tensor_to_device(netcl_tensor **out, const netcl_tensor *t, netcl_device *dev)
{
    *out = NULL;
    if (!dev) return nc_fail(NETCL_ERR_DEVICE, "to: no device given for %s", nc_describe(t));
    netcl_status st = nc_tensor_new(out, dev, t->dtype, t->ndim, t->sizes);
    if (st == NETCL_OK && (st = nc_fwd_tensor_copy_(*out, t)) != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    if (st != NETCL_OK) nc_error_prefix("to %s: ", dev->name);
    return st;
}

netcl_status netcl_tensor_to_host(const netcl_tensor *t, void *data, int64_t nbytes)
{
    NC_TRY(nc_capture_guard(nc_dev(t), "to_host"));
    int64_t need = netcl_tensor_numel(t) * netcl_dtype_size(t->dtype);
    if (nbytes < need)
        return nc_fail(NETCL_ERR_ARGUMENT, "to_host: buffer of %lld bytes is too small for %s (%lld bytes)",
                       (long long)nbytes, nc_describe(t), (long long)need);
    if (need == 0) return NETCL_OK;
    netcl_tensor *c;
    NC_TRY(nc_fwd_tensor_contiguous(&c, (netcl_tensor *)t));
    nc_storage_settle(c->storage);
    netcl_status st = nc_dev(c)->backend->mem.read(nc_dev(c), c->storage->buf, byte_offset(c), data, (size_t)need);
    netcl_tensor_release(c);
    if (st != NETCL_OK) nc_error_prefix("to_host %s: ", nc_describe(t));
    return st;
}

netcl_status netcl_tensor_to_doubles(const netcl_tensor *t, double *data, int64_t count)
{
    NC_TRY(nc_capture_guard(nc_dev(t), "to_doubles"));
    int64_t n = netcl_tensor_numel(t);
    if (count < n)
        return nc_fail(NETCL_ERR_ARGUMENT, "to_doubles: room for %lld values, %s has %lld", (long long)count, nc_describe(t), (long long)n);
    void *tmp = malloc((size_t)(n ? n : 1) * (size_t)netcl_dtype_size(t->dtype));
    if (!tmp) return nc_fail(NETCL_ERR_OOM, "to_doubles: out of host memory for %s", nc_describe(t));
    netcl_status st = netcl_tensor_to_host(t, tmp, n * netcl_dtype_size(t->dtype));
    for (int64_t i = 0; st == NETCL_OK && i < n; i++) data[i] = nc_load_double(tmp, t->dtype, i);
    free(tmp);
    return st;
}

static netcl_status element_offset(const char *op, const netcl_tensor *t, const int64_t *index, size_t *bytes)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        if (index[i] < 0 || index[i] >= t->sizes[i])
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: index %lld (0-based) out of range for dim %d of %s",
                           op, (long long)index[i], i + 1, nc_describe(t));
        off += index[i] * t->strides[i];
    }
    *bytes = (size_t)off * (size_t)netcl_dtype_size(t->dtype);
    return NETCL_OK;
}

netcl_status netcl_tensor_get_item(const netcl_tensor *t, const int64_t *index, double *value)
{
    NC_TRY(nc_capture_guard(nc_dev(t), "item"));
    size_t off;
    uint64_t raw = 0;
    NC_TRY(element_offset("item", t, index, &off));
    nc_storage_settle(t->storage);
    netcl_status st = nc_dev(t)->backend->mem.read(nc_dev(t), t->storage->buf, off, &raw, (size_t)netcl_dtype_size(t->dtype));
    if (st != NETCL_OK) { nc_error_prefix("item %s: ", nc_describe(t)); return st; }
    *value = nc_load_double(&raw, t->dtype, 0);
    return NETCL_OK;
}

netcl_status nc_fwd_tensor_set_item(netcl_tensor *t, const int64_t *index, double value)
{
    NC_TRY(nc_capture_guard(nc_dev(t), "set_item"));
    size_t off;
    uint64_t raw = 0;
    NC_TRY(element_offset("set_item", t, index, &off));
    nc_tensor_bump_version(t);
    nc_store_double(&raw, t->dtype, 0, value);
    nc_storage_settle(t->storage);
    netcl_status st = nc_dev(t)->backend->mem.write(nc_dev(t), t->storage->buf, off, &raw, (size_t)netcl_dtype_size(t->dtype), NULL, NULL);
    if (st != NETCL_OK) nc_error_prefix("set_item %s: ", nc_describe(t));
    return st;
}

/* ---- padding --------------------------------------------------------------- */

/* Interior region of a padded tensor: the view of `big` where the input
 * lands (dims with negative pads crop the input instead; see nc_fwd_pad). */
static netcl_status pad_region(netcl_tensor **out, netcl_tensor *big, int npad, const int64_t *pads, int64_t *src_start)
{
    netcl_tensor *cur = big, *next;
    netcl_tensor_retain(big);
    for (int k = 0; k < npad / 2; k++) {
        int d = big->ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1];
        int64_t start = before > 0 ? before : 0, stop = big->sizes[d] - (after > 0 ? after : 0);
        src_start[k] = before < 0 ? -before : 0;
        netcl_status st = nc_fwd_tensor_slice(&next, cur, d, start, stop, 1);
        netcl_tensor_release(cur);
        if (st != NETCL_OK) return st;
        cur = next;
    }
    *out = cur;
    return NETCL_OK;
}

netcl_status nc_fwd_pad(netcl_tensor **out, netcl_tensor *a, int npad, const int64_t *pads, double value)
{
    *out = NULL;
    if (npad < 0 || npad % 2 || npad / 2 > a->ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "pad: %d pad values for %s (need pairs for at most %d dims)", npad, nc_describe(a), a->ndim);
    int64_t sizes[NC_MAX_DIMS], src_start[NC_MAX_DIMS];
    memcpy(sizes, a->sizes, sizeof sizes);
    for (int k = 0; k < npad / 2; k++) {
        int d = a->ndim - 1 - k;
        sizes[d] += pads[2 * k] + pads[2 * k + 1];
        if (sizes[d] < 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "pad: padding (%lld, %lld) leaves a negative size in dim %d of %s",
                           (long long)pads[2 * k], (long long)pads[2 * k + 1], d + 1, nc_describe(a));
    }
    netcl_tensor *region = NULL, *src = a, *crop = NULL;
    NC_TRY(netcl_tensor_full(out, nc_dev(a), a->dtype, a->ndim, sizes, value));
    netcl_status st = pad_region(&region, *out, npad, pads, src_start);
    /* negative pads: crop the source to the region's extent */
    netcl_tensor_retain(a);
    for (int k = 0; st == NETCL_OK && k < npad / 2; k++) {
        int d = a->ndim - 1 - k;
        st = nc_fwd_tensor_slice(&crop, src, d, src_start[k], src_start[k] + region->sizes[d], 1);
        netcl_tensor_release(src);
        src = crop;
    }
    if (st == NETCL_OK) st = nc_fwd_tensor_copy_(region, src);
    netcl_tensor_release(src);
    netcl_tensor_release(region);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; nc_error_prefix("pad: "); }
    return st;
}
