/* dist/exchange.c — all_reduce through the exchange ring (exchange.h).
 *
 * Each device that stages into the ring or reads a peer's block registers
 * every rank's ring with its backend once, so that DMA runs at pinned
 * speed to and from the shared segment. The reduction follows rank order
 * (block 0, then + block 1, ...) on every rank; a op b equals b op a for
 * the ops allowed here, so the ranks agree bitwise whichever block is
 * their own, as long as they reduce on devices of one kind. */
#include "dist/exchange.h"
#include "base/base.h"
#include "core/core.h"
#include "ops/ops.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEVICES 16

struct nc_exchange {
    nc_transport *tp;
    uint64_t next;   /* the next free ring position */
    struct {
        netcl_device *dev;
        void **handles;   /* one registration per rank's ring */
    } regs[MAX_DEVICES];
    int nregs;
};

netcl_status nc_exchange_new(nc_exchange **out, nc_transport *tp)
{
    *out = NULL;
    if (!tp->ring_bytes || !tp->ops->ring_area) return NETCL_OK;
    if (tp->world - 1 > NC_EXCHANGE_MAX_UPLOADS)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: the exchange ring serves up to %d ranks, this world has %d "
                       "(NETCL_SHM_EXCHANGE=0 turns it off)", NC_EXCHANGE_MAX_UPLOADS + 1, tp->world);
    nc_exchange *x = calloc(1, sizeof *x);
    if (!x) return nc_fail(NETCL_ERR_OOM, "distributed init: out of host memory");
    x->tp = tp;
    *out = x;
    return NETCL_OK;
}

void nc_exchange_free(nc_exchange *x)
{
    if (!x) return;
    for (int i = 0; i < x->nregs; i++) {
        netcl_device *d = x->regs[i].dev;
        for (int q = 0; q < x->tp->world; q++)
            if (x->regs[i].handles[q]) d->backend->mem.unregister_host(d, x->regs[i].handles[q]);
        free(x->regs[i].handles);
    }
    free(x);
}

int nc_exchange_takes(const nc_exchange *x, const netcl_tensor *t, netcl_dist_op op)
{
    (void)op;
    if (!x || (t->dtype != NETCL_DTYPE_FLOAT32 && t->dtype != NETCL_DTYPE_FLOAT64)) return 0;
    return netcl_tensor_numel(t) > 0;
}

int64_t nc_exchange_piece(const nc_exchange *x, netcl_dtype dt)
{
    return (int64_t)(x->tp->ring_bytes / 2 / (uint64_t)netcl_dtype_size(dt));
}

static uint64_t ring_offset(const nc_exchange *x, uint64_t pos) { return pos % x->tp->ring_bytes; }

void nc_exchange_place(nc_exchange *x, int64_t nbytes, nc_ticket *tk)
{
    uint64_t cap = x->tp->ring_bytes, pos = x->next, n = ((uint64_t)nbytes + 255) / 256 * 256;
    if (ring_offset(x, pos) + n > cap) pos += cap - ring_offset(x, pos);   /* a block never wraps */
    memset(tk, 0, sizeof *tk);
    tk->pos = pos;
    tk->end = pos + n;
    x->next = tk->end;
}

netcl_status nc_exchange_room(nc_exchange *x, const nc_ticket *tk, int *room)
{
    return x->tp->ops->ring_room(x->tp, tk->end, room);
}

/* the device's registrations of every ring, made on first use (NULL:
 * the backend copies host memory as it is) */
static netcl_status registered(nc_exchange *x, netcl_device *dev, void ***out)
{
    *out = NULL;
    if (!dev->backend->mem.register_host) return NETCL_OK;
    for (int i = 0; i < x->nregs; i++)
        if (x->regs[i].dev == dev) { *out = x->regs[i].handles; return NETCL_OK; }
    if (x->nregs == MAX_DEVICES) return NETCL_OK;
    void **h = calloc((size_t)x->tp->world, sizeof *h);
    if (!h) return nc_fail(NETCL_ERR_OOM, "distributed all_reduce: out of host memory");
    for (int q = 0; q < x->tp->world; q++) {
        netcl_status st = dev->backend->mem.register_host(dev, x->tp->ops->ring_area(x->tp, q), x->tp->ring_bytes, &h[q]);
        if (st != NETCL_OK) {
            for (int k = 0; k < q; k++) dev->backend->mem.unregister_host(dev, h[k]);
            free(h);
            return st;
        }
    }
    x->regs[x->nregs].dev = dev;
    x->regs[x->nregs].handles = h;
    x->nregs++;
    *out = h;
    return NETCL_OK;
}

static void *data_of(const netcl_tensor *t)
{
    return (char *)t->storage->buf + (size_t)t->offset * (size_t)netcl_dtype_size(t->dtype);
}

/* ---- host copies and reductions, split over threads ------------------------------- */

/* One rank's share of the host's cores for its copies (the ranks of a
 * host run at once), at most 8: one core's copy falls well short of the
 * memory's bandwidth on a server. NETCL_SHM_THREADS sets it. */
static int host_threads(const nc_exchange *x, size_t bytes)
{
    const char *env = getenv("NETCL_SHM_THREADS");
    if (env && atoi(env) > 0) return atoi(env) > 8 ? 8 : atoi(env);
    if (bytes < ((size_t)4 << 20)) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long k = cores / x->tp->world;
    return k < 1 ? 1 : k > 8 ? 8 : (int)k;
}

typedef struct {
    const nc_exchange *x;
    const nc_ticket *tk;
    unsigned char *dst;
    const unsigned char *src;   /* a copy's source; NULL: the reduction */
    netcl_dtype dt;
    netcl_dist_op op;
    int64_t lo, hi;             /* elements */
} host_part;

static void *host_part_run(void *arg)
{
    host_part *p = arg;
    size_t es = (size_t)netcl_dtype_size(p->dt);
    unsigned char *dst = p->dst + (size_t)p->lo * es;
    size_t bytes = (size_t)(p->hi - p->lo) * es;
    if (p->src) {
        memcpy(dst, p->src + (size_t)p->lo * es, bytes);
        return NULL;
    }
    int W = p->x->tp->world;
    uint64_t off = ring_offset(p->x, p->tk->pos) + (uint64_t)p->lo * es;
    memcpy(dst, p->x->tp->ops->ring_area(p->x->tp, 0) + off, bytes);
    netcl_dist_op acc = p->op == NETCL_DIST_AVG ? NETCL_DIST_SUM : p->op;
    for (int q = 1; q < W; q++) nc_dist_accumulate(dst, p->x->tp->ops->ring_area(p->x->tp, q) + off, p->hi - p->lo, p->dt, acc);
    if (p->op == NETCL_DIST_AVG)
        for (int64_t i = 0; i < p->hi - p->lo; i++) {
            if (p->dt == NETCL_DTYPE_FLOAT64) ((double *)dst)[i] /= W;
            else ((float *)dst)[i] /= (float)W;
        }
    return NULL;
}

/* the copy (src) or the reduction (src NULL) of n elements into dst */
static void host_run(const nc_exchange *x, const nc_ticket *tk, void *dst, const void *src, int64_t n, netcl_dtype dt,
                     netcl_dist_op op)
{
    enum { MAX_PARTS = 8 };
    int k = host_threads(x, (size_t)n * (size_t)netcl_dtype_size(dt));
    host_part parts[MAX_PARTS];
    pthread_t th[MAX_PARTS];
    int started[MAX_PARTS] = { 0 };
    for (int i = 0; i < k; i++) {
        parts[i] = (host_part){ x, tk, dst, src, dt, op, n * i / k, n * (i + 1) / k };
        if (i > 0) started[i] = pthread_create(&th[i], NULL, host_part_run, &parts[i]) == 0;
    }
    host_part_run(&parts[0]);
    for (int i = 1; i < k; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else host_part_run(&parts[i]);   /* no thread to be had: this one does it */
    }
}

netcl_status nc_exchange_stage(nc_exchange *x, netcl_tensor *t, nc_ticket *tk)
{
    netcl_device *dev = nc_dev(t);
    size_t n = (size_t)netcl_tensor_numel(t) * (size_t)netcl_dtype_size(t->dtype);
    unsigned char *dst = x->tp->ops->ring_area(x->tp, x->tp->rank) + ring_offset(x, tk->pos);
    netcl_tensor *c;
    NC_TRY(nc_fwd_tensor_contiguous(&c, t));
    nc_storage_settle(c->storage);
    netcl_status st = NETCL_OK;
    void **regs = NULL;
    if (dev->type != NETCL_DEVICE_CPU) st = registered(x, dev, &regs);
    /* (a contiguous copy of a strided t is read at once: the pool could hand
     * its memory to the next kernel before an asynchronous read ran) */
    if (st == NETCL_OK && regs && dev->backend->mem.read_async && c == t) {
        /* no pending event on t's storage: t is the output, left alone until
         * the result is written after the read, and the rest of its storage
         * (other gradients of one buffer) must not wait for this read */
        void *ev = NULL;
        st = dev->backend->mem.read_async(dev, c->storage->buf, (size_t)c->offset * (size_t)netcl_dtype_size(c->dtype), dst, n, &ev);
        if (st == NETCL_OK) {
            tk->dev = dev;
            tk->staged = ev;
        }
    } else if (st == NETCL_OK && dev->type != NETCL_DEVICE_CPU) {
        st = dev->backend->mem.read(dev, c->storage->buf, (size_t)c->offset * (size_t)netcl_dtype_size(c->dtype), dst, n);
    } else if (st == NETCL_OK) {
        host_run(x, tk, dst, data_of(c), netcl_tensor_numel(c), c->dtype, NETCL_DIST_SUM);
    }
    netcl_tensor_release(c);
    if (st != NETCL_OK) nc_error_prefix("distributed all_reduce: staging %s: ", nc_describe(t));
    return st;
}

netcl_status nc_exchange_arrive(nc_exchange *x, nc_ticket *tk)
{
    if (tk->staged) {
        tk->dev->backend->mem.settle(tk->dev, tk->staged, 0);
        tk->staged = NULL;
    }
    return x->tp->ops->ring_arrive(x->tp);
}

static netcl_op device_op(netcl_dist_op op)
{
    switch (op) {
    case NETCL_DIST_MAX: return NETCL_OP_MAXIMUM;
    case NETCL_DIST_MIN: return NETCL_OP_MINIMUM;
    case NETCL_DIST_PRODUCT: return NETCL_OP_MUL;
    default: return NETCL_OP_ADD;
    }
}

static void keep_nothing(void *obj) { (void)obj; }

/* the peers' blocks uploaded into tk->blocks[q] (tk->blocks[rank] stays
 * NULL: that block is t) */
static netcl_status upload_to_device(nc_exchange *x, netcl_tensor *t, nc_ticket *tk)
{
    int W = x->tp->world, r = x->tp->rank;
    netcl_device *dev = nc_dev(t);
    size_t n = (size_t)netcl_tensor_numel(t) * (size_t)netcl_dtype_size(t->dtype);
    void **regs = NULL;
    netcl_status st = registered(x, dev, &regs);
    for (int q = 0; q < W && st == NETCL_OK; q++) {
        if (q == r) continue;
        st = nc_tensor_new(&tk->blocks[q], dev, t->dtype, t->ndim, t->sizes);
        const unsigned char *src = x->tp->ops->ring_area(x->tp, q) + ring_offset(x, tk->pos);
        if (st == NETCL_OK && regs && dev->backend->mem.write_async) {
            void *ev[2];
            nc_keep keep = { NULL, keep_nothing };
            st = dev->backend->mem.write_async(dev, tk->blocks[q]->storage->buf, 0, src, n, &keep, ev);
            if (st == NETCL_OK) {
                tk->dev = dev;
                tk->uploads[tk->nuploads++] = ev[0];
                nc_storage_set_pending(tk->blocks[q]->storage, dev, ev[1]);
            }
        } else if (st == NETCL_OK) {
            st = dev->backend->mem.write(dev, tk->blocks[q]->storage->buf, 0, src, n, NULL, NULL);
        }
    }
    return st;
}

/* t = the blocks reduced on the device in rank order */
static netcl_status combine_on_device(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk)
{
    int W = x->tp->world, r = x->tp->rank;
    netcl_status st = NETCL_OK;
    netcl_tensor *acc = r == 0 ? t : tk->blocks[0];
    for (int q = 1; q < W && st == NETCL_OK; q++) st = nc_fwd_binary_into(acc, device_op(op), acc, q == r ? t : tk->blocks[q]);
    if (st == NETCL_OK && acc != t) st = nc_fwd_copy_into(t, acc);
    if (st == NETCL_OK && op == NETCL_DIST_AVG) st = nc_fwd_binary_scalar_into(t, NETCL_OP_DIV, t, (double)W, 0);
    return st;
}

/* a cpu tensor: the blocks reduced from the rings in rank order */
static netcl_status reduce_on_host(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk)
{
    netcl_tensor *out = t;
    if (!netcl_tensor_is_contiguous(t)) NC_TRY(nc_tensor_new(&out, nc_dev(t), t->dtype, t->ndim, t->sizes));
    nc_storage_settle(out->storage);
    host_run(x, tk, data_of(out), NULL, netcl_tensor_numel(t), t->dtype, op);
    netcl_status st = out == t ? NETCL_OK : nc_fwd_tensor_copy_(t, out);
    if (out != t) netcl_tensor_release(out);
    return st;
}

netcl_status nc_exchange_upload(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk)
{
    netcl_status st = nc_dev(t)->type == NETCL_DEVICE_CPU ? reduce_on_host(x, t, op, tk) : upload_to_device(x, t, tk);
    if (st != NETCL_OK) nc_error_prefix("distributed all_reduce of %s: ", nc_describe(t));
    return st;
}

netcl_status nc_exchange_combine(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk)
{
    netcl_status st = nc_dev(t)->type == NETCL_DEVICE_CPU ? NETCL_OK : combine_on_device(x, t, op, tk);
    for (int q = 0; q < x->tp->world && q <= NC_EXCHANGE_MAX_UPLOADS; q++) {
        netcl_tensor_release(tk->blocks[q]);
        tk->blocks[q] = NULL;
    }
    if (st != NETCL_OK) nc_error_prefix("distributed all_reduce of %s: ", nc_describe(t));
    return st;
}

void nc_exchange_forget(nc_ticket *tk)
{
    for (int q = 0; q <= NC_EXCHANGE_MAX_UPLOADS; q++) {
        netcl_tensor_release(tk->blocks[q]);
        tk->blocks[q] = NULL;
    }
    if (tk->staged) tk->dev->backend->mem.settle(tk->dev, tk->staged, 0);
    for (int i = 0; i < tk->nuploads; i++) tk->dev->backend->mem.settle(tk->dev, tk->uploads[i], 0);
    tk->staged = NULL;
    tk->nuploads = 0;
}

void nc_exchange_release(nc_exchange *x, nc_ticket *tk)
{
    nc_exchange_forget(tk);
    x->tp->ops->ring_consumed(x->tp, tk->end);
}
