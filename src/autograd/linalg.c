/* linalg.c — matrix products with autograd: matmul's public entry point
 * and backward rule (forward: src/ops/linalg.c; kernels: backend linalg,
 * kernels/gemm*.cl), and the products built on it (autograd comes free):
 * mm and bmm with strict shapes, addmm, linear, outer and dot, and the
 * fused gemm (alpha, beta * c, bias, activation in the product's kernel),
 * which addmm and linear use. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    NC_AUTOCAST(NC_AUTOCAST_LOWER, netcl_matmul(out, ac[0], ac[1]), a, b);
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    NC_FORWARD(st, nc_fwd_matmul(out, a, b));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_MATMUL, "matmul", 2, ins);
    if (!n || nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, b) != NETCL_OK) return nc_record_fail(out, n, "matmul");
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* t's last two dims view a row-major matrix transposed */
static int transposed(const netcl_tensor *t)
{
    int d = t->ndim - 2;
    return t->ndim >= 2 && t->sizes[d] > 1 && t->sizes[d + 1] > 1 && t->strides[d] == 1 && t->strides[d + 1] == t->sizes[d];
}

/* views of a and b as batched matrices, g likewise: 1-D operands get the
 * dim matmul added and dropped */
netcl_status nc_rule_matmul(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
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
        netcl_tensor *full = i == 0 ? A : B;
        if (i == 1 && transposed(B)) {
            /* B views a row-major [N, K] (linear's weight): dB^T = G^T @ A is made
             * in that order, so the weight's gradient is row-major too */
            int64_t tsizes[NC_MAX_DIMS];
            memcpy(tsizes, B->sizes, sizeof tsizes);
            tsizes[B->ndim - 2] = B->sizes[B->ndim - 1], tsizes[B->ndim - 1] = B->sizes[B->ndim - 2];
            if ((st = nc_fwd_tensor_transpose(&T, G, G->ndim - 2, G->ndim - 1)) != NETCL_OK) break;
            st = nc_fwd_matmul(&r, T, A);
            R(T); T = NULL;
            if (st != NETCL_OK || (st = nc_sum_to_shape(&T, r, B->ndim, tsizes)) != NETCL_OK) break;
            R(r); r = NULL;
            st = nc_fwd_tensor_transpose(&s, T, T->ndim - 2, T->ndim - 1);
            R(T); T = NULL;
            if (st != NETCL_OK) break;
        } else {
            netcl_tensor *M = i == 0 ? B : A;   /* dA = G @ B^T, dB = A^T @ G */
            if ((st = nc_fwd_tensor_transpose(&T, M, M->ndim - 2, M->ndim - 1)) != NETCL_OK) break;
            st = i == 0 ? nc_fwd_matmul(&r, G, T) : nc_fwd_matmul(&r, T, G);
            R(T); T = NULL;
            if (st != NETCL_OK) break;
            if ((st = nc_sum_to_shape(&s, r, full->ndim, full->sizes)) != NETCL_OK) break;
            R(r); r = NULL;
        }
        if ((st = nc_fwd_tensor_reshape(&r, s, n->in[i].ndim, n->in[i].sizes)) != NETCL_OK) break;
        R(s); s = NULL;
        st = nc_rule_finish(n, i, r, &gin[i]);
        r = NULL;
    }
    R(A); R(B); R(G); R(r); R(s);
    return st;
}

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

/* The recorded (differentiable) form of gemm. */
static netcl_tensor *gemm_parts(nc_x *x, netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias,
                                double alpha, double beta, int act, double act_p)
{
    netcl_tensor *p = XC(x, netcl_matmul, a, b);
    if (alpha != 1) p = x_sc(x, NETCL_OP_MUL, p, alpha);
    if (c && beta != 0) p = x_add(x, p, beta == 1 ? c : x_sc(x, NETCL_OP_MUL, c, beta));
    if (bias) p = x_add(x, p, bias);
    if (act >= 0 && x->st == NETCL_OK) p = XC(x, netcl_unary, (netcl_op)act, p, act_p, 0);
    return p;
}

static int any_records(netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias)
{
    netcl_tensor *ins[4] = {a, b, c, bias};
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (ins[i]) ins[n++] = ins[i];
    return nc_should_record(n, ins);
}

netcl_status netcl_gemm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias,
                        double alpha, double beta, int act, double act_p)
{
    NC_AUTOCAST(NC_AUTOCAST_LOWER, netcl_gemm(out, ac[0], ac[1], ac[2], ac[3], alpha, beta, act, act_p), a, b, c, bias);
    if (!any_records(a, b, c, bias) || !nc_gemm_act_ok(act)) return nc_fwd_gemm(out, a, b, c, bias, alpha, beta, act, act_p);
    nc_x x = NC_X("gemm");
    if (a->ndim < 2 || b->ndim < 2)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "needs two tensors of at least 2 dims: %s @ %s", nc_describe(a), nc_describe(b)));
    if (x.st == NETCL_OK && bias && (bias->ndim != 1 || bias->sizes[0] != b->sizes[b->ndim - 1]))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "bias %s must be 1-D of the product's last size %lld", nc_describe(bias),
                              (long long)b->sizes[b->ndim - 1]));
    return nc_x_return(&x, out, gemm_parts(&x, a, b, c, bias, alpha, beta, act, act_p));
}

/* beta c + alpha (a @ b), c broadcast to the product's shape */
netcl_status netcl_addmm(netcl_tensor **out, netcl_tensor *c, netcl_tensor *a, netcl_tensor *b, double beta, double alpha)
{
    NC_AUTOCAST(NC_AUTOCAST_LOWER, netcl_addmm(out, ac[0], ac[1], ac[2], beta, alpha), c, a, b);
    nc_x x = NC_X("addmm");
    need_dims(&x, "addmm", a, 2, "mat1");
    need_dims(&x, "addmm", b, 2, "mat2");
    if (x.st == NETCL_OK && !any_records(a, b, c, NULL)) {
        netcl_tensor *r = XC(&x, nc_fwd_gemm, a, b, c, NULL, alpha, beta, -1, 0);
        return nc_x_return(&x, out, r);
    }
    netcl_tensor *p = XC(&x, netcl_matmul, a, b);
    if (alpha != 1) p = x_sc(&x, NETCL_OP_MUL, p, alpha);
    if (beta == 0) return nc_x_return(&x, out, p);   /* c is ignored, NaNs included, as PyTorch */
    netcl_tensor *cs = beta == 1 ? c : x_sc(&x, NETCL_OP_MUL, c, beta);
    return nc_x_return(&x, out, x_add(&x, p, cs));
}

/* x [..., in] @ w[out, in]^T + b[out] (b may be NULL) */
netcl_status netcl_linear(netcl_tensor **out, netcl_tensor *xin, netcl_tensor *w, netcl_tensor *b)
{
    NC_AUTOCAST(NC_AUTOCAST_LOWER, netcl_linear(out, ac[0], ac[1], ac[2]), xin, w, b);
    nc_x x = NC_X("linear");
    need_dims(&x, "linear", w, 2, "weight");
    if (x.st == NETCL_OK && (xin->ndim < 1 || xin->sizes[xin->ndim - 1] != w->sizes[1]))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "linear: input %s does not match weight %s (last dim must be %lld)",
                              nc_describe(xin), nc_describe(w), (long long)w->sizes[1]));
    if (x.st == NETCL_OK && b && (b->ndim != 1 || b->sizes[0] != w->sizes[0]))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "linear: bias %s does not match weight %s", nc_describe(b), nc_describe(w)));
    netcl_tensor *wt = XC(&x, netcl_tensor_transpose, w, 0, 1);
    if (x.st == NETCL_OK && xin->ndim >= 2 && !any_records(xin, w, b, NULL)) {
        /* one [rows, in] @ [in, out] product with the bias fused, however many leading dims */
        int64_t rows[2] = {1, xin->sizes[xin->ndim - 1]}, shape[NC_MAX_DIMS];
        for (int i = 0; i < xin->ndim; i++) shape[i] = xin->sizes[i];
        for (int i = 0; i < xin->ndim - 1; i++) rows[0] *= xin->sizes[i];
        shape[xin->ndim - 1] = w->sizes[0];
        netcl_tensor *x2 = xin->ndim == 2 ? xin : XC(&x, nc_fwd_tensor_reshape, xin, 2, rows);
        netcl_tensor *y2 = XC(&x, nc_fwd_gemm, x2, wt, NULL, b, 1, 0, -1, 0);
        return nc_x_return(&x, out, xin->ndim == 2 ? y2 : XC(&x, nc_fwd_tensor_view, y2, xin->ndim, shape));
    }
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
