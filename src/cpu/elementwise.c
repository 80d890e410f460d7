/* elementwise.c — CPU copy/cast, fill, unary and binary ops. The general
 * path gathers blocks of up to 256 elements into double (floats) or int64
 * (integers, bool) scratch, computes, and scatters; contiguous float32
 * operands take tight loops the compiler vectorises. */
#include "cpu.h"
#include <math.h>
#include <string.h>

#define BLK 256
#define GRAIN 32768

/* ---- typed block access ------------------------------------------------------ */

int64_t nc_cpu_load_i64(const void *base, netcl_dtype dt, int64_t i)
{
    switch (dt) {
    case NETCL_DTYPE_INT32: return ((const int32_t *)base)[i];
    case NETCL_DTYPE_INT64: return ((const int64_t *)base)[i];
    case NETCL_DTYPE_UINT8: return ((const uint8_t *)base)[i];
    case NETCL_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: return (int64_t)nc_load_double(base, dt, i);
    }
}

void nc_cpu_store_i64(void *base, netcl_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case NETCL_DTYPE_INT32: ((int32_t *)base)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case NETCL_DTYPE_INT64: ((int64_t *)base)[i] = v; break;
    case NETCL_DTYPE_UINT8: ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v; break;
    case NETCL_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    default: nc_store_double(base, dt, i, (double)v); break;
    }
}

static void load_f64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, double *dst)
{
    if (dt == NETCL_DTYPE_FLOAT32) {
        const float *p = (const float *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = p[j * step];
    } else if (dt == NETCL_DTYPE_FLOAT64) {
        const double *p = (const double *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = p[j * step];
    } else {
        for (int64_t j = 0; j < n; j++) dst[j] = nc_load_double(base, dt, off + j * step);
    }
}

static void store_f64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const double *src)
{
    if (dt == NETCL_DTYPE_FLOAT32) {
        float *p = (float *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = (float)src[j];
    } else {
        for (int64_t j = 0; j < n; j++) nc_store_double(base, dt, off + j * step, src[j]);
    }
}

static void load_i64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, int64_t *dst)
{
    for (int64_t j = 0; j < n; j++) dst[j] = nc_cpu_load_i64(base, dt, off + j * step);
}

static void store_i64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const int64_t *src)
{
    for (int64_t j = 0; j < n; j++) nc_cpu_store_i64(base, dt, off + j * step, src[j]);
}

static int int_like(netcl_dtype dt) { return !nc_dtype_is_float(dt); }

/* ---- copy / cast ----------------------------------------------------------------- */

typedef struct { const nc_desc *dst, *src; nc_iter it; } copy_ctx;

static void copy_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    copy_ctx *c = vctx;
    netcl_dtype dd = c->dst->dtype, sd = c->src->dtype;
    if (dd == sd) {
        int es = netcl_dtype_size(dd);
        char *d = (char *)c->dst->buf + off[0] * es;
        const char *s = (const char *)c->src->buf + off[1] * es;
        if (step[0] == 1 && step[1] == 1) { memcpy(d, s, (size_t)(n * es)); return; }
        for (int64_t j = 0; j < n; j++) memcpy(d + j * step[0] * es, s + j * step[1] * es, (size_t)es);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK;
        if (int_like(dd) && int_like(sd)) {
            int64_t tmp[BLK];
            load_i64(c->src->buf, sd, off[1] + j0 * step[1], step[1], m, tmp);
            store_i64(c->dst->buf, dd, off[0] + j0 * step[0], step[0], m, tmp);
        } else {
            double tmp[BLK];
            load_f64(c->src->buf, sd, off[1] + j0 * step[1], step[1], m, tmp);
            store_f64(c->dst->buf, dd, off[0] + j0 * step[0], step[0], m, tmp);
        }
    }
}

static void copy_range(void *vctx, int64_t start, int64_t end)
{
    copy_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, copy_row, c);
}

netcl_status nc_cpu_copy(netcl_device *dev, const nc_desc *dst, const nc_desc *src)
{
    (void)dev;
    copy_ctx c = {dst, src, {0}};
    const nc_desc *ops[2] = {dst, src};
    nc_iter_init(&c.it, 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, copy_range, &c);
    return NETCL_OK;
}

/* ---- fill --------------------------------------------------------------------------- */

typedef struct { const nc_desc *dst; nc_iter it; unsigned char raw[8]; int es; } fill_ctx;

static void fill_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    fill_ctx *c = vctx;
    char *d = (char *)c->dst->buf + off[0] * c->es;
    if (c->es == 4) {
        uint32_t v;
        memcpy(&v, c->raw, 4);
        for (int64_t j = 0; j < n; j++) ((uint32_t *)d)[j * step[0]] = v;
    } else {
        for (int64_t j = 0; j < n; j++) memcpy(d + j * step[0] * c->es, c->raw, (size_t)c->es);
    }
}

static void fill_range(void *vctx, int64_t start, int64_t end)
{
    fill_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, fill_row, c);
}

netcl_status nc_cpu_fill(netcl_device *dev, const nc_desc *dst, double value)
{
    (void)dev;
    fill_ctx c = {dst, {0}, {0}, netcl_dtype_size(dst->dtype)};
    nc_store_double(c.raw, dst->dtype, 0, value);
    const nc_desc *ops[1] = {dst};
    nc_iter_init(&c.it, 1, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, fill_range, &c);
    return NETCL_OK;
}

/* ---- unary -------------------------------------------------------------------------- */

static double unary_f(netcl_op op, double x)
{
    switch (op) {
    case NETCL_OP_NEG: return -x;
    case NETCL_OP_ABS: return fabs(x);
    case NETCL_OP_EXP: return exp(x);
    case NETCL_OP_LOG: return log(x);
    case NETCL_OP_SQRT: return sqrt(x);
    case NETCL_OP_RELU: return x > 0 ? x : (x != x ? x : 0);
    case NETCL_OP_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case NETCL_OP_TANH: return tanh(x);
    default: return 0;
    }
}

static int64_t unary_i(netcl_op op, int64_t x)
{
    switch (op) {
    case NETCL_OP_NEG: return (int64_t)(0 - (uint64_t)x);
    case NETCL_OP_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case NETCL_OP_RELU: return x > 0 ? x : 0;
    default: return 0;
    }
}

/* contiguous float32 loops, one per op so each vectorises */
static int unary_f32_fast(netcl_op op, float *o, const float *a, int64_t n)
{
    switch (op) {
    case NETCL_OP_NEG: for (int64_t i = 0; i < n; i++) o[i] = -a[i]; return 1;
    case NETCL_OP_ABS: for (int64_t i = 0; i < n; i++) o[i] = fabsf(a[i]); return 1;
    case NETCL_OP_RELU: for (int64_t i = 0; i < n; i++) o[i] = a[i] > 0 ? a[i] : (a[i] != a[i] ? a[i] : 0); return 1;
    case NETCL_OP_EXP: for (int64_t i = 0; i < n; i++) o[i] = expf(a[i]); return 1;
    case NETCL_OP_SQRT: for (int64_t i = 0; i < n; i++) o[i] = sqrtf(a[i]); return 1;
    default: return 0;
    }
}

typedef struct {
    netcl_op op;
    const nc_desc *out, *a, *b;
    double s;
    int reversed;
    nc_iter it;
} ew_ctx;

static void unary_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    ew_ctx *c = vctx;
    if (c->a->dtype == NETCL_DTYPE_FLOAT32 && step[0] == 1 && step[1] == 1 &&
        unary_f32_fast(c->op, (float *)c->out->buf + off[0], (const float *)c->a->buf + off[1], n))
        return;
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK;
        if (int_like(c->a->dtype)) {
            int64_t t[BLK];
            load_i64(c->a->buf, c->a->dtype, off[1] + j0 * step[1], step[1], m, t);
            for (int64_t j = 0; j < m; j++) t[j] = unary_i(c->op, t[j]);
            store_i64(c->out->buf, c->out->dtype, off[0] + j0 * step[0], step[0], m, t);
        } else {
            double t[BLK];
            load_f64(c->a->buf, c->a->dtype, off[1] + j0 * step[1], step[1], m, t);
            for (int64_t j = 0; j < m; j++) t[j] = unary_f(c->op, t[j]);
            store_f64(c->out->buf, c->out->dtype, off[0] + j0 * step[0], step[0], m, t);
        }
    }
}

static void unary_range(void *vctx, int64_t start, int64_t end)
{
    ew_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, unary_row, c);
}

netcl_status nc_cpu_unary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2)
{
    (void)dev; (void)p1; (void)p2;
    if (int_like(a->dtype) && op != NETCL_OP_NEG && op != NETCL_OP_ABS && op != NETCL_OP_RELU)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu: %s needs a floating dtype, got %s", netcl_op_name(op), netcl_dtype_name(a->dtype));
    ew_ctx c = {op, out, a, NULL, 0, 0, {0}};
    const nc_desc *ops[2] = {out, a};
    nc_iter_init(&c.it, 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, unary_range, &c);
    return NETCL_OK;
}

/* ---- binary ------------------------------------------------------------------------- */

static double binary_f(netcl_op op, double x, double y)
{
    switch (op) {
    case NETCL_OP_ADD: return x + y;
    case NETCL_OP_SUB: return x - y;
    case NETCL_OP_MUL: return x * y;
    case NETCL_OP_DIV: return x / y;
    case NETCL_OP_POW: return pow(x, y);
    case NETCL_OP_MAXIMUM: return (x != x || y != y) ? x + y : (x > y ? x : y);
    case NETCL_OP_MINIMUM: return (x != x || y != y) ? x + y : (x < y ? x : y);
    case NETCL_OP_EQ: return x == y;
    case NETCL_OP_NE: return x != y;
    case NETCL_OP_LT: return x < y;
    case NETCL_OP_LE: return x <= y;
    case NETCL_OP_GT: return x > y;
    case NETCL_OP_GE: return x >= y;
    default: return 0;
    }
}

static int64_t binary_i(netcl_op op, int64_t x, int64_t y)
{
    switch (op) {
    case NETCL_OP_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
    case NETCL_OP_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
    case NETCL_OP_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
    case NETCL_OP_DIV: return y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x / y;
    case NETCL_OP_MAXIMUM: return x > y ? x : y;
    case NETCL_OP_MINIMUM: return x < y ? x : y;
    case NETCL_OP_EQ: return x == y;
    case NETCL_OP_NE: return x != y;
    case NETCL_OP_LT: return x < y;
    case NETCL_OP_LE: return x <= y;
    case NETCL_OP_GT: return x > y;
    case NETCL_OP_GE: return x >= y;
    default: return 0;
    }
}

static int binary_f32_fast(netcl_op op, float *o, const float *a, const float *b, int64_t n)
{
    switch (op) {
    case NETCL_OP_ADD: for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i]; return 1;
    case NETCL_OP_SUB: for (int64_t i = 0; i < n; i++) o[i] = a[i] - b[i]; return 1;
    case NETCL_OP_MUL: for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i]; return 1;
    case NETCL_OP_DIV: for (int64_t i = 0; i < n; i++) o[i] = a[i] / b[i]; return 1;
    default: return 0;
    }
}

static int scalar_f32_fast(netcl_op op, float *o, const float *a, float s, int rev, int64_t n)
{
    switch (op) {
    case NETCL_OP_ADD: for (int64_t i = 0; i < n; i++) o[i] = a[i] + s; return 1;
    case NETCL_OP_MUL: for (int64_t i = 0; i < n; i++) o[i] = a[i] * s; return 1;
    case NETCL_OP_SUB:
        if (rev) for (int64_t i = 0; i < n; i++) o[i] = s - a[i];
        else for (int64_t i = 0; i < n; i++) o[i] = a[i] - s;
        return 1;
    case NETCL_OP_DIV:
        if (rev) for (int64_t i = 0; i < n; i++) o[i] = s / a[i];
        else for (int64_t i = 0; i < n; i++) o[i] = a[i] / s;
        return 1;
    default: return 0;
    }
}

static void binary_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    ew_ctx *c = vctx;
    netcl_dtype dt = c->a->dtype;
    int scalar = c->b == NULL;
    if (dt == NETCL_DTYPE_FLOAT32 && c->out->dtype == dt && step[0] == 1 && step[1] == 1) {
        float *o = (float *)c->out->buf + off[0];
        const float *a = (const float *)c->a->buf + off[1];
        if (scalar ? scalar_f32_fast(c->op, o, a, (float)c->s, c->reversed, n)
                   : (step[2] == 1 && binary_f32_fast(c->op, o, a, (const float *)c->b->buf + off[2], n)))
            return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK;
        if (int_like(dt)) {
            int64_t x[BLK], y[BLK], s = (int64_t)c->s;
            load_i64(c->a->buf, dt, off[1] + j0 * step[1], step[1], m, x);
            if (!scalar) load_i64(c->b->buf, dt, off[2] + j0 * step[2], step[2], m, y);
            for (int64_t j = 0; j < m; j++)
                x[j] = scalar ? (c->reversed ? binary_i(c->op, s, x[j]) : binary_i(c->op, x[j], s)) : binary_i(c->op, x[j], y[j]);
            store_i64(c->out->buf, c->out->dtype, off[0] + j0 * step[0], step[0], m, x);
        } else {
            double x[BLK], y[BLK];
            load_f64(c->a->buf, dt, off[1] + j0 * step[1], step[1], m, x);
            if (!scalar) load_f64(c->b->buf, dt, off[2] + j0 * step[2], step[2], m, y);
            for (int64_t j = 0; j < m; j++)
                x[j] = scalar ? (c->reversed ? binary_f(c->op, c->s, x[j]) : binary_f(c->op, x[j], c->s)) : binary_f(c->op, x[j], y[j]);
            store_f64(c->out->buf, c->out->dtype, off[0] + j0 * step[0], step[0], m, x);
        }
    }
}

static void binary_range(void *vctx, int64_t start, int64_t end)
{
    ew_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, binary_row, c);
}

netcl_status nc_cpu_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b, double s, int reversed)
{
    (void)dev;
    ew_ctx c = {op, out, a, b, s, reversed, {0}};
    const nc_desc *ops[3] = {out, a, b};
    nc_iter_init(&c.it, b ? 3 : 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, binary_range, &c);
    return NETCL_OK;
}
