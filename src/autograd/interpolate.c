/* interpolate.c — interpolate (upsampling and resizing) built from
 * index_select along each spatial dim (autograd comes free through
 * index_select's backward): nearest, and linear/bilinear as a weighted sum
 * of the two neighbours. Source coordinates follow PyTorch: with a scale
 * factor the ratio is 1 / scale; align_corners maps the corner pixels onto
 * each other. The small index and weight vectors are made on the host. */
#include "autograd/expr.h"
#include <math.h>
#include <stdlib.h>

/* the source position of output i along a dim of size in -> out */
static double source(int64_t i, int64_t in, int64_t out, double ratio, int linear, int align_corners)
{
    if (!linear) return floor((double)i * ratio);
    if (align_corners) return out > 1 ? (double)i * (double)(in - 1) / (double)(out - 1) : 0;
    double s = ((double)i + 0.5) * ratio - 0.5;
    return s < 0 ? 0 : s;
}

/* x resized along one dim: index_select of the neighbour(s), weighted */
static netcl_tensor *resize_dim(nc_x *x, netcl_tensor *t, int dim, int64_t out, double ratio, int linear, int align_corners)
{
    if (!t || x->st != NETCL_OK) return NULL;
    int64_t in = t->sizes[dim];
    double *i0 = malloc(sizeof(double) * (size_t)out * 3);
    if (!i0) { nc_x_fail(x, nc_fail(NETCL_ERR_OOM, "out of host memory")); return NULL; }
    double *i1 = i0 + out, *w = i1 + out;
    for (int64_t i = 0; i < out; i++) {
        double s = source(i, in, out, ratio, linear, align_corners);
        int64_t a = (int64_t)floor(s);
        if (a > in - 1) a = in - 1;
        i0[i] = (double)a;
        i1[i] = (double)(a + 1 < in ? a + 1 : in - 1);
        w[i] = s - (double)a;
    }
    netcl_device *dev = nc_dev(t);
    netcl_tensor *ia = XC(x, netcl_tensor_from_doubles, dev, NETCL_DTYPE_INT64, 1, &out, i0);
    netcl_tensor *r = XC(x, netcl_index_select, t, dim, ia, 0);
    if (linear) {
        netcl_tensor *ib = XC(x, netcl_tensor_from_doubles, dev, NETCL_DTYPE_INT64, 1, &out, i1);
        netcl_tensor *b = XC(x, netcl_index_select, t, dim, ib, 0);
        int64_t shape[NC_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) shape[d] = d == dim ? out : 1;
        netcl_tensor *wt = XC(x, netcl_tensor_from_doubles, dev, t->dtype, t->ndim, shape, w);
        r = x_add(x, r, x_mul(x, x_sub(x, b, r), wt));
    }
    free(i0);
    return r;
}

/* x [N, C, L] or [N, C, H, W]; size[i] > 0 the output sizes; scale[i] > 0
 * the factors they came from (0: size given, the ratio is in / out) */
netcl_status netcl_interpolate(netcl_tensor **out, netcl_tensor *in, const int64_t *size, const double *scale,
                               netcl_interp_mode mode, int align_corners)
{
    nc_x x = NC_X("interpolate");
    int nsp = in->ndim - 2;
    if (nsp < 1 || nsp > 2 || !nc_dtype_is_float(in->dtype))
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "expects a floating [N, C, L] or [N, C, H, W] input, got %s", nc_describe(in)));
    if (x.st == NETCL_OK && (unsigned)mode > NETCL_INTERP_LINEAR)
        nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "unknown mode %d", (int)mode));
    for (int i = 0; i < nsp && x.st == NETCL_OK; i++)
        if (size[i] <= 0 || in->sizes[2 + i] == 0)
            nc_x_fail(&x, nc_fail(NETCL_ERR_ARGUMENT, "output size %lld for %s must be positive (and the input non-empty)",
                                  (long long)size[i], nc_describe(in)));
    netcl_tensor *r = in;
    for (int i = 0; i < nsp && x.st == NETCL_OK; i++) {
        int64_t src = in->sizes[2 + i];
        double ratio = scale && scale[i] > 0 ? 1.0 / scale[i] : (double)src / (double)size[i];
        r = resize_dim(&x, r, 2 + i, size[i], ratio, mode == NETCL_INTERP_LINEAR, align_corners);
    }
    return nc_x_return(&x, out, r);
}
