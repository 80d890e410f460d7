/* select.c — host side of kernels/select.cl: where (raw words, scalars
 * converted by the host exactly as the cpu stores them) and the row-wise
 * softmax family (a work-group per row, or a work item per short row). */
#include "cl.h"
#include <stdio.h>
#include <string.h>

/* the raw storage word of value v in dtype dt (as the cpu backend stores it) */
static cl_ulong raw_bits(netcl_dtype dt, double v)
{
    union { unsigned char raw[8]; cl_ulong bits; } u = {{0}};
    nc_store_double(u.raw, dt, 0, v);
    switch (netcl_dtype_size(dt)) {
    case 8: return u.bits;
    case 4: { uint32_t w; memcpy(&w, u.raw, 4); return w; }
    case 2: { uint16_t w; memcpy(&w, u.raw, 2); return w; }
    default: return u.raw[0];
    }
}

netcl_status nc_cl_where(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a,
                         const nc_desc *b, double sa, double sb)
{
    NC_TRY(nc_cl_enter(dev, "where", out->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, out->dtype, out->dtype);
    nc_cl_meta m;
    const nc_desc *ops[4] = {out, cond, a ? a : out, b ? b : out};
    nc_cl_meta_of(&m, 4, ops);
    cl_kernel k;
    size_t wg;
    int contig = nc_cl_meta_contiguous(&m, 4);
    NC_TRY(nc_cl_kernel(cd, "select", opts, contig ? "where_c" : "where_strided", &k, &wg));
    cl_mem o = out->buf, c = cond->buf, x = a ? a->buf : out->buf, y = b ? b->buf : out->buf;
    cl_ulong ra = raw_bits(out->dtype, sa), rb = raw_bits(out->dtype, sb);
    cl_int ha = a != NULL, hb = b != NULL;
    if (contig) {
        cl_long oo = m.offsets[0], co = m.offsets[1], ao = m.offsets[2], bo = m.offsets[3], n = m.n;
        NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, c); NC_ARG(k, 3, co); NC_ARG(k, 4, x); NC_ARG(k, 5, ao);
        NC_ARG(k, 6, y); NC_ARG(k, 7, bo); NC_ARG(k, 8, ra); NC_ARG(k, 9, rb); NC_ARG(k, 10, ha); NC_ARG(k, 11, hb);
        NC_ARG(k, 12, n);
        return nc_cl_launch(cd, k, wg, (m.n + 3) / 4);   /* 4 elements per item */
    }
    NC_ARG(k, 0, o); NC_ARG(k, 1, c); NC_ARG(k, 2, x); NC_ARG(k, 3, y); NC_ARG(k, 4, m);
    NC_ARG(k, 5, ra); NC_ARG(k, 6, rb); NC_ARG(k, 7, ha); NC_ARG(k, 8, hb);
    return nc_cl_launch(cd, k, wg, m.n);
}

/* rows of at most this many elements get a work item each */
#define SHORT_ROW 64

static netcl_status softmax_launch(netcl_device *dev, const char *kname, int log, const nc_desc *out,
                                   const nc_desc *a, const nc_desc *b)
{
    NC_TRY(nc_cl_enter(dev, log ? "log_softmax" : "softmax", a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[128], name[48];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    if (log) strcat(opts, " -DLOGSM");
    cl_long R = a->sizes[a->ndim - 1], rows = nc_numel(a->ndim, a->sizes) / R;
    int per_item = R <= SHORT_ROW;
    snprintf(name, sizeof name, "%s_%s", kname, per_item ? "item" : "group");
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "select", opts, name, &k, &wg));
    cl_mem o = out->buf, x = a->buf;
    cl_long oo = out->offset, ao = a->offset;
    int i = 0;
    NC_ARG(k, i++, o); NC_ARG(k, i++, oo); NC_ARG(k, i++, x); NC_ARG(k, i++, ao);
    if (b) { cl_mem y = b->buf; cl_long bo = b->offset; NC_ARG(k, i++, y); NC_ARG(k, i++, bo); }
    NC_ARG(k, i++, rows); NC_ARG(k, i++, R);
    if (per_item) return nc_cl_launch(cd, k, wg, rows);
    /* a power-of-two group no wider than the row needs */
    while (wg > 32 && (cl_long)wg / 2 >= R) wg /= 2;
    int64_t cap = (int64_t)(cd->dev->compute_units > 0 ? cd->dev->compute_units : 1) * 64;
    size_t groups = (size_t)(rows < cap ? rows : cap), global = groups * wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}

netcl_status nc_cl_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log)
{
    return softmax_launch(dev, "softmax", log, out, a, NULL);
}

netcl_status nc_cl_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log)
{
    return softmax_launch(dev, "softmax_back", log, gin, g, y);
}
