/* api_nn.c — public, recording entry points of the selection and nn op
 * families (where, softmax, ...): forward with grad mode off, then one node
 * on the output when an input requires grad (rules in rules_nn.c). */
#include "expr.h"

#define FORWARD(st, call) do { int prev_ = nc_grad_push_disabled(); st = (call); nc_grad_pop(prev_); } while (0)

static netcl_status record_fail(netcl_tensor **out, nc_node *n, const char *op)
{
    nc_node_release(n);
    netcl_tensor_release(*out);
    *out = NULL;
    return nc_fail(NETCL_ERR_OOM, "%s: out of host memory recording the graph", op);
}

netcl_status netcl_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb)
{
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    FORWARD(st, nc_fwd_where(out, cond, a, b, sa, sb));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_WHERE, "where", 2, ins);
    if (!n || nc_node_save(n, 0, cond) != NETCL_OK) return record_fail(out, n, "where");
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_softmax(netcl_tensor **out, netcl_tensor *a, int dim, int log)
{
    netcl_status st;
    const char *name = log ? "log_softmax" : "softmax";
    FORWARD(st, nc_fwd_softmax(out, a, dim, log));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SOFTMAX, name, 1, &a);
    if (!n || nc_node_save(n, 0, *out) != NETCL_OK) return record_fail(out, n, name);
    n->ip[0] = dim;
    n->ip[1] = log;
    nc_node_attach(n, *out);
    return NETCL_OK;
}
