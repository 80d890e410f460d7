/* norm.c — host side of the norm family (kernels/norm.cl): fused batch
 * normalisation (statistics, normalisation, and the two backward kernels).
 * The channel reductions run as P partial work-groups per channel (enough
 * to fill the device when channels are few) and a combining kernel, through
 * scratch. The per-channel vectors share one dtype (x's, or float32 for
 * 16-bit x), which the kernels take as TO. */
#include "cl.h"

/* partial work-groups per channel: about 4 groups per compute unit in all,
 * at most one per sample */
static int parts_for(nc_cl_device *cd, int64_t N, int64_t C)
{
    int64_t cu = cd->dev->compute_units > 0 ? cd->dev->compute_units : 1, p = (4 * cu + C - 1) / C;
    if (p > N) p = N;
    if (p > 1024) p = 1024;
    return p < 1 ? 1 : (int)p;
}

static netcl_status part_launch(nc_cl_device *cd, cl_kernel k, size_t wg, int P, int64_t C)
{
    size_t global[2] = {(size_t)P * wg, (size_t)C}, local[2] = {wg, 1};
    return nc_cl_launch_nd(cd, k, 2, global, local);
}

/* the row kernels' geometry (norm.cl's ROW_OF): groups of 256 items (or
 * the device's largest power of two below), 2^rs items a row, enough to
 * cover a row's items (float4s where vec) once; short rows share a group.
 * o1, o2: the offsets of the other operands the kernel reads by rows (g
 * and y, or the residual; 0 where none), which float4s need aligned too */
static netcl_status row_launch(nc_cl_device *cd, cl_kernel k, int first, const nc_batch_norm_args *a, cl_long outo, cl_long o1,
                               cl_long o2)
{
    netcl_dtype xt = a->x->dtype;
    cl_int vec = a->mean->dtype == NETCL_DTYPE_FLOAT32 &&
                 (xt == NETCL_DTYPE_FLOAT32 || xt == NETCL_DTYPE_FLOAT16 || xt == NETCL_DTYPE_BFLOAT16) && a->S % 4 == 0 &&
                 a->x->offset % 4 == 0 && outo % 4 == 0 && o1 % 4 == 0 && o2 % 4 == 0;
    int64_t items = vec ? a->S / 4 : a->S;
    int ls = 8;
    while (ls > 0 && ((int64_t)1 << ls) > cd->dev->max_work_group) ls--;
    cl_int rs = 0;
    while (((int64_t)1 << rs) < items && rs < ls) rs++;
    NC_ARG(k, first, rs); NC_ARG(k, first + 1, vec);
    size_t local = (size_t)1 << ls, rows_per = local >> rs, rows = (size_t)(a->N * a->C);
    size_t global = (rows + rows_per - 1) / rows_per * local;
    return nc_cl_launch_nd(cd, k, 1, &global, &local);
}

#define MEM(d) cl_mem d##_m = (a->d) ? (cl_mem)(a->d)->buf : (cl_mem)a->x->buf
#define OFF(d) cl_long d##_o = (a->d) ? (a->d)->offset : 0
netcl_status nc_cl_batch_norm(netcl_device *dev, nc_batch_norm_kernel kind, const nc_batch_norm_args *a)
{
    static const char *names[] = {"batch_norm_stats_part", "batch_norm_apply", "batch_norm_grad_part", "batch_norm_grad_apply"};
    static const char *finals[] = {"batch_norm_stats_final", NULL, "batch_norm_grad_final", NULL};
    netcl_dtype sdt = a->mean->dtype;   /* the statistics' dtype: x's, or float32 under 16-bit x */
    NC_TRY(nc_cl_enter(dev, "batch_norm", a->x->dtype, sdt));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[112];
    nc_cl_dtype_opts(opts, sizeof opts, a->x->dtype, sdt);
    nc_cl_index_opts(opts, sizeof opts, a->N * a->C * a->S);
    cl_kernel k, kf = NULL;
    size_t wg, wgf = 0;
    NC_TRY(nc_cl_kernel(cd, "norm", opts, names[kind], &k, &wg));
    if (finals[kind]) NC_TRY(nc_cl_kernel(cd, "norm", opts, finals[kind], &kf, &wgf));
    cl_long N = a->N, C = a->C, S = a->S, xo = a->x->offset, go = a->g ? a->g->offset : 0;
    cl_int has_w = a->w != NULL, has_b = a->b != NULL, training = a->training, has_running = a->rmean != NULL;
    cl_int relu = a->relu != 0, has_y = a->y != NULL, has_r = a->res != NULL;
    cl_int P = parts_for(cd, N, C);
    cl_mem part = NULL;
    size_t acc = sdt == NETCL_DTYPE_FLOAT64 ? 8 : 4;
    if (kf) NC_TRY(nc_cl_scratch(cd, 0, acc * 3 * (size_t)P * (size_t)C, &part));
    MEM(x); MEM(g); MEM(mean); MEM(invstd); MEM(w); MEM(b); MEM(rmean); MEM(rvar); MEM(sg); MEM(sgx); MEM(out); MEM(y); MEM(res);
    /* every operand at its own offset (weights and biases are often views into an optimizer's flat buffer) */
    OFF(mean); OFF(invstd); OFF(w); OFF(b); OFF(rmean); OFF(rvar); OFF(sg); OFF(sgx); OFF(out); OFF(y); OFF(res);
    int i = 0;
    switch (kind) {
    case NC_BATCH_NORM_STATS:
        NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo); NC_ARG(k, i++, part); NC_ARG(k, i++, N); NC_ARG(k, i++, C);
        NC_ARG(k, i++, S); NC_ARG(k, i++, P);
        NC_TRY(part_launch(cd, k, wg, P, C));
        i = 0;
        NC_ARG(kf, i++, part); NC_ARG(kf, i++, P); NC_ARG(kf, i++, mean_m); NC_ARG(kf, i++, mean_o);
        NC_ARG(kf, i++, invstd_m); NC_ARG(kf, i++, invstd_o); NC_ARG(kf, i++, C);
        NC_ARG(kf, i++, rmean_m); NC_ARG(kf, i++, rmean_o); NC_ARG(kf, i++, rvar_m); NC_ARG(kf, i++, rvar_o);
        NC_ARG(kf, i++, has_running);
        NC_TRY(nc_cl_set_scalar(kf, i++, sdt, a->momentum));
        NC_TRY(nc_cl_set_scalar(kf, i, sdt, a->eps));
        return nc_cl_launch(cd, kf, wgf, C);
    case NC_BATCH_NORM_APPLY:
        NC_ARG(k, i++, out_m); NC_ARG(k, i++, out_o); NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo);
        NC_ARG(k, i++, mean_m); NC_ARG(k, i++, mean_o); NC_ARG(k, i++, invstd_m); NC_ARG(k, i++, invstd_o);
        NC_ARG(k, i++, w_m); NC_ARG(k, i++, w_o); NC_ARG(k, i++, b_m); NC_ARG(k, i++, b_o);
        NC_ARG(k, i++, res_m); NC_ARG(k, i++, res_o); NC_ARG(k, i++, has_r);
        NC_ARG(k, i++, has_w); NC_ARG(k, i++, has_b); NC_ARG(k, i++, relu); NC_ARG(k, i++, N); NC_ARG(k, i++, C);
        NC_ARG(k, i++, S);
        return row_launch(cd, k, i, a, out_o, res_o, 0);
    case NC_BATCH_NORM_GRAD_REDUCE:
        NC_ARG(k, i++, g_m); NC_ARG(k, i++, go); NC_ARG(k, i++, x_m); NC_ARG(k, i++, xo); NC_ARG(k, i++, mean_m);
        NC_ARG(k, i++, mean_o); NC_ARG(k, i++, y_m); NC_ARG(k, i++, y_o); NC_ARG(k, i++, has_y); NC_ARG(k, i++, part);
        NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S); NC_ARG(k, i++, P);
        NC_TRY(part_launch(cd, k, wg, P, C));
        i = 0;
        NC_ARG(kf, i++, part); NC_ARG(kf, i++, P); NC_ARG(kf, i++, sg_m); NC_ARG(kf, i++, sg_o); NC_ARG(kf, i++, sgx_m);
        NC_ARG(kf, i++, sgx_o); NC_ARG(kf, i++, C);
        return nc_cl_launch(cd, kf, wgf, C);
    default:
        NC_ARG(k, i++, out_m); NC_ARG(k, i++, out_o); NC_ARG(k, i++, g_m); NC_ARG(k, i++, go); NC_ARG(k, i++, x_m);
        NC_ARG(k, i++, xo); NC_ARG(k, i++, mean_m); NC_ARG(k, i++, mean_o); NC_ARG(k, i++, invstd_m);
        NC_ARG(k, i++, invstd_o); NC_ARG(k, i++, w_m); NC_ARG(k, i++, w_o); NC_ARG(k, i++, has_w);
        NC_ARG(k, i++, sg_m); NC_ARG(k, i++, sg_o); NC_ARG(k, i++, sgx_m); NC_ARG(k, i++, sgx_o);
        NC_ARG(k, i++, y_m); NC_ARG(k, i++, y_o); NC_ARG(k, i++, has_y);
        NC_ARG(k, i++, training); NC_ARG(k, i++, N); NC_ARG(k, i++, C); NC_ARG(k, i++, S);
        return row_launch(cd, k, i, a, out_o, go, y_o);
    }
}
