/* matmul.c — batched CPU matmul out[b] = a[b] @ w[b] for [B,M,K] x [B,K,N].
 * Operands are packed into contiguous float (or double) panels, then each
 * thread owns a band of output rows and accumulates k-blocked row updates
 * (c[i,:] += a[i,k] * w[k,:]), a loop shape compilers vectorise well. */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

#define KB 256   /* k-block: keeps a panel of w rows in cache */

typedef struct {
    const nc_desc *out, *a, *w;
    int64_t M, K, N, batch;
    int dbl;                 /* compute in double (float64 operands) */
    void *apack, *wpack;     /* packed operands of the current batch */
} mm_ctx;

/* Copies the [rows, cols] matrix at (desc, batch) into a dense buffer. */
static void pack(const nc_desc *d, int64_t b, int64_t rows, int64_t cols, int dbl, void *dst)
{
    int64_t base = d->offset + b * d->strides[0], rs = d->strides[1], cs = d->strides[2];
    for (int64_t r = 0; r < rows; r++) {
        if (dbl) {
            double *o = (double *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++) o[c] = nc_load_double(d->buf, d->dtype, base + r * rs + c * cs);
        } else if (d->dtype == NETCL_DTYPE_FLOAT32 && cs == 1) {
            memcpy((float *)dst + r * cols, (const float *)d->buf + base + r * rs, sizeof(float) * (size_t)cols);
        } else {
            float *o = (float *)dst + r * cols;
            for (int64_t c = 0; c < cols; c++) o[c] = (float)nc_load_double(d->buf, d->dtype, base + r * rs + c * cs);
        }
    }
}

__attribute__((target_clones("avx2", "default")))
static void rows_f32(const float *a, const float *w, float *c, int64_t i0, int64_t i1, int64_t K, int64_t N)
{
    for (int64_t i = i0; i < i1; i++) memset(c + i * N, 0, sizeof(float) * (size_t)N);
    for (int64_t k0 = 0; k0 < K; k0 += KB) {
        int64_t k1 = k0 + KB < K ? k0 + KB : K;
        for (int64_t i = i0; i < i1; i++) {
            float *ci = c + i * N;
            for (int64_t k = k0; k < k1; k++) {
                float av = a[i * K + k];
                const float *wk = w + k * N;
                for (int64_t j = 0; j < N; j++) ci[j] += av * wk[j];
            }
        }
    }
}

__attribute__((target_clones("avx2", "default")))
static void rows_f64(const double *a, const double *w, double *c, int64_t i0, int64_t i1, int64_t K, int64_t N)
{
    for (int64_t i = i0; i < i1; i++) memset(c + i * N, 0, sizeof(double) * (size_t)N);
    for (int64_t k0 = 0; k0 < K; k0 += KB) {
        int64_t k1 = k0 + KB < K ? k0 + KB : K;
        for (int64_t i = i0; i < i1; i++) {
            double *ci = c + i * N;
            for (int64_t k = k0; k < k1; k++) {
                double av = a[i * K + k];
                const double *wk = w + k * N;
                for (int64_t j = 0; j < N; j++) ci[j] += av * wk[j];
            }
        }
    }
}

static void mm_range(void *vctx, int64_t i0, int64_t i1)
{
    mm_ctx *c = vctx;
    int64_t obase = c->out->offset + c->batch * c->M * c->N;
    if (c->dbl) {
        rows_f64(c->apack, c->wpack, (double *)c->out->buf + obase, i0, i1, c->K, c->N);
    } else if (c->out->dtype == NETCL_DTYPE_FLOAT32) {
        rows_f32(c->apack, c->wpack, (float *)c->out->buf + obase, i0, i1, c->K, c->N);
    } else { /* float16/bfloat16 out: compute a float band, then round */
        float *tmp = malloc(sizeof(float) * (size_t)((i1 - i0) * c->N));
        if (!tmp) return;
        rows_f32((const float *)c->apack + i0 * c->K, c->wpack, tmp, 0, i1 - i0, c->K, c->N);
        for (int64_t e = 0; e < (i1 - i0) * c->N; e++)
            nc_store_double(c->out->buf, c->out->dtype, obase + i0 * c->N + e, tmp[e]);
        free(tmp);
    }
}

netcl_status nc_cpu_matmul(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w)
{
    (void)dev;
    mm_ctx c = {out, a, w, a->sizes[1], a->sizes[2], w->sizes[2], 0, a->dtype == NETCL_DTYPE_FLOAT64, NULL, NULL};
    size_t es = c.dbl ? sizeof(double) : sizeof(float);
    c.apack = malloc(es * ((size_t)(c.M * c.K) + 1));
    c.wpack = malloc(es * ((size_t)(c.K * c.N) + 1));
    if (!c.apack || !c.wpack) {
        free(c.apack);
        free(c.wpack);
        return nc_fail(NETCL_ERR_OOM, "cpu matmul: out of host memory for packing");
    }
    /* rows per task: enough work (~64K multiply-adds) to pay for a thread */
    int64_t grain = 65536 / (c.K * c.N + 1) + 1;
    for (c.batch = 0; c.batch < out->sizes[0]; c.batch++) {
        pack(a, c.batch, c.M, c.K, c.dbl, c.apack);
        pack(w, c.batch, c.K, c.N, c.dbl, c.wpack);
        nc_parallel_for(c.M, grain, mm_range, &c);
    }
    free(c.apack);
    free(c.wpack);
    return NETCL_OK;
}
