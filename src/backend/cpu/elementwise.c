/* elementwise.c — the CPU elementwise family: copy/cast, fill, range, where,
 * unary and binary ops. The arithmetic ones run on blocks in their compute
 * type (float for float32/float16/bfloat16, double for float64, int64 with
 * wrapping for integers and bool): strided operands are gathered into
 * BLK-element scratch, contiguous float32 operands are used in place, and
 * both run the same block kernels, so the layout never changes a result.
 * Block kernels switch on the op outside their loops. */
#include "cpu.h"
#include "base/elementwise_ops.h"
#include <tgmath.h>
#include <string.h>

#define BLK 256
#define GRAIN 32768

typedef enum { CT_FLOAT, CT_DOUBLE, CT_INT } ctype;

static ctype compute_type(netcl_dtype dt)
{
    if (dt == NETCL_DTYPE_FLOAT64) return CT_DOUBLE;
    return nc_dtype_is_float(dt) ? CT_FLOAT : CT_INT;
}

/* ---- block kernels -------------------------------------------------------------
 * One definition per compute type; the op switch sits outside each loop. */

/* The ops' formulas come from their single definition
 * (src/base/elementwise_ops.h), expanded into each block kernel's switch:
 * a and b are the operands, p1 and p2 the parameters, K(c) a constant of
 * the compute type T; float ops use type-generic math (<tgmath.h>). */
#define I64 int64_t
#define U64 uint64_t
#define K(c) ((T)(c))

#define UNARY_CASE(NAME, name, FLOAT, INT, GRAD) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T a = x[i]; (void)a; o[i] = (FLOAT); } break;
#define GRAD_CASE(NAME, name, FLOAT, INT, GRAD) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T g = dy[i], a = x[i], y = yv[i]; (void)g; (void)a; (void)y; o[i] = (GRAD); } break;
#define BINARY_CASE(NAME, name, FLOAT, INT, GRAD_A, GRAD_B) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; o[i] = (FLOAT); } break;
#define COMPARE_CASE(NAME, name, EXPR) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; o[i] = (EXPR); } break;
#define INT_UNARY_CASE(NAME, name, FLOAT, INT, GRAD) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T a = x[i]; (void)a; o[i] = (INT); } break;
#define INT_BINARY_CASE(NAME, name, FLOAT, INT, GRAD_A, GRAD_B) \
    case NETCL_OP_##NAME: for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; (void)a; (void)b; o[i] = (INT); } break;

#define DEFINE_UNARY(NAME, T_, CASE)                                                           \
    static void NAME(netcl_op op, T_ *o, const T_ *x, int64_t n, T_ p1, T_ p2)                 \
    {                                                                                          \
        typedef T_ T;                                                                          \
        (void)p1; (void)p2;                                                                    \
        switch (op) {                                                                          \
        NC_UNARY_OPS(CASE)                                                                     \
        default: for (int64_t i = 0; i < n; i++) o[i] = 0; break;                              \
        }                                                                                      \
    }
/* gradient: o = the input's gradient from dy (the output's), x and the output yv */
#define DEFINE_UNARY_GRAD(NAME, T_)                                                            \
    static void NAME(netcl_op op, T_ *o, const T_ *dy, const T_ *x, const T_ *yv, int64_t n, T_ p1, T_ p2) \
    {                                                                                          \
        typedef T_ T;                                                                          \
        (void)p1; (void)p2;                                                                    \
        switch (op) {                                                                          \
        NC_UNARY_OPS(GRAD_CASE)                                                                \
        default: for (int64_t i = 0; i < n; i++) o[i] = 0; break;                              \
        }                                                                                      \
    }
#define BINARY_GRAD_CASE(NAME, name, FLOAT, INT, GRAD_A, GRAD_B)                                  \
    case NETCL_OP_##NAME:                                                                      \
        if (which == 0) for (int64_t i = 0; i < n; i++) { T g = dy[i], a = x[i], b = y[i]; (void)a; (void)b; o[i] = (GRAD_A); } \
        else for (int64_t i = 0; i < n; i++) { T g = dy[i], a = x[i], b = y[i]; (void)a; (void)b; o[i] = (GRAD_B); } \
        break;
/* gradient of operand `which` (0: a, 1: b) from dy and the operands x, y */
#define DEFINE_BINARY_GRAD(NAME, T_)                                                           \
    static void NAME(netcl_op op, int which, T_ *o, const T_ *dy, const T_ *x, const T_ *y, int64_t n) \
    {                                                                                          \
        typedef T_ T;                                                                          \
        switch (op) {                                                                          \
        NC_BINARY_OPS(BINARY_GRAD_CASE)                                                        \
        default: for (int64_t i = 0; i < n; i++) o[i] = 0; break;                              \
        }                                                                                      \
    }
#define DEFINE_BINARY(NAME, T_, OPS, CASE)                                                     \
    static void NAME(netcl_op op, T_ *o, const T_ *x, const T_ *y, int64_t n)                  \
    {                                                                                          \
        typedef T_ T;                                                                          \
        switch (op) {                                                                          \
        OPS(CASE)                                                                              \
        default: for (int64_t i = 0; i < n; i++) o[i] = 0; break;                              \
        }                                                                                      \
    }
#define DEFINE_COMPARE(NAME, T_)                                                               \
    static void NAME(netcl_op op, uint8_t *o, const T_ *x, const T_ *y, int64_t n)             \
    {                                                                                          \
        typedef T_ T;                                                                          \
        switch (op) {                                                                          \
        NC_COMPARE_OPS(COMPARE_CASE)                                                           \
        default: for (int64_t i = 0; i < n; i++) o[i] = 0; break;                              \
        }                                                                                      \
    }

DEFINE_UNARY(unary_f32, float, UNARY_CASE)
DEFINE_UNARY(unary_f64, double, UNARY_CASE)
DEFINE_UNARY(unary_i64, int64_t, INT_UNARY_CASE)
DEFINE_UNARY_GRAD(unary_grad_f32, float)
DEFINE_UNARY_GRAD(unary_grad_f64, double)
DEFINE_BINARY(binary_f32, float, NC_BINARY_OPS, BINARY_CASE)
DEFINE_BINARY(binary_f64, double, NC_BINARY_OPS, BINARY_CASE)
DEFINE_BINARY(binary_i64, int64_t, NC_BINARY_OPS, INT_BINARY_CASE)
DEFINE_BINARY_GRAD(binary_grad_f32, float)
DEFINE_BINARY_GRAD(binary_grad_f64, double)
DEFINE_COMPARE(compare_f32, float)
DEFINE_COMPARE(compare_f64, double)
DEFINE_COMPARE(compare_i64, int64_t)

static int is_compare(netcl_op op) { return nc_op_is_predicate(op); }

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
    /* int <-> int stays exact in int64; float32 <-> float16/bfloat16 goes
     * through float (a single rounding); everything else through double */
    ctype cd = compute_type(dd), cs = compute_type(sd);
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK, so = off[1] + j0 * step[1], dof = off[0] + j0 * step[0];
        if (cd == CT_INT && cs == CT_INT) {
            int64_t t[BLK];
            nc_cpu_gather_i64(c->src->buf, sd, so, step[1], m, t);
            nc_cpu_scatter_i64(c->dst->buf, dd, dof, step[0], m, t);
        } else if (cd == CT_FLOAT && cs == CT_FLOAT) {
            float t[BLK];
            nc_cpu_gather_f32(c->src->buf, sd, so, step[1], m, t);
            nc_cpu_scatter_f32(c->dst->buf, dd, dof, step[0], m, t);
        } else if (cs == CT_INT && dd != NETCL_DTYPE_FLOAT64) {
            /* int64 -> float32/16 rounds once, straight from the integer */
            float t[BLK];
            for (int64_t k = 0; k < m; k++) t[k] = (float)nc_cpu_load_i64(c->src->buf, sd, so + k * step[1]);
            nc_cpu_scatter_f32(c->dst->buf, dd, dof, step[0], m, t);
        } else {
            double t[BLK];
            nc_cpu_gather_f64(c->src->buf, sd, so, step[1], m, t);
            nc_cpu_scatter_f64(c->dst->buf, dd, dof, step[0], m, t);
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
    } else if (c->es == 1 && step[0] == 1) {
        memset(d, c->raw[0], (size_t)n);
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

/* ---- range ---------------------------------------------------------------------------- */

typedef struct { const nc_desc *d; double start, step; } range_ctx;

static void range_part(void *vctx, int64_t s, int64_t e)
{
    range_ctx *c = vctx;
    for (int64_t i = s; i < e; i++) nc_store_double(c->d->buf, c->d->dtype, c->d->offset + i, c->start + (double)i * c->step);
}

netcl_status nc_cpu_range(netcl_device *dev, const nc_desc *d, double start, double step)
{
    (void)dev;
    range_ctx c = {d, start, step};
    nc_parallel_for(d->sizes[0], 32768, range_part, &c);
    return NETCL_OK;
}

/* ---- where ---------------------------------------------------------------------------
 * out = cond ? a : b moves raw element bytes (a, b and out share a dtype),
 * so it needs no compute type. */

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

/* ---- unary -------------------------------------------------------------------------- */

static int64_t scalar_to_i64(double s)
{
    if (s != s) return 0;
    if (s <= -9223372036854775808.0) return INT64_MIN;
    if (s >= 9223372036854775807.0) return INT64_MAX;
    return (int64_t)s;
}

typedef struct {
    netcl_op op;
    const nc_desc *out, *a, *b;
    ctype ct;
    float sf;            /* the scalar operand in each compute type */
    double sd;
    int64_t si;
    int reversed;
    double p1, p2;       /* unary op parameters */
    int64_t ip1, ip2;
    nc_iter it;
} ew_ctx;

static void unary_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    ew_ctx *c = vctx;
    netcl_dtype dt = c->a->dtype, od = c->out->dtype;
    if (dt == NETCL_DTYPE_FLOAT32 && od == dt && step[0] == 1 && step[1] == 1) {
        unary_f32(c->op, (float *)c->out->buf + off[0], (const float *)c->a->buf + off[1], n, (float)c->p1, (float)c->p2);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK, ao = off[1] + j0 * step[1], oo = off[0] + j0 * step[0];
        if (c->ct == CT_FLOAT) {
            float t[BLK];
            nc_cpu_gather_f32(c->a->buf, dt, ao, step[1], m, t);
            unary_f32(c->op, t, t, m, (float)c->p1, (float)c->p2);
            nc_cpu_scatter_f32(c->out->buf, od, oo, step[0], m, t);
        } else if (c->ct == CT_DOUBLE) {
            double t[BLK];
            nc_cpu_gather_f64(c->a->buf, dt, ao, step[1], m, t);
            unary_f64(c->op, t, t, m, c->p1, c->p2);
            nc_cpu_scatter_f64(c->out->buf, od, oo, step[0], m, t);
        } else {
            int64_t t[BLK];
            nc_cpu_gather_i64(c->a->buf, dt, ao, step[1], m, t);
            unary_i64(c->op, t, t, m, c->ip1, c->ip2);
            nc_cpu_scatter_i64(c->out->buf, od, oo, step[0], m, t);
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
    (void)dev;
    if (op < NETCL_OP_NEG || op >= NETCL_OP_UNARY_END)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu: %s is not a unary op", netcl_op_name(op));
    ew_ctx c = {op, out, a, NULL, compute_type(a->dtype), 0, 0, 0, 0, p1, p2, scalar_to_i64(p1), scalar_to_i64(p2), {0}};
    if (c.ct == CT_INT && !nc_op_int_ok(op))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu: %s needs a floating dtype, got %s", netcl_op_name(op), netcl_dtype_name(a->dtype));
    const nc_desc *ops[2] = {out, a};
    nc_iter_init(&c.it, 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, unary_range, &c);
    return NETCL_OK;
}

/* ---- unary gradients ---------------------------------------------------------------
 * gin = the input's gradient of a unary op from g (the output's), the
 * input x and the output y, by the op's GRAD formula; all four share one
 * float dtype, any strides. */

typedef struct {
    netcl_op op;
    const nc_desc *gin, *g, *x, *y;
    double p1, p2;
    nc_iter it;
} grad_ctx;

static void unary_grad_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    grad_ctx *c = vctx;
    netcl_dtype dt = c->gin->dtype;
    if (dt == NETCL_DTYPE_FLOAT32 && c->g->dtype == dt && c->x->dtype == dt && c->y->dtype == dt && step[0] == 1 &&
        step[1] == 1 && step[2] == 1 && step[3] == 1) {   /* contiguous float32: no staging copies */
        unary_grad_f32(c->op, (float *)c->gin->buf + off[0], (const float *)c->g->buf + off[1],
                       (const float *)c->x->buf + off[2], (const float *)c->y->buf + off[3], n, (float)c->p1, (float)c->p2);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK, o[4];
        for (int k = 0; k < 4; k++) o[k] = off[k] + j0 * step[k];
        if (dt == NETCL_DTYPE_FLOAT64) {
            double t[3][BLK];
            nc_cpu_gather_f64(c->g->buf, dt, o[1], step[1], m, t[0]);
            nc_cpu_gather_f64(c->x->buf, dt, o[2], step[2], m, t[1]);
            nc_cpu_gather_f64(c->y->buf, dt, o[3], step[3], m, t[2]);
            unary_grad_f64(c->op, t[0], t[0], t[1], t[2], m, c->p1, c->p2);
            nc_cpu_scatter_f64(c->gin->buf, dt, o[0], step[0], m, t[0]);
        } else {
            float t[3][BLK];
            nc_cpu_gather_f32(c->g->buf, dt, o[1], step[1], m, t[0]);
            nc_cpu_gather_f32(c->x->buf, dt, o[2], step[2], m, t[1]);
            nc_cpu_gather_f32(c->y->buf, dt, o[3], step[3], m, t[2]);
            unary_grad_f32(c->op, t[0], t[0], t[1], t[2], m, (float)c->p1, (float)c->p2);
            nc_cpu_scatter_f32(c->gin->buf, dt, o[0], step[0], m, t[0]);
        }
    }
}

static void unary_grad_range(void *vctx, int64_t start, int64_t end)
{
    grad_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, unary_grad_row, c);
}

netcl_status nc_cpu_unary_grad(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                               const nc_desc *y, double p1, double p2)
{
    (void)dev;
    grad_ctx c = {op, gin, g, x, y, p1, p2, {0}};
    const nc_desc *ops[4] = {gin, g, x, y};
    nc_iter_init(&c.it, 4, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, unary_grad_range, &c);
    return NETCL_OK;
}

/* ---- binary gradients --------------------------------------------------------------
 * out = the gradient of operand `which` of a binary op from g and the
 * operands a and b (a or b NULL: the scalar sa or sb), by the op's
 * GRAD_A / GRAD_B formula; one float dtype, all of out's shape, any
 * strides (broadcast operands with stride 0). */

typedef struct {
    netcl_op op;
    int which;
    const nc_desc *out, *g, *a, *b;
    double sa, sb;
    nc_iter it;
} bgrad_ctx;

static void binary_grad_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    bgrad_ctx *c = vctx;
    netcl_dtype dt = c->out->dtype;
    int ka = 2, kb = c->a ? 3 : 2;   /* the operands' slots in the iterator */
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK;
        if (dt == NETCL_DTYPE_FLOAT64) {
            double t[3][BLK];
            nc_cpu_gather_f64(c->g->buf, dt, off[1] + j0 * step[1], step[1], m, t[0]);
            if (c->a) nc_cpu_gather_f64(c->a->buf, dt, off[ka] + j0 * step[ka], step[ka], m, t[1]);
            else for (int64_t k = 0; k < m; k++) t[1][k] = c->sa;
            if (c->b) nc_cpu_gather_f64(c->b->buf, dt, off[kb] + j0 * step[kb], step[kb], m, t[2]);
            else for (int64_t k = 0; k < m; k++) t[2][k] = c->sb;
            binary_grad_f64(c->op, c->which, t[0], t[0], t[1], t[2], m);
            nc_cpu_scatter_f64(c->out->buf, dt, off[0] + j0 * step[0], step[0], m, t[0]);
        } else {
            float t[3][BLK];
            nc_cpu_gather_f32(c->g->buf, dt, off[1] + j0 * step[1], step[1], m, t[0]);
            if (c->a) nc_cpu_gather_f32(c->a->buf, dt, off[ka] + j0 * step[ka], step[ka], m, t[1]);
            else for (int64_t k = 0; k < m; k++) t[1][k] = (float)c->sa;
            if (c->b) nc_cpu_gather_f32(c->b->buf, dt, off[kb] + j0 * step[kb], step[kb], m, t[2]);
            else for (int64_t k = 0; k < m; k++) t[2][k] = (float)c->sb;
            binary_grad_f32(c->op, c->which, t[0], t[0], t[1], t[2], m);
            nc_cpu_scatter_f32(c->out->buf, dt, off[0] + j0 * step[0], step[0], m, t[0]);
        }
    }
}

static void binary_grad_range(void *vctx, int64_t start, int64_t end)
{
    bgrad_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, binary_grad_row, c);
}

netcl_status nc_cpu_binary_grad(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                                const nc_desc *a, const nc_desc *b, double sa, double sb)
{
    (void)dev;
    bgrad_ctx c = {op, which, out, g, a, b, sa, sb, {0}};
    const nc_desc *ops[4] = {out, g, a ? a : b, b};
    nc_iter_init(&c.it, a && b ? 4 : 3, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, binary_grad_range, &c);
    return NETCL_OK;
}

/* ---- fused chains ---------------------------------------------------------------------
 * One pass over blocks of FB elements: every node of the program computes
 * its block with the ops' block kernels in the compute type (so a float32
 * chain gives the bits its ops give one by one), then the outputs are
 * stored. The iterator's operands: the outputs, then the inputs. */
#define FB 128

static float round16(int dtype, float v)
{
    return dtype == NETCL_DTYPE_BFLOAT16 ? nc_bf16_to_float(nc_float_to_bf16(v)) : nc_half_to_float(nc_float_to_half(v));
}

#define DEFINE_FUSED_BLOCK(NAME, T, GATHER, SCATTER, UNARY, BINARY, COMPARE, UGRAD, BGRAD)                 \
    static void NAME(const nc_fused *f, const int64_t *off, const int64_t *step, int64_t m)              \
    {                                                                                                   \
        T v[NC_FUSE_MAX_NODES][FB];                                                                     \
        uint8_t mask[FB];                                                                               \
        for (int k = 0; k < f->nnodes; k++) {                                                           \
            const nc_fuse_node *nd = &f->nodes[k];                                                      \
            T *o = v[k];                                                                                \
            const T *x = v[nd->arg[0] < 0 ? k : nd->arg[0]], *y = v[nd->arg[1] < 0 ? k : nd->arg[1]];    \
            const T *z = v[nd->arg[2] < 0 ? k : nd->arg[2]];                                            \
            switch (nd->kind) {                                                                         \
            case NC_FUSE_INPUT: {                                                                       \
                int q = f->noutputs + nd->input;                                                        \
                const nc_desc *d = f->inputs[nd->input];                                                \
                GATHER(d->buf, d->dtype, off[q], step[q], m, o);                                        \
                break;                                                                                  \
            }                                                                                           \
            case NC_FUSE_SCALAR: for (int64_t i = 0; i < m; i++) o[i] = (T)nd->p1; break;               \
            case NC_FUSE_UNARY: UNARY(nd->op, o, x, m, (T)nd->p1, (T)nd->p2); break;                    \
            case NC_FUSE_BINARY:                                                                        \
                if (nc_op_is_predicate(nd->op)) {                                                       \
                    COMPARE(nd->op, mask, x, y, m);                                                     \
                    for (int64_t i = 0; i < m; i++) o[i] = mask[i];                                     \
                } else {                                                                                \
                    BINARY(nd->op, o, x, y, m);                                                         \
                }                                                                                       \
                break;                                                                                  \
            case NC_FUSE_WHERE: for (int64_t i = 0; i < m; i++) o[i] = x[i] != 0 ? y[i] : z[i]; break;  \
            case NC_FUSE_UNARY_GRAD: UGRAD(nd->op, o, x, y, z, m, (T)nd->p1, (T)nd->p2); break;         \
            case NC_FUSE_BINARY_GRAD: BGRAD(nd->op, nd->which, o, x, y, z, m); break;                   \
            case NC_FUSE_ROUND: for (int64_t i = 0; i < m; i++) o[i] = (T)round16(nd->which, (float)x[i]); break; \
            }                                                                                           \
        }                                                                                               \
        for (int k = 0; k < f->noutputs; k++)                                                           \
            SCATTER(f->outputs[k]->buf, f->outputs[k]->dtype, off[k], step[k], m, v[f->out_node[k]]);   \
    }

DEFINE_FUSED_BLOCK(fused_block_f32, float, nc_cpu_gather_f32, nc_cpu_scatter_f32, unary_f32, binary_f32, compare_f32,
                   unary_grad_f32, binary_grad_f32)
DEFINE_FUSED_BLOCK(fused_block_f64, double, nc_cpu_gather_f64, nc_cpu_scatter_f64, unary_f64, binary_f64, compare_f64,
                   unary_grad_f64, binary_grad_f64)

typedef struct { const nc_fused *f; nc_iter it; } fused_ctx;

static void fused_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    fused_ctx *c = vctx;
    int nops = c->f->noutputs + c->f->ninputs;
    for (int64_t j0 = 0; j0 < n; j0 += FB) {
        int64_t m = n - j0 < FB ? n - j0 : FB, o[NC_ITER_OPS];
        for (int k = 0; k < nops; k++) o[k] = off[k] + j0 * step[k];
        if (c->f->compute == NETCL_DTYPE_FLOAT64) fused_block_f64(c->f, o, step, m);
        else fused_block_f32(c->f, o, step, m);
    }
}

static void fused_range(void *vctx, int64_t start, int64_t end)
{
    fused_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, fused_row, c);
}

netcl_status nc_cpu_fused(netcl_device *dev, const nc_fused *f)
{
    (void)dev;
    int nops = f->noutputs + f->ninputs;
    if (f->nnodes > NC_FUSE_MAX_NODES || nops > NC_FUSE_MAX_OPERANDS || f->noutputs < 1)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu: a fused program of %d nodes and %d operands (at most %d and %d)",
                       f->nnodes, nops, NC_FUSE_MAX_NODES, NC_FUSE_MAX_OPERANDS);
    fused_ctx c = {f, {0}};
    const nc_desc *ops[NC_ITER_OPS];
    for (int k = 0; k < f->noutputs; k++) ops[k] = f->outputs[k];
    for (int k = 0; k < f->ninputs; k++) ops[f->noutputs + k] = f->inputs[k];
    nc_iter_init(&c.it, nops, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, fused_range, &c);
    return NETCL_OK;
}

/* ---- binary ------------------------------------------------------------------------- */

/* Float-type rows: x op y (or x op s, s op x) into o, on blocks of at most
 * BLK. xs/ys point at gathered scratch or straight into contiguous float32. */
static void binary_block_f32(const ew_ctx *c, float *o, const float *x, const float *y, uint8_t *ob, int64_t m)
{
    float sblk[BLK];
    if (!y) { /* the scalar as a block, so scalar ops share the vector loops */
        for (int64_t j = 0; j < m; j++) sblk[j] = c->sf;
        y = sblk;
        if (c->reversed) { y = x; x = sblk; }
    }
    if (ob) compare_f32(c->op, ob, x, y, m);
    else binary_f32(c->op, o, x, y, m);
}

static void binary_block_f64(const ew_ctx *c, double *o, const double *x, const double *y, uint8_t *ob, int64_t m)
{
    double sblk[BLK];
    if (!y) {
        for (int64_t j = 0; j < m; j++) sblk[j] = c->sd;
        y = sblk;
        if (c->reversed) { y = x; x = sblk; }
    }
    if (ob) compare_f64(c->op, ob, x, y, m);
    else binary_f64(c->op, o, x, y, m);
}

static void binary_block_i64(const ew_ctx *c, int64_t *o, const int64_t *x, const int64_t *y, uint8_t *ob, int64_t m)
{
    int64_t sblk[BLK];
    if (!y) {
        for (int64_t j = 0; j < m; j++) sblk[j] = c->si;
        y = sblk;
        if (c->reversed) { y = x; x = sblk; }
    }
    if (ob) compare_i64(c->op, ob, x, y, m);
    else binary_i64(c->op, o, x, y, m);
}

/* Contiguous float32 with a float32 output: no gather at all. */
static int binary_row_fast(ew_ctx *c, const int64_t *off, const int64_t *step, int64_t n)
{
    if (c->a->dtype != NETCL_DTYPE_FLOAT32 || c->out->dtype != NETCL_DTYPE_FLOAT32 ||
        step[0] != 1 || step[1] != 1 || (c->b && step[2] != 1))
        return 0;
    float *o = (float *)c->out->buf + off[0];
    const float *a = (const float *)c->a->buf + off[1];
    if (c->b) {
        binary_f32(c->op, o, a, (const float *)c->b->buf + off[2], n);
        return 1;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLK)
        binary_block_f32(c, o + j0, a + j0, NULL, NULL, n - j0 < BLK ? n - j0 : BLK);
    return 1;
}

static void binary_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    ew_ctx *c = vctx;
    if (binary_row_fast(c, off, step, n)) return;
    netcl_dtype dt = c->a->dtype, od = c->out->dtype;
    int cmp = is_compare(c->op);
    uint8_t ob[BLK];
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK, ao = off[1] + j0 * step[1], oo = off[0] + j0 * step[0];
        int64_t bo = c->b ? off[2] + j0 * step[2] : 0;
        if (c->ct == CT_FLOAT) {
            float x[BLK], y[BLK];
            nc_cpu_gather_f32(c->a->buf, dt, ao, step[1], m, x);
            if (c->b) nc_cpu_gather_f32(c->b->buf, dt, bo, step[2], m, y);
            binary_block_f32(c, x, x, c->b ? y : NULL, cmp ? ob : NULL, m);
            if (!cmp) nc_cpu_scatter_f32(c->out->buf, od, oo, step[0], m, x);
        } else if (c->ct == CT_DOUBLE) {
            double x[BLK], y[BLK];
            nc_cpu_gather_f64(c->a->buf, dt, ao, step[1], m, x);
            if (c->b) nc_cpu_gather_f64(c->b->buf, dt, bo, step[2], m, y);
            binary_block_f64(c, x, x, c->b ? y : NULL, cmp ? ob : NULL, m);
            if (!cmp) nc_cpu_scatter_f64(c->out->buf, od, oo, step[0], m, x);
        } else {
            int64_t x[BLK], y[BLK];
            nc_cpu_gather_i64(c->a->buf, dt, ao, step[1], m, x);
            if (c->b) nc_cpu_gather_i64(c->b->buf, dt, bo, step[2], m, y);
            binary_block_i64(c, x, x, c->b ? y : NULL, cmp ? ob : NULL, m);
            if (!cmp) nc_cpu_scatter_i64(c->out->buf, od, oo, step[0], m, x);
        }
        if (cmp) nc_cpu_scatter_u8(c->out->buf, od, oo, step[0], m, ob);
    }
}

static void binary_range(void *vctx, int64_t start, int64_t end)
{
    ew_ctx *c = vctx;
    nc_iter_range(&c->it, start, end, binary_row, c);
}

/* The scalar in the integer compute type: saturating, NaN -> 0 (no UB). */

netcl_status nc_cpu_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b, double s, int reversed)
{
    (void)dev;
    if (op < NETCL_OP_ADD || op >= NETCL_OP_BINARY_END)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu: %s is not a binary op", netcl_op_name(op));
    /* the scalar meets the tensor in its compute type (as the GPU kernels do) */
    ew_ctx c = {op, out, a, b, compute_type(a->dtype), (float)s, s, scalar_to_i64(s), reversed, 0, 0, 0, 0, {0}};
    const nc_desc *ops[3] = {out, a, b};
    nc_iter_init(&c.it, b ? 3 : 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), GRAIN, binary_range, &c);
    return NETCL_OK;
}
