/* pool.c — the forward op layer of 2-D pooling (max, average, adaptive
 * average) and its backward: the geometry (nc_pool_setup), argument checks
 * with clear messages, contiguous operands for backend pool.forward and
 * pool.backward. */
#include "ops/ops.h"
#include <string.h>

netcl_status nc_pool_setup(const char *op, const netcl_tensor *x, int mode, const int64_t *k, const int64_t *s,
                           const int64_t *p, const int64_t *d, int ceil_mode, int count_pad, int64_t divisor,
                           const int64_t *out_size, nc_pool_geom *g)
{
    NC_TRY(nc_check_float_input(op, x, 4));
    memset(g, 0, sizeof *g);
    g->N = x->sizes[0]; g->C = x->sizes[1]; g->H = x->sizes[2]; g->W = x->sizes[3];
    g->mode = mode;
    if (mode == 2) {
        if (out_size[0] <= 0 || out_size[1] <= 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: output size (%lld, %lld) must be positive (input %s)", op,
                           (long long)out_size[0], (long long)out_size[1], nc_describe(x));
        g->oh = out_size[0]; g->ow = out_size[1];
        return NETCL_OK;
    }
    NC_TRY(nc_check_window(op, x, k, s, p, d));
    if (2 * p[0] > k[0] || 2 * p[1] > k[1])
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: padding (%lld, %lld) must be at most half the kernel (%lld, %lld)", op,
                       (long long)p[0], (long long)p[1], (long long)k[0], (long long)k[1]);
    g->kh = k[0]; g->kw = k[1]; g->sh = s[0]; g->sw = s[1]; g->ph = p[0]; g->pw = p[1]; g->dh = d[0]; g->dw = d[1];
    g->count_pad = count_pad; g->divisor = divisor;
    g->oh = nc_window_positions(g->H, k[0], s[0], p[0], d[0], ceil_mode);
    g->ow = nc_window_positions(g->W, k[1], s[1], p[1], d[1], ceil_mode);
    if (g->oh <= 0 || g->ow <= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: a (%lld, %lld) window does not fit into %s padded by (%lld, %lld)", op,
                       (long long)k[0], (long long)k[1], nc_describe(x), (long long)p[0], (long long)p[1]);
    return NETCL_OK;
}

netcl_status nc_fwd_pool(netcl_tensor **out, netcl_tensor **idx, netcl_tensor *x, const nc_pool_geom *g)
{
    *out = NULL;
    if (idx) *idx = NULL;
    int64_t sizes[4] = {g->N, g->C, g->oh, g->ow};
    netcl_tensor *c = NULL;
    NC_TRY(nc_fwd_tensor_contiguous(&c, x));
    netcl_status st = nc_tensor_new(out, nc_dev(x), x->dtype, 4, sizes);
    if (st == NETCL_OK && g->mode == 0) st = nc_tensor_new(idx, nc_dev(x), NETCL_DTYPE_INT64, 4, sizes);
    if (st == NETCL_OK && netcl_tensor_numel(*out) > 0) {
        nc_desc o, i, xd;
        nc_desc_of(&o, *out);
        nc_desc_of(&xd, c);
        if (g->mode == 0) nc_desc_of(&i, *idx);
        st = nc_dev(x)->backend->pool.forward(nc_dev(x), &o, g->mode == 0 ? &i : NULL, &xd, g);
    }
    netcl_tensor_release(c);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out); *out = NULL;
        if (idx) { netcl_tensor_release(*idx); *idx = NULL; }
    }
    return st;
}

netcl_status nc_fwd_pool_backward(netcl_tensor **gin, netcl_tensor *gout, netcl_tensor *idx, const nc_pool_geom *g)
{
    *gin = NULL;
    int64_t sizes[4] = {g->N, g->C, g->H, g->W};
    netcl_tensor *c = NULL;
    NC_TRY(nc_fwd_tensor_contiguous(&c, gout));
    netcl_status st = nc_tensor_new(gin, nc_dev(gout), gout->dtype, 4, sizes);
    if (st == NETCL_OK && netcl_tensor_numel(*gin) > 0) {
        nc_desc o, i, gd;
        nc_desc_of(&o, *gin);
        nc_desc_of(&gd, c);
        if (idx) nc_desc_of(&i, idx);
        st = nc_dev(gout)->backend->pool.backward(nc_dev(gout), &o, &gd, idx ? &i : NULL, g);
    }
    netcl_tensor_release(c);
    if (st != NETCL_OK) { netcl_tensor_release(*gin); *gin = NULL; }
    return st;
}
