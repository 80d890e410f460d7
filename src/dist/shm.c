/* dist/shm.c — the shared-memory transport for the ranks of one host.
 *
 * One POSIX shared segment: a header (per-rank arrival counters, pids, an
 * abort word) and two slot buffers per rank. A collective moves its data
 * in chunks of one slot; each chunk alternates between the two buffers, so
 * the arrival that starts chunk k+1 also proves every rank has finished
 * reading chunk k-1's buffer, and back-to-back collectives need no extra
 * barrier. all_reduce is a reduce-scatter (rank r reduces slice r of every
 * slot, in rank order) then an all-gather: each element is reduced by one
 * rank only, so every rank copies bitwise the same result.
 *
 * Large all_reduces take a single-copy path where the kernel allows it
 * (cross-memory attach, process_vm_readv; probed at init, NETCL_SHM_CMA=0
 * turns it off): each rank publishes its buffer's address, reduces its
 * slice reading the peers' slices straight from their memory, then reads
 * the peers' reduced slices into its own buffer. Same order of
 * accumulation as the slot path, so the same bits.
 *
 * Where float all_reduces stage whole tensors (exchange.c), the segment
 * also holds an exchange ring per rank; each rank publishes how far it has
 * consumed the rings (its own included: a rank may stage several tensors
 * before it reduces the first), and a rank writes into its ring only
 * where every rank has consumed what was there before.
 *
 * Waiting spins briefly, then sleeps on a futex in the segment. While it
 * waits it checks the peers' processes (/proc) and the abort word, and
 * gives up after the timeout: a dead or stuck peer is an error naming it,
 * never a hang. The name is unlinked as soon as every rank has attached,
 * so nothing is left in /dev/shm however the processes end. */
#include "dist/dist.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC 0x6e63736dU
#define SHM_MAX_WORLD 1024

typedef struct {
    _Atomic uint32_t v;
    char pad[60];
} shm_counter;

typedef struct {
    _Atomic uint32_t magic;
    uint32_t world;
    uint64_t slot_bytes;
    uint64_t ring_bytes;
    _Atomic uint32_t attached;
    _Atomic uint32_t wake;        /* futex word: raised at every arrival */
    _Atomic int32_t abort_rank;   /* 0, or 1 + the rank that gave up */
    char pad[28];
} shm_header;

typedef struct {
    nc_transport base;
    char name[128];
    unsigned char *map;
    size_t map_bytes;
    shm_header *h;
    _Atomic int32_t *pids;
    shm_counter *seq;
    _Atomic uint64_t *addr;       /* each rank's buffer for the single-copy path */
    _Atomic int32_t *cma_ok;      /* each rank's probe result */
    _Atomic uint64_t *consumed;   /* each rank's ring position read */
    unsigned char *rings;
    int cma;                      /* the single-copy path is on */
    unsigned char *scratch;       /* one slot of private memory for it */
    unsigned char *slots;
    uint64_t slot_bytes;
    uint32_t my_seq;
    int buf;                      /* the slot buffer the next chunk uses */
    double timeout_s;
    const char *what;             /* the collective running, for messages */
} shm_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char *slot(shm_t *s, int rank, int buf)
{
    return s->slots + ((size_t)rank * 2 + (size_t)buf) * s->slot_bytes;
}

/* A zombie still answers kill(pid, 0), so read the process state. */
static int process_alive(int pid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strrchr(text, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static void wake_all(shm_t *s)
{
    atomic_fetch_add(&s->h->wake, 1);
    syscall(SYS_futex, &s->h->wake, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static netcl_status give_up(shm_t *s, netcl_status st)
{
    int32_t none = 0;
    atomic_compare_exchange_strong(&s->h->abort_rank, &none, s->base.rank + 1);
    wake_all(s);
    return st;
}

/* An error naming rank q when its process has exited. */
static netcl_status check_peer(shm_t *s, int q)
{
    int pid = atomic_load(&s->pids[q]);
    if (pid > 0 && !process_alive(pid))
        return give_up(s, nc_fail(NETCL_ERR_BACKEND, "distributed %s: rank %d (pid %d) has exited; rank %d cannot continue",
                                  s->what, q, pid, s->base.rank));
    return NETCL_OK;
}

/* An error when another rank gave up (the abort word), naming it. */
static netcl_status peer_gave_up(shm_t *s, const char *what)
{
    int32_t ab = atomic_load(&s->h->abort_rank);
    if (ab && ab != s->base.rank + 1)
        return nc_fail(NETCL_ERR_BACKEND, "distributed %s: rank %d failed, so the job cannot continue (see its message)", what,
                       ab - 1);
    return NETCL_OK;
}

/* The first rank that has not reached `target`, or -1. */
static int first_missing(shm_t *s, uint32_t target)
{
    for (int q = 0; q < s->base.world; q++)
        if ((int32_t)(atomic_load_explicit(&s->seq[q].v, memory_order_acquire) - target) < 0) return q;
    return -1;
}

/* Arrive and wait until every rank has arrived as often. */
static netcl_status sync_all(shm_t *s)
{
    uint32_t mine = ++s->my_seq;
    atomic_store_explicit(&s->seq[s->base.rank].v, mine, memory_order_release);
    wake_all(s);
    double start = now_s(), next_check = start + 0.05;
    for (int spins = 0;; spins++) {
        uint32_t w = atomic_load(&s->h->wake);
        int q = first_missing(s, mine);
        if (q < 0) return NETCL_OK;
        if (peer_gave_up(s, s->what) != NETCL_OK) {
            NC_TRY(check_peer(s, q));   /* a dead peer is the better message */
            return peer_gave_up(s, s->what);
        }
        if (spins < 2000) {
            if (spins > 100) sched_yield();
            continue;
        }
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        syscall(SYS_futex, &s->h->wake, FUTEX_WAIT, w, &ts, NULL, 0);
        double t = now_s();
        if (t >= next_check) {
            next_check = t + 0.05;
            NC_TRY(check_peer(s, q));
        }
        if (t - start > s->timeout_s)
            return give_up(s, nc_fail(NETCL_ERR_BACKEND,
                                      "distributed %s: rank %d waited %.0f s for rank %d (pid %d), which did not arrive "
                                      "(timeout_s; a peer stuck or issuing other collectives)",
                                      s->what, s->base.rank, s->timeout_s, q, (int)atomic_load(&s->pids[q])));
    }
}

/* Reads nbytes at rank q's address `remote` into `local` (cross-memory attach). */
static netcl_status peer_read(shm_t *s, int q, void *local, uint64_t remote, size_t nbytes)
{
    while (nbytes > 0) {
        struct iovec l = { local, nbytes }, r = { (void *)(uintptr_t)remote, nbytes };
        ssize_t got = process_vm_readv((pid_t)atomic_load(&s->pids[q]), &l, 1, &r, 1, 0);
        if (got <= 0) {
            int err = errno;
            NC_TRY(check_peer(s, q));   /* a peer that died: say so */
            return give_up(s, nc_fail(NETCL_ERR_BACKEND, "distributed %s: reading rank %d's buffer failed: %s", s->what, q,
                                      got < 0 ? strerror(err) : "nothing read"));
        }
        local = (char *)local + got;
        remote += (uint64_t)got;
        nbytes -= (size_t)got;
    }
    return NETCL_OK;
}

/* The single-copy all_reduce: slices reduced from the peers' memory. */
static netcl_status all_reduce_direct(shm_t *s, unsigned char *buf, int64_t n, netcl_dtype dt, netcl_dist_op op)
{
    int W = s->base.world, r = s->base.rank;
    size_t es = (size_t)netcl_dtype_size(dt);
    int64_t per = (int64_t)(s->slot_bytes / es);
    atomic_store(&s->addr[r], (uint64_t)(uintptr_t)buf);
    NC_TRY(sync_all(s));
    int64_t lo = n * r / W, hi = n * (r + 1) / W;
    for (int q = 0; q < W; q++) {
        if (q == r) continue;
        uint64_t base = atomic_load(&s->addr[q]);
        for (int64_t off = lo; off < hi; off += per) {
            int64_t cnt = hi - off < per ? hi - off : per;
            NC_TRY(peer_read(s, q, s->scratch, base + (uint64_t)off * es, (size_t)cnt * es));
            nc_dist_accumulate(buf + off * (int64_t)es, s->scratch, cnt, dt, op);
        }
    }
    NC_TRY(sync_all(s));
    for (int q = 0; q < W; q++) {
        if (q == r) continue;
        int64_t a = n * q / W, e = n * (q + 1) / W;
        NC_TRY(peer_read(s, q, buf + a * (int64_t)es, atomic_load(&s->addr[q]) + (uint64_t)a * es, (size_t)(e - a) * es));
    }
    return sync_all(s);   /* the peers may still be reading this buffer */
}

/* Whether every rank can read its neighbour's memory (all ranks agree). */
static netcl_status probe_cma(shm_t *s)
{
    static volatile uint64_t probe = 0x6e63636d61ULL;
    int W = s->base.world, r = s->base.rank;
    const char *env = getenv("NETCL_SHM_CMA");
    int want = W > 1 && !(env && strcmp(env, "0") == 0);
    atomic_store(&s->addr[r], (uint64_t)(uintptr_t)&probe);
    NC_TRY(sync_all(s));
    int ok = 0;
    if (want) {
        uint64_t got = 0;
        int q = (r + 1) % W;
        struct iovec l = { &got, sizeof got }, rv = { (void *)(uintptr_t)atomic_load(&s->addr[q]), sizeof got };
        ok = process_vm_readv((pid_t)atomic_load(&s->pids[q]), &l, 1, &rv, 1, 0) == (ssize_t)sizeof got && got == probe;
    }
    atomic_store(&s->cma_ok[r], ok);
    NC_TRY(sync_all(s));
    s->cma = 1;
    for (int q = 0; q < W; q++) s->cma = s->cma && atomic_load(&s->cma_ok[q]);
    if (s->cma && !(s->scratch = malloc(s->slot_bytes))) s->cma = 0;
    return NETCL_OK;
}

static netcl_status shm_all_reduce(nc_transport *t, void *data, int64_t n, netcl_dtype dt, netcl_dist_op op)
{
    shm_t *s = (shm_t *)t;
    s->what = "all_reduce";
    /* large tensors: the single-copy path (below a slot the copies are cheap) */
    if (s->cma && (uint64_t)n * (uint64_t)netcl_dtype_size(dt) >= s->slot_bytes)
        return all_reduce_direct(s, data, n, dt, op);
    int W = t->world, r = t->rank;
    size_t es = (size_t)netcl_dtype_size(dt);
    int64_t per = (int64_t)(s->slot_bytes / es);
    unsigned char *buf = data;
    for (int64_t off = 0; off < n; off += per) {
        int64_t cnt = n - off < per ? n - off : per;
        int b = s->buf;
        s->buf ^= 1;
        memcpy(slot(s, r, b), buf + off * es, (size_t)cnt * es);
        NC_TRY(sync_all(s));
        int64_t lo = cnt * r / W, hi = cnt * (r + 1) / W;
        for (int q = 0; q < W; q++)
            if (q != r) nc_dist_accumulate(slot(s, r, b) + lo * es, slot(s, q, b) + lo * es, hi - lo, dt, op);
        NC_TRY(sync_all(s));
        for (int q = 0; q < W; q++) {
            int64_t a = cnt * q / W, e = cnt * (q + 1) / W;
            memcpy(buf + (off + a) * es, slot(s, q, b) + a * es, (size_t)(e - a) * es);
        }
    }
    return NETCL_OK;
}

static netcl_status shm_broadcast(nc_transport *t, void *data, int64_t nbytes, int root)
{
    shm_t *s = (shm_t *)t;
    s->what = "broadcast";
    unsigned char *buf = data;
    for (int64_t off = 0; off < nbytes; off += (int64_t)s->slot_bytes) {
        int64_t cnt = nbytes - off < (int64_t)s->slot_bytes ? nbytes - off : (int64_t)s->slot_bytes;
        int b = s->buf;
        s->buf ^= 1;
        if (t->rank == root) memcpy(slot(s, root, b), buf + off, (size_t)cnt);
        NC_TRY(sync_all(s));
        if (t->rank != root) memcpy(buf + off, slot(s, root, b), (size_t)cnt);
    }
    return NETCL_OK;
}

/* all_gather and gather: out (rank `root`, or every rank when root < 0) */
static netcl_status gather_to(shm_t *s, const void *in, void *out, int64_t nbytes, int root)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
    for (int64_t off = 0; off < nbytes; off += (int64_t)s->slot_bytes) {
        int64_t cnt = nbytes - off < (int64_t)s->slot_bytes ? nbytes - off : (int64_t)s->slot_bytes;
        int b = s->buf;
        s->buf ^= 1;
        memcpy(slot(s, s->base.rank, b), src + off, (size_t)cnt);
        NC_TRY(sync_all(s));
        if (root < 0 || s->base.rank == root)
            for (int q = 0; q < s->base.world; q++) memcpy(dst + (int64_t)q * nbytes + off, slot(s, q, b), (size_t)cnt);
    }
    return NETCL_OK;
}

static netcl_status shm_all_gather(nc_transport *t, const void *in, void *out, int64_t nbytes)
{
    ((shm_t *)t)->what = "all_gather";
    return gather_to((shm_t *)t, in, out, nbytes, -1);
}

static netcl_status shm_gather(nc_transport *t, const void *in, void *out, int64_t nbytes, int root)
{
    ((shm_t *)t)->what = "gather";
    return gather_to((shm_t *)t, in, out, nbytes, root);
}

static netcl_status shm_scatter(nc_transport *t, const void *in, void *out, int64_t nbytes, int root)
{
    shm_t *s = (shm_t *)t;
    s->what = "scatter";
    int W = t->world;
    int64_t piece = (int64_t)(s->slot_bytes / (uint64_t)W) & ~(int64_t)63;
    const unsigned char *src = in;
    unsigned char *dst = out;
    for (int64_t off = 0; off < nbytes; off += piece) {
        int64_t cnt = nbytes - off < piece ? nbytes - off : piece;
        int b = s->buf;
        s->buf ^= 1;
        if (t->rank == root)
            for (int q = 0; q < W; q++) memcpy(slot(s, root, b) + q * piece, src + (int64_t)q * nbytes + off, (size_t)cnt);
        NC_TRY(sync_all(s));
        memcpy(dst + off, slot(s, root, b) + t->rank * piece, (size_t)cnt);
    }
    return NETCL_OK;
}

static netcl_status shm_reduce_scatter(nc_transport *t, const void *in, void *out, int64_t n, netcl_dtype dt,
                                       netcl_dist_op op)
{
    shm_t *s = (shm_t *)t;
    s->what = "reduce_scatter";
    int W = t->world, r = t->rank;
    size_t es = (size_t)netcl_dtype_size(dt);
    int64_t per = (int64_t)(s->slot_bytes / es / (uint64_t)W);   /* elements of each slice a chunk moves */
    const unsigned char *src = in;
    unsigned char *dst = out;
    for (int64_t off = 0; off < n; off += per) {
        int64_t cnt = n - off < per ? n - off : per;
        int b = s->buf;
        s->buf ^= 1;
        for (int q = 0; q < W; q++)
            memcpy(slot(s, r, b) + (size_t)q * (size_t)per * es, src + ((int64_t)q * n + off) * (int64_t)es, (size_t)cnt * es);
        NC_TRY(sync_all(s));
        unsigned char *o = dst + off * (int64_t)es;
        memcpy(o, slot(s, 0, b) + (size_t)r * (size_t)per * es, (size_t)cnt * es);
        for (int q = 1; q < W; q++) nc_dist_accumulate(o, slot(s, q, b) + (size_t)r * (size_t)per * es, cnt, dt, op);
    }
    return NETCL_OK;
}

static netcl_status shm_barrier(nc_transport *t)
{
    ((shm_t *)t)->what = "barrier";
    return sync_all((shm_t *)t);
}

/* ---- the exchange ring ---------------------------------------------------------- */

static unsigned char *shm_ring_area(nc_transport *t, int rank)
{
    shm_t *s = (shm_t *)t;
    return s->rings + (size_t)rank * s->base.ring_bytes;
}

static netcl_status shm_ring_room(nc_transport *t, uint64_t end, int *room)
{
    shm_t *s = (shm_t *)t;
    *room = 1;
    if (end <= s->base.ring_bytes) return NETCL_OK;
    for (int q = 0; q < t->world; q++) {
        if (atomic_load_explicit(&s->consumed[q], memory_order_acquire) >= end - s->base.ring_bytes) continue;
        *room = 0;
        if (q != t->rank) NC_TRY(check_peer(s, q));
        NC_TRY(peer_gave_up(s, "all_reduce"));
    }
    return NETCL_OK;
}

static void shm_ring_consumed(nc_transport *t, uint64_t end)
{
    atomic_store_explicit(&((shm_t *)t)->consumed[t->rank], end, memory_order_release);
}

/* One arrival is all an exchange needs, so a peer that gave up after
 * arriving is checked for here (the slot path meets it at its next one). */
static netcl_status shm_ring_arrive(nc_transport *t)
{
    shm_t *s = (shm_t *)t;
    s->what = "all_reduce";
    NC_TRY(sync_all(s));
    return peer_gave_up(s, "all_reduce");
}

static void shm_destroy(nc_transport *t)
{
    shm_t *s = (shm_t *)t;
    free(s->scratch);
    if (s->map) munmap(s->map, s->map_bytes);
    free(s);
}

static netcl_status attach(shm_t *s, int create)
{
    int world = s->base.world;
    size_t pid_bytes = (((size_t)world * sizeof(int32_t) + 63) / 64) * 64;
    size_t seq_bytes = (size_t)world * sizeof(shm_counter);
    size_t addr_bytes = (((size_t)world * (2 * sizeof(uint64_t) + sizeof(int32_t)) + 63) / 64) * 64;
    size_t head = ((sizeof(shm_header) + pid_bytes + seq_bytes + addr_bytes + 4095) / 4096) * 4096;
    s->map_bytes = head + (size_t)world * 2 * s->slot_bytes + (size_t)world * s->base.ring_bytes;
    int fd = -1;
    double start = now_s();
    if (create) {
        fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno == EEXIST) {   /* left by an earlier job of the same name */
            shm_unlink(s->name);
            fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        }
        if (fd < 0) return nc_fail(NETCL_ERR_BACKEND, "distributed init: shm_open(%s): %s", s->name, strerror(errno));
        /* reserve the pages now: a full /dev/shm is an error here, not a SIGBUS later */
        int err = posix_fallocate(fd, 0, (off_t)s->map_bytes);
        if (err) {
            close(fd);
            shm_unlink(s->name);
            return nc_fail(NETCL_ERR_OOM, "distributed init: cannot reserve %zu bytes in /dev/shm for %s: %s "
                           "(NETCL_SHM_SLOT_MB and NETCL_SHM_EXCHANGE_MB make it smaller)", s->map_bytes, s->name, strerror(err));
        }
    } else {
        for (;;) {
            fd = shm_open(s->name, O_RDWR, 0600);
            struct stat st;
            if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= s->map_bytes) break;
            if (fd >= 0) close(fd);
            if (now_s() - start > s->timeout_s)
                return nc_fail(NETCL_ERR_BACKEND, "distributed init: rank %d waited %.0f s for rank 0 to create %s",
                               s->base.rank, s->timeout_s, s->name);
            usleep(2000);
        }
    }
    s->map = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return nc_fail(NETCL_ERR_BACKEND, "distributed init: mmap of %s: %s", s->name, strerror(errno));
    }
    s->h = (shm_header *)s->map;
    s->pids = (_Atomic int32_t *)(s->map + sizeof(shm_header));
    s->seq = (shm_counter *)(s->map + sizeof(shm_header) + pid_bytes);
    s->addr = (_Atomic uint64_t *)(s->map + sizeof(shm_header) + pid_bytes + seq_bytes);
    s->consumed = s->addr + world;
    s->cma_ok = (_Atomic int32_t *)(s->consumed + world);
    s->slots = s->map + head;
    s->rings = s->slots + (size_t)world * 2 * s->slot_bytes;
    if (create) {
        s->h->world = (uint32_t)world;
        s->h->slot_bytes = s->slot_bytes;
        s->h->ring_bytes = s->base.ring_bytes;
        atomic_store(&s->h->magic, SHM_MAGIC);
    } else {
        while (atomic_load(&s->h->magic) != SHM_MAGIC) {
            if (now_s() - start > s->timeout_s)
                return nc_fail(NETCL_ERR_BACKEND, "distributed init: %s was never initialised by rank 0", s->name);
            usleep(1000);
        }
        if (s->h->world != (uint32_t)world || s->h->slot_bytes != s->slot_bytes || s->h->ring_bytes != s->base.ring_bytes)
            return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: %s was made for world %u, slots of %llu bytes, rings of %llu; "
                           "rank %d has world %d, slots of %llu bytes, rings of %llu (NETCL_SHM_SLOT_MB, NETCL_SHM_EXCHANGE "
                           "and the GPUs each rank sees must agree)", s->name, s->h->world,
                           (unsigned long long)s->h->slot_bytes, (unsigned long long)s->h->ring_bytes, s->base.rank, world,
                           (unsigned long long)s->slot_bytes, (unsigned long long)s->base.ring_bytes);
    }
    atomic_store(&s->pids[s->base.rank], (int32_t)getpid());
    atomic_fetch_add(&s->h->attached, 1);
    return NETCL_OK;
}

static const nc_transport_ops shm_ops = {
    .all_reduce = shm_all_reduce, .broadcast = shm_broadcast, .reduce_scatter = shm_reduce_scatter,
    .all_gather = shm_all_gather, .gather = shm_gather, .scatter = shm_scatter, .barrier = shm_barrier,
    .destroy = shm_destroy, .ring_area = shm_ring_area, .ring_room = shm_ring_room, .ring_consumed = shm_ring_consumed,
    .ring_arrive = shm_ring_arrive,
};

netcl_status nc_shm_open(nc_transport **out, const char *name, int rank, int world, double timeout_s, uint64_t ring_bytes)
{
    *out = NULL;
    if (world < 1 || world > SHM_MAX_WORLD || rank < 0 || rank >= world)
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: rank %d of world %d (ranks count from 0, world 1..%d)",
                       rank, world, SHM_MAX_WORLD);
    if (!name || !*name || strlen(name) > 100 || strchr(name + 1, '/'))
        return nc_fail(NETCL_ERR_ARGUMENT, "distributed init: shm needs a segment name of 1..100 characters without '/', got '%s'",
                       name ? name : "(null)");
    shm_t *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(NETCL_ERR_OOM, "distributed init: out of host memory");
    snprintf(s->name, sizeof s->name, "%s%s", name[0] == '/' ? "" : "/", name);
    s->base.rank = rank;
    s->base.world = world;
    s->base.local_rank = rank;
    s->base.ring_bytes = (ring_bytes + 4095) / 4096 * 4096;
    s->timeout_s = timeout_s > 0 ? timeout_s : 300;
    const char *mb = getenv("NETCL_SHM_SLOT_MB");
    double slot_mb = mb && atof(mb) > 0 ? atof(mb) : 4;
    s->slot_bytes = ((uint64_t)(slot_mb * 1048576.0) + 4095) / 4096 * 4096;
    if (s->slot_bytes < 4096 * (uint64_t)world) s->slot_bytes = 4096 * (uint64_t)world;
    s->what = "init";
    s->base.ops = &shm_ops;
    netcl_status st = attach(s, rank == 0);
    if (st == NETCL_OK) st = sync_all(s);   /* every rank attached: the name can go */
    if (rank == 0) shm_unlink(s->name);
    if (st == NETCL_OK) st = probe_cma(s);
    if (st != NETCL_OK) {
        shm_destroy(&s->base);
        return st;
    }
    *out = &s->base;
    return NETCL_OK;
}
