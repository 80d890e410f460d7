/* api_nn.c — public, recording entry points of the selection and nn op
 * families (where, softmax, ...): forward with grad mode off, then one node
 * on the output when an input requires grad (rules in rules_nn.c). */
#include "autograd/expr.h"
#include <string.h>

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
    FORWARD(st, nc_fwd_unfold(out, x, k, d, p, s));
    if (st != NETCL_OK || !nc_should_record(1, &x)) return st;
    nc_node *n = nc_node_new(NC_RULE_UNFOLD, "unfold", 1, &x);
    if (!n) return record_fail(out, n, "unfold");
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
    FORWARD(st, nc_fwd_fold(out, cols, size, k, d, p, s));
    if (st != NETCL_OK || !nc_should_record(1, &cols)) return st;
    nc_node *n = nc_node_new(NC_RULE_FOLD, "fold", 1, &cols);
    if (!n) return record_fail(out, n, "fold");
    window_params(n, k, d, p, s);
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* ---- pooling: ip holds the whole nc_pool_geom; max pooling saves its indices ---- */

static netcl_status pool(netcl_tensor **out, netcl_tensor **indices, netcl_tensor *x, const char *name, const nc_pool_geom *g)
{
    netcl_status st;
    netcl_tensor *idx = NULL;
    FORWARD(st, nc_fwd_pool(out, g->mode == 0 ? &idx : NULL, x, g));
    if (st == NETCL_OK && nc_should_record(1, &x)) {
        nc_node *n = nc_node_new(NC_RULE_POOL, name, 1, &x);
        if (!n || (idx && nc_node_save(n, 0, idx) != NETCL_OK)) {
            netcl_tensor_release(idx);
            return record_fail(out, n, name);
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

/* ---- class losses: the node saves x, the targets and the weights ---------- */

netcl_status netcl_class_loss(netcl_tensor **loss, netcl_tensor **wsum, netcl_tensor *x, netcl_tensor *t, netcl_tensor *w,
                              int logp, int64_t base, int64_t ignore, double eps)
{
    netcl_status st;
    const char *name = logp ? "nll_loss" : "cross_entropy";
    FORWARD(st, nc_fwd_class_loss(loss, wsum, x, t, w, logp, base, ignore, eps));
    if (st != NETCL_OK || !nc_should_record(1, &x)) return st;
    nc_node *n = nc_node_new(NC_RULE_CLASS_LOSS, name, 1, &x);
    if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, t) != NETCL_OK ||
        (w && nc_node_save(n, 2, w) != NETCL_OK)) {
        netcl_tensor_release(*wsum);
        *wsum = NULL;
        return record_fail(loss, n, name);
    }
    n->p[0] = eps;
    n->ip[0] = logp;
    n->ip[1] = base;
    n->ip[2] = ignore;
    nc_node_attach(n, *loss);
    return NETCL_OK;
}

/* ---- conv2d / conv_transpose2d: primitives with strategies (src/conv2d.c) -----
 * The node saves the pass's two operands; ip holds the nc_conv_args, p[0]
 * marks the transposed form (the backward-data pass of the conv in ip). */

static netcl_status conv_record(netcl_tensor **out, const char *name, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                const nc_conv_args *g, int transposed)
{
    netcl_tensor *ins[3] = {x, w, b};
    if (!nc_should_record(3, ins)) return NETCL_OK;
    nc_node *n = nc_node_new(NC_RULE_CONV2D, name, 3, ins);
    if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, w) != NETCL_OK) return record_fail(out, n, name);
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
    FORWARD(st, nc_fwd_conv2d_fused(out, &g, transposed ? NC_CONV_PASS_DATA : NC_CONV_PASS_FWD, x, w, &f));
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

/* ---- batch_norm: fused; the node saves x, mean, invstd and the weight ---------- */

netcl_status netcl_batch_norm(netcl_tensor **out, netcl_tensor *x, netcl_tensor *running_mean, netcl_tensor *running_var,
                              netcl_tensor *weight, netcl_tensor *bias, int training, double momentum, double eps)
{
    netcl_status st;
    netcl_tensor *mean = NULL, *invstd = NULL;
    FORWARD(st, nc_fwd_batch_norm(out, &mean, &invstd, x, running_mean, running_var, weight, bias, training, momentum, eps));
    netcl_tensor *ins[3] = {x, weight, bias};
    if (st == NETCL_OK && nc_should_record(3, ins)) {
        nc_node *n = nc_node_new(NC_RULE_BATCH_NORM, "batch_norm", 3, ins);
        if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, mean) != NETCL_OK ||
            nc_node_save(n, 2, invstd) != NETCL_OK || (weight && nc_node_save(n, 3, weight) != NETCL_OK)) {
            netcl_tensor_release(mean);
            netcl_tensor_release(invstd);
            return record_fail(out, n, "batch_norm");
        }
        n->ip[0] = training;
        nc_node_attach(n, *out);
    }
    netcl_tensor_release(mean);
    netcl_tensor_release(invstd);
    return st;
}
