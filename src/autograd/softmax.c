/* softmax.c — softmax and log_softmax with autograd: the public entry
 * point and the backward rule (forward: src/ops/softmax.c; kernels:
 * backend softmax, kernels/softmax.cl). */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_softmax(netcl_tensor **out, netcl_tensor *a, int dim, int log)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_softmax(out, ac[0], dim, log), a);
    netcl_status st;
    const char *name = log ? "log_softmax" : "softmax";
    NC_FORWARD(st, nc_fwd_softmax(out, a, dim, log));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SOFTMAX, name, 1, &a);
    if (!n || nc_node_save(n, 0, *out) != NETCL_OK) return nc_record_fail(out, n, name);
    n->ip[0] = dim;
    n->ip[1] = log;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* softmax/log_softmax from the saved output (one backward kernel) */
netcl_status nc_rule_softmax(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *y;
    nc_x_do(&x, nc_node_saved(n, 0, &y));
    nc_x_grad(&x, n, 0, XC(&x, nc_fwd_softmax_backward, g, y, (int)n->ip[0], (int)n->ip[1]), gin);
    return nc_x_end(&x);
}
