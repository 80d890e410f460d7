/* backend.c — the OpenCL backend: device discovery and profiles, one
 * context and in-order queue per device, buffers, host transfers (async
 * writes keep their host object alive until done), fork safety, teardown,
 * and the backend's table of entries. */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pid_t init_pid;

netcl_status nc_check_fork(const char *what)
{
    if (init_pid && getpid() != init_pid)
        return nc_fail(NETCL_ERR_FORK,
                       "%s: OpenCL used in a forked child process (pid %d; OpenCL was initialised in pid %d); "
                       "OpenCL is not fork-safe: do device work in the parent", what, (int)getpid(), (int)init_pid);
    return NETCL_OK;
}

#define FORK_GUARD(what) NC_TRY(nc_check_fork(what))

static netcl_status cl_alloc(netcl_device *dev, size_t nbytes, void **buf)
{
    FORK_GUARD("alloc");
    nc_cl_device *cd = nc_cl_dev(dev);
    if ((int64_t)nbytes > cd->max_alloc) return NETCL_ERR_OOM;
    cl_int err;
    cl_mem m = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, nbytes ? nbytes : 1, NULL, &err);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer", __FILE__, __LINE__);
    /* NVIDIA's driver backs a buffer at its first use, so a full device
     * fails a later launch, past the pool's retry (which gives back its
     * cached blocks first). A write of one byte here makes it fail now; a
     * second try waits for the queue, whose kernels may still hold
     * buffers already released. */
    if (strstr(dev->vendor, "NVIDIA")) {
        static const cl_uchar zero = 0;   /* static: the write may still read it after the call */
        err = nc_cl.clEnqueueWriteBuffer(cd->queue, m, CL_FALSE, 0, 1, &zero, 0, NULL, NULL);
        if (err != CL_SUCCESS && nc_cl.clFinish(cd->queue) == CL_SUCCESS)
            err = nc_cl.clEnqueueWriteBuffer(cd->queue, m, CL_FALSE, 0, 1, &zero, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            nc_cl.clReleaseMemObject(m);
            return nc_cl_fail(err, "clEnqueueWriteBuffer (first use of a new buffer)", __FILE__, __LINE__);
        }
    }
    *buf = m;
    return NETCL_OK;
}

static void cl_free(netcl_device *dev, void *buf)
{
    (void)dev;
    if (nc_check_fork("free") == NETCL_OK) nc_cl.clReleaseMemObject((cl_mem)buf);
}

void nc_cl_poll_pending(nc_cl_device *cd, int wait)
{
    nc_cl_pending **pp = &cd->pending;
    while (*pp) {
        nc_cl_pending *p = *pp;
        cl_int status = CL_COMPLETE;
        if (!wait) nc_cl.clGetEventInfo(p->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
        if (status == CL_COMPLETE || status < 0) {
            *pp = p->next;
            nc_cl.clReleaseEvent(p->event);
            p->keep.release(p->keep.obj);
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

static netcl_status cl_write(netcl_device *dev, void *buf, size_t off, const void *src, size_t n, const nc_keep *keep,
                             void **event)
{
    if (event) *event = NULL;
    netcl_status st = nc_check_fork("write");
    nc_cl_device *cd = st == NETCL_OK ? nc_cl_dev(dev) : NULL;
    nc_cl_pending *p = cd && keep ? malloc(sizeof *p) : NULL;
    if (!p) { /* blocking: the caller's memory may go away right after */
        if (cd) {
            nc_cl_poll_pending(cd, 0);
            cl_int err = nc_cl.clEnqueueWriteBuffer(cd->queue, (cl_mem)buf, CL_TRUE, off, n, src, 0, NULL, NULL);
            if (err != CL_SUCCESS) st = nc_cl_fail(err, "clEnqueueWriteBuffer", __FILE__, __LINE__);
        }
        if (keep) keep->release(keep->obj);
        return st;
    }
    nc_cl_poll_pending(cd, 0);
    cl_int err = nc_cl.clEnqueueWriteBuffer(cd->queue, (cl_mem)buf, CL_FALSE, off, n, src, 0, NULL, &p->event);
    if (err != CL_SUCCESS) {
        free(p);
        keep->release(keep->obj);
        return nc_cl_fail(err, "clEnqueueWriteBuffer", __FILE__, __LINE__);
    }
    p->keep = *keep;
    p->next = cd->pending;
    cd->pending = p;
    nc_cl.clFlush(cd->queue);
    /* the source is not written before the copy has read it: the caller settles this event first */
    nc_cl.clRetainEvent(p->event);
    if (event) *event = p->event;
    else nc_cl.clReleaseEvent(p->event);
    return NETCL_OK;
}

static netcl_status cl_read(netcl_device *dev, void *buf, size_t off, void *dst, size_t n)
{
    FORK_GUARD("read");
    nc_cl_device *cd = nc_cl_dev(dev);
    NETCL_CL_CHECK(nc_cl.clEnqueueReadBuffer(cd->queue, (cl_mem)buf, CL_TRUE, off, n, dst, 0, NULL, NULL));
    nc_cl_poll_pending(cd, 0);
    return nc_cl_check_index_error(cd);
}

static netcl_status cl_sync(netcl_device *dev)
{
    FORK_GUARD("synchronize");
    nc_cl_device *cd = nc_cl_dev(dev);
    if (cd->xfer) NETCL_CL_CHECK(nc_cl.clFinish(cd->xfer));
    NETCL_CL_CHECK(nc_cl.clFinish(cd->queue));
    nc_cl_poll_pending(cd, 1);
    return nc_cl_check_index_error(cd);
}

static void cl_shutdown(netcl_device *dev)
{
    nc_cl_device *cd = nc_cl_dev(dev);
    if (!cd || nc_check_fork("shutdown") != NETCL_OK) return;
    nc_cl_release_transfers(cd);
    nc_cl.clFinish(cd->queue);
    nc_cl_poll_pending(cd, 1);
    nc_cl_profile_release(cd);
    nc_cl_release_programs(cd);
    nc_cl_release_index(cd);
    nc_gemm_state_free(cd);
    nc_cl.clReleaseCommandQueue(cd->queue);
    nc_cl.clReleaseContext(cd->ctx);
    free(cd);
    dev->impl = NULL;
}

static const nc_backend opencl_backend = {
    .name = "opencl",
    .mem = {.alloc = cl_alloc, .free = cl_free, .write = cl_write, .read = cl_read, .synchronize = cl_sync,
            .alloc_pinned = nc_cl_alloc_pinned, .free_pinned = nc_cl_free_pinned, .write_async = nc_cl_write_async,
            .register_host = nc_cl_register_host, .unregister_host = nc_cl_unregister_host, .read_async = nc_cl_read_async,
            .settle = nc_cl_settle, .shutdown = cl_shutdown, .private_bytes = nc_cl_private_bytes},
    .runtime = {.counter = nc_cl_counter, .profile_report = nc_cl_profile_report, .tune_gemm = nc_cl_tune_gemm,
                .gemm_config = nc_cl_gemm_config, .gemm_set_config = nc_cl_gemm_set_config,
                .tune_cache_path = nc_cl_tune_cache_path, .tune_cache_reload = nc_cl_tune_cache_reload,
                .tensor_cores = nc_cl_tensor_cores},
    .elementwise = {.copy = nc_cl_copy, .fill = nc_cl_fill, .range = nc_cl_range, .unary = nc_cl_unary, .unary_grad = nc_cl_unary_grad,
                    .binary_grad = nc_cl_binary_grad, .fused = nc_cl_fused,
                    .binary = nc_cl_binary, .where = nc_cl_where},
    .reduce = {.run = nc_cl_reduce},
    .softmax = {.forward = nc_cl_softmax, .backward = nc_cl_softmax_backward},
    .linalg = {.gemm = nc_cl_gemm, .gemm_copies = nc_cl_gemm_copies, .split = nc_cl_gemm_split,
               .split_sum = nc_cl_gemm_sum, .split_run = nc_cl_gemm_split_run},
    .conv = {.im2col = nc_cl_im2col, .col2im = nc_cl_col2im, .kernel = nc_cl_conv, .implicit_gemm = nc_cl_conv_gemm,
             .implicit_gemm_fast = nc_cl_conv_gemm_fast, .tiled = nc_cl_conv_tiled,
             .tiled_weight = nc_cl_conv_tiled_weight},
    .pool = {.forward = nc_cl_pool, .backward = nc_cl_pool_backward},
    .norm = {.batch_norm = nc_cl_batch_norm},
    .loss = {.class_loss = nc_cl_class_loss, .class_loss_backward = nc_cl_class_loss_backward},
    .index = {.gather = nc_cl_gather, .scatter = nc_cl_scatter, .sort = nc_cl_sort, .scan = nc_cl_scan},
    .random = {.draw = nc_cl_rng},
    .optim = {.step = nc_cl_optim_step, .unscale = nc_cl_amp_unscale},
    .augment = {.run = nc_cl_augment},
    .user = {.create = nc_cl_user_create, .launch = nc_cl_user_launch, .release = nc_cl_user_release},
};

static void info_str(cl_device_id id, cl_device_info what, char *buf, size_t len)
{
    buf[0] = 0;
    if (nc_cl.clGetDeviceInfo(id, what, len - 1, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[len - 1] = 0;
}

static void fill_profile(netcl_device *d, cl_platform_id plat, cl_device_id id)
{
    cl_uint cu = 0;
    cl_ulong gmem = 0, lmem = 0, maxalloc = 0;
    size_t wg = 0;
    char ext[8192];
    info_str(id, CL_DEVICE_NAME, d->hw_name, sizeof d->hw_name);
    info_str(id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_str(id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    nc_cl.clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof d->platform - 1, d->platform, NULL);
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL);
    info_str(id, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    d->compute_units = (int)cu;
    d->global_mem = (int64_t)gmem;
    d->local_mem = (int64_t)lmem;
    d->max_work_group = (int64_t)wg;
    d->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    /* fp64: the extension, or (OpenCL 1.2+, where double may be core but
     * optional) a non-zero double floating-point config */
    cl_device_fp_config dcfg = 0;
    if (nc_cl.clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dcfg, &dcfg, NULL) != CL_SUCCESS) dcfg = 0;
    d->has_fp64 = strstr(ext, "cl_khr_fp64") != NULL || dcfg != 0;
    if (strstr(ext, "cl_nv_device_attribute_query")) {
        cl_uint major = 0, minor = 0;
        nc_cl.clGetDeviceInfo(id, 0x4000, sizeof major, &major, NULL);
        nc_cl.clGetDeviceInfo(id, 0x4001, sizeof minor, &minor, NULL);
        d->compute_capability = (int)(major * 10 + minor);
    }
    nc_cl_dev(d)->max_wg = wg ? wg : 1;
    nc_cl_dev(d)->max_alloc = (int64_t)(maxalloc ? maxalloc : gmem);
}

/* Fills d for one device; 0 where it cannot be used. */
static int add_device(netcl_device *d, cl_platform_id plat, cl_device_id id)
{
    cl_int err;
    cl_device_type type = 0;
    nc_cl.clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    nc_cl_device *cd = calloc(1, sizeof *cd);
    if (!cd) return 0;
    cd->id = id;
    cd->int64_atomics = -1;
    cd->ctx = nc_cl.clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    cl_command_queue_properties qp = nc_cl_profiling() ? CL_QUEUE_PROFILING_ENABLE : 0;
    if (err == CL_SUCCESS) cd->queue = nc_cl.clCreateCommandQueue(cd->ctx, id, qp, &err);
    if (err != CL_SUCCESS) {
        if (getenv("NETCL_DEBUG")) fprintf(stderr, "netcl: skipping an OpenCL device: %s\n", nc_cl_error_name(err));
        if (cd->ctx) nc_cl.clReleaseContext(cd->ctx);
        free(cd);
        return 0;
    }
    netcl_device_type t = (type & CL_DEVICE_TYPE_GPU) ? NETCL_DEVICE_OPENCL_GPU
                        : (type & CL_DEVICE_TYPE_CPU) ? NETCL_DEVICE_OPENCL_CPU : NETCL_DEVICE_OPENCL_OTHER;
    d->type = t;
    d->backend = &opencl_backend;
    d->impl = cd;
    cd->dev = d;
    fill_profile(d, plat, id);
    return 1;
}

int nc_opencl_discover(netcl_device *out, int max)
{
    if (!nc_cl_load()) return 0;
    cl_uint np = 0;
    if (nc_cl.clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    if (nc_cl.clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) return 0;
    init_pid = getpid();
    int n = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        cl_device_id ids[32];
        if (nc_cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 32, ids, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && i < 32 && n < max; i++) n += add_device(&out[n], plats[p], ids[i]);
    }
    return n;
}
