/* reduce.c — CPU reductions over the last dim of a strided input. Floats
 * accumulate in double; a long single row is split into fixed 64K-element
 * blocks whose partials are combined in order, so results do not depend on
 * the number of threads. Ties pick the first index; NaN wins max/min. */
#include "cpu.h"
#include <math.h>
#include <stdlib.h>

#define RBLK 65536

typedef struct { double v; int64_t i; } acc_t;

static acc_t acc_init(netcl_op op)
{
    acc_t a = {0, -1};
    if (op == NETCL_OP_PROD) a.v = 1;
    return a;
}

/* Folds x (at index i) into a. */
static inline void acc_add(netcl_op op, acc_t *a, double x, int64_t i)
{
    switch (op) {
    case NETCL_OP_SUM: case NETCL_OP_MEAN: a->v += x; break;
    case NETCL_OP_PROD: a->v *= x; break;
    case NETCL_OP_MAX: case NETCL_OP_ARGMAX:
        if (a->i < 0 || (a->v == a->v && (x > a->v || x != x))) { a->v = x; a->i = i; }
        break;
    case NETCL_OP_MIN: case NETCL_OP_ARGMIN:
        if (a->i < 0 || (a->v == a->v && (x < a->v || x != x))) { a->v = x; a->i = i; }
        break;
    default: break;
    }
}

/* Combines partial b (a later block) into a. */
static void acc_merge(netcl_op op, acc_t *a, acc_t b)
{
    if (op == NETCL_OP_SUM || op == NETCL_OP_MEAN) a->v += b.v;
    else if (op == NETCL_OP_PROD) a->v *= b.v;
    else if (b.i >= 0) acc_add(op, a, b.v, b.i);
}

static acc_t reduce_span(netcl_op op, const nc_desc *a, int64_t off, int64_t step, int64_t from, int64_t to)
{
    acc_t acc = acc_init(op);
    if (a->dtype == NETCL_DTYPE_FLOAT32 && step == 1 && (op == NETCL_OP_SUM || op == NETCL_OP_MEAN)) {
        const float *p = (const float *)a->buf + off;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = from;
        for (; i + 4 <= to; i += 4) { s0 += p[i]; s1 += p[i + 1]; s2 += p[i + 2]; s3 += p[i + 3]; }
        for (; i < to; i++) s0 += p[i];
        acc.v = (s0 + s1) + (s2 + s3);
        return acc;
    }
    if (!nc_dtype_is_float(a->dtype) && (op == NETCL_OP_SUM || op == NETCL_OP_PROD)) {
        /* integer sums and products stay exact (wrapping) in int64 */
        uint64_t v = op == NETCL_OP_PROD ? 1 : 0;
        for (int64_t i = from; i < to; i++) {
            uint64_t x = (uint64_t)nc_cpu_load_i64(a->buf, a->dtype, off + i * step);
            v = op == NETCL_OP_PROD ? v * x : v + x;
        }
        acc.v = (double)(int64_t)v;   /* callers store through acc_store_int below */
        acc.i = (int64_t)v;
        return acc;
    }
    for (int64_t i = from; i < to; i++) acc_add(op, &acc, nc_load_double(a->buf, a->dtype, off + i * step), i);
    return acc;
}

typedef struct {
    netcl_op op;
    const nc_desc *out, *idx, *a;
    nc_iter it;          /* over the output (and a's outer dims) */
    int64_t rlen, rstep;
    acc_t *partials;     /* long-row mode */
    int64_t nblocks;
} red_ctx;

static int int_sum(const red_ctx *c)
{
    return !nc_dtype_is_float(c->a->dtype) && (c->op == NETCL_OP_SUM || c->op == NETCL_OP_PROD);
}

static void store_result(const red_ctx *c, int64_t o, acc_t acc)
{
    switch (c->op) {
    case NETCL_OP_ARGMAX: case NETCL_OP_ARGMIN:
        ((int64_t *)c->out->buf)[c->out->offset + o] = acc.i;
        return;
    case NETCL_OP_MEAN:
        nc_store_double(c->out->buf, c->out->dtype, c->out->offset + o, c->rlen ? acc.v / (double)c->rlen : NAN);
        return;
    default:
        if (int_sum(c)) nc_cpu_store_i64(c->out->buf, c->out->dtype, c->out->offset + o, acc.i);
        else nc_store_double(c->out->buf, c->out->dtype, c->out->offset + o, acc.v);
        if (c->idx) ((int64_t *)c->idx->buf)[c->idx->offset + o] = acc.i;
    }
}

/* many rows: each output element reduces its own row */
typedef struct { red_ctx *c; int64_t o; } row_state;

static void rows_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    row_state *s = vctx;
    red_ctx *c = s->c;
    for (int64_t j = 0; j < n; j++) {
        /* operand 0 is the output position, operand 1 the row start in a */
        acc_t acc = reduce_span(c->op, c->a, off[1] + j * step[1], c->rstep, 0, c->rlen);
        if (int_sum(c) && c->rlen == 0) acc.i = c->op == NETCL_OP_PROD ? 1 : 0;
        store_result(c, off[0] + j * step[0] - c->out->offset, acc);
    }
}

static void rows_range(void *vctx, int64_t start, int64_t end)
{
    row_state s = {vctx, 0};
    nc_iter_range(&((red_ctx *)vctx)->it, start, end, rows_row, &s);
}

/* one long row: fixed blocks reduced in parallel, merged in order */
static void blocks_range(void *vctx, int64_t start, int64_t end)
{
    red_ctx *c = vctx;
    for (int64_t b = start; b < end; b++) {
        int64_t from = b * RBLK, to = from + RBLK < c->rlen ? from + RBLK : c->rlen;
        c->partials[b] = reduce_span(c->op, c->a, c->a->offset, c->rstep, from, to);
    }
}

netcl_status nc_cpu_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a)
{
    (void)dev;
    red_ctx c = {op, out, idx, a, {0}, a->sizes[a->ndim - 1], a->strides[a->ndim - 1], NULL, 0};
    int64_t nout = nc_numel(out->ndim, out->sizes);
    if (nout == 1 && c.rlen > 2 * RBLK) {
        c.nblocks = (c.rlen + RBLK - 1) / RBLK;
        c.partials = malloc(sizeof(acc_t) * (size_t)c.nblocks);
        if (!c.partials) return nc_fail(NETCL_ERR_OOM, "cpu reduce: out of host memory");
        nc_parallel_for(c.nblocks, 1, blocks_range, &c);
        acc_t acc = c.partials[0];
        for (int64_t b = 1; b < c.nblocks; b++) {
            if (int_sum(&c)) acc.i = op == NETCL_OP_PROD ? (int64_t)((uint64_t)acc.i * (uint64_t)c.partials[b].i)
                                                         : (int64_t)((uint64_t)acc.i + (uint64_t)c.partials[b].i);
            else acc_merge(op, &acc, c.partials[b]);
        }
        free(c.partials);
        store_result(&c, 0, acc);
        return NETCL_OK;
    }
    /* iterate over the output shape; operand 1 is `a` without its last dim */
    nc_desc outer = *a;
    outer.ndim = a->ndim - 1;
    nc_desc o = *out;
    for (int d = 0; d < outer.ndim; d++) o.sizes[d] = outer.sizes[d];
    const nc_desc *ops[2] = {&o, &outer};
    if (outer.ndim == 0) {
        row_state s = {&c, 0};
        int64_t off[2] = {out->offset, a->offset}, step[2] = {1, 1};
        rows_row(&s, off, step, 1);
        return NETCL_OK;
    }
    nc_iter_init(&c.it, 2, ops);
    int64_t grain = c.rlen > 0 ? 32768 / c.rlen + 1 : 32768;
    nc_parallel_for(nc_iter_numel(&c.it), grain, rows_range, &c);
    return NETCL_OK;
}
