/* softmax.c — the CPU softmax family: softmax and log_softmax over the last
 * dim and their backward. Rows are max-subtracted and split across the
 * thread pool; float32 rows compute in float (rowf32.h), the others in
 * double. A row's result never depends on the thread that ran it. */
#include "cpu.h"
#include "rowf32.h"
#include <math.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct { const nc_desc *out, *a, *g, *y; int log; int64_t R; } sm_ctx;

/* Three passes over each row (max, sum of exp, write) in double: no row
 * buffer, so any row length works. */
static void softmax_rows(void *vctx, int64_t r0, int64_t r1)
{
    const sm_ctx *c = vctx;
    int64_t R = c->R;
    for (int64_t r = r0; r < r1; r++) {
        int64_t ia = c->a->offset + r * R, io = c->out->offset + r * R;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < R; j++) {
            double v = ld(c->a, ia + j);
            if (v > mx || v != v) mx = v;
        }
        if (mx == -INFINITY) mx = 0;   /* an all -inf row gives nan (0/0), as in PyTorch */
        for (int64_t j = 0; j < R; j++) sum += exp(ld(c->a, ia + j) - mx);
        double lse = log(sum);
        for (int64_t j = 0; j < R; j++) {
            double v = ld(c->a, ia + j) - mx;
            st(c->out, io + j, c->log ? v - lse : exp(v) / sum);
        }
    }
}

static void softmax_back_rows(void *vctx, int64_t r0, int64_t r1)
{
    const sm_ctx *c = vctx;
    int64_t R = c->R;
    for (int64_t r = r0; r < r1; r++) {
        int64_t ig = c->g->offset + r * R, iy = c->y->offset + r * R, io = c->out->offset + r * R;
        double s = 0;
        for (int64_t j = 0; j < R; j++) s += c->log ? ld(c->g, ig + j) : ld(c->g, ig + j) * ld(c->y, iy + j);
        for (int64_t j = 0; j < R; j++) {
            double g = ld(c->g, ig + j), y = ld(c->y, iy + j);
            st(c->out, io + j, c->log ? g - exp(y) * s : y * (g - s));
        }
    }
}

/* ---- float32 rows: the same three passes in float, each a vector loop ----------
 * out, a: contiguous (rows, R) float32. softmax keeps e^(x - max) in out and
 * scales it in place; log_softmax only needs the sum. */
NC_ROW_CLONES static void softmax_rows_f32(void *vctx, int64_t r0, int64_t r1)
{
    const sm_ctx *c = vctx;
    int64_t R = c->R;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)c->a->buf + c->a->offset + r * R;
        float *o = (float *)c->out->buf + c->out->offset + r * R;
        float mx = nc_row_max_f32(x, R);
        if (mx == -INFINITY) mx = 0;   /* an all -inf row gives nan (0/0), as in PyTorch */
        if (c->log) {
            float lse = (float)log((double)nc_row_expsum_f32(x, mx, R));
            for (int64_t j = 0; j < R; j++) o[j] = (x[j] - mx) - lse;
        } else {
            nc_row_exp_f32(o, x, mx, R);
            float sum = nc_row_sum_f32(o, R);
            for (int64_t j = 0; j < R; j++) o[j] /= sum;
        }
    }
}

/* gin = y (g - sum(g y)); for log_softmax gin = g - e^y sum(g) */
NC_ROW_CLONES static void softmax_back_rows_f32(void *vctx, int64_t r0, int64_t r1)
{
    const sm_ctx *c = vctx;
    int64_t R = c->R;
    for (int64_t r = r0; r < r1; r++) {
        const float *g = (const float *)c->g->buf + c->g->offset + r * R;
        const float *y = (const float *)c->y->buf + c->y->offset + r * R;
        float *o = (float *)c->out->buf + c->out->offset + r * R;
        if (c->log) {
            float s = nc_row_sum_f32(g, R);
            for (int64_t j = 0; j < R; j++) o[j] = g[j] - nc_expf(y[j]) * s;
        } else {
            float s = nc_row_dot_f32(g, y, R);
            for (int64_t j = 0; j < R; j++) o[j] = y[j] * (g[j] - s);
        }
    }
}

static int64_t grain_rows(int64_t R) { return R >= 16384 ? 1 : 16384 / R; }

netcl_status nc_cpu_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log)
{
    (void)dev;
    int64_t R = a->sizes[a->ndim - 1], rows = nc_numel(a->ndim, a->sizes) / R;
    sm_ctx c = {out, a, NULL, NULL, log, R};
    int f32 = a->dtype == NETCL_DTYPE_FLOAT32 && out->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(rows, grain_rows(R), f32 ? softmax_rows_f32 : softmax_rows, &c);
    return NETCL_OK;
}

netcl_status nc_cpu_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log)
{
    (void)dev;
    int64_t R = y->sizes[y->ndim - 1], rows = nc_numel(y->ndim, y->sizes) / R;
    sm_ctx c = {gin, NULL, g, y, log, R};
    int f32 = gin->dtype == NETCL_DTYPE_FLOAT32 && g->dtype == NETCL_DTYPE_FLOAT32 && y->dtype == NETCL_DTYPE_FLOAT32;
    nc_parallel_for(rows, grain_rows(R), f32 ? softmax_back_rows_f32 : softmax_back_rows, &c);
    return NETCL_OK;
}
