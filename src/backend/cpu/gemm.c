/* gemm.c — the CPU linalg family: batched matmul out[b] = a[b] @ w[b] for
 * [B,M,K] x [B,K,N] (through gemm_blas.c where a BLAS takes it).
 * float32/float16/bfloat16 compute in float: the output is cut into
 * independent tiles (batch, MC rows, NCB cols); each tile packs its operands
 * into zero-padded MR/NR panels per KC slice and runs an MR x NR register
 * kernel (AVX2+FMA when the CPU has it). An element's k order is fixed, so the
 * result never depends on the thread count. float64 computes in double.
 * gemm adds the fused epilogue to each block the BLAS finishes, else as a
 * pass over the output's rows. */
#include "cpu.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NC_HAVE_X86 1
#endif

#define MR 6
#define NR 16
#define KC 256
#define MC 96            /* rows of a tile (a multiple of MR) */
#define NCB 256          /* columns of a tile (a multiple of NR) */

typedef struct {
    const nc_desc *out, *a, *w;
    int64_t M, K, N, mt, nt;     /* sizes; tiles along M and N */
    atomic_int oom;              /* a worker could not get its scratch */
} mm_ctx;

typedef void (*kernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mr, int nr, int first);

/* Writes the MR x NR accumulator tile into c (mr x nr valid), = or +=. */
static void store_tile(const float *acc, float *c, int64_t ldc, int mr, int nr, int first)
{
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = first ? acc[i * NR + j] : c[i * ldc + j] + acc[i * NR + j];
}

/* Portable kernel: c[MR,NR] (+)= a-panel[kc,MR]^T b-panel[kc,NR]. */
static void kernel_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mr, int nr, int first)
{
    float acc[MR * NR];
    memset(acc, 0, sizeof acc);
    for (int64_t k = 0; k < kc; k++)
        for (int i = 0; i < MR; i++) {
            float av = a[k * MR + i];
            for (int j = 0; j < NR; j++) acc[i * NR + j] += av * b[k * NR + j];
        }
    store_tile(acc, c, ldc, mr, nr, first);
}

#ifdef NC_HAVE_X86
/* 12 ymm accumulators; per k: two loads of b, six broadcasts of a. */
__attribute__((target("avx2,fma")))
static void kernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int mr, int nr, int first)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), av;
        av = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(av, b0, c00); c01 = _mm256_fmadd_ps(av, b1, c01);
        av = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(av, b0, c10); c11 = _mm256_fmadd_ps(av, b1, c11);
        av = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(av, b0, c20); c21 = _mm256_fmadd_ps(av, b1, c21);
        av = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(av, b0, c30); c31 = _mm256_fmadd_ps(av, b1, c31);
        av = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(av, b0, c40); c41 = _mm256_fmadd_ps(av, b1, c41);
        av = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(av, b0, c50); c51 = _mm256_fmadd_ps(av, b1, c51);
    }
    if (mr == MR && nr == NR) { /* a full tile: straight into c */
        __m256 r[MR * 2] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
        for (int i = 0; i < MR; i++)
            for (int h = 0; h < 2; h++) {
                float *p = c + i * ldc + h * 8;
                _mm256_storeu_ps(p, first ? r[2 * i + h] : _mm256_add_ps(_mm256_loadu_ps(p), r[2 * i + h]));
            }
        return;
    }
    float acc[MR * NR];
    _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);
    _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);
    _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);
    _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);
    _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);
    _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);
    store_tile(acc, c, ldc, mr, nr, first);
}
#endif

static kernel_fn the_kernel = kernel_generic;

static void pick_kernel(void)
{
#ifdef NC_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) the_kernel = kernel_avx2;
#endif
}

/* Packs rows [r0, r0+mr) x cols [k0, k0+kc) of a[b] into MR-row panels:
 * dst[(p*kc + k)*MR + i] (zero rows past M). */
static void pack_a(const nc_desc *a, int64_t b, int64_t r0, int64_t mr, int64_t k0, int64_t kc, float *dst)
{
    float row[KC];
    int64_t base = a->offset + b * a->strides[0];
    for (int64_t i = 0; i < (mr + MR - 1) / MR * MR; i++) {
        float *p = dst + (i / MR) * kc * MR + i % MR;
        if (i >= mr) { for (int64_t k = 0; k < kc; k++) p[k * MR] = 0; continue; }
        nc_cpu_gather_f32(a->buf, a->dtype, base + (r0 + i) * a->strides[1] + k0 * a->strides[2], a->strides[2], kc, row);
        for (int64_t k = 0; k < kc; k++) p[k * MR] = row[k];
    }
}

/* Packs rows [k0, k0+kc) x cols [c0, c0+nc) of w[b] into NR-col panels:
 * dst[(p*kc + k)*NR + j] (zero cols past N). */
static void pack_b(const nc_desc *w, int64_t b, int64_t k0, int64_t kc, int64_t c0, int64_t nc, float *dst)
{
    float row[NCB];
    int64_t base = w->offset + b * w->strides[0], np = (nc + NR - 1) / NR;
    for (int64_t k = 0; k < kc; k++) {
        nc_cpu_gather_f32(w->buf, w->dtype, base + (k0 + k) * w->strides[1] + c0 * w->strides[2], w->strides[2], nc, row);
        for (int64_t j = nc; j < np * NR; j++) row[j] = 0;
        for (int64_t p = 0; p < np; p++) memcpy(dst + (p * kc + k) * NR, row + p * NR, sizeof(float) * NR);
    }
}

typedef struct { float *apack, *bpack, *ctile; kernel_fn kernel; } mm_scratch;

/* One output tile: rows [r0, r0+mc) x cols [c0, c0+nc) of batch b. */
static void mm_tile(const mm_ctx *c, mm_scratch *s, int64_t b, int64_t r0, int64_t mc, int64_t c0, int64_t nc)
{
    float *cdst;
    int64_t ldc;
    int f32 = c->out->dtype == NETCL_DTYPE_FLOAT32;
    if (f32) {
        cdst = (float *)c->out->buf + c->out->offset + (b * c->M + r0) * c->N + c0;
        ldc = c->N;
    } else { /* float16/bfloat16 out: a float tile, rounded once at the end */
        cdst = s->ctile;
        ldc = NCB;
    }
    for (int64_t k0 = 0; k0 < c->K; k0 += KC) {
        int64_t kc = c->K - k0 < KC ? c->K - k0 : KC;
        pack_a(c->a, b, r0, mc, k0, kc, s->apack);
        pack_b(c->w, b, k0, kc, c0, nc, s->bpack);
        for (int64_t j = 0; j < nc; j += NR)
            for (int64_t i = 0; i < mc; i += MR)
                s->kernel(kc, s->apack + (i / MR) * kc * MR, s->bpack + (j / NR) * kc * NR, cdst + i * ldc + j, ldc,
                          (int)(mc - i < MR ? mc - i : MR), (int)(nc - j < NR ? nc - j : NR), k0 == 0);
    }
    if (!f32)
        for (int64_t i = 0; i < mc; i++)
            for (int64_t j = 0; j < nc; j++)
                nc_store_double(c->out->buf, c->out->dtype, c->out->offset + (b * c->M + r0 + i) * c->N + c0 + j,
                                cdst[i * ldc + j]);
}

static void mm_range(void *vctx, int64_t t0, int64_t t1)
{
    mm_ctx *c = vctx;
    mm_scratch s = {malloc(sizeof(float) * MC * KC), malloc(sizeof(float) * KC * NCB),
                    malloc(sizeof(float) * MC * NCB), the_kernel};
    if (s.apack && s.bpack && s.ctile)
        for (int64_t t = t0; t < t1; t++) {
            int64_t b = t / (c->mt * c->nt), r = t % (c->mt * c->nt), mi = r / c->nt, ni = r % c->nt;
            int64_t r0 = mi * MC, c0 = ni * NCB;
            mm_tile(c, &s, b, r0, c->M - r0 < MC ? c->M - r0 : MC, c0, c->N - c0 < NCB ? c->N - c0 : NCB);
        }
    else
        atomic_store(&c->oom, 1);
    free(s.apack);
    free(s.bpack);
    free(s.ctile);
}

/* ---- float64: dense double copies, row updates c[i,:] += a[i,k] * w[k,:] ---------- */
typedef struct { const mm_ctx *c; double *a, *w; int64_t b; } f64_ctx;

static void f64_range(void *vctx, int64_t i0, int64_t i1)
{
    const f64_ctx *f = vctx;
    int64_t K = f->c->K, N = f->c->N;
    double *out = (double *)f->c->out->buf + f->c->out->offset + f->b * f->c->M * N;
    for (int64_t i = i0; i < i1; i++) {
        double *ci = out + i * N;
        memset(ci, 0, sizeof(double) * (size_t)N);
        for (int64_t k = 0; k < K; k++) {
            double av = f->a[i * K + k];
            const double *wk = f->w + k * N;
            for (int64_t j = 0; j < N; j++) ci[j] += av * wk[j];
        }
    }
}

static void dense_f64(const nc_desc *d, int64_t b, int64_t rows, int64_t cols, double *dst)
{
    int64_t base = d->offset + b * d->strides[0];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++)
            dst[r * cols + k] = nc_load_double(d->buf, d->dtype, base + r * d->strides[1] + k * d->strides[2]);
}

static netcl_status matmul_f64(const mm_ctx *c)
{
    f64_ctx f = {c, malloc(sizeof(double) * (size_t)(c->M * c->K + 1)), malloc(sizeof(double) * (size_t)(c->K * c->N + 1)), 0};
    if (!f.a || !f.w) {
        free(f.a);
        free(f.w);
        return nc_fail(NETCL_ERR_OOM, "cpu matmul: out of host memory for packing");
    }
    int64_t grain = 65536 / (c->K * c->N + 1) + 1;
    for (f.b = 0; f.b < c->out->sizes[0]; f.b++) {
        dense_f64(c->a, f.b, c->M, c->K, f.a);
        dense_f64(c->w, f.b, c->K, c->N, f.w);
        nc_parallel_for(c->M, grain, f64_range, &f);
    }
    free(f.a);
    free(f.w);
    return NETCL_OK;
}

netcl_status nc_cpu_matmul(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w)
{
    (void)dev;
    if (a->ndim != 3 || w->ndim != 3 || out->ndim != 3)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu matmul: operands must be 3-d [B,M,K] x [B,K,N]");
    mm_ctx c = {out, a, w, a->sizes[1], a->sizes[2], w->sizes[2], 0, 0, 0};
    int64_t B = out->sizes[0];
    if (B == 0 || c.M == 0 || c.N == 0) return NETCL_OK;
    if (c.K == 0) return nc_cpu_fill(dev, out, 0);
    if (nc_cpu_blas_matmul(out, a, w, NULL, NULL)) return NETCL_OK;
    if (out->dtype == NETCL_DTYPE_FLOAT64) return matmul_f64(&c);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pick_kernel);
    c.mt = (c.M + MC - 1) / MC;
    c.nt = (c.N + NCB - 1) / NCB;
    int64_t tiles = B * c.mt * c.nt;
    /* tiles per task: at least ~1M multiply-adds, so tiny products stay serial */
    int64_t per_tile = (c.M < MC ? c.M : MC) * (c.N < NCB ? c.N : NCB) * c.K;
    nc_parallel_for(tiles, (1 << 20) / (per_tile + 1) + 1, mm_range, &c);
    if (atomic_load(&c.oom)) return nc_fail(NETCL_ERR_OOM, "cpu matmul: out of host memory for packing");
    return NETCL_OK;
}

/* ---- gemm: matmul and the epilogue, in place, block by block or row by row -------- */
typedef struct { const nc_desc *out; const nc_gemm_epi *e; int64_t M, N; } epi_ctx;

double nc_cpu_activate(int act, double v, double p)
{
    switch (act) {
    case NETCL_OP_RELU: return v > 0 ? v : 0;
    case NETCL_OP_SIGMOID: return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v));
    case NETCL_OP_TANH: return tanh(v);
    case NETCL_OP_SILU: return v < 0 ? v * exp(v) / (1 + exp(v)) : v / (1 + exp(-v));
    case NETCL_OP_GELU: return 0.5 * v * (1 + erf(v * 0.70710678118654752440));
    case NETCL_OP_GELU_TANH: return 0.5 * v * (1 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
    case NETCL_OP_RELU6: return v > 0 ? (v < 6 ? v : 6) : 0;
    case NETCL_OP_LEAKY_RELU: return v > 0 ? v : p * v;
    default: return v;
    }
}

/* the epilogue on columns [n0, n1) of row m of item b (any dtype, in double) */
static void epi_span(const epi_ctx *x, int64_t b, int64_t m, int64_t n0, int64_t n1)
{
    const nc_gemm_epi *e = x->e;
    int64_t o = x->out->offset + (b * x->M + m) * x->N;
    for (int64_t n = n0; n < n1; n++) {
        double v = e->alpha * nc_load_double(x->out->buf, x->out->dtype, o + n);
        if (e->c)
            v += e->beta * nc_load_double(e->c->buf, e->c->dtype,
                                          e->c->offset + b * e->c->strides[0] + m * e->c->strides[1] + n * e->c->strides[2]);
        if (e->bias)
            v += nc_load_double(e->bias->buf, e->bias->dtype, e->bias->offset + (e->bias_dim == 1 ? m : n) * e->bias->strides[0]);
        nc_store_double(x->out->buf, x->out->dtype, o + n, nc_cpu_activate(e->act, v, e->act_p));
    }
}

/* float32 operands: epi_span's arithmetic (double, same order, same
 * activation) with direct loads, a row's bias taken once, ReLU inline and
 * no call without an activation (act < 0). The common case — alpha 1, no
 * c, a bias and at most a ReLU — runs in float: the double sum of two
 * floats rounds to the float sum (53 >= 2 * 24 + 2 bits), and ReLU
 * commutes with that rounding, so the bits are the same and the loop
 * vectorises. */
static void epi_span_f32(const epi_ctx *x, int64_t b, int64_t m, int64_t n0, int64_t n1)
{
    const nc_gemm_epi *e = x->e;
    float *o = (float *)x->out->buf + x->out->offset + (b * x->M + m) * x->N;
    const float *bias = e->bias ? (const float *)e->bias->buf + e->bias->offset : NULL;
    int64_t bs = e->bias ? e->bias->strides[0] : 0;
    const float *bn = bias && e->bias_dim != 1 ? bias : NULL;   /* a bias along n */
    float bmf = bias && e->bias_dim == 1 ? bias[m * bs] : 0.0f;
    if (e->alpha == 1 && !e->c && (e->act < 0 || e->act == NETCL_OP_RELU)) {
        int relu = e->act == NETCL_OP_RELU;
        if (bn && bs == 1) {
            for (int64_t n = n0; n < n1; n++) { float v = o[n] + bn[n]; o[n] = relu ? (v > 0 ? v : 0.0f) : v; }
        } else if (bn) {
            for (int64_t n = n0; n < n1; n++) { float v = o[n] + bn[n * bs]; o[n] = relu ? (v > 0 ? v : 0.0f) : v; }
        } else if (relu) {
            for (int64_t n = n0; n < n1; n++) { float v = o[n] + bmf; o[n] = v > 0 ? v : 0.0f; }
        } else {
            for (int64_t n = n0; n < n1; n++) o[n] = o[n] + bmf;
        }
        return;
    }
    const float *cr = e->c ? (const float *)e->c->buf + e->c->offset + b * e->c->strides[0] + m * e->c->strides[1] : NULL;
    int64_t cs = e->c ? e->c->strides[2] : 0;
    double bm = bmf;
    for (int64_t n = n0; n < n1; n++) {
        double v = e->alpha * (double)o[n];
        if (cr) v += e->beta * (double)cr[n * cs];
        if (bias) v += bn ? (double)bn[n * bs] : bm;
        o[n] = (float)(e->act < 0 ? v : e->act == NETCL_OP_RELU ? (v > 0 ? v : 0) : nc_cpu_activate(e->act, v, e->act_p));
    }
}

static int epi_f32(const epi_ctx *x)
{
    const nc_gemm_epi *e = x->e;
    return x->out->dtype == NETCL_DTYPE_FLOAT32 && (!e->c || e->c->dtype == NETCL_DTYPE_FLOAT32) &&
           (!e->bias || e->bias->dtype == NETCL_DTYPE_FLOAT32);
}

/* a block the BLAS just finished (nc_cpu_block_fn) */
static void epi_block(void *vctx, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const epi_ctx *x = vctx;
    int f32 = epi_f32(x);
    for (int64_t m = m0; m < m1; m++) {
        if (f32) epi_span_f32(x, b, m, n0, n1);
        else epi_span(x, b, m, n0, n1);
    }
}

/* rows [r0, r1) of out's B * M rows, whole */
static void epi_rows(void *vctx, int64_t r0, int64_t r1)
{
    const epi_ctx *x = vctx;
    for (int64_t r = r0; r < r1; r++) epi_block(vctx, r / x->M, r % x->M, r % x->M + 1, 0, x->N);
}

netcl_status nc_cpu_gemm(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w, const nc_gemm_epi *e)
{
    if (e->alpha == 1 && !e->c && !e->bias && e->act < 0) return nc_cpu_matmul(dev, out, a, w);   /* a plain product */
    epi_ctx x = {out, e, out->sizes[1], out->sizes[2]};
    int64_t rows = out->sizes[0] * x.M;
    if (rows == 0 || x.N == 0) return NETCL_OK;
    /* through the BLAS, each block takes its epilogue while still in cache */
    if (a->ndim == 3 && w->ndim == 3 && out->ndim == 3 && nc_cpu_blas_matmul(out, a, w, epi_block, &x)) return NETCL_OK;
    NC_TRY(nc_cpu_matmul(dev, out, a, w));
    nc_parallel_for(rows, 65536 / (x.N + 1) + 1, epi_rows, &x);
    return NETCL_OK;
}
