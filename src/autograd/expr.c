/* expr.c — the scope behind XC(): temporaries, the first failure, and
 * handing results out (see expr.h); and the helpers backward rules share:
 * a gradient summed to an input's shape and cast to its dtype, and the
 * float mask of a comparison. */
#include "autograd/expr.h"
#include <string.h>

netcl_tensor *nc_x_own(nc_x *x, netcl_tensor *t)
{
    if (!t) return NULL;
    if (x->n == NC_X_MAX) { /* a programming error: the scope is sized for the longest composite */
        netcl_tensor_release(t);
        nc_x_fail(x, nc_fail(NETCL_ERR_BACKEND, "internal: more than %d temporaries in one scope", NC_X_MAX));
        return NULL;
    }
    x->tmp[x->n++] = t;
    return t;
}

netcl_tensor *nc_x_take(nc_x *x, netcl_status st)
{
    netcl_tensor *t = x->last;
    x->last = NULL;
    if (st != NETCL_OK) {
        netcl_tensor_release(t);
        x->st = st;
        return NULL;
    }
    return nc_x_own(x, t);
}

void nc_x_do(nc_x *x, netcl_status st) { if (st != NETCL_OK && x->st == NETCL_OK) x->st = st; }
void nc_x_fail(nc_x *x, netcl_status st) { nc_x_do(x, st); }

static void release_all(nc_x *x)
{
    for (int i = 0; i < x->n; i++) netcl_tensor_release(x->tmp[i]);
    x->n = 0;
}

netcl_status nc_x_end(nc_x *x)
{
    release_all(x);
    if (x->st != NETCL_OK && x->op) { /* name the op once, even when an inner call named it already */
        const char *msg = netcl_last_error();
        size_t n = strlen(x->op);
        if (strncmp(msg, x->op, n) != 0 || msg[n] != ':') nc_error_prefix("%s: ", x->op);
    }
    return x->st;
}

netcl_status nc_x_return_n(nc_x *x, int n, netcl_tensor **outs, netcl_tensor *const *results)
{
    for (int i = 0; i < n; i++) {
        outs[i] = x->st == NETCL_OK ? results[i] : NULL;
        if (outs[i]) netcl_tensor_retain(outs[i]);
    }
    return nc_x_end(x);
}

netcl_status nc_x_return(nc_x *x, netcl_tensor **out, netcl_tensor *result)
{
    return nc_x_return_n(x, 1, out, &result);
}

void nc_x_grad(nc_x *x, nc_node *n, int i, netcl_tensor *result, netcl_tensor **gin)
{
    if (x->st != NETCL_OK || !result || !nc_input_needs_grad(n, i)) return;
    netcl_tensor_retain(result);
    nc_x_do(x, nc_rule_finish(n, i, result, &gin[i]));
}

netcl_tensor *x_un(nc_x *x, netcl_op op, netcl_tensor *a) { return XC(x, netcl_unary, op, a, 0, 0); }
netcl_tensor *x_bin(nc_x *x, netcl_op op, netcl_tensor *a, netcl_tensor *b) { return XC(x, netcl_binary, op, a, b); }
netcl_tensor *x_sc(nc_x *x, netcl_op op, netcl_tensor *a, double s) { return XC(x, netcl_binary_scalar, op, a, s, 0); }
netcl_tensor *x_rsc(nc_x *x, netcl_op op, double s, netcl_tensor *a) { return XC(x, netcl_binary_scalar, op, a, s, 1); }
netcl_tensor *x_red(nc_x *x, netcl_op op, netcl_tensor *a, int dim, int keepdim) { return XC(x, netcl_reduce, op, a, dim, keepdim); }
netcl_tensor *x_cast(nc_x *x, netcl_tensor *a, netcl_dtype dt) { return XC(x, netcl_tensor_cast, a, dt); }

netcl_tensor *x_full(nc_x *x, const netcl_tensor *like, netcl_dtype dt, int ndim, const int64_t *sizes, double v)
{
    return XC(x, netcl_tensor_full, nc_dev(like), dt, ndim, sizes, v);
}

/* ---- helpers the rules share ----------------------------------------------------- */

int nc_reduce_run(const netcl_tensor *t, const int *reduced, int hi, int64_t *shape)
{
    int lo = hi;
    while (lo > 0 && reduced[lo - 1] && t->strides[lo - 1] == t->strides[lo] * t->sizes[lo]) lo--;
    int n = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d > lo && d <= hi) shape[n - 1] *= t->sizes[d];
        else shape[n++] = t->sizes[d];
    }
    return lo;
}

netcl_status nc_reduce_runs(netcl_tensor **out, netcl_op op, netcl_tensor *t, const int *reduced)
{
    netcl_tensor *cur = t, *next;
    netcl_tensor_retain(t);
    for (int hi = t->ndim - 1; hi >= 0; hi--) {
        if (!reduced[hi]) continue;
        int64_t shape[NC_MAX_DIMS];
        int lo = nc_reduce_run(cur, reduced, hi, shape);
        netcl_status st = NETCL_OK;
        if (lo < hi) {
            st = nc_fwd_tensor_view(&next, cur, cur->ndim - (hi - lo), shape);
            R(cur);
            if (st != NETCL_OK) return st;
            cur = next;
        }
        st = nc_fwd_reduce(&next, op, cur, lo, 1);
        R(cur);
        if (st != NETCL_OK) return st;
        cur = next;
        hi = lo;   /* the dims before lo keep their places */
    }
    if (cur->ndim == t->ndim) { *out = cur; return NETCL_OK; }
    int64_t shape[NC_MAX_DIMS];   /* back to t's rank: size 1 where reduced */
    for (int d = 0; d < t->ndim; d++) shape[d] = reduced[d] ? 1 : t->sizes[d];
    netcl_status st = nc_fwd_tensor_view(out, cur, t->ndim, shape);
    R(cur);
    return st;
}

netcl_status nc_sum_to_shape(netcl_tensor **out, netcl_tensor *g, int ndim, const int64_t *sizes)
{
    int lead = g->ndim - ndim, summed[NC_MAX_DIMS], any = lead > 0;
    for (int d = 0; d < g->ndim; d++) any |= summed[d] = d < lead || (sizes[d - lead] == 1 && g->sizes[d] != 1);
    if (!any) {
        netcl_tensor_retain(g);
        *out = g;
        return NETCL_OK;
    }
    netcl_tensor *r;
    NC_TRY(nc_reduce_runs(&r, NETCL_OP_SUM, g, summed));
    netcl_status st = nc_fwd_tensor_view(out, r, ndim, sizes);
    R(r);
    return st;
}

/* gin = cast(sum_to_shape(g), input dtype); consumes g */
netcl_status nc_rule_finish(nc_node *n, int i, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *s;
    netcl_status st = nc_sum_to_shape(&s, g, n->in[i].ndim, n->in[i].sizes);
    R(g);
    if (st != NETCL_OK) return st;
    if (s->dtype == n->in[i].dtype) { *gin = s; return NETCL_OK; }
    st = nc_fwd_tensor_cast(gin, s, n->in[i].dtype);
    R(s);
    return st;
}

/* float mask of a comparison */
netcl_status nc_rule_mask(netcl_tensor **o, netcl_op cmp, netcl_tensor *a, netcl_tensor *b, double s, netcl_dtype dt)
{
    netcl_tensor *m;
    NC_TRY(b ? nc_fwd_binary(&m, cmp, a, b) : nc_fwd_binary_scalar(&m, cmp, a, s, 0));
    netcl_status st = nc_fwd_tensor_cast(o, m, dt);
    R(m);
    return st;
}
