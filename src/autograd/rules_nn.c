/* rules_nn.c — backward rules of the selection and nn op families, written
 * with the XC scope (grad mode is off during backward). */
#include "expr.h"

/* where: the chosen side takes g, the other side 0 (cond is saved) */
netcl_status nc_rule_where(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *cond;
    nc_x_do(&x, nc_node_saved(n, 0, &cond));
    if (nc_input_needs_grad(n, 0)) nc_x_grad(&x, n, 0, XC(&x, netcl_where, cond, g, NULL, 0, 0), gin);
    if (nc_input_needs_grad(n, 1)) nc_x_grad(&x, n, 1, XC(&x, netcl_where, cond, NULL, g, 0, 0), gin);
    return nc_x_end(&x);
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
