/* gemm_tf32.c — large tf32 products on Hopper's wgmma with their operands
 * rounded first. wgmma reads float32 operands from local memory and
 * truncates them to tf32; rounding them there (the kernel's WG_ROUND_OWN)
 * costs a second pass over every stage and runs slower than mma.sync
 * (docs/gemm.md, "Hopper's wgmma"). Two ways round it:
 *  - float16 (first choice): each operand rounded to tf32 and scaled by a
 *    power of two per row of a and column of w into float16, which holds
 *    a tf32 value exactly; the float16 kernel runs at twice tf32's rate
 *    from half the bytes and scales its outputs back (kernels/gemm_tf32_half.cl);
 *  - float32 workspaces (where float16's 16-byte rows do not fit): rounded
 *    once, k-contiguous, the truncating tf32 kernel then gives the same
 *    bits as rounding in the kernel (kernels/gemm_round_tf32.cl). */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one configuration: the untuned 16-bit block, its 64-byte rows
 * holding 16 float32 (truncated; ahead of mma.sync: docs/notes/kernels.md). */
static const nc_gemm_cfg wgmma_tf32 = {NC_GEMM_WGMMA, 128, 128, 16, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8};

static int half_usable(const nc_gemm_call *g);

/* A workspace of rows x cols (cols contiguous, or rows where trans),
 * each row along the contiguous dim starting on a 128-byte line: a
 * k-tile's row segment then takes whole 32-byte sectors of one line.
 * Unpadded rows off the lines ran the product far slower, float32 and
 * float16 alike (measurements: docs/notes/kernels.md) */
static void ws_desc(nc_desc *d, cl_mem buf, netcl_dtype dt, int64_t rows, int64_t cols, int trans)
{
    nc_matrix_desc(d, buf, dt, rows, cols, trans);
    int64_t ld = nc_line_elems(trans ? rows : cols, dt);
    if (trans) d->strides[2] = ld, d->strides[0] = cols * ld;
    else d->strides[1] = ld, d->strides[0] = rows * ld;
}
static int64_t ws_ld(const nc_desc *d) { return d->strides[1] == 1 ? d->strides[2] : d->strides[1]; }
static size_t ws_bytes(const nc_desc *d) { return (size_t)d->strides[0] * netcl_dtype_size(d->dtype); }

/* The workspace descriptors: a [M][K] and w [N][K] (as [K, N], k contiguous) */
static void workspace_descs(const nc_gemm_call *g, cl_mem ra, cl_mem rw, nc_desc *ta, nc_desc *tw)
{
    ws_desc(ta, ra, NETCL_DTYPE_FLOAT32, g->M, g->K, 0);
    ws_desc(tw, rw, NETCL_DTYPE_FLOAT32, g->K, g->N, 1);
}

/* Where it pays: tf32 allowed, one float32 product, nothing forced or
 * tuned for it, K >= 1024 and M, N >= 2048 where an operand is not
 * k-contiguous (mma.sync's slower layouts), else 3072 through float16
 * (4096 through float32 workspaces): the sizes from which each way
 * measured at least level with mma.sync (docs/notes/kernels.md).
 * NETCL_TF32_ROUND_FIRST=0 turns it off, =1 takes it at any size (tests). */
nc_tf32_way nc_gemm_tf32_round_first(const nc_gemm_call *g)
{
    if (g->out->dtype != NETCL_DTYPE_FLOAT32 || g->epi->fp32 != NC_FP32_TF32 || g->B != 1 || g->a->sizes[0] != 1 ||
        g->w->sizes[0] != 1)
        return NC_TF32_NONE;
    const char *env = getenv("NETCL_TF32_ROUND_FIRST");
    int any_size = env && strcmp(env, "1") == 0;
    if ((env && strcmp(env, "0") == 0) || (!any_size && (g->M < 2048 || g->N < 2048 || g->K < 1024)))
        return NC_TF32_NONE;   /* the cheap questions first: smaller products never take it */
    nc_tf32_way way = NC_TF32_HALF;
    if (!half_usable(g)) {
        nc_desc ta, tw;
        workspace_descs(g, NULL, NULL, &ta, &tw);
        nc_gemm_call r = *g;
        r.a = &ta, r.w = &tw;
        if (!nc_wgmma_usable(&r)) return NC_TF32_NONE;
        way = NC_TF32_FLOAT32;
    }
    int64_t least = g->a->strides[2] == 1 && g->w->strides[1] == 1 ? way == NC_TF32_HALF ? 3072 : 4096 : 2048;
    if (!any_size && (g->M < least || g->N < least)) return NC_TF32_NONE;
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(g, &cfg, &why);
    return strcmp(why, "default") == 0 ? way : NC_TF32_NONE;
}

/* ---- tf32 carried by float16 ------------------------------------------------
 * A tf32 value has float16's 11 significant bits and float32's exponent
 * range. Scaled by a power of two per row of a and per column of w (its
 * largest finite magnitude to [2^14, 2^15)), every element of the row
 * down to 2^-28 of its largest is exactly a float16, so the float16
 * tensor cores multiply exactly the tf32 values cuBLAS's TF32 does, with
 * float32 accumulation, at twice tf32's rate and from half the bytes; the
 * kernel scales each output back (-DESCALE). Smaller elements become
 * float16 subnormals or zero: an error under 2^-39 of their row's largest
 * magnitude, below tf32's own rounding of an element at that bound. Inf
 * and NaN pass through as themselves (the maxima skip them). */
static const nc_gemm_cfg wgmma_half = {NC_GEMM_WGMMA, 128, 128, 32, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8};

/* The workspaces keep their operand's layout: an n-contiguous w and an
 * m-contiguous a (whose float16 rows of M must be whole 16-byte chunks)
 * are the layouts float16 wgmma reads fastest (from 128-byte atoms; ahead
 * of a transposed to k-contiguous: docs/notes/kernels.md); the others are
 * k-contiguous */
static int w_n_contig(const nc_gemm_call *g) { return g->w->strides[2] == 1 && g->w->strides[1] != 1; }
static int a_m_contig(const nc_gemm_call *g) { return g->a->strides[1] == 1 && g->a->strides[2] != 1 && g->M % 8 == 0; }

static void half_descs(const nc_gemm_call *g, cl_mem ha, cl_mem hw, nc_desc *ta, nc_desc *tw)
{
    ws_desc(ta, ha, NETCL_DTYPE_FLOAT16, g->M, g->K, a_m_contig(g));
    ws_desc(tw, hw, NETCL_DTYPE_FLOAT16, g->K, g->N, !w_n_contig(g));
}

static int half_usable(const nc_gemm_call *g)
{
    const char *env = getenv("NETCL_TF32_HALF");
    if (env && strcmp(env, "0") == 0) return 0;
    nc_desc ta, tw, o16 = *g->out;
    half_descs(g, NULL, NULL, &ta, &tw);
    o16.dtype = NETCL_DTYPE_FLOAT16;
    nc_gemm_call r = *g;
    r.a = &ta, r.w = &tw, r.out = &o16;
    return nc_wgmma_usable(&r);
}

/* kernel `name` of gemm_tf32_half.cl, VW = vw */
static netcl_status half_kernel(nc_cl_device *cd, const char *name, const char *flags, int vw, cl_kernel *k)
{
    char opts[160];
    nc_cl_dtype_opts(opts, sizeof opts, NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT32);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n, " -DVW=%d%s", vw, flags);
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "gemm_tf32_half", opts, name, k, &wg));
    return wg < 256 ? NETCL_ERR_UNSUPPORTED : NETCL_OK;
}

/* The passes over one operand of R rows of K, element (r, k) at d's
 * offset + r sr + k sk: its rows' maxima into mx[moff ..], then its
 * float16 copy into dst, [R][K] or, where out_rcont, [K][R], the rows
 * along the contiguous dim ldo apart */
static netcl_status operand_to_half(const nc_gemm_call *g, cl_mem dst, cl_mem mx, cl_int moff, const nc_desc *d,
                                    int64_t R, int64_t K, int64_t sr, int64_t sk, int out_rcont, int64_t ldo)
{
    cl_int cld = (cl_int)ldo;
    nc_cl_device *cd = nc_cl_dev(g->dev);
    cl_kernel k;
    cl_mem in = d->buf;
    cl_long off = d->offset, csr = sr, csk = sk;
    cl_int cR = (cl_int)R, cK = (cl_int)K;
    /* float4s along the contiguous dim where it and every row start are aligned */
    int vk = sk == 1 && K % 4 == 0 && off % 4 == 0 && sr % 4 == 0 ? 4 : 1;
    int vr = sr == 1 && R % 4 == 0 && off % 4 == 0 && sk % 4 == 0 ? 4 : 1;
    size_t row_bytes = (size_t)K * sizeof(float);
    if (sk == 1 && !out_rcont && (int64_t)row_bytes + 1024 <= g->dev->local_mem) {   /* one pass: a row at a time */
        NC_TRY(half_kernel(cd, "to_half_rows", "", vk, &k));
        NC_ARG(k, 0, dst); NC_ARG(k, 1, in); NC_ARG(k, 2, off); NC_ARG(k, 3, csr); NC_ARG(k, 4, cR); NC_ARG(k, 5, cK);
        NC_ARG(k, 6, mx); NC_ARG(k, 7, moff); NC_ARG(k, 8, cld);
        NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, 9, row_bytes, NULL));
        size_t global = (size_t)R * 256, local = 256;
        return nc_cl_launch_nd(cd, k, 1, &global, &local);
    }
    if (sk == 1) {
        NC_TRY(half_kernel(cd, "absmax_k", "", vk, &k));
        NC_ARG(k, 0, mx); NC_ARG(k, 1, moff); NC_ARG(k, 2, in); NC_ARG(k, 3, off); NC_ARG(k, 4, csr); NC_ARG(k, 5, cR);
        NC_ARG(k, 6, cK);
        size_t global = (size_t)(R + 7) / 8 * 256, local = 256;
        NC_TRY(nc_cl_launch_nd(cd, k, 1, &global, &local));
    } else {
        nc_desc z;   /* atomic maxima start at +0 (bits 0) */
        nc_matrix_desc(&z, mx, NETCL_DTYPE_FLOAT32, 1, R, 0);
        z.offset = moff;
        NC_TRY(nc_cl_fill(g->dev, &z, 0.0));
        NC_TRY(half_kernel(cd, "absmax_r", "", vr, &k));
        NC_ARG(k, 0, mx); NC_ARG(k, 1, moff); NC_ARG(k, 2, in); NC_ARG(k, 3, off); NC_ARG(k, 4, csr); NC_ARG(k, 5, csk);
        NC_ARG(k, 6, cR); NC_ARG(k, 7, cK);
        size_t global[2] = {(size_t)(R / vr + 63) / 64 * 64, (size_t)(K + 63) / 64}, local[2] = {64, 1};   /* KCH */
        NC_TRY(nc_cl_launch_nd(cd, k, 2, global, local));
    }
    size_t global[2], local[2];
    if (out_rcont ? sr == 1 : sk == 1) {   /* no transpose */
        int vw = out_rcont ? vr : vk;
        NC_TRY(half_kernel(cd, "to_half_e", out_rcont ? " -DRCONT" : "", vw, &k));
        int64_t along = out_rcont ? R : K, across = out_rcont ? K : R;
        global[0] = (size_t)(along / vw + 63) / 64 * 64, global[1] = (size_t)across, local[0] = 64, local[1] = 1;
    } else if (!out_rcont) {
        NC_TRY(half_kernel(cd, "to_half_t", sr == 1 ? " -DIN_RCONT" : "", 1, &k));
        global[0] = (size_t)(K + 31) / 32 * 32, global[1] = (size_t)(R + 31) / 32 * 8, local[0] = 32, local[1] = 8;
    } else {
        return NETCL_ERR_UNSUPPORTED;   /* half_descs never asks for this */
    }
    NC_ARG(k, 0, dst); NC_ARG(k, 1, in); NC_ARG(k, 2, off); NC_ARG(k, 3, csr); NC_ARG(k, 4, csk); NC_ARG(k, 5, cR);
    NC_ARG(k, 6, cK); NC_ARG(k, 7, mx); NC_ARG(k, 8, moff); NC_ARG(k, 9, cld);
    return nc_cl_launch_nd(cd, k, 2, global, local);
}

static netcl_status half_product(const nc_gemm_call *g)
{
    nc_cl_device *cd = nc_cl_dev(g->dev);
    cl_mem ha, hw, mx;
    nc_desc ta, tw;
    half_descs(g, NULL, NULL, &ta, &tw);
    NC_TRY(nc_cl_scratch(cd, 0, ws_bytes(&ta), &ha));
    NC_TRY(nc_cl_scratch(cd, 1, ws_bytes(&tw), &hw));
    NC_TRY(nc_cl_scratch(cd, 2, (size_t)(g->M + g->N) * 4, &mx));
    NC_TRY(operand_to_half(g, ha, mx, 0, g->a, g->M, g->K, g->a->strides[1], g->a->strides[2], a_m_contig(g), ws_ld(&ta)));
    NC_TRY(operand_to_half(g, hw, mx, (cl_int)g->M, g->w, g->N, g->K, g->w->strides[2], g->w->strides[1],
                           w_n_contig(g), ws_ld(&tw)));
    ta.buf = ha, tw.buf = hw;
    nc_gemm_call r = *g;
    r.a = &ta, r.w = &tw;
    return nc_mma_launch_scaled_half(&r, &wgmma_half, mx);
}

/* One operand [R rows][K] (element (r, k) at off + r sr + k sk) rounded
 * into buf [R][K], rows ldo apart */
static netcl_status round_operand(nc_cl_device *cd, cl_mem buf, const nc_desc *d, int64_t R, int64_t K, int64_t sr,
                                  int64_t sk, int64_t ldo)
{
    char opts[160];
    nc_cl_dtype_opts(opts, sizeof opts, NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT32);
    if (sr == 1 && sk != 1) strncat(opts, " -DRCONT", sizeof opts - strlen(opts) - 1);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "gemm_round_tf32", opts, "round_tf32_2d", &k, &wg));
    if (wg < 256) return NETCL_ERR_UNSUPPORTED;
    cl_mem in = d->buf;
    cl_long off = d->offset, csr = sr, csk = sk;
    cl_int cR = (cl_int)R, cK = (cl_int)K, cld = (cl_int)ldo;
    NC_ARG(k, 0, buf); NC_ARG(k, 1, in); NC_ARG(k, 2, off); NC_ARG(k, 3, csr); NC_ARG(k, 4, csk); NC_ARG(k, 5, cR);
    NC_ARG(k, 6, cK); NC_ARG(k, 7, cld);
    size_t global[2] = {(size_t)(K + 31) / 32 * 32, (size_t)(R + 31) / 32 * 8}, local[2] = {32, 8};
    return nc_cl_launch_nd(cd, k, 2, global, local);
}

static netcl_status rounded_product(const nc_gemm_call *g)
{
    nc_cl_device *cd = nc_cl_dev(g->dev);
    cl_mem ra, rw;
    nc_desc ta, tw;
    workspace_descs(g, NULL, NULL, &ta, &tw);
    NC_TRY(nc_cl_scratch(cd, 0, ws_bytes(&ta), &ra));
    NC_TRY(nc_cl_scratch(cd, 1, ws_bytes(&tw), &rw));
    NC_TRY(round_operand(cd, ra, g->a, g->M, g->K, g->a->strides[1], g->a->strides[2], ws_ld(&ta)));
    NC_TRY(round_operand(cd, rw, g->w, g->N, g->K, g->w->strides[2], g->w->strides[1], ws_ld(&tw)));
    ta.buf = ra, tw.buf = rw;
    nc_gemm_call r = *g;
    r.a = &ta, r.w = &tw;
    return nc_mma_launch_tf32_exact(&r, &wgmma_tf32);
}

/* Anything that fails here (the workspaces' memory above all) leaves the
 * product to the usual path: NETCL_ERR_UNSUPPORTED */
netcl_status nc_gemm_tf32_rounded(const nc_gemm_call *g, nc_tf32_way way)
{
    netcl_status st = way == NC_TF32_HALF ? half_product(g) : rounded_product(g);
    if (st == NETCL_OK) return st;
    if (nc_cl_debug_level() >= 1)
        fprintf(stderr, "netcl: tf32 product %lldx%lldx%lld with its operands rounded first failed on %s (%s); mma.sync runs it\n",
                (long long)g->M, (long long)g->N, (long long)g->K, g->dev->name, netcl_last_error());
    return NETCL_ERR_UNSUPPORTED;
}

/* The product's description for netcl.gemm_config */
void nc_gemm_tf32_describe(nc_tf32_way way, char *buf, size_t len)
{
    char text[200];
    int half = way == NC_TF32_HALF;
    nc_gemm_cfg_format(half ? &wgmma_half : &wgmma_tf32, text, sizeof text);
    snprintf(buf, len, "%s (default; %s)", text,
             half ? "a and w rounded to tf32, scaled into float16 first" : "a and w rounded to tf32 first");
}
