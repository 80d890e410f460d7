/* conv.c — convolutions built from unfold/fold and matmul (autograd comes
 * free): conv2d, conv1d (a conv2d of height 1) and conv_transpose2d. The
 * whole batch is one GEMM per group: cols [C*kh*kw, N*L] (so the weight
 * gradient needs no per-sample temporaries). Issue 4 brings the fast
 * kernels; these are the reference strategy (im2col + GEMM). */
#include "../autograd/expr.h"

/* fmt names the input and the weight (two %s) and may use v (one %lld) */
static void check(nc_x *x, int ok, const char *fmt, const netcl_tensor *a, const netcl_tensor *b, long long v)
{
    if (x->st == NETCL_OK && !ok) nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, fmt, nc_describe(a), nc_describe(b), v));
}

static void check_bias(nc_x *x, const char *op, const netcl_tensor *b, int64_t channels)
{
    if (x->st == NETCL_OK && b && (b->ndim != 1 || b->sizes[0] != channels))
        nc_x_fail(x, nc_fail(NETCL_ERR_ARGUMENT, "%s: bias %s must have %lld elements (one per output channel)", op,
                             nc_describe(b), (long long)channels));
}

/* y [N, O, ...] + b viewed [1, O, 1, 1] */
static netcl_tensor *add_bias(nc_x *x, netcl_tensor *y, netcl_tensor *b)
{
    if (!b) return y;
    int64_t shape[4] = {1, b->sizes[0], 1, 1};
    netcl_tensor *bv = XC(x, netcl_tensor_view, b, 4, shape);
    return x_add(x, y, bv);
}

netcl_status netcl_conv2d(netcl_tensor **out, netcl_tensor *in, netcl_tensor *w, netcl_tensor *b, const int64_t *stride,
                          const int64_t *padding, const int64_t *dilation, int64_t groups)
{
    nc_x x = NC_X("conv2d");
    check(&x, in->ndim == 4 && w->ndim == 4, "input %s and weight %s must be 4-dimensional (N, C, H, W) and "
          "(out, in/groups, kh, kw)", in, w, 0);
    check(&x, groups >= 1 && x.st == NETCL_OK && w->sizes[0] % groups == 0 && in->sizes[1] == w->sizes[1] * groups,
          "input %s does not match weight %s with groups = %lld (input channels must be weight dim 2 x groups, "
          "output channels divisible by groups)", in, w, (long long)groups);
    if (x.st != NETCL_OK) return nc_x_return(&x, out, NULL);
    int64_t N = in->sizes[0], O = w->sizes[0], G = groups, K = in->sizes[1] * w->sizes[2] * w->sizes[3];
    check_bias(&x, "conv2d", b, O);
    int64_t k[2] = {w->sizes[2], w->sizes[3]};
    int64_t oh = nc_window_positions(in->sizes[2], k[0], stride[0], padding[0], dilation[0], 0);
    int64_t ow = nc_window_positions(in->sizes[3], k[1], stride[1], padding[1], dilation[1], 0);
    netcl_tensor *cols = XC(&x, netcl_unfold, in, k, dilation, padding, stride);       /* [N, K, L] */
    netcl_tensor *ct = cols;
    if (N > 1) ct = XC(&x, netcl_tensor_transpose, cols, 0, 1);                         /* [K, N, L] */
    int64_t cshape[3] = {G, K / G, N * oh * ow}, wshape[3] = {G, O / G, K / G};
    netcl_tensor *c2 = XC(&x, netcl_tensor_reshape, ct, 3, cshape);
    netcl_tensor *w2 = XC(&x, netcl_tensor_reshape, w, 3, wshape);
    netcl_tensor *y = XC(&x, netcl_matmul, w2, c2);                                      /* [G, O/G, N*L] */
    int64_t yshape[4] = {O, N, oh, ow};
    netcl_tensor *y4 = XC(&x, netcl_tensor_reshape, y, 4, yshape);
    netcl_tensor *yn = XC(&x, netcl_tensor_transpose, y4, 0, 1);                         /* [N, O, oh, ow] */
    return nc_x_return(&x, out, add_bias(&x, yn, b));
}

netcl_status netcl_conv1d(netcl_tensor **out, netcl_tensor *in, netcl_tensor *w, netcl_tensor *b, int64_t stride,
                          int64_t padding, int64_t dilation, int64_t groups)
{
    nc_x x = NC_X("conv1d");
    check(&x, in->ndim == 3 && w->ndim == 3, "input %s and weight %s must be 3-dimensional (N, C, L) and "
          "(out, in/groups, k)", in, w, 0);
    netcl_tensor *in4 = XC(&x, netcl_tensor_unsqueeze, in, 2);
    netcl_tensor *w4 = XC(&x, netcl_tensor_unsqueeze, w, 2);
    int64_t s[2] = {1, stride}, p[2] = {0, padding}, d[2] = {1, dilation};
    netcl_tensor *y = XC(&x, netcl_conv2d, in4, w4, b, s, p, d, groups);
    return nc_x_return(&x, out, XC(&x, netcl_tensor_squeeze, y, 2));
}

/* the adjoint of conv2d: x [N, Cin, H, W], w [Cin, Cout/groups, kh, kw] */
netcl_status netcl_conv_transpose2d(netcl_tensor **out, netcl_tensor *in, netcl_tensor *w, netcl_tensor *b,
                                    const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                    const int64_t *dilation, int64_t groups)
{
    nc_x x = NC_X("conv_transpose2d");
    check(&x, in->ndim == 4 && w->ndim == 4, "input %s and weight %s must be 4-dimensional (N, C, H, W) and "
          "(in, out/groups, kh, kw)", in, w, 0);
    check(&x, groups >= 1 && x.st == NETCL_OK && in->sizes[1] == w->sizes[0] && w->sizes[0] % groups == 0,
          "input %s does not match weight %s with groups = %lld (input channels must equal weight dim 1, "
          "divisible by groups)", in, w, (long long)groups);
    for (int i = 0; i < 2 && x.st == NETCL_OK; i++)
        if (output_padding[i] < 0 || (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]))
            nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "output_padding (%lld, %lld) must be smaller than the stride or "
                                  "the dilation", (long long)output_padding[0], (long long)output_padding[1]));
    if (x.st != NETCL_OK) return nc_x_return(&x, out, NULL);
    int64_t N = in->sizes[0], Cin = in->sizes[1], G = groups, Cog = w->sizes[1], H = in->sizes[2], W = in->sizes[3];
    int64_t k[2] = {w->sizes[2], w->sizes[3]}, size[2];
    for (int i = 0; i < 2; i++)
        size[i] = ((i ? W : H) - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + output_padding[i] + 1;
    check_bias(&x, "conv_transpose2d", b, Cog * G);
    netcl_tensor *xt = N > 1 ? XC(&x, netcl_tensor_transpose, in, 0, 1) : in;            /* [Cin, N, H, W] */
    int64_t xshape[3] = {G, Cin / G, N * H * W}, wshape[3] = {G, Cin / G, Cog * k[0] * k[1]};
    netcl_tensor *x3 = XC(&x, netcl_tensor_reshape, xt, 3, xshape);
    netcl_tensor *w3 = XC(&x, netcl_tensor_reshape, w, 3, wshape);
    netcl_tensor *wt = XC(&x, netcl_tensor_transpose, w3, 1, 2);                           /* [G, Cog*kk, Cin/G] */
    netcl_tensor *cols = XC(&x, netcl_matmul, wt, x3);                                      /* [G, Cog*kk, N*HW] */
    int64_t cshape[3] = {G * Cog * k[0] * k[1], N, H * W};
    netcl_tensor *c3 = XC(&x, netcl_tensor_reshape, cols, 3, cshape);
    netcl_tensor *cn = XC(&x, netcl_tensor_transpose, c3, 0, 1);                            /* [N, Cout*kk, HW] */
    netcl_tensor *y = XC(&x, netcl_fold, cn, size, k, dilation, padding, stride);
    return nc_x_return(&x, out, add_bias(&x, y, b));
}
