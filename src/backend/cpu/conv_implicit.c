/* conv_implicit.c — the CPU convolution family's implicit GEMM: a pass's
 * GEMM runs over blocks of its columns (output or input pixels of
 * consecutive images), and each block gathers only its own slice of the
 * unfolded input (or of dy) into a panel for one BLAS call, so the whole
 * unfolded matrix is never built. Blocks depend on the shapes only, and
 * backward-weight adds its chunks of images in a fixed order, so the bits
 * do not depend on the thread count. Operands contiguous; panels keep the
 * input's dtype (float32 gathers read and write it directly). */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define PANEL_ELEMS (1 << 18)   /* a panel's size target: 1 MiB of float32 */
#define WEIGHT_CHUNKS 16        /* image chunks of backward-weight (fixed: the bits) */

typedef struct {
    netcl_device *dev;
    nc_conv_pass pass;
    const nc_conv_args *g;
    const nc_desc *out, *a, *b;
    const nc_conv_epi *epi;
    void *wt;                    /* backward-data: w as [G, C/G, O/G * K'] */
    int64_t Cg, Og, KK, pix;     /* pix: pixels per image of the GEMM's columns */
    int64_t cols, blocks;        /* columns per block; blocks (forward/data: of all images) */
    int64_t chunks;              /* backward-weight: image chunks */
    double *partial;             /* backward-weight: [chunks, O, C/G * K'] */
    atomic_int oom;
} job;

/* A column's image, pixel and window corner: forward/weight (y, x) = the
 * top-left input coordinate of output pixel p's window; data (y, x) = input
 * pixel p shifted by the padding. */
typedef struct { int64_t img, p, y, x; } colpos;

static nc_desc plain(void *buf, netcl_dtype dt, int64_t off, int64_t M, int64_t N, int64_t sm, int64_t sn)
{
    nc_desc d;
    memset(&d, 0, sizeof d);
    d.buf = buf, d.dtype = dt, d.ndim = 3, d.offset = off;
    d.sizes[0] = 1, d.sizes[1] = M, d.sizes[2] = N;
    d.strides[0] = M * sm, d.strides[1] = sm, d.strides[2] = sn;
    return d;
}

static void positions(const job *j, int64_t q0, int64_t n, colpos *cp)
{
    const nc_conv_args *g = j->g;
    int data = j->pass == NC_CONV_PASS_DATA;
    int64_t rw = data ? g->W : g->OW;
    for (int64_t i = 0; i < n; i++) {
        int64_t q = q0 + i, img = q / j->pix, p = q % j->pix, r = p / rw, c = p % rw;
        cp[i] = data ? (colpos){img, p, r + g->PH, c + g->PW} : (colpos){img, p, r * g->SH - g->PH, c * g->SW - g->PW};
    }
}

/* panel[k][i] (row length n) = x at tap k = (c, kh, kw) of column i's
 * window (group grp), 0 in the padding */
static void gather_x(const job *j, int64_t grp, const colpos *cp, int64_t n, void *panel)
{
    const nc_conv_args *g = j->g;
    const nc_desc *x = j->a;
    int f32 = x->dtype == NETCL_DTYPE_FLOAT32;
    const float *xf = f32 ? (const float *)x->buf + x->offset : NULL;
    for (int64_t k = 0; k < j->Cg * j->KK; k++) {
        int64_t c = k / j->KK, dy = (k % j->KK) / g->KW * g->DH, dx = k % g->KW * g->DW;
        for (int64_t i = 0; i < n; i++) {
            int64_t ih = cp[i].y + dy, iw = cp[i].x + dx;
            int in = ih >= 0 && ih < g->H && iw >= 0 && iw < g->W;
            int64_t at = ((cp[i].img * g->C + grp * j->Cg + c) * g->H + ih) * g->W + iw;
            if (f32) ((float *)panel)[k * n + i] = in ? xf[at] : 0.0f;
            else nc_store_double(panel, x->dtype, k * n + i, in ? nc_cpu_ld(x, x->offset + at) : 0.0);
        }
    }
}

/* panel[k][i] = dy at the output position tap k = (o, kh, kw) takes input
 * column i to, or 0 */
static void gather_dy(const job *j, int64_t grp, const colpos *cp, int64_t n, void *panel)
{
    const nc_conv_args *g = j->g;
    const nc_desc *dy = j->a;
    int f32 = dy->dtype == NETCL_DTYPE_FLOAT32, unit = g->SH == 1 && g->SW == 1;
    const float *yf = f32 ? (const float *)dy->buf + dy->offset : NULL;
    for (int64_t k = 0; k < j->Og * j->KK; k++) {
        int64_t o = k / j->KK, kh = (k % j->KK) / g->KW, kw = k % g->KW;
        for (int64_t i = 0; i < n; i++) {
            int64_t th = cp[i].y - kh * g->DH, tw = cp[i].x - kw * g->DW;
            int in = th >= 0 && tw >= 0;
            if (in && !unit) {
                in = th % g->SH == 0 && tw % g->SW == 0;
                th /= g->SH, tw /= g->SW;
            }
            in = in && th < g->OH && tw < g->OW;
            int64_t at = ((cp[i].img * g->O + grp * j->Og + o) * g->OH + th) * g->OW + tw;
            if (f32) ((float *)panel)[k * n + i] = in ? yf[at] : 0.0f;
            else nc_store_double(panel, dy->dtype, k * n + i, in ? nc_cpu_ld(dy, dy->offset + at) : 0.0);
        }
    }
}

/* copies row runs between a [rows, n] block and the per-image rows of an
 * NCHW tensor: element (m, i) <-> t[img_i, ch0 + m, p_i]; to_block says which way */
static void image_rows(const job *j, const nc_desc *t, int64_t chans, int64_t ch0, int64_t rows, const colpos *cp, int64_t n,
                       void *blk, int to_block)
{
    size_t es = (size_t)netcl_dtype_size(t->dtype);
    for (int64_t m = 0; m < rows; m++)
        for (int64_t c0 = 0; c0 < n;) {   /* a run per image: its pixels are consecutive */
            int64_t c1 = c0 + 1;
            while (c1 < n && cp[c1].img == cp[c0].img) c1++;
            char *tp = (char *)t->buf + (size_t)(t->offset + (cp[c0].img * chans + ch0 + m) * j->pix + cp[c0].p) * es;
            char *bp = (char *)blk + (size_t)(m * n + c0) * es;
            memcpy(to_block ? bp : tp, to_block ? tp : bp, (size_t)(c1 - c0) * es);
            c0 = c1;
        }
}

/* forward and backward-data: block i = (group, columns), the result's
 * columns scattered back to their images */
static void rows_part(void *v, int64_t s, int64_t e)
{
    job *j = v;
    const nc_conv_args *g = j->g;
    int fwd = j->pass == NC_CONV_PASS_FWD;
    int64_t M = fwd ? j->Og : j->Cg, K = fwd ? j->Cg * j->KK : j->Og * j->KK, chans = fwd ? g->O : g->C;
    int64_t total = g->N * j->pix;
    size_t es = (size_t)netcl_dtype_size(j->out->dtype);
    void *panel = malloc((size_t)(K * j->cols) * es), *blk = malloc((size_t)(M * j->cols) * es);
    colpos *cp = malloc(sizeof *cp * (size_t)j->cols);
    if (!panel || !blk || !cp) { atomic_store(&j->oom, 1); free(panel); free(blk); free(cp); return; }
    for (int64_t i = s; i < e; i++) {
        int64_t grp = i / j->blocks, q0 = (i % j->blocks) * j->cols, n = total - q0 < j->cols ? total - q0 : j->cols;
        positions(j, q0, n, cp);
        if (fwd) gather_x(j, grp, cp, n, panel);
        else gather_dy(j, grp, cp, n, panel);
        nc_desc A = fwd ? plain(j->b->buf, j->b->dtype, j->b->offset + grp * M * K, M, K, K, 1)
                        : plain(j->wt, j->b->dtype, grp * M * K, M, K, K, 1);
        nc_desc B = plain(panel, j->out->dtype, 0, K, n, n, 1), O = plain(blk, j->out->dtype, 0, M, n, n, 1);
        nc_desc bias;
        nc_gemm_epi ep = {1, 0, NULL, NULL, 1, -1, 0, NC_FP32_IEEE};
        if (j->epi) {   /* forward and backward-data: along the result's channels */
            if (j->epi->bias) {
                bias = *j->epi->bias;
                bias.offset += grp * M;
                ep.bias = &bias;
            }
            ep.act = j->epi->act, ep.act_p = j->epi->act_p;
        }
        netcl_status st = j->epi ? nc_cpu_gemm(j->dev, &O, &A, &B, &ep) : nc_cpu_matmul(j->dev, &O, &A, &B);
        if (st != NETCL_OK) { atomic_store(&j->oom, 1); break; }
        image_rows(j, j->out, chans, grp * M, M, cp, n, blk, 0);
    }
    free(panel);
    free(blk);
    free(cp);
}

/* backward-weight: part i = (chunk, grp) sums the products of its images'
 * column blocks: dy rows [O/G, n] times the x panel transposed [n, C/G*K'] */
static void weight_part(void *v, int64_t s, int64_t e)
{
    job *j = v;
    const nc_conv_args *g = j->g;
    int64_t M = j->Og, N = j->Cg * j->KK, per = (g->N + j->chunks - 1) / j->chunks;
    size_t es = (size_t)netcl_dtype_size(j->out->dtype);
    void *panel = malloc((size_t)(N * j->cols) * es), *dyp = malloc((size_t)(M * j->cols) * es);
    void *tmp = malloc((size_t)(M * N) * es);
    colpos *cp = malloc(sizeof *cp * (size_t)j->cols);
    if (!panel || !dyp || !tmp || !cp) {
        atomic_store(&j->oom, 1);
        free(panel); free(dyp); free(tmp); free(cp);
        return;
    }
    for (int64_t i = s; i < e; i++) {
        int64_t chunk = i / g->G, grp = i % g->G;
        double *acc = j->partial + (chunk * g->O + grp * M) * N;
        int64_t q_end = (chunk + 1) * per * j->pix < g->N * j->pix ? (chunk + 1) * per * j->pix : g->N * j->pix;
        for (int64_t q0 = chunk * per * j->pix; q0 < q_end; q0 += j->cols) {
            int64_t n = q_end - q0 < j->cols ? q_end - q0 : j->cols;
            positions(j, q0, n, cp);
            gather_x(j, grp, cp, n, panel);                                     /* [N, n] */
            image_rows(j, j->b, g->O, grp * M, M, cp, n, dyp, 1);                 /* dy rows [M, n] */
            nc_desc A = plain(dyp, j->out->dtype, 0, M, n, n, 1), B = plain(panel, j->out->dtype, 0, n, N, 1, n);
            nc_desc O = plain(tmp, j->out->dtype, 0, M, N, N, 1);
            if (nc_cpu_matmul(j->dev, &O, &A, &B) != NETCL_OK) { atomic_store(&j->oom, 1); goto done; }
            if (j->out->dtype == NETCL_DTYPE_FLOAT32)
                for (int64_t q = 0; q < M * N; q++) acc[q] += ((const float *)tmp)[q];
            else
                for (int64_t q = 0; q < M * N; q++) acc[q] += nc_load_double(tmp, j->out->dtype, q);
        }
    }
done:
    free(panel);
    free(dyp);
    free(tmp);
    free(cp);
}

netcl_status nc_cpu_conv_gemm(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                              const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices)
{
    (void)kslices;   /* the cpu splits backward-weight its own fixed way */
    if (pass == NC_CONV_PASS_WEIGHT && nc_cpu_conv_vec_weight(g, out, a, b)) return NETCL_OK;
    job j = {dev, pass, g, out, a, b, epi, NULL, g->C / g->G, g->O / g->G, g->KH * g->KW,
             pass == NC_CONV_PASS_DATA ? g->H * g->W : g->OH * g->OW, 0, 0, 0, NULL, 0};
    size_t es = (size_t)netcl_dtype_size(out->dtype);
    int64_t rows = pass == NC_CONV_PASS_DATA ? j.Og * j.KK : j.Cg * j.KK, total = g->N * j.pix;
    if (pass == NC_CONV_PASS_WEIGHT && j.Og > rows) rows = j.Og;
    j.cols = PANEL_ELEMS / (rows > 0 ? rows : 1);
    j.cols = j.cols < 64 ? 64 : j.cols / 16 * 16;
    if (j.cols > total) j.cols = total;
    j.blocks = (total + j.cols - 1) / j.cols;
    if (pass == NC_CONV_PASS_WEIGHT) {
        j.chunks = g->N < WEIGHT_CHUNKS ? g->N : WEIGHT_CHUNKS;
        int64_t size = g->O * j.Cg * j.KK;
        j.partial = calloc((size_t)(j.chunks * size), sizeof(double));
        if (!j.partial) return nc_fail(NETCL_ERR_OOM, "conv2d backward-weight (implicit gemm): out of host memory");
        nc_parallel_for(j.chunks * g->G, 1, weight_part, &j);
        for (int64_t q = 0; q < size && !atomic_load(&j.oom); q++) {   /* chunks added in order */
            double sum = 0;
            for (int64_t c = 0; c < j.chunks; c++) sum += j.partial[c * size + q];
            nc_cpu_st(out, out->offset + q, sum);
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
        nc_parallel_for(g->G * j.blocks, 1, rows_part, &j);
        free(j.wt);
    }
    if (atomic_load(&j.oom)) return nc_fail(NETCL_ERR_OOM, "conv2d (implicit gemm): out of host memory for its panels");
    return NETCL_OK;
}
