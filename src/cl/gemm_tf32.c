/* gemm_tf32.c — large tf32 products on Hopper's wgmma with their operands
 * rounded first. wgmma reads float32 operands from local memory and
 * truncates them to tf32; rounding them there (the kernel's WG_ROUND_OWN)
 * costs a second pass over every stage and runs slower than mma.sync
 * (docs/gemm.md, "Hopper's wgmma"). Rounded once into a workspace instead
 * (kernels/round_tf32.cl, k-contiguous: the layout tf32's wgmma needs),
 * the product runs the truncating kernel on operands that are already
 * tf32, which gives the same bits as rounding in the kernel. */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one configuration: the untuned 16-bit block, its 64-byte rows
 * holding 16 float32 (truncated, H100: 218-225 / 239-240 TFLOP/s at
 * 4096^3 / 8192^3 nt against mma.sync's 174 / 190). */
static const nc_gemm_cfg wgmma_tf32 = {NC_GEMM_WGMMA, 128, 128, 16, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8};

/* The workspace descriptors: a [M][K] and w [N][K] (as [K, N], k contiguous) */
static void workspace_descs(const nc_gemm_call *g, cl_mem ra, cl_mem rw, nc_desc *ta, nc_desc *tw)
{
    nc_gemm_desc3(ta, ra, NETCL_DTYPE_FLOAT32, g->M, g->K, 0);
    nc_gemm_desc3(tw, rw, NETCL_DTYPE_FLOAT32, g->K, g->N, 1);
}

/* Where it pays: tf32 allowed, one float32 product, nothing forced or
 * tuned for it, K >= 1024 and M, N >= 4096, or 2048 where an operand is
 * not k-contiguous (mma.sync's slower layouts). The two passes cost about
 * 4 (M + N) K bytes each way against 2 M N K flops: at 4096^2 a fifth of
 * the product's time. H100, TFLOP/s, rounded first against mma.sync: nn
 * 2048^3 155 / 149, 3072^3 159 / 132, 4096 x 2048 x 2048 170 / 152; nt
 * 2048^3 151 / 167, 3072^3 158 / 159, 4096 x 4096 x 1024 154 / 150.
 * NETCL_TF32_ROUND_FIRST=0 turns it off, =1 takes it at any size (tests). */
int nc_gemm_tf32_round_first(const nc_gemm_call *g)
{
    if (g->out->dtype != NETCL_DTYPE_FLOAT32 || nc_fp32_mode() != NC_FP32_TF32 || g->B != 1 || g->a->sizes[0] != 1 ||
        g->w->sizes[0] != 1)
        return 0;
    const char *env = getenv("NETCL_TF32_ROUND_FIRST");
    int any_size = env && strcmp(env, "1") == 0;
    int64_t least = g->a->strides[2] == 1 && g->w->strides[1] == 1 ? 4096 : 2048;
    if ((env && strcmp(env, "0") == 0) || (!any_size && (g->M < least || g->N < least || g->K < 1024))) return 0;
    nc_desc ta, tw;
    workspace_descs(g, NULL, NULL, &ta, &tw);
    nc_gemm_call r = *g;
    r.a = &ta, r.w = &tw;
    if (!nc_wgmma_usable(&r)) return 0;
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(g, &cfg, &why);
    return strcmp(why, "default") == 0;
}

/* One operand [R rows][K] (element (r, k) at off + r sr + k sk) rounded
 * into buf [R][K] */
static netcl_status round_operand(nc_cl_device *cd, cl_mem buf, const nc_desc *d, int64_t R, int64_t K, int64_t sr,
                                  int64_t sk)
{
    char opts[160];
    nc_cl_dtype_opts(opts, sizeof opts, NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT32);
    if (sr == 1 && sk != 1) strncat(opts, " -DRCONT", sizeof opts - strlen(opts) - 1);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, "round_tf32", opts, "round_tf32_2d", &k, &wg));
    if (wg < 256) return NETCL_ERR_UNSUPPORTED;
    cl_mem in = d->buf;
    cl_long off = d->offset, csr = sr, csk = sk;
    cl_int cR = (cl_int)R, cK = (cl_int)K;
    NC_ARG(k, 0, buf); NC_ARG(k, 1, in); NC_ARG(k, 2, off); NC_ARG(k, 3, csr); NC_ARG(k, 4, csk); NC_ARG(k, 5, cR);
    NC_ARG(k, 6, cK);
    size_t global[2] = {(size_t)(K + 31) / 32 * 32, (size_t)(R + 31) / 32 * 8}, local[2] = {32, 8};
    return nc_cl_launch_nd(cd, k, 2, global, local);
}

static netcl_status rounded_product(const nc_gemm_call *g)
{
    nc_cl_device *cd = nc_cl_dev(g->dev);
    cl_mem ra, rw;
    NC_TRY(nc_cl_scratch(cd, 0, (size_t)(g->M * g->K) * sizeof(float), &ra));
    NC_TRY(nc_cl_scratch(cd, 1, (size_t)(g->N * g->K) * sizeof(float), &rw));
    NC_TRY(round_operand(cd, ra, g->a, g->M, g->K, g->a->strides[1], g->a->strides[2]));
    NC_TRY(round_operand(cd, rw, g->w, g->N, g->K, g->w->strides[2], g->w->strides[1]));
    nc_desc ta, tw;
    workspace_descs(g, ra, rw, &ta, &tw);
    nc_gemm_call r = *g;
    r.a = &ta, r.w = &tw;
    return nc_mma_launch_tf32_exact(&r, &wgmma_tf32);
}

/* Anything that fails here (the workspaces' memory above all) leaves the
 * product to the usual path: NETCL_ERR_UNSUPPORTED */
netcl_status nc_gemm_tf32_rounded(const nc_gemm_call *g)
{
    netcl_status st = rounded_product(g);
    if (st == NETCL_OK) return st;
    if (nc_cl_debug_level() >= 1)
        fprintf(stderr, "netcl: tf32 product %lldx%lldx%lld with its operands rounded first failed on %s (%s); mma.sync runs it\n",
                (long long)g->M, (long long)g->N, (long long)g->K, g->dev->name, netcl_last_error());
    return NETCL_ERR_UNSUPPORTED;
}

/* The product's description for netcl.gemm_config */
void nc_gemm_tf32_describe(char *buf, size_t len)
{
    char text[200];
    nc_gemm_cfg_format(&wgmma_tf32, text, sizeof text);
    snprintf(buf, len, "%s (default; a and w rounded to tf32 first)", text);
}
