/* norm.c — normalisation with autograd: batch_norm's public entry point
 * and backward rule (forward: src/ops/norm.c; kernels: backend norm,
 * kernels/norm.cl), and layer_norm, group_norm and dropout built from
 * recorded ops (autograd comes free). Statistics use the biased variance,
 * as PyTorch does. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

/* ---- batch_norm: fused; the node saves x, mean, invstd and the weight
 * (with a fused relu also the result, whose zeros mask the gradient, as
 * relu's own rule reads its output); a residual added before the relu is
 * its fourth input ------------------------------------------------------ */

static const char *batch_norm_name(int relu, const netcl_tensor *res)
{
    return res ? (relu ? "batch_norm_add_relu" : "batch_norm_add") : relu ? "batch_norm_relu" : "batch_norm";
}

/* Records the node of a batch norm whose forward made *out, mean and invstd
 * (takes those two); x is what the node saves and backward normalises. */
static netcl_status record_batch_norm(netcl_tensor **out, netcl_status st, netcl_tensor *x, netcl_tensor *weight,
                                      netcl_tensor *bias, netcl_tensor *res, netcl_tensor *mean, netcl_tensor *invstd,
                                      int training, int relu)
{
    netcl_tensor *ins[4] = {x, weight, bias, res};
    const char *name = batch_norm_name(relu, res);
    if (st == NETCL_OK && nc_should_record(4, ins)) {
        nc_node *n = nc_node_new(NC_RULE_BATCH_NORM, name, 4, ins);
        if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, mean) != NETCL_OK ||
            nc_node_save(n, 2, invstd) != NETCL_OK || (weight && nc_node_save(n, 3, weight) != NETCL_OK) ||
            (relu && nc_node_save(n, 4, *out) != NETCL_OK)) {
            netcl_tensor_release(mean);
            netcl_tensor_release(invstd);
            return nc_record_fail(out, n, name);
        }
        n->ip[0] = training;
        nc_node_attach(n, *out);
    }
    netcl_tensor_release(mean);
    netcl_tensor_release(invstd);
    return st;
}

/* Under autocast a 16-bit input keeps its dtype, as cuDNN's batch norm
 * does: the op reads and writes 16-bit data with statistics, weight and
 * bias in float32 (a 16-bit weight or bias is read through a recorded
 * cast), so the ReLU and convolution after it keep 16-bit tensors too. */
static netcl_status batch_norm(netcl_tensor **out, netcl_tensor *x, netcl_tensor *running_mean, netcl_tensor *running_var,
                               netcl_tensor *weight, netcl_tensor *bias, int training, double momentum, double eps, int relu,
                               netcl_tensor *res)
{
    *out = NULL;
    netcl_tensor *wf = NULL, *bf = NULL, *mean = NULL, *invstd = NULL;
    netcl_status st = NETCL_OK;
    /* the running statistics are written in place: never cast, so float32 ones only */
    if (netcl_autocast_enabled() && (x->dtype == NETCL_DTYPE_FLOAT16 || x->dtype == NETCL_DTYPE_BFLOAT16) &&
        (!running_mean || running_mean->dtype == NETCL_DTYPE_FLOAT32)) {
        if (weight && weight->dtype != NETCL_DTYPE_FLOAT32) st = netcl_tensor_cast(&wf, weight, NETCL_DTYPE_FLOAT32);
        if (bias && bias->dtype != NETCL_DTYPE_FLOAT32 && st == NETCL_OK) st = netcl_tensor_cast(&bf, bias, NETCL_DTYPE_FLOAT32);
    }
    if (wf) weight = wf;
    if (bf) bias = bf;
    if (st == NETCL_OK)
        NC_FORWARD(st, nc_fwd_batch_norm(out, &mean, &invstd, x, running_mean, running_var, weight, bias, training, momentum,
                                         eps, relu, res));
    st = record_batch_norm(out, st, x, weight, bias, res, mean, invstd, training, relu);
    netcl_tensor_release(wf);
    netcl_tensor_release(bf);
    return st;
}

netcl_status netcl_batch_norm(netcl_tensor **out, netcl_tensor *x, netcl_tensor *running_mean, netcl_tensor *running_var,
                              netcl_tensor *weight, netcl_tensor *bias, int training, double momentum, double eps)
{
    return batch_norm(out, x, running_mean, running_var, weight, bias, training, momentum, eps, 0, NULL);
}

/* the residual is added and relu runs in the normalising pass, relu's mask
 * in the backward ones; another activation is its own op after them */
netcl_status netcl_batch_norm_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *residual, netcl_tensor *running_mean,
                                  netcl_tensor *running_var, netcl_tensor *weight, netcl_tensor *bias, int training,
                                  double momentum, double eps, netcl_op act, double act_param)
{
    *out = NULL;
    if ((int)act >= 0 && !nc_gemm_act_ok((int)act))
        return nc_fail(NETCL_ERR_ARGUMENT, "batch_norm_act: activation %d is not one of relu, sigmoid, tanh, silu, gelu, "
                       "gelu_tanh, relu6, leaky_relu or none (-1)", (int)act);
    if (act == NETCL_OP_RELU)
        return batch_norm(out, x, running_mean, running_var, weight, bias, training, momentum, eps, 1, residual);
    NC_TRY(batch_norm(out, x, running_mean, running_var, weight, bias, training, momentum, eps, 0, residual));
    if ((int)act < 0) return NETCL_OK;
    netcl_tensor *y = *out;
    netcl_status st = netcl_unary(out, act, y, act_param, 0);
    netcl_tensor_release(y);
    return st;
}

/* batch_norm: both backward kernels at once give dx, dw (sum g xhat) and
 * db (sum g); a residual's gradient is g past the relu's mask, which then
 * is a tensor of its own (one kernel) that the backward kernels take
 * unmasked */
netcl_status nc_rule_batch_norm(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *in = NULL, *mean = NULL, *invstd = NULL, *w = NULL, *y = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    netcl_tensor *gres = NULL;
    nc_x_do(&x, nc_node_saved(n, 0, &in));
    nc_x_do(&x, nc_node_saved(n, 1, &mean));
    nc_x_do(&x, nc_node_saved(n, 2, &invstd));
    if (n->saved[3]) nc_x_do(&x, nc_node_saved(n, 3, &w));
    if (n->saved[4]) nc_x_do(&x, nc_node_saved(n, 4, &y));
    if (nc_input_needs_grad(n, 3) && x.st == NETCL_OK) {
        gres = g;
        if (y) {
            nc_x_do(&x, nc_fwd_unary_grad(&gres, NETCL_OP_RELU, g, y, y, 0, 0));
            g = nc_x_own(&x, gres);
            y = NULL;
        }
    }
    if (x.st == NETCL_OK) {
        nc_x_do(&x, nc_fwd_batch_norm_backward(&dx, &dw, &db, g, in, mean, invstd, w, y, (int)n->ip[0]));
        nc_x_own(&x, dx); nc_x_own(&x, dw); nc_x_own(&x, db);
    }
    nc_x_grad(&x, n, 0, dx, gin);
    nc_x_grad(&x, n, 1, dw, gin);
    nc_x_grad(&x, n, 2, db, gin);
    nc_x_grad(&x, n, 3, gres, gin);
    return nc_x_end(&x);
}

/* t viewed so that it broadcasts along dim 1 of an ndim-dim tensor: [1, C, 1, ...] */
static netcl_tensor *channel_view(nc_x *x, netcl_tensor *t, int ndim)
{
    if (!t || x->st != NETCL_OK) return NULL;
    int64_t shape[NC_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = i == 1 ? t->sizes[0] : 1;
    return XC(x, netcl_tensor_view, t, ndim, shape);
}

static void check_vec(nc_x *x, const char *op, const char *what, const netcl_tensor *v, int64_t n)
{
    if (x->st == NETCL_OK && v && (v->ndim != 1 || v->sizes[0] != n))
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "%s: %s %s must have %lld elements", op, what, nc_describe(v), (long long)n));
}

/* (x - mean) / sqrt(var + eps) over the dims flagged in `dims` (keepdim) */
static netcl_tensor *normalise(nc_x *x, netcl_tensor *in, int ndims, const int *dims, double eps,
                               netcl_tensor **mean_out, netcl_tensor **var_out)
{
    netcl_tensor *m = XC(x, netcl_reduce_dims, NETCL_OP_MEAN, in, ndims, dims, 1);
    netcl_tensor *d = x_sub(x, in, m);
    netcl_tensor *v = XC(x, netcl_var, in, ndims, dims, 0, 1);
    if (mean_out) *mean_out = m;
    if (var_out) *var_out = v;
    return x_mul(x, d, x_un(x, NETCL_OP_RSQRT, x_sc(x, NETCL_OP_ADD, v, eps)));
}

/* y * w + b with w, b viewed by `view` (either may be NULL) */
static netcl_tensor *affine(nc_x *x, netcl_tensor *y, netcl_tensor *w, netcl_tensor *b)
{
    if (w) y = x_mul(x, y, w);
    if (b) y = x_add(x, y, b);
    return y;
}

/* normalised over the last nnorm dims; weight and bias have those dims' shape */
netcl_status netcl_layer_norm(netcl_tensor **out, netcl_tensor *in, int nnorm, netcl_tensor *weight, netcl_tensor *bias,
                              double eps)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_layer_norm(out, ac[0], nnorm, ac[1], ac[2], eps), in, weight, bias);
    nc_x x = NC_X("layer_norm");
    if (nnorm < 1 || nnorm > in->ndim)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "normalized_shape has %d dims, %s has %d", nnorm, nc_describe(in), in->ndim));
    for (int k = 0; k < 2 && x.st == NETCL_OK; k++) {
        netcl_tensor *p = k ? bias : weight;
        if (!p) continue;
        int ok = p->ndim == nnorm;
        for (int i = 0; ok && i < nnorm; i++) ok = p->sizes[i] == in->sizes[in->ndim - nnorm + i];
        if (!ok) nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "%s %s does not match the last %d dims of %s",
                                       k ? "bias" : "weight", nc_describe(p), nnorm, nc_describe(in)));
    }
    int dims[NC_MAX_DIMS];
    for (int i = 0; i < nnorm; i++) dims[i] = in->ndim - nnorm + i;
    netcl_tensor *y = x.st == NETCL_OK ? normalise(&x, in, nnorm, dims, eps, NULL, NULL) : NULL;
    return nc_x_return(&x, out, affine(&x, y, weight, bias));
}

/* x [N, C, ...] normalised within each of `groups` channel groups */
netcl_status netcl_group_norm(netcl_tensor **out, netcl_tensor *in, int64_t groups, netcl_tensor *weight, netcl_tensor *bias,
                              double eps)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_group_norm(out, ac[0], groups, ac[1], ac[2], eps), in, weight, bias);
    nc_x x = NC_X("group_norm");
    if (in->ndim < 2 || groups < 1 || in->sizes[1] % groups != 0)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "%s: channels (dim 2) must be divisible by groups = %lld",
                              nc_describe(in), (long long)groups));
    int64_t C = x.st == NETCL_OK ? in->sizes[1] : 0;
    check_vec(&x, "group_norm", "weight", weight, C);
    check_vec(&x, "group_norm", "bias", bias, C);
    if (x.st != NETCL_OK) return nc_x_return(&x, out, NULL);
    int64_t shape[3] = {in->sizes[0], groups, -1};
    int last = 2;
    netcl_tensor *g = XC(&x, netcl_tensor_reshape, in, 3, shape);
    netcl_tensor *y = normalise(&x, g, 1, &last, eps, NULL, NULL);
    y = XC(&x, netcl_tensor_reshape, y, in->ndim, in->sizes);
    y = affine(&x, y, channel_view(&x, weight, in->ndim), channel_view(&x, bias, in->ndim));
    return nc_x_return(&x, out, y);
}

/* x * mask / (1 - p), mask ~ Bernoulli(1 - p) from the seeded generator;
 * channelwise: one draw per (n, c) (dropout2d). Identity when not training. */
netcl_status netcl_dropout(netcl_tensor **out, netcl_tensor *in, double p, int training, int channelwise)
{
    nc_x x = NC_X(channelwise ? "dropout2d" : "dropout");
    if (!(p >= 0 && p <= 1)) nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "p must be in [0, 1], got %g", p));
    if (x.st == NETCL_OK && channelwise && in->ndim < 3)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "expects [N, C, ...] with spatial dims, got %s", nc_describe(in)));
    if (x.st == NETCL_OK && !nc_dtype_is_float(in->dtype))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "needs a floating tensor, got %s", nc_describe(in)));
    if (x.st != NETCL_OK || !training || p == 0) return nc_x_return(&x, out, x.st == NETCL_OK ? in : NULL);
    int64_t shape[NC_MAX_DIMS];
    for (int i = 0; i < in->ndim; i++) shape[i] = channelwise && i >= 2 ? 1 : in->sizes[i];
    if (p == 1) return nc_x_return(&x, out, x_sc(&x, NETCL_OP_MUL, in, 0));
    netcl_tensor *u = XC(&x, netcl_tensor_rand, nc_dev(in), NETCL_DTYPE_FLOAT32, in->ndim, shape, NETCL_RNG_UNIFORM, 0, 1);
    netcl_tensor *keep = XC(&x, netcl_binary_scalar, NETCL_OP_GE, u, p, 0);
    netcl_tensor *scaled = x_sc(&x, NETCL_OP_MUL, in, 1 / (1 - p));
    return nc_x_return(&x, out, XC(&x, netcl_where, keep, scaled, NULL, 0, 0));
}
