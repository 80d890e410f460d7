/* index.c — the index family with autograd: the public entry points of
 * cat/stack, gather, scatter (and scatter_), sort, cumsum/cumprod and
 * nonzero with their backward rules (forward: src/ops/index.c,
 * index_sort.c; kernels: backend index, kernels/index*.cl), and the ops
 * built from recorded ops (autograd comes free): index_select/index_add,
 * masked_fill/masked_select, repeat, flip, the pad modes, one_hot,
 * embedding, topk, split/chunk. */
#include "autograd/expr.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static netcl_status cat_impl(netcl_tensor **out, int n, netcl_tensor *const *ts, int dim, int stack)
{
    const char *op = stack ? "stack" : "cat";
    netcl_status st;
    *out = NULL;
    NC_FORWARD(st, nc_fwd_cat(out, n, ts, dim, stack));
    if (st != NETCL_OK || !nc_should_record(n, ts)) return st;
    nc_node *node = nc_node_new(NC_RULE_CAT, op, n, ts);
    if (!node) return nc_record_fail(out, node, op);
    node->ip[0] = dim;
    node->ip[1] = stack;
    nc_node_attach(node, *out);
    return NETCL_OK;
}

netcl_status netcl_cat(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim)
{
    return cat_impl(out, n, tensors, dim, 0);
}

netcl_status netcl_stack(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim)
{
    return cat_impl(out, n, tensors, dim, 1);
}

netcl_status netcl_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, int index_base)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_gather(out, a, dim, index, index_base));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_GATHER, "gather", 1, &a);
    if (!n || nc_node_save(n, 0, index) != NETCL_OK) return nc_record_fail(out, n, "gather");
    n->ip[0] = dim;
    n->ip[1] = index_base;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src,
                           int accumulate, int index_base)
{
    const char *op = accumulate ? "scatter_add" : "scatter";
    netcl_tensor *ins[2] = {a, src};
    netcl_status st;
    NC_FORWARD(st, nc_fwd_scatter(out, a, dim, index, src, accumulate, index_base));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_SCATTER, op, 2, ins);
    if (!n || nc_node_save(n, 0, index) != NETCL_OK) return nc_record_fail(out, n, op);
    n->ip[0] = dim;
    n->ip[1] = index_base;
    n->ip[2] = accumulate != 0;
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_scatter_(netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int accumulate, int index_base)
{
    const char *op = accumulate ? "scatter_add" : "scatter";
    netcl_tensor *ins[2] = {a, src};
    if (!nc_should_record(2, ins)) return nc_fwd_scatter_into(a, dim, index, src, accumulate, index_base);
    NC_TRY(nc_inplace_check(a, op));
    netcl_tensor *old, *r;
    NC_TRY(netcl_tensor_cast(&old, a, a->dtype));   /* a recorded copy of a's values */
    netcl_status st = netcl_scatter(&r, old, dim, index, src == a ? old : src, accumulate, index_base);
    netcl_tensor_release(old);
    return st == NETCL_OK ? nc_inplace_adopt(a, r) : st;
}

netcl_status netcl_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_sort(values, indices, a, dim, descending));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SORT, "sort", 1, &a);
    if (!n || nc_node_save(n, 0, *indices) != NETCL_OK) {
        netcl_tensor_release(*indices);
        *indices = NULL;
        return nc_record_fail(values, n, "sort");
    }
    n->ip[0] = dim;
    nc_node_attach(n, *values);
    return NETCL_OK;
}

static netcl_status scan(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim)
{
    const char *name = op == NETCL_OP_SUM ? "cumsum" : "cumprod";
    netcl_status st;
    NC_FORWARD(st, nc_fwd_scan(out, op, a, dim, 0));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_SCAN, name, 1, &a);
    if (!n) return nc_record_fail(out, n, name);
    n->ip[0] = op;
    n->ip[1] = dim;
    if (op == NETCL_OP_PROD && (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK))
        return nc_record_fail(out, n, name);
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_cumsum(netcl_tensor **out, netcl_tensor *a, int dim) { return scan(out, NETCL_OP_SUM, a, dim); }
netcl_status netcl_cumprod(netcl_tensor **out, netcl_tensor *a, int dim) { return scan(out, NETCL_OP_PROD, a, dim); }

netcl_status netcl_nonzero(netcl_tensor **out, netcl_tensor *a) { return nc_fwd_nonzero(out, a); }

netcl_status nc_rule_cat(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int dim = (int)n->ip[0], stack = (int)n->ip[1];
    int64_t pos = 0;
    for (int i = 0; i < n->nin; i++) {
        const nc_edge *e = &n->in[i];
        netcl_tensor *t = NULL;
        netcl_status st = NETCL_OK;
        if (!stack && e->ndim == 1 && e->sizes[0] == 0) { /* skipped by cat: an empty gradient */
            if (nc_input_needs_grad(n, i)) st = netcl_tensor_full(&t, nc_dev(g), g->dtype, 1, e->sizes, 0);
        } else {
            int64_t len = stack ? 1 : e->sizes[dim];
            if (nc_input_needs_grad(n, i))
                st = stack ? nc_fwd_tensor_select(&t, g, dim, pos) : nc_fwd_tensor_narrow(&t, g, dim, pos, len);
            pos += len;
        }
        if (st == NETCL_OK && t) st = nc_rule_finish(n, i, t, &gin[i]);
        if (st != NETCL_OK) return st;
    }
    return NETCL_OK;
}

/* zeros of input i's shape in g's dtype, with g scattered (added) into it */
static netcl_status scatter_into_zeros(nc_node *n, int i, netcl_tensor *g, int dim, netcl_tensor *idx, int acc,
                                       int base, netcl_tensor **out)
{
    NC_TRY(netcl_tensor_full(out, nc_dev(g), g->dtype, n->in[i].ndim, n->in[i].sizes, 0));
    netcl_status st = nc_fwd_scatter_into(*out, dim, idx, g, acc, base);
    if (st != NETCL_OK) { R(*out); *out = NULL; }
    return st;
}

netcl_status nc_rule_gather(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *idx, *t;
    NC_TRY(nc_node_saved(n, 0, &idx));
    NC_TRY(scatter_into_zeros(n, 0, g, (int)n->ip[0], idx, 1, (int)n->ip[1], &t));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* out = scatter(a, dim, idx, src): a's gradient is g where nothing was
 * written (all of g when accumulating); src's is g gathered at idx, placed
 * in the leading box of src's shape when src is larger than idx. */
netcl_status nc_rule_scatter(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int dim = (int)n->ip[0], base = (int)n->ip[1], acc = (int)n->ip[2];
    netcl_tensor *idx;
    NC_TRY(nc_node_saved(n, 0, &idx));
    nc_x x = NC_X(NULL);
    if (nc_input_needs_grad(n, 0)) {
        netcl_tensor *ga = g;
        if (!acc) {
            int64_t no_dims = 0;   /* sizes of a 0-dim tensor (never read, never NULL) */
            netcl_tensor *zero = XC(&x, netcl_tensor_full, nc_dev(g), g->dtype, 0, &no_dims, 0);
            netcl_tensor *zeros = XC(&x, nc_fwd_tensor_expand, zero, idx->ndim, idx->sizes);
            ga = XC(&x, netcl_tensor_cast, g, g->dtype);
            if (x.st == NETCL_OK) nc_x_do(&x, nc_fwd_scatter_into(ga, dim, idx, zeros, 0, base));
        }
        nc_x_grad(&x, n, 0, ga, gin);
    }
    if (nc_input_needs_grad(n, 1)) {
        netcl_tensor *gs = XC(&x, nc_fwd_gather, g, dim, idx, base);
        const nc_edge *e = &n->in[1];
        if (x.st == NETCL_OK && (e->ndim != gs->ndim || memcmp(e->sizes, gs->sizes, sizeof(int64_t) * (size_t)e->ndim))) {
            netcl_tensor *full = XC(&x, netcl_tensor_full, nc_dev(g), g->dtype, e->ndim, e->sizes, 0), *box = full;
            for (int d = 0; d < e->ndim && x.st == NETCL_OK; d++) box = XC(&x, nc_fwd_tensor_narrow, box, d, 0, idx->sizes[d]);
            if (x.st == NETCL_OK) nc_x_do(&x, nc_fwd_copy_into(box, gs));
            gs = full;
        }
        nc_x_grad(&x, n, 1, gs, gin);
    }
    return nc_x_end(&x);
}

netcl_status nc_rule_sort(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *idx, *t;
    NC_TRY(nc_node_saved(n, 0, &idx));
    if (g->ndim == 0) { netcl_tensor_retain(g); return nc_rule_finish(n, 0, g, &gin[0]); }
    NC_TRY(scatter_into_zeros(n, 0, g, (int)n->ip[0], idx, 0, 0, &t));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* y = cumprod(x) along a row: dy_i/dx_j = prod_{k <= i, k != j} x_k for
 * i >= j. Before the row's first zero, dx = revcumsum(g y) / x. At the first
 * zero z, dx_z = revcumsum(g y')_z with y' the cumprod of x with x_z set to
 * 1. After it every product holds x_z = 0: dx = 0. O(n) per row, no
 * division by zero. */
static netcl_tensor *x_scan(nc_x *x, netcl_op op, netcl_tensor *a, int dim, int reverse)
{
    return XC(x, nc_fwd_scan, op, a, dim, reverse);
}

static netcl_tensor *cumprod_grad(nc_x *x, netcl_tensor *g, netcl_tensor *a, netcl_tensor *y, int dim)
{
    netcl_tensor *zero = x_sc(x, NETCL_OP_EQ, a, 0);
    netcl_tensor *count = x_scan(x, NETCL_OP_SUM, zero, dim, 0);   /* zeros up to here (int64) */
    netcl_tensor *before = x_cast(x, x_sc(x, NETCL_OP_EQ, count, 0), a->dtype);
    netcl_tensor *first = x_mul(x, x_cast(x, zero, a->dtype), x_cast(x, x_sc(x, NETCL_OP_EQ, count, 1), a->dtype));
    /* x before the first zero, 1 elsewhere */
    netcl_tensor *safe = x_add(x, x_mul(x, a, before), x_rsc(x, NETCL_OP_SUB, 1, before));
    netcl_tensor *gy = x_scan(x, NETCL_OP_SUM, x_mul(x, g, y), dim, 1);
    netcl_tensor *ya = x_scan(x, NETCL_OP_PROD, x_add(x, a, first), dim, 0);
    netcl_tensor *gz = x_scan(x, NETCL_OP_SUM, x_mul(x, g, ya), dim, 1);
    return x_add(x, x_mul(x, x_div(x, gy, safe), before), x_mul(x, gz, first));
}

netcl_status nc_rule_scan(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->ip[0];
    int dim = (int)n->ip[1];
    if (g->ndim == 0) { netcl_tensor_retain(g); return nc_rule_finish(n, 0, g, &gin[0]); }
    nc_x x = NC_X(NULL);
    netcl_tensor *r;
    if (op == NETCL_OP_SUM) {
        r = x_scan(&x, NETCL_OP_SUM, g, dim, 1);
    } else {
        netcl_tensor *a, *y;
        NC_TRY(nc_node_saved(n, 0, &a));
        NC_TRY(nc_node_saved(n, 1, &y));
        r = cumprod_grad(&x, g, a, y, dim);
    }
    nc_x_grad(&x, n, 0, r, gin);
    return nc_x_end(&x);
}

#define ARG(...) nc_fail(NETCL_ERR_ARGUMENT, __VA_ARGS__)

static netcl_status check_dim(const char *op, const netcl_tensor *t, int dim)
{
    if (dim < 0 || dim >= t->ndim)
        return ARG("%s: dim %d out of range for %s (valid 0..%d, 0-based in C)", op, dim, nc_describe(t), t->ndim - 1);
    return NETCL_OK;
}

static netcl_status check_index_1d(const char *op, const netcl_tensor *a, const netcl_tensor *idx, int base)
{
    NC_TRY(nc_same_device(op, a, idx));
    NC_TRY(nc_check_index(op, idx, base));
    if (idx->ndim > 1) return ARG("%s: the index must be 1-D, got %s", op, nc_describe(idx));
    return NETCL_OK;
}

static netcl_status check_mask(const char *op, const netcl_tensor *a, const netcl_tensor *mask)
{
    NC_TRY(nc_same_device(op, a, mask));
    if (mask->dtype != NETCL_DTYPE_BOOL && mask->dtype != NETCL_DTYPE_UINT8)
        return ARG("%s: the mask must be a bool (or uint8) tensor, got %s", op, nc_describe(mask));
    return NETCL_OK;
}

/* a 1-D (or 0-d) index of k entries viewed as [1.., k at dim, ..1] and
 * expanded to `shape` */
static netcl_tensor *index_along(nc_x *x, netcl_tensor *idx, int dim, int ndim, const int64_t *shape)
{
    int64_t one[NC_MAX_DIMS];
    for (int d = 0; d < ndim; d++) one[d] = d == dim ? netcl_tensor_numel(idx) : 1;
    netcl_tensor *v = XC(x, netcl_tensor_reshape, idx, ndim, one);
    return XC(x, netcl_tensor_expand, v, ndim, shape);
}

/* ---- index_select / index_add ------------------------------------------------------ */

netcl_status netcl_index_select(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, int index_base)
{
    *out = NULL;
    NC_TRY(check_index_1d("index_select", a, index, index_base));
    NC_TRY(check_dim("index_select", a, dim));
    int64_t shape[NC_MAX_DIMS];
    memcpy(shape, a->sizes, sizeof shape);
    shape[dim] = netcl_tensor_numel(index);
    nc_x x = NC_X("index_select");
    netcl_tensor *ie = index_along(&x, index, dim, a->ndim, shape);
    return nc_x_return(&x, out, XC(&x, netcl_gather, a, dim, ie, index_base));
}

static netcl_status check_index_add(const char *op, const netcl_tensor *a, int dim, const netcl_tensor *index,
                                    const netcl_tensor *src, int base)
{
    NC_TRY(check_index_1d(op, a, index, base));
    NC_TRY(nc_same_device(op, a, src));
    NC_TRY(check_dim(op, a, dim));
    int ok = src->ndim == a->ndim && src->sizes[dim] == netcl_tensor_numel(index);
    for (int d = 0; ok && d < a->ndim; d++) ok = d == dim || src->sizes[d] == a->sizes[d];
    if (!ok)
        return ARG("%s: source %s must be input %s with dim %d of the index's length %lld", op, nc_describe(src),
                   nc_describe(a), dim + 1, (long long)netcl_tensor_numel(index));
    return NETCL_OK;
}

netcl_status netcl_index_add(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int index_base)
{
    *out = NULL;
    NC_TRY(check_index_add("index_add", a, dim, index, src, index_base));
    nc_x x = NC_X("index_add");
    netcl_tensor *ie = index_along(&x, index, dim, src->ndim, src->sizes);
    return nc_x_return(&x, out, XC(&x, netcl_scatter, a, dim, ie, src, 1, index_base));
}

netcl_status netcl_index_add_(netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int index_base)
{
    NC_TRY(check_index_add("index_add_", a, dim, index, src, index_base));
    nc_x x = NC_X("index_add_");
    netcl_tensor *ie = index_along(&x, index, dim, src->ndim, src->sizes);
    XDO(&x, netcl_scatter_(a, dim, ie, src, 1, index_base));
    return nc_x_end(&x);
}

/* ---- masks -------------------------------------------------------------------------------- */

netcl_status netcl_masked_fill(netcl_tensor **out, netcl_tensor *a, netcl_tensor *mask, double value)
{
    *out = NULL;
    NC_TRY(check_mask("masked_fill", a, mask));
    int nd;
    int64_t shape[NC_MAX_DIMS];
    NC_TRY(nc_broadcast_shape("masked_fill", a, mask, &nd, shape));
    if (nd != a->ndim || memcmp(shape, a->sizes, sizeof(int64_t) * (size_t)nd) != 0)
        return ARG("masked_fill: mask %s does not broadcast to the input's shape %s", nc_describe(mask), nc_describe(a));
    nc_x x = NC_X("masked_fill");
    netcl_tensor *r = XC(&x, netcl_where, mask, NULL, a, value, 0);
    if (r && r->dtype != a->dtype) r = x_cast(&x, r, a->dtype);   /* an integer tensor with a fractional value */
    return nc_x_return(&x, out, r);
}

netcl_status netcl_masked_fill_(netcl_tensor *a, netcl_tensor *mask, double value)
{
    netcl_tensor *r, *old = NULL;
    if (!nc_should_record(1, &a)) {
        NC_TRY(netcl_masked_fill(&r, a, mask, value));
        netcl_status st = nc_fwd_copy_into(a, r);
        netcl_tensor_release(r);
        return st;
    }
    NC_TRY(nc_inplace_check(a, "masked_fill"));
    NC_TRY(netcl_tensor_cast(&old, a, a->dtype));   /* a recorded copy of a's values */
    netcl_status st = netcl_masked_fill(&r, old, mask, value);
    netcl_tensor_release(old);
    return st == NETCL_OK ? nc_inplace_adopt(a, r) : st;
}

netcl_status netcl_masked_select(netcl_tensor **out, netcl_tensor *a, netcl_tensor *mask)
{
    *out = NULL;
    NC_TRY(check_mask("masked_select", a, mask));
    int nd;
    int64_t shape[NC_MAX_DIMS], flat = -1;
    NC_TRY(nc_broadcast_shape("masked_select", a, mask, &nd, shape));
    nc_x x = NC_X("masked_select");
    netcl_tensor *ae = XC(&x, netcl_tensor_expand, a, nd, shape);
    netcl_tensor *me = XC(&x, netcl_tensor_expand, mask, nd, shape);
    netcl_tensor *mf = XC(&x, netcl_tensor_reshape, me, 1, &flat);
    netcl_tensor *nz = XC(&x, netcl_nonzero, mf);                 /* [n, 1] */
    netcl_tensor *pos = XC(&x, netcl_tensor_reshape, nz, 1, &flat);
    netcl_tensor *af = XC(&x, netcl_tensor_reshape, ae, 1, &flat);
    return nc_x_return(&x, out, XC(&x, netcl_index_select, af, 0, pos, 0));
}

/* ---- one_hot / embedding ----------------------------------------------------------------- */

netcl_status netcl_one_hot(netcl_tensor **out, netcl_tensor *index, int64_t num_classes, netcl_dtype dtype, int index_base)
{
    *out = NULL;
    NC_TRY(nc_check_index("one_hot", index, index_base));
    if (num_classes < 1) return ARG("one_hot: num_classes must be positive, got %lld", (long long)num_classes);
    if (index->ndim >= NC_MAX_DIMS) return ARG("one_hot: %s already has %d dims", nc_describe(index), NC_MAX_DIMS);
    if ((unsigned)dtype >= NETCL_DTYPE_COUNT) return ARG("one_hot: invalid dtype %d", (int)dtype);
    int nd = index->ndim + 1;
    int64_t shape[NC_MAX_DIMS];
    memcpy(shape, index->sizes, sizeof(int64_t) * (size_t)index->ndim);
    shape[nd - 1] = num_classes;
    nc_x x = NC_X("one_hot");
    netcl_tensor *z = XC(&x, netcl_tensor_full, nc_dev(index), dtype, nd, shape, 0);
    netcl_tensor *iu = XC(&x, netcl_tensor_unsqueeze, index, nd - 1);
    int64_t no_dims = 0;   /* sizes of a 0-dim tensor (never read, never NULL) */
    netcl_tensor *one = XC(&x, netcl_tensor_full, nc_dev(index), dtype, 0, &no_dims, 1);
    netcl_tensor *ones = iu ? XC(&x, netcl_tensor_expand, one, nd, iu->sizes) : NULL;
    XDO(&x, netcl_scatter_(z, nd - 1, iu, ones, 0, index_base));
    return nc_x_return(&x, out, z);
}

netcl_status netcl_embedding(netcl_tensor **out, netcl_tensor *index, netcl_tensor *weight, int index_base)
{
    *out = NULL;
    NC_TRY(nc_same_device("embedding", weight, index));
    NC_TRY(nc_check_index("embedding", index, index_base));
    if (weight->ndim != 2) return ARG("embedding: the weight must be 2-D [num, dim], got %s", nc_describe(weight));
    if (index->ndim >= NC_MAX_DIMS) return ARG("embedding: %s already has %d dims", nc_describe(index), NC_MAX_DIMS);
    int64_t flat = -1, shape[NC_MAX_DIMS];
    memcpy(shape, index->sizes, sizeof(int64_t) * (size_t)index->ndim);
    shape[index->ndim] = weight->sizes[1];
    nc_x x = NC_X("embedding");
    netcl_tensor *f = XC(&x, netcl_tensor_reshape, index, 1, &flat);
    netcl_tensor *rows = XC(&x, netcl_index_select, weight, 0, f, index_base);
    return nc_x_return(&x, out, XC(&x, netcl_tensor_reshape, rows, index->ndim + 1, shape));
}

/* ---- flip / pad modes / repeat -------------------------------------------------------------- */

/* a copy when cur is still a itself or a view of it (flip and repeat always copy) */
static netcl_tensor *own_copy(nc_x *x, netcl_tensor *cur, const netcl_tensor *a)
{
    if (!cur || cur->storage != a->storage) return cur;
    return XC(x, netcl_tensor_cast, cur, cur->dtype);
}

netcl_status netcl_flip(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims)
{
    *out = NULL;
    int seen[NC_MAX_DIMS] = {0};
    for (int k = 0; k < ndims; k++) {
        NC_TRY(check_dim("flip", a, dims[k]));
        if (seen[dims[k]]++) return ARG("flip: dim %d repeated for %s", dims[k] + 1, nc_describe(a));
    }
    nc_x x = NC_X("flip");
    netcl_tensor *cur = a;
    for (int k = 0; k < ndims; k++) {
        int64_t n = a->sizes[dims[k]];
        if (n < 2) continue;
        netcl_tensor *rev = XC(&x, netcl_tensor_arange, nc_dev(a), NETCL_DTYPE_INT64, (double)(n - 1), -1, -1);
        cur = XC(&x, netcl_index_select, cur, dims[k], rev, 0);
    }
    return nc_x_return(&x, out, own_copy(&x, cur, a));
}

/* source position of padded position i (i in [-before, size + after)) */
static int64_t pad_source(netcl_pad_mode mode, int64_t i, int64_t size)
{
    if (mode == NETCL_PAD_REFLECT) return i < 0 ? -i : i >= size ? 2 * (size - 1) - i : i;
    if (mode == NETCL_PAD_REPLICATE) return i < 0 ? 0 : i >= size ? size - 1 : i;
    return ((i % size) + size) % size;
}

static netcl_status check_pads(const netcl_tensor *a, int npad, const int64_t *pads, netcl_pad_mode mode)
{
    static const char *const names[] = {"constant", "reflect", "replicate", "circular"};
    if ((unsigned)mode > NETCL_PAD_CIRCULAR) return ARG("pad: invalid mode %d", (int)mode);
    if (npad <= 0 || npad % 2 || npad / 2 > a->ndim)
        return ARG("pad: %d pad values for %s (need pairs for 1 to %d dims)", npad, nc_describe(a), a->ndim);
    for (int k = 0; k < npad / 2; k++) {
        int d = a->ndim - 1 - k;
        int64_t lo = pads[2 * k], hi = pads[2 * k + 1], size = a->sizes[d];
        int64_t limit = mode == NETCL_PAD_REFLECT ? size - 1 : mode == NETCL_PAD_CIRCULAR ? size : (size ? INT64_MAX : 0);
        if (lo < 0 || hi < 0 || lo > limit || hi > limit)
            return ARG("pad: %s padding (%lld, %lld) of dim %d (size %lld) of %s must be non-negative and %s", names[mode],
                       (long long)lo, (long long)hi, d + 1, (long long)size, nc_describe(a),
                       mode == NETCL_PAD_REFLECT ? "smaller than the size" : mode == NETCL_PAD_CIRCULAR ? "at most the size"
                                                                         : "on a non-empty dim");
    }
    return NETCL_OK;
}

netcl_status netcl_pad_with(netcl_tensor **out, netcl_tensor *a, int npad, const int64_t *pads, netcl_pad_mode mode, double value)
{
    *out = NULL;
    if (mode == NETCL_PAD_CONSTANT) return netcl_pad(out, a, npad, pads, value);
    NC_TRY(check_pads(a, npad, pads, mode));
    nc_x x = NC_X("pad");
    netcl_tensor *cur = a;
    for (int k = 0; k < npad / 2 && x.st == NETCL_OK; k++) {
        int d = a->ndim - 1 - k;
        int64_t lo = pads[2 * k], n = a->sizes[d] + lo + pads[2 * k + 1];
        if (n == a->sizes[d]) continue;
        int64_t *src = malloc(sizeof(int64_t) * (size_t)n);
        if (!src) { nc_x_fail(&x, nc_fail(NETCL_ERR_OOM, "out of host memory for %lld indices", (long long)n)); break; }
        for (int64_t i = 0; i < n; i++) src[i] = pad_source(mode, i - lo, a->sizes[d]);
        netcl_tensor *idx = XC(&x, netcl_tensor_from_host, nc_dev(a), NETCL_DTYPE_INT64, 1, &n, src);
        free(src);
        cur = XC(&x, netcl_index_select, cur, d, idx, 0);
    }
    return nc_x_return(&x, out, own_copy(&x, cur, a));
}

/* cur repeated r times along d, by cat (no spare dim for expand) */
static netcl_tensor *repeat_by_cat(nc_x *x, netcl_tensor *cur, int d, int64_t r)
{
    if (r == 0) return XC(x, netcl_tensor_narrow, cur, d, 0, 0);
    netcl_tensor **copies = malloc(sizeof *copies * (size_t)r);
    if (!copies) { nc_x_fail(x, nc_fail(NETCL_ERR_OOM, "out of host memory")); return NULL; }
    for (int64_t i = 0; i < r; i++) copies[i] = cur;
    netcl_tensor *res = r <= INT32_MAX ? XC(x, netcl_cat, (int)r, copies, d) : NULL;
    free(copies);
    return res;
}

netcl_status netcl_repeat(netcl_tensor **out, netcl_tensor *a, int ndim, const int64_t *repeats)
{
    *out = NULL;
    if (ndim < a->ndim || ndim > NC_MAX_DIMS)
        return ARG("repeat: %d repeat counts for %s (need %d to %d)", ndim, nc_describe(a), a->ndim, NC_MAX_DIMS);
    int64_t shape[NC_MAX_DIMS] = {0};
    for (int d = 0; d < ndim; d++) {
        if (repeats[d] < 0) return ARG("repeat: negative count %lld for dim %d of %s", (long long)repeats[d], d + 1, nc_describe(a));
        shape[d] = d < ndim - a->ndim ? 1 : a->sizes[d - (ndim - a->ndim)];
    }
    nc_x x = NC_X("repeat");
    netcl_tensor *cur = XC(&x, netcl_tensor_reshape, a, ndim, shape);
    for (int d = 0; d < ndim && x.st == NETCL_OK; d++) {
        int64_t r = repeats[d];
        if (r == 1) continue;
        if (ndim == NC_MAX_DIMS) { cur = repeat_by_cat(&x, cur, d, r); continue; }
        /* [.., s, ..] -> [.., 1, s, ..] -> [.., r, s, ..] -> [.., r*s, ..] */
        int64_t wide[NC_MAX_DIMS], merged[NC_MAX_DIMS];
        for (int i = 0; i <= ndim; i++) wide[i] = i < d ? cur->sizes[i] : i == d ? r : cur->sizes[i - 1];
        memcpy(merged, cur->sizes, sizeof merged);
        merged[d] *= r;
        netcl_tensor *u = XC(&x, netcl_tensor_unsqueeze, cur, d);
        netcl_tensor *e = XC(&x, netcl_tensor_expand, u, ndim + 1, wide);
        cur = XC(&x, netcl_tensor_reshape, e, ndim, merged);
    }
    return nc_x_return(&x, out, own_copy(&x, cur, a));
}

/* ---- topk / bernoulli --------------------------------------------------------------------------- */

netcl_status netcl_topk(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int64_t k, int dim, int largest)
{
    *values = *indices = NULL;
    int64_t size = a->ndim ? a->sizes[dim < 0 || dim >= a->ndim ? 0 : dim] : 1;
    if (a->ndim) NC_TRY(check_dim("topk", a, dim));
    else if (dim != 0) return ARG("topk: dim %d out of range for 0-dim %s", dim, nc_describe(a));
    if (k < 0 || k > size || (a->ndim == 0 && k != 1))
        return ARG("topk: k = %lld out of range for dim %d (size %lld) of %s", (long long)k, dim + 1, (long long)size, nc_describe(a));
    nc_x x = NC_X("topk");
    netcl_tensor *v = NULL, *i = NULL;
    XDO(&x, netcl_sort(&v, &i, a, dim, largest));
    nc_x_own(&x, v);
    nc_x_own(&x, i);
    netcl_tensor *res[2] = {v, i};
    if (a->ndim && k < size) {
        res[0] = XC(&x, netcl_tensor_narrow, v, dim, 0, k);
        res[1] = XC(&x, netcl_tensor_narrow, i, dim, 0, k);
        res[0] = XC(&x, netcl_tensor_contiguous, res[0]);
        res[1] = XC(&x, netcl_tensor_contiguous, res[1]);
    }
    netcl_tensor *outs[2];
    netcl_status st = nc_x_return_n(&x, 2, outs, res);
    *values = outs[0];
    *indices = outs[1];
    return st;
}
