/* linalg.c — matrix products built on matmul (autograd comes free): mm and
 * bmm with strict shapes, addmm, linear, outer and dot. */
#include "../autograd/expr.h"

static void need_dims(nc_x *x, const char *op, const netcl_tensor *t, int nd, const char *what)
{
    if (x->st == NETCL_OK && t->ndim != nd)
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "%s: %s must be %d-dimensional, got %s", op, what, nd, nc_describe(t)));
}

netcl_status netcl_mm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    nc_x x = NC_X(NULL);
    need_dims(&x, "mm", a, 2, "a");
    need_dims(&x, "mm", b, 2, "b");
    return nc_x_return(&x, out, XC(&x, netcl_matmul, a, b));
}

netcl_status netcl_bmm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    nc_x x = NC_X(NULL);
    need_dims(&x, "bmm", a, 3, "a");
    need_dims(&x, "bmm", b, 3, "b");
    if (x.st == NETCL_OK && a->sizes[0] != b->sizes[0])
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "bmm: batch sizes differ: %s and %s", nc_describe(a), nc_describe(b)));
    return nc_x_return(&x, out, XC(&x, netcl_matmul, a, b));
}

/* beta c + alpha (a @ b), c broadcast to the product's shape */
netcl_status netcl_addmm(netcl_tensor **out, netcl_tensor *c, netcl_tensor *a, netcl_tensor *b, double beta, double alpha)
{
    nc_x x = NC_X("addmm");
    need_dims(&x, "addmm", a, 2, "mat1");
    need_dims(&x, "addmm", b, 2, "mat2");
    netcl_tensor *p = XC(&x, netcl_matmul, a, b);
    if (alpha != 1) p = x_sc(&x, NETCL_OP_MUL, p, alpha);
    if (beta == 0) return nc_x_return(&x, out, p);   /* c is ignored, NaNs included, as PyTorch */
    netcl_tensor *cs = beta == 1 ? c : x_sc(&x, NETCL_OP_MUL, c, beta);
    return nc_x_return(&x, out, x_add(&x, p, cs));
}

/* x [..., in] @ w[out, in]^T + b[out] (b may be NULL) */
netcl_status netcl_linear(netcl_tensor **out, netcl_tensor *xin, netcl_tensor *w, netcl_tensor *b)
{
    nc_x x = NC_X("linear");
    need_dims(&x, "linear", w, 2, "weight");
    if (x.st == NETCL_OK && (xin->ndim < 1 || xin->sizes[xin->ndim - 1] != w->sizes[1]))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "linear: input %s does not match weight %s (last dim must be %lld)",
                              nc_describe(xin), nc_describe(w), (long long)w->sizes[1]));
    if (x.st == NETCL_OK && b && (b->ndim != 1 || b->sizes[0] != w->sizes[0]))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "linear: bias %s does not match weight %s", nc_describe(b), nc_describe(w)));
    netcl_tensor *wt = XC(&x, netcl_tensor_transpose, w, 0, 1);
    netcl_tensor *y = XC(&x, netcl_matmul, xin, wt);
    return nc_x_return(&x, out, b ? x_add(&x, y, b) : y);
}

/* a [n] x b [m] -> [n, m] */
netcl_status netcl_outer(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    nc_x x = NC_X("outer");
    need_dims(&x, "outer", a, 1, "a");
    need_dims(&x, "outer", b, 1, "b");
    netcl_tensor *ac = XC(&x, netcl_tensor_unsqueeze, a, 1);
    netcl_tensor *br = XC(&x, netcl_tensor_unsqueeze, b, 0);
    return nc_x_return(&x, out, x_mul(&x, ac, br));
}

netcl_status netcl_dot(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    nc_x x = NC_X(NULL);
    need_dims(&x, "dot", a, 1, "a");
    need_dims(&x, "dot", b, 1, "b");
    if (x.st == NETCL_OK && a->sizes[0] != b->sizes[0])
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "dot: lengths differ: %s and %s", nc_describe(a), nc_describe(b)));
    return nc_x_return(&x, out, XC(&x, netcl_matmul, a, b));
}
