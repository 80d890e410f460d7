/* pool.c — 2-D pooling with autograd: the public entry points of max,
 * average and adaptive average pooling and their backward rule (forward:
 * src/ops/pool.c; kernels: backend pool, kernels/pool.cl). */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

/* ---- pooling: ip holds the whole nc_pool_geom; max pooling saves its indices ---- */

static netcl_status pool(netcl_tensor **out, netcl_tensor **indices, netcl_tensor *x, const char *name, const nc_pool_geom *g)
{
    netcl_status st;
    netcl_tensor *idx = NULL;
    NC_FORWARD(st, nc_fwd_pool(out, g->mode == 0 ? &idx : NULL, x, g));
    if (st == NETCL_OK && nc_should_record(1, &x)) {
        nc_node *n = nc_node_new(NC_RULE_POOL, name, 1, &x);
        if (!n || (idx && nc_node_save(n, 0, idx) != NETCL_OK)) {
            netcl_tensor_release(idx);
            return nc_record_fail(out, n, name);
        }
        memcpy(n->ip, g, sizeof *g);
        nc_node_attach(n, *out);
    }
    if (indices) *indices = idx;
    else netcl_tensor_release(idx);
    return st;
}

netcl_status netcl_max_pool2d(netcl_tensor **out, netcl_tensor **indices, netcl_tensor *x, const int64_t *k,
                              const int64_t *s, const int64_t *p, const int64_t *d, int ceil_mode)
{
    nc_pool_geom g;
    *out = NULL;
    if (indices) *indices = NULL;
    NC_TRY(nc_pool_setup("max_pool2d", x, 0, k, s, p, d, ceil_mode, 0, 0, NULL, &g));
    return pool(out, indices, x, "max_pool2d", &g);
}

netcl_status netcl_avg_pool2d(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *s, const int64_t *p,
                              int ceil_mode, int count_include_pad, int64_t divisor_override)
{
    nc_pool_geom g;
    const int64_t one[2] = {1, 1};
    *out = NULL;
    NC_TRY(nc_pool_setup("avg_pool2d", x, 1, k, s, p, one, ceil_mode, count_include_pad, divisor_override, NULL, &g));
    return pool(out, NULL, x, "avg_pool2d", &g);
}

netcl_status netcl_adaptive_avg_pool2d(netcl_tensor **out, netcl_tensor *x, const int64_t *size)
{
    nc_pool_geom g;
    *out = NULL;
    NC_TRY(nc_pool_setup("adaptive_avg_pool2d", x, 2, NULL, NULL, NULL, NULL, 0, 0, 0, size, &g));
    return pool(out, NULL, x, "adaptive_avg_pool2d", &g);
}

/* pooling: the backward kernel from the geometry (and max pooling's indices) */
netcl_status nc_rule_pool(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    nc_pool_geom geom;
    memcpy(&geom, n->ip, sizeof geom);
    netcl_tensor *idx = NULL;
    if (geom.mode == 0) nc_x_do(&x, nc_node_saved(n, 0, &idx));
    nc_x_grad(&x, n, 0, XC(&x, nc_fwd_pool_backward, g, idx, &geom), gin);
    return nc_x_end(&x);
}
