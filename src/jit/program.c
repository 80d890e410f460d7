/* program.c — replaying a captured program: each step calls its backend
 * entry with the arguments recorded at capture (random draws take fresh
 * counters of the global stream; optimizer steps take the hyper-parameters
 * last set for them), so a replay does no Lua work, no allocation and no
 * argument checking. */
#include "jit/jit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D(k) nc_step_desc(s, k)

netcl_status nc_step_run(netcl_device *dev, const nc_step *s)
{
    const nc_backend *be = dev->backend;
    switch (s->kind) {
    case ST_COPY: return be->elementwise.copy(dev, D(0), D(1));
    case ST_FILL: return be->elementwise.fill(dev, D(0), s->s[0]);
    case ST_RANGE: return be->elementwise.range(dev, D(0), s->s[0], s->s[1]);
    case ST_UNARY: return be->elementwise.unary(dev, s->op, D(0), D(1), s->s[0], s->s[1]);
    case ST_UNARY_GRAD: return be->elementwise.unary_grad(dev, s->op, D(0), D(1), D(2), D(3), s->s[0], s->s[1]);
    case ST_BINARY: return be->elementwise.binary(dev, s->op, D(0), D(1), D(2), s->s[0], (int)s->i[0]);
    case ST_BINARY_GRAD:
        return be->elementwise.binary_grad(dev, s->op, (int)s->i[0], D(0), D(1), D(2), D(3), s->s[0], s->s[1]);
    case ST_WHERE: return be->elementwise.where(dev, D(0), D(1), D(2), D(3), s->s[0], s->s[1]);
    case ST_FUSED: {
        const nc_desc *outs[NC_FUSE_MAX_OPERANDS], *ins[NC_FUSE_MAX_OPERANDS];
        for (int k = 0; k < s->noutputs; k++) outs[k] = D(k);
        for (int k = 0; k < s->ninputs; k++) ins[k] = D(s->noutputs + k);
        nc_fused f = {s->nnodes, s->ninputs, s->noutputs, s->nodes, ins, outs, s->out_node, s->compute};
        return be->elementwise.fused(dev, &f);
    }
    case ST_REDUCE: return be->reduce.run(dev, s->op, D(0), D(1), D(2));
    case ST_SOFTMAX: return be->softmax.forward(dev, D(0), D(1), (int)s->i[0]);
    case ST_SOFTMAX_BACKWARD: return be->softmax.backward(dev, D(0), D(1), D(2), (int)s->i[0]);
    case ST_GEMM: case ST_SPLIT_SUM: case ST_SPLIT_RUN: {
        nc_gemm_epi e = s->epi;
        e.c = D(3);
        e.bias = D(4);
        if (s->kind == ST_GEMM) return be->linalg.gemm(dev, D(0), D(1), D(2), &e);
        if (s->kind == ST_SPLIT_SUM) return be->linalg.split_sum(dev, D(0), D(1), &e);
        return be->linalg.split_run(dev, D(0), D(1), D(2), &e, (int)s->i[0]);
    }
    case ST_IM2COL: return be->conv.im2col(dev, D(0), D(1), &s->cg);
    case ST_COL2IM: return be->conv.col2im(dev, D(0), D(1), &s->cg);
    case ST_CONV_KERNEL: return be->conv.kernel(dev, (nc_conv_kernel)s->i[0], &s->ca, D(0), D(1), D(2), s->i[1], s->i[2]);
    case ST_CONV_IMPLICIT: case ST_CONV_TILED: {
        nc_conv_epi e = s->cepi;
        e.bias = D(5);
        const nc_conv_epi *ep = s->i[3] ? &e : NULL;
        if (s->kind == ST_CONV_TILED) return be->conv.tiled(dev, &s->ca, D(0), D(1), D(2), ep, (int)s->i[0]);
        return be->conv.implicit_gemm(dev, (nc_conv_pass)s->i[0], &s->ca, D(0), D(1), D(2), ep, (int)s->i[1]);
    }
    case ST_CONV_TILED_WEIGHT: return be->conv.tiled_weight(dev, &s->ca, D(0), D(1), D(2), s->i[0]);
    case ST_POOL: return be->pool.forward(dev, D(0), D(1), D(2), &s->pg);
    case ST_POOL_BACKWARD: return be->pool.backward(dev, D(0), D(1), D(2), &s->pg);
    case ST_BATCH_NORM: {
        nc_batch_norm_args a = s->bn;
        a.x = D(0), a.g = D(1), a.mean = D(2), a.invstd = D(3), a.w = D(4), a.b = D(5), a.rmean = D(6), a.rvar = D(7);
        a.sg = D(8), a.sgx = D(9), a.out = D(10), a.y = D(11), a.res = D(12);
        return be->norm.batch_norm(dev, (nc_batch_norm_kernel)s->i[0], &a);
    }
    case ST_CLASS_LOSS:
        return be->loss.class_loss(dev, D(0), D(1), D(2), D(3), D(4), (int)s->i[0], s->i[1], s->i[2], s->s[0]);
    case ST_CLASS_LOSS_BACKWARD:
        return be->loss.class_loss_backward(dev, D(0), D(1), D(2), D(3), D(4), (int)s->i[0], s->i[1], s->i[2], s->s[0]);
    case ST_GATHER: return be->index.gather(dev, D(0), D(1), D(2), (int)s->i[0], s->i[1]);
    case ST_SCATTER: return be->index.scatter(dev, D(0), D(1), D(2), (int)s->i[0], s->i[1], (int)s->i[2]);
    case ST_SORT: return be->index.sort(dev, D(0), D(1), D(2), (int)s->i[0]);
    case ST_SCAN: return be->index.scan(dev, s->op, D(0), D(1));
    case ST_RANDOM: {
        const nc_desc *o = D(0);
        uint64_t n = (uint64_t)nc_numel(o->ndim, o->sizes);
        return be->random.draw(dev, o, (netcl_rng_kind)s->i[0], netcl_rng_get_seed(), nc_rng_take(n), s->s[0], s->s[1]);
    }
    case ST_OPTIM: {
        const nc_desc *st[3] = {D(2), D(3), D(4)};
        return be->optim.step(dev, (netcl_optim_kind)s->i[0], (int)s->i[1], D(0), D(1), st, s->hyper);
    }
    case ST_UNSCALE: return be->optim.unscale(dev, D(0), D(1), D(2));
    case ST_KIND_COUNT: break;
    }
    return nc_fail(NETCL_ERR_ARGUMENT, "replay: an unknown step kind %d", (int)s->kind);
}

void nc_step_free(nc_step *s)
{
    free(s->nodes);
    s->nodes = NULL;
}

netcl_status netcl_program_run(netcl_program *p)
{
    if (!p) return nc_fail(NETCL_ERR_ARGUMENT, "program_run: no program");
    if (netcl_capturing()) return nc_fail(NETCL_ERR_ARGUMENT, "program_run: a capture is running");
    /* uploads into the inputs on a transfer queue land before the first step */
    for (int i = 0; i < p->nstorages; i++) nc_storage_settle(p->storages[i]);
    for (int i = 0; i < p->nsteps; i++) {
        netcl_status st = nc_step_run(p->dev, &p->steps[i]);
        if (st != NETCL_OK) {
            nc_error_prefix("replay of step %d of %d on %s: ", i + 1, p->nsteps, p->dev->name);
            return st;
        }
    }
    return NETCL_OK;
}

static int made_by(const netcl_program *p, const nc_storage *s)
{
    for (int i = 0; i < p->nstorages; i++)
        if (p->storages[i] == s) return 1;
    return 0;
}

netcl_status netcl_program_bind(netcl_program *p, const netcl_tensor *t, int result, int *id)
{
    if (!p || !t || !id) return nc_fail(NETCL_ERR_ARGUMENT, "program_bind: a program, a tensor and an id are needed");
    /* every argument on t's storage is then one of t's elements */
    if (!netcl_tensor_is_whole(t))
        return nc_fail(NETCL_ERR_ARGUMENT, "program_bind: %s is not the whole of its storage", nc_describe(t));
    if (result && (atomic_load(&t->refcount) != 1 || atomic_load(&t->storage->refcount) != 2 || !made_by(p, t->storage)))
        return nc_fail(NETCL_ERR_ARGUMENT, "program_bind: %s is held elsewhere or was not made by the capture",
                       nc_describe(t));
    nc_binding *b = realloc(p->bindings, sizeof *b * (size_t)(p->nbindings + 1));
    if (!b) return nc_fail(NETCL_ERR_OOM, "program_bind: out of host memory");
    p->bindings = b;
    b = &b[p->nbindings];
    memset(b, 0, sizeof *b);
    b->buf = t->storage->buf;
    for (int pass = 0; pass < 2; pass++) {   /* count, then note */
        int n = 0;
        for (int i = 0; i < p->nsteps; i++)
            for (int k = 0; k < NC_STEP_DESCS; k++)
                if ((p->steps[i].has >> k) & 1 && p->steps[i].d[k].buf == b->buf) {
                    if (pass) b->pos[n] = i * NC_STEP_DESCS + k;
                    n++;
                }
        if (pass == 0 && !(b->pos = malloc(sizeof *b->pos * (size_t)(n + 1))))
            return nc_fail(NETCL_ERR_OOM, "program_bind: out of host memory");
        b->npos = n;
    }
    b->dev = nc_dev(t), b->dtype = t->dtype, b->ndim = t->ndim;
    memcpy(b->sizes, t->sizes, sizeof b->sizes);
    memcpy(b->strides, t->strides, sizeof b->strides);
    *id = p->nbindings++;
    return NETCL_OK;
}

netcl_status netcl_program_rebind(netcl_program *p, int id, const netcl_tensor *now)
{
    if (!p || !now || id < 0 || id >= p->nbindings)
        return nc_fail(NETCL_ERR_ARGUMENT, "program_rebind: binding %d of %d", id, p ? p->nbindings : 0);
    nc_binding *b = &p->bindings[id];
    int same = b->dev == nc_dev(now) && b->dtype == now->dtype && b->ndim == now->ndim &&
               memcmp(b->sizes, now->sizes, sizeof(int64_t) * (size_t)b->ndim) == 0;
    for (int i = 0; same && i < b->ndim; i++) same = b->sizes[i] == 1 || b->strides[i] == now->strides[i];
    if (!same)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "program_rebind: %s cannot stand for the captured %s%s on %s (device, dtype, shape and strides must agree)",
                       nc_describe(now), netcl_dtype_name(b->dtype), nc_shape_str(b->ndim, b->sizes), b->dev->name);
    int64_t delta = now->offset - b->offset;
    for (int j = 0; j < b->npos; j++) {
        nc_desc *d = &p->steps[b->pos[j] / NC_STEP_DESCS].d[b->pos[j] % NC_STEP_DESCS];
        d->buf = now->storage->buf;
        d->offset += delta;
    }
    b->buf = now->storage->buf;
    b->offset = now->offset;
    return NETCL_OK;
}

static const char *const kind_names[ST_KIND_COUNT] = {
    "copy", "fill", "range", "unary", "unary_grad", "binary", "binary_grad", "where", "fused",
    "reduce", "softmax", "softmax_backward", "gemm", "split_sum", "split_run",
    "im2col", "col2im", "conv_kernel", "conv_implicit", "conv_tiled", "conv_tiled_weight",
    "pool", "pool_backward", "batch_norm", "class_loss", "class_loss_backward",
    "gather", "scatter", "sort", "scan", "random", "optim", "unscale"};

int netcl_program_describe(const netcl_program *p, char *buf, int len)
{
    size_t used = 0;
    for (int i = 0; p && i < p->nsteps; i++) {
        const nc_step *s = &p->steps[i];
        const nc_desc *o = nc_step_desc(s, 0);
        char line[256];
        int uses_op = s->kind == ST_UNARY || s->kind == ST_UNARY_GRAD || s->kind == ST_BINARY ||
                      s->kind == ST_BINARY_GRAD || s->kind == ST_REDUCE || s->kind == ST_SCAN;
        int n = snprintf(line, sizeof line, "%4d %s%s%s", i + 1, kind_names[s->kind], uses_op ? " " : "",
                         uses_op ? netcl_op_name(s->op) : "");
        if (s->kind == ST_FUSED)
            n += snprintf(line + n, sizeof line - (size_t)n, " (%d nodes, %d loads, %d stores)", s->nnodes, s->ninputs,
                          s->noutputs);
        if (o) snprintf(line + n, sizeof line - (size_t)n, " -> %s%s", netcl_dtype_name(o->dtype), nc_shape_str(o->ndim, o->sizes));
        size_t l = strlen(line);
        if (buf && used + l + 1 < (size_t)len) {
            memcpy(buf + used, line, l);
            buf[used + l] = '\n';
            buf[used + l + 1] = 0;
        }
        used += l + 1;
    }
    if (buf && len > 0 && used == 0) buf[0] = 0;
    return (int)used + 1;
}

int netcl_program_steps(const netcl_program *p) { return p ? p->nsteps : 0; }
int netcl_program_captured_steps(const netcl_program *p) { return p ? p->captured : 0; }

int netcl_program_optim_steps(const netcl_program *p)
{
    int n = 0;
    for (int i = 0; p && i < p->nsteps; i++) n += p->steps[i].kind == ST_OPTIM;
    return n;
}

netcl_status netcl_program_set_optim_hyper(netcl_program *p, int k, const double *hyper, int nhyper)
{
    if (!p || !hyper || nhyper < NETCL_OPTIM_NHYPER)
        return nc_fail(NETCL_ERR_ARGUMENT, "program_set_optim_hyper: %d hyper-parameters given, %d needed",
                       hyper ? nhyper : 0, NETCL_OPTIM_NHYPER);
    for (int i = 0; i < p->nsteps; i++) {
        if (p->steps[i].kind != ST_OPTIM || k--) continue;
        memcpy(p->steps[i].hyper, hyper, sizeof p->steps[i].hyper);
        return NETCL_OK;
    }
    return nc_fail(NETCL_ERR_ARGUMENT, "program_set_optim_hyper: the program has %d optimizer steps",
                   netcl_program_optim_steps(p));
}

void netcl_program_release(netcl_program *p)
{
    if (!p) return;
    for (int i = 0; i < p->nsteps; i++) nc_step_free(&p->steps[i]);
    free(p->steps);
    for (int i = 0; i < p->nstorages; i++) nc_storage_release(p->storages[i]);
    free(p->storages);
    for (int i = 0; i < p->nbindings; i++) free(p->bindings[i].pos);
    free(p->bindings);
    free(p);
}
