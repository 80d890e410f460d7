/* conv.c — convolutions with autograd: the public entry points of conv2d,
 * conv_transpose2d (with fused epilogues) and unfold/fold, and their
 * backward rules (forward and the strategies: src/ops/conv.c,
 * conv_unfold.c; kernels: backend conv, kernels/conv_*.cl); conv1d is a
 * conv2d of height 1 (a composite). */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

/* ---- unfold / fold: ip holds k, d, p, s (pairs) and the folded size ---------- */

static void window_params(nc_node *n, const int64_t *k, const int64_t *d, const int64_t *p, const int64_t *s)
{
    for (int i = 0; i < 2; i++) {
        n->ip[i] = k[i];
        n->ip[2 + i] = d[i];
        n->ip[4 + i] = p[i];
        n->ip[6 + i] = s[i];
    }
}

netcl_status netcl_unfold(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                          const int64_t *s)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_unfold(out, x, k, d, p, s));
    if (st != NETCL_OK || !nc_should_record(1, &x)) return st;
    nc_node *n = nc_node_new(NC_RULE_UNFOLD, "unfold", 1, &x);
    if (!n) return nc_record_fail(out, n, "unfold");
    window_params(n, k, d, p, s);
    n->ip[8] = x->sizes[2];
    n->ip[9] = x->sizes[3];
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_fold(netcl_tensor **out, netcl_tensor *cols, const int64_t *size, const int64_t *k, const int64_t *d,
                        const int64_t *p, const int64_t *s)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_fold(out, cols, size, k, d, p, s));
    if (st != NETCL_OK || !nc_should_record(1, &cols)) return st;
    nc_node *n = nc_node_new(NC_RULE_FOLD, "fold", 1, &cols);
    if (!n) return nc_record_fail(out, n, "fold");
    window_params(n, k, d, p, s);
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* ---- conv2d / conv_transpose2d: primitives with strategies (src/ops/conv.c) --
 * The node saves the pass's two operands; ip holds the nc_conv_args, p[0]
 * marks the transposed form (the backward-data pass of the conv in ip). */

static netcl_status conv_record(netcl_tensor **out, const char *name, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                const nc_conv_args *g, int transposed)
{
    netcl_tensor *ins[3] = {x, w, b};
    if (!nc_should_record(3, ins)) return NETCL_OK;
    nc_node *n = nc_node_new(NC_RULE_CONV2D, name, 3, ins);
    if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, w) != NETCL_OK) return nc_record_fail(out, n, name);
    memcpy(n->ip, g, sizeof *g);
    n->p[0] = transposed;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* conv2d (output_padding NULL) or conv_transpose2d: the planned pass with
 * the bias fused, the node, and the activation act (-1: none): fused too
 * when nothing records, else recorded as its own op after the node */
static netcl_status conv_op(netcl_tensor **out, const char *name, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                            const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                            const int64_t *output_padding, int act, double act_p)
{
    NC_AUTOCAST(NC_AUTOCAST_LOWER,
                conv_op(out, name, ac[0], ac[1], ac[2], stride, padding, dilation, groups, output_padding, act, act_p),
                x, w, b);
    nc_conv_args g;
    *out = NULL;
    NC_TRY(nc_conv2d_setup(name, x, w, b, stride, padding, dilation, groups, output_padding, &g));
    if (!nc_gemm_act_ok(act))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: activation %d cannot be fused (relu, sigmoid, tanh, silu, gelu, gelu_tanh, "
                       "relu6, leaky_relu or none)", name, act);
    int transposed = output_padding != NULL;
    netcl_tensor *ins[3] = {x, w, b};
    int records = nc_should_record(3, ins);
    nc_conv_fuse f = {b, records ? -1 : act, act_p};
    netcl_status st;
    NC_FORWARD(st, nc_fwd_conv2d_fused(out, &g, transposed ? NC_CONV_PASS_DATA : NC_CONV_PASS_FWD, x, w, &f));
    if (st == NETCL_OK) st = conv_record(out, name, x, w, b, &g, transposed);
    if (st == NETCL_OK && records && act >= 0) {
        netcl_tensor *y = *out;
        st = netcl_unary(out, (netcl_op)act, y, act_p, 0);
        netcl_tensor_release(y);
    }
    return st;
}

netcl_status netcl_conv2d(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b, const int64_t *stride,
                          const int64_t *padding, const int64_t *dilation, int64_t groups)
{
    return conv_op(out, "conv2d", x, w, b, stride, padding, dilation, groups, NULL, -1, 0);
}

netcl_status netcl_conv2d_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int64_t groups, netcl_op act, double act_param)
{
    return conv_op(out, "conv2d", x, w, b, stride, padding, dilation, groups, NULL, (int)act, act_param);
}

netcl_status netcl_conv_transpose2d(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                    const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                    const int64_t *dilation, int64_t groups)
{
    return conv_op(out, "conv_transpose2d", x, w, b, stride, padding, dilation, groups, output_padding, -1, 0);
}

netcl_status netcl_conv_transpose2d_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                        const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                        const int64_t *dilation, int64_t groups, netcl_op act, double act_param)
{
    return conv_op(out, "conv_transpose2d", x, w, b, stride, padding, dilation, groups, output_padding, (int)act, act_param);
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

netcl_status netcl_conv1d(netcl_tensor **out, netcl_tensor *in, netcl_tensor *w, netcl_tensor *b, int64_t stride,
                          int64_t padding, int64_t dilation, int64_t groups)
{
    nc_x x = NC_X("conv1d");
    if (in->ndim != 3 || w->ndim != 3)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "input %s and weight %s must be 3-dimensional (N, C, L) and "
                              "(out, in/groups, k)", nc_describe(in), nc_describe(w)));
    netcl_tensor *in4 = XC(&x, netcl_tensor_unsqueeze, in, 2);
    netcl_tensor *w4 = XC(&x, netcl_tensor_unsqueeze, w, 2);
    int64_t s[2] = {1, stride}, p[2] = {0, padding}, d[2] = {1, dilation};
    netcl_tensor *y = XC(&x, netcl_conv2d, in4, w4, b, s, p, d, groups);
    return nc_x_return(&x, out, XC(&x, netcl_tensor_squeeze, y, 2));
}
