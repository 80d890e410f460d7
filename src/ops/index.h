/* index.h — the indexing, sort, scan and sampling family: forward ops
 * (index.c, sort.c, sample.c; they record nothing, src/autograd/api_index.c
 * does) and the index-error message both backends use. */
#ifndef NETCL_INDEX_H
#define NETCL_INDEX_H
#include "ops/ops.h"
#include <stdio.h>

/* stack = 1: each tensor gets a new size-1 dim at `dim` first */
netcl_status nc_fwd_cat(netcl_tensor **out, int n, netcl_tensor *const *ts, int dim, int stack);
netcl_status nc_fwd_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, int base);
netcl_status nc_fwd_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base);
/* the same written into a (no autograd checks; bumps a's version) */
netcl_status nc_fwd_scatter_into(netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base);
netcl_status nc_fwd_nonzero(netcl_tensor **out, netcl_tensor *a);
netcl_status nc_fwd_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending);
/* op SUM or PROD; reverse = 1 scans from the end (the cumsum of the
 * reversed row, itself reversed: backward of cumsum) */
netcl_status nc_fwd_scan(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int reverse);
/* 1 when idx is an index tensor (int64 or int32), else an error naming op */
netcl_status nc_check_index(const char *op, const netcl_tensor *idx, int base);

/* The message of an out-of-range index: `value` as the caller gave it
 * (base included), `dim` 0-based, `where` the operand ("float32[3,10] on
 * cpu") and `tail` an addition (may be ""). */
static inline netcl_status nc_index_error(const char *op, int64_t value, int64_t base, int dim, int64_t size,
                                          const char *where, const char *tail)
{
    if (base == 1)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "%s: index %lld out of range for dim %d (size %lld) of %s (indices and dims are 1-based%s)",
                       op, (long long)value, dim + 1, (long long)size, where, tail);
    return nc_fail(NETCL_ERR_ARGUMENT, "%s: index %lld out of range for dim %d (size %lld) of %s (0-based%s)",
                   op, (long long)value, dim, (long long)size, where, tail);
}

/* "float32[3,10] on cpu" for a descriptor */
static inline const char *nc_desc_str(char *buf, size_t len, const nc_desc *d, const netcl_device *dev)
{
    snprintf(buf, len, "%s%s on %s", netcl_dtype_name(d->dtype), nc_shape_str(d->ndim, d->sizes), dev->name);
    return buf;
}

#endif
