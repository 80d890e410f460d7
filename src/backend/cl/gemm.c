/* gemm.c — host side of kernels/gemm.cl: the OpenCL backend's matmul and
 * fused gemm entries. A configuration (gemm.h) is chosen per call: one
 * forced through netcl_gemm_set_config or $NETCL_GEMM_CONFIG, else the
 * tuner's winner for the problem's shape class (gemm_tune.c), else the
 * tensor-core kernel or the FFMA one where they serve (gemm_mma.c,
 * nc_gemm_untuned), else a default per device type.
 * The chosen configuration is fitted to the operands (vector widths only
 * where a dim is contiguous and aligned) and launched; a configuration the
 * device cannot run falls back to the default. */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configurations as text ------------------------------------------------ */
static const char *const kernel_names[] = {"tiled", "direct", "mma", "ffma", "wgmma"};

void nc_gemm_cfg_format(const nc_gemm_cfg *c, char *buf, size_t len)
{
    if (c->kernel == NC_GEMM_MMA || c->kernel == NC_GEMM_WGMMA)
        snprintf(buf, len, "%s mwg=%d nwg=%d kwg=%d mdimc=%d ndimc=%d stages=%d gm=%d", kernel_names[c->kernel], c->mwg,
                 c->nwg, c->kwg, c->mdimc, c->ndimc, c->stages, c->gm);
    else if (c->kernel == NC_GEMM_FFMA)
        snprintf(buf, len, "ffma mwg=%d nwg=%d kwg=%d mdimc=%d ndimc=%d vwm=%d vwn=%d stages=%d gm=%d", c->mwg, c->nwg,
                 c->kwg, c->mdimc, c->ndimc, c->vwm, c->vwn, c->stages, c->gm);
    else if (c->kernel == NC_GEMM_DIRECT)
        snprintf(buf, len, "direct cmr=%d cnr=%d vw=%d kwg=%d mdimc=%d ndimc=%d", c->cmr, c->cnr, c->vw, c->kwg, c->mdimc,
                 c->ndimc);
    else
        snprintf(buf, len, "%s mwg=%d nwg=%d kwg=%d mdimc=%d ndimc=%d vwm=%d vwn=%d vw=%d pad=%d",
                 kernel_names[c->kernel], c->mwg, c->nwg, c->kwg, c->mdimc, c->ndimc, c->vwm, c->vwn, c->vw, c->pad);
}

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

int nc_gemm_cfg_parse(nc_gemm_cfg *c, const char *s)
{
    memset(c, 0, sizeof *c);
    c->kernel = -1;
    c->vwm = c->vwn = c->vw = 1;
    char word[48];
    int used;
    while (sscanf(s, " %47s%n", word, &used) == 1) {
        s += used;
        char *eq = strchr(word, '=');
        if (!eq) {
            for (int k = 0; k < 5; k++)
                if (strcmp(word, kernel_names[k]) == 0) c->kernel = k;
            continue;
        }
        *eq = 0;
        int v = atoi(eq + 1);
        /* "ldsm" is accepted from older tuning caches and ignored (every
         * mma configuration reads fragments with ldmatrix where it can) */
        int ldsm = 0;
        static const char *const keys[] = {"mwg", "nwg", "kwg", "mdimc", "ndimc", "vwm", "vwn", "vw", "pad", "cmr", "cnr", "stages", "gm", "ldsm"};
        int *slots[] = {&c->mwg, &c->nwg, &c->kwg, &c->mdimc, &c->ndimc, &c->vwm, &c->vwn,
                        &c->vw,  &c->pad, &c->cmr, &c->cnr,   &c->stages, &c->gm, &ldsm};
        int found = 0;
        for (int k = 0; k < 14; k++)
            if (strcmp(word, keys[k]) == 0) { *slots[k] = v; found = 1; }
        if (!found) return 0;
    }
    if (c->kernel == NC_GEMM_DIRECT) /* kwg: K chunk; mdimc x ndimc: work-group (0: the driver's choice) */
        return c->cmr >= 1 && c->cmr <= 16 && (c->cnr == 1 || c->cnr == 2 || c->cnr == 4 || c->cnr == 8 || c->cnr == 16) &&
               pow2(c->vw) && c->vw <= 16 && c->kwg >= 0 && c->mdimc >= 0 && c->ndimc >= 0 && (c->mdimc > 0) == (c->ndimc > 0) &&
               (c->kwg == 0 || c->mdimc > 0);
    if (c->kernel == NC_GEMM_FFMA) /* warps of 8 x 4 lanes, each vwm x vwn outputs; gemm_mma.c checks the rest */
        return c->mdimc > 0 && c->ndimc > 0 && c->mdimc * c->ndimc <= 16 && (c->vwm == 4 || c->vwm == 8) &&
               (c->vwn == 8 || c->vwn == 16) && c->mwg == c->mdimc * 8 * c->vwm && c->nwg == c->ndimc * 4 * c->vwn &&
               (c->kwg == 8 || c->kwg == 16 || c->kwg == 32) && c->stages >= 2 && c->stages <= 4 && c->gm >= 0 &&
               c->gm <= 64;
    if (c->kernel == NC_GEMM_WGMMA) /* warpgroups along m, wgmma's n of 64, 128 or 256; gemm_mma.c checks the rest */
        return c->ndimc == 1 && c->mdimc > 0 && c->mdimc % 4 == 0 && c->mdimc <= 16 &&
               (c->mwg == 16 * c->mdimc || (c->mwg == 32 * c->mdimc && c->nwg <= 128)) &&
               (c->nwg == 64 || c->nwg == 128 || c->nwg == 256) && pow2(c->kwg) && c->kwg >= 8 && c->kwg <= 64 &&
               c->stages >= 2 && c->stages <= 6 && c->gm >= 0 && c->gm <= 64;
    if (c->kernel != NC_GEMM_TILED && c->kernel != NC_GEMM_MMA) return 0;
    if (c->mwg <= 0 || c->nwg <= 0 || c->kwg <= 0 || c->mdimc <= 0 || c->ndimc <= 0 || c->pad < 0 || c->pad > 64) return 0;
    if (c->kernel == NC_GEMM_MMA) /* 16 x 16 mma tile pairs per warp; gemm_mma.c checks the rest */
        return c->mdimc * c->ndimc <= 16 && c->mwg % (16 * c->mdimc) == 0 && c->nwg % (16 * c->ndimc) == 0 &&
               c->kwg % 8 == 0 && pow2(c->kwg) && c->stages >= 2 && c->stages <= 4 && c->gm >= 0 && c->gm <= 64;
    return c->mwg % c->mdimc == 0 && c->nwg % c->ndimc == 0 && pow2(c->vwm) && pow2(c->vwn) && pow2(c->vw) &&
           c->vwm <= 8 && c->vwn <= 8 && c->vw <= 8 && (c->mwg / c->mdimc) % c->vwm == 0 &&
           (c->nwg / c->ndimc) % c->vwn == 0 && c->mdimc * c->ndimc <= 1024;
}

/* ---- shapes ---------------------------------------------------------------- */
/* Operand layouts: 'n' when the inner (last) dim is contiguous, 't' when the
 * outer one is, 'g' otherwise (size-1 dims count as contiguous). */
static char layout_of(const nc_desc *d)
{
    if (d->strides[2] == 1 || d->sizes[2] == 1) return 'n';
    if (d->strides[1] == 1 || d->sizes[1] == 1) return 't';
    return 'g';
}

/* Sizes bucket to the next power of two (at least 16): problems in one
 * bucket share a tuned configuration. */
static long long bucket(int64_t x)
{
    long long b = 16;
    while (b < x && b < (1LL << 40)) b *= 2;
    return b;
}

void nc_gemm_class_key(const nc_gemm_call *g, char *buf, size_t len)
{
    const char *tf = g->out->dtype != NETCL_DTYPE_FLOAT32 || !nc_mma_usable(g) ? ""
                     : g->epi->fp32 == NC_FP32_TF32X3                             ? "+tf32x3"
                                                                                  : "+tf32";
    snprintf(buf, len, "%s%s %c%c %lld:%lld:%lld", netcl_dtype_name(g->out->dtype), tf, layout_of(g->a), layout_of(g->w),
             bucket(g->M), bucket(g->N), bucket(g->K));
}

/* ---- defaults ----------------------------------------------------------------- */
int64_t nc_gemm_groups(const nc_gemm_call *g, int mwg, int nwg)
{
    return ((g->M + mwg - 1) / mwg) * ((g->N + nwg - 1) / nwg) * g->B;
}

/* the share of a t x t tiling's work that lands inside the product */
double nc_gemm_fill(const nc_gemm_call *g, int t)
{
    return (double)g->M * (double)g->N / ((double)((g->M + t - 1) / t * t) * (double)((g->N + t - 1) / t * t));
}

void nc_gemm_default(const nc_gemm_call *g, nc_gemm_cfg *c)
{
    memset(c, 0, sizeof *c);
    if (g->dev->type == NETCL_DEVICE_OPENCL_CPU) {
        /* 6 rows x 16 cols: 6 AVX-512 accumulators (12 of AVX2) per item;
         * for large products an 8x8 group walks K in chunks of 128 so its
         * panels stay in cache (small ones fit anyway, and skip the barrier) */
        *c = (nc_gemm_cfg){.kernel = NC_GEMM_DIRECT, .cmr = 6, .cnr = 16, .vw = 16, .vwm = 1, .vwn = 1};
        if (g->K > 256 && g->M * g->N >= 65536) c->kwg = 128, c->mdimc = 8, c->ndimc = 8;
        return;
    }
    /* GPUs: 128x128 tiles of 16x4 per thread (8x32 threads: the tuner's
     * winner, well ahead of 16x16 threads in large products) when they
     * fill the device and do not waste much more of their work
     * on padding than 64x64 tiles would (a 64-row product, conv
     * backward-weight per sample, idles half of a 128-row tile), smaller
     * tiles when the grid would leave compute units idle. Below K = 512 a
     * 128x128 block spends too much of its life filling its pipeline and
     * storing 64 outputs a thread; 64x64 blocks (four a compute unit where
     * 128x128 fit two) overlap that with each other's work: ahead at
     * K = 128, level at K = 512, behind from 1024 (measurements:
     * docs/notes/kernels.md) */
    int cu = g->dev->compute_units > 0 ? g->dev->compute_units : 1;
    if (g->K >= 512 && nc_gemm_groups(g, 128, 128) >= cu && nc_gemm_fill(g, 128) >= 0.8 * nc_gemm_fill(g, 64))
        *c = (nc_gemm_cfg){NC_GEMM_TILED, 128, 128, 16, 8, 32, 4, 4, 4, 4, 0, 0, 0, 0};
    else if (nc_gemm_groups(g, 64, 64) >= cu)
        *c = (nc_gemm_cfg){NC_GEMM_TILED, 64, 64, 16, 16, 16, 2, 2, 4, 4, 0, 0, 0, 0};
    else
        *c = (nc_gemm_cfg){NC_GEMM_TILED, 32, 32, 16, 8, 8, 2, 2, 4, 2, 0, 0, 0, 0};
    if (g->out->dtype == NETCL_DTYPE_FLOAT64) c->kwg = 8;
}

/* ---- fitting a configuration to the operands ---------------------------------- */
/* The widest vector (<= want) for loads along an operand's contiguous dim:
 * stride 1 there, and offset, other strides and that dim's size multiples
 * of the width, so every vector is aligned and wholly in or out. */
static int fit_vw(int want, const nc_desc *d, int contig_dim, int64_t B)
{
    int other = contig_dim == 2 ? 1 : 2;
    if (d->strides[contig_dim] != 1) return 1;
    int vw = want;
    for (; vw > 1; vw /= 2)
        if (d->sizes[contig_dim] % vw == 0 && d->offset % vw == 0 && d->strides[other] % vw == 0 &&
            (B == 1 || d->strides[0] % vw == 0))
            break;
    return vw;
}

typedef struct {
    int kfast_a, kfast_b, vwa, vwb, pada, padb;
} tiled_fit;

/* 0 when cfg cannot serve g (tile divisibility, local memory). */
static int fit_tiled(const nc_gemm_call *g, const nc_gemm_cfg *c, tiled_fit *f)
{
    int threads = c->mdimc * c->ndimc;
    char la = layout_of(g->a), lb = layout_of(g->w);
    /* the fast (thread-adjacent) load direction is each operand's contiguous dim */
    f->kfast_a = la == 'n' || (la == 'g' && llabs((long long)g->a->strides[2]) <= llabs((long long)g->a->strides[1]));
    f->kfast_b = lb == 't' || (lb == 'g' && llabs((long long)g->w->strides[1]) < llabs((long long)g->w->strides[2]));
    f->vwa = fit_vw(c->vw, g->a, f->kfast_a ? 2 : 1, g->B);
    f->vwb = fit_vw(c->vw, g->w, f->kfast_b ? 1 : 2, g->B);
    /* every thread loads whole vectors, the same number of them */
    while (f->vwa > 1 && ((f->kfast_a ? c->kwg : c->mwg) % f->vwa || (c->mwg * c->kwg) % (threads * f->vwa))) f->vwa /= 2;
    while (f->vwb > 1 && ((f->kfast_b ? c->kwg : c->nwg) % f->vwb || (c->nwg * c->kwg) % (threads * f->vwb))) f->vwb /= 2;
    if ((c->mwg * c->kwg) % threads || (c->nwg * c->kwg) % threads) return 0;
    if (c->mwg % c->vwm || c->nwg % c->vwn) return 0;
    f->pada = (c->pad + c->vwm - 1) / c->vwm * c->vwm;
    f->padb = (c->pad + c->vwn - 1) / c->vwn * c->vwn;
    int64_t csize = g->out->dtype == NETCL_DTYPE_FLOAT64 ? 8 : 4;
    int64_t lmem = 2 * (int64_t)c->kwg * (c->mwg + f->pada + c->nwg + f->padb) * csize;
    return lmem <= g->dev->local_mem && threads <= g->dev->max_work_group;
}

/* ---- launching ----------------------------------------------------------------- */
/* The epilogue's 13 kernel arguments (EPI_PARAMS), from index `first`;
 * `absent` stands in for a missing c or bias (never read); c's batch
 * stride counts where `batched`. */
netcl_status nc_gemm_set_epi_args(cl_kernel k, cl_uint first, const nc_desc *o, const nc_gemm_epi *e, cl_mem absent,
                                  int batched)
{
    NC_TRY(nc_cl_set_scalar(k, first, o->dtype, e->alpha));
    NC_TRY(nc_cl_set_scalar(k, first + 1, o->dtype, e->c ? e->beta : 0));
    cl_mem cb = e->c ? e->c->buf : absent, bb = e->bias ? e->bias->buf : absent;
    cl_long coff = e->c ? e->c->offset : 0, cs0 = e->c && batched ? e->c->strides[0] : 0;
    cl_long cs1 = e->c ? e->c->strides[1] : 0, cs2 = e->c ? e->c->strides[2] : 0;
    cl_long boff = e->bias ? e->bias->offset : 0, bst = e->bias ? e->bias->strides[0] : 0;
    NC_ARG(k, first + 2, cb); NC_ARG(k, first + 3, coff); NC_ARG(k, first + 4, cs0); NC_ARG(k, first + 5, cs1);
    NC_ARG(k, first + 6, cs2);
    cl_int flags = (e->c ? 1 : 0) | (e->bias ? e->bias_dim == 1 ? 4 : 2 : 0), act = e->act;
    NC_ARG(k, first + 7, bb); NC_ARG(k, first + 8, boff); NC_ARG(k, first + 9, bst);
    NC_TRY(nc_cl_set_scalar(k, first + 10, o->dtype, e->act_p));
    NC_ARG(k, first + 11, flags); NC_ARG(k, first + 12, act);
    return NETCL_OK;
}

/* Kernel arguments 0..15 (operands, strides, sizes) and the epilogue's (16..28). */
netcl_status nc_gemm_set_args(const nc_gemm_call *g, cl_kernel k)
{
    const nc_desc *o = g->out, *a = g->a, *w = g->w;
    cl_mem ob = o->buf, ab = a->buf, wb = w->buf;
    cl_long ooff = o->offset, aoff = a->offset, woff = w->offset;
    cl_long as0 = g->B == 1 ? 0 : a->strides[0], as1 = a->strides[1], as2 = a->strides[2];
    cl_long ws0 = g->B == 1 ? 0 : w->strides[0], ws1 = w->strides[1], ws2 = w->strides[2];
    cl_int M = (cl_int)g->M, N = (cl_int)g->N, K = (cl_int)g->K, B = (cl_int)g->B;
    NC_ARG(k, 0, ob); NC_ARG(k, 1, ooff); NC_ARG(k, 2, ab); NC_ARG(k, 3, aoff); NC_ARG(k, 4, as0); NC_ARG(k, 5, as1);
    NC_ARG(k, 6, as2); NC_ARG(k, 7, wb); NC_ARG(k, 8, woff); NC_ARG(k, 9, ws0); NC_ARG(k, 10, ws1); NC_ARG(k, 11, ws2);
    NC_ARG(k, 12, M); NC_ARG(k, 13, N); NC_ARG(k, 14, K); NC_ARG(k, 15, B);
    return nc_gemm_set_epi_args(k, 16, o, g->epi, a->buf, g->B > 1);
}

/* Kernel `name` built with opts; when the build fails, once more without
 * `#pragma unroll` (a compiler that rejects the pragma still unrolls
 * constant loops), remembered per device. */
netcl_status nc_gemm_build_kernel(nc_cl_device *cd, const char *family, char *opts, size_t len, const char *name,
                                  cl_kernel *k, size_t *wg)
{
    nc_gemm_state *s = nc_gemm_state_of(cd);
    if (s && s->no_pragma) snprintf(opts + strlen(opts), len - strlen(opts), " -DNC_NO_UNROLL_PRAGMA");
    netcl_status st = nc_cl_kernel(cd, family, opts, name, k, wg);
    if (st == NETCL_ERR_BACKEND && s && !s->no_pragma) {
        s->no_pragma = 1;
        snprintf(opts + strlen(opts), len - strlen(opts), " -DNC_NO_UNROLL_PRAGMA");
        if (nc_cl_kernel(cd, family, opts, name, k, wg) == NETCL_OK) return NETCL_OK;
        s->no_pragma = 0;
    }
    return st;
}

/* Builds gemm_tiled of program `family` for cfg and g's operands; an
 * operand with kfast >= 0 is gathered element by element (conv_implicit.cl:
 * vector width 1, loaded along k when kfast). *global gets the grid. */
netcl_status nc_gemm_tiled_kernel(const nc_gemm_call *g, const nc_gemm_cfg *c, const char *family, const char *extra,
                                  int kfast_a, int kfast_b, cl_kernel *k, size_t global[3], size_t local[3])
{
    tiled_fit f;
    if (!fit_tiled(g, c, &f)) return NETCL_ERR_UNSUPPORTED;
    if (kfast_a >= 0) f.kfast_a = kfast_a, f.vwa = 1;
    if (kfast_b >= 0) f.kfast_b = kfast_b, f.vwb = 1;
    nc_cl_device *cd = nc_cl_dev(g->dev);
    char opts[500];
    nc_cl_dtype_opts(opts, sizeof opts, g->out->dtype, g->out->dtype);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n,
             " -DGEMM_TILED -DMWG=%d -DNWG=%d -DKWG=%d -DMDIMC=%d -DNDIMC=%d -DVWM=%d -DVWN=%d -DVWA=%d"
             " -DVWB=%d -DA_KFAST=%d -DB_KFAST=%d -DPADA=%d -DPADB=%d%s",
             c->mwg, c->nwg, c->kwg, c->mdimc, c->ndimc, c->vwm, c->vwn, f.vwa, f.vwb, f.kfast_a, f.kfast_b, f.pada,
             f.padb, extra ? extra : "");
    size_t wg, threads = (size_t)(c->mdimc * c->ndimc);
    NC_TRY(nc_gemm_build_kernel(cd, family, opts, sizeof opts, "gemm_tiled", k, &wg));
    size_t kmax = 0;   /* registers may limit the group below the device's maximum */
    nc_cl.clGetKernelWorkGroupInfo(*k, cd->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
    if (kmax && kmax < threads) return NETCL_ERR_UNSUPPORTED;
    int64_t mt = (g->M + c->mwg - 1) / c->mwg, nt = (g->N + c->nwg - 1) / c->nwg;
    /* dims 1 and 2 are capped (the kernel loops over the rest) */
    global[0] = (size_t)nt * threads, global[1] = (size_t)(mt < 65535 ? mt : 65535);
    global[2] = (size_t)(g->B < 65535 ? g->B : 65535);
    local[0] = threads, local[1] = local[2] = 1;
    return NETCL_OK;
}

static netcl_status launch_tiled(const nc_gemm_call *g, const nc_gemm_cfg *c)
{
    cl_kernel k;
    size_t global[3], local[3];
    NC_TRY(nc_gemm_tiled_kernel(g, c, "gemm", NULL, -1, -1, &k, global, local));
    NC_TRY(nc_gemm_set_args(g, k));
    return nc_cl_launch_nd(nc_cl_dev(g->dev), k, 3, global, local);
}

static netcl_status launch_direct(const nc_gemm_call *g, const nc_gemm_cfg *c)
{
    nc_cl_device *cd = nc_cl_dev(g->dev);
    /* vector loads of w rows need n contiguous and cnr-aligned rows */
    int vwb = fit_vw(c->vw < c->cnr ? c->vw : c->cnr, g->w, 2, g->B) == c->cnr ? c->cnr : 1;
    char opts[300];
    nc_cl_dtype_opts(opts, sizeof opts, g->out->dtype, g->out->dtype);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n, " -DGEMM_DIRECT -DCMR=%d -DCNR=%d -DVWB=%d -DKCH=%d", c->cmr, c->cnr,
                          vwb, c->kwg);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_gemm_build_kernel(cd, "gemm", opts, sizeof opts, "gemm_direct", &k, &wg));
    NC_TRY(nc_gemm_set_args(g, k));
    int64_t nb = (g->N + c->cnr - 1) / c->cnr, mb = (g->M + c->cmr - 1) / c->cmr;
    if (c->mdimc > 0) { /* whole work-groups (the extra items clamp and store nothing) */
        nb = (nb + c->ndimc - 1) / c->ndimc * c->ndimc;
        mb = (mb + c->mdimc - 1) / c->mdimc * c->mdimc;
    }
    size_t global[3] = {(size_t)nb, (size_t)mb, (size_t)(g->B < 65535 ? g->B : 65535)};
    size_t local[3] = {(size_t)c->ndimc, (size_t)c->mdimc, 1};
    if (c->mdimc > 0 && (size_t)(c->mdimc * c->ndimc) > wg) return NETCL_ERR_UNSUPPORTED;
    return nc_cl_launch_nd(cd, k, 3, global, c->mdimc > 0 ? local : NULL);
}

netcl_status nc_gemm_launch(const nc_gemm_call *g, const nc_gemm_cfg *cfg)
{
    switch (cfg->kernel) {
    case NC_GEMM_TILED: return launch_tiled(g, cfg);
    case NC_GEMM_DIRECT: return launch_direct(g, cfg);
    case NC_GEMM_MMA: return nc_mma_usable(g) ? nc_mma_launch(g, cfg) : NETCL_ERR_UNSUPPORTED;
    case NC_GEMM_FFMA: return nc_ffma_usable(g) ? nc_mma_launch(g, cfg) : NETCL_ERR_UNSUPPORTED;
    case NC_GEMM_WGMMA: return nc_wgmma_usable(g) ? nc_mma_launch(g, cfg) : NETCL_ERR_UNSUPPORTED;
    default: return NETCL_ERR_UNSUPPORTED;
    }
}

/* ---- the backend entries ------------------------------------------------------------ */
/* The configuration a call gets (see the file comment); *why names its source. */
void nc_gemm_choose(const nc_gemm_call *g, nc_gemm_cfg *cfg, const char **why)
{
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(g->dev));
    if (s && s->has_forced) { *cfg = s->forced; *why = "forced"; return; }
    const char *env = getenv("NETCL_GEMM_CONFIG");
    if (env && *env && nc_gemm_cfg_parse(cfg, env)) { *why = "NETCL_GEMM_CONFIG"; return; }
    if (nc_gemm_tuned(g, cfg)) { *why = "tuned"; return; }
    nc_gemm_untuned(g, cfg);
    *why = "default";
}

/* Without a tuned entry: the tensor cores where usable; float32 FMAs fed by
 * cp.async (gemm_mma.c) where an operand is transposed, or K >= 512, and its
 * small blocks (64x32, or 64x64 where w is k-contiguous) fill the device
 * or K >= 256 (a block's time grows with K, and few of the FFMA kernel's
 * beat many of gemm_tiled's; gemm_split.c splits such products' K where it
 * can); else the device type's default. The FFMA kernel beats gemm_tiled
 * in large tn / nt products and in the ResNet-18 convolutions' backward
 * products; with both operands row-major only long products gain, and
 * Winograd's short-K ones lost. Products of few blocks under K = 256, and
 * nn ones under K = 512, keep gemm_tiled's 32x32 tiles (measurements:
 * docs/notes/kernels.md). */
int64_t nc_ffma_few_blocks_k(const nc_gemm_call *g)
{
    return layout_of(g->a) == 'n' && layout_of(g->w) == 'n' ? 512 : 256;
}

void nc_gemm_untuned(const nc_gemm_call *g, nc_gemm_cfg *cfg)
{
    int nn = layout_of(g->a) == 'n' && layout_of(g->w) == 'n';
    int cu = g->dev->compute_units > 0 ? g->dev->compute_units : 1;
    if (nc_mma_usable(g)) nc_mma_default(g, cfg);
    else if ((!nn || g->K >= 512) && (nc_ffma_small_groups(g) >= cu || g->K >= nc_ffma_few_blocks_k(g)) &&
             nc_ffma_usable(g))
        nc_ffma_default(g, cfg);
    else nc_gemm_default(g, cfg);
}

/* A descriptor [1, rows, cols] over buf, row-major, or viewed transposed
 * (storage [cols, rows]). */
int nc_gemm_forced(netcl_device *dev)
{
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    const char *env = getenv("NETCL_GEMM_CONFIG");
    return !s || s->has_forced || (env && *env);
}

/* Copies that turn a large float32 product into tn, the FFMA kernel's
 * fastest layout, where they pay (the copies' time counted; measurements:
 * docs/notes/kernels.md).
 * a (row-major, k contiguous) to m-contiguous. Not where a configuration is
 * forced (experiments), nor where M, N or K is below 1024 (the copy's share
 * of the time grows as 1 / N; K = 512 gained nothing), nor where the
 * product has at most four 64x64 tiles a multiprocessor: there the row-major
 * blocks fit the device in one wave and the copied product does not.
 * w (k contiguous: nt, x @ w^T, and tt) to n-contiguous, its copy's share
 * of the time about 1 / M: where M >= 2048 and the tn product runs the
 * two-warp tn blocks, whose lead over the other layouts' blocks is what
 * pays; nt needs a copied too, so N >= 2048 and a's rule as well. Left as
 * they are: nt 3072^3, whose tn product runs other blocks, and nt 4096 x
 * 1024 x 1024, where a's copy costs N = 1024 (both slower copied). */
/* The product matmul runs once its operands are copied: a fresh copy of
 * a [M, K] / w [K, N] with its m resp. k (trans) dim contiguous, or the
 * operand itself (NULL), no epilogue */
typedef struct copied_call {
    nc_desc a, w, out;
    nc_gemm_epi e;
    nc_gemm_call g;
} copied_call;

static void copied_call_init(copied_call *p, netcl_device *dev, const nc_desc *a, const nc_desc *w, int a_trans,
                             int w_trans, int fp32)
{
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    nc_matrix_desc(&p->a, NULL, a->dtype, M, K, a_trans < 0 ? 0 : a_trans);
    nc_matrix_desc(&p->w, NULL, a->dtype, K, N, w_trans < 0 ? 0 : w_trans);
    p->e = (nc_gemm_epi){1, 0, NULL, NULL, 0, -1, 0, fp32};
    memset(&p->out, 0, sizeof p->out);
    p->out.dtype = a->dtype;
    p->g = (nc_gemm_call){dev, &p->out, a_trans < 0 ? a : &p->a, w_trans < 0 ? w : &p->w, &p->e, 1, M, N, K};
}

static int ffma_copies(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32)
{
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    char la = layout_of(a), lw = layout_of(w);
    if ((la == 't' && lw == 'n') || N < 1024 || M < 1024 || K < 1024 || M % 4 || N % 4 || K % 4) return 0;
    int copies = (la == 'n' ? NC_GEMM_COPY_A : 0) | (lw == 't' ? NC_GEMM_COPY_W : 0);
    if ((copies & NC_GEMM_COPY_W) && w->sizes[0] != 1) return 0;
    /* the product the copies leave (a fresh copy is aligned): a m-, w n-contiguous */
    copied_call c;
    copied_call_init(&c, dev, a, w, copies & NC_GEMM_COPY_A ? 1 : -1, copies & NC_GEMM_COPY_W ? 0 : -1, fp32);
    const nc_gemm_call *g = &c.g;
    int cu = dev->compute_units > 0 ? dev->compute_units : 1;
    if (!nc_ffma_usable(g)) return 0;
    if ((copies & NC_GEMM_COPY_A) && nc_gemm_groups(g, 64, 64) <= 4 * (int64_t)cu) return 0;
    if ((copies & NC_GEMM_COPY_W) && (M < 2048 || (la == 'n' && N < 2048) || !nc_ffma_tn_blocks(g))) return 0;
    return copies;
}

/* An operand whose rows (along its contiguous dim) do not start on 32-byte
 * boundaries: its k-tile row segments then straddle sectors (a 64-byte one
 * takes three where it would take two), and the wgmma kernel, fed from L2,
 * slows down where cuBLAS does not (rows on 32-byte boundaries that miss
 * 128-byte ones lose much less). A large 16-bit product copies such an
 * operand first, in its own layout, into rows on whole 128-byte lines,
 * which pays with the copies' time counted. Not a row-major w (nn with
 * rows of N = 4104 runs the same either way, its 256-byte row segments
 * straddling less), nor float32 (the FFMA kernel gains nothing: what it
 * loses there is the edge tiles, 4 rows of 128). Measurements:
 * docs/notes/kernels.md. */
static int misaligned(const nc_desc *d)
{
    int64_t ld = d->strides[2] == 1 ? d->strides[1] : d->strides[2], esz = netcl_dtype_size(d->dtype);
    return (ld * esz) % 32 != 0 || (d->offset * esz) % 32 != 0;
}

static int pads(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32)
{
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    if (M < 2048 || N < 2048 || K < 1024 || w->sizes[0] != 1) return 0;
    int p = (misaligned(a) ? NC_GEMM_PAD_A : 0) | (layout_of(w) == 't' && misaligned(w) ? NC_GEMM_PAD_W : 0);
    if (!p) return 0;
    /* where the product runs wgmma's default once copied (in their own layouts) */
    copied_call c;
    copied_call_init(&c, dev, a, w, layout_of(a) == 't', layout_of(w) == 't', fp32);
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(&c.g, &cfg, &why);
    return cfg.kernel == NC_GEMM_WGMMA ? p : 0;
}

int nc_cl_gemm_copies(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32)
{
    int64_t M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    int ieee = a->dtype == NETCL_DTYPE_FLOAT32 && fp32 == NC_FP32_IEEE;
    int half = a->dtype == NETCL_DTYPE_FLOAT16 || a->dtype == NETCL_DTYPE_BFLOAT16;
    if ((!ieee && !half) || layout_of(a) == 'g' || layout_of(w) == 'g' || M > INT32_MAX || N > INT32_MAX ||
        K > INT32_MAX || nc_gemm_forced(dev))
        return 0;
    return ieee ? ffma_copies(dev, a, w, fp32) : pads(dev, a, w, fp32);
}

netcl_status nc_cl_gemm(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w, const nc_gemm_epi *epi)
{
    NC_TRY(nc_cl_enter(dev, "matmul", a->dtype, a->dtype));
    nc_gemm_call g = {dev, out, a, w, epi, out->sizes[0], a->sizes[1], w->sizes[2], a->sizes[2]};
    if (g.M > INT32_MAX || g.N > INT32_MAX || g.K > INT32_MAX || g.B > INT32_MAX)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "matmul: %lld x %lld x %lld (batch %lld) exceeds the OpenCL kernels' 32-bit sizes on %s",
                       (long long)g.M, (long long)g.K, (long long)g.N, (long long)g.B, dev->name);
    nc_tf32_way way = nc_gemm_tf32_round_first(&g);
    if (way != NC_TF32_NONE) {
        netcl_status st = nc_gemm_tf32_rounded(&g, way);
        if (st != NETCL_ERR_UNSUPPORTED) return st;
    }
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(&g, &cfg, &why);
    netcl_status st = nc_gemm_launch(&g, &cfg);
    if (st == NETCL_ERR_BACKEND && cfg.kernel != NC_GEMM_DIRECT) {
        /* a compiler that rejects the kernel must not take every product
         * down with it: say so once per device, then run the simple kernel */
        nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
        char text[200];
        nc_gemm_cfg_format(&cfg, text, sizeof text);
        if (s && !s->warned) {
            s->warned = 1;
            fprintf(stderr, "netcl: GEMM kernel '%s' failed on %s, using the direct kernel instead: %.600s\n", text,
                    dev->name, netcl_last_error());
        }
        cfg = (nc_gemm_cfg){.kernel = NC_GEMM_DIRECT, .cmr = 4, .cnr = 4, .vw = 4, .vwm = 1, .vwn = 1};
        st = nc_gemm_launch(&g, &cfg);
    }
    if (st == NETCL_ERR_UNSUPPORTED) { /* the chosen one does not fit this problem */
        if (nc_cl_debug_level() >= 1) {
            char text[200];
            nc_gemm_cfg_format(&cfg, text, sizeof text);
            fprintf(stderr, "netcl: GEMM configuration '%s' (%s) does not serve %lldx%lldx%lld on %s; the default runs\n",
                    text, why, (long long)g.M, (long long)g.N, (long long)g.K, dev->name);
        }
        nc_gemm_default(&g, &cfg);
        st = nc_gemm_launch(&g, &cfg);
    }
    if (st == NETCL_ERR_UNSUPPORTED) { /* a device with little local memory or small groups */
        cfg = (nc_gemm_cfg){NC_GEMM_TILED, 16, 16, 8, 4, 4, 1, 1, 1, 0, 0, 0, 0, 0};
        st = nc_gemm_launch(&g, &cfg);
    }
    if (st == NETCL_ERR_UNSUPPORTED)
        st = nc_fail(NETCL_ERR_UNSUPPORTED, "matmul: no GEMM kernel configuration fits %s", dev->name);
    return st;
}

