/* create.c — tensor factories: empty/full/arange/linspace/eye, and from
 * host memory or doubles (random tensors: random.c). */
#include "ops/ops.h"
#include <math.h>
#include <stdlib.h>

netcl_status netcl_tensor_empty(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes)
{
    netcl_status st = nc_tensor_new(out, dev, dtype, ndim, sizes);
    if (st != NETCL_OK) nc_error_prefix("empty: ");
    return st;
}

static netcl_status fill_all(netcl_tensor *t, double value)
{
    if (netcl_tensor_numel(t) == 0) return NETCL_OK;
    nc_desc d;
    nc_desc_of(&d, t);
    return nc_dev(t)->backend->elementwise.fill(nc_dev(t), &d, value);
}

netcl_status netcl_tensor_full(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, double value)
{
    netcl_status st = nc_tensor_new(out, dev, dtype, ndim, sizes);
    if (st == NETCL_OK && (st = fill_all(*out, value)) != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    if (st != NETCL_OK) nc_error_prefix("full: ");
    return st;
}

static netcl_status range_fill(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int64_t n, double start, double step)
{
    netcl_status st = nc_tensor_new(out, dev, dtype, 1, &n);
    if (st != NETCL_OK || n == 0) return st;
    nc_desc d;
    nc_desc_of(&d, *out);
    st = dev->backend->elementwise.range(dev, &d, start, step);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

netcl_status netcl_tensor_arange(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, double start, double end, double step)
{
    *out = NULL;
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step) || (end - start) / step < 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "arange: invalid range start=%g end=%g step=%g", start, end, step);
    double count = ceil((end - start) / step);
    if (count > 4e18) return nc_fail(NETCL_ERR_ARGUMENT, "arange: %g elements is too many", count);
    netcl_status st = range_fill(out, dev, dtype, (int64_t)count, start, step);
    if (st != NETCL_OK) nc_error_prefix("arange: ");
    return st;
}

netcl_status netcl_tensor_linspace(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, double start, double end, int64_t steps)
{
    *out = NULL;
    if (steps < 0) return nc_fail(NETCL_ERR_ARGUMENT, "linspace: steps %lld must be non-negative", (long long)steps);
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    netcl_status st = range_fill(out, dev, dtype, steps, start, step);
    if (st != NETCL_OK) nc_error_prefix("linspace: ");
    return st;
}

netcl_status netcl_tensor_eye(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int64_t n, int64_t m)
{
    int64_t sizes[2] = {n, m < 0 ? n : m};
    NC_TRY(netcl_tensor_full(out, dev, dtype, 2, sizes, 0));
    int64_t diag = sizes[0] < sizes[1] ? sizes[0] : sizes[1];
    if (diag == 0) return NETCL_OK;
    nc_desc d;
    nc_desc_of(&d, *out);
    d.ndim = 1;
    d.sizes[0] = diag;
    d.strides[0] = sizes[1] + 1;
    netcl_status st = dev->backend->elementwise.fill(dev, &d, 1);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; nc_error_prefix("eye: "); }
    return st;
}

netcl_status netcl_tensor_from_host(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, const void *data)
{
    NC_TRY(nc_capture_guard(dev, "from_host"));
    netcl_status st = nc_tensor_new(out, dev, dtype, ndim, sizes);
    if (st != NETCL_OK) { nc_error_prefix("from_host: "); return st; }
    size_t nbytes = (*out)->storage->nbytes;
    if (nbytes == 0) return NETCL_OK;
    if (!data) st = nc_fail(NETCL_ERR_ARGUMENT, "from_host: NULL data pointer for %s", nc_describe(*out));
    else st = dev->backend->mem.write(dev, (*out)->storage->buf, 0, data, nbytes, NULL, NULL);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

/* Converts into a cpu staging tensor, then moves it (asynchronously where
 * the backend can) to the target device. */
netcl_status netcl_tensor_from_doubles(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, const double *data)
{
    NC_TRY(nc_capture_guard(dev, "from_host"));
    netcl_device *cpu;
    netcl_tensor *host;
    *out = NULL;
    NC_TRY(netcl_device_get(&cpu, "cpu"));
    netcl_status st = nc_tensor_new(&host, cpu, dtype, ndim, sizes);
    if (st != NETCL_OK) { nc_error_prefix("tensor: "); return st; }
    int64_t n = netcl_tensor_numel(host);
    for (int64_t i = 0; i < n; i++) nc_store_double(host->storage->buf, dtype, i, data[i]);
    if (dev == cpu) { *out = host; return NETCL_OK; }
    st = nc_fwd_tensor_to_device(out, host, dev);
    netcl_tensor_release(host);
    return st;
}
