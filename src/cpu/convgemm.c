/* convgemm.c — the cpu's implicit-GEMM convolution: a pass is cut into
 * fixed blocks (images x groups x blocks of output pixels; backward-weight:
 * groups x fixed chunks of images), and each block gathers only its slice
 * of the unfolded input into a panel and runs one GEMM on it (the cpu
 * matmul/BLAS, serial inside a pool part), so the whole unfolded matrix is
 * never built. Blocks depend on the shapes only and backward-weight adds
 * its chunks in a fixed order, so the bits do not depend on the thread
 * count. Operands contiguous; the panels keep the input's dtype. */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define PANEL_ELEMS (1 << 18)   /* a panel's size target: 1 MiB of float32 */
#define WEIGHT_CHUNKS 8         /* image chunks of backward-weight (fixed: the bits) */

typedef struct {
    netcl_device *dev;
    nc_conv_pass pass;
    const nc_conv_args *g;
    const nc_desc *out, *a, *b;
    const nc_conv_epi *epi;
    void *wt;                    /* backward-data: w as [G, C/G, O/G * K'] */
    int64_t Cg, Og, KK, L, P, pb, blocks;   /* pb pixels per block, blocks per image */
    int64_t chunks;              /* backward-weight: image chunks */
    void *partial;               /* backward-weight: [chunks, O, C/G * K'] in the output dtype */
    atomic_int oom;
} job;

static nc_desc plain(void *buf, netcl_dtype dt, int64_t off, int64_t B, int64_t M, int64_t N, int64_t sm, int64_t sn)
{
    nc_desc d;
    memset(&d, 0, sizeof d);
    d.buf = buf, d.dtype = dt, d.ndim = 3, d.offset = off;
    d.sizes[0] = B, d.sizes[1] = M, d.sizes[2] = N;
    d.strides[0] = M * sm, d.strides[1] = sm, d.strides[2] = sn;
    return d;
}

/* panel[k][p] = x at tap k = (c, kh, kw) of output pixel p0 + p of image img
 * (group grp), zero in the padding; n pixels, row length ld */
static void gather_x(const job *j, int64_t img, int64_t grp, int64_t p0, int64_t n, void *panel, int64_t ld)
{
    const nc_conv_args *g = j->g;
    const nc_desc *x = j->a;
    int64_t K = j->Cg * j->KK;
    for (int64_t k = 0; k < K; k++) {
        int64_t c = k / j->KK, kh = (k % j->KK) / g->KW, kw = k % g->KW;
        int64_t xb = x->offset + ((img * g->C + grp * j->Cg + c) * g->H) * g->W;
        for (int64_t p = 0; p < n; p++) {
            int64_t q = p0 + p, oh = q / g->OW, ow = q % g->OW;
            int64_t ih = oh * g->SH - g->PH + kh * g->DH, iw = ow * g->SW - g->PW + kw * g->DW;
            double v = ih >= 0 && ih < g->H && iw >= 0 && iw < g->W ? nc_cpu_ld(x, xb + ih * g->W + iw) : 0.0;
            nc_store_double(panel, x->dtype, k * ld + p, v);
        }
    }
}

/* panel[k][p] = dy at the output position tap k = (o, kh, kw) takes input
 * pixel p0 + p of image img to, or 0 */
static void gather_dy(const job *j, int64_t img, int64_t grp, int64_t p0, int64_t n, void *panel, int64_t ld)
{
    const nc_conv_args *g = j->g;
    const nc_desc *dy = j->a;
    int64_t K = j->Og * j->KK;
    for (int64_t k = 0; k < K; k++) {
        int64_t o = k / j->KK, kh = (k % j->KK) / g->KW, kw = k % g->KW;
        int64_t yb = dy->offset + ((img * g->O + grp * j->Og + o) * g->OH) * g->OW;
        for (int64_t p = 0; p < n; p++) {
            int64_t q = p0 + p, h = q / g->W, w = q % g->W;
            int64_t th = h + g->PH - kh * g->DH, tw = w + g->PW - kw * g->DW;
            double v = 0;
            if (th >= 0 && tw >= 0 && th % g->SH == 0 && tw % g->SW == 0 && th / g->SH < g->OH && tw / g->SW < g->OW)
                v = nc_cpu_ld(dy, yb + (th / g->SH) * g->OW + tw / g->SW);
            nc_store_double(panel, dy->dtype, k * ld + p, v);
        }
    }
}

/* forward and backward-data: block i = (img, grp, pixel block) */
static void rows_part(void *v, int64_t s, int64_t e)
{
    job *j = v;
    const nc_conv_args *g = j->g;
    int fwd = j->pass == NC_CONV_PASS_FWD;
    int64_t M = fwd ? j->Og : j->Cg, K = fwd ? j->Cg * j->KK : j->Og * j->KK, pix = fwd ? j->L : j->P;
    int64_t chans = fwd ? g->O : g->C;
    size_t es = (size_t)netcl_dtype_size(j->out->dtype);
    void *panel = malloc((size_t)(K * j->pb) * es), *blk = malloc((size_t)(M * j->pb) * es);
    if (!panel || !blk) { atomic_store(&j->oom, 1); free(panel); free(blk); return; }
    for (int64_t i = s; i < e; i++) {
        int64_t img = i / (g->G * j->blocks), grp = (i / j->blocks) % g->G, p0 = (i % j->blocks) * j->pb;
        int64_t n = pix - p0 < j->pb ? pix - p0 : j->pb;
        if (fwd) gather_x(j, img, grp, p0, n, panel, n);
        else gather_dy(j, img, grp, p0, n, panel, n);
        nc_desc A = fwd ? plain(j->b->buf, j->b->dtype, j->b->offset + grp * M * K, 1, M, K, K, 1)
                        : plain(j->wt, j->b->dtype, grp * M * K, 1, M, K, K, 1);
        nc_desc B = plain(panel, j->out->dtype, 0, 1, K, n, n, 1), O = plain(blk, j->out->dtype, 0, 1, M, n, n, 1);
        nc_desc bias;
        nc_gemm_epi e = {1, 0, NULL, NULL, 1, -1, 0};
        if (j->epi) {   /* forward and backward-data: along the result's channels */
            if (j->epi->bias) {
                bias = *j->epi->bias;
                bias.offset += grp * M;
                e.bias = &bias;
            }
            e.act = j->epi->act, e.act_p = j->epi->act_p;
        }
        if (nc_cpu_gemm(j->dev, &O, &A, &B, &e) != NETCL_OK) { atomic_store(&j->oom, 1); break; }
        for (int64_t m = 0; m < M; m++)   /* the block's rows into out[img, grp*M + m, p0 ..] */
            memcpy((char *)j->out->buf + (size_t)(j->out->offset + ((img * chans + grp * M + m) * pix + p0)) * es,
                   (char *)blk + (size_t)(m * n) * es, (size_t)n * es);
    }
    free(panel);
    free(blk);
}

/* backward-weight: part i = (chunk, grp) sums its images' products */
static void weight_part(void *v, int64_t s, int64_t e)
{
    job *j = v;
    const nc_conv_args *g = j->g;
    int64_t M = j->Og, N = j->Cg * j->KK, per = (g->N + j->chunks - 1) / j->chunks;
    size_t es = (size_t)netcl_dtype_size(j->out->dtype);
    void *panel = malloc((size_t)(N * j->pb) * es), *tmp = malloc((size_t)(M * N) * es);
    double *acc = malloc((size_t)(M * N) * sizeof(double));
    if (!panel || !tmp || !acc) { atomic_store(&j->oom, 1); free(panel); free(tmp); free(acc); return; }
    for (int64_t i = s; i < e; i++) {
        int64_t chunk = i / g->G, grp = i % g->G;
        memset(acc, 0, (size_t)(M * N) * sizeof(double));
        for (int64_t img = chunk * per; img < g->N && img < (chunk + 1) * per; img++)
            for (int64_t p0 = 0; p0 < j->L; p0 += j->pb) {
                int64_t n = j->L - p0 < j->pb ? j->L - p0 : j->pb;
                gather_x(j, img, grp, p0, n, panel, n);                        /* [N, n] */
                nc_desc A = plain(j->b->buf, j->b->dtype, j->b->offset + (img * g->O + grp * M) * j->L + p0, 1, M, n, j->L, 1);
                nc_desc B = plain(panel, j->out->dtype, 0, 1, n, N, 1, n);       /* the panel transposed */
                nc_desc O = plain(tmp, j->out->dtype, 0, 1, M, N, N, 1);
                if (nc_cpu_matmul(j->dev, &O, &A, &B) != NETCL_OK) { atomic_store(&j->oom, 1); goto done; }
                for (int64_t q = 0; q < M * N; q++) acc[q] += nc_load_double(tmp, j->out->dtype, q);
            }
        for (int64_t q = 0; q < M * N; q++) nc_store_double(j->partial, j->out->dtype, (chunk * g->O + grp * M) * N + q, acc[q]);
    }
done:
    free(panel);
    free(tmp);
    free(acc);
}

netcl_status nc_cpu_conv_gemm(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                              const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices)
{
    (void)kslices;   /* the cpu splits backward-weight its own fixed way */
    job j = {dev, pass, g, out, a, b, epi, NULL, g->C / g->G, g->O / g->G, g->KH * g->KW, g->OH * g->OW, g->H * g->W, 0, 0, 0,
             NULL, 0};
    size_t es = (size_t)netcl_dtype_size(out->dtype);
    int64_t K = pass == NC_CONV_PASS_FWD ? j.Cg * j.KK : pass == NC_CONV_PASS_DATA ? j.Og * j.KK : j.Cg * j.KK;
    int64_t pix = pass == NC_CONV_PASS_DATA ? j.P : j.L;
    j.pb = PANEL_ELEMS / (K > 0 ? K : 1);
    j.pb = j.pb < 16 ? 16 : j.pb >= pix ? pix : j.pb / 16 * 16;
    j.blocks = (pix + j.pb - 1) / j.pb;
    if (pass == NC_CONV_PASS_WEIGHT) {
        j.chunks = g->N < WEIGHT_CHUNKS ? g->N : WEIGHT_CHUNKS;
        int64_t N = j.Cg * j.KK, size = j.Og * N * g->G;
        j.partial = malloc((size_t)(j.chunks * size) * es);
        if (!j.partial) return nc_fail(NETCL_ERR_OOM, "conv2d backward-weight (implicit gemm): out of host memory");
        nc_parallel_for(j.chunks * g->G, 1, weight_part, &j);
        for (int64_t q = 0; q < size && !atomic_load(&j.oom); q++) {   /* chunks added in order */
            double s = 0;
            for (int64_t c = 0; c < j.chunks; c++) s += nc_load_double(j.partial, out->dtype, c * size + q);
            nc_cpu_st(out, out->offset + q, s);
        }
        free(j.partial);
    } else {
        if (pass == NC_CONV_PASS_DATA) {   /* w [O, Cg, K'] -> per group [Cg, Og * K'] */
            j.wt = malloc((size_t)(g->O * j.Cg * j.KK) * es);
            if (!j.wt) return nc_fail(NETCL_ERR_OOM, "conv2d backward-data (implicit gemm): out of host memory");
            for (int64_t o = 0; o < g->O; o++)
                for (int64_t c = 0; c < j.Cg; c++)
                    for (int64_t kk = 0; kk < j.KK; kk++) {
                        int64_t grp = o / j.Og, og = o % j.Og;
                        memcpy((char *)j.wt + (size_t)(((grp * j.Cg + c) * j.Og + og) * j.KK + kk) * es,
                               (char *)b->buf + (size_t)(b->offset + (o * j.Cg + c) * j.KK + kk) * es, es);
                    }
        }
        nc_parallel_for(g->N * g->G * j.blocks, 1, rows_part, &j);
        free(j.wt);
    }
    if (atomic_load(&j.oom)) return nc_fail(NETCL_ERR_OOM, "conv2d (implicit gemm): out of host memory for its panels");
    return NETCL_OK;
}
