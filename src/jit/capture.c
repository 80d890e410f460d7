/* capture.c — recording a program: between netcl_capture_begin and
 * netcl_capture_end the device's backend table is a proxy whose kernel
 * entries run the real ones and append a step with copies of their
 * arguments; queries and memory management pass through; host reads and
 * uploads refuse the capture (a replay would not repeat them), as do data
 * augmentation and the entries no step kind covers. The storages the
 * capture allocates are kept until the program is made, so no buffer a
 * step touches is handed to anyone else; the memory plan (plan.c) then
 * keeps only those the replay needs. One capture at a time, process-wide. */
#include "jit/jit.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nc_capture {
    netcl_program *p;
    netcl_device *dev;
    const nc_backend *real;
    nc_backend proxy;
    char why[512];          /* the first reason the capture cannot become a program */
} nc_capture;

static nc_capture *cap;

static void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse(const char *fmt, ...)
{
    if (!cap || cap->why[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cap->why, sizeof cap->why, fmt, ap);
    va_end(ap);
}

/* A new zeroed step at the program's end; NULL (and the capture refused)
 * when out of host memory. */
static nc_step *rec(nc_step_kind kind)
{
    netcl_program *p = cap->p;
    if (p->nsteps == p->cap) {
        int n = p->cap ? 2 * p->cap : 256;
        nc_step *s = realloc(p->steps, sizeof *s * (size_t)n);
        if (!s) { refuse("out of host memory recording step %d", p->nsteps); return NULL; }
        p->steps = s, p->cap = n;
    }
    nc_step *s = &p->steps[p->nsteps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    return s;
}

static void put(nc_step *s, int k, const nc_desc *d)
{
    if (!d) return;
    s->d[k] = *d;
    s->has |= 1u << k;
}

/* a failed call ends the capture's usefulness: its partial work is unknown */
#define CALL(call)                                                                  \
    netcl_status st_ = (call);                                                      \
    if (st_ != NETCL_OK) { refuse("a kernel failed during the capture: %s", netcl_last_error()); return st_; }

/* ---- recording entries --------------------------------------------------------- */
static netcl_status r_copy(netcl_device *dev, const nc_desc *dst, const nc_desc *src)
{
    CALL(cap->real->elementwise.copy(dev, dst, src));
    nc_step *s = rec(ST_COPY);
    if (s) put(s, 0, dst), put(s, 1, src);
    return NETCL_OK;
}

static netcl_status r_fill(netcl_device *dev, const nc_desc *dst, double v)
{
    CALL(cap->real->elementwise.fill(dev, dst, v));
    nc_step *s = rec(ST_FILL);
    if (s) put(s, 0, dst), s->s[0] = v;
    return NETCL_OK;
}

static netcl_status r_range(netcl_device *dev, const nc_desc *dst, double start, double step)
{
    CALL(cap->real->elementwise.range(dev, dst, start, step));
    nc_step *s = rec(ST_RANGE);
    if (s) put(s, 0, dst), s->s[0] = start, s->s[1] = step;
    return NETCL_OK;
}

static netcl_status r_unary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2)
{
    CALL(cap->real->elementwise.unary(dev, op, out, a, p1, p2));
    nc_step *s = rec(ST_UNARY);
    if (s) s->op = op, put(s, 0, out), put(s, 1, a), s->s[0] = p1, s->s[1] = p2;
    return NETCL_OK;
}

static netcl_status r_unary_grad(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                                 const nc_desc *y, double p1, double p2)
{
    CALL(cap->real->elementwise.unary_grad(dev, op, gin, g, x, y, p1, p2));
    nc_step *s = rec(ST_UNARY_GRAD);
    if (s) s->op = op, put(s, 0, gin), put(s, 1, g), put(s, 2, x), put(s, 3, y), s->s[0] = p1, s->s[1] = p2;
    return NETCL_OK;
}

static netcl_status r_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b,
                             double sc, int reversed)
{
    CALL(cap->real->elementwise.binary(dev, op, out, a, b, sc, reversed));
    nc_step *s = rec(ST_BINARY);
    if (s) s->op = op, put(s, 0, out), put(s, 1, a), put(s, 2, b), s->s[0] = sc, s->i[0] = reversed;
    return NETCL_OK;
}

static netcl_status r_binary_grad(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                                  const nc_desc *a, const nc_desc *b, double sa, double sb)
{
    CALL(cap->real->elementwise.binary_grad(dev, op, which, out, g, a, b, sa, sb));
    nc_step *s = rec(ST_BINARY_GRAD);
    if (s) s->op = op, s->i[0] = which, put(s, 0, out), put(s, 1, g), put(s, 2, a), put(s, 3, b), s->s[0] = sa, s->s[1] = sb;
    return NETCL_OK;
}

static netcl_status r_where(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a, const nc_desc *b,
                            double sa, double sb)
{
    CALL(cap->real->elementwise.where(dev, out, cond, a, b, sa, sb));
    nc_step *s = rec(ST_WHERE);
    if (s) put(s, 0, out), put(s, 1, cond), put(s, 2, a), put(s, 3, b), s->s[0] = sa, s->s[1] = sb;
    return NETCL_OK;
}

static netcl_status r_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a)
{
    CALL(cap->real->reduce.run(dev, op, out, idx, a));
    nc_step *s = rec(ST_REDUCE);
    if (s) s->op = op, put(s, 0, out), put(s, 1, idx), put(s, 2, a);
    return NETCL_OK;
}

static netcl_status r_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log)
{
    CALL(cap->real->softmax.forward(dev, out, a, log));
    nc_step *s = rec(ST_SOFTMAX);
    if (s) put(s, 0, out), put(s, 1, a), s->i[0] = log;
    return NETCL_OK;
}

static netcl_status r_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log)
{
    CALL(cap->real->softmax.backward(dev, gin, g, y, log));
    nc_step *s = rec(ST_SOFTMAX_BACKWARD);
    if (s) put(s, 0, gin), put(s, 1, g), put(s, 2, y), s->i[0] = log;
    return NETCL_OK;
}

static void put_epi(nc_step *s, const nc_gemm_epi *e)
{
    s->epi = *e;
    put(s, 3, e->c);
    put(s, 4, e->bias);
}

static netcl_status r_gemm(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w, const nc_gemm_epi *e)
{
    CALL(cap->real->linalg.gemm(dev, out, a, w, e));
    nc_step *s = rec(ST_GEMM);
    if (s) put(s, 0, out), put(s, 1, a), put(s, 2, w), put_epi(s, e);
    return NETCL_OK;
}

static netcl_status r_split_sum(netcl_device *dev, const nc_desc *out, const nc_desc *part, const nc_gemm_epi *e)
{
    CALL(cap->real->linalg.split_sum(dev, out, part, e));
    nc_step *s = rec(ST_SPLIT_SUM);
    if (s) put(s, 0, out), put(s, 1, part), put_epi(s, e);
    return NETCL_OK;
}

static netcl_status r_split_run(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w,
                                const nc_gemm_epi *e, int S)
{
    netcl_status st = cap->real->linalg.split_run(dev, out, a, w, e, S);
    if (st == NETCL_ERR_UNSUPPORTED) return st;   /* nothing launched: the ops layer runs the slices */
    CALL(st);
    nc_step *s = rec(ST_SPLIT_RUN);
    if (s) put(s, 0, out), put(s, 1, a), put(s, 2, w), put_epi(s, e), s->i[0] = S;
    return NETCL_OK;
}

static netcl_status r_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g)
{
    CALL(cap->real->conv.im2col(dev, cols, x, g));
    nc_step *s = rec(ST_IM2COL);
    if (s) put(s, 0, cols), put(s, 1, x), s->cg = *g;
    return NETCL_OK;
}

static netcl_status r_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g)
{
    CALL(cap->real->conv.col2im(dev, x, cols, g));
    nc_step *s = rec(ST_COL2IM);
    if (s) put(s, 0, x), put(s, 1, cols), s->cg = *g;
    return NETCL_OK;
}

static netcl_status r_conv_kernel(netcl_device *dev, nc_conv_kernel k, const nc_conv_args *g, const nc_desc *out,
                                  const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1)
{
    CALL(cap->real->conv.kernel(dev, k, g, out, a, b, p0, p1));
    nc_step *s = rec(ST_CONV_KERNEL);
    if (s) s->i[0] = k, s->ca = *g, put(s, 0, out), put(s, 1, a), put(s, 2, b), s->i[1] = p0, s->i[2] = p1;
    return NETCL_OK;
}

static void put_cepi(nc_step *s, const nc_conv_epi *e)
{
    if (!e) return;
    s->cepi = *e;
    s->i[3] = 1;   /* an epilogue was given */
    put(s, 5, e->bias);
}

static netcl_status r_conv_implicit(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                                    const nc_desc *a, const nc_desc *b, const nc_conv_epi *e, int kslices)
{
    CALL(cap->real->conv.implicit_gemm(dev, pass, g, out, a, b, e, kslices));
    nc_step *s = rec(ST_CONV_IMPLICIT);
    if (s) s->i[0] = pass, s->ca = *g, put(s, 0, out), put(s, 1, a), put(s, 2, b), put_cepi(s, e), s->i[1] = kslices;
    return NETCL_OK;
}

static netcl_status r_conv_tiled(netcl_device *dev, const nc_conv_args *g, const nc_desc *out, const nc_desc *x,
                                 const nc_desc *w, const nc_conv_epi *e, int flip)
{
    CALL(cap->real->conv.tiled(dev, g, out, x, w, e, flip));
    nc_step *s = rec(ST_CONV_TILED);
    if (s) s->ca = *g, put(s, 0, out), put(s, 1, x), put(s, 2, w), put_cepi(s, e), s->i[0] = flip;
    return NETCL_OK;
}

static netcl_status r_conv_tiled_weight(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                        const nc_desc *dy, int64_t per)
{
    CALL(cap->real->conv.tiled_weight(dev, g, parts, x, dy, per));
    nc_step *s = rec(ST_CONV_TILED_WEIGHT);
    if (s) s->ca = *g, put(s, 0, parts), put(s, 1, x), put(s, 2, dy), s->i[0] = per;
    return NETCL_OK;
}

static netcl_status r_pool(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x, const nc_pool_geom *g)
{
    CALL(cap->real->pool.forward(dev, out, idx, x, g));
    nc_step *s = rec(ST_POOL);
    if (s) put(s, 0, out), put(s, 1, idx), put(s, 2, x), s->pg = *g;
    return NETCL_OK;
}

static netcl_status r_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                    const nc_pool_geom *g)
{
    CALL(cap->real->pool.backward(dev, gin, gout, idx, g));
    nc_step *s = rec(ST_POOL_BACKWARD);
    if (s) put(s, 0, gin), put(s, 1, gout), put(s, 2, idx), s->pg = *g;
    return NETCL_OK;
}

/* batch norm's operands in their order of nc_batch_norm_args */
#define BN_OPERANDS(a) {a->x, a->g, a->mean, a->invstd, a->w, a->b, a->rmean, a->rvar, a->sg, a->sgx, a->out, a->y, a->res}

static netcl_status r_batch_norm(netcl_device *dev, nc_batch_norm_kernel k, const nc_batch_norm_args *a)
{
    CALL(cap->real->norm.batch_norm(dev, k, a));
    nc_step *s = rec(ST_BATCH_NORM);
    if (!s) return NETCL_OK;
    const nc_desc *ops[] = BN_OPERANDS(a);
    for (int i = 0; i < (int)(sizeof ops / sizeof *ops); i++) put(s, i, ops[i]);
    s->bn = *a;
    s->i[0] = k;
    return NETCL_OK;
}

static netcl_status r_class_loss(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                                 const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps)
{
    CALL(cap->real->loss.class_loss(dev, loss, wsum, x, t, w, logp, base, ignore, eps));
    nc_step *s = rec(ST_CLASS_LOSS);
    if (s) put(s, 0, loss), put(s, 1, wsum), put(s, 2, x), put(s, 3, t), put(s, 4, w), s->i[0] = logp, s->i[1] = base,
           s->i[2] = ignore, s->s[0] = eps;
    return NETCL_OK;
}

static netcl_status r_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                          const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                          double eps)
{
    CALL(cap->real->loss.class_loss_backward(dev, gx, g, x, t, w, logp, base, ignore, eps));
    nc_step *s = rec(ST_CLASS_LOSS_BACKWARD);
    if (s) put(s, 0, gx), put(s, 1, g), put(s, 2, x), put(s, 3, t), put(s, 4, w), s->i[0] = logp, s->i[1] = base,
           s->i[2] = ignore, s->s[0] = eps;
    return NETCL_OK;
}

static netcl_status r_gather(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim,
                             int64_t base)
{
    CALL(cap->real->index.gather(dev, out, a, idx, dim, base));
    nc_step *s = rec(ST_GATHER);
    if (s) put(s, 0, out), put(s, 1, a), put(s, 2, idx), s->i[0] = dim, s->i[1] = base;
    return NETCL_OK;
}

static netcl_status r_scatter(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim,
                              int64_t base, int acc)
{
    CALL(cap->real->index.scatter(dev, out, idx, src, dim, base, acc));
    nc_step *s = rec(ST_SCATTER);
    if (s) put(s, 0, out), put(s, 1, idx), put(s, 2, src), s->i[0] = dim, s->i[1] = base, s->i[2] = acc;
    return NETCL_OK;
}

static netcl_status r_sort(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a, int desc)
{
    CALL(cap->real->index.sort(dev, values, indices, a, desc));
    nc_step *s = rec(ST_SORT);
    if (s) put(s, 0, values), put(s, 1, indices), put(s, 2, a), s->i[0] = desc;
    return NETCL_OK;
}

static netcl_status r_scan(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a)
{
    CALL(cap->real->index.scan(dev, op, out, a));
    nc_step *s = rec(ST_SCAN);
    if (s) s->op = op, put(s, 0, out), put(s, 1, a);
    return NETCL_OK;
}

/* a draw takes fresh counters of the global stream at every replay */
static netcl_status r_draw(netcl_device *dev, const nc_desc *out, netcl_rng_kind kind, uint64_t seed, uint64_t offset,
                           double p1, double p2)
{
    CALL(cap->real->random.draw(dev, out, kind, seed, offset, p1, p2));
    nc_step *s = rec(ST_RANDOM);
    if (s) put(s, 0, out), s->i[0] = kind, s->s[0] = p1, s->s[1] = p2;
    return NETCL_OK;
}

static netcl_status r_optim(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                            const nc_desc *const *st, const double *hyper)
{
    CALL(cap->real->optim.step(dev, kind, flags, p, g, st, hyper));
    nc_step *s = rec(ST_OPTIM);
    if (!s) return NETCL_OK;
    s->i[0] = kind, s->i[1] = flags;
    put(s, 0, p), put(s, 1, g), put(s, 2, st[0]), put(s, 3, st[1]), put(s, 4, st[2]);
    memcpy(s->hyper, hyper, sizeof s->hyper);
    return NETCL_OK;
}

static netcl_status r_unscale(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found)
{
    CALL(cap->real->optim.unscale(dev, g, inv, found));
    nc_step *s = rec(ST_UNSCALE);
    if (s) put(s, 0, g), put(s, 1, inv), put(s, 2, found);
    return NETCL_OK;
}

/* a fused step (a capture of a replay, or of fused work) keeps its nodes */
static netcl_status r_fused(netcl_device *dev, const nc_fused *f)
{
    CALL(cap->real->elementwise.fused(dev, f));
    nc_step *s = rec(ST_FUSED);
    if (!s) return NETCL_OK;
    s->nodes = malloc(sizeof *s->nodes * (size_t)f->nnodes);
    if (!s->nodes) { refuse("out of host memory"); return NETCL_OK; }
    memcpy(s->nodes, f->nodes, sizeof *s->nodes * (size_t)f->nnodes);
    s->nnodes = f->nnodes, s->ninputs = f->ninputs, s->noutputs = f->noutputs, s->compute = f->compute;
    for (int k = 0; k < f->noutputs; k++) put(s, k, f->outputs[k]), s->out_node[k] = f->out_node[k];
    for (int k = 0; k < f->ninputs; k++) put(s, f->noutputs + k, f->inputs[k]);
    return NETCL_OK;
}

/* ---- what a replay could not repeat ------------------------------------------------ */
static netcl_status r_read(netcl_device *dev, void *buf, size_t off, void *dst, size_t n)
{
    refuse("the step reads a device value on the host (item, totable, printing, a nonzero or masked_select, ...): "
           "return it from the step instead");
    return cap->real->mem.read(dev, buf, off, dst, n);
}

static netcl_status r_write(netcl_device *dev, void *buf, size_t off, const void *src, size_t n, const nc_keep *keep,
                            void **event)
{
    refuse("the step uploads host data (a tensor made from Lua values, a cpu tensor moved to the device, ...): "
           "pass it to the step as an argument instead");
    return cap->real->mem.write(dev, buf, off, src, n, keep, event);
}

static netcl_status r_write_async(netcl_device *dev, void *buf, size_t off, const void *src, size_t n,
                                  const nc_keep *keep, void *events[2])
{
    refuse("the step uploads host data: pass it to the step as an argument instead");
    return cap->real->mem.write_async(dev, buf, off, src, n, keep, events);
}

static netcl_status r_augment(netcl_device *dev, const struct nc_augment *a)
{
    refuse("the step augments data with host-drawn parameters: augment outside the compiled step");
    return cap->real->augment.run(dev, a);
}

/* The proxy: the real table with every kernel entry it has replaced by its
 * recorder (absent entries stay absent: the ops layer asks for them). */
static void make_proxy(nc_backend *px, const nc_backend *be)
{
    *px = *be;
#define SWAP(field, fn) if (be->field) px->field = fn
    SWAP(mem.read, r_read);
    SWAP(mem.write, r_write);
    SWAP(mem.write_async, r_write_async);
    SWAP(elementwise.copy, r_copy);
    SWAP(elementwise.fill, r_fill);
    SWAP(elementwise.range, r_range);
    SWAP(elementwise.unary, r_unary);
    SWAP(elementwise.unary_grad, r_unary_grad);
    SWAP(elementwise.binary, r_binary);
    SWAP(elementwise.binary_grad, r_binary_grad);
    SWAP(elementwise.fused, r_fused);
    SWAP(elementwise.where, r_where);
    SWAP(reduce.run, r_reduce);
    SWAP(softmax.forward, r_softmax);
    SWAP(softmax.backward, r_softmax_backward);
    SWAP(linalg.gemm, r_gemm);
    SWAP(linalg.split_sum, r_split_sum);
    SWAP(linalg.split_run, r_split_run);
    SWAP(conv.im2col, r_im2col);
    SWAP(conv.col2im, r_col2im);
    SWAP(conv.kernel, r_conv_kernel);
    SWAP(conv.implicit_gemm, r_conv_implicit);
    SWAP(conv.tiled, r_conv_tiled);
    SWAP(conv.tiled_weight, r_conv_tiled_weight);
    SWAP(pool.forward, r_pool);
    SWAP(pool.backward, r_pool_backward);
    SWAP(norm.batch_norm, r_batch_norm);
    SWAP(loss.class_loss, r_class_loss);
    SWAP(loss.class_loss_backward, r_class_loss_backward);
    SWAP(index.gather, r_gather);
    SWAP(index.scatter, r_scatter);
    SWAP(index.sort, r_sort);
    SWAP(index.scan, r_scan);
    SWAP(random.draw, r_draw);
    SWAP(optim.step, r_optim);
    SWAP(optim.unscale, r_unscale);
    SWAP(augment.run, r_augment);
#undef SWAP
}

/* ---- the storages a capture allocates ------------------------------------------------ */
static void observe(void *ctx, nc_storage *s)
{
    netcl_program *p = ctx;
    if (p->nstorages == p->scap) {
        int n = p->scap ? 2 * p->scap : 256;
        nc_storage **a = realloc(p->storages, sizeof *a * (size_t)n);
        if (!a) { refuse("out of host memory"); return; }
        p->storages = a, p->scap = n;
    }
    nc_storage_retain(s);
    p->storages[p->nstorages++] = s;
}

/* ---- public ------------------------------------------------------------------------- */
int netcl_capturing(void) { return cap != NULL; }

netcl_status netcl_capture_begin(netcl_device *dev)
{
    if (!dev) return nc_fail(NETCL_ERR_ARGUMENT, "capture: no device");
    if (cap) return nc_fail(NETCL_ERR_ARGUMENT, "capture: a capture on %s is already running (one at a time)", cap->dev->name);
    nc_capture *c = calloc(1, sizeof *c);
    netcl_program *p = c ? calloc(1, sizeof *p) : NULL;
    if (!p) { free(c); return nc_fail(NETCL_ERR_OOM, "capture: out of host memory"); }
    p->dev = dev;
    c->p = p;
    c->dev = dev;
    c->real = dev->backend;
    make_proxy(&c->proxy, dev->backend);
    cap = c;
    dev->backend = &c->proxy;
    dev->capturing = 1;
    nc_pool_observe(dev, observe, p);
    return NETCL_OK;
}

netcl_status netcl_capture_end(netcl_program **out, int fuse)
{
    *out = NULL;
    if (!cap) return nc_fail(NETCL_ERR_ARGUMENT, "capture_end: no capture is running");
    nc_capture *c = cap;
    nc_pool_observe(c->dev, NULL, NULL);
    c->dev->backend = c->real;
    c->dev->capturing = 0;
    cap = NULL;
    netcl_program *p = c->p;
    netcl_status st = NETCL_OK;
    if (c->why[0]) st = nc_fail(NETCL_ERR_UNSUPPORTED, "compile: the step cannot be captured: %s", c->why);
    else if (p->nsteps == 0) st = nc_fail(NETCL_ERR_UNSUPPORTED, "compile: the step ran no kernel on %s", c->dev->name);
    free(c);
    p->captured = p->nsteps;
    if (st == NETCL_OK && fuse) st = nc_program_fold(p);
    if (st == NETCL_OK && fuse) st = nc_program_fuse(p);
    if (st == NETCL_OK) st = nc_program_plan(p);
    if (st != NETCL_OK) { netcl_program_release(p); return st; }
    *out = p;
    return NETCL_OK;
}
