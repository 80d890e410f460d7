/* index.c (cpu) — the index family's gather, scatter and prefix scans
 * (sort: index_sort.c). An index out of range stops the op with
 * NETCL_ERR_ARGUMENT before its element is touched. Scatter runs each line
 * along the dim in index order on one thread (lines are split among
 * threads: they never write the same element), so duplicates resolve to the
 * last one and sums are deterministic. An expanded (stride-0) index —
 * index_select, index_add, embedding — is read once per run of elements
 * that share it, which then move as plain loops. Scans accumulate floats in
 * double, integers in int64 with wrap-around. */
#include "cpu.h"
#include <stdatomic.h>
#include <string.h>

/* the first bad index any thread met */
typedef struct {
    atomic_int flag;
    int64_t value, size;
} bad_index;

static void note_bad(bad_index *b, int64_t value, int64_t size)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&b->flag, &expect, 1)) { b->value = value; b->size = size; }
}

static netcl_status report(const char *op, bad_index *b, int64_t base, int dim, const nc_desc *target, netcl_device *dev)
{
    char where[224];
    return nc_index_error(op, b->value, base, dim, b->size, nc_desc_str(where, sizeof where, target, dev), "");
}

static void copy_elem(void *dst, int64_t o, const void *src, int64_t s, int es)
{
    switch (es) {
    case 1: ((uint8_t *)dst)[o] = ((const uint8_t *)src)[s]; break;
    case 2: ((uint16_t *)dst)[o] = ((const uint16_t *)src)[s]; break;
    case 4: ((uint32_t *)dst)[o] = ((const uint32_t *)src)[s]; break;
    default: ((uint64_t *)dst)[o] = ((const uint64_t *)src)[s]; break;
    }
}

/* n elements dst[o + k ostep] = src[s + k sstep] of es bytes each */
static void copy_run(void *dst, int64_t o, int64_t ostep, const void *src, int64_t s, int64_t sstep, int64_t n, int es)
{
#define RUN(T) { T *d = (T *)dst + o; const T *x = (const T *)src + s; for (int64_t k = 0; k < n; k++) d[k * ostep] = x[k * sstep]; break; }
    switch (es) {
    case 1: RUN(uint8_t)
    case 2: RUN(uint16_t)
    case 4: RUN(uint32_t)
    default: RUN(uint64_t)
    }
#undef RUN
}

static int64_t load_index(const nc_desc *idx, int64_t i)
{
    return idx->dtype == NETCL_DTYPE_INT64 ? ((const int64_t *)idx->buf)[i] : ((const int32_t *)idx->buf)[i];
}

/* ---- gather --------------------------------------------------------------------------
 * iteration operands: 0 out, 1 idx, 2 a with the dim's stride zeroed */
typedef struct {
    const nc_desc *out, *a, *idx;
    int64_t base, astride, asize;
    int es;
    nc_iter it;
    bad_index bad;
} gather_ctx;

static void gather_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    gather_ctx *c = vctx;
    if (step[1] == 0) { /* one index for the whole run (an expanded index: index_select) */
        int64_t v = load_index(c->idx, off[1]) - c->base;
        if (v < 0 || v >= c->asize) { note_bad(&c->bad, v + c->base, c->asize); return; }
        copy_run(c->out->buf, off[0], step[0], c->a->buf, off[2] + v * c->astride, step[2], n, c->es);
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t v = load_index(c->idx, off[1] + j * step[1]) - c->base;
        if (v < 0 || v >= c->asize) { note_bad(&c->bad, v + c->base, c->asize); return; }
        copy_elem(c->out->buf, off[0] + j * step[0], c->a->buf, off[2] + j * step[2] + v * c->astride, c->es);
    }
}

static void gather_range(void *vctx, int64_t s, int64_t e)
{
    gather_ctx *c = vctx;
    if (!atomic_load(&c->bad.flag)) nc_iter_range(&c->it, s, e, gather_row, vctx);
}

netcl_status nc_cpu_gather(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim, int64_t base)
{
    gather_ctx c = {out, a, idx, base, a->strides[dim], a->sizes[dim], netcl_dtype_size(a->dtype), {0}, {0, 0, 0}};
    nc_desc ax = *a;
    memcpy(ax.sizes, idx->sizes, sizeof ax.sizes);
    ax.strides[dim] = 0;
    const nc_desc *ops[3] = {out, idx, &ax};
    nc_iter_init(&c.it, 3, ops);
    nc_parallel_for(nc_iter_numel(&c.it), 16384, gather_range, &c);
    return atomic_load(&c.bad.flag) ? report("gather", &c.bad, base, dim, a, dev) : NETCL_OK;
}

/* ---- scatter -------------------------------------------------------------------------
 * iteration over lines (every dim but `dim`): operands 0 idx, 1 src, 2 out */
typedef struct {
    const nc_desc *out, *idx, *src;
    int64_t base, len, istep, sstep, ostep, osize;
    int es, acc;
    nc_iter it;
    bad_index bad;
} scatter_ctx;

/* element j of a line (starts io, so, oo in idx, src, out); 0 after a bad index */
static int scatter_elem(scatter_ctx *c, int64_t io, int64_t so, int64_t oo, int64_t j)
{
    int64_t v = load_index(c->idx, io + j * c->istep) - c->base;
    if (v < 0 || v >= c->osize) { note_bad(&c->bad, v + c->base, c->osize); return 0; }
    int64_t o = oo + v * c->ostep, s = so + j * c->sstep;
    if (!c->acc) { copy_elem(c->out->buf, o, c->src->buf, s, c->es); return 1; }
    switch (c->out->dtype) {
    case NETCL_DTYPE_FLOAT32: ((float *)c->out->buf)[o] += ((const float *)c->src->buf)[s]; break;
    case NETCL_DTYPE_FLOAT64: ((double *)c->out->buf)[o] += ((const double *)c->src->buf)[s]; break;
    case NETCL_DTYPE_INT32:
        ((int32_t *)c->out->buf)[o] = (int32_t)((uint32_t)((int32_t *)c->out->buf)[o] + (uint32_t)((const int32_t *)c->src->buf)[s]);
        break;
    default:
        ((int64_t *)c->out->buf)[o] = (int64_t)((uint64_t)((int64_t *)c->out->buf)[o] + (uint64_t)((const int64_t *)c->src->buf)[s]);
        break;
    }
    return 1;
}

/* Lines l0..l1 sharing one index at j (an expanded index, as index_add
 * makes): one check, then a plain loop. 0 when the index is bad (the
 * element path reports it) or the dtype has no fast loop here. */
static int scatter_shared(scatter_ctx *c, const int64_t *off, const int64_t *step, int64_t l0, int64_t l1, int64_t j)
{
    int64_t v = load_index(c->idx, off[0] + j * c->istep) - c->base;
    if (v < 0 || v >= c->osize) return 0;
    int64_t o = off[2] + v * c->ostep, s = off[1] + j * c->sstep;
    if (c->acc && c->out->dtype == NETCL_DTYPE_FLOAT32) {
        float *y = (float *)c->out->buf + o;
        const float *x = (const float *)c->src->buf + s;
        for (int64_t l = l0; l < l1; l++) y[l * step[2]] += x[l * step[1]];
        return 1;
    }
    if (c->acc && c->out->dtype == NETCL_DTYPE_FLOAT64) {
        double *y = (double *)c->out->buf + o;
        const double *x = (const double *)c->src->buf + s;
        for (int64_t l = l0; l < l1; l++) y[l * step[2]] += x[l * step[1]];
        return 1;
    }
    if (c->acc) return 0;
    copy_run(c->out->buf, o + l0 * step[2], step[2], c->src->buf, s + l0 * step[1], step[1], l1 - l0, c->es);
    return 1;
}

/* n lines, LINES at a time: j outer and lines inner, because neighbouring
 * lines usually sit next to each other in memory (a scatter along a
 * leading dim); each line still takes its elements in index order. */
#define LINES 256
static void scatter_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    scatter_ctx *c = vctx;
    for (int64_t l0 = 0; l0 < n; l0 += LINES) {
        int64_t l1 = l0 + LINES < n ? l0 + LINES : n;
        for (int64_t j = 0; j < c->len; j++) {
            if (atomic_load_explicit(&c->bad.flag, memory_order_relaxed)) return;
            if (step[0] == 0 && scatter_shared(c, off, step, l0, l1, j)) continue;
            for (int64_t l = l0; l < l1; l++)
                if (!scatter_elem(c, off[0] + l * step[0], off[1] + l * step[1], off[2] + l * step[2], j)) return;
        }
    }
}

static void scatter_range(void *vctx, int64_t s, int64_t e)
{
    nc_iter_range(&((scatter_ctx *)vctx)->it, s, e, scatter_row, vctx);
}

/* d without dim (the geometry of the lines' starts) */
static void drop_dim(nc_desc *d, int dim)
{
    for (int i = dim; i + 1 < d->ndim; i++) { d->sizes[i] = d->sizes[i + 1]; d->strides[i] = d->strides[i + 1]; }
    d->ndim--;
}

netcl_status nc_cpu_scatter(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim,
                            int64_t base, int accumulate)
{
    if (accumulate && out->dtype != NETCL_DTYPE_FLOAT32 && out->dtype != NETCL_DTYPE_FLOAT64 &&
        out->dtype != NETCL_DTYPE_INT32 && out->dtype != NETCL_DTYPE_INT64)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "scatter_add: cpu accumulates float32, float64, int32 or int64, not %s",
                       netcl_dtype_name(out->dtype));
    scatter_ctx c = {out, idx, src, base, idx->sizes[dim], idx->strides[dim], src->strides[dim], out->strides[dim],
                     out->sizes[dim], netcl_dtype_size(out->dtype), accumulate, {0}, {0, 0, 0}};
    nc_desc li = *idx, ls = *src, lo = *out;
    memcpy(lo.sizes, idx->sizes, sizeof lo.sizes);
    drop_dim(&li, dim);
    drop_dim(&ls, dim);
    drop_dim(&lo, dim);
    const nc_desc *ops[3] = {&li, &ls, &lo};
    nc_iter_init(&c.it, 3, ops);
    int64_t lines = nc_iter_numel(&c.it);
    nc_parallel_for(lines, c.len > 0 ? 16384 / c.len + 1 : 16384, scatter_range, &c);
    return atomic_load(&c.bad.flag) ? report(accumulate ? "scatter_add" : "scatter", &c.bad, base, dim, out, dev) : NETCL_OK;
}

/* ---- scan ------------------------------------------------------------------------------
 * rows over every dim but the last: operands 0 out, 1 a */
typedef struct {
    const nc_desc *out, *a;
    int prod;
    int64_t len, ostep, astep;
    nc_iter it;
} scan_ctx;

static void scan_line(const scan_ctx *c, int64_t oo, int64_t ao)
{
    const nc_desc *a = c->a, *o = c->out;
    if (!nc_dtype_is_float(a->dtype)) { /* the ops layer made integers int64 */
        const int64_t *x = (const int64_t *)a->buf + ao;
        int64_t *y = (int64_t *)o->buf + oo;
        uint64_t acc = c->prod ? 1 : 0;
        for (int64_t j = 0; j < c->len; j++) {
            acc = c->prod ? acc * (uint64_t)x[j * c->astep] : acc + (uint64_t)x[j * c->astep];
            y[j * c->ostep] = (int64_t)acc;
        }
        return;
    }
    double acc = c->prod ? 1 : 0;
    if (a->dtype == NETCL_DTYPE_FLOAT32) {
        const float *x = (const float *)a->buf + ao;
        float *y = (float *)o->buf + oo;
        for (int64_t j = 0; j < c->len; j++) {
            acc = c->prod ? acc * x[j * c->astep] : acc + x[j * c->astep];
            y[j * c->ostep] = (float)acc;
        }
        return;
    }
    for (int64_t j = 0; j < c->len; j++) {
        double v = nc_load_double(a->buf, a->dtype, ao + j * c->astep);
        acc = c->prod ? acc * v : acc + v;
        nc_store_double(o->buf, o->dtype, oo + j * c->ostep, acc);
    }
}

static void scan_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    const scan_ctx *c = vctx;
    for (int64_t l = 0; l < n; l++) scan_line(c, off[0] + l * step[0], off[1] + l * step[1]);
}

static void scan_range(void *vctx, int64_t s, int64_t e) { nc_iter_range(&((scan_ctx *)vctx)->it, s, e, scan_row, vctx); }

netcl_status nc_cpu_scan(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a)
{
    (void)dev;
    int last = a->ndim - 1;
    scan_ctx c = {out, a, op == NETCL_OP_PROD, a->sizes[last], out->strides[last], a->strides[last], {0}};
    nc_desc lo = *out, la = *a;
    lo.ndim = la.ndim = last;
    if (last == 0) { scan_line(&c, out->offset, a->offset); return NETCL_OK; }
    const nc_desc *ops[2] = {&lo, &la};
    nc_iter_init(&c.it, 2, ops);
    nc_parallel_for(nc_iter_numel(&c.it), c.len > 0 ? 16384 / c.len + 1 : 16384, scan_range, &c);
    return NETCL_OK;
}
