/* loss.c — losses with autograd: the class losses' public entry point and
 * backward rule (forward: src/ops/loss.c; kernels: backend loss,
 * kernels/loss.cl), and the losses built from recorded ops (autograd comes
 * free): mse, l1, smooth_l1, huber, binary cross-entropy (on probabilities
 * and on logits), KL divergence, cross-entropy and nll over the class
 * losses, each with PyTorch's formula and reduction. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

/* ---- class losses: the node saves x, the targets and the weights ---------- */

netcl_status netcl_class_loss(netcl_tensor **loss, netcl_tensor **wsum, netcl_tensor *x, netcl_tensor *t, netcl_tensor *w,
                              int logp, int64_t base, int64_t ignore, double eps)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_class_loss(loss, wsum, ac[0], t, ac[1], logp, base, ignore, eps), x, w);
    netcl_status st;
    const char *name = logp ? "nll_loss" : "cross_entropy";
    NC_FORWARD(st, nc_fwd_class_loss(loss, wsum, x, t, w, logp, base, ignore, eps));
    if (st != NETCL_OK || !nc_should_record(1, &x)) return st;
    nc_node *n = nc_node_new(NC_RULE_CLASS_LOSS, name, 1, &x);
    if (!n || nc_node_save(n, 0, x) != NETCL_OK || nc_node_save(n, 1, t) != NETCL_OK ||
        (w && nc_node_save(n, 2, w) != NETCL_OK)) {
        netcl_tensor_release(*wsum);
        *wsum = NULL;
        return nc_record_fail(loss, n, name);
    }
    n->p[0] = eps;
    n->ip[0] = logp;
    n->ip[1] = base;
    n->ip[2] = ignore;
    nc_node_attach(n, *loss);
    return NETCL_OK;
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

static netcl_tensor *reduce(nc_x *x, netcl_tensor *l, netcl_reduction r)
{
    if (!l || x->st != NETCL_OK) return NULL;
    switch (r) {
    case NETCL_REDUCTION_NONE: return l;
    case NETCL_REDUCTION_SUM: return x_red(x, NETCL_OP_SUM, l, -1, 0);
    case NETCL_REDUCTION_BATCHMEAN:
        return x_sc(x, NETCL_OP_DIV, x_red(x, NETCL_OP_SUM, l, -1, 0), l->ndim ? (double)l->sizes[0] : 1.0);
    default: return x_red(x, NETCL_OP_MEAN, l, -1, 0);
    }
}

/* input and target must broadcast to the same shape as the input, floating */
static void check_pair(nc_x *x, const netcl_tensor *a, const netcl_tensor *b, netcl_reduction r)
{
    if (x->st != NETCL_OK) return;
    if (!nc_dtype_is_float(a->dtype))
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "needs a floating input, got %s", nc_describe(a)));
    else if (a->ndim != b->ndim || memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) != 0)
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "input %s and target %s must have the same shape", nc_describe(a),
                             nc_describe(b)));
    else if ((unsigned)r > NETCL_REDUCTION_BATCHMEAN)
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "invalid reduction %d", (int)r));
}

netcl_status netcl_mse_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_mse_loss(out, ac[0], ac[1], r), a, b);
    nc_x x = NC_X("mse_loss");
    check_pair(&x, a, b, r);
    return nc_x_return(&x, out, reduce(&x, x_un(&x, NETCL_OP_SQUARE, x_sub(&x, a, b)), r));
}

netcl_status netcl_l1_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_l1_loss(out, ac[0], ac[1], r), a, b);
    nc_x x = NC_X("l1_loss");
    check_pair(&x, a, b, r);
    return nc_x_return(&x, out, reduce(&x, x_un(&x, NETCL_OP_ABS, x_sub(&x, a, b)), r));
}

/* smooth_l1 (beta): 0.5 d^2 / beta where |d| < beta, else |d| - beta / 2;
 * huber (delta): 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2) */
static netcl_status quadratic_linear(netcl_tensor **out, const char *op, netcl_tensor *a, netcl_tensor *b, double t,
                                     int huber, netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, quadratic_linear(out, op, ac[0], ac[1], t, huber, r), a, b);
    nc_x x = NC_X(op);
    check_pair(&x, a, b, r);
    if (x.st == NETCL_OK && t < 0) nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "beta/delta must be >= 0, got %g", t));
    netcl_tensor *d = x_un(&x, NETCL_OP_ABS, x_sub(&x, a, b));
    if (t == 0) return nc_x_return(&x, out, reduce(&x, huber ? x_sc(&x, NETCL_OP_MUL, d, 0) : d, r));
    netcl_tensor *quad = x_sc(&x, NETCL_OP_MUL, x_un(&x, NETCL_OP_SQUARE, d), huber ? 0.5 : 0.5 / t);
    netcl_tensor *lin = huber ? x_sc(&x, NETCL_OP_MUL, x_sc(&x, NETCL_OP_SUB, d, t / 2), t) : x_sc(&x, NETCL_OP_SUB, d, t / 2);
    netcl_tensor *small = XC(&x, netcl_binary_scalar, NETCL_OP_LT, d, t, 0);
    return nc_x_return(&x, out, reduce(&x, XC(&x, netcl_where, small, quad, lin, 0, 0), r));
}

netcl_status netcl_smooth_l1_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, double beta, netcl_reduction r)
{ return quadratic_linear(out, "smooth_l1_loss", a, b, beta, 0, r); }

netcl_status netcl_huber_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, double delta, netcl_reduction r)
{ return quadratic_linear(out, "huber_loss", a, b, delta, 1, r); }

/* -(y log p + (1 - y) log(1 - p)) * weight, each log clamped at -100 as PyTorch */
netcl_status netcl_binary_cross_entropy(netcl_tensor **out, netcl_tensor *p, netcl_tensor *y, netcl_tensor *weight,
                                        netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_binary_cross_entropy(out, ac[0], ac[1], ac[2], r), p, y, weight);
    nc_x x = NC_X("binary_cross_entropy");
    check_pair(&x, p, y, r);
    netcl_tensor *lp = XC(&x, netcl_unary, NETCL_OP_CLAMP, x_un(&x, NETCL_OP_LOG, p), -100, INFINITY);
    netcl_tensor *q = x_rsc(&x, NETCL_OP_SUB, 1, p);
    netcl_tensor *lq = XC(&x, netcl_unary, NETCL_OP_CLAMP, x_un(&x, NETCL_OP_LOG, q), -100, INFINITY);
    netcl_tensor *l = x_sc(&x, NETCL_OP_MUL, x_add(&x, x_mul(&x, y, lp), x_mul(&x, x_rsc(&x, NETCL_OP_SUB, 1, y), lq)), -1);
    if (weight) l = x_mul(&x, l, weight);
    return nc_x_return(&x, out, reduce(&x, l, r));
}

/* (1 - y) x + (1 + (pw - 1) y) softplus(-x): stable for any x */
netcl_status netcl_binary_cross_entropy_with_logits(netcl_tensor **out, netcl_tensor *in, netcl_tensor *y,
                                                    netcl_tensor *weight, netcl_tensor *pos_weight, netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32,
                netcl_binary_cross_entropy_with_logits(out, ac[0], ac[1], ac[2], ac[3], r),
                in, y, weight, pos_weight);
    nc_x x = NC_X("binary_cross_entropy_with_logits");
    check_pair(&x, in, y, r);
    netcl_tensor *sp = XC(&x, netcl_unary, NETCL_OP_SOFTPLUS, x_sc(&x, NETCL_OP_MUL, in, -1), 1, 20);
    netcl_tensor *lw = pos_weight ? x_sc(&x, NETCL_OP_ADD, x_mul(&x, x_sc(&x, NETCL_OP_SUB, pos_weight, 1), y), 1) : NULL;
    netcl_tensor *l = x_add(&x, x_mul(&x, x_rsc(&x, NETCL_OP_SUB, 1, y), in), lw ? x_mul(&x, lw, sp) : sp);
    if (weight) l = x_mul(&x, l, weight);
    return nc_x_return(&x, out, reduce(&x, l, r));
}

/* input: log-probabilities; target: probabilities (log-probabilities with
 * log_target). target (log target - input), 0 where target is 0. */
netcl_status netcl_kl_div(netcl_tensor **out, netcl_tensor *in, netcl_tensor *target, netcl_reduction r, int log_target)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_kl_div(out, ac[0], ac[1], r, log_target), in, target);
    nc_x x = NC_X("kl_div");
    check_pair(&x, in, target, r);
    netcl_tensor *l;
    if (log_target) {
        l = x_mul(&x, x_un(&x, NETCL_OP_EXP, target), x_sub(&x, target, in));
    } else {
        netcl_tensor *pos = XC(&x, netcl_binary_scalar, NETCL_OP_GT, target, 0, 0);
        netcl_tensor *t = x_mul(&x, target, x_sub(&x, x_un(&x, NETCL_OP_LOG, target), in));
        l = XC(&x, netcl_where, pos, t, NULL, 0, 0);
    }
    return nc_x_return(&x, out, reduce(&x, l, r));
}

/* ---- class losses over any shape: x [N, C, d...] (or [C]), t [N, d...] ---- */

static netcl_status class_loss(netcl_tensor **out, const char *op, netcl_tensor *in, netcl_tensor *t, netcl_tensor *w,
                               int logp, int64_t base, int64_t ignore, double eps, netcl_reduction r)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, class_loss(out, op, ac[0], t, ac[1], logp, base, ignore, eps, r), in, w);
    nc_x x = NC_X(op);
    netcl_tensor *x2 = in, *t1 = t;
    int ok = in->ndim >= 1 && t->ndim == (in->ndim == 1 ? 0 : in->ndim - 1);
    for (int i = 0; ok && i < t->ndim; i++) ok = t->sizes[i] == in->sizes[i == 0 ? 0 : i + 1];
    if (!ok)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "input %s (N, C, ...) and target %s (N, ...) do not match",
                              nc_describe(in), nc_describe(t)));
    if ((unsigned)r > NETCL_REDUCTION_SUM && x.st == NETCL_OK)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "invalid reduction %d", (int)r));
    if (x.st != NETCL_OK) return nc_x_return(&x, out, NULL);
    int64_t C = in->ndim == 1 ? in->sizes[0] : in->sizes[1], rows = netcl_tensor_numel(t), shape[2] = {-1, C};
    if (in->ndim > 2) { /* classes last, one row per position */
        int perm[NC_MAX_DIMS], k = 0;
        for (int i = 0; i < in->ndim; i++) if (i != 1) perm[k++] = i;
        perm[k] = 1;
        x2 = XC(&x, netcl_tensor_permute, in, in->ndim, perm);
    }
    x2 = XC(&x, netcl_tensor_reshape, x2, 2, shape);
    t1 = XC(&x, netcl_tensor_reshape, t, 1, &rows);
    netcl_tensor *loss = NULL, *wsum = NULL;
    if (x.st == NETCL_OK) {
        nc_x_do(&x, netcl_class_loss(&loss, &wsum, x2, t1, w, logp, base, ignore, eps));
        nc_x_own(&x, loss);
        nc_x_own(&x, wsum);
    }
    netcl_tensor *res;
    if (r == NETCL_REDUCTION_NONE) res = XC(&x, netcl_tensor_reshape, loss, t->ndim, t->sizes);
    else if (r == NETCL_REDUCTION_SUM) res = x_red(&x, NETCL_OP_SUM, loss, -1, 0);
    else res = x_div(&x, x_red(&x, NETCL_OP_SUM, loss, -1, 0), x_red(&x, NETCL_OP_SUM, wsum, -1, 0));
    return nc_x_return(&x, out, res);
}

netcl_status netcl_cross_entropy(netcl_tensor **out, netcl_tensor *logits, netcl_tensor *target, netcl_tensor *weight,
                                 int64_t index_base, int64_t ignore_index, double label_smoothing, netcl_reduction r)
{
    return class_loss(out, "cross_entropy", logits, target, weight, 0, index_base, ignore_index, label_smoothing, r);
}

netcl_status netcl_nll_loss(netcl_tensor **out, netcl_tensor *logp, netcl_tensor *target, netcl_tensor *weight,
                            int64_t index_base, int64_t ignore_index, netcl_reduction r)
{
    return class_loss(out, "nll_loss", logp, target, weight, 1, index_base, ignore_index, 0, r);
}
