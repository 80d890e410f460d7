/* reduce.c — host side of the reduce family (kernels/reduce.cl): a work
 * item, a 32-row column group or one or more work-groups per row, picked
 * from the rows' shape and stride; split rows finish in reduce_final. */
#include "cl.h"
#include <stdio.h>
#include <string.h>

static size_t acc_size(netcl_dtype dt)
{
    return dt == NETCL_DTYPE_FLOAT64 ? 8 : nc_dtype_is_float(dt) ? 4 : 8;
}

/* Parts per row: split long rows when there are too few rows to fill the device. */
static cl_long parts_for(netcl_device *dev, int64_t rows, int64_t R, size_t wg)
{
    /* 16 groups per compute unit: the best split of one long row (measurements: docs/notes/kernels.md) */
    int64_t want_groups = (int64_t)(dev->compute_units > 0 ? dev->compute_units : 1) * 16;
    if (rows >= want_groups || R <= (int64_t)wg * 8) return 1;
    int64_t p = want_groups / rows, max_p = (R + (int64_t)wg * 4 - 1) / ((int64_t)wg * 4);
    if (p > max_p) p = max_p;
    if (p > 8192) p = 8192;
    return p < 1 ? 1 : p;
}

/* How the rows are shared out: 1, one work item per row (rows too short
 * to share among a work-group's lanes, or many strided rows whose
 * neighbours sit next to each other, a reduction over a leading dim: lanes
 * then read adjacent words); 2, reduce_cols (such rows, too few to fill
 * the device one per item: 32 neighbours per work-group, their elements
 * shared among its other 7 lanes each; ResNet's 1x1 stride-2
 * backward-weight sums of per-sample products, and LeNet conv2's weight
 * parts, run faster so than in reduce_part: docs/notes/kernels.md), while
 * there are work-groups for a quarter of the compute units (below that,
 * LeNet conv1's 150 weights, a work-group per row reads faster); 0,
 * reduce_part (a work-group, or several, per row). */
static int row_kernel(netcl_device *dev, int64_t rows, int64_t R, int64_t rstride, int64_t row_step)
{
    int64_t cu = dev->compute_units > 0 ? dev->compute_units : 1;
    if (R <= 16) return 1;
    if (rstride == 1 || row_step != 1) return 0;
    return rows >= cu * 256 ? 1 : 4 * ((rows + 31) / 32) >= cu ? 2 : 0;
}

netcl_status nc_cl_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a)
{
    NC_TRY(nc_cl_enter(dev, netcl_op_name(op), a->dtype, a->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DROP=%d", (int)op);
    /* geometry of the rows: operand 0 the output position, 1 the row start */
    nc_desc outer = *a, o = *out;
    outer.ndim = a->ndim - 1;
    for (int d = 0; d < outer.ndim; d++) o.sizes[d] = outer.sizes[d];
    nc_cl_meta m;
    const nc_desc *ops[2] = {&o, &outer};
    nc_cl_meta_of(&m, 2, ops);
    cl_long R = a->sizes[a->ndim - 1], rstride = a->strides[a->ndim - 1], rows = m.n;
    cl_kernel k;
    size_t wg;
    cl_mem ob = out->buf, xb = a->buf;
    cl_mem ib = idx ? (cl_mem)idx->buf : ob;
    cl_int has_idx = idx != NULL;
    cl_long ioff = idx ? idx->offset : 0;   /* idx is contiguous with out's shape, from its own offset */
    int how = row_kernel(dev, rows, R, rstride, m.strides[1][m.ndim > 0 ? m.ndim - 1 : 0]);
    if (how) NC_TRY(nc_cl_kernel(cd, "reduce", opts, how == 1 ? "reduce_rows" : "reduce_cols", &k, &wg));
    /* reduce_cols: 32 rows a group, up to 8 lanes a row (the kernel's groups
     * are at most 256); under 32 lanes a group, a group per row instead */
    if (how == 1 || (how == 2 && wg >= 32)) {
        NC_ARG(k, 0, ob); NC_ARG(k, 1, ib); NC_ARG(k, 2, has_idx); NC_ARG(k, 3, ioff); NC_ARG(k, 4, xb);
        NC_ARG(k, 5, m); NC_ARG(k, 6, R); NC_ARG(k, 7, rstride);
        if (how == 1) return nc_cl_launch(cd, k, wg, rows);
        size_t cy = wg / 32 < 8 ? wg / 32 : 8;
        size_t global[2] = {(size_t)((rows + 31) / 32) * 32, cy}, local[2] = {32, cy};
        return nc_cl_launch_nd(cd, k, 2, global, local);
    }
    NC_TRY(nc_cl_kernel(cd, "reduce", opts, "reduce_part", &k, &wg));
    /* a short row needs no more lanes than elements (wg stays a power of two) */
    while (wg > 16 && (cl_long)wg / 2 >= R) wg /= 2;
    cl_long nparts = parts_for(dev, rows, R, wg);
    cl_mem pval = NULL, pidx = NULL;
    cl_int err = CL_SUCCESS;
    if (nparts > 1) {
        NC_TRY(nc_cl_scratch(cd, 0, acc_size(a->dtype) * (size_t)(rows * nparts), &pval));
        NC_TRY(nc_cl_scratch(cd, 1, 8 * (size_t)(rows * nparts), &pidx));
    }
    cl_mem pv = pval ? pval : ob, pi = pidx ? pidx : ob;
    netcl_status st = NETCL_OK;
#define SET(i, v) if (st == NETCL_OK && (err = nc_cl.clSetKernelArg(k, i, sizeof(v), &(v))) != CL_SUCCESS) st = nc_cl_fail(err, "clSetKernelArg", __FILE__, __LINE__)
    SET(0, ob); SET(1, ib); SET(2, has_idx); SET(3, ioff); SET(4, xb); SET(5, m); SET(6, R); SET(7, rstride); SET(8, nparts);
    SET(9, pv); SET(10, pi);
    size_t global = (size_t)(rows * nparts) * wg;
    if (st == NETCL_OK) st = nc_cl_launch_nd(cd, k, 1, &global, &wg);
    if (st == NETCL_OK && nparts > 1) {
        cl_long ooff = out->offset;
        st = nc_cl_kernel(cd, "reduce", opts, "reduce_final", &k, &wg);
        SET(0, ob); SET(1, ib); SET(2, has_idx); SET(3, ioff); SET(4, ooff); SET(5, nparts); SET(6, pval); SET(7, pidx);
        SET(8, R);
        global = (size_t)rows * wg;
        if (st == NETCL_OK) st = nc_cl_launch_nd(cd, k, 1, &global, &wg);
    }
#undef SET
    return st;
}
