/* rules_nn.c — backward rules of the selection and nn op families, written
 * with the XC scope (grad mode is off during backward). */
#include "autograd/expr.h"
#include <string.h>

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

/* unfold and fold are each other's adjoint */
netcl_status nc_rule_unfold(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    const int64_t *ip = n->ip;
    nc_x_grad(&x, n, 0, XC(&x, nc_fwd_fold, g, &ip[8], &ip[0], &ip[2], &ip[4], &ip[6]), gin);
    return nc_x_end(&x);
}

netcl_status nc_rule_fold(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    const int64_t *ip = n->ip;
    nc_x_grad(&x, n, 0, XC(&x, nc_fwd_unfold, g, &ip[0], &ip[2], &ip[4], &ip[6]), gin);
    return nc_x_end(&x);
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

/* class losses: one backward kernel from the saved input, targets, weights */
netcl_status nc_rule_class_loss(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *in = NULL, *t = NULL, *w = NULL;
    nc_x_do(&x, nc_node_saved(n, 0, &in));
    nc_x_do(&x, nc_node_saved(n, 1, &t));
    if (n->saved[2]) nc_x_do(&x, nc_node_saved(n, 2, &w));
    nc_x_grad(&x, n, 0, XC(&x, nc_fwd_class_loss_backward, g, in, t, w, (int)n->ip[0], n->ip[1], n->ip[2], n->p[0]), gin);
    return nc_x_end(&x);
}

/* conv2d: dx by the backward-data pass, dw by the backward-weight pass, db
 * the sum of g over (N, H, W). conv_transpose2d is the backward-data pass
 * of the conv in ip, so its input gradient is that conv's forward pass. */
netcl_status nc_rule_conv2d(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    nc_conv_args geom;
    memcpy(&geom, n->ip, sizeof geom);
    int transposed = n->p[0] != 0;
    netcl_tensor *in = NULL, *w = NULL;
    nc_x_do(&x, nc_node_saved(n, 0, &in));
    nc_x_do(&x, nc_node_saved(n, 1, &w));
    if (nc_input_needs_grad(n, 0))
        nc_x_grad(&x, n, 0, XC(&x, nc_fwd_conv2d_pass, &geom, transposed ? NC_CONV_PASS_FWD : NC_CONV_PASS_DATA, g, w), gin);
    if (nc_input_needs_grad(n, 1)) {
        netcl_tensor *a = transposed ? g : in, *b = transposed ? in : g;
        nc_x_grad(&x, n, 1, XC(&x, nc_fwd_conv2d_pass, &geom, NC_CONV_PASS_WEIGHT, a, b), gin);
    }
    if (nc_input_needs_grad(n, 2)) {
        int dims[3] = {0, 2, 3};
        nc_x_grad(&x, n, 2, XC(&x, netcl_reduce_dims, NETCL_OP_SUM, g, 3, dims, 0), gin);
    }
    return nc_x_end(&x);
}

/* batch_norm: both backward kernels at once give dx, dw (sum g xhat) and db (sum g) */
netcl_status nc_rule_batch_norm(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *in = NULL, *mean = NULL, *invstd = NULL, *w = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    nc_x_do(&x, nc_node_saved(n, 0, &in));
    nc_x_do(&x, nc_node_saved(n, 1, &mean));
    nc_x_do(&x, nc_node_saved(n, 2, &invstd));
    if (n->saved[3]) nc_x_do(&x, nc_node_saved(n, 3, &w));
    if (x.st == NETCL_OK) {
        nc_x_do(&x, nc_fwd_batch_norm_backward(&dx, &dw, &db, g, in, mean, invstd, w, (int)n->ip[0]));
        nc_x_own(&x, dx); nc_x_own(&x, dw); nc_x_own(&x, db);
    }
    nc_x_grad(&x, n, 0, dx, gin);
    nc_x_grad(&x, n, 1, dw, gin);
    nc_x_grad(&x, n, 2, db, gin);
    return nc_x_end(&x);
}
