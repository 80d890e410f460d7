/* views.c — views with autograd: view/reshape, transpose, permute, expand,
 * narrow/select/slice, squeeze/unsqueeze (forward: src/ops/views.c; no
 * kernels: geometry only) and their backward rules. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_tensor_view(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ NC_VIEW_OP("view", NC_RULE_RESHAPE, nc_fwd_tensor_view(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_reshape(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ NC_VIEW_OP("reshape", NC_RULE_RESHAPE, nc_fwd_tensor_reshape(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_squeeze(netcl_tensor **out, netcl_tensor *t, int dim)
{ NC_VIEW_OP("squeeze", NC_RULE_RESHAPE, nc_fwd_tensor_squeeze(out, t, dim), NULL, 0); }

netcl_status netcl_tensor_unsqueeze(netcl_tensor **out, netcl_tensor *t, int dim)
{ NC_VIEW_OP("unsqueeze", NC_RULE_RESHAPE, nc_fwd_tensor_unsqueeze(out, t, dim), NULL, 0); }

netcl_status netcl_tensor_transpose(netcl_tensor **out, netcl_tensor *t, int d0, int d1)
{
    int64_t ip[2] = {d0, d1};
    NC_VIEW_OP("transpose", NC_RULE_TRANSPOSE, nc_fwd_tensor_transpose(out, t, d0, d1), ip, 2);
}

netcl_status netcl_tensor_permute(netcl_tensor **out, netcl_tensor *t, int ndim, const int *dims)
{
    int64_t ip[NC_MAX_DIMS];
    for (int i = 0; i < ndim && i < NC_MAX_DIMS; i++) ip[i] = dims[i];
    NC_VIEW_OP("permute", NC_RULE_PERMUTE, nc_fwd_tensor_permute(out, t, ndim, dims), ip, ndim < NC_MAX_DIMS ? ndim : NC_MAX_DIMS);
}

netcl_status netcl_tensor_expand(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ NC_VIEW_OP("expand", NC_RULE_EXPAND, nc_fwd_tensor_expand(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_slice(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t stop, int64_t step)
{
    int64_t ip[4] = {dim, start, stop, step};
    NC_VIEW_OP("slice", NC_RULE_SLICE, nc_fwd_tensor_slice(out, t, dim, start, stop, step), ip, 4);
}

netcl_status netcl_tensor_narrow(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t length)
{
    int64_t ip[4] = {dim, start, start + length, 1};
    NC_VIEW_OP("narrow", NC_RULE_SLICE, nc_fwd_tensor_narrow(out, t, dim, start, length), ip, 4);
}

netcl_status netcl_tensor_select(netcl_tensor **out, netcl_tensor *t, int dim, int64_t index)
{
    int64_t ip[2] = {dim, index};
    NC_VIEW_OP("select", NC_RULE_SELECT, nc_fwd_tensor_select(out, t, dim, index), ip, 2);
}

netcl_status nc_rule_reshape(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_reshape(&t, g, n->in[0].ndim, n->in[0].sizes));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

netcl_status nc_rule_transpose(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_transpose(&t, g, (int)n->ip[0], (int)n->ip[1]));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

netcl_status nc_rule_permute(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int inv[NC_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) inv[n->ip[d]] = d;
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_permute(&t, g, g->ndim, inv));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

netcl_status nc_rule_expand(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor_retain(g);
    return nc_rule_finish(n, 0, g, &gin[0]);
}

/* zeros of the input's shape with g written into the viewed region */
static netcl_status scatter_back(nc_node *n, netcl_tensor *g, netcl_tensor **gin, int select)
{
    netcl_tensor *z, *v = NULL;
    NC_TRY(netcl_tensor_full(&z, nc_dev(g), g->dtype, n->in[0].ndim, n->in[0].sizes, 0));
    netcl_status st = select ? nc_fwd_tensor_select(&v, z, (int)n->ip[0], n->ip[1])
                             : nc_fwd_tensor_slice(&v, z, (int)n->ip[0], n->ip[1], n->ip[2], n->ip[3]);
    if (st == NETCL_OK) st = netcl_tensor_copy_(v, g);
    R(v);
    if (st != NETCL_OK) { R(z); return st; }
    return nc_rule_finish(n, 0, z, &gin[0]);
}

netcl_status nc_rule_slice(nc_node *n, netcl_tensor *g, netcl_tensor **gin) { return scatter_back(n, g, gin, 0); }
netcl_status nc_rule_select(nc_node *n, netcl_tensor *g, netcl_tensor **gin) { return scatter_back(n, g, gin, 1); }
