/* rules_shape.c — backward rules for reductions, matmul, views, casts and
 * device moves, and the rule table (one entry per nc_rule, count-checked). */
#include "autograd/autograd.h"
#include <string.h>

#define R(x) netcl_tensor_release(x)

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

static netcl_status reduce_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
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
static netcl_status reduce_index_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
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

/* views of a and b as batched matrices, g likewise: 1-D operands get the
 * dim matmul added and dropped */
static netcl_status matmul_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *a, *b, *A = NULL, *B = NULL, *G = NULL, *T = NULL, *r = NULL, *s = NULL;
    NC_TRY(nc_node_saved(n, 0, &a));
    NC_TRY(nc_node_saved(n, 1, &b));
    netcl_status st = NETCL_OK;
    int a1 = a->ndim == 1, b1 = b->ndim == 1;
    if (a1) st = nc_fwd_tensor_unsqueeze(&A, a, 0); else { netcl_tensor_retain(a); A = a; }
    if (st == NETCL_OK) { if (b1) st = nc_fwd_tensor_unsqueeze(&B, b, 1); else { netcl_tensor_retain(b); B = b; } }
    netcl_tensor_retain(g);
    G = g;
    if (st == NETCL_OK && a1) { netcl_tensor *u; st = nc_fwd_tensor_unsqueeze(&u, G, G->ndim - (b1 ? 0 : 1)); R(G); G = u; }
    if (st == NETCL_OK && b1) { netcl_tensor *u; st = nc_fwd_tensor_unsqueeze(&u, G, G->ndim); R(G); G = u; }
    for (int i = 0; i < 2 && st == NETCL_OK; i++) {
        if (!nc_input_needs_grad(n, i)) continue;
        netcl_tensor *M = i == 0 ? B : A;   /* dA = G @ B^T, dB = A^T @ G */
        if ((st = nc_fwd_tensor_transpose(&T, M, M->ndim - 2, M->ndim - 1)) != NETCL_OK) break;
        st = i == 0 ? nc_fwd_matmul(&r, G, T) : nc_fwd_matmul(&r, T, G);
        R(T); T = NULL;
        if (st != NETCL_OK) break;
        netcl_tensor *full = i == 0 ? A : B;
        if ((st = nc_sum_to_shape(&s, r, full->ndim, full->sizes)) != NETCL_OK) break;
        R(r); r = NULL;
        if ((st = nc_fwd_tensor_reshape(&r, s, n->in[i].ndim, n->in[i].sizes)) != NETCL_OK) break;
        R(s); s = NULL;
        st = nc_rule_finish(n, i, r, &gin[i]);
        r = NULL;
    }
    R(A); R(B); R(G); R(r); R(s);
    return st;
}

static netcl_status reshape_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_reshape(&t, g, n->in[0].ndim, n->in[0].sizes));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

static netcl_status transpose_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_transpose(&t, g, (int)n->ip[0], (int)n->ip[1]));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

static netcl_status permute_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int inv[NC_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) inv[n->ip[d]] = d;
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_permute(&t, g, g->ndim, inv));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

static netcl_status expand_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor_retain(g);
    return nc_rule_finish(n, 0, g, &gin[0]);
}

/* zeros of the input's shape with g written into the viewed region */
static netcl_status scatter_back(nc_node *n, netcl_tensor *g, netcl_tensor **gin, int select)
{
    netcl_tensor *z, *v = NULL;
    NC_TRY(netcl_tensor_full(&z, nc_dev(g), g->dtype, n->in[0].ndim, n->in[0].sizes, 0));
    netcl_status st = select ? nc_fwd_tensor_select(&v, z, (int)n->ip[0], n->ip[1])
                             : nc_fwd_tensor_slice(&v, z, (int)n->ip[0], n->ip[1], n->ip[2], n->ip[3]);
    if (st == NETCL_OK) st = netcl_tensor_copy_(v, g);
    R(v);
    if (st != NETCL_OK) { R(z); return st; }
    return nc_rule_finish(n, 0, z, &gin[0]);
}

static netcl_status slice_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin) { return scatter_back(n, g, gin, 0); }
static netcl_status select_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin) { return scatter_back(n, g, gin, 1); }

static netcl_status cast_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor_retain(g);
    return nc_rule_finish(n, 0, g, &gin[0]);
}

static netcl_status to_device_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_to_device(&t, g, n->in[0].dev));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* padding's gradient is the padding removed: pad g with the negated pads */
static netcl_status pad_rule(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int64_t neg[NC_MAX_DIMS * 2];
    int npad = (int)n->p[0];
    for (int i = 0; i < npad; i++) neg[i] = -n->ip[i];
    netcl_tensor *t;
    NC_TRY(nc_fwd_pad(&t, g, npad, neg, 0));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

const nc_backward_fn nc_backward_rules[] = {
    [NC_RULE_UNARY] = nc_rule_unary,
    [NC_RULE_BINARY] = nc_rule_binary,
    [NC_RULE_BINARY_SCALAR] = nc_rule_binary_scalar,
    [NC_RULE_REDUCE] = reduce_rule,
    [NC_RULE_REDUCE_INDEX] = reduce_index_rule,
    [NC_RULE_MATMUL] = matmul_rule,
    [NC_RULE_RESHAPE] = reshape_rule,
    [NC_RULE_TRANSPOSE] = transpose_rule,
    [NC_RULE_PERMUTE] = permute_rule,
    [NC_RULE_EXPAND] = expand_rule,
    [NC_RULE_SLICE] = slice_rule,
    [NC_RULE_SELECT] = select_rule,
    [NC_RULE_CAST] = cast_rule,
    [NC_RULE_TO_DEVICE] = to_device_rule,
    [NC_RULE_PAD] = pad_rule,
    [NC_RULE_WHERE] = nc_rule_where,
    [NC_RULE_SOFTMAX] = nc_rule_softmax,
    [NC_RULE_UNFOLD] = nc_rule_unfold,
    [NC_RULE_FOLD] = nc_rule_fold,
    [NC_RULE_POOL] = nc_rule_pool,
    [NC_RULE_CLASS_LOSS] = nc_rule_class_loss,
    [NC_RULE_CONV2D] = nc_rule_conv2d,
    [NC_RULE_BATCH_NORM] = nc_rule_batch_norm,
    [NC_RULE_CAT] = nc_rule_cat,
    [NC_RULE_GATHER] = nc_rule_gather,
    [NC_RULE_SCATTER] = nc_rule_scatter,
    [NC_RULE_SORT] = nc_rule_sort,
    [NC_RULE_SCAN] = nc_rule_scan,
};
_Static_assert(sizeof nc_backward_rules / sizeof nc_backward_rules[0] == NC_RULE_COUNT, "one rule per kind");
