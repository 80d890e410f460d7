/* user.c — a program's own OpenCL kernels (netcl_kernel_*): the source is
 * registered as a generated program family named by its hash, so it is
 * compiled and cached (memory and disk) like netcl's own kernels. */
#include "cl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char family[48];
    char *name, *options;
} user_kernel;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

netcl_status nc_cl_user_create(netcl_device *dev, const char *source, const char *name, const char *options, void **out)
{
    NC_TRY(nc_cl_enter(dev, "kernel", NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT32));
    user_kernel *u = calloc(1, sizeof *u);
    if (!u) return nc_fail(NETCL_ERR_OOM, "kernel %s: out of host memory", name);
    snprintf(u->family, sizeof u->family, "user_%016llx", (unsigned long long)fnv1a(source));
    u->name = strdup(name);
    u->options = strdup(options ? options : "");
    if (!u->name || !u->options || !nc_cl_source_add(u->family, source)) {
        free(u->name), free(u->options), free(u);
        return nc_fail(NETCL_ERR_OOM, "kernel %s: out of host memory", name);
    }
    cl_kernel k;
    size_t wg;
    netcl_status st = nc_cl_kernel(nc_cl_dev(dev), u->family, u->options, u->name, &k, &wg);   /* compiles now: errors here */
    if (st != NETCL_OK) {
        nc_error_prefix("kernel %s: ", name);
        free(u->name), free(u->options), free(u);
        return st;
    }
    *out = u;
    return NETCL_OK;
}

netcl_status nc_cl_user_launch(netcl_device *dev, void *kernel, int nargs, const nc_user_arg *args, int ndim,
                               const int64_t *global, const int64_t *local)
{
    user_kernel *u = kernel;
    NC_TRY(nc_cl_enter(dev, u->name, NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT32));
    nc_cl_device *cd = nc_cl_dev(dev);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, u->family, u->options, u->name, &k, &wg));
    cl_uint slot = 0;
    for (int i = 0; i < nargs; i++) {
        const nc_user_arg *a = &args[i];
        switch (a->kind) {
        case NETCL_ARG_TENSOR: {
            cl_mem b = a->buf;
            cl_long off = a->offset;
            NC_ARG(k, slot, b);
            slot++;
            NC_ARG(k, slot, off);
            break;
        }
        case NETCL_ARG_INT: { cl_int v = (cl_int)a->value; NC_ARG(k, slot, v); break; }
        case NETCL_ARG_LONG: { cl_long v = (cl_long)a->value; NC_ARG(k, slot, v); break; }
        case NETCL_ARG_FLOAT: { cl_float v = (cl_float)a->value; NC_ARG(k, slot, v); break; }
        case NETCL_ARG_DOUBLE: { cl_double v = a->value; NC_ARG(k, slot, v); break; }
        }
        slot++;
    }
    size_t g[3], l[3];
    for (int d = 0; d < ndim; d++) {
        g[d] = (size_t)global[d];
        if (local) l[d] = (size_t)local[d];
    }
    return nc_cl_launch_nd(cd, k, ndim, g, local ? l : NULL);
}

void nc_cl_user_release(netcl_device *dev, void *kernel)
{
    (void)dev;
    user_kernel *u = kernel;
    if (!u) return;
    free(u->name);
    free(u->options);
    free(u);
}
