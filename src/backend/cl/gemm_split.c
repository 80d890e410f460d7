/* gemm_split.c — split-K on OpenCL devices (src/ops/linalg.c runs it): how
 * many K slices a float32 product runs as, the slices run by the FFMA
 * kernel with their sum in the same launch, and elsewhere the last pass
 * that sums the slices' partial products through the GEMM's epilogue
 * (kernels/gemm.cl, gemm_slices), so a product with bias and activation
 * splits too. */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where NVIDIA's FFMA kernel serves a float32 product, the slices aim at
 * the blocks it runs best: 128 x 64 outputs, two a multiprocessor (four of
 * tn's two-warp blocks where neither operand is k-contiguous). A product
 * with fewer of them than 85% of one round splits into the fewest
 * power-of-two slices that make a round, none shorter than 1024 (shorter
 * ones lost); where no split makes a round it is not split. nn (w
 * n-contiguous, a not) aims at one block a multiprocessor: its small
 * 64 x 32 blocks serve such products well (splitting one in two lost).
 * Where no split makes a round, a product the small blocks fill runs
 * whole, the others in the most slices. These slices beat the generic
 * rule's (3, 4). Products that need more than 8 slices for a round (long
 * K, few outputs: a convolution's backward-weight product) keep the
 * generic rule (0), which gives them more than one round (more slices ran
 * faster there), as do forced configurations and the tensor cores.
 * Measurements: docs/notes/kernels.md. */
int nc_cl_gemm_split(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32)
{
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    if (a->dtype != NETCL_DTYPE_FLOAT32 || fp32 != NC_FP32_IEEE || nc_gemm_forced(dev)) return 0;
    nc_desc out = {0};
    out.dtype = a->dtype;
    nc_gemm_epi e = {1, 0, NULL, NULL, 0, -1, 0, fp32};
    nc_gemm_call g = {dev, &out, a, w, &e, 1, M, N, K};
    if (!nc_ffma_usable(&g)) return 0;
    int a_kc = a->strides[2] == 1, w_kc = w->strides[1] == 1;
    int64_t cu = dev->compute_units > 0 ? dev->compute_units : 1;
    int64_t slots = !a_kc && !w_kc ? 4 * cu : a_kc && !w_kc ? cu : 2 * cu;
    int64_t blocks = nc_gemm_groups(&g, 128, 64), want = slots * 85 / 100;
    if (blocks >= want) return 1;
    int64_t S = 2;
    for (; S <= 8 && K / S >= 1024; S *= 2)
        if (S * blocks >= want) return (int)S;
    if (S > 8) return 0;
    /* no round: as it is where the small blocks fill the device */
    int64_t small = nc_ffma_small_groups(&g);
    if (small >= cu) return 1;
    /* Few outputs (x @ w^T of a small batch): the small blocks, in the
     * fewest power-of-two slices that give every multiprocessor one, none
     * shorter than the kernel takes such a product (nc_ffma_few_blocks_k:
     * 256, 512 for nn). A block's time grows with its K, not with how many
     * run, so the slices take such products in well under gemm_tiled's
     * time (measurements: docs/notes/kernels.md). */
    int64_t min_k = nc_ffma_few_blocks_k(&g), T = 1;
    while (T < 16 && T * small < cu && K / (2 * T) >= min_k) T *= 2;
    return (int)T;
}

netcl_status nc_cl_gemm_sum(netcl_device *dev, const nc_desc *out, const nc_desc *part, const nc_gemm_epi *epi)
{
    NC_TRY(nc_cl_enter(dev, "matmul", part->dtype, out->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    int64_t S = part->sizes[0], M = part->sizes[1], N = part->sizes[2];
    /* vectors along a row of the contiguous partials, aligned where the offset allows */
    int vw = N % 4 == 0 && part->offset % 4 == 0 ? 4 : N % 2 == 0 && part->offset % 2 == 0 ? 2 : 1;
    char opts[160];
    nc_cl_dtype_opts(opts, sizeof opts, part->dtype, out->dtype);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n, " -DGEMM_SLICES -DVW=%d", vw);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_gemm_build_kernel(cd, "gemm", opts, sizeof opts, "gemm_slices", &k, &wg));
    cl_mem ob = out->buf, pb = part->buf;
    cl_long ooff = out->offset, poff = part->offset, cM = M, cN = N;
    cl_int cS = (cl_int)S;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, ooff); NC_ARG(k, 2, pb); NC_ARG(k, 3, poff); NC_ARG(k, 4, cS); NC_ARG(k, 5, cM);
    NC_ARG(k, 6, cN);
    NC_TRY(nc_gemm_set_epi_args(k, 7, out, epi, pb, 0));
    /* a group spans a row's vectors (up to 256 of them), the rest of it rows */
    size_t group = wg < 256 ? wg : 256, vecs = (size_t)((N + vw - 1) / vw), l0 = 1;
    while (l0 < vecs && l0 < group) l0 *= 2;
    size_t l1 = group / l0 ? group / l0 : 1, rows = (size_t)(M < 65535 ? M : 65535);
    size_t global[2] = {(vecs + l0 - 1) / l0 * l0, (rows + l1 - 1) / l1 * l1}, local[2] = {l0, l1};
    return nc_cl_launch_nd(cd, k, 2, global, local);
}

int64_t nc_gemm_private_bytes(const nc_gemm_state *s) { return s->split_count ? s->split_count_n * (int64_t)sizeof(cl_int) : 0; }

/* The device's split-K tile counts, at least n of them, zero (created or
 * grown on demand; each product leaves them at zero) */
static netcl_status split_counts(nc_cl_device *cd, int64_t n, cl_mem *out)
{
    nc_gemm_state *s = nc_gemm_state_of(cd);
    if (!s) return nc_fail(NETCL_ERR_OOM, "matmul: out of host memory for the GEMM state");
    if (s->split_count_n < n) {
        int64_t want = n < 4096 ? 4096 : n;
        cl_int *zero = calloc((size_t)want, sizeof *zero), err;
        if (!zero) return nc_fail(NETCL_ERR_OOM, "matmul: out of host memory for %lld split-K counts", (long long)want);
        cl_mem m = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (size_t)want * sizeof *zero,
                                        zero, &err);
        free(zero);
        if (err != CL_SUCCESS) return nc_cl_fail(err, "clCreateBuffer (split-K counts)", __FILE__, __LINE__);
        if (s->split_count) nc_cl.clReleaseMemObject(s->split_count);
        s->split_count = m;
        s->split_count_n = want;
    }
    *out = s->split_count;
    return NETCL_OK;
}

void nc_gemm_slice_descs(nc_desc *a, nc_desc *w, nc_desc *out, int S, int64_t ks)
{
    a->sizes[0] = w->sizes[0] = out->sizes[0] = S;
    a->sizes[2] = w->sizes[1] = ks;
    a->strides[0] = ks * a->strides[2];
    w->strides[0] = ks * w->strides[1];
    out->strides[0] = out->sizes[1] * out->sizes[2];
}

int nc_gemm_split_in_kernel(const nc_gemm_cfg *cfg)
{
    const char *env = getenv("NETCL_GEMM_SPLIT_SUM");
    if (cfg->kernel != NC_GEMM_FFMA || (env && strcmp(env, "pass") == 0)) return 0;
    return cfg->mwg * cfg->nwg <= 64 * 64 || (env && strcmp(env, "kernel") == 0);
}

netcl_status nc_cl_gemm_split_run(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w,
                                  const nc_gemm_epi *epi, int S)
{
    if (S < 2) return NETCL_ERR_UNSUPPORTED;
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2], ks = nc_gemm_slice_len(K, S);
    nc_desc av = *a, wv = *w, pv = *out;
    nc_gemm_slice_descs(&av, &wv, &pv, S, ks);
    /* the configuration the slices' batched product gets (a plain one) */
    nc_gemm_epi plain = {1, 0, NULL, NULL, 0, -1, 0, epi->fp32};
    nc_gemm_call g = {dev, &pv, &av, &wv, &plain, S, M, N, ks};
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(&g, &cfg, &why);
    if (!nc_gemm_split_in_kernel(&cfg) || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return NETCL_ERR_UNSUPPORTED;
    NC_TRY(nc_cl_enter(dev, "matmul", a->dtype, a->dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    int64_t tiles = ((M + cfg.mwg - 1) / cfg.mwg) * ((N + cfg.nwg - 1) / cfg.nwg);
    nc_split_sum split = {NULL, NULL, K - (S - 1) * ks};
    NC_TRY(split_counts(cd, tiles, &split.count));
    NC_TRY(nc_cl_scratch(cd, 0, (size_t)(tiles * S * cfg.mwg * cfg.nwg) * sizeof(float), &split.part));
    g.out = out;
    g.epi = epi;
    return nc_ffma_split_launch(&g, &cfg, &split);
}
