/* api_index.c — public entry points of the index family's primitives
 * (cat/stack, gather, scatter, sort, cumsum/cumprod, nonzero): the forward
 * op with grad mode off, then, when an input requires grad, one node on
 * the output with what its rule (rules_index.c) needs. In-place scatter_
 * follows the protocol of inplace.c. */
#include "autograd/autograd.h"
#include "ops/ops.h"

#define FORWARD(st, call) do { int prev_ = nc_grad_push_disabled(); st = (call); nc_grad_pop(prev_); } while (0)

static netcl_status record_fail(netcl_tensor **out, nc_node *n, const char *op)
{
    nc_node_release(n);
    netcl_tensor_release(*out);
    *out = NULL;
    return nc_fail(NETCL_ERR_OOM, "%s: out of host memory recording the graph", op);
}

static netcl_status cat_impl(netcl_tensor **out, int n, netcl_tensor *const *ts, int dim, int stack)
{
    const char *op = stack ? "stack" : "cat";
    netcl_status st;
    *out = NULL;
    FORWARD(st, nc_fwd_cat(out, n, ts, dim, stack));
    if (st != NETCL_OK || !nc_should_record(n, ts)) return st;
    nc_node *node = nc_node_new(NC_RULE_CAT, op, n, ts);
    if (!node) return record_fail(out, node, op);
    node->ip[0] = dim;
    node->ip[1] = stack;
    nc_node_attach(node, *out);
    return NETCL_OK;
}

netcl_status netcl_cat(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim)
{
    return cat_impl(out, n, tensors, dim, 0);
}

netcl_status netcl_stack(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim)
{
    return cat_impl(out, n, tensors, dim, 1);
}

netcl_status netcl_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, int index_base)
{
    netcl_status st;
    FORWARD(st, nc_fwd_gather(out, a, dim, index, index_base));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_GATHER, "gather", 1, &a);
    if (!n || nc_node_save(n, 0, index) != NETCL_OK) return record_fail(out, n, "gather");
    n->ip[0] = dim;
    n->ip[1] = index_base;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src,
                           int accumulate, int index_base)
{
    const char *op = accumulate ? "scatter_add" : "scatter";
    netcl_tensor *ins[2] = {a, src};
    netcl_status st;
    FORWARD(st, nc_fwd_scatter(out, a, dim, index, src, accumulate, index_base));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_SCATTER, op, 2, ins);
    if (!n || nc_node_save(n, 0, index) != NETCL_OK) return record_fail(out, n, op);
    n->ip[0] = dim;
    n->ip[1] = index_base;
    n->ip[2] = accumulate != 0;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_scatter_(netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int accumulate, int index_base)
{
    const char *op = accumulate ? "scatter_add" : "scatter";
    netcl_tensor *ins[2] = {a, src};
    if (!nc_should_record(2, ins)) return nc_fwd_scatter_into(a, dim, index, src, accumulate, index_base);
    NC_TRY(nc_inplace_check(a, op));
    netcl_tensor *old, *r;
    NC_TRY(netcl_tensor_cast(&old, a, a->dtype));   /* a recorded copy of a's values */
    netcl_status st = netcl_scatter(&r, old, dim, index, src == a ? old : src, accumulate, index_base);
    netcl_tensor_release(old);
    return st == NETCL_OK ? nc_inplace_adopt(a, r) : st;
}

netcl_status netcl_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending)
{
    netcl_status st;
    FORWARD(st, nc_fwd_sort(values, indices, a, dim, descending));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SORT, "sort", 1, &a);
    if (!n || nc_node_save(n, 0, *indices) != NETCL_OK) {
        netcl_tensor_release(*indices);
        *indices = NULL;
        return record_fail(values, n, "sort");
    }
    n->ip[0] = dim;
    nc_node_attach(n, *values);
    return NETCL_OK;
}

static netcl_status scan(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim)
{
    const char *name = op == NETCL_OP_SUM ? "cumsum" : "cumprod";
    netcl_status st;
    FORWARD(st, nc_fwd_scan(out, op, a, dim, 0));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SCAN, name, 1, &a);
    if (!n) return record_fail(out, n, name);
    n->ip[0] = op;
    n->ip[1] = dim;
    if (op == NETCL_OP_PROD && (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK))
        return record_fail(out, n, name);
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_cumsum(netcl_tensor **out, netcl_tensor *a, int dim) { return scan(out, NETCL_OP_SUM, a, dim); }
netcl_status netcl_cumprod(netcl_tensor **out, netcl_tensor *a, int dim) { return scan(out, NETCL_OP_PROD, a, dim); }

netcl_status netcl_nonzero(netcl_tensor **out, netcl_tensor *a) { return nc_fwd_nonzero(out, a); }
