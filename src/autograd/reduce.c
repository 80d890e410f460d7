/* reduce.c — reductions with autograd: the public entry points of the
 * one-dim reductions (forward: src/ops/reduce.c; kernels: backend reduce)
 * and their backward rules, and the composites built from recorded ops
 * (autograd comes free): over several dims, var/std, norm, logsumexp,
 * any/all. Several dims are moved last and merged into one, so one kernel
 * does the reduction. dims are 0-based; ndims == 0 means every dim. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_reduce(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    if (op == NETCL_OP_SUM || op == NETCL_OP_MEAN || op == NETCL_OP_PROD)
        NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_reduce(out, op, ac[0], dim, keepdim), a);
    netcl_status st;
    NC_FORWARD(st, nc_fwd_reduce(out, op, a, dim, keepdim));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !nc_op_differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_REDUCE, netcl_op_name(op), 1, &a);
    if (!n) return nc_record_fail(out, n, netcl_op_name(op));
    n->ip[0] = op;
    n->ip[1] = dim;
    n->ip[2] = keepdim;
    if (op != NETCL_OP_SUM && op != NETCL_OP_MEAN &&
        (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK))
        return nc_record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_reduce_with_index(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_reduce_with_index(values, indices, op, a, dim, keepdim));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_REDUCE_INDEX, netcl_op_name(op), 1, &a);
    if (!n || nc_node_save(n, 0, *indices) != NETCL_OK) {
        netcl_tensor_release(*indices);
        *indices = NULL;
        return nc_record_fail(values, n, netcl_op_name(op));
    }
    n->ip[0] = op;
    n->ip[1] = dim;
    n->ip[2] = keepdim;
    nc_node_attach(n, *values);
    return NETCL_OK;
}

/* g (the reduced result) broadcast back over the input's shape */
static netcl_status expand_back(nc_node *n, netcl_tensor *g, int dim, int keepdim, netcl_tensor **out)
{
    netcl_tensor *k = g;
    if (dim >= 0 && !keepdim) NC_TRY(nc_fwd_tensor_unsqueeze(&k, g, dim));
    else netcl_tensor_retain(g);
    netcl_status st = nc_fwd_tensor_expand(out, k, n->in[0].ndim, n->in[0].sizes);
    R(k);
    return st;
}

netcl_status nc_rule_reduce(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->ip[0];
    int dim = (int)n->ip[1], keepdim = (int)n->ip[2];
    netcl_tensor *ge = NULL, *t = NULL, *x = NULL, *y = NULL, *ye = NULL, *m = NULL;
    NC_TRY(expand_back(n, g, dim, keepdim, &ge));
    netcl_status st = NETCL_OK;
    int64_t in_numel = nc_numel(n->in[0].ndim, n->in[0].sizes), out_numel = netcl_tensor_numel(g);
    if (op != NETCL_OP_SUM && op != NETCL_OP_MEAN) {
        if ((st = nc_node_saved(n, 0, &x)) == NETCL_OK && (st = nc_node_saved(n, 1, &y)) == NETCL_OK)
            st = expand_back(n, y, dim, keepdim, &ye);
    }
    if (st == NETCL_OK) switch (op) {
    case NETCL_OP_SUM: netcl_tensor_retain(ge); t = ge; break;
    case NETCL_OP_MEAN:
        st = nc_fwd_binary_scalar(&t, NETCL_OP_MUL, ge, out_numel ? (double)out_numel / (double)in_numel : 0, 0);
        break;
    case NETCL_OP_PROD: { /* g * prod / x (inputs equal to zero give inf/nan: documented) */
        netcl_tensor *u;
        if ((st = nc_fwd_binary(&u, NETCL_OP_MUL, ge, ye)) == NETCL_OK) { st = nc_fwd_binary(&t, NETCL_OP_DIV, u, x); R(u); }
        break;
    }
    case NETCL_OP_MAX: case NETCL_OP_MIN: { /* ties share g evenly within each reduced slice */
        netcl_tensor *cnt, *u;
        if ((st = nc_rule_mask(&m, NETCL_OP_EQ, x, ye, 0, g->dtype)) == NETCL_OK &&
            (st = nc_fwd_reduce(&cnt, NETCL_OP_SUM, m, dim, dim >= 0)) == NETCL_OK) {
            if ((st = nc_fwd_binary(&u, NETCL_OP_MUL, ge, m)) == NETCL_OK) { st = nc_fwd_binary(&t, NETCL_OP_DIV, u, cnt); R(u); }
            R(cnt);
        }
        break;
    }
    default: st = nc_fail(NETCL_ERR_UNSUPPORTED, "%s is not differentiable", netcl_op_name(op));
    }
    R(ge); R(ye); R(m);
    if (st != NETCL_OK) { R(t); return st; }
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* max/min along a dim: g goes to the selected index only */
netcl_status nc_rule_reduce_index(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int dim = (int)n->ip[1], keepdim = (int)n->ip[2];
    netcl_tensor *idx, *ik = NULL, *ar = NULL, *arv = NULL, *m = NULL, *gk = NULL, *t = NULL;
    NC_TRY(nc_node_saved(n, 0, &idx));
    int nd = n->in[0].ndim;
    int64_t len = n->in[0].sizes[dim], shape[NC_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = d == dim ? len : 1;
    netcl_status st = netcl_tensor_arange(&ar, nc_dev(g), NETCL_DTYPE_INT64, 0, (double)len, 1);
    if (st == NETCL_OK) st = nc_fwd_tensor_view(&arv, ar, nd, shape);
    if (st == NETCL_OK) {
        if (keepdim) { netcl_tensor_retain(idx); ik = idx; netcl_tensor_retain(g); gk = g; }
        else if ((st = nc_fwd_tensor_unsqueeze(&ik, idx, dim)) == NETCL_OK) st = nc_fwd_tensor_unsqueeze(&gk, g, dim);
    }
    if (st == NETCL_OK) st = nc_rule_mask(&m, NETCL_OP_EQ, arv, ik, 0, g->dtype);
    if (st == NETCL_OK) st = nc_fwd_binary(&t, NETCL_OP_MUL, m, gk);
    R(ik); R(ar); R(arv); R(m); R(gk);
    if (st != NETCL_OK) { R(t); return st; }
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* Normalises (ndims, dims) of t into a sorted set `keep` flags; checks range
 * and repeats. Returns the number of reduced dims. */
static int dim_set(nc_x *x, const char *op, const netcl_tensor *t, int ndims, const int *dims, int *reduced)
{
    memset(reduced, 0, sizeof(int) * NC_MAX_DIMS);
    if (ndims == 0) {
        for (int i = 0; i < t->ndim; i++) reduced[i] = 1;
        return t->ndim;
    }
    for (int k = 0; k < ndims; k++) {
        if (dims[k] < 0 || dims[k] >= t->ndim || reduced[dims[k]]) {
            nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "%s: dim %d is out of range or repeated for %s (0-based in C)",
                                 op, dims[k], nc_describe(t)));
            return -1;
        }
        reduced[dims[k]] = 1;
    }
    return ndims;
}

/* r (reduced with keepdim) without the reduced dims */
static netcl_tensor *merged_out(nc_x *x, netcl_tensor *r, const netcl_tensor *t, const int *reduced)
{
    int64_t shape[NC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) if (!reduced[i]) shape[n++] = t->sizes[i];
    return XC(x, netcl_tensor_reshape, r, n, shape);
}

/* r (the reduced result, kept dims only) viewed with size-1 reduced dims */
static netcl_tensor *keep_dims(nc_x *x, netcl_tensor *r, const netcl_tensor *t, const int *reduced)
{
    int64_t shape[NC_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = reduced[i] ? 1 : t->sizes[i];
    return XC(x, netcl_tensor_reshape, r, t->ndim, shape);
}

/* The reduced dims merged into one last dim of a view, when the strides
 * allow it without a copy (else NULL, and the scope stays clean). */
static netcl_tensor *merged_view(nc_x *x, netcl_tensor *t, const int *reduced, int nred)
{
    int perm[NC_MAX_DIMS], n = 0;
    int64_t shape[NC_MAX_DIMS], R = 1;
    for (int i = 0; i < t->ndim; i++) if (!reduced[i]) { perm[n] = i; shape[n] = t->sizes[i]; n++; }
    for (int i = 0; i < t->ndim; i++) if (reduced[i]) { perm[n++] = i; R *= t->sizes[i]; }
    shape[t->ndim - nred] = R;
    netcl_tensor *p = XC(x, netcl_tensor_permute, t, t->ndim, perm), *v = NULL;
    if (!p || netcl_tensor_view(&v, p, t->ndim - nred + 1, shape) != NETCL_OK) return NULL;
    return nc_x_own(x, v);
}

/* op over the dims; the building block of the rest of the file. One
 * kernel when the reduced dims merge into a view; otherwise one reduction
 * per dim, innermost first (strided rows, no copy of the input). */
static netcl_tensor *reduce_set(nc_x *x, netcl_op op, netcl_tensor *t, const int *reduced, int nred, int keepdim)
{
    if (x->st != NETCL_OK) return NULL;
    netcl_tensor *r;
    if (nred == t->ndim) {
        r = x_red(x, op, t, -1, 0);   /* every dim (also a 0-dim tensor) */
    } else if (nred == 1) {
        int d = 0;
        while (!reduced[d]) d++;
        r = x_red(x, op, t, d, 0);
    } else {
        netcl_tensor *v = merged_view(x, t, reduced, nred);
        if (v) {
            r = x_red(x, op, v, t->ndim - nred, 0);
        } else {
            r = t;   /* one reduction per run of dims one stride walks, innermost first */
            for (int hi = t->ndim - 1; hi >= 0 && x->st == NETCL_OK; hi--) {
                if (!reduced[hi]) continue;
                int64_t shape[NC_MAX_DIMS];
                int lo = nc_reduce_run(r, reduced, hi, shape);
                if (lo < hi) r = XC(x, netcl_tensor_view, r, r->ndim - (hi - lo), shape);
                r = x_red(x, op, r, lo, 1);
                hi = lo;
            }
            if (x->st != NETCL_OK) return NULL;
            int64_t kept[NC_MAX_DIMS];
            for (int d = 0; d < t->ndim; d++) kept[d] = reduced[d] ? 1 : t->sizes[d];
            r = XC(x, netcl_tensor_view, r, t->ndim, kept);
            return keepdim ? r : merged_out(x, r, t, reduced);
        }
    }
    return keepdim ? keep_dims(x, r, t, reduced) : r;
}

netcl_status netcl_reduce_dims(netcl_tensor **out, netcl_op op, netcl_tensor *a, int ndims, const int *dims, int keepdim)
{
    if (op == NETCL_OP_SUM || op == NETCL_OP_MEAN || op == NETCL_OP_PROD)
        NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_reduce_dims(out, op, ac[0], ndims, dims, keepdim), a);
    nc_x x = NC_X(netcl_op_name(op));
    int reduced[NC_MAX_DIMS];
    if (op != NETCL_OP_SUM && op != NETCL_OP_MEAN && op != NETCL_OP_PROD && op != NETCL_OP_MAX && op != NETCL_OP_MIN)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "reduce over several dims: %s is not sum, mean, prod, max or min",
                              netcl_op_name(op)));
    int nred = x.st == NETCL_OK ? dim_set(&x, netcl_op_name(op), a, ndims, dims, reduced) : 0;
    return nc_x_return(&x, out, reduce_set(&x, op, a, reduced, nred, keepdim));
}

/* sum((a - mean)^2) / (N - correction), N the reduced element count */
static netcl_tensor *variance(nc_x *x, netcl_tensor *a, const int *reduced, int nred, double correction, int keepdim)
{
    if (x->st != NETCL_OK) return NULL;
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++) if (reduced[i]) n *= a->sizes[i];
    netcl_tensor *af = nc_dtype_is_float(a->dtype) ? a : x_cast(x, a, NETCL_DTYPE_FLOAT32);
    netcl_tensor *m = reduce_set(x, NETCL_OP_MEAN, af, reduced, nred, 1);
    netcl_tensor *d = x_un(x, NETCL_OP_SQUARE, x_sub(x, af, m));
    double denom = (double)n - correction;
    return x_sc(x, NETCL_OP_DIV, reduce_set(x, NETCL_OP_SUM, d, reduced, nred, keepdim), denom > 0 ? denom : 0);
}

netcl_status netcl_var(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, double correction, int keepdim)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_var(out, ac[0], ndims, dims, correction, keepdim), a);
    nc_x x = NC_X("var");
    int reduced[NC_MAX_DIMS];
    int nred = dim_set(&x, "var", a, ndims, dims, reduced);
    return nc_x_return(&x, out, variance(&x, a, reduced, nred, correction, keepdim));
}

netcl_status netcl_std(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, double correction, int keepdim)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_std(out, ac[0], ndims, dims, correction, keepdim), a);
    nc_x x = NC_X("std");
    int reduced[NC_MAX_DIMS];
    int nred = dim_set(&x, "std", a, ndims, dims, reduced);
    return nc_x_return(&x, out, x_un(&x, NETCL_OP_SQRT, variance(&x, a, reduced, nred, correction, keepdim)));
}

/* p = 1: sum |a|; p = 2: sqrt(sum a^2); p = inf: max |a|; p = -inf: min |a|;
 * other p > 0: (sum |a|^p)^(1/p). */
netcl_status netcl_norm(netcl_tensor **out, netcl_tensor *a, double p, int ndims, const int *dims, int keepdim)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_norm(out, ac[0], p, ndims, dims, keepdim), a);
    nc_x x = NC_X("norm");
    int reduced[NC_MAX_DIMS];
    if (!nc_dtype_is_float(a->dtype))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "needs a floating tensor, got %s", nc_describe(a)));
    if (!(p > 0) && !isinf(p))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "p must be positive or +-inf, got %g", p));
    int nred = x.st == NETCL_OK ? dim_set(&x, "norm", a, ndims, dims, reduced) : 0;
    netcl_tensor *ab = x_un(&x, NETCL_OP_ABS, a), *r;
    if (isinf(p)) r = reduce_set(&x, p > 0 ? NETCL_OP_MAX : NETCL_OP_MIN, ab, reduced, nred, keepdim);
    else if (p == 1) r = reduce_set(&x, NETCL_OP_SUM, ab, reduced, nred, keepdim);
    else if (p == 2) r = x_un(&x, NETCL_OP_SQRT, reduce_set(&x, NETCL_OP_SUM, x_un(&x, NETCL_OP_SQUARE, a), reduced, nred, keepdim));
    else r = x_sc(&x, NETCL_OP_POW, reduce_set(&x, NETCL_OP_SUM, x_sc(&x, NETCL_OP_POW, ab, p), reduced, nred, keepdim), 1 / p);
    return nc_x_return(&x, out, r);
}

/* log(sum(exp(a - m))) + m with m the (constant) max; an all -inf slice gives -inf */
netcl_status netcl_logsumexp(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim)
{
    NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_logsumexp(out, ac[0], ndims, dims, keepdim), a);
    nc_x x = NC_X("logsumexp");
    int reduced[NC_MAX_DIMS];
    if (!nc_dtype_is_float(a->dtype))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "needs a floating tensor, got %s", nc_describe(a)));
    int nred = x.st == NETCL_OK ? dim_set(&x, "logsumexp", a, ndims, dims, reduced) : 0;
    netcl_tensor *m = NULL;
    if (x.st == NETCL_OK) {
        int prev = nc_grad_push_disabled();   /* the shift is a constant for autograd */
        netcl_tensor *mk = reduce_set(&x, NETCL_OP_MAX, a, reduced, nred, 1);
        netcl_tensor *mabs = x_un(&x, NETCL_OP_ABS, mk);
        netcl_tensor *infinite = XC(&x, netcl_binary_scalar, NETCL_OP_EQ, mabs, INFINITY, 0);
        m = XC(&x, netcl_where, infinite, NULL, mk, 0, 0);
        nc_grad_pop(prev);
    }
    netcl_tensor *s = reduce_set(&x, NETCL_OP_SUM, x_un(&x, NETCL_OP_EXP, x_sub(&x, a, m)), reduced, nred, 1);
    netcl_tensor *r = x_add(&x, x_un(&x, NETCL_OP_LOG, s), m);
    if (!keepdim && x.st == NETCL_OK) {
        int64_t shape[NC_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < a->ndim; i++) if (!reduced[i]) shape[n++] = a->sizes[i];
        r = XC(&x, netcl_tensor_reshape, r, n, shape);
    }
    return nc_x_return(&x, out, r);
}

/* any: some element != 0; all: no element == 0 (bool results) */
static netcl_status any_all(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim, int all)
{
    nc_x x = NC_X(all ? "all" : "any");
    int reduced[NC_MAX_DIMS];
    int nred = dim_set(&x, all ? "all" : "any", a, ndims, dims, reduced);
    netcl_tensor *hits = XC(&x, netcl_binary_scalar, all ? NETCL_OP_EQ : NETCL_OP_NE, a, 0, 0);
    netcl_tensor *n = reduce_set(&x, NETCL_OP_SUM, hits, reduced, nred, keepdim);
    return nc_x_return(&x, out, XC(&x, netcl_binary_scalar, all ? NETCL_OP_EQ : NETCL_OP_GT, n, 0, 0));
}

netcl_status netcl_any(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim)
{ return any_all(out, a, ndims, dims, keepdim, 0); }
netcl_status netcl_all(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim)
{ return any_all(out, a, ndims, dims, keepdim, 1); }
