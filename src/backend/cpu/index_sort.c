/* index_sort.c (cpu) — the index family's sort: a stable merge sort per row
 * of the last dim (scans: index.c). Keys are the values mapped to
 * order-preserving unsigned integers (NaN above +inf, -0 equal to +0), so
 * one unsigned compare orders every dtype, and stability makes ties resolve
 * by index as on every other backend. Rows run in parallel; a few long rows
 * are cut into one chunk per thread, sorted in parallel and merged
 * pairwise. Values are copied from the input by index, bit for bit. */
#include "cpu.h"
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t key; int64_t idx; } item;

#define RUN 32   /* insertion-sorted run length */

static uint64_t key_of(const void *buf, netcl_dtype dt, int64_t i)
{
    if (!nc_dtype_is_float(dt)) return (uint64_t)nc_cpu_load_i64(buf, dt, i) ^ 0x8000000000000000ULL;
    double v = dt == NETCL_DTYPE_FLOAT32 ? ((const float *)buf)[i] : nc_load_double(buf, dt, i);
    if (v != v) return UINT64_MAX;
    if (v == 0) v = 0.0;   /* -0 sorts with +0 (by index) */
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b >> 63) ? ~b : b | 0x8000000000000000ULL;
}

/* x before y (strictly): the merge takes the right run only then, so equal keys keep their order */
#define BEFORE(x, y) (desc ? (x).key > (y).key : (x).key < (y).key)

static void merge(item *dst, const item *a, int64_t na, const item *b, int64_t nb, int desc)
{
    int64_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) dst[k++] = BEFORE(b[j], a[i]) ? b[j++] : a[i++];
    while (i < na) dst[k++] = a[i++];
    while (j < nb) dst[k++] = b[j++];
}

/* sorts v[0..n) using tmp[0..n); the result ends in v */
static void sort_items(item *v, item *tmp, int64_t n, int desc)
{
    for (int64_t s = 0; s < n; s += RUN) {
        int64_t e = s + RUN < n ? s + RUN : n;
        for (int64_t i = s + 1; i < e; i++) {
            item x = v[i];
            int64_t j = i;
            while (j > s && BEFORE(x, v[j - 1])) { v[j] = v[j - 1]; j--; }
            v[j] = x;
        }
    }
    item *src = v, *dst = tmp;
    for (int64_t w = RUN; w < n; w *= 2) {
        for (int64_t s = 0; s < n; s += 2 * w) {
            int64_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
            merge(dst + s, src + s, m - s, src + m, e - m, desc);
        }
        item *t = src; src = dst; dst = t;
    }
    if (src != v) memcpy(v, src, sizeof(item) * (size_t)n);
}

typedef struct {
    const nc_desc *values, *indices, *a;
    int desc, es;
    int64_t len;
    nc_iter it;            /* rows: operands 0 values, 1 indices, 2 a */
    item *v, *tmp;         /* long-row mode: one row's items */
    int64_t chunk, width;  /* long-row mode: chunk length, current merge width */
    atomic_int failed;
} sort_ctx;

static void load_row(const sort_ctx *c, item *v, int64_t ao, int64_t from, int64_t to)
{
    int64_t step = c->a->strides[c->a->ndim - 1];
    for (int64_t j = from; j < to; j++) { v[j].key = key_of(c->a->buf, c->a->dtype, ao + j * step); v[j].idx = j; }
}

static void store_row(const sort_ctx *c, const item *v, const int64_t *off)
{
    int last = c->a->ndim - 1;
    int64_t as = c->a->strides[last], vs = c->values->strides[last], is = c->indices->strides[last];
    int64_t *ix = (int64_t *)c->indices->buf + off[1];
    for (int64_t j = 0; j < c->len; j++) {
        int64_t s = off[2] + v[j].idx * as, o = off[0] + j * vs;
        switch (c->es) {
        case 1: ((uint8_t *)c->values->buf)[o] = ((const uint8_t *)c->a->buf)[s]; break;
        case 2: ((uint16_t *)c->values->buf)[o] = ((const uint16_t *)c->a->buf)[s]; break;
        case 4: ((uint32_t *)c->values->buf)[o] = ((const uint32_t *)c->a->buf)[s]; break;
        default: ((uint64_t *)c->values->buf)[o] = ((const uint64_t *)c->a->buf)[s]; break;
        }
        ix[j * is] = v[j].idx;
    }
}

/* ---- many rows: one row per task ------------------------------------------------ */
static void rows_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    sort_ctx *c = vctx;
    item *v = malloc(sizeof(item) * 2 * (size_t)c->len);
    if (!v) { atomic_store(&c->failed, 1); return; }
    for (int64_t r = 0; r < n; r++) {
        int64_t o[3] = {off[0] + r * step[0], off[1] + r * step[1], off[2] + r * step[2]};
        load_row(c, v, o[2], 0, c->len);
        sort_items(v, v + c->len, c->len, c->desc);
        store_row(c, v, o);
    }
    free(v);
}

static void rows_range(void *vctx, int64_t s, int64_t e) { nc_iter_range(&((sort_ctx *)vctx)->it, s, e, rows_row, vctx); }

/* ---- few long rows: chunks in parallel, then pairwise merges --------------------- */
static void chunks_sort(void *vctx, int64_t s, int64_t e)
{
    sort_ctx *c = vctx;
    for (int64_t k = s; k < e; k++) {
        int64_t from = k * c->chunk, to = from + c->chunk < c->len ? from + c->chunk : c->len;
        if (from < to) sort_items(c->v + from, c->tmp + from, to - from, c->desc);
    }
}

static void chunks_merge(void *vctx, int64_t s, int64_t e)
{
    sort_ctx *c = vctx;
    for (int64_t k = s; k < e; k++) {
        int64_t from = 2 * k * c->width, mid = from + c->width, to = mid + c->width;
        if (mid > c->len) mid = c->len;
        if (to > c->len) to = c->len;
        merge(c->tmp + from, c->v + from, mid - from, c->v + mid, to - mid, c->desc);
    }
}

static void long_row(void *vctx, const int64_t *off, const int64_t *step, int64_t n)
{
    sort_ctx *c = vctx;
    int threads = nc_cpu_threads();
    c->chunk = (c->len + threads - 1) / threads;
    for (int64_t r = 0; r < n; r++) {
        int64_t o[3] = {off[0] + r * step[0], off[1] + r * step[1], off[2] + r * step[2]};
        load_row(c, c->v, o[2], 0, c->len);
        nc_parallel_for(threads, 1, chunks_sort, c);
        for (c->width = c->chunk; c->width < c->len; c->width *= 2) {
            nc_parallel_for((c->len + 2 * c->width - 1) / (2 * c->width), 1, chunks_merge, c);
            item *t = c->v; c->v = c->tmp; c->tmp = t;
        }
        store_row(c, c->v, o);
    }
}

netcl_status nc_cpu_sort(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a, int descending)
{
    (void)dev;
    int last = a->ndim - 1;
    sort_ctx c = {values, indices, a, descending, netcl_dtype_size(a->dtype), a->sizes[last], {0}, NULL, NULL, 0, 0, 0};
    nc_desc ov = *values, oi = *indices, oa = *a;
    ov.ndim = oi.ndim = oa.ndim = last;
    const nc_desc *ops[3] = {&ov, &oi, &oa};
    nc_iter_init(&c.it, 3, ops);
    int64_t rows = nc_iter_numel(&c.it);
    if (rows < nc_cpu_threads() && c.len >= 65536 && nc_cpu_threads() > 1) {
        item *buf = malloc(sizeof(item) * 2 * (size_t)c.len);
        if (!buf) return nc_fail(NETCL_ERR_OOM, "sort: out of host memory for a row of %lld", (long long)c.len);
        item *v = buf, *tmp = buf + c.len;
        c.v = v;
        c.tmp = tmp;
        nc_iter_range(&c.it, 0, rows, long_row, &c);
        free(buf);
        return NETCL_OK;
    }
    nc_parallel_for(rows, c.len > 0 ? 65536 / c.len + 1 : 65536, rows_range, &c);
    if (atomic_load(&c.failed)) return nc_fail(NETCL_ERR_OOM, "sort: out of host memory for rows of %lld", (long long)c.len);
    return NETCL_OK;
}
