/* random.c — host side of the random family (kernels/random.cl): Philox
 * draws over a contiguous output, one work item per element. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

netcl_status nc_cl_rng(netcl_device *dev, const nc_desc *out, netcl_rng_kind kind, uint64_t seed, uint64_t offset,
                       double p1, double p2)
{
    NC_TRY(nc_cl_enter(dev, "rng", out->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, out->dtype, out->dtype);
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DKIND=%d", (int)kind);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "random", opts, "rng_fill", &k, &wg));
    cl_mem ob = out->buf;
    cl_long off = out->offset, n = nc_numel(out->ndim, out->sizes);
    cl_ulong s = seed, o = offset;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, off); NC_ARG(k, 2, n); NC_ARG(k, 3, s); NC_ARG(k, 4, o);
    NC_TRY(nc_cl_set_wide(dev, k, 5, p1));
    NC_TRY(nc_cl_set_wide(dev, k, 6, p2));
    return nc_cl_launch(cd, k, wg, n);
}
