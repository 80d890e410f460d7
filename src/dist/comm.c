/* dist/comm.c — communicators and the collectives on tensors.
 *
 * The calling thread stages each tensor into host memory (a cpu tensor
 * that is contiguous is used as it is; a device tensor goes through a
 * pinned buffer) and queues the work; one worker thread per communicator
 * runs the transport calls in queue order, so an asynchronous collective
 * overlaps whatever the caller does next (backward, the next bucket's
 * copies). netcl_dist_wait copies results back to the tensors in the
 * caller's thread, the only thread that touches a device queue. A failed
 * collective breaks the communicator: later work fails with its message.
 * Float all_reduces on a communicator with an exchange ring (exchange.h)
 * stage without waiting for the device: the worker waits for the staging
 * and the peers, and the caller's thread enqueues the reduction when it
 * next asks for progress (netcl_dist_progress, a wait, the next
 * collective), then a releaser thread publishes that the peers' bytes
 * are read once the device has read them. */
#include "dist/dist.h"
#include "dist/exchange.h"
#include "base/base.h"
#include "core/core.h"
#include "ops/ops.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { W_ALL_REDUCE, W_BROADCAST, W_REDUCE_SCATTER, W_ALL_GATHER, W_GATHER, W_SCATTER, W_BARRIER, W_EXCHANGE,
               W_PIECES } work_kind;
static const char *const kind_names[] = { "all_reduce", "broadcast", "reduce_scatter", "all_gather", "gather", "scatter", "barrier",
                                          "all_reduce", "all_reduce" };

/* a tensor and the contiguous host tensor the transport reads or writes */
typedef struct {
    netcl_tensor *user, *host;
} stage;

struct netcl_dist_work {
    netcl_comm *comm;
    work_kind kind;
    netcl_dist_op op;
    int root;
    stage in, out;            /* in-place kinds use `out` only */
    netcl_dtype dtype;        /* the tensors' dtype */
    int64_t n;                /* elements of one rank's block */
    atomic_int done;
    netcl_status st;
    char msg[1024];
    netcl_dist_work *next;
    /* W_EXCHANGE: the ring ticket; uploaded once the peers' blocks are
     * on their way to the device, reduced once the reduction is enqueued
     * (the next exchange work waiting for it in xnext) */
    nc_ticket tk;
    int uploaded, reduced;
    netcl_status rst;         /* the reduction's own failure (the worker owns st and msg) */
    char rmsg[1024];
    /* W_PIECES: an all_reduce larger than the ring, one exchange work a
     * piece of in.user (out.user itself, or its contiguous copy) */
    netcl_dist_work **pieces;
    int npieces;
    netcl_dist_work *xnext;
};

struct netcl_comm {
    netcl_dist_backend backend;
    nc_transport *tp;
    pthread_t thread, releaser;
    int thread_started, releaser_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    netcl_dist_work *head, *tail;
    int stop;
    netcl_status broken;
    char broken_msg[1024];
    nc_exchange *x;                   /* NULL: no exchange ring */
    netcl_dist_work *xhead, *xtail;   /* exchange works not yet reduced, in order (caller's thread) */
    netcl_dist_work *rhead, *rtail;   /* their releases, for the releaser thread */
    double timeout_s;
};

static void *host_ptr(netcl_tensor *t)
{
    return t ? (char *)t->storage->buf + t->offset * netcl_dtype_size(t->dtype) : NULL;
}

static int is_half(netcl_dtype dt) { return dt == NETCL_DTYPE_FLOAT16 || dt == NETCL_DTYPE_BFLOAT16; }
static int is_float(netcl_dtype dt) { return is_half(dt) || dt == NETCL_DTYPE_FLOAT32 || dt == NETCL_DTYPE_FLOAT64; }

/* ---- the worker ----------------------------------------------------------- */

/* 16-bit floats reduce in float32 (rounded once at the end); AVG is a sum
 * divided by the world size. Both run on the worker, off the caller. */
static netcl_status reduce_call(nc_transport *tp, netcl_dist_work *w, const void *in, void *out, int64_t n)
{
    netcl_dist_op op = w->op == NETCL_DIST_AVG ? NETCL_DIST_SUM : w->op;
    int scatter = w->kind == W_REDUCE_SCATTER;
    int64_t nin = scatter ? n * tp->world : n;
    netcl_dtype dt = w->dtype;
    float *wide_in = NULL, *wide_out = NULL;
    if (is_half(dt)) {
        wide_in = malloc((size_t)(nin ? nin : 1) * sizeof(float));
        wide_out = scatter ? malloc((size_t)(n ? n : 1) * sizeof(float)) : wide_in;
        if (!wide_in || !wide_out) {
            free(wide_in);
            if (scatter) free(wide_out);
            return nc_fail(NETCL_ERR_OOM, "distributed %s: out of host memory widening %lld elements", kind_names[w->kind], (long long)nin);
        }
        const uint16_t *h = in;
        for (int64_t i = 0; i < nin; i++) wide_in[i] = dt == NETCL_DTYPE_FLOAT16 ? nc_half_to_float(h[i]) : nc_bf16_to_float(h[i]);
        dt = NETCL_DTYPE_FLOAT32;
    }
    const void *src = wide_in ? (const void *)wide_in : in;
    void *dst = wide_out ? (void *)wide_out : out;
    netcl_status st = scatter ? tp->ops->reduce_scatter(tp, src, dst, n, dt, op) : tp->ops->all_reduce(tp, dst, n, dt, op);
    if (st == NETCL_OK && w->op == NETCL_DIST_AVG) {
        for (int64_t i = 0; i < n; i++) {
            if (dt == NETCL_DTYPE_FLOAT64) ((double *)dst)[i] /= tp->world;
            else ((float *)dst)[i] /= (float)tp->world;
        }
    }
    if (st == NETCL_OK && wide_out) {
        uint16_t *h = out;
        for (int64_t i = 0; i < n; i++) h[i] = w->dtype == NETCL_DTYPE_FLOAT16 ? nc_float_to_half(wide_out[i]) : nc_float_to_bf16(wide_out[i]);
    }
    free(wide_in);
    if (scatter) free(wide_out);
    return st;
}

static netcl_status run(nc_transport *tp, netcl_dist_work *w)
{
    int64_t bytes = w->n * netcl_dtype_size(w->dtype);
    void *in = host_ptr(w->in.host), *out = host_ptr(w->out.host);
    switch (w->kind) {
    case W_ALL_REDUCE: return reduce_call(tp, w, out, out, w->n);
    case W_REDUCE_SCATTER: return reduce_call(tp, w, in, out, w->n);
    case W_BROADCAST: return tp->ops->broadcast(tp, out, bytes, w->root);
    case W_ALL_GATHER: return tp->ops->all_gather(tp, in, out, bytes);
    case W_GATHER: return tp->ops->gather(tp, in, out, bytes, w->root);
    case W_SCATTER: return tp->ops->scatter(tp, in, out, bytes, w->root);
    case W_BARRIER: return tp->ops->barrier(tp);
    case W_EXCHANGE: return nc_exchange_arrive(w->comm->x, &w->tk);
    case W_PIECES: break;   /* never queued: its pieces are */
    }
    return NETCL_OK;
}

static void work_free(netcl_dist_work *w);

/* The first failure breaks the communicator (c->lock held). */
static void break_locked(netcl_comm *c, netcl_status st, const char *msg)
{
    if (st == NETCL_OK || c->broken) return;
    c->broken = st;
    snprintf(c->broken_msg, sizeof c->broken_msg, "%s", msg);
}

/* The next work of a queue (c->lock held), waiting for one; NULL once
 * the communicator stops and the queue is empty. */
static netcl_dist_work *next_work(netcl_comm *c, netcl_dist_work **head, netcl_dist_work **tail)
{
    while (!*head && !c->stop) pthread_cond_wait(&c->cond, &c->lock);
    netcl_dist_work *w = *head;
    if (w) {
        *head = w->next;
        if (!*head) *tail = NULL;
    }
    return w;
}

static void *worker(void *arg)
{
    netcl_comm *c = arg;
    pthread_mutex_lock(&c->lock);
    for (netcl_dist_work *w; (w = next_work(c, &c->head, &c->tail));) {
        netcl_status broken = c->broken;
        pthread_mutex_unlock(&c->lock);
        if (broken) {
            w->st = broken;
            snprintf(w->msg, sizeof w->msg, "distributed %s: the communicator failed earlier: %.900s", kind_names[w->kind], c->broken_msg);
        } else if ((w->st = run(c->tp, w)) != NETCL_OK) {
            snprintf(w->msg, sizeof w->msg, "%s", netcl_last_error());
        }
        pthread_mutex_lock(&c->lock);
        break_locked(c, w->st, w->msg);
        atomic_store(&w->done, 1);
        pthread_cond_broadcast(&c->cond);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* The releaser: waits until the device has read the peers' blocks of
 * each reduced exchange work, then publishes it, in order. A thread of
 * its own, because the worker may be waiting in a collective for peers
 * that are waiting for this very publication. */
static void *releaser(void *arg)
{
    netcl_comm *c = arg;
    pthread_mutex_lock(&c->lock);
    for (netcl_dist_work *w; (w = next_work(c, &c->rhead, &c->rtail));) {
        pthread_mutex_unlock(&c->lock);
        nc_exchange_release(c->x, &w->tk);
        work_free(w);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- communicators ---------------------------------------------------------- */

/* The exchange ring's bytes per rank: NETCL_SHM_EXCHANGE=0 none, =1
 * always, unset where an OpenCL GPU is present (every rank of one host
 * sees the same devices, so the ranks agree; the segment checks it). */
static uint64_t exchange_ring_bytes(int world)
{
    const char *on = getenv("NETCL_SHM_EXCHANGE"), *mb = getenv("NETCL_SHM_EXCHANGE_MB");
    if (world < 2 || (on && strcmp(on, "0") == 0)) return 0;
    int want = on && strcmp(on, "1") == 0;
    for (int i = 0; !want && i < netcl_device_count(); i++)
        want = netcl_device_type_of(netcl_device_at(i)) == NETCL_DEVICE_OPENCL_GPU;
    double m = mb && atof(mb) > 0 ? atof(mb) : 128;
    return want ? (uint64_t)(m * 1048576.0) : 0;
}

netcl_status netcl_comm_init(netcl_comm **out, netcl_dist_backend backend, const char *name, int rank, int world,
                             double timeout_s)
{
    if (!out) return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: out is NULL");
    *out = NULL;
    nc_transport *tp = NULL;
    if (backend == NETCL_DIST_SHM) NC_TRY(nc_shm_open(&tp, name, rank, world, timeout_s, exchange_ring_bytes(world)));
    else if (backend == NETCL_DIST_MPI) NC_TRY(nc_mpi_open(&tp, timeout_s));
    else return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: unknown backend %d (shm or mpi)", (int)backend);
    netcl_comm *c = calloc(1, sizeof *c);
    if (!c) {
        tp->ops->destroy(tp);
        return nc_fail(NETCL_ERR_OOM, "distributed init: out of host memory");
    }
    c->backend = backend;
    c->tp = tp;
    c->timeout_s = timeout_s > 0 ? timeout_s : 300;
    netcl_status xs = nc_exchange_new(&c->x, tp);
    if (xs != NETCL_OK) {
        tp->ops->destroy(tp);
        free(c);
        return xs;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    if (pthread_create(&c->thread, NULL, worker, c) != 0) {
        netcl_comm_release(c);
        return nc_fail(NETCL_ERR_BACKEND, "distributed init: cannot start the worker thread");
    }
    c->thread_started = 1;
    if (c->x) {
        if (pthread_create(&c->releaser, NULL, releaser, c) != 0) {
            netcl_comm_release(c);
            return nc_fail(NETCL_ERR_BACKEND, "distributed init: cannot start the releaser thread");
        }
        c->releaser_started = 1;
    }
    *out = c;
    return NETCL_OK;
}

int netcl_comm_rank(const netcl_comm *c) { return c ? c->tp->rank : -1; }
int netcl_comm_size(const netcl_comm *c) { return c ? c->tp->world : 0; }
int netcl_comm_local_rank(const netcl_comm *c) { return c ? c->tp->local_rank : -1; }

void netcl_comm_release(netcl_comm *c)
{
    if (!c) return;
    if (c->thread_started) {
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
    }
    if (c->releaser_started) pthread_join(c->releaser, NULL);
    while (c->xhead) {   /* handles never waited for: their events are let go */
        netcl_dist_work *w = c->xhead;
        c->xhead = w->xnext;
        nc_exchange_forget(&w->tk);
        w->reduced = 1;
    }
    nc_exchange_free(c->x);
    c->tp->ops->destroy(c->tp);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* ---- staging and submission --------------------------------------------------- */

static netcl_status stage_tensor(stage *s, netcl_tensor *t, int read)
{
    s->user = t;
    netcl_tensor_retain(t);
    if (nc_dev(t)->type == NETCL_DEVICE_CPU && netcl_tensor_is_contiguous(t)) {
        netcl_tensor_retain(t);
        s->host = t;
        nc_storage_settle(t->storage);
        return NETCL_OK;
    }
    NC_TRY(netcl_tensor_empty_pinned(&s->host, nc_dev(t), t->dtype, t->ndim, t->sizes));
    if (read) NC_TRY(nc_fwd_tensor_copy_(s->host, t));
    nc_storage_settle(s->host->storage);
    return NETCL_OK;
}

static void stage_release(stage *s)
{
    netcl_tensor_release(s->host);
    netcl_tensor_release(s->user);
    s->host = s->user = NULL;
}

static void work_free(netcl_dist_work *w)
{
    free(w->pieces);
    nc_exchange_forget(&w->tk);
    stage_release(&w->in);
    stage_release(&w->out);
    free(w);
}

static netcl_status check_op(const char *what, const netcl_tensor *t, netcl_dist_op op)
{
    if ((unsigned)op > NETCL_DIST_PRODUCT)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: unknown reduce op %d (sum, avg, max, min, product)", what, (int)op);
    if (op == NETCL_DIST_AVG && !is_float(t->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: avg needs a float tensor, got %s (use sum)", what, nc_describe(t));
    return NETCL_OK;
}

static netcl_status check_root(const char *what, const netcl_comm *c, int root)
{
    if (root < 0 || root >= c->tp->world)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: root %d is not a rank of this world of %d (ranks count from 0)",
                       what, root, c->tp->world);
    return NETCL_OK;
}

/* w onto a queue (the worker's or the releaser's), waking its thread */
static void enqueue(netcl_comm *c, netcl_dist_work **head, netcl_dist_work **tail, netcl_dist_work *w)
{
    pthread_mutex_lock(&c->lock);
    if (*tail) (*tail)->next = w;
    else *head = w;
    *tail = w;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void queue_work(netcl_comm *c, netcl_dist_work *w) { enqueue(c, &c->head, &c->tail, w); }

/* Queues w (its tensors staged) and, without async, waits for it. */
static netcl_status submit(netcl_dist_work *w, netcl_dist_work **async)
{
    netcl_comm *c = w->comm;
    if (w->out.user) nc_tensor_bump_version(w->out.user);
    queue_work(c, w);
    if (async) {
        *async = w;
        return NETCL_OK;
    }
    return netcl_dist_wait(w);
}

static netcl_status start(netcl_dist_work **out, netcl_comm *c, work_kind kind, const char *what)
{
    *out = NULL;
    if (!c) return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: no communicator (call distributed.init first)", what);
    netcl_dist_work *w = calloc(1, sizeof *w);
    if (!w) return nc_fail(NETCL_ERR_OOM, "distributed %s: out of host memory", what);
    w->comm = c;
    w->kind = kind;
    *out = w;
    return NETCL_OK;
}

static netcl_status fail_work(netcl_dist_work *w, netcl_status st)
{
    if (w) work_free(w);
    return st;
}

static netcl_status need_tensor(const char *what, const char *name, const netcl_tensor *t)
{
    return t ? NETCL_OK : nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: %s is missing", what, name);
}

/* ---- all_reduce through the exchange ring ---------------------------------------- */

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* w's peers' blocks onto its device (a cpu tensor is reduced there and
 * then), then its release queued for the releaser thread. */
static void upload(netcl_comm *c, netcl_dist_work *w)
{
    w->uploaded = 1;
    if (atomic_load(&w->done) && w->st != NETCL_OK) return;
    netcl_dist_work *rel = calloc(1, sizeof *rel);
    netcl_status st = nc_exchange_upload(c->x, w->out.user, w->op, &w->tk);
    if (st == NETCL_OK && !rel) st = nc_fail(NETCL_ERR_OOM, "distributed all_reduce: out of host memory");
    if (st != NETCL_OK) {
        w->rst = st;
        snprintf(w->rmsg, sizeof w->rmsg, "%s", netcl_last_error());
        free(rel);
        return;
    }
    rel->comm = c;
    rel->kind = W_EXCHANGE;
    /* the upload events move to the release (the worker may still be using
     * the rest of the ticket) */
    rel->tk.pos = w->tk.pos;
    rel->tk.end = w->tk.end;
    rel->tk.dev = w->tk.dev;
    rel->tk.nuploads = w->tk.nuploads;
    memcpy(rel->tk.uploads, w->tk.uploads, sizeof w->tk.uploads);
    w->tk.nuploads = 0;
    enqueue(c, &c->rhead, &c->rtail, rel);
}

/* The oldest exchange work, uploaded: its reduction enqueued. */
static void combine_head(netcl_comm *c)
{
    netcl_dist_work *w = c->xhead;
    c->xhead = w->xnext;
    if (!c->xhead) c->xtail = NULL;
    w->reduced = 1;
    if (w->rst != NETCL_OK || (atomic_load(&w->done) && w->st != NETCL_OK)) return;
    netcl_status st = nc_exchange_combine(c->x, w->out.user, w->op, &w->tk);
    if (st != NETCL_OK) {
        w->rst = st;
        snprintf(w->rmsg, sizeof w->rmsg, "%s", netcl_last_error());
    }
}

/* Uploads, in order, every exchange work whose peers have arrived; with
 * `until`, then waits for the peers of the works up to that one and
 * reduces them. Reductions are queued only when a result is waited for:
 * kernels that wait for the peers' blocks would hold up whatever the
 * caller queues after them. */
static void progress(netcl_comm *c, netcl_dist_work *until)
{
    for (netcl_dist_work *w = c->xhead; w && atomic_load(&w->done); w = w->xnext)
        if (!w->uploaded) upload(c, w);
    while (until && !until->reduced) {
        netcl_dist_work *w = c->xhead;
        if (!w->uploaded) {
            pthread_mutex_lock(&c->lock);
            while (!atomic_load(&w->done)) pthread_cond_wait(&c->cond, &c->lock);
            pthread_mutex_unlock(&c->lock);
            upload(c, w);
        }
        combine_head(c);
    }
}

void netcl_dist_progress(netcl_comm *c)
{
    if (c) progress(c, NULL);
}

static netcl_status exchange_one(netcl_comm *c, netcl_tensor *t, netcl_dist_op op, netcl_dist_work **async)
{
    netcl_dist_work *w;
    NC_TRY(start(&w, c, W_EXCHANGE, "all_reduce"));
    w->op = op;
    w->dtype = t->dtype;
    w->n = netcl_tensor_numel(t);
    netcl_tensor_retain(t);
    w->out.user = t;
    nc_exchange_place(c->x, w->n * netcl_dtype_size(t->dtype), &w->tk);
    /* the ring positions are taken: from here a failure breaks the communicator */
    double deadline = seconds() + c->timeout_s;
    netcl_status st = NETCL_OK;
    for (int room = 0; st == NETCL_OK;) {
        st = nc_exchange_room(c->x, &w->tk, &room);
        if (st != NETCL_OK || room) break;
        progress(c, NULL);   /* the peers may be waiting for this rank to read their bytes */
        if (seconds() > deadline)
            st = nc_fail(NETCL_ERR_BACKEND, "distributed all_reduce: rank %d waited %.0f s for its peers to read the exchange "
                         "ring (timeout_s; a peer stuck or issuing other collectives)", c->tp->rank, c->timeout_s);
        usleep(20);
    }
    if (st == NETCL_OK) st = nc_exchange_stage(c->x, t, &w->tk);
    if (st != NETCL_OK) {
        pthread_mutex_lock(&c->lock);
        break_locked(c, st, netcl_last_error());
        pthread_mutex_unlock(&c->lock);
        return fail_work(w, st);
    }
    if (c->xtail) c->xtail->xnext = w;
    else c->xhead = w;
    c->xtail = w;
    return submit(w, async);
}

/* A tensor larger than the ring: one exchange a piece, all started
 * before any is waited for; the handle waits for them all. */
static netcl_status exchange_all_reduce(netcl_comm *c, netcl_tensor *t, netcl_dist_op op, netcl_dist_work **async)
{
    int64_t n = netcl_tensor_numel(t), per = nc_exchange_piece(c->x, t->dtype);
    if (n <= per) return exchange_one(c, t, op, async);
    netcl_dist_work *g;
    NC_TRY(start(&g, c, W_PIECES, "all_reduce"));
    int k = (int)((n + per - 1) / per);
    netcl_tensor *whole = NULL;
    netcl_status st = nc_fwd_tensor_contiguous(&whole, t);
    if (st == NETCL_OK && !(g->pieces = calloc((size_t)k, sizeof *g->pieces)))
        st = nc_fail(NETCL_ERR_OOM, "distributed all_reduce: out of host memory");
    if (st != NETCL_OK) {
        netcl_tensor_release(whole);
        return fail_work(g, st);
    }
    netcl_tensor_retain(t);
    g->out.user = t;
    g->in.user = whole;   /* (released with the work) */
    nc_tensor_bump_version(t);
    for (int i = 0; i < k && st == NETCL_OK; i++) {
        int64_t len = n - i * per < per ? n - i * per : per, one = 1;
        netcl_tensor *piece;
        st = nc_tensor_view_of(&piece, whole, 1, &len, &one, whole->offset + i * per);
        if (st == NETCL_OK) {
            st = exchange_one(c, piece, op, &g->pieces[i]);
            netcl_tensor_release(piece);
        }
        if (st == NETCL_OK) g->npieces++;
    }
    if (st != NETCL_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", netcl_last_error());
        for (int i = 0; i < g->npieces; i++) netcl_dist_wait(g->pieces[i]);
        return fail_work(g, nc_fail(st, "%s", msg));
    }
    if (async) {
        *async = g;
        return NETCL_OK;
    }
    return netcl_dist_wait(g);
}

netcl_status netcl_dist_all_reduce(netcl_comm *c, netcl_tensor *t, netcl_dist_op op, netcl_dist_work **async)
{
    netcl_dist_work *w;
    NC_TRY(need_tensor("all_reduce", "the tensor", t));
    NC_TRY(check_op("all_reduce", t, op));
    if (c && nc_exchange_takes(c->x, t, op)) return exchange_all_reduce(c, t, op, async);
    NC_TRY(start(&w, c, W_ALL_REDUCE, "all_reduce"));
    w->op = op;
    w->dtype = t->dtype;
    w->n = netcl_tensor_numel(t);
    netcl_status st = stage_tensor(&w->out, t, 1);
    return st != NETCL_OK ? fail_work(w, st) : submit(w, async);
}

netcl_status netcl_dist_broadcast(netcl_comm *c, netcl_tensor *t, int root, netcl_dist_work **async)
{
    netcl_dist_work *w;
    NC_TRY(need_tensor("broadcast", "the tensor", t));
    if (c) NC_TRY(check_root("broadcast", c, root));
    NC_TRY(start(&w, c, W_BROADCAST, "broadcast"));
    w->root = root;
    w->dtype = t->dtype;
    w->n = netcl_tensor_numel(t);
    netcl_status st = stage_tensor(&w->out, t, c->tp->rank == root);
    return st != NETCL_OK ? fail_work(w, st) : submit(w, async);
}

/* big (numel world*n) and small (numel n) of one dtype */
static netcl_status check_blocks(const char *what, const netcl_comm *c, const netcl_tensor *big, const netcl_tensor *small)
{
    if (big->dtype != small->dtype)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: dtypes differ: %s and %s", what, nc_describe(big), nc_describe(small));
    if (netcl_tensor_numel(big) != netcl_tensor_numel(small) * c->tp->world)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed %s: %s must hold world size (%d) x %lld elements of %s", what,
                       nc_describe(big), c->tp->world, (long long)netcl_tensor_numel(small), nc_describe(small));
    return NETCL_OK;
}

netcl_status netcl_dist_reduce_scatter(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, netcl_dist_op op,
                                       netcl_dist_work **async)
{
    netcl_dist_work *w;
    NC_TRY(need_tensor("reduce_scatter", "out", out));
    NC_TRY(need_tensor("reduce_scatter", "in", in));
    NC_TRY(check_op("reduce_scatter", in, op));
    NC_TRY(start(&w, c, W_REDUCE_SCATTER, "reduce_scatter"));
    netcl_status st = check_blocks("reduce_scatter", c, in, out);
    w->op = op;
    w->dtype = in->dtype;
    w->n = netcl_tensor_numel(out);
    if (st == NETCL_OK) st = stage_tensor(&w->in, in, 1);
    if (st == NETCL_OK) st = stage_tensor(&w->out, out, 0);
    return st != NETCL_OK ? fail_work(w, st) : submit(w, async);
}

static netcl_status gather_kind(netcl_comm *c, work_kind kind, netcl_tensor *out, netcl_tensor *in, int root,
                                netcl_dist_work **async)
{
    const char *what = kind_names[kind];
    netcl_dist_work *w;
    NC_TRY(need_tensor(what, "in", in));
    if (c && kind == W_GATHER) NC_TRY(check_root(what, c, root));
    NC_TRY(start(&w, c, kind, what));
    int has_out = kind == W_ALL_GATHER || c->tp->rank == root;
    netcl_status st = has_out ? need_tensor(what, "out (on this rank)", out) : NETCL_OK;
    if (st == NETCL_OK && has_out) st = check_blocks(what, c, out, in);
    w->root = root;
    w->dtype = in->dtype;
    w->n = netcl_tensor_numel(in);
    if (st == NETCL_OK) st = stage_tensor(&w->in, in, 1);
    if (st == NETCL_OK && has_out) st = stage_tensor(&w->out, out, 0);
    return st != NETCL_OK ? fail_work(w, st) : submit(w, async);
}

netcl_status netcl_dist_all_gather(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, netcl_dist_work **async)
{
    return gather_kind(c, W_ALL_GATHER, out, in, 0, async);
}

netcl_status netcl_dist_gather(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, int root, netcl_dist_work **async)
{
    return gather_kind(c, W_GATHER, out, in, root, async);
}

netcl_status netcl_dist_scatter(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, int root, netcl_dist_work **async)
{
    netcl_dist_work *w;
    NC_TRY(need_tensor("scatter", "out", out));
    if (c) NC_TRY(check_root("scatter", c, root));
    NC_TRY(start(&w, c, W_SCATTER, "scatter"));
    int is_root = c->tp->rank == root;
    netcl_status st = is_root ? need_tensor("scatter", "in (on the root)", in) : NETCL_OK;
    if (st == NETCL_OK && is_root) st = check_blocks("scatter", c, in, out);
    w->root = root;
    w->dtype = out->dtype;
    w->n = netcl_tensor_numel(out);
    if (st == NETCL_OK && is_root) st = stage_tensor(&w->in, in, 1);
    if (st == NETCL_OK) st = stage_tensor(&w->out, out, 0);
    return st != NETCL_OK ? fail_work(w, st) : submit(w, async);
}

netcl_status netcl_dist_barrier(netcl_comm *c)
{
    netcl_dist_work *w;
    NC_TRY(start(&w, c, W_BARRIER, "barrier"));
    return submit(w, NULL);
}

int netcl_dist_done(const netcl_dist_work *w)
{
    if (w && w->kind == W_PIECES) {
        for (int i = 0; i < w->npieces; i++)
            if (!atomic_load(&w->pieces[i]->done)) return 0;
        return 1;
    }
    return w ? atomic_load(&w->done) : 1;
}

netcl_status netcl_dist_wait(netcl_dist_work *w)
{
    if (!w) return nc_fail(NETCL_ERR_ARGUMENT, "distributed wait: no work handle");
    netcl_comm *c = w->comm;
    if (w->kind == W_PIECES) {
        netcl_status st = NETCL_OK;
        char msg[1024] = "";
        for (int i = 0; i < w->npieces; i++) {
            netcl_status s = netcl_dist_wait(w->pieces[i]);
            if (s != NETCL_OK && st == NETCL_OK) {
                st = s;
                snprintf(msg, sizeof msg, "%s", netcl_last_error());
            }
        }
        w->npieces = 0;
        if (st == NETCL_OK && w->in.user != w->out.user) st = nc_fwd_tensor_copy_(w->out.user, w->in.user);
        else if (st != NETCL_OK) nc_fail(st, "%s", msg);
        work_free(w);
        return st;
    }
    if (w->kind == W_EXCHANGE) {
        progress(c, w);
        if (w->st == NETCL_OK && w->rst != NETCL_OK) {
            netcl_status st = nc_fail(w->rst, "%s", w->rmsg);
            work_free(w);
            return st;
        }
    }
    pthread_mutex_lock(&c->lock);
    while (!atomic_load(&w->done)) pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    netcl_status st = w->st;
    if (st != NETCL_OK) nc_fail(st, "%s", w->msg);
    else if (w->out.host && w->out.host != w->out.user) {
        st = nc_fwd_tensor_copy_(w->out.user, w->out.host);
        if (st != NETCL_OK) nc_error_prefix("distributed %s: writing the result back: ", kind_names[w->kind]);
    }
    work_free(w);
    return st;
}
