/* select.c — CPU where (out = cond ? a : b) and the row-wise softmax
 * family. where moves raw element bytes (a, b and out share a dtype), so it
 * needs no compute type. softmax rows are max-subtracted and split across
 * the thread pool; float32 rows compute in float (rowf32.h), the others in
 * double. A row's result never depends on the thread that ran it. */
#include "cpu.h"
#include "rowf32.h"
#include <math.h>
#include <string.h>

#define ld nc_cpu_ld
#define st nc_cpu_st

typedef struct {
    const nc_desc *out, *cond, *a, *b;
    _Alignas(8) unsigned char sa[8], sb[8];   /* scalar operands in the element type */
    int es;
    nc_iter it;
} where_ctx;

/* raw element words, allowed to alias the float or integer storage they move */
typedef uint8_t __attribute__((may_alias)) raw8;
typedef uint16_t __attribute__((may_alias)) raw16;
typedef uint32_t __attribute__((may_alias)) raw32;
typedef uint64_t __attribute__((may_alias)) raw64;

/* One row in element type T: a and b are pointers with a step, where a
 * scalar operand is the scratch value with step 0, so the select has no
 * branch per operand and contiguous rows vectorise. */
#define WHERE_SEL(T, va, vb)                                                                       \
    for (int64_t j = 0; j < n; j++) {                                                             \
        T x_ = (va), y_ = (vb);                                                                   \
        o[j] = m[j] ? x_ : y_;                                                                    \
    }
#define WHERE_ROW(T)                                                                              \
    {                                                                                             \
        T *o = (T *)c->out->buf + off[0];                                                         \
        const T *pa = a ? (const T *)a : (const T *)c->sa, *pb = b ? (const T *)b : (const T *)c->sb; \
        int64_t so = step[0], sm = step[1], sa = a ? step[2] : 0, sb = b ? step[3] : 0;            \
        if (so == 1 && sm == 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {                \
            /* both values loaded, then selected: no branch on the mask */                       \
            if (sa && sb) WHERE_SEL(T, pa[j], pb[j])                                                \
            else if (sa) WHERE_SEL(T, pa[j], pb[0])                                                  \
            else if (sb) WHERE_SEL(T, pa[0], pb[j])                                                  \
            else WHERE_SEL(T, pa[0], pb[0])                                                          \
        } else {                                                                                  \
            for (int64_t j = 0; j < n; j++) o[j * so] = m[j * sm] ? pa[j * sa] : pb[j * sb];        \
        }                                                                                         \
        return;                                                                                   \
    }

static void where_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    where_ctx *c = vctx;
    int es = c->es;
    const uint8_t *m = (const uint8_t *)c->cond->buf + off[1];
    const char *a = c->a ? (const char *)c->a->buf + off[2] * es : NULL;
    const char *b = c->b ? (const char *)c->b->buf + off[3] * es : NULL;
    switch (es) {
    case 1: WHERE_ROW(raw8)
    case 2: WHERE_ROW(raw16)
    case 4: WHERE_ROW(raw32)
    case 8: WHERE_ROW(raw64)
    default: break;
    }
    char *o = (char *)c->out->buf + off[0] * es;
    for (int64_t j = 0; j < n; j++) {
        const void *src = m[j * step[1]] ? (a ? a + j * step[2] * es : (const void *)c->sa)
                                         : (b ? b + j * step[3] * es : (const void *)c->sb);
        memcpy(o + j * step[0] * es, src, (size_t)es);
    }
}

static void where_range(void *vctx, int64_t s, int64_t e)
{
    where_ctx *c = vctx;
    nc_iter_range(&c->it, s, e, where_row, c);
}

netcl_status nc_cpu_where(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a,
                          const nc_desc *b, double sa, double sb)
{
    (void)dev;
    where_ctx c = {out, cond, a, b, {0}, {0}, netcl_dtype_size(out->dtype), {0}};
    nc_store_double(c.sa, out->dtype, 0, sa);
    nc_store_double(c.sb, out->dtype, 0, sb);
    /* absent operands iterate as out (never read) so the iterator sees 4 */
    const nc_desc *ops[4] = {out, cond, a ? a : out, b ? b : out};
    nc_iter_init(&c.it, 4, ops);
    nc_parallel_for(nc_iter_numel(&c.it), 16384, where_range, &c);
    return NETCL_OK;
}

/* ---- softmax ---------------------------------------------------------------------- */

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
