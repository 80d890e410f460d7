/* fuse.c — the fusion pass over a captured program. Runs of consecutive
 * elementwise steps (copies, fills, unary and binary ops, where, their
 * gradients) over one shape become one generated kernel: a value a step
 * writes and a later step of the run reads stays in registers, and it is
 * stored only where its buffer is read after the run or is visible outside
 * the program (a storage someone besides the program still holds). A run
 * breaks where a step reads a buffer the run wrote through another view, or
 * writes a buffer the run read; steps are fused in float32 (float16,
 * bfloat16, float32 and bool operands) or float64 (float64 and bool), never
 * in integers. */
#include "jit/jit.h"
#include <stdlib.h>
#include <string.h>

/* ---- buffers: which the program alone holds, and where each is last read ---- */
typedef struct { int internal, last_read; } buf_info;
typedef struct { nc_bufmap ids; buf_info *info; } buf_map;

static buf_info *lookup(buf_map *m, const void *buf) { return &m->info[nc_bufmap_id(&m->ids, buf)]; }

static int is_elementwise(nc_step_kind k)
{
    return k == ST_COPY || k == ST_FILL || k == ST_UNARY || k == ST_BINARY || k == ST_WHERE || k == ST_UNARY_GRAD ||
           k == ST_BINARY_GRAD;
}

/* the descriptors an elementwise step writes: d[0]; everything else it reads */
static int writes(const nc_step *s, int k) { return is_elementwise(s->kind) && k == 0; }

/* ---- a run being built ------------------------------------------------------------ */
typedef struct { nc_desc d; int node; } value;
typedef struct {
    nc_fuse_node nodes[NC_FUSE_MAX_NODES];
    int nnodes;
    nc_desc inputs[NC_FUSE_MAX_OPERANDS];
    int input_node[NC_FUSE_MAX_OPERANDS], ninputs;
    value vals[NC_FUSE_MAX_OPERANDS];   /* the latest value of each buffer the run wrote */
    int nvals;
    netcl_dtype compute;
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
    int nsteps;
} run;

static int same_desc(const nc_desc *a, const nc_desc *b)
{
    if (a->buf != b->buf || a->dtype != b->dtype || a->offset != b->offset || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i] || (a->sizes[i] != 1 && a->strides[i] != b->strides[i])) return 0;
    return 1;
}

static int fusable_dtype(netcl_dtype dt, netcl_dtype compute)
{
    if (dt == NETCL_DTYPE_BOOL) return 1;
    if (compute == NETCL_DTYPE_FLOAT64) return dt == NETCL_DTYPE_FLOAT64;
    return dt == NETCL_DTYPE_FLOAT32 || dt == NETCL_DTYPE_FLOAT16 || dt == NETCL_DTYPE_BFLOAT16;
}

static int node(run *r, nc_fuse_kind kind, netcl_op op, int a0, int a1, int a2)
{
    if (r->nnodes == NC_FUSE_MAX_NODES) return -1;
    nc_fuse_node *n = &r->nodes[r->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = kind, n->op = op, n->arg[0] = a0, n->arg[1] = a1, n->arg[2] = a2;
    return r->nnodes++;
}

static int scalar(run *r, double v)
{
    int k = node(r, NC_FUSE_SCALAR, 0, -1, -1, -1);
    if (k >= 0) r->nodes[k].p1 = v;
    return k;
}

/* the node holding the value d reads; -1 when d cannot join the run */
static int read_value(run *r, const nc_desc *d)
{
    if (!fusable_dtype(d->dtype, r->compute)) return -1;
    for (int i = 0; i < r->nvals; i++) {
        if (r->vals[i].d.buf != d->buf) continue;
        return same_desc(&r->vals[i].d, d) ? r->vals[i].node : -1;   /* another view of a value the run wrote */
    }
    for (int i = 0; i < r->ninputs; i++)
        if (same_desc(&r->inputs[i], d)) return r->input_node[i];
    if (r->ninputs == NC_FUSE_MAX_OPERANDS) return -1;
    int k = node(r, NC_FUSE_INPUT, 0, -1, -1, -1);
    if (k < 0) return -1;
    r->nodes[k].input = r->ninputs;
    r->inputs[r->ninputs] = *d;
    r->input_node[r->ninputs++] = k;
    return k;
}

/* d now holds node k's value; 0 when the run cannot write d */
static int write_value(run *r, const nc_desc *d, int k)
{
    if (!fusable_dtype(d->dtype, r->compute)) return 0;
    if (d->dtype == NETCL_DTYPE_FLOAT16 || d->dtype == NETCL_DTYPE_BFLOAT16) {   /* readers see the stored bits */
        int rk = node(r, NC_FUSE_ROUND, 0, k, -1, -1);
        if (rk < 0) return 0;
        r->nodes[rk].which = (int)d->dtype;
        k = rk;
    }
    for (int i = 0; i < r->ninputs; i++)
        if (r->inputs[i].buf == d->buf) return 0;   /* the run read this buffer: a write would race its loads */
    for (int i = 0; i < r->nvals; i++) {
        if (r->vals[i].d.buf != d->buf) continue;
        if (!same_desc(&r->vals[i].d, d)) return 0;
        r->vals[i].node = k;
        return 1;
    }
    if (r->nvals == NC_FUSE_MAX_OPERANDS || r->nvals + r->ninputs >= NC_FUSE_MAX_OPERANDS + 1) return 0;
    r->vals[r->nvals].d = *d;
    r->vals[r->nvals++].node = k;
    return 1;
}

/* Adds step s to r; 0 (r unchanged by the caller's copy) when it does not fit. */
static int add_step(run *r, const nc_step *s)
{
    if (!is_elementwise(s->kind)) return 0;
    const nc_desc *out = nc_step_desc(s, 0);
    if (r->nsteps == 0) {
        r->compute = out->dtype == NETCL_DTYPE_FLOAT64 ? NETCL_DTYPE_FLOAT64 : NETCL_DTYPE_FLOAT32;
        r->ndim = out->ndim;
        memcpy(r->sizes, out->sizes, sizeof r->sizes);
    }
    if (out->ndim != r->ndim || memcmp(out->sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim) != 0) return 0;
    for (int k = 1; k < NC_STEP_DESCS; k++) {
        const nc_desc *d = nc_step_desc(s, k);
        if (d && (d->ndim != r->ndim || memcmp(d->sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim) != 0)) return 0;
    }
#define IN(k) read_value(r, nc_step_desc(s, k))
    int v = -1, a, b, c;
    switch (s->kind) {
    case ST_COPY:   /* a cast to bool is v != 0, as a later read of it must see */
        if ((a = IN(1)) < 0) return 0;
        v = out->dtype == NETCL_DTYPE_BOOL && nc_step_desc(s, 1)->dtype != NETCL_DTYPE_BOOL
                ? node(r, NC_FUSE_BINARY, NETCL_OP_NE, a, scalar(r, 0), -1) : a;
        break;
    case ST_FILL: v = scalar(r, s->s[0]); break;
    case ST_UNARY:
        if ((a = IN(1)) < 0 || (v = node(r, NC_FUSE_UNARY, s->op, a, -1, -1)) < 0) return 0;
        r->nodes[v].p1 = s->s[0], r->nodes[v].p2 = s->s[1];
        break;
    case ST_BINARY:
        if (nc_op_is_predicate(s->op) && out->dtype != NETCL_DTYPE_BOOL) return 0;
        a = IN(1);
        b = nc_step_desc(s, 2) ? IN(2) : scalar(r, s->s[0]);
        if (a < 0 || b < 0) return 0;
        v = s->i[0] ? node(r, NC_FUSE_BINARY, s->op, b, a, -1) : node(r, NC_FUSE_BINARY, s->op, a, b, -1);
        break;
    case ST_WHERE:
        c = IN(1);
        a = nc_step_desc(s, 2) ? IN(2) : scalar(r, s->s[0]);
        b = nc_step_desc(s, 3) ? IN(3) : scalar(r, s->s[1]);
        if (a < 0 || b < 0 || c < 0) return 0;
        v = node(r, NC_FUSE_WHERE, 0, c, a, b);
        break;
    case ST_UNARY_GRAD:
        if ((a = IN(1)) < 0 || (b = IN(2)) < 0 || (c = IN(3)) < 0) return 0;
        if ((v = node(r, NC_FUSE_UNARY_GRAD, s->op, a, b, c)) < 0) return 0;
        r->nodes[v].p1 = s->s[0], r->nodes[v].p2 = s->s[1];
        break;
    case ST_BINARY_GRAD:
        c = IN(1);
        a = nc_step_desc(s, 2) ? IN(2) : scalar(r, s->s[0]);
        b = nc_step_desc(s, 3) ? IN(3) : scalar(r, s->s[1]);
        if (a < 0 || b < 0 || c < 0 || (v = node(r, NC_FUSE_BINARY_GRAD, s->op, c, a, b)) < 0) return 0;
        r->nodes[v].which = (int)s->i[0];
        break;
    default: return 0;
    }
#undef IN
    if (v < 0 || !write_value(r, out, v)) return 0;
    r->nsteps++;
    return 1;
}

/* The fused step of r, whose run ended at step `last`; *out.kind stays
 * ST_KIND_COUNT when no store is needed (the whole run is dead). */
static netcl_status finish(run *r, buf_map *m, int last, nc_step *out)
{
    memset(out, 0, sizeof *out);
    out->kind = ST_KIND_COUNT;
    int nout = 0;
    for (int i = 0; i < r->nvals; i++) {
        buf_info *b = lookup(m, r->vals[i].d.buf);
        if (b->internal && b->last_read <= last) continue;   /* read by nobody after the run */
        out->d[nout] = r->vals[i].d;
        out->has |= 1u << nout;
        out->out_node[nout++] = r->vals[i].node;
    }
    if (nout == 0) return NETCL_OK;
    if (nout + r->ninputs > NC_FUSE_MAX_OPERANDS) return NETCL_ERR_UNSUPPORTED;
    for (int i = 0; i < r->ninputs; i++) {
        out->d[nout + i] = r->inputs[i];
        out->has |= 1u << (nout + i);
    }
    out->nodes = malloc(sizeof *out->nodes * (size_t)r->nnodes);
    if (!out->nodes) return nc_fail(NETCL_ERR_OOM, "fuse: out of host memory");
    memcpy(out->nodes, r->nodes, sizeof *out->nodes * (size_t)r->nnodes);
    out->kind = ST_FUSED;
    out->nnodes = r->nnodes, out->ninputs = r->ninputs, out->noutputs = nout, out->compute = r->compute;
    return NETCL_OK;
}

netcl_status nc_program_fuse(netcl_program *p)
{
    if (!p->dev->backend->elementwise.fused || p->nsteps < 2) return NETCL_OK;
    buf_map m = {{0}, NULL};
    size_t most = (size_t)p->nsteps * NC_STEP_DESCS + (size_t)p->nstorages;
    NC_TRY(nc_bufmap_init(&m.ids, most));
    m.info = malloc(sizeof *m.info * m.ids.cap);
    nc_step *steps = malloc(sizeof *steps * (size_t)p->nsteps);
    run *r = malloc(sizeof *r), *trial = malloc(sizeof *trial);
    if (!m.info || !steps || !r || !trial) {
        nc_bufmap_free(&m.ids); free(m.info); free(steps); free(r); free(trial);
        return nc_fail(NETCL_ERR_OOM, "fuse: out of host memory");
    }
    for (size_t i = 0; i < m.ids.cap; i++) m.info[i].internal = 0, m.info[i].last_read = -1;
    for (int i = 0; i < p->nstorages; i++)
        lookup(&m, p->storages[i]->buf)->internal = atomic_load(&p->storages[i]->refcount) == 1;
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < NC_STEP_DESCS; k++) {
            const nc_desc *d = nc_step_desc(&p->steps[i], k);
            if (d && !writes(&p->steps[i], k)) lookup(&m, d->buf)->last_read = i;
        }
    netcl_status st = NETCL_OK;
    int n = 0;
    for (int i = 0; i < p->nsteps && st == NETCL_OK;) {
        memset(r, 0, sizeof *r);
        int j = i;
        for (; j < p->nsteps; j++) {
            memcpy(trial, r, sizeof *r);
            if (!add_step(trial, &p->steps[j])) break;
            memcpy(r, trial, sizeof *r);
        }
        if (j - i < 2) {   /* not a run: the step as captured */
            steps[n++] = p->steps[i++];
            continue;
        }
        nc_step f;
        st = finish(r, &m, j - 1, &f);
        if (st == NETCL_ERR_UNSUPPORTED) {   /* too many stores and loads: keep the run as captured */
            st = NETCL_OK;
            for (; i < j; i++) steps[n++] = p->steps[i];
            continue;
        }
        if (st != NETCL_OK) break;
        for (; i < j; i++) nc_step_free(&p->steps[i]);
        if (f.kind == ST_FUSED) steps[n++] = f;
    }
    if (st == NETCL_OK) {
        free(p->steps);
        p->steps = steps;
        p->nsteps = n;
        p->cap = p->captured;
    } else {
        free(steps);
    }
    nc_bufmap_free(&m.ids);
    free(m.info);
    free(r);
    free(trial);
    return st;
}
