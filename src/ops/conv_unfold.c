/* conv_unfold.c — the forward op layer of unfold (im2col) and fold
 * (col2im): argument checks with clear messages, output sizes, contiguous
 * operands for the kernels (backend conv.im2col / conv.col2im); and the
 * window checks pooling shares. The windows take (h, w) pairs. */
#include "ops/ops.h"
#include <string.h>

netcl_status nc_check_window(const char *op, const netcl_tensor *x, const int64_t *k, const int64_t *s,
                                 const int64_t *p, const int64_t *d)
{
    for (int i = 0; i < 2; i++)
        if (k[i] <= 0 || s[i] <= 0 || p[i] < 0 || d[i] <= 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: kernel (%lld, %lld), stride (%lld, %lld), dilation (%lld, %lld) must be "
                           "positive and padding (%lld, %lld) non-negative (input %s)", op, (long long)k[0], (long long)k[1],
                           (long long)s[0], (long long)s[1], (long long)d[0], (long long)d[1], (long long)p[0],
                           (long long)p[1], nc_describe(x));
    return NETCL_OK;
}

netcl_status nc_check_float_input(const char *op, const netcl_tensor *x, int ndim)
{
    if (x->ndim != ndim)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: expects a %d-dim input, got %s", op, ndim, nc_describe(x));
    if (!nc_dtype_is_float(x->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: needs a floating tensor, got %s", op, nc_describe(x));
    return NETCL_OK;
}

/* positions of a window along one dim (floor, or ceil_mode's rule) */
int64_t nc_window_positions(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
    if (s <= 0 || k <= 0 || d <= 0) return 0;   /* invalid windows are refused by the callers' checks */
    int64_t span = in + 2 * p - d * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t n = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (n - 1) * s >= in + p) n--;   /* the last window must start inside the input or left padding */
    return n;
}

/* fills g for input sizes n, c, h, w; an error when no window fits */
static netcl_status conv_geom(const char *op, const netcl_tensor *x, int64_t n, int64_t c, int64_t h, int64_t w,
                              const int64_t *k, const int64_t *d, const int64_t *p, const int64_t *s, nc_conv_geom *g)
{
    *g = (nc_conv_geom){n, c, h, w, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], 0, 0};
    g->oh = nc_window_positions(h, k[0], s[0], p[0], d[0], 0);
    g->ow = nc_window_positions(w, k[1], s[1], p[1], d[1], 0);
    if (g->oh <= 0 || g->ow <= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: a (%lld, %lld) window with dilation (%lld, %lld) does not fit into a "
                       "%lld x %lld input padded by (%lld, %lld) (input %s)", op, (long long)k[0], (long long)k[1],
                       (long long)d[0], (long long)d[1], (long long)h, (long long)w, (long long)p[0], (long long)p[1],
                       nc_describe(x));
    return NETCL_OK;
}

/* the cols operand as the kernels take it: any strides for (n, k) but
 * unit stride along l (a transposed [K, N, L] product reads in place) */
static int cols_in_place(const netcl_tensor *c)
{
    return c->ndim == 3 && (c->sizes[2] == 1 || c->strides[2] == 1) && c->strides[0] >= 0 && c->strides[1] >= 0;
}

/* im2col of x (copied if not contiguous) into the cols view *cv;
 * col2im of cols (copied unless cols_in_place) into the new image *out */
static netcl_status run_im2col(netcl_tensor *cv, netcl_tensor *x, const nc_conv_geom *g)
{
    netcl_tensor *c = NULL;
    NC_TRY(nc_fwd_tensor_contiguous(&c, x));
    nc_desc o, xd;
    nc_desc_of(&o, cv);
    nc_desc_of(&xd, c);
    netcl_status st = netcl_tensor_numel(c) == 0 ? nc_dev(x)->backend->elementwise.fill(nc_dev(x), &o, 0)
                                                 : nc_dev(x)->backend->conv.im2col(nc_dev(x), &o, &xd, g);
    netcl_tensor_release(c);
    return st;
}

static netcl_status run_col2im(netcl_tensor **out, netcl_tensor *cols, const int64_t *sizes, const nc_conv_geom *g)
{
    netcl_tensor *c = NULL;
    if (cols_in_place(cols)) netcl_tensor_retain(c = cols);
    else NC_TRY(nc_fwd_tensor_contiguous(&c, cols));
    netcl_status st = nc_tensor_new(out, nc_dev(cols), cols->dtype, 4, sizes);
    if (st == NETCL_OK && netcl_tensor_numel(*out) > 0) {
        nc_desc o, cd;
        nc_desc_of(&o, *out);
        nc_desc_of(&cd, c);
        st = netcl_tensor_numel(c) == 0 ? nc_dev(cols)->backend->elementwise.fill(nc_dev(cols), &o, 0)
                                        : nc_dev(cols)->backend->conv.col2im(nc_dev(cols), &o, &cd, g);
    }
    netcl_tensor_release(c);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

/* unfold into new storage, [N, K, L] or (kn) [K, N, L]; the kernel
 * writes through the [N, K, L] view of either */
static netcl_status unfold_into(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d,
                                const int64_t *p, const int64_t *s, int kn)
{
    *out = NULL;
    NC_TRY(nc_check_float_input("unfold", x, 4));
    NC_TRY(nc_check_window("unfold", x, k, s, p, d));
    nc_conv_geom g;
    NC_TRY(conv_geom("unfold", x, x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3], k, d, p, s, &g));
    int64_t K = g.C * g.kh * g.kw, L = g.oh * g.ow;
    int64_t nkl[3] = {g.N, K, L}, knl[3] = {K, g.N, L}, view_strides[3] = {L, g.N * L, 1};
    NC_TRY(nc_tensor_new(out, nc_dev(x), x->dtype, 3, kn ? knl : nkl));
    if (netcl_tensor_numel(*out) == 0) return NETCL_OK;
    netcl_tensor *v = NULL;
    netcl_status st = kn ? nc_tensor_view_of(&v, *out, 3, nkl, view_strides, (*out)->offset) : NETCL_OK;
    if (st == NETCL_OK) st = run_im2col(kn ? v : *out, x, &g);
    netcl_tensor_release(v);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

netcl_status nc_fwd_unfold(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                           const int64_t *s)
{
    return unfold_into(out, x, k, d, p, s, 0);
}

netcl_status nc_fwd_unfold_kn(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                              const int64_t *s)
{
    return unfold_into(out, x, k, d, p, s, 1);
}

netcl_status nc_fwd_fold(netcl_tensor **out, netcl_tensor *cols, const int64_t *size, const int64_t *k, const int64_t *d,
                         const int64_t *p, const int64_t *s)
{
    *out = NULL;
    NC_TRY(nc_check_float_input("fold", cols, 3));
    NC_TRY(nc_check_window("fold", cols, k, s, p, d));
    if (cols->sizes[1] % (k[0] * k[1]) != 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "fold: dim 2 of %s must be a multiple of the kernel size %lld x %lld",
                       nc_describe(cols), (long long)k[0], (long long)k[1]);
    nc_conv_geom g;
    NC_TRY(conv_geom("fold", cols, cols->sizes[0], cols->sizes[1] / (k[0] * k[1]), size[0], size[1], k, d, p, s, &g));
    if (g.oh * g.ow != cols->sizes[2])
        return nc_fail(NETCL_ERR_ARGUMENT, "fold: %s has %lld blocks, an output of %lld x %lld with this window has %lld",
                       nc_describe(cols), (long long)cols->sizes[2], (long long)size[0], (long long)size[1],
                       (long long)(g.oh * g.ow));
    int64_t sizes[4] = {g.N, g.C, g.H, g.W};
    return run_col2im(out, cols, sizes, &g);
}
