/* index.h — the indexing, sort, scan and sampling family: forward ops
 * (index.c, sort.c, random.c; they record nothing, src/autograd/api_index.c
 * does). */
#ifndef NETCL_INDEX_H
#define NETCL_INDEX_H
#include "ops/ops.h"

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

#endif
