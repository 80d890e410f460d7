/* conv_unfold.c — host side of the convolution family's unfold
 * (kernels/conv_unfold.cl: im2col, col2im): the geometry struct passed by
 * value, one work item per output element (or block), 32-bit index
 * arithmetic whenever the element counts allow it (nc_cl_index_opts). */
#include "cl.h"
#include <stdio.h>
#include <string.h>

/* the kernels' conv_t: the geometry as 64-bit fields */
typedef struct { cl_long v[14]; } cl_conv_t;
_Static_assert(sizeof(nc_conv_geom) == sizeof(cl_conv_t), "conv_t mirrors nc_conv_geom");

/* im2col / col2im: out, in, the geometry, then cols' sample and row
 * strides; n work items; count: the largest element index + 1 either
 * buffer sees (nc_cl_index_opts); extra: more build options (may be "") */
static netcl_status conv_launch(netcl_device *dev, const char *kname, const nc_desc *out, const nc_desc *in,
                                const nc_desc *cols, const nc_conv_geom *g, int64_t n, int64_t count, const char *extra)
{
    NC_TRY(nc_cl_enter(dev, kname, in->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[200];
    nc_cl_dtype_opts(opts, sizeof opts, in->dtype, out->dtype);
    nc_cl_index_opts(opts, sizeof opts, count);
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s", extra);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "conv_unfold", opts, kname, &k, &wg));
    cl_mem o = out->buf, x = in->buf;
    cl_long oo = out->offset, xo = in->offset, sn = cols->strides[0], sk = cols->strides[1];
    NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, x); NC_ARG(k, 3, xo);
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, 4, sizeof(cl_conv_t), g));
    NC_ARG(k, 5, sn); NC_ARG(k, 6, sk);
    return nc_cl_launch(cd, k, wg, n);
}

/* the largest index + 1 of the cols view and of the image */
static int64_t largest(const nc_conv_geom *g, const nc_desc *cols)
{
    int64_t K = g->C * g->kh * g->kw, L = g->oh * g->ow;
    int64_t span = (g->N - 1) * cols->strides[0] + (K - 1) * cols->strides[1] + L, img = g->N * g->C * g->H * g->W;
    return span > img ? span : img;
}

/* a small window compiled into the kernels (CG_*): the common 1x1 to 7x7
 * windows with strides up to 4; "" for the others */
static void window_opts(const nc_conv_geom *g, char *buf, size_t len)
{
    buf[0] = 0;
    if (g->kh <= 7 && g->kw <= 7 && g->sh <= 4 && g->sw <= 4)
        snprintf(buf, len, " -DCG_KH=%d -DCG_KW=%d -DCG_SH=%d -DCG_SW=%d", (int)g->kh, (int)g->kw, (int)g->sh, (int)g->sw);
}

netcl_status nc_cl_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g)
{
    char w[100];
    window_opts(g, w, sizeof w);
    /* the [K, N, L] layout: items run over samples before channels */
    if (w[0] && nc_cols_samples_adjacent(cols)) strcat(w, " -DCOLS_NFAST");
    /* compiled window: an item per (n, c, l); else per (n, chunk of KCH rows, l) */
    int64_t per = w[0] ? g->C : (g->C * g->kh * g->kw + 15) / 16;   /* KCH in kernels/conv_unfold.cl */
    return conv_launch(dev, "im2col", cols, x, cols, g, g->N * per * g->oh * g->ow, largest(g, cols), w);
}

netcl_status nc_cl_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g)
{
    char w[100];
    window_opts(g, w, sizeof w);
    /* a compiled strided window: an item per sh x sw block of pixels */
    int64_t items = w[0] && (g->sh > 1 || g->sw > 1)
                        ? g->N * g->C * ((g->H + g->sh - 1) / g->sh) * ((g->W + g->sw - 1) / g->sw)
                        : g->N * g->C * g->H * g->W;
    return conv_launch(dev, "col2im", x, cols, cols, g, items, largest(g, cols), w);
}
