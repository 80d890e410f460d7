/* reduce.c — CPU reductions over the last dim of a strided input.
 * Invariant: a result depends only on the values, never on the layout or the
 * thread count. Float sums/products accumulate in double over 8 lanes (lane =
 * index mod 8) within fixed RBLK-element spans, combined in a fixed tree, span
 * partials merged in order (float32 sums add each BLK chunk in float lanes
 * first: chunk_sum_f32); integers wrap in uint64. Ties pick the first
 * index; the first NaN wins max/min. */
#include "cpu.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLK 256           /* gather block; a multiple of the 8 lanes */
#define RBLK 65536        /* fixed span of a row (a multiple of BLK) */
#define LANES 8

typedef struct { double v; int64_t iv, idx; } acc_t;

typedef struct {
    netcl_op op;
    const nc_desc *out, *idx, *a;
    int isint, arith;    /* integer input; SUM/MEAN/PROD (else an extremum) */
    int64_t rlen, rstep;
    nc_iter it;          /* over the outputs: operand 0 out, 1 the row start in a */
    acc_t *partials;     /* long-row mode: one per span */
    int64_t row_off;
} red_ctx;

static int is_max(netcl_op op) { return op == NETCL_OP_MAX || op == NETCL_OP_ARGMAX; }

static acc_t acc_init(const red_ctx *c)
{
    acc_t a = {c->op == NETCL_OP_PROD ? 1.0 : 0.0, c->op == NETCL_OP_PROD ? 1 : 0, -1};
    return a;
}

static double combine_lanes(const double *l, int prod)
{
    if (prod) return ((l[0] * l[1]) * (l[2] * l[3])) * ((l[4] * l[5]) * (l[6] * l[7]));
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* Folds partial b (a later span, or the next element) into a. */
static void acc_merge(const red_ctx *c, acc_t *a, acc_t b)
{
    if (c->arith) {
        if (c->op == NETCL_OP_PROD) { a->v *= b.v; a->iv = (int64_t)((uint64_t)a->iv * (uint64_t)b.iv); }
        else { a->v += b.v; a->iv = (int64_t)((uint64_t)a->iv + (uint64_t)b.iv); }
        return;
    }
    if (b.idx < 0) return;
    int take;
    if (a->idx < 0) take = 1;
    else if (c->isint) take = is_max(c->op) ? b.iv > a->iv : b.iv < a->iv;
    else take = a->v == a->v && (b.v != b.v || (is_max(c->op) ? b.v > a->v : b.v < a->v));
    if (take) *a = b;
}

/* ---- one row span [from, to) of a row starting at element `off` ------------------ */

static void gather_row_f64(const nc_desc *a, int64_t off, int64_t step, int64_t n, double *t)
{
    if (a->dtype == NETCL_DTYPE_FLOAT32) {
        const float *p = (const float *)a->buf + off;
        for (int64_t j = 0; j < n; j++) t[j] = p[j * step];
    } else if (a->dtype == NETCL_DTYPE_FLOAT64) {
        const double *p = (const double *)a->buf + off;
        for (int64_t j = 0; j < n; j++) t[j] = p[j * step];
    } else {
        for (int64_t j = 0; j < n; j++) t[j] = nc_load_double(a->buf, a->dtype, off + j * step);
    }
}

/* Extremum of t[0..m) (indices base + j) folded into a. */
static void extremum_f64(const red_ctx *c, acc_t *a, const double *t, int64_t m, int64_t base)
{
    int mx = is_max(c->op);
    int64_t j = 0;
    if (a->idx < 0) { a->v = t[0]; a->idx = base; j = 1; }
    double best = a->v;
    int64_t bi = a->idx;
    for (; j < m && best == best; j++) {
        double x = t[j];
        if (x != x || (mx ? x > best : x < best)) { best = x; bi = base + j; }
    }
    a->v = best;
    a->idx = bi;
}

static void extremum_i64(const red_ctx *c, acc_t *a, const int64_t *t, int64_t m, int64_t base)
{
    int mx = is_max(c->op);
    int64_t j = 0;
    if (a->idx < 0) { a->iv = t[0]; a->idx = base; j = 1; }
    for (; j < m; j++)
        if (mx ? t[j] > a->iv : t[j] < a->iv) { a->iv = t[j]; a->idx = base + j; }
}

/* lanes[j % 8] += t[j]; in two 4-wide vectors so it vectorises at any -O */
typedef double v4d __attribute__((vector_size(32)));
static void lane_sum(double *lanes, const double *t, int64_t m)
{
    v4d l0, l1, x0, x1;
    memcpy(&l0, lanes, sizeof l0);
    memcpy(&l1, lanes + 4, sizeof l1);
    int64_t j = 0;
    for (; j + LANES <= m; j += LANES) {
        memcpy(&x0, t + j, sizeof x0);
        memcpy(&x1, t + j + 4, sizeof x1);
        l0 += x0;
        l1 += x1;
    }
    memcpy(lanes, &l0, sizeof l0);
    memcpy(lanes + 4, &l1, sizeof l1);
    for (; j < m; j++) lanes[j % LANES] += t[j];
}

/* float32 sums: each BLK-element chunk (chunks start at multiples of BLK from
 * the span start) is summed in 32 float lanes (lane = index mod 32, in
 * order), and the lanes fold as ((F[k] + F[k+8]) + (F[k+16] + F[k+24])) into
 * double lane k. Converting every float to double made the loop compute
 * bound, well below memory speed (measurements: docs/notes/kernels.md);
 * float adds run at memory speed, and a chunk's rounding error stays
 * within ~10 float eps of its absolute sum. Every float32 path
 * (contiguous, gathered, columns_sum) uses this arithmetic. */
#define FLANES 32
typedef float v4f __attribute__((vector_size(16)));

static void fold_f32(double *lanes, const float *f)
{
    for (int k = 0; k < LANES; k++)
        lanes[k] += (double)((f[k] + f[k + 8]) + (f[k + 16] + f[k + 24]));
}

/* one chunk p[0..m), m <= BLK; v4f vectors (native SSE) so it vectorises at
 * any -O: vector q holds lanes 4q..4q+3 */
static void chunk_sum_f32(double *lanes, const float *p, int64_t m)
{
    v4f a[FLANES / 4] = {{0}}, x;
    int64_t j = 0;
    for (; j + FLANES <= m; j += FLANES)
        for (int q = 0; q < FLANES / 4; q++) {
            memcpy(&x, p + j + 4 * q, sizeof x);
            a[q] += x;
        }
    float f[FLANES];
    memcpy(f, a, sizeof f);
    for (int64_t k = 0; j < m; j++, k++) f[k] += p[j];
    fold_f32(lanes, f);
}

static acc_t reduce_span(const red_ctx *c, int64_t off, int64_t from, int64_t to)
{
    acc_t acc = acc_init(c);
    int prod = c->op == NETCL_OP_PROD;
    double lanes[LANES];
    for (int l = 0; l < LANES; l++) lanes[l] = prod ? 1.0 : 0.0;
    for (int64_t i0 = from; i0 < to; i0 += BLK) {
        int64_t m = to - i0 < BLK ? to - i0 : BLK, eo = off + i0 * c->rstep;
        if (c->isint) {
            int64_t t[BLK];
            for (int64_t j = 0; j < m; j++) t[j] = nc_cpu_load_i64(c->a->buf, c->a->dtype, eo + j * c->rstep);
            if (!c->arith) { extremum_i64(c, &acc, t, m, i0); continue; }
            uint64_t v = (uint64_t)acc.iv;
            if (prod) for (int64_t j = 0; j < m; j++) v *= (uint64_t)t[j];
            else for (int64_t j = 0; j < m; j++) v += (uint64_t)t[j];
            acc.iv = (int64_t)v;
            continue;
        }
        if (c->a->dtype == NETCL_DTYPE_FLOAT32 && !prod && c->arith) {
            if (c->rstep == 1) {
                chunk_sum_f32(lanes, (const float *)c->a->buf + eo, m);
            } else {
                float t[BLK];
                nc_cpu_gather_f32(c->a->buf, c->a->dtype, eo, c->rstep, m, t);
                chunk_sum_f32(lanes, t, m);
            }
            continue;
        }
        double t[BLK];
        gather_row_f64(c->a, eo, c->rstep, m, t);
        if (!c->arith) { extremum_f64(c, &acc, t, m, i0); continue; }
        if (prod) {
            for (int64_t j = 0; j < m; j++) lanes[j % LANES] *= t[j];
        } else {
            lane_sum(lanes, t, m);
        }
    }
    if (c->arith && !c->isint) acc.v = combine_lanes(lanes, prod);
    return acc;
}

static acc_t reduce_row(const red_ctx *c, int64_t off)
{
    acc_t acc = acc_init(c);
    for (int64_t s = 0; s < c->rlen; s += RBLK)
        acc_merge(c, &acc, reduce_span(c, off, s, s + RBLK < c->rlen ? s + RBLK : c->rlen));
    return acc;
}

static void store_result(const red_ctx *c, int64_t o, acc_t acc)
{
    const nc_desc *out = c->out;
    switch (c->op) {
    case NETCL_OP_ARGMAX: case NETCL_OP_ARGMIN:
        ((int64_t *)out->buf)[out->offset + o] = acc.idx;
        return;
    case NETCL_OP_MEAN:
        nc_store_double(out->buf, out->dtype, out->offset + o, (c->isint ? (double)acc.iv : acc.v) / (double)c->rlen);
        return;
    default:
        if (c->isint) nc_cpu_store_i64(out->buf, out->dtype, out->offset + o, acc.iv);
        else nc_store_double(out->buf, out->dtype, out->offset + o, acc.v);
        if (c->idx) ((int64_t *)c->idx->buf)[c->idx->offset + o] = acc.idx;
    }
}

/* ---- many outputs -------------------------------------------------------------------
 * Rows whose elements are strided (rstep != 1) are reduced BLK outputs at a
 * time, walking the input row by row so reads are sequential; the per-output
 * lane arithmetic is exactly that of reduce_span. */
static void columns_store(const red_ctx *c, const int64_t *off, const int64_t *step, int64_t m, const double *total)
{
    for (int64_t j = 0; j < m; j++) {
        acc_t acc = {total[j], 0, -1};
        store_result(c, off[0] + j * step[0] - c->out->offset, acc);
    }
}

static void columns_sum(const red_ctx *c, const int64_t *off, const int64_t *step, int64_t m)
{
    int prod = c->op == NETCL_OP_PROD;
    double lanes[LANES][BLK], total[BLK], t[BLK];
    for (int64_t j = 0; j < m; j++) total[j] = prod ? 1.0 : 0.0;
    for (int64_t s = 0; s < c->rlen; s += RBLK) {
        int64_t e = s + RBLK < c->rlen ? s + RBLK : c->rlen;
        for (int l = 0; l < LANES; l++)
            for (int64_t j = 0; j < m; j++) lanes[l][j] = prod ? 1.0 : 0.0;
        for (int64_t i = s; i < e; i++) {
            double *ln = lanes[(i - s) % LANES];
            gather_row_f64(c->a, off[1] + i * c->rstep, step[1], m, t);
            if (prod) for (int64_t j = 0; j < m; j++) ln[j] *= t[j];
            else for (int64_t j = 0; j < m; j++) ln[j] += t[j];
        }
        for (int64_t j = 0; j < m; j++) {
            double l[LANES];
            for (int k = 0; k < LANES; k++) l[k] = lanes[k][j];
            total[j] = prod ? total[j] * combine_lanes(l, 1) : total[j] + combine_lanes(l, 0);
        }
    }
    columns_store(c, off, step, m, total);
}

/* The same for float32 sums: chunk_sum_f32's float lanes, per output. */
static void columns_sum_f32(const red_ctx *c, const int64_t *off, const int64_t *step, int64_t m)
{
    double lanes[LANES][BLK], total[BLK];
    float f[FLANES][BLK], t[BLK];
    for (int64_t j = 0; j < m; j++) total[j] = 0;
    for (int64_t s = 0; s < c->rlen; s += RBLK) {
        int64_t e = s + RBLK < c->rlen ? s + RBLK : c->rlen;
        memset(lanes, 0, sizeof lanes);
        for (int64_t i0 = s; i0 < e; i0 += BLK) {
            int64_t i1 = i0 + BLK < e ? i0 + BLK : e;
            /* only the m columns in use: a narrow block (m = 1..3) would
             * otherwise clear 32 KB per BLK rows */
            for (int k = 0; k < FLANES; k++) memset(f[k], 0, sizeof(float) * (size_t)m);
            for (int64_t i = i0; i < i1; i++) {
                float *fl = f[(i - i0) % FLANES];
                nc_cpu_gather_f32(c->a->buf, c->a->dtype, off[1] + i * c->rstep, step[1], m, t);
                for (int64_t j = 0; j < m; j++) fl[j] += t[j];
            }
            for (int k = 0; k < LANES; k++)
                for (int64_t j = 0; j < m; j++)
                    lanes[k][j] += (double)((f[k][j] + f[k + 8][j]) + (f[k + 16][j] + f[k + 24][j]));
        }
        for (int64_t j = 0; j < m; j++) {
            double l[LANES];
            for (int k = 0; k < LANES; k++) l[k] = lanes[k][j];
            total[j] += combine_lanes(l, 0);
        }
    }
    columns_store(c, off, step, m, total);
}

static void rows_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    const red_ctx *c = vctx;
    int columns = c->rstep != 1 && c->arith && !c->isint && n > 1;
    for (int64_t j0 = 0; j0 < n; j0 += BLK) {
        int64_t m = n - j0 < BLK ? n - j0 : BLK;
        int64_t o[2] = {off[0] + j0 * step[0], off[1] + j0 * step[1]};
        if (columns) {
            if (c->a->dtype == NETCL_DTYPE_FLOAT32 && c->op != NETCL_OP_PROD) columns_sum_f32(c, o, step, m);
            else columns_sum(c, o, step, m);
            continue;
        }
        for (int64_t j = 0; j < m; j++)
            store_result(c, o[0] + j * step[0] - c->out->offset, reduce_row(c, o[1] + j * step[1]));
    }
}

static void rows_range(void *vctx, int64_t start, int64_t end)
{
    nc_iter_range(&((red_ctx *)vctx)->it, start, end, rows_row, vctx);
}

/* ---- few outputs, long rows: spans in parallel, merged in order ------------------- */
static void spans_range(void *vctx, int64_t start, int64_t end)
{
    red_ctx *c = vctx;
    for (int64_t b = start; b < end; b++) {
        int64_t from = b * RBLK, to = from + RBLK < c->rlen ? from + RBLK : c->rlen;
        c->partials[b] = reduce_span(c, c->row_off, from, to);
    }
}

static netcl_status reduce_long_rows(red_ctx *c, const nc_desc *outer, int64_t nout)
{
    int64_t nspans = (c->rlen + RBLK - 1) / RBLK;
    c->partials = malloc(sizeof(acc_t) * (size_t)nspans);
    if (!c->partials) return nc_fail(NETCL_ERR_OOM, "cpu reduce: out of host memory");
    for (int64_t o = 0; o < nout; o++) {
        /* row start of output o: unravel o over a's outer dims */
        int64_t rem = o;
        c->row_off = c->a->offset;
        for (int d = outer->ndim - 1; d >= 0; d--) {
            c->row_off += (rem % outer->sizes[d]) * outer->strides[d];
            rem /= outer->sizes[d];
        }
        nc_parallel_for(nspans, 1, spans_range, c);
        acc_t acc = acc_init(c);
        for (int64_t b = 0; b < nspans; b++) acc_merge(c, &acc, c->partials[b]);
        store_result(c, o, acc);
    }
    free(c->partials);
    return NETCL_OK;
}

netcl_status nc_cpu_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a)
{
    (void)dev;
    if (op < NETCL_OP_SUM || op >= NETCL_OP_REDUCE_END || a->ndim < 1)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "cpu reduce: %s over a %d-d input", netcl_op_name(op), a->ndim);
    red_ctx c = {op, out, idx, a, !nc_dtype_is_float(a->dtype),
                 op == NETCL_OP_SUM || op == NETCL_OP_MEAN || op == NETCL_OP_PROD,
                 a->sizes[a->ndim - 1], a->strides[a->ndim - 1], {0}, NULL, 0};
    int64_t nout = nc_numel(out->ndim, out->sizes);
    if (nout == 0) return NETCL_OK;
    if (c.rlen == 0 && op != NETCL_OP_SUM && op != NETCL_OP_PROD)
        return nc_fail(NETCL_ERR_ARGUMENT, "cpu reduce: %s over an empty dimension", netcl_op_name(op));
    nc_desc outer = *a, o = *out;
    outer.ndim = a->ndim - 1;
    o.ndim = outer.ndim;
    for (int d = 0; d < outer.ndim; d++) o.sizes[d] = outer.sizes[d];
    if (nout < 4 && c.rlen >= 2 * RBLK) return reduce_long_rows(&c, &outer, nout);
    if (outer.ndim == 0) { /* a 0-d output: one row */
        store_result(&c, 0, reduce_row(&c, a->offset));
        return NETCL_OK;
    }
    const nc_desc *ops[2] = {&o, &outer};
    nc_iter_init(&c.it, 2, ops);
    int64_t grain = c.rlen > 0 ? 32768 / c.rlen + 1 : 32768;
    nc_parallel_for(nc_iter_numel(&c.it), grain, rows_range, &c);
    return NETCL_OK;
}
