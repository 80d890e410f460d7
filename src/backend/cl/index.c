/* index.c (OpenCL) — the index family's gather and scatter, host side of
 * kernels/index.cl, and the device's index error word. Kernels run
 * asynchronously, so an out-of-range index cannot fail the call that queued
 * it: the kernel skips the element and records the first bad index in an
 * 8-int word on the device (atomic_cmpxchg 0 -> 1 on word 0, then value,
 * size, op, dim and base). The backend's blocking points (read,
 * synchronize) call nc_cl_check_index_error, which reads the word only when
 * an index kernel was queued since the last look, and turns a recorded
 * index into NETCL_ERR_ARGUMENT. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

#define ERR_WORDS 8
/* op codes the kernels record (kernels/common.cl index_report) */
static const char *const op_names[] = {"gather", "scatter", "scatter_add", "cross_entropy", "nll_loss"};

netcl_status nc_cl_error_word(nc_cl_device *cd, cl_mem *out)
{
    if (!cd->err_word) {
        cl_int err, zero[ERR_WORDS] = {0};
        cd->err_word = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, sizeof zero, NULL, &err);
        if (err != CL_SUCCESS) { cd->err_word = NULL; return nc_cl_fail(err, "clCreateBuffer (error word)", __FILE__, __LINE__); }
        NETCL_CL_CHECK(nc_cl.clEnqueueWriteBuffer(cd->queue, cd->err_word, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL));
    }
    *out = cd->err_word;
    return NETCL_OK;
}

netcl_status nc_cl_check_index_error(nc_cl_device *cd)
{
    if (!cd->err_pending) return NETCL_OK;
    cl_int w[ERR_WORDS], zero[ERR_WORDS] = {0};
    NETCL_CL_CHECK(nc_cl.clEnqueueReadBuffer(cd->queue, cd->err_word, CL_TRUE, 0, sizeof w, w, 0, NULL, NULL));
    cd->err_pending = 0;
    if (!w[0]) return NETCL_OK;
    NETCL_CL_CHECK(nc_cl.clEnqueueWriteBuffer(cd->queue, cd->err_word, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL));
    int64_t value = (int64_t)(((uint64_t)(uint32_t)w[2] << 32) | (uint32_t)w[1]);
    int64_t size = (int64_t)(((uint64_t)(uint32_t)w[4] << 32) | (uint32_t)w[3]);
    char where[96];
    snprintf(where, sizeof where, "a tensor on %s", cd->dev->name);
    const char *op = (unsigned)w[5] < sizeof op_names / sizeof op_names[0] ? op_names[w[5]] : "index";
    return nc_index_error(op, value, w[7], w[6], size, where, "; reported by the device when its results were read");
}

void nc_cl_release_index(nc_cl_device *cd)
{
    if (cd->err_word) nc_cl.clReleaseMemObject(cd->err_word);
    cd->err_word = NULL;
    cd->err_pending = 0;
}

static int has_int64_atomics(nc_cl_device *cd)
{
    if (cd->int64_atomics < 0) {
        char ext[8192] = "";
        nc_cl.clGetDeviceInfo(cd->id, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
        cd->int64_atomics = strstr(ext, "cl_khr_int64_base_atomics") != NULL;
    }
    return cd->int64_atomics;
}

/* descriptor d over idx's shape with the dim's stride zeroed: its offset
 * is the start of the line an index addresses */
static nc_desc along(const nc_desc *d, const nc_desc *idx, int dim)
{
    nc_desc r = *d;
    memcpy(r.sizes, idx->sizes, sizeof r.sizes);
    r.strides[dim] = 0;
    return r;
}

netcl_status nc_cl_gather(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim, int64_t base)
{
    /* elements move as raw words: no float64 support needed */
    NC_TRY(nc_cl_enter(dev, "gather", NETCL_DTYPE_INT64, NETCL_DTYPE_INT64));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    snprintf(opts, sizeof opts, "-DTA=%d -DTI=%d", (int)a->dtype, (int)idx->dtype);
    nc_desc ax = along(a, idx, dim);
    const nc_desc *ops[3] = {out, idx, &ax};
    nc_cl_meta m;
    nc_cl_meta_of(&m, 3, ops);
    cl_kernel k;
    size_t wg;
    cl_mem ob = out->buf, ib = idx->buf, xb = a->buf, eb;
    NC_TRY(nc_cl_error_word(cd, &eb));
    NC_TRY(nc_cl_kernel(cd, "index", opts, "gather_any", &k, &wg));
    cl_long astride = a->strides[dim], asize = a->sizes[dim], b = base;
    cl_int d = dim;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, ib); NC_ARG(k, 2, xb); NC_ARG(k, 3, m); NC_ARG(k, 4, astride); NC_ARG(k, 5, asize);
    NC_ARG(k, 6, b); NC_ARG(k, 7, d); NC_ARG(k, 8, eb);
    NC_TRY(nc_cl_launch(cd, k, wg, m.n));
    cd->err_pending = 1;
    return NETCL_OK;
}

netcl_status nc_cl_scatter(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim,
                           int64_t base, int accumulate)
{
    const char *op = accumulate ? "scatter_add" : "scatter";
    netcl_dtype dt = out->dtype;
    /* accumulation computes in the dtype (fp64 needed); plain stores move raw words */
    NC_TRY(nc_cl_enter(dev, op, accumulate ? dt : NETCL_DTYPE_INT64, accumulate ? dt : NETCL_DTYPE_INT64));
    nc_cl_device *cd = nc_cl_dev(dev);
    int wide = dt == NETCL_DTYPE_FLOAT64 || dt == NETCL_DTYPE_INT64;
    if (accumulate && dt != NETCL_DTYPE_FLOAT32 && dt != NETCL_DTYPE_INT32 && !wide)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s: OpenCL accumulates float32, float64, int32 or int64, not %s", op,
                       netcl_dtype_name(dt));
    if (accumulate && wide && !has_int64_atomics(cd))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s: %s (%s) has no 64-bit atomics (cl_khr_int64_base_atomics) to accumulate %s",
                       op, dev->name, dev->hw_name, netcl_dtype_name(dt));
    char opts[128];
    snprintf(opts, sizeof opts, "-DTA=%d -DTI=%d%s%s%s", (int)dt, (int)idx->dtype, accumulate ? " -DACC" : "",
             accumulate && wide ? " -DINT64_ATOMICS" : "", accumulate && dt == NETCL_DTYPE_FLOAT64 ? " -DNEED_FP64" : "");
    nc_desc ox = along(out, idx, dim);
    const nc_desc *ops[3] = {idx, src, &ox};
    nc_cl_meta m;
    nc_cl_meta_of(&m, 3, ops);
    cl_kernel k;
    size_t wg;
    cl_mem ob = out->buf, ib = idx->buf, sb = src->buf, eb;
    NC_TRY(nc_cl_error_word(cd, &eb));
    NC_TRY(nc_cl_kernel(cd, "index", opts, "scatter_any", &k, &wg));
    cl_long ostride = out->strides[dim], osize = out->sizes[dim], b = base;
    cl_int d = dim, code = accumulate ? 2 : 1;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, ib); NC_ARG(k, 2, sb); NC_ARG(k, 3, m); NC_ARG(k, 4, ostride); NC_ARG(k, 5, osize);
    NC_ARG(k, 6, b); NC_ARG(k, 7, d); NC_ARG(k, 8, code); NC_ARG(k, 9, eb);
    NC_TRY(nc_cl_launch(cd, k, wg, m.n));
    cd->err_pending = 1;
    return NETCL_OK;
}
