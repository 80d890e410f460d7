/* elementwise.c — host side of the elementwise family (kernels/copy.cl,
 * unary.cl, binary.cl and where.cl): picks the contiguous or strided
 * kernel, sets arguments, launches. where moves raw words, its scalars
 * converted by the host exactly as the cpu stores them. */
#include "cl.h"
#include <stdio.h>
#include <string.h>


netcl_status nc_cl_copy(netcl_device *dev, const nc_desc *dst, const nc_desc *src)
{
    NC_TRY(nc_cl_enter(dev, "copy", dst->dtype, src->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, src->dtype, dst->dtype);
    nc_cl_meta m;
    const nc_desc *ops[2] = {dst, src};
    nc_cl_meta_of(&m, 2, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    cl_kernel k;
    size_t wg;
    cl_mem d = dst->buf, s = src->buf;
    int nd = (int)m.ndim;
    if (nc_cl_meta_contiguous(&m, 2)) {
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "copy_contig", &k, &wg));
        cl_long doff = m.offsets[0], soff = m.offsets[1], n = m.n;
        NC_ARG(k, 0, d); NC_ARG(k, 1, doff); NC_ARG(k, 2, s); NC_ARG(k, 3, soff); NC_ARG(k, 4, n);
    } else if ((nd == 2 || nd == 3) && m.strides[0][nd - 1] == 1 && m.strides[1][nd - 2] == 1 &&
               m.sizes[nd - 2] >= 16 && m.sizes[nd - 1] >= 16 && dev->max_work_group >= 256) {
        /* a transposed matrix (or a batch of them): tiles through local
         * memory, 64 x 64 of floats or 32 x 32 of 8-byte values (copy.cl) */
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "copy_transpose", &k, &wg));
        NC_ARG(k, 0, d); NC_ARG(k, 1, s); NC_ARG(k, 2, m);
        netcl_dtype st = src->dtype;
        size_t tt = st == NETCL_DTYPE_FLOAT32 || st == NETCL_DTYPE_FLOAT16 || st == NETCL_DTYPE_BFLOAT16 ? 64 : 32;
        size_t global[3] = {(size_t)(m.sizes[nd - 2] + tt - 1) / tt * 32, (size_t)(m.sizes[nd - 1] + tt - 1) / tt * 8,
                            nd == 3 ? (size_t)m.sizes[0] : 1};
        size_t local[3] = {32, 8, 1};
        return nc_cl_launch_nd(cd, k, 3, global, local);
    } else if ((nd == 2 || nd == 3) && m.strides[0][nd - 1] == 1 && m.strides[1][nd - 1] == 1 && m.sizes[nd - 1] >= 16) {
        /* rows of both sides contiguous (narrowed views, padded rows): whole rows */
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "copy_rows", &k, &wg));
        NC_ARG(k, 0, d); NC_ARG(k, 1, s); NC_ARG(k, 2, m);
        /* 64 items a group: short rows share one, several rows to a group
         * (rows of 64 floats took one group each with 8 of 64 items busy,
         * far below memory speed; measurements: docs/notes/kernels.md) */
        size_t items = (size_t)(m.sizes[nd - 1] + 7) / 8;   /* RW in copy.cl */
        size_t lx = 1;
        while (lx < items && lx < 64) lx *= 2;
        size_t ly = 64 / lx, rows = (size_t)m.sizes[nd - 2];
        size_t global[3] = {(items + lx - 1) / lx * lx, (rows + ly - 1) / ly * ly, nd == 3 ? (size_t)m.sizes[0] : 1};
        size_t local[3] = {lx, ly, 1};
        return nc_cl_launch_nd(cd, k, 3, global, local);
    } else {
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "copy_strided", &k, &wg));
        NC_ARG(k, 0, d); NC_ARG(k, 1, s); NC_ARG(k, 2, m);
    }
    return nc_cl_launch(cd, k, wg, m.n);
}

netcl_status nc_cl_fill(netcl_device *dev, const nc_desc *dst, double value)
{
    NC_TRY(nc_cl_enter(dev, "fill", dst->dtype, dst->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, dst->dtype, dst->dtype);
    /* the host converts once, exactly as the CPU backend does (saturation,
     * NaN -> 0, bool of NaN), and the kernel stores the raw word */
    union { unsigned char raw[8]; cl_ulong bits; } v = {{0}};
    nc_store_double(v.raw, dst->dtype, 0, value);
    cl_ulong bits = netcl_dtype_size(dst->dtype) == 8 ? v.bits
                  : netcl_dtype_size(dst->dtype) == 4 ? (cl_ulong)*(uint32_t *)v.raw
                  : netcl_dtype_size(dst->dtype) == 2 ? (cl_ulong)*(uint16_t *)v.raw : (cl_ulong)v.raw[0];
    nc_cl_meta m;
    const nc_desc *ops[1] = {dst};
    nc_cl_meta_of(&m, 1, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    cl_kernel k;
    size_t wg;
    cl_mem d = dst->buf;
    if (nc_cl_meta_contiguous(&m, 1)) {
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "fill_contig", &k, &wg));
        cl_long off = m.offsets[0], n = m.n;
        NC_ARG(k, 0, d); NC_ARG(k, 1, off); NC_ARG(k, 2, n); NC_ARG(k, 3, bits);
    } else {
        NC_TRY(nc_cl_kernel(cd, "copy", opts, "fill_strided", &k, &wg));
        NC_ARG(k, 0, d); NC_ARG(k, 1, m); NC_ARG(k, 2, bits);
    }
    return nc_cl_launch(cd, k, wg, m.n);
}

netcl_status nc_cl_range(netcl_device *dev, const nc_desc *dst, double start, double step)
{
    NC_TRY(nc_cl_enter(dev, "range", dst->dtype, dst->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96];
    nc_cl_dtype_opts(opts, sizeof opts, dst->dtype, dst->dtype);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "copy", opts, "range_contig", &k, &wg));
    cl_mem d = dst->buf;
    cl_long off = dst->offset, n = dst->sizes[0];
    NC_ARG(k, 0, d); NC_ARG(k, 1, off); NC_ARG(k, 2, n);
    NC_TRY(nc_cl_set_wide(dev, k, 3, start));
    NC_TRY(nc_cl_set_wide(dev, k, 4, step));
    return nc_cl_launch(cd, k, wg, n);
}

static int is_compare(netcl_op op) { return nc_op_is_predicate(op); }

netcl_status nc_cl_unary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2)
{
    NC_TRY(nc_cl_enter(dev, netcl_op_name(op), a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96], name[64];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    nc_cl_meta m;
    const nc_desc *ops[2] = {out, a};
    nc_cl_meta_of(&m, 2, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    int contig = nc_cl_meta_contiguous(&m, 2);
    snprintf(name, sizeof name, "unary_%s%s", netcl_op_name(op), contig ? "_c" : "");
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "unary", opts, name, &k, &wg));
    cl_mem o = out->buf, x = a->buf;
    if (contig) {
        cl_long oo = m.offsets[0], ao = m.offsets[1], n = m.n;
        NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, x); NC_ARG(k, 3, ao); NC_ARG(k, 4, n);
    } else {
        NC_ARG(k, 0, o); NC_ARG(k, 1, x); NC_ARG(k, 2, m);
    }
    int np = contig ? 5 : 3;
    NC_TRY(nc_cl_set_scalar(k, np, a->dtype, p1));
    NC_TRY(nc_cl_set_scalar(k, np + 1, a->dtype, p2));
    return nc_cl_launch(cd, k, wg, contig ? (m.n + 3) / 4 : m.n);   /* 4 elements per item */
}

netcl_status nc_cl_unary_grad(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                              const nc_desc *y, double p1, double p2)
{
    NC_TRY(nc_cl_enter(dev, netcl_op_name(op), g->dtype, gin->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96], name[64];
    nc_cl_dtype_opts(opts, sizeof opts, g->dtype, gin->dtype);
    nc_cl_meta m;
    const nc_desc *ops[4] = {gin, g, x, y};
    nc_cl_meta_of(&m, 4, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    int contig = nc_cl_meta_contiguous(&m, 4);
    snprintf(name, sizeof name, "unary_grad_%s%s", netcl_op_name(op), contig ? "_c" : "");
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "unary", opts, name, &k, &wg));
    cl_mem o = gin->buf, gb = g->buf, xb = x->buf, yb = y->buf;
    int np;
    if (contig) {
        cl_long oo = m.offsets[0], go = m.offsets[1], xo = m.offsets[2], yo = m.offsets[3], n = m.n;
        NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, gb); NC_ARG(k, 3, go); NC_ARG(k, 4, xb); NC_ARG(k, 5, xo);
        NC_ARG(k, 6, yb); NC_ARG(k, 7, yo); NC_ARG(k, 8, n);
        np = 9;
    } else {
        NC_ARG(k, 0, o); NC_ARG(k, 1, gb); NC_ARG(k, 2, xb); NC_ARG(k, 3, yb); NC_ARG(k, 4, m);
        np = 5;
    }
    NC_TRY(nc_cl_set_scalar(k, np, g->dtype, p1));
    NC_TRY(nc_cl_set_scalar(k, np + 1, g->dtype, p2));
    return nc_cl_launch(cd, k, wg, contig ? (m.n + 3) / 4 : m.n);   /* 4 elements per item */
}

netcl_status nc_cl_binary_grad(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                               const nc_desc *a, const nc_desc *b, double sa, double sb)
{
    NC_TRY(nc_cl_enter(dev, netcl_op_name(op), g->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96], name[64];
    nc_cl_dtype_opts(opts, sizeof opts, g->dtype, out->dtype);
    nc_cl_meta m;
    /* an absent operand aliases out (never read) so the geometry stays one */
    const nc_desc *ops[4] = {out, g, a ? a : out, b ? b : out};
    nc_cl_meta_of(&m, 4, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    snprintf(name, sizeof name, "binary_grad_%c_%s", which ? 'b' : 'a', netcl_op_name(op));
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "binary", opts, name, &k, &wg));
    cl_mem o = out->buf, gb = g->buf, ab = a ? a->buf : out->buf, bb = b ? b->buf : out->buf;
    cl_int has_a = a != NULL, has_b = b != NULL;
    NC_ARG(k, 0, o); NC_ARG(k, 1, gb); NC_ARG(k, 2, ab); NC_ARG(k, 3, bb); NC_ARG(k, 4, m);
    NC_TRY(nc_cl_set_scalar(k, 5, g->dtype, sa));
    NC_TRY(nc_cl_set_scalar(k, 6, g->dtype, sb));
    NC_ARG(k, 7, has_a); NC_ARG(k, 8, has_b);
    return nc_cl_launch(cd, k, wg, m.n);
}

netcl_status nc_cl_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b,
                          double s, int reversed)
{
    NC_TRY(nc_cl_enter(dev, netcl_op_name(op), a->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    char opts[96], name[64];
    nc_cl_dtype_opts(opts, sizeof opts, a->dtype, out->dtype);
    if (is_compare(op)) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DCOMPARE");
    nc_cl_meta m;
    const nc_desc *ops[3] = {out, a, b};
    int nops = b ? 3 : 2;
    nc_cl_meta_of(&m, nops, ops);
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    int contig = nc_cl_meta_contiguous(&m, nops);
    snprintf(name, sizeof name, "binary_%s%s", netcl_op_name(op), b ? (contig ? "_c" : "") : (contig ? "_sc" : "_s"));
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "binary", opts, name, &k, &wg));
    cl_mem o = out->buf, x = a->buf;
    cl_long oo = m.offsets[0], ao = m.offsets[1], n = m.n;
    cl_int rev = reversed;
    if (b) {
        cl_mem y = b->buf;
        cl_long bo = m.offsets[2];
        if (contig) { NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, x); NC_ARG(k, 3, ao); NC_ARG(k, 4, y); NC_ARG(k, 5, bo); NC_ARG(k, 6, n); }
        else { NC_ARG(k, 0, o); NC_ARG(k, 1, x); NC_ARG(k, 2, y); NC_ARG(k, 3, m); }
    } else if (contig) {
        NC_ARG(k, 0, o); NC_ARG(k, 1, oo); NC_ARG(k, 2, x); NC_ARG(k, 3, ao);
        NC_TRY(nc_cl_set_scalar(k, 4, a->dtype, s));
        NC_ARG(k, 5, rev); NC_ARG(k, 6, n);
    } else {
        NC_ARG(k, 0, o); NC_ARG(k, 1, x);
        NC_TRY(nc_cl_set_scalar(k, 2, a->dtype, s));
        NC_ARG(k, 3, rev); NC_ARG(k, 4, m);
    }
    return nc_cl_launch(cd, k, wg, contig ? (m.n + 3) / 4 : m.n);   /* 4 elements per item */
}

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
    nc_cl_index_opts(opts, sizeof opts, m.n);   /* 32-bit index arithmetic where it fits */
    cl_kernel k;
    size_t wg;
    int contig = nc_cl_meta_contiguous(&m, 4);
    NC_TRY(nc_cl_kernel(cd, "where", opts, contig ? "where_c" : "where_strided", &k, &wg));
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
