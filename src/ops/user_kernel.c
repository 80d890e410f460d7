/* user_kernel.c — a program's own OpenCL kernels (netcl_kernel_*): checks
 * the arguments (every tensor on the kernel's device), settles pending
 * copies, marks every tensor argument written, and hands the launch to
 * the backend's `user` table. */
#include "ops/ops.h"
#include <stdio.h>
#include <stdlib.h>

struct netcl_kernel {
    netcl_device *dev;
    void *impl;
    char name[64];
};

netcl_status netcl_kernel_create(netcl_kernel **out, netcl_device *dev, const char *source, const char *name,
                                 const char *options)
{
    if (!out) return nc_fail(NETCL_ERR_ARGUMENT, "kernel: out is NULL");
    *out = NULL;
    if (!dev || !source || !name || !*name)
        return nc_fail(NETCL_ERR_ARGUMENT, "kernel: a device, an OpenCL C source and a kernel name are needed");
    if (!dev->backend->user.create)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "kernel %s: %s runs no OpenCL C (the %s backend); use an OpenCL device "
                       "(PoCL runs OpenCL on CPUs)", name, dev->name, dev->backend->name);
    netcl_kernel *k = calloc(1, sizeof *k);
    if (!k) return nc_fail(NETCL_ERR_OOM, "kernel %s: out of host memory", name);
    k->dev = dev;
    snprintf(k->name, sizeof k->name, "%s", name);
    netcl_status st = dev->backend->user.create(dev, source, name, options, &k->impl);
    if (st != NETCL_OK) {
        free(k);
        return st;
    }
    *out = k;
    return NETCL_OK;
}

netcl_status netcl_kernel_launch(netcl_kernel *k, int nargs, const netcl_kernel_arg *kinds, netcl_tensor *const *tensors,
                                 const double *scalars, int ndim, const int64_t *global, const int64_t *local)
{
    if (!k) return nc_fail(NETCL_ERR_ARGUMENT, "kernel launch: no kernel");
    if (nargs < 0 || nargs > 64 || (nargs > 0 && !kinds))
        return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: %d arguments (0..64, each with its kind)", k->name, nargs);
    if (ndim < 1 || ndim > 3 || !global)
        return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: the launch needs 1 to 3 global sizes, got %d", k->name, ndim);
    for (int d = 0; d < ndim; d++) {
        if (global[d] < 1 || (local && (local[d] < 1 || global[d] % local[d] != 0)))
            return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: global size %lld of dim %d must be >= 1%s", k->name,
                           (long long)global[d], d + 1, local ? " and a multiple of the local size" : "");
    }
    nc_user_arg args[64];
    for (int i = 0; i < nargs; i++) {
        args[i].kind = kinds[i];
        args[i].buf = NULL;
        args[i].offset = 0;
        args[i].value = scalars ? scalars[i] : 0;
        if (kinds[i] == NETCL_ARG_TENSOR) {
            netcl_tensor *t = tensors ? tensors[i] : NULL;
            if (!t) return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: argument %d is a tensor, but none was given", k->name, i + 1);
            if (nc_dev(t) != k->dev)
                return nc_fail(NETCL_ERR_DEVICE, "kernel %s: argument %d is %s, the kernel runs on %s", k->name, i + 1,
                               nc_describe(t), k->dev->name);
            nc_storage_settle(t->storage);
            nc_tensor_bump_version(t);
            args[i].buf = t->storage->buf;
            args[i].offset = t->offset;
        } else if ((unsigned)kinds[i] > NETCL_ARG_DOUBLE) {
            return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: argument %d has unknown kind %d", k->name, i + 1, (int)kinds[i]);
        } else if (!scalars) {
            return nc_fail(NETCL_ERR_ARGUMENT, "kernel %s: argument %d is a scalar, but no scalars were given", k->name, i + 1);
        }
    }
    netcl_status st = k->dev->backend->user.launch(k->dev, k->impl, nargs, args, ndim, global, local);
    if (st != NETCL_OK) nc_error_prefix("kernel %s: ", k->name);
    return st;
}

void netcl_kernel_release(netcl_kernel *k)
{
    if (!k) return;
    if (k->dev->backend->user.release) k->dev->backend->user.release(k->dev, k->impl);
    free(k);
}
