/* rules_index.c — backward rules of the index family: cat/stack (narrow or
 * select g per input), gather (scatter-add g back), scatter (g with the
 * overwritten places cleared; gather g for the source), sort (scatter g to
 * where each value came from) and the scans (cumsum: reverse cumsum;
 * cumprod: exact also when the input holds zeros). Grad mode is off here. */
#include "autograd/expr.h"
#include "ops/ops.h"
#include <string.h>

#define R(x) netcl_tensor_release(x)

netcl_status nc_rule_cat(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int dim = (int)n->ip[0], stack = (int)n->ip[1];
    int64_t pos = 0;
    for (int i = 0; i < n->nin; i++) {
        const nc_edge *e = &n->in[i];
        netcl_tensor *t = NULL;
        netcl_status st = NETCL_OK;
        if (!stack && e->ndim == 1 && e->sizes[0] == 0) { /* skipped by cat: an empty gradient */
            if (nc_input_needs_grad(n, i)) st = netcl_tensor_full(&t, nc_dev(g), g->dtype, 1, e->sizes, 0);
        } else {
            int64_t len = stack ? 1 : e->sizes[dim];
            if (nc_input_needs_grad(n, i))
                st = stack ? nc_fwd_tensor_select(&t, g, dim, pos) : nc_fwd_tensor_narrow(&t, g, dim, pos, len);
            pos += len;
        }
        if (st == NETCL_OK && t) st = nc_rule_finish(n, i, t, &gin[i]);
        if (st != NETCL_OK) return st;
    }
    return NETCL_OK;
}

/* zeros of input i's shape in g's dtype, with g scattered (added) into it */
static netcl_status scatter_into_zeros(nc_node *n, int i, netcl_tensor *g, int dim, netcl_tensor *idx, int acc,
                                       int base, netcl_tensor **out)
{
    NC_TRY(netcl_tensor_full(out, nc_dev(g), g->dtype, n->in[i].ndim, n->in[i].sizes, 0));
    netcl_status st = nc_fwd_scatter_into(*out, dim, idx, g, acc, base);
    if (st != NETCL_OK) { R(*out); *out = NULL; }
    return st;
}

netcl_status nc_rule_gather(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *idx, *t;
    NC_TRY(nc_node_saved(n, 0, &idx));
    NC_TRY(scatter_into_zeros(n, 0, g, (int)n->ip[0], idx, 1, (int)n->ip[1], &t));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* out = scatter(a, dim, idx, src): a's gradient is g where nothing was
 * written (all of g when accumulating); src's is g gathered at idx, placed
 * in the leading box of src's shape when src is larger than idx. */
netcl_status nc_rule_scatter(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int dim = (int)n->ip[0], base = (int)n->ip[1], acc = (int)n->ip[2];
    netcl_tensor *idx;
    NC_TRY(nc_node_saved(n, 0, &idx));
    nc_x x = NC_X(NULL);
    if (nc_input_needs_grad(n, 0)) {
        netcl_tensor *ga = g;
        if (!acc) {
            int64_t no_dims = 0;   /* sizes of a 0-dim tensor (never read, never NULL) */
            netcl_tensor *zero = XC(&x, netcl_tensor_full, nc_dev(g), g->dtype, 0, &no_dims, 0);
            netcl_tensor *zeros = XC(&x, nc_fwd_tensor_expand, zero, idx->ndim, idx->sizes);
            ga = XC(&x, netcl_tensor_cast, g, g->dtype);
            if (x.st == NETCL_OK) nc_x_do(&x, nc_fwd_scatter_into(ga, dim, idx, zeros, 0, base));
        }
        nc_x_grad(&x, n, 0, ga, gin);
    }
    if (nc_input_needs_grad(n, 1)) {
        netcl_tensor *gs = XC(&x, nc_fwd_gather, g, dim, idx, base);
        const nc_edge *e = &n->in[1];
        if (x.st == NETCL_OK && (e->ndim != gs->ndim || memcmp(e->sizes, gs->sizes, sizeof(int64_t) * (size_t)e->ndim))) {
            netcl_tensor *full = XC(&x, netcl_tensor_full, nc_dev(g), g->dtype, e->ndim, e->sizes, 0), *box = full;
            for (int d = 0; d < e->ndim && x.st == NETCL_OK; d++) box = XC(&x, nc_fwd_tensor_narrow, box, d, 0, idx->sizes[d]);
            if (x.st == NETCL_OK) nc_x_do(&x, nc_fwd_copy_into(box, gs));
            gs = full;
        }
        nc_x_grad(&x, n, 1, gs, gin);
    }
    return nc_x_end(&x);
}

netcl_status nc_rule_sort(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *idx, *t;
    NC_TRY(nc_node_saved(n, 0, &idx));
    if (g->ndim == 0) { netcl_tensor_retain(g); return nc_rule_finish(n, 0, g, &gin[0]); }
    NC_TRY(scatter_into_zeros(n, 0, g, (int)n->ip[0], idx, 0, 0, &t));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* y = cumprod(x) along a row: dy_i/dx_j = prod_{k <= i, k != j} x_k for
 * i >= j. Before the row's first zero, dx = revcumsum(g y) / x. At the first
 * zero z, dx_z = revcumsum(g y')_z with y' the cumprod of x with x_z set to
 * 1. After it every product holds x_z = 0: dx = 0. O(n) per row, no
 * division by zero. */
static netcl_tensor *x_scan(nc_x *x, netcl_op op, netcl_tensor *a, int dim, int reverse)
{
    return XC(x, nc_fwd_scan, op, a, dim, reverse);
}

static netcl_tensor *cumprod_grad(nc_x *x, netcl_tensor *g, netcl_tensor *a, netcl_tensor *y, int dim)
{
    netcl_tensor *zero = x_sc(x, NETCL_OP_EQ, a, 0);
    netcl_tensor *count = x_scan(x, NETCL_OP_SUM, zero, dim, 0);   /* zeros up to here (int64) */
    netcl_tensor *before = x_cast(x, x_sc(x, NETCL_OP_EQ, count, 0), a->dtype);
    netcl_tensor *first = x_mul(x, x_cast(x, zero, a->dtype), x_cast(x, x_sc(x, NETCL_OP_EQ, count, 1), a->dtype));
    /* x before the first zero, 1 elsewhere */
    netcl_tensor *safe = x_add(x, x_mul(x, a, before), x_rsc(x, NETCL_OP_SUB, 1, before));
    netcl_tensor *gy = x_scan(x, NETCL_OP_SUM, x_mul(x, g, y), dim, 1);
    netcl_tensor *ya = x_scan(x, NETCL_OP_PROD, x_add(x, a, first), dim, 0);
    netcl_tensor *gz = x_scan(x, NETCL_OP_SUM, x_mul(x, g, ya), dim, 1);
    return x_add(x, x_mul(x, x_div(x, gy, safe), before), x_mul(x, gz, first));
}

netcl_status nc_rule_scan(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->ip[0];
    int dim = (int)n->ip[1];
    if (g->ndim == 0) { netcl_tensor_retain(g); return nc_rule_finish(n, 0, g, &gin[0]); }
    nc_x x = NC_X(NULL);
    netcl_tensor *r;
    if (op == NETCL_OP_SUM) {
        r = x_scan(&x, NETCL_OP_SUM, g, dim, 1);
    } else {
        netcl_tensor *a, *y;
        NC_TRY(nc_node_saved(n, 0, &a));
        NC_TRY(nc_node_saved(n, 1, &y));
        r = cumprod_grad(&x, g, a, y, dim);
    }
    nc_x_grad(&x, n, 0, r, gin);
    return nc_x_end(&x);
}
