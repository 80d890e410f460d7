/* elementwise.c — the forward op layer of the elementwise family (unary,
 * binary and scalar ops, where): argument checks with clear messages,
 * broadcasting, dtype promotion, then one backend call; and the helpers the
 * other op files share (devices, broadcasting, casts). In-place forms:
 * elementwise_inplace.c. */
#include "ops/ops.h"
#include <math.h>
#include <string.h>

netcl_status nc_same_device(const char *op, const netcl_tensor *a, const netcl_tensor *b)
{
    if (nc_dev(a) != nc_dev(b))
        return nc_fail(NETCL_ERR_DEVICE, "%s: tensors on different devices: %s and %s (move one with :to())",
                       op, nc_describe(a), nc_describe(b));
    return NETCL_OK;
}

/* Replaces *t by a cast copy when its dtype differs from dt. */
netcl_status nc_cast_in_place(netcl_tensor **t, netcl_dtype dt, netcl_tensor **owned)
{
    if ((*t)->dtype == dt) return NETCL_OK;
    NC_TRY(nc_fwd_tensor_cast(owned, *t, dt));
    *t = *owned;
    return NETCL_OK;
}

/* Descriptor of t broadcast to (ndim, sizes): leading dims and size-1 dims
 * get stride 0. The caller has checked that the shapes broadcast. */
void nc_broadcast_desc(nc_desc *d, const netcl_tensor *t, int ndim, const int64_t *sizes)
{
    nc_desc_of(d, t);
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int s = i - lead;
        d->sizes[i] = sizes[i];
        d->strides[i] = (s >= 0 && t->sizes[s] == sizes[i]) ? t->strides[s] : 0;
    }
    d->ndim = ndim;
}

netcl_status nc_broadcast_shape(const char *op, const netcl_tensor *a, const netcl_tensor *b, int *ndim, int64_t *sizes)
{
    *ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < *ndim; i++) {
        int ia = i - (*ndim - a->ndim), ib = i - (*ndim - b->ndim);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: shapes do not broadcast: %s and %s (dim %d: %lld vs %lld)",
                           op, nc_describe(a), nc_describe(b), i + 1, (long long)sa, (long long)sb);
        sizes[i] = sa == 1 ? sb : sa;
    }
    return NETCL_OK;
}

/* Result dtype of an elementwise op on operands meeting at `dt`. */
netcl_dtype nc_compute_dtype(netcl_op op, netcl_dtype dt)
{
    bool int_like = !nc_dtype_is_float(dt);
    if (int_like && !nc_op_int_ok(op)) return NETCL_DTYPE_FLOAT32;
    if (dt == NETCL_DTYPE_BOOL && !nc_op_is_predicate(op)) return NETCL_DTYPE_INT64;
    return dt;
}

void nc_unary_params(netcl_op op, double *p1, double *p2)
{
    if (op == NETCL_OP_SOFTPLUS) {   /* beta 0 and threshold 0 mean PyTorch's defaults 1 and 20 */
        if (*p1 == 0) *p1 = 1;
        if (*p2 == 0) *p2 = 20;
    }
}

netcl_status nc_fwd_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2)
{
    *out = NULL;
    nc_unary_params(op, &p1, &p2);
    if (!nc_op_is_unary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "unary: %s (%d) is not a unary op", netcl_op_name(op), (int)op);
    netcl_tensor *cast = NULL;
    netcl_status st = nc_cast_in_place(&a, nc_compute_dtype(op, a->dtype), &cast);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), a->dtype, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc o, x;
        nc_desc_of(&o, *out);
        nc_desc_of(&x, a);
        st = nc_dev(a)->backend->elementwise.unary(nc_dev(a), op, &o, &x, p1, p2);
    }
    netcl_tensor_release(cast);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s: ", netcl_op_name(op), nc_describe(a));
    }
    return st;
}

netcl_status nc_fwd_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    *out = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_binary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "binary: %s (%d) is not a binary op", name, (int)op);
    NC_TRY(nc_same_device(name, a, b));
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(nc_broadcast_shape(name, a, b, &ndim, sizes));
    netcl_dtype dt = nc_compute_dtype(op, nc_dtype_promote(a->dtype, b->dtype));
    netcl_tensor *ca = NULL, *cb = NULL;
    netcl_status st = nc_cast_in_place(&a, dt, &ca);
    if (st == NETCL_OK) st = nc_cast_in_place(&b, dt, &cb);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), nc_op_is_predicate(op) ? NETCL_DTYPE_BOOL : dt, ndim, sizes);
    if (st == NETCL_OK && nc_numel(ndim, sizes) > 0) {
        nc_desc o, x, y;
        nc_desc_of(&o, *out);
        nc_broadcast_desc(&x, a, ndim, sizes);
        nc_broadcast_desc(&y, b, ndim, sizes);
        st = nc_dev(a)->backend->elementwise.binary(nc_dev(a), op, &o, &x, &y, 0, 0);
    }
    netcl_tensor_release(ca);
    netcl_tensor_release(cb);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s: ", name);
    }
    return st;
}

netcl_status nc_fwd_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed)
{
    *out = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_binary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "binary: %s (%d) is not a binary op", name, (int)op);
    netcl_dtype dt = a->dtype;
    if (!nc_dtype_is_float(dt) && s != floor(s)) dt = NETCL_DTYPE_FLOAT32;
    dt = nc_compute_dtype(op, dt);
    netcl_tensor *ca = NULL;
    netcl_status st = nc_cast_in_place(&a, dt, &ca);
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(a), nc_op_is_predicate(op) ? NETCL_DTYPE_BOOL : dt, a->ndim, a->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(a) > 0) {
        nc_desc o, x;
        nc_desc_of(&o, *out);
        nc_desc_of(&x, a);
        st = nc_dev(a)->backend->elementwise.binary(nc_dev(a), op, &o, &x, NULL, s, reversed);
    }
    netcl_tensor_release(ca);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s with scalar %g: ", name, nc_describe(a), s);
    }
    return st;
}

/* The gradient of a unary op's input: one kernel over g, the input x and
 * the output y (their dtypes meet at y's, a float dtype), by the op's GRAD
 * formula. */
netcl_status nc_fwd_unary_grad(netcl_tensor **gin, netcl_op op, netcl_tensor *g, netcl_tensor *x, netcl_tensor *y,
                               double p1, double p2)
{
    *gin = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_unary(op)) return nc_fail(NETCL_ERR_ARGUMENT, "unary_grad: %s (%d) is not a unary op", name, (int)op);
    NC_TRY(nc_same_device(name, g, x));
    NC_TRY(nc_same_device(name, g, y));
    if (!nc_dtype_is_float(y->dtype) || g->ndim != y->ndim || x->ndim != y->ndim ||
        memcmp(g->sizes, y->sizes, sizeof(int64_t) * (size_t)y->ndim) != 0 ||
        memcmp(x->sizes, y->sizes, sizeof(int64_t) * (size_t)y->ndim) != 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s backward: gradient %s, input %s and output %s must share a shape and a float output",
                       name, nc_describe(g), nc_describe(x), nc_describe(y));
    netcl_tensor *gc = NULL, *xc = NULL;
    netcl_status st = nc_cast_in_place(&g, y->dtype, &gc);
    if (st == NETCL_OK) st = nc_cast_in_place(&x, y->dtype, &xc);
    if (st == NETCL_OK) st = nc_tensor_new(gin, nc_dev(y), y->dtype, y->ndim, y->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(y) > 0) {
        nc_desc dgin, dg, dx, dy;
        nc_desc_of(&dgin, *gin);
        nc_desc_of(&dg, g);
        nc_desc_of(&dx, x);
        nc_desc_of(&dy, y);
        netcl_device *dev = nc_dev(y);
        st = dev->backend->elementwise.unary_grad(dev, op, &dgin, &dg, &dx, &dy, p1, p2);
    }
    netcl_tensor_release(gc);
    netcl_tensor_release(xc);
    if (st != NETCL_OK) {
        netcl_tensor_release(*gin);
        *gin = NULL;
        nc_error_prefix("%s backward %s: ", name, nc_describe(y));
    }
    return st;
}

/* The gradient of operand `which` (0: a, 1: b) of a binary op: one kernel
 * over g and the operands (a or b NULL: the scalar sa or sb), broadcast to
 * g's shape and cast to its float dtype. */
netcl_status nc_fwd_binary_grad(netcl_tensor **out, netcl_op op, int which, netcl_tensor *g, netcl_tensor *a,
                                netcl_tensor *b, double sa, double sb)
{
    *out = NULL;
    const char *name = netcl_op_name(op);
    if (!nc_op_is_binary(op) || nc_op_is_predicate(op) || (!a && !b) || !nc_dtype_is_float(g->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "binary_grad: %s of %s with %s operands", name, nc_describe(g),
                       a && b ? "two" : a || b ? "one" : "no");
    netcl_tensor *ops[2] = {a, b}, *owned[2] = {NULL, NULL};
    netcl_status st = NETCL_OK;
    for (int k = 0; k < 2 && st == NETCL_OK; k++) {
        if (!ops[k]) continue;
        int ndim;
        int64_t sizes[NC_MAX_DIMS];
        st = nc_same_device(name, g, ops[k]);
        if (st == NETCL_OK) st = nc_broadcast_shape(name, g, ops[k], &ndim, sizes);
        if (st == NETCL_OK && (ndim != g->ndim || memcmp(sizes, g->sizes, sizeof(int64_t) * (size_t)ndim) != 0))
            st = nc_fail(NETCL_ERR_ARGUMENT, "%s backward: operand %s does not broadcast to the gradient %s", name,
                         nc_describe(ops[k]), nc_describe(g));
        if (st == NETCL_OK) st = nc_cast_in_place(&ops[k], g->dtype, &owned[k]);
    }
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(g), g->dtype, g->ndim, g->sizes);
    if (st == NETCL_OK && netcl_tensor_numel(g) > 0) {
        nc_desc dout, dg, da, db;
        nc_desc_of(&dout, *out);
        nc_desc_of(&dg, g);
        if (ops[0]) nc_broadcast_desc(&da, ops[0], g->ndim, g->sizes);
        if (ops[1]) nc_broadcast_desc(&db, ops[1], g->ndim, g->sizes);
        netcl_device *dev = nc_dev(g);
        st = dev->backend->elementwise.binary_grad(dev, op, which, &dout, &dg, ops[0] ? &da : NULL, ops[1] ? &db : NULL, sa, sb);
    }
    netcl_tensor_release(owned[0]);
    netcl_tensor_release(owned[1]);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s backward %s: ", name, nc_describe(g));
    }
    return st;
}

/* ---- where ------------------------------------------------------------------ */

/* Broadcast shape of up to three tensors (NULL entries skipped). */
static netcl_status broadcast3(const char *op, netcl_tensor *const *ts, int *ndim, int64_t *sizes)
{
    *ndim = 0;
    for (int k = 0; k < 3; k++) if (ts[k] && ts[k]->ndim > *ndim) *ndim = ts[k]->ndim;
    for (int i = 0; i < *ndim; i++) sizes[i] = 1;
    for (int k = 0; k < 3; k++) {
        const netcl_tensor *t = ts[k];
        if (!t) continue;
        for (int i = 0; i < t->ndim; i++) {
            int o = i + *ndim - t->ndim;
            if (t->sizes[i] == sizes[o] || t->sizes[i] == 1) continue;
            if (sizes[o] != 1)
                return nc_fail(NETCL_ERR_ARGUMENT, "%s: shapes do not broadcast: %s has size %lld in dim %d where "
                               "another input has %lld", op, nc_describe(t), (long long)t->sizes[i], i + 1, (long long)sizes[o]);
            sizes[o] = t->sizes[i];
        }
    }
    return NETCL_OK;
}

/* dtype of where's result: the tensors' promotion; a lone tensor meets a
 * fractional scalar in float32; two scalars give float32. */
static netcl_dtype where_dtype(const netcl_tensor *a, const netcl_tensor *b, double sa, double sb)
{
    if (a && b) return nc_dtype_promote(a->dtype, b->dtype);
    if (!a && !b) return NETCL_DTYPE_FLOAT32;
    const netcl_tensor *t = a ? a : b;
    double s = a ? sb : sa;
    if (nc_dtype_is_float(t->dtype)) return t->dtype;
    if (s != floor(s)) return NETCL_DTYPE_FLOAT32;
    if (t->dtype == NETCL_DTYPE_BOOL && s != 0 && s != 1) return NETCL_DTYPE_INT64;
    return t->dtype;
}

netcl_status nc_fwd_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb)
{
    *out = NULL;
    if (a) NC_TRY(nc_same_device("where", cond, a));
    if (b) NC_TRY(nc_same_device("where", cond, b));
    netcl_tensor *ts[3] = {cond, a, b}, *tmp[3] = {NULL, NULL, NULL};
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    NC_TRY(broadcast3("where", ts, &ndim, sizes));
    netcl_dtype dt = where_dtype(a, b, sa, sb);
    netcl_status st = NETCL_OK;
    for (int k = 0; k < 3 && st == NETCL_OK; k++) {
        netcl_dtype want = k == 0 ? NETCL_DTYPE_BOOL : dt;
        if (ts[k] && ts[k]->dtype != want && (st = nc_fwd_tensor_cast(&tmp[k], ts[k], want)) == NETCL_OK) ts[k] = tmp[k];
    }
    if (st == NETCL_OK) st = nc_tensor_new(out, nc_dev(cond), dt, ndim, sizes);
    if (st == NETCL_OK && nc_numel(ndim, sizes) > 0) {
        nc_desc o, c, x, y;
        nc_desc_of(&o, *out);
        nc_broadcast_desc(&c, ts[0], ndim, sizes);
        if (a) nc_broadcast_desc(&x, ts[1], ndim, sizes);
        if (b) nc_broadcast_desc(&y, ts[2], ndim, sizes);
        st = nc_dev(cond)->backend->elementwise.where(nc_dev(cond), &o, &c, a ? &x : NULL, b ? &y : NULL, sa, sb);
    }
    for (int k = 0; k < 3; k++) netcl_tensor_release(tmp[k]);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("where: ");
    }
    return st;
}
