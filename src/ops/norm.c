/* norm.c — the forward op layer of fused batch normalisation: argument
 * checks, contiguous operands, the statistics (training) or the running
 * ones (eval), and the backward passes. x is [N, C, ...] viewed [N, C, S].
 * The per-channel vectors (running statistics, weight, bias, and the saved
 * mean and invstd) share one dtype: x's, or float32 where x is float16 or
 * bfloat16 (cuDNN's mixed batch norm, which autocast uses: statistics in
 * float32, the data read and written in 16 bits). */
#include "ops/ops.h"

static int is_half(netcl_dtype dt) { return dt == NETCL_DTYPE_FLOAT16 || dt == NETCL_DTYPE_BFLOAT16; }

/* the vectors' dtype: the first one given, else float32 for 16-bit x */
static netcl_dtype stats_dtype(const netcl_tensor *x, const netcl_tensor *const *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i]) return v[i]->dtype;
    return is_half(x->dtype) ? NETCL_DTYPE_FLOAT32 : x->dtype;
}

static netcl_status check_vec(const char *what, const netcl_tensor *v, const netcl_tensor *x, int64_t C, netcl_dtype sdt)
{
    if (!v) return NETCL_OK;
    NC_TRY(nc_same_device("batch_norm", x, v));
    if (v->ndim != 1 || v->sizes[0] != C || v->dtype != sdt || !netcl_tensor_is_contiguous(v))
        return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: %s %s must be a contiguous %s tensor of %lld elements (input %s)",
                       what, nc_describe(v), netcl_dtype_name(sdt), (long long)C, nc_describe(x));
    return NETCL_OK;
}

netcl_status nc_batch_norm_check(const netcl_tensor *x, const netcl_tensor *rm, const netcl_tensor *rv, const netcl_tensor *w,
                                 const netcl_tensor *b, int training)
{
    if (x->ndim < 2 || !nc_dtype_is_float(x->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: expects a floating input of at least 2 dims [N, C, ...], got %s",
                       nc_describe(x));
    int64_t C = x->sizes[1], M = C ? netcl_tensor_numel(x) / C : 0;
    const netcl_tensor *vecs[4] = {rm, rv, w, b};
    netcl_dtype sdt = stats_dtype(x, vecs, 4);
    if (sdt != x->dtype && !(is_half(x->dtype) && sdt == NETCL_DTYPE_FLOAT32))
        return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: the running statistics, weight and bias must be %s%s (input %s), got %s",
                       netcl_dtype_name(x->dtype), is_half(x->dtype) ? " or float32" : "", nc_describe(x),
                       netcl_dtype_name(sdt));
    NC_TRY(check_vec("running_mean", rm, x, C, sdt));
    NC_TRY(check_vec("running_var", rv, x, C, sdt));
    NC_TRY(check_vec("weight", w, x, C, sdt));
    NC_TRY(check_vec("bias", b, x, C, sdt));
    if (!training && (!rm || !rv)) return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: evaluation mode needs running_mean and running_var");
    if ((rm == NULL) != (rv == NULL)) return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: give both running_mean and running_var, or neither");
    if (training && M <= 1)
        return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: expected more than 1 value per channel when training, got %s", nc_describe(x));
    return NETCL_OK;
}

static void args_of(nc_batch_norm_args *a, const netcl_tensor *x)
{
    a->N = x->sizes[0];
    a->C = x->sizes[1];
    a->S = (a->N > 0 && a->C > 0) ? netcl_tensor_numel(x) / (a->N * a->C) : 0;
}

netcl_status nc_fwd_batch_norm(netcl_tensor **y, netcl_tensor **mean, netcl_tensor **invstd, netcl_tensor *x,
                               netcl_tensor *rm, netcl_tensor *rv, netcl_tensor *w, netcl_tensor *b, int training,
                               double momentum, double eps, int relu, netcl_tensor *res)
{
    *y = *mean = *invstd = NULL;
    NC_TRY(nc_batch_norm_check(x, rm, rv, w, b, training));
    if (res) {
        NC_TRY(nc_same_device("batch_norm", x, res));
        int same = res->ndim == x->ndim && res->dtype == x->dtype;
        for (int i = 0; same && i < x->ndim; i++) same = res->sizes[i] == x->sizes[i];
        if (!same)
            return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm: the residual %s must have the input's shape and dtype (input %s)",
                           nc_describe(res), nc_describe(x));
    }
    netcl_tensor *xc = NULL, *tmp = NULL, *rc = NULL;
    const netcl_tensor *vecs[4] = {rm, rv, w, b};
    netcl_dtype sdt = stats_dtype(x, vecs, 4);
    nc_batch_norm_args a = {0};
    args_of(&a, x);
    a.training = training;
    a.momentum = momentum;
    a.eps = eps;
    a.relu = relu;
    netcl_device *dev = nc_dev(x);
    nc_desc dx, dm, di, dw, db, drm, drv, dy, dr;
    netcl_status st = nc_fwd_tensor_contiguous(&xc, x);
    if (st == NETCL_OK && res) st = nc_fwd_tensor_contiguous(&rc, res);
    if (st == NETCL_OK) st = nc_tensor_new(mean, dev, sdt, 1, &a.C);
    if (st == NETCL_OK) st = nc_tensor_new(invstd, dev, sdt, 1, &a.C);
    if (st == NETCL_OK) st = nc_tensor_new(y, dev, x->dtype, x->ndim, x->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(x) > 0) {
        nc_desc_of(&dx, xc); nc_desc_of(&dm, *mean); nc_desc_of(&di, *invstd); nc_desc_of(&dy, *y);
        a.x = &dx; a.mean = &dm; a.invstd = &di; a.out = &dy;
        if (training) {
            if (rm) { nc_desc_of(&drm, rm); nc_desc_of(&drv, rv); a.rmean = &drm; a.rvar = &drv; }
            st = dev->backend->norm.batch_norm(dev, NC_BATCH_NORM_STATS, &a);
            if (rm) { atomic_fetch_add(&rm->storage->version, 1); atomic_fetch_add(&rv->storage->version, 1); }
        } else { /* the running statistics, copied so a later update cannot change this node's */
            if ((st = nc_fwd_tensor_cast(&tmp, rm, sdt)) == NETCL_OK) { netcl_tensor_release(*mean); *mean = tmp; tmp = NULL; }
            if (st == NETCL_OK) st = nc_fwd_binary_scalar(&tmp, NETCL_OP_ADD, rv, eps, 0);
            if (st == NETCL_OK) { netcl_tensor_release(*invstd); st = nc_fwd_unary(invstd, NETCL_OP_RSQRT, tmp, 0, 0); }
            if (st == NETCL_OK) { nc_desc_of(&dm, *mean); nc_desc_of(&di, *invstd); }
        }
        a.rmean = a.rvar = NULL;
        if (w) { nc_desc_of(&dw, w); a.w = &dw; }
        if (b) { nc_desc_of(&db, b); a.b = &db; }
        if (rc) { nc_desc_of(&dr, rc); a.res = &dr; }
        if (st == NETCL_OK) st = dev->backend->norm.batch_norm(dev, NC_BATCH_NORM_APPLY, &a);
    }
    netcl_tensor_release(xc);
    netcl_tensor_release(rc);
    netcl_tensor_release(tmp);
    if (st != NETCL_OK) {
        netcl_tensor_release(*y); netcl_tensor_release(*mean); netcl_tensor_release(*invstd);
        *y = *mean = *invstd = NULL;
        nc_error_prefix("batch_norm %s: ", nc_describe(x));
    }
    return st;
}

netcl_status nc_fwd_batch_norm_backward(netcl_tensor **dx, netcl_tensor **dw, netcl_tensor **db, netcl_tensor *g,
                                        netcl_tensor *x, netcl_tensor *mean, netcl_tensor *invstd, netcl_tensor *w,
                                        netcl_tensor *y, int training)
{
    *dx = *dw = *db = NULL;
    nc_batch_norm_args a = {0};
    args_of(&a, x);
    a.training = training;
    netcl_device *dev = nc_dev(x);
    netcl_tensor *xc = NULL, *gc = NULL, *yc = NULL, *sg = NULL, *sgx = NULL;
    nc_desc dxd, dg, dm, di, dwd, dsg, dsgx, dout, dy;
    netcl_status st = nc_fwd_tensor_contiguous(&xc, x);
    if (st == NETCL_OK && y) st = nc_fwd_tensor_contiguous(&yc, y);
    if (st == NETCL_OK) st = g->dtype == x->dtype ? nc_fwd_tensor_contiguous(&gc, g) : nc_fwd_tensor_cast(&gc, g, x->dtype);
    if (st == NETCL_OK) st = nc_tensor_new(&sg, dev, mean->dtype, 1, &a.C);
    if (st == NETCL_OK) st = nc_tensor_new(&sgx, dev, mean->dtype, 1, &a.C);
    if (st == NETCL_OK) st = nc_tensor_new(dx, dev, x->dtype, x->ndim, x->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(x) > 0) {
        nc_desc_of(&dxd, xc); nc_desc_of(&dg, gc); nc_desc_of(&dm, mean); nc_desc_of(&di, invstd);
        nc_desc_of(&dsg, sg); nc_desc_of(&dsgx, sgx); nc_desc_of(&dout, *dx);
        a.x = &dxd; a.g = &dg; a.mean = &dm; a.invstd = &di; a.sg = &dsg; a.sgx = &dsgx; a.out = &dout;
        if (w) { nc_desc_of(&dwd, w); a.w = &dwd; }
        if (yc) { nc_desc_of(&dy, yc); a.y = &dy; }
        st = dev->backend->norm.batch_norm(dev, NC_BATCH_NORM_GRAD_REDUCE, &a);
        if (st == NETCL_OK) st = dev->backend->norm.batch_norm(dev, NC_BATCH_NORM_GRAD_APPLY, &a);
    }
    if (st == NETCL_OK) st = nc_fwd_binary(dw, NETCL_OP_MUL, sgx, invstd);   /* dw = sum g xhat */
    if (st == NETCL_OK) { *db = sg; sg = NULL; }                                /* db = sum g */
    netcl_tensor_release(xc); netcl_tensor_release(gc); netcl_tensor_release(yc);
    netcl_tensor_release(sg); netcl_tensor_release(sgx);
    if (st != NETCL_OK) {
        netcl_tensor_release(*dx); netcl_tensor_release(*dw); netcl_tensor_release(*db);
        *dx = *dw = *db = NULL;
        nc_error_prefix("batch_norm backward: ");
    }
    return st;
}
