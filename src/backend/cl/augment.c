/* augment.c (OpenCL) — host side of kernels/augment.cl: the host-supplied
 * params cross as a small read-only buffer (copied at creation, released
 * after the launch is queued; the driver keeps it until the kernel ends). */
#include "cl.h"

netcl_status nc_cl_augment(netcl_device *dev, const nc_augment *a)
{
    static const char *const names[] = {"augment_flip", "augment_jitter", "augment_erase", "augment_crop"};
    NC_TRY(nc_cl_enter(dev, names[a->kind], a->x->dtype, a->out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, a->x->dtype, a->out->dtype);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "augment", opts, names[a->kind], &k, &wg));
    cl_long N = a->x->sizes[0], C = a->x->sizes[1], H = a->x->sizes[2], W = a->x->sizes[3];
    cl_long OH = a->out->sizes[2], OW = a->out->sizes[3], pad = a->pad, total = N * C * OH * OW;
    cl_long ooff = a->out->offset, xoff = a->x->offset;
    cl_int reflect = a->reflect;
    cl_float value = (cl_float)a->value;
    cl_int err;
    cl_mem pm = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                     sizeof(float) * (size_t)(N * a->nparams), (void *)a->params, &err);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer (augment params)", __FILE__, __LINE__);
    cl_mem o = a->out->buf, x = a->x->buf;
    netcl_status st = NETCL_OK;
#define SET(i, v) if (st == NETCL_OK && (err = nc_cl.clSetKernelArg(k, i, sizeof(v), &(v))) != CL_SUCCESS) \
        st = nc_cl_fail(err, "clSetKernelArg", __FILE__, __LINE__)
    SET(0, o); SET(1, ooff); SET(2, x); SET(3, xoff); SET(4, pm); SET(5, C); SET(6, H); SET(7, W);
    SET(8, OH); SET(9, OW); SET(10, pad); SET(11, reflect); SET(12, value); SET(13, total);
#undef SET
    if (st == NETCL_OK) st = nc_cl_launch(cd, k, wg, total);
    nc_cl.clReleaseMemObject(pm);
    return st;
}
