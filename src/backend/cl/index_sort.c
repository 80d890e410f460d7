/* index_sort.c (OpenCL) — the index family's sort and scan, host side of
 * kernels/index_sort.cl and kernels/index_scan.cl.
 * Sort: rows of up to L slots (L from the device's local memory, at most
 * 4096) are sorted in one launch in local memory; longer rows go through
 * scratch buffers: blocks of L in local memory, then for each stage k > L
 * global compare-exchange steps down to j = L and one local merge for the
 * rest — log2(P/L) * (log2(P/L) + 3) / 2 + 1 launches for a row of P slots.
 * Scan: one work item per row when rows are many or short, else one
 * work-group per row. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

/* row geometry of the last dim: one entry per row (all dims but the last) */
static void rows_meta(nc_cl_meta *m, int nops, const nc_desc *const *ds)
{
    nc_desc outer[3];
    const nc_desc *ops[3];
    for (int k = 0; k < nops; k++) { outer[k] = *ds[k]; outer[k].ndim--; ops[k] = &outer[k]; }
    nc_cl_meta_of(m, nops, ops);
}

static size_t key_size(netcl_dtype dt) { return dt == NETCL_DTYPE_FLOAT64 || !nc_dtype_is_float(dt) ? 8 : 4; }

/* largest power of two of slots whose keys and indices fit half the local memory, capped */
static int local_slots(netcl_device *dev, netcl_dtype dt)
{
    int64_t budget = dev->local_mem > 0 ? dev->local_mem / 2 : 16384;
    int L = 2;
    while (L < 4096 && (int64_t)(2 * L) * (int64_t)(key_size(dt) + 4) <= budget) L *= 2;
    return L;
}

#define SET(i, v) if (st == NETCL_OK && (err = nc_cl.clSetKernelArg(k, (i), sizeof(v), &(v))) != CL_SUCCESS) \
        st = nc_cl_fail(err, "clSetKernelArg", __FILE__, __LINE__)
#define SET_LOCAL(i, bytes) if (st == NETCL_OK && (err = nc_cl.clSetKernelArg(k, (i), (bytes), NULL)) != CL_SUCCESS) \
        st = nc_cl_fail(err, "clSetKernelArg (local)", __FILE__, __LINE__)

typedef struct {
    nc_cl_device *cd;
    const char *opts;
    nc_cl_meta m;
    cl_mem a, vals, inds, skey, sidx;
    cl_long astride, vstride, istride, rows;
    cl_int R, P, L;
    size_t ksize;
} sort_job;

/* sort_local (first = 1) or sort_merge of stage k over every block of every row */
static netcl_status launch_blocks(sort_job *j, int first, cl_int kstage)
{
    cl_kernel k;
    size_t wg;
    cl_int err;
    netcl_status st = nc_cl_kernel(j->cd, "index_sort", j->opts, first ? "sort_local" : "sort_merge", &k, &wg);
    if (st != NETCL_OK) return st;
    while (wg > 1 && (cl_int)wg > j->L / 2) wg /= 2;
    if (first) {
        SET(0, j->a); SET(1, j->m); SET(2, j->astride); SET(3, j->R); SET(4, j->P); SET(5, j->L);
        SET(6, j->skey); SET(7, j->sidx); SET(8, j->vals); SET(9, j->inds); SET(10, j->vstride); SET(11, j->istride);
        SET_LOCAL(12, j->ksize * (size_t)j->L); SET_LOCAL(13, 4 * (size_t)j->L);
    } else {
        SET(0, j->m); SET(1, j->R); SET(2, j->P); SET(3, j->L); SET(4, kstage); SET(5, j->skey); SET(6, j->sidx);
        SET(7, j->vals); SET(8, j->inds); SET(9, j->vstride); SET(10, j->istride);
        SET_LOCAL(11, j->ksize * (size_t)j->L); SET_LOCAL(12, 4 * (size_t)j->L);
    }
    size_t global = (size_t)(j->rows * (j->P / j->L)) * wg;
    return st == NETCL_OK ? nc_cl_launch_nd(j->cd, k, 1, &global, &wg) : st;
}

static netcl_status launch_global(sort_job *j, cl_int kstage, cl_int jstep)
{
    cl_kernel k;
    size_t wg;
    cl_int err;
    netcl_status st = nc_cl_kernel(j->cd, "index_sort", j->opts, "sort_global", &k, &wg);
    if (st != NETCL_OK) return st;
    SET(0, j->skey); SET(1, j->sidx); SET(2, j->rows); SET(3, j->P); SET(4, kstage); SET(5, jstep); SET(6, j->R);
    return st == NETCL_OK ? nc_cl_launch(j->cd, k, wg, j->rows * (j->P / 2)) : st;
}

netcl_status nc_cl_sort(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a, int descending)
{
    NC_TRY(nc_cl_enter(dev, "sort", a->dtype, a->dtype));
    int last = a->ndim - 1;
    int64_t R = a->sizes[last];
    if (R > (1 << 30))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "sort: rows of %lld elements exceed OpenCL's limit of 2^30", (long long)R);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, a->dtype);
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DDESC=%d", descending ? 1 : 0);
    sort_job j;
    memset(&j, 0, sizeof j);
    j.cd = nc_cl_dev(dev);
    j.opts = opts;
    j.a = a->buf;
    j.vals = j.skey = values->buf;   /* scratch placeholders until a long row needs real ones */
    j.inds = j.sidx = indices->buf;
    j.astride = a->strides[last];
    j.vstride = values->strides[last];
    j.istride = indices->strides[last];
    j.R = (cl_int)R;
    j.P = 1;
    j.ksize = key_size(a->dtype);
    const nc_desc *ds[3] = {a, values, indices};
    rows_meta(&j.m, 3, ds);
    j.rows = j.m.n;
    while (j.P < R) j.P *= 2;
    int L = local_slots(dev, a->dtype);
    j.L = j.P < L ? j.P : L;
    if (j.P == j.L) return launch_blocks(&j, 1, 0);
    cl_int err;
    size_t slots = (size_t)j.rows * (size_t)j.P;
    j.skey = nc_cl.clCreateBuffer(j.cd->ctx, CL_MEM_READ_WRITE, slots * j.ksize, NULL, &err);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer (sort keys)", __FILE__, __LINE__);
    j.sidx = nc_cl.clCreateBuffer(j.cd->ctx, CL_MEM_READ_WRITE, slots * 4, NULL, &err);
    if (err != CL_SUCCESS) {
        nc_cl.clReleaseMemObject(j.skey);
        return nc_cl_fail(err, "clCreateBuffer (sort indices)", __FILE__, __LINE__);
    }
    netcl_status st = launch_blocks(&j, 1, 0);
    for (cl_int k = 2 * j.L; st == NETCL_OK && k <= j.P; k *= 2) {
        for (cl_int s = k / 2; st == NETCL_OK && s >= j.L; s /= 2) st = launch_global(&j, k, s);
        if (st == NETCL_OK) st = launch_blocks(&j, 0, k);
    }
    /* released now, freed by the driver once the queued kernels are done */
    nc_cl.clReleaseMemObject(j.skey);
    nc_cl.clReleaseMemObject(j.sidx);
    return st;
}

netcl_status nc_cl_scan(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a)
{
    const char *name = op == NETCL_OP_PROD ? "cumprod" : "cumsum";
    NC_TRY(nc_cl_enter(dev, name, a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    if (op == NETCL_OP_PROD) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DPROD");
    int last = a->ndim - 1;
    nc_cl_meta m;
    const nc_desc *ds[2] = {out, a};
    rows_meta(&m, 2, ds);
    cl_long R = a->sizes[last], ostride = out->strides[last], astride = a->strides[last];
    int64_t busy = (int64_t)(dev->compute_units > 0 ? dev->compute_units : 1) * 64;
    int per_item = m.n >= busy || R <= 256;
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "index_scan", opts, per_item ? "scan_rows" : "scan_group", &k, &wg));
    cl_mem ob = out->buf, xb = a->buf;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, xb); NC_ARG(k, 2, m); NC_ARG(k, 3, R); NC_ARG(k, 4, ostride); NC_ARG(k, 5, astride);
    if (per_item) return nc_cl_launch(cd, k, wg, m.n);
    size_t global = (size_t)m.n * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}
