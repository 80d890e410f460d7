/* transfer.c — pinned host memory and asynchronous uploads for the OpenCL
 * backend. Pinned memory is a CL_MEM_ALLOC_HOST_PTR buffer mapped once for
 * its whole life (the driver can DMA from it). Uploads from it run on a
 * second, copy-only in-order queue, so they overlap the kernels already on
 * the main queue; their event is kept on the destination storage, and the
 * first use of that storage (nc_storage_settle) puts a barrier waiting for
 * it into the main queue, so later kernels see the data. An upload itself
 * waits for the kernels queued before it (its destination may be a pooled
 * buffer they still read). Reads into host memory run on the same transfer
 * queue after the kernels queued so far; memory another party owns (a
 * shared segment) is registered by wrapping it in a CL_MEM_USE_HOST_PTR
 * buffer, which lets a driver pin it so copies to and from it run at
 * pinned-memory speed. */
#include "gemm.h"
#include <stdlib.h>

typedef struct { cl_mem buf; void *host; } pinned;

static netcl_status xfer_queue(nc_cl_device *cd)
{
    if (cd->xfer) return NETCL_OK;
    cl_int err;
    cd->xfer = nc_cl.clCreateCommandQueue(cd->ctx, cd->id, 0, &err);
    if (err != CL_SUCCESS) { cd->xfer = NULL; return nc_cl_fail(err, "clCreateCommandQueue (transfers)", __FILE__, __LINE__); }
    return NETCL_OK;
}

netcl_status nc_cl_alloc_pinned(netcl_device *dev, size_t nbytes, void **host, void **handle)
{
    NC_TRY(nc_check_fork("pinned alloc"));
    nc_cl_device *cd = nc_cl_dev(dev);
    pinned *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(NETCL_ERR_OOM, "out of host memory");
    cl_int err;
    p->buf = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, nbytes, NULL, &err);
    if (err == CL_SUCCESS)
        p->host = nc_cl.clEnqueueMapBuffer(cd->queue, p->buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, nbytes, 0, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        if (p->buf) nc_cl.clReleaseMemObject(p->buf);
        free(p);
        return nc_cl_fail(err, "pinned host memory (clCreateBuffer/clEnqueueMapBuffer)", __FILE__, __LINE__);
    }
    *host = p->host;
    *handle = p;
    return NETCL_OK;
}

void nc_cl_free_pinned(netcl_device *dev, void *handle)
{
    pinned *p = handle;
    if (nc_check_fork("pinned free") == NETCL_OK && dev->impl) {
        nc_cl_device *cd = nc_cl_dev(dev);
        nc_cl.clEnqueueUnmapMemObject(cd->queue, p->buf, p->host, 0, NULL, NULL);
        nc_cl.clReleaseMemObject(p->buf);
    }
    free(p);
}

netcl_status nc_cl_write_async(netcl_device *dev, void *buf, size_t off, const void *src, size_t n,
                               const nc_keep *keep, void *events[2])
{
    events[0] = events[1] = NULL;
    netcl_status st = nc_check_fork("write");
    nc_cl_device *cd = st == NETCL_OK ? nc_cl_dev(dev) : NULL;
    if (cd) st = xfer_queue(cd);
    nc_cl_pending *p = st == NETCL_OK ? malloc(sizeof *p) : NULL;
    if (!p) {
        keep->release(keep->obj);
        return st != NETCL_OK ? st : nc_fail(NETCL_ERR_OOM, "out of host memory");
    }
    /* The destination may be a pooled buffer whose previous tensor was freed
     * while kernels queued on the main queue still read it: the copy waits
     * for everything queued there so far (the work queued after this call
     * is what it overlaps). */
    cl_event before = NULL;
    cl_int err = nc_cl.clEnqueueMarkerWithWaitList(cd->queue, 0, NULL, &before);
    if (err == CL_SUCCESS) {
        nc_cl.clFlush(cd->queue);
        err = nc_cl.clEnqueueWriteBuffer(cd->xfer, (cl_mem)buf, CL_FALSE, off, n, src, 1, &before, &p->event);
        nc_cl.clReleaseEvent(before);
        if (err != CL_SUCCESS) st = nc_cl_fail(err, "clEnqueueWriteBuffer (transfer queue)", __FILE__, __LINE__);
    } else {
        st = nc_cl_fail(err, "clEnqueueMarkerWithWaitList (before a transfer)", __FILE__, __LINE__);
    }
    if (st != NETCL_OK) {
        free(p);
        keep->release(keep->obj);
        return st;
    }
    nc_cl.clFlush(cd->xfer);
    /* the host object lives until the copy is done */
    p->keep = *keep;
    p->next = cd->pending;
    cd->pending = p;
    /* the source may not be written, nor the destination used, before the
     * copy: one event reference for each, settled by the caller */
    nc_cl.clRetainEvent(p->event);
    nc_cl.clRetainEvent(p->event);
    events[0] = events[1] = p->event;
    return NETCL_OK;
}

netcl_status nc_cl_register_host(netcl_device *dev, void *host, size_t nbytes, void **handle)
{
    NC_TRY(nc_check_fork("register host memory"));
    cl_int err;
    cl_mem m = nc_cl.clCreateBuffer(nc_cl_dev(dev)->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, nbytes, host, &err);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer (registering host memory)", __FILE__, __LINE__);
    *handle = m;
    return NETCL_OK;
}

void nc_cl_unregister_host(netcl_device *dev, void *handle)
{
    if (nc_check_fork("unregister host memory") == NETCL_OK && dev->impl) nc_cl.clReleaseMemObject((cl_mem)handle);
}

netcl_status nc_cl_read_async(netcl_device *dev, void *buf, size_t off, void *dst, size_t n, void **event)
{
    *event = NULL;
    NC_TRY(nc_check_fork("read"));
    nc_cl_device *cd = nc_cl_dev(dev);
    NC_TRY(xfer_queue(cd));
    cl_event before = NULL, done = NULL;
    cl_int err = nc_cl.clEnqueueMarkerWithWaitList(cd->queue, 0, NULL, &before);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clEnqueueMarkerWithWaitList (before a read)", __FILE__, __LINE__);
    nc_cl.clFlush(cd->queue);
    err = nc_cl.clEnqueueReadBuffer(cd->xfer, (cl_mem)buf, CL_FALSE, off, n, dst, 1, &before, &done);
    nc_cl.clReleaseEvent(before);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clEnqueueReadBuffer (transfer queue)", __FILE__, __LINE__);
    nc_cl.clFlush(cd->xfer);
    *event = done;
    return NETCL_OK;
}

void nc_cl_settle(netcl_device *dev, void *event, int on_device)
{
    cl_event ev = event;
    if (nc_check_fork("settle") == NETCL_OK && dev->impl) {
        if (!on_device || nc_cl.clEnqueueBarrierWithWaitList(nc_cl_dev(dev)->queue, 1, &ev, NULL) != CL_SUCCESS)
            nc_cl.clWaitForEvents(1, &ev);   /* a host storage (or no barrier): wait on the host */
    }
    nc_cl.clReleaseEvent(ev);
}

netcl_status nc_cl_scratch(nc_cl_device *cd, int k, size_t nbytes, cl_mem *out)
{
    if (cd->scratch_size[k] < nbytes) {
        /* released now, freed by the driver once the kernels queued on it are done */
        if (cd->scratch[k]) nc_cl.clReleaseMemObject(cd->scratch[k]);
        cd->scratch[k] = NULL;
        cd->scratch_size[k] = 0;
        size_t want = nbytes < 65536 ? 65536 : nbytes + nbytes / 2;
        cl_int err;
        cl_mem m = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, want, NULL, &err);
        if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer (scratch)", __FILE__, __LINE__);
        cd->scratch[k] = m;
        cd->scratch_size[k] = want;
    }
    *out = cd->scratch[k];
    return NETCL_OK;
}

int64_t nc_cl_private_bytes(const netcl_device *dev)
{
    const nc_cl_device *cd = dev->impl;
    if (!cd) return 0;
    int64_t n = 0;
    for (int k = 0; k < (int)(sizeof cd->scratch / sizeof cd->scratch[0]); k++) n += (int64_t)cd->scratch_size[k];
    return n + (cd->gemm ? nc_gemm_private_bytes(cd->gemm) : 0);
}

void nc_cl_release_transfers(nc_cl_device *cd)
{
    for (int k = 0; k < (int)(sizeof cd->scratch / sizeof cd->scratch[0]); k++) {
        if (cd->scratch[k]) nc_cl.clReleaseMemObject(cd->scratch[k]);
        cd->scratch[k] = NULL;
        cd->scratch_size[k] = 0;
    }
    if (!cd->xfer) return;
    nc_cl.clFinish(cd->xfer);
    nc_cl.clReleaseCommandQueue(cd->xfer);
    cd->xfer = NULL;
}
