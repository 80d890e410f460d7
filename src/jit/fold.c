/* fold.c — folding additions into the kernels whose results they add:
 * gradient accumulation into the kernels that make the gradients, and a
 * bias added to a product into the product's epilogue. A training step zeroes its gradients (a fill of 0) and then
 * adds each new gradient to its slot: `g = g + t`, where t is a value the
 * program alone holds, made by one kernel and read only by that add. When
 * g's elements are still the zeros of the fill, the kernel that made t
 * writes g instead and the add goes; when every element of a fill is then
 * written before anything reads it, the fill goes too. Only kernels that
 * write their output without reading it (products, reductions, the
 * elementwise family) are retargeted, and only between contiguous layouts
 * of one dtype and element count, so the elements land where the add
 * would have put them. A float32 or float64 product nothing else reads,
 * followed by the addition of a vector broadcast along its last dim, takes
 * the vector as its epilogue's bias and writes the sum (a 16-bit product
 * rounds before the addition, which its epilogue would not). */
#include "jit/jit.h"
#include <stdlib.h>
#include <string.h>

/* ---- the elements a descriptor touches: [lo, hi) of its buffer, in elements ---- */
typedef struct { const void *buf; int64_t lo, hi; } span;

static span span_of(const nc_desc *d)
{
    span s = {d->buf, d->offset, d->offset + 1};
    for (int i = 0; i < d->ndim; i++) {
        if (d->sizes[i] == 0) return (span){d->buf, d->offset, d->offset};
        int64_t e = (d->sizes[i] - 1) * d->strides[i];
        if (e < 0) s.lo += e; else s.hi += e;
    }
    return s;
}

static int overlap(span a, span b) { return a.buf == b.buf && a.lo < b.hi && b.lo < a.hi; }

/* A kernel that writes d[0] whole without reading it and nothing else. */
static int pure_writer(const nc_step *s)
{
    switch (s->kind) {
    case ST_COPY: case ST_FILL: case ST_UNARY: case ST_UNARY_GRAD: case ST_BINARY: case ST_BINARY_GRAD: case ST_WHERE:
    case ST_GEMM:
        return 1;
    case ST_REDUCE: return !nc_step_desc(s, 1);   /* no index output */
    default: return 0;
    }
}

/* ---- zeroed ranges: what the fills wrote and nothing has written since ---- */
typedef struct { span *v; int n, cap; } spans;

static int spans_add(spans *z, span s)
{
    if (z->n == z->cap) {
        int cap = z->cap ? 2 * z->cap : 16;
        span *v = realloc(z->v, sizeof *v * (size_t)cap);
        if (!v) return 0;
        z->v = v, z->cap = cap;
    }
    z->v[z->n++] = s;
    return 1;
}

/* w is written: the zeroed ranges lose its elements */
static int spans_cut(spans *z, span w)
{
    for (int i = 0; i < z->n; i++) {
        span s = z->v[i];
        if (!overlap(s, w)) continue;
        z->v[i--] = z->v[--z->n];
        if (s.lo < w.lo && !spans_add(z, (span){s.buf, s.lo, w.lo})) return 0;
        if (w.hi < s.hi && !spans_add(z, (span){s.buf, w.hi, s.hi})) return 0;
    }
    return 1;
}

static int spans_hold(const spans *z, span w)
{
    for (int i = 0; i < z->n; i++)
        if (z->v[i].buf == w.buf && z->v[i].lo <= w.lo && w.hi <= z->v[i].hi) return 1;
    return 0;
}

static int same_elements(const nc_desc *a, const nc_desc *b)
{
    return a->dtype == b->dtype && nc_desc_is_contiguous(a) && nc_desc_is_contiguous(b) &&
           nc_numel(a->ndim, a->sizes) == nc_numel(b->ndim, b->sizes);
}

/* ---- the pass ------------------------------------------------------------------------ */
typedef struct { int internal, uses, writer; } buf_use;

/* The step that made t (a value only the program holds, written whole by
 * one pure writer and read only by step i, in t's layout); -1 if none. */
static int sole_writer(const netcl_program *p, int i, const nc_desc *t, nc_bufmap *ids, const buf_use *u)
{
    const buf_use *tu = &u[nc_bufmap_id(ids, t->buf)];
    if (!tu->internal || tu->uses != 2 || tu->writer < 0 || tu->writer >= i) return -1;
    const nc_step *w = &p->steps[tu->writer];
    if (!pure_writer(w) || w->d[0].buf != t->buf || w->d[0].offset != t->offset || !same_elements(&w->d[0], t)) return -1;
    return tu->writer;
}

/* Writer w may write o instead of its own output: nothing w reads, and
 * no live step between w and i, touches o. */
static int may_retarget(const netcl_program *p, int w, int i, const nc_desc *o, const unsigned char *dead)
{
    span g = span_of(o);
    for (int k = 1; k < NC_STEP_DESCS; k++)
        if (nc_step_desc(&p->steps[w], k) && overlap(span_of(&p->steps[w].d[k]), g)) return 0;
    for (int j = w + 1; j < i; j++)
        for (int k = 0; k < NC_STEP_DESCS; k++)
            if (!dead[j] && nc_step_desc(&p->steps[j], k) && overlap(span_of(&p->steps[j].d[k]), g)) return 0;
    return 1;
}

static void retarget(nc_step *w, const nc_desc *o)
{
    w->d[0].buf = o->buf;
    w->d[0].offset = o->offset;
}

/* The operand of add step s that is its output (g in g = g + t): 1 or 2, 0 if none. */
static int in_place_operand(const nc_step *s)
{
    for (int k = 1; k <= 2; k++) {
        const nc_desc *d = &s->d[k];
        if (d->buf == s->d[0].buf && d->offset == s->d[0].offset && same_elements(d, &s->d[0])) return k;
    }
    return 0;
}

/* Step i adds t to g in place (g = g + t or t + g) where g is zeroed and
 * t's writer may write g: retargets the writer, 1. */
static int fold_accumulate(netcl_program *p, int i, nc_bufmap *ids, const buf_use *u, const spans *zero,
                           unsigned char *dead)
{
    nc_step *s = &p->steps[i];
    int gk = in_place_operand(s);
    if (!gk || !nc_desc_is_contiguous(&s->d[0]) || !spans_hold(zero, span_of(&s->d[0]))) return 0;
    int w = sole_writer(p, i, &s->d[3 - gk], ids, u);
    if (w < 0 || !may_retarget(p, w, i, &s->d[0], dead)) return 0;
    retarget(&p->steps[w], &s->d[0]);
    return dead[i] = 1;
}

/* Step i adds a bias along the last dim (stride 0 elsewhere) to a product
 * nothing else reads: the product's epilogue adds it, 1. */
static int fold_bias(netcl_program *p, int i, nc_bufmap *ids, const buf_use *u, unsigned char *dead)
{
    nc_step *s = &p->steps[i];
    const nc_desc *o = &s->d[0];
    /* a 16-bit product rounds before the addition: in the epilogue it would not */
    if (!nc_desc_is_contiguous(o) || o->ndim < 1 || (o->dtype != NETCL_DTYPE_FLOAT32 && o->dtype != NETCL_DTYPE_FLOAT64))
        return 0;
    for (int tk = 1; tk <= 2; tk++) {
        const nc_desc *b = &s->d[3 - tk];
        int bcast = b->dtype == o->dtype && b->ndim == o->ndim;
        for (int d = 0; d + 1 < b->ndim && bcast; d++) bcast = b->strides[d] == 0 || b->sizes[d] == 1;
        int w = bcast ? sole_writer(p, i, &s->d[tk], ids, u) : -1;
        if (w < 0) continue;
        nc_step *g = &p->steps[w];
        if (g->kind != ST_GEMM || nc_step_desc(g, 3) || nc_step_desc(g, 4) || g->epi.act >= 0 ||
            g->d[0].sizes[g->d[0].ndim - 1] != o->sizes[o->ndim - 1] || !may_retarget(p, w, i, o, dead))
            continue;
        nc_desc bias = *b;
        bias.ndim = 1;
        bias.sizes[0] = b->sizes[b->ndim - 1];
        bias.strides[0] = b->strides[b->ndim - 1];
        g->d[4] = bias;
        g->has |= 1u << 4;
        g->epi.bias_dim = 2;
        retarget(g, o);
        return dead[i] = 1;
    }
    return 0;
}

/* Fill step i (of zeros or anything else) is dead when every element it
 * writes is written again by later pure writers before any step reads it. */
static int fill_dead(const netcl_program *p, int i, const unsigned char *dead)
{
    const nc_desc *f = &p->steps[i].d[0];
    span left = span_of(f);
    if (!nc_desc_is_contiguous(f)) return 0;
    spans todo = {0};
    if (!spans_add(&todo, left)) return 0;
    int result = 0;
    for (int j = i + 1; j < p->nsteps && todo.n > 0; j++) {
        if (dead[j]) continue;
        const nc_step *s = &p->steps[j];
        int k0 = pure_writer(s) && nc_desc_is_contiguous(&s->d[0]) ? 1 : 0;
        for (int k = k0; k < NC_STEP_DESCS; k++)   /* a read (or an unknown use) of an element still to be written */
            if (nc_step_desc(s, k))
                for (int q = 0; q < todo.n; q++)
                    if (overlap(todo.v[q], span_of(&s->d[k]))) goto done;
        if (k0 && !spans_cut(&todo, span_of(&s->d[0]))) goto done;
    }
    result = todo.n == 0;
done:
    free(todo.v);
    return result;
}

netcl_status nc_program_fold(netcl_program *p)
{
    if (p->nsteps < 2) return NETCL_OK;
    nc_bufmap ids;
    NC_TRY(nc_bufmap_init(&ids, (size_t)p->nsteps * NC_STEP_DESCS + (size_t)p->nstorages));
    buf_use *u = calloc(ids.cap, sizeof *u);
    unsigned char *dead = calloc((size_t)p->nsteps, 1);
    spans zero = {0};
    netcl_status st = NETCL_OK;
    if (!u || !dead) { st = nc_fail(NETCL_ERR_OOM, "fold: out of host memory"); goto out; }
    for (size_t i = 0; i < ids.cap; i++) u[i].writer = -1;
    for (int i = 0; i < p->nstorages; i++)
        u[nc_bufmap_id(&ids, p->storages[i]->buf)].internal = atomic_load(&p->storages[i]->refcount) == 1;
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < NC_STEP_DESCS; k++) {
            const nc_desc *d = nc_step_desc(&p->steps[i], k);
            if (!d) continue;
            buf_use *b = &u[nc_bufmap_id(&ids, d->buf)];
            b->uses++;
            if (k == 0) b->writer = i;
        }
    int folded = 0;
    for (int i = 0; i < p->nsteps; i++) {
        nc_step *s = &p->steps[i];
        int add = s->kind == ST_BINARY && s->op == NETCL_OP_ADD && nc_step_desc(s, 1) && nc_step_desc(s, 2);
        if (add && (fold_accumulate(p, i, &ids, u, &zero, dead) || fold_bias(p, i, &ids, u, dead))) {
            folded = 1;
            continue;
        }
        if (s->kind != ST_FILL || s->s[0] != 0 || !nc_desc_is_contiguous(&s->d[0])) {
            for (int k = 0; k < NC_STEP_DESCS; k++)   /* whatever a step may write is no longer zero */
                if (nc_step_desc(s, k) && (k == 0 || !pure_writer(s)) && !spans_cut(&zero, span_of(&s->d[k]))) {
                    st = nc_fail(NETCL_ERR_OOM, "fold: out of host memory");
                    goto out;
                }
        }
        if (s->kind == ST_FILL && s->s[0] == 0 && nc_desc_is_contiguous(&s->d[0]) && !spans_add(&zero, span_of(&s->d[0]))) {
            st = nc_fail(NETCL_ERR_OOM, "fold: out of host memory");
            goto out;
        }
    }
    if (folded)
        for (int i = 0; i < p->nsteps; i++)
            if (!dead[i] && p->steps[i].kind == ST_FILL && fill_dead(p, i, dead)) dead[i] = 1;
    int n = 0;
    for (int i = 0; i < p->nsteps; i++) {
        if (dead[i]) nc_step_free(&p->steps[i]);
        else p->steps[n++] = p->steps[i];
    }
    p->nsteps = n;
out:
    nc_bufmap_free(&ids);
    free(u);
    free(dead);
    free(zero.v);
    return st;
}
