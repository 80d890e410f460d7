/* memory.c — per-device buffer pool with size classes (four per power of
 * two below 1 MiB, sixteen from there: at most 25% and 6.25% slack) and
 * statistics, with the bytes in use
 * attributed to their owners (netcl_mem_owner). Freed storages park their
 * buffer in the pool; the pool never lets in-use + cached bytes pass the
 * device's memory, and on a backend OOM it empties its cache and retries. */
#include "core/core.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NC_STEPS 16                  /* classes per power of two for large blocks */
#define NC_CLASSES (64 * NC_STEPS)
#define NC_MIN_BLOCK 512
#define NC_FINE_FROM (1 << 20)       /* below: four classes per power of two */

typedef struct nc_block { void *buf; struct nc_block *next; } nc_block;

struct nc_pool {
    pthread_mutex_t lock;
    void (*observer)(void *ctx, nc_storage *s);   /* told of every new storage (a capture) */
    void *observer_ctx;
    nc_block *free_lists[NC_CLASSES];
    nc_block *spare_nodes;   /* list nodes kept for reuse: no malloc per pooled buffer */
    int64_t allocations, hits, misses, in_use, cached, peak;
    int64_t owned[NETCL_MEM_OWNER_COUNT], owned_at_peak[NETCL_MEM_OWNER_COUNT];   /* in_use by owner */
    int dead;   /* backend shut down: buffers can no longer be freed */
};

static int64_t total_in_use;   /* over all devices, read by the Lua GC heuristic */
static _Thread_local netcl_mem_owner current_owner;   /* for storages made by this thread */

/* The owner a storage's bytes count under: a storage the graph saves
 * counts as saved unless a parameter, gradient or optimizer state. */
static int bucket(const nc_storage *s)
{
    if (s->saved > 0 && (s->owner == NETCL_MEM_OTHER || s->owner == NETCL_MEM_WORKSPACE || s->owner == NETCL_MEM_BACKWARD))
        return NETCL_MEM_SAVED;
    return s->owner;
}

static void note_peak(nc_pool *p)
{
    if (p->in_use <= p->peak) return;
    p->peak = p->in_use;
    memcpy(p->owned_at_peak, p->owned, sizeof p->owned);
}

netcl_mem_owner nc_mem_owner_enter(netcl_mem_owner owner)
{
    netcl_mem_owner was = current_owner;
    current_owner = owner;
    return was;
}

void nc_mem_owner_leave(netcl_mem_owner previous) { current_owner = previous; }

/* Moves s between owners by f(s) (under the pool's lock). */
static void reown(nc_storage *s, void (*change)(nc_storage *s, int arg), int arg)
{
    if (!s || s->pinned_by) { if (s) change(s, arg); return; }
    nc_pool *p = s->dev->pool;
    pthread_mutex_lock(&p->lock);
    p->owned[bucket(s)] -= (int64_t)s->capacity;
    change(s, arg);
    p->owned[bucket(s)] += (int64_t)s->capacity;
    pthread_mutex_unlock(&p->lock);
}

static void set_owner(nc_storage *s, int owner) { s->owner = (unsigned char)owner; }
static void add_saved(nc_storage *s, int delta) { s->saved += delta; }
void nc_storage_set_owner(nc_storage *s, netcl_mem_owner owner) { reown(s, set_owner, (int)owner); }
void nc_storage_saved(nc_storage *s, int delta) { reown(s, add_saved, delta); }

/* Released storage headers wait in a per-thread list for the next storage
 * (as tensor headers do, tensor.c); none under ASan, which must see every
 * free to catch a use after it. */
#if defined(__SANITIZE_ADDRESS__)
#define SPARE_STORAGES 0
#else
#define SPARE_STORAGES 256
#endif
static _Thread_local nc_storage *spare[SPARE_STORAGES + 1];
static _Thread_local int nspare;

static nc_storage *storage_alloc(void)
{
    if (nspare > 0) {
        nc_storage *s = spare[--nspare];
        memset(s, 0, sizeof *s);
        return s;
    }
    return calloc(1, sizeof(nc_storage));
}

static void storage_free(nc_storage *s)
{
    if (nspare < SPARE_STORAGES) spare[nspare++] = s;
    else free(s);
}

nc_pool *nc_pool_new(void)
{
    nc_pool *p = calloc(1, sizeof *p);
    if (p) pthread_mutex_init(&p->lock, NULL);
    return p;
}

/* Size class: capacity rounded up to 2^k * (1 + j/16), j a multiple of 4
 * below 1 MiB (at most 25% slack where a spare block is cheap) and any j
 * from there (at most 6.25%: activations of large batches are most of a
 * training step's memory, so their slack is what the peak pays). */
static int size_class(size_t n, size_t *capacity)
{
    if (n < NC_MIN_BLOCK) n = NC_MIN_BLOCK;
    int k = 63 - __builtin_clzll((unsigned long long)n);
    size_t base = (size_t)1 << k, step = base / NC_STEPS;
    size_t grain = n < NC_FINE_FROM ? NC_STEPS / 4 : 1;   /* steps per class */
    size_t steps = (n - base + step * grain - 1) / (step * grain) * grain;   /* 0..16 */
    if (steps == NC_STEPS) { k++; steps = 0; base <<= 1; step <<= 1; }
    *capacity = base + steps * step;
    return k * NC_STEPS + (int)steps;
}

static void release_cached(netcl_device *dev, nc_pool *p)
{
    for (int c = 0; c < NC_CLASSES; c++) {
        while (p->free_lists[c]) {
            nc_block *b = p->free_lists[c];
            p->free_lists[c] = b->next;
            dev->backend->mem.free(dev, b->buf);
            free(b);
        }
    }
    while (p->spare_nodes) {
        nc_block *b = p->spare_nodes;
        p->spare_nodes = b->next;
        free(b);
    }
    p->cached = 0;
}

static netcl_status oom(netcl_device *dev, size_t nbytes)
{
    return nc_fail(NETCL_ERR_OOM,
                   "out of memory on %s: requested %zu bytes with %lld bytes in use (device memory %lld bytes)",
                   dev->name, nbytes, (long long)dev->pool->in_use, (long long)dev->global_mem);
}

static netcl_status pool_take(netcl_device *dev, size_t nbytes, size_t *capacity, void **buf)
{
    nc_pool *p = dev->pool;
    int c = size_class(nbytes, capacity);
    if (p->free_lists[c]) {
        nc_block *b = p->free_lists[c];
        p->free_lists[c] = b->next;
        *buf = b->buf;
        b->next = p->spare_nodes;
        p->spare_nodes = b;
        p->cached -= (int64_t)*capacity;
        p->hits++;
        return NETCL_OK;
    }
    p->misses++;
    int64_t cap = (int64_t)*capacity;
    if (dev->global_mem > 0 && p->in_use + cap > dev->global_mem) return oom(dev, nbytes);
    if (dev->global_mem > 0 && p->in_use + p->cached + cap > dev->global_mem) release_cached(dev, p);
    netcl_status st = dev->backend->mem.alloc(dev, *capacity, buf);
    if (st == NETCL_ERR_OOM && p->cached > 0) {
        release_cached(dev, p);
        st = dev->backend->mem.alloc(dev, *capacity, buf);
    }
    if (st == NETCL_ERR_OOM) return oom(dev, nbytes);
    if (st == NETCL_OK) p->allocations++;
    return st;
}

netcl_status nc_storage_new(nc_storage **out, netcl_device *dev, size_t nbytes)
{
    *out = NULL;
    nc_storage *s = storage_alloc();
    if (!s) return nc_fail(NETCL_ERR_OOM, "out of host memory allocating a storage header");
    nc_pool *p = dev->pool;
    pthread_mutex_lock(&p->lock);
    netcl_status st = p->dead ? nc_fail(NETCL_ERR_DEVICE, "%s was shut down", dev->name)
                              : pool_take(dev, nbytes, &s->capacity, &s->buf);
    if (st == NETCL_OK) {
        s->owner = (unsigned char)current_owner;
        p->in_use += (int64_t)s->capacity;
        p->owned[s->owner] += (int64_t)s->capacity;
        note_peak(p);
        __atomic_add_fetch(&total_in_use, (int64_t)s->capacity, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&p->lock);
    if (st != NETCL_OK) { storage_free(s); return st; }
    atomic_init(&s->refcount, 1);
    s->dev = dev;
    s->nbytes = nbytes;
    *out = s;
    if (p->observer) p->observer(p->observer_ctx, s);
    return NETCL_OK;
}

void nc_pool_observe(netcl_device *dev, void (*fn)(void *ctx, nc_storage *s), void *ctx)
{
    pthread_mutex_lock(&dev->pool->lock);
    dev->pool->observer = fn;
    dev->pool->observer_ctx = ctx;
    pthread_mutex_unlock(&dev->pool->lock);
}

void nc_storage_retain(nc_storage *s) { atomic_fetch_add(&s->refcount, 1); }

netcl_status nc_storage_new_pinned(nc_storage **out, netcl_device *cpu, netcl_device *for_dev, size_t nbytes)
{
    if (!for_dev->backend->mem.alloc_pinned) return nc_storage_new(out, cpu, nbytes);
    *out = NULL;
    nc_storage *s = storage_alloc();
    if (!s) return nc_fail(NETCL_ERR_OOM, "out of host memory allocating a storage header");
    netcl_status st = for_dev->backend->mem.alloc_pinned(for_dev, nbytes ? nbytes : 1, &s->buf, &s->pinned_handle);
    if (st != NETCL_OK) { storage_free(s); return st; }
    atomic_init(&s->refcount, 1);
    s->dev = cpu;
    s->nbytes = s->capacity = nbytes;
    s->pinned_by = for_dev;
    *out = s;
    return NETCL_OK;
}

void nc_storage_settle(nc_storage *s)
{
    void *ev = s->pending;
    if (!ev) return;
    s->pending = NULL;
    s->pending_dev->backend->mem.settle(s->pending_dev, ev, s->dev == s->pending_dev);
}

void nc_storage_set_pending(nc_storage *s, netcl_device *dev, void *event)
{
    nc_storage_settle(s);   /* one event at a time: the older transfer is waited for */
    s->pending = event;
    s->pending_dev = dev;
}

void nc_storage_release(nc_storage *s)
{
    if (!s || atomic_fetch_sub(&s->refcount, 1) != 1) return;
    nc_storage_settle(s);   /* the event must not outlive the storage that waits on it */
    if (s->pinned_by) {
        s->pinned_by->backend->mem.free_pinned(s->pinned_by, s->pinned_handle);
        storage_free(s);
        return;
    }
    nc_pool *p = s->dev->pool;
    size_t cap;
    int c = size_class(s->capacity, &cap);
    pthread_mutex_lock(&p->lock);
    p->in_use -= (int64_t)s->capacity;
    p->owned[bucket(s)] -= (int64_t)s->capacity;
    __atomic_sub_fetch(&total_in_use, (int64_t)s->capacity, __ATOMIC_RELAXED);
    nc_block *b = p->dead ? NULL : p->spare_nodes ? p->spare_nodes : malloc(sizeof *b);
    if (b && b == p->spare_nodes) p->spare_nodes = b->next;
    if (b) {
        b->buf = s->buf;
        b->next = p->free_lists[c];
        p->free_lists[c] = b;
        p->cached += (int64_t)s->capacity;
    } else if (!p->dead) {
        s->dev->backend->mem.free(s->dev, s->buf);
    }
    pthread_mutex_unlock(&p->lock);
    storage_free(s);
}

void nc_pool_destroy(netcl_device *dev)
{
    nc_pool *p = dev->pool;
    pthread_mutex_lock(&p->lock);
    release_cached(dev, p);
    p->dead = 1;
    pthread_mutex_unlock(&p->lock);
}

#define STAT(fn, field) \
    int64_t fn(const netcl_device *dev) { return dev ? dev->pool->field : 0; }
STAT(netcl_memory_allocations, allocations)
STAT(netcl_memory_pool_hits, hits)
STAT(netcl_memory_pool_misses, misses)
STAT(netcl_memory_bytes_in_use, in_use)
STAT(netcl_memory_bytes_cached, cached)
STAT(netcl_memory_peak_bytes, peak)

int64_t netcl_memory_total_in_use(void) { return __atomic_load_n(&total_in_use, __ATOMIC_RELAXED); }

void netcl_memory_empty_cache(netcl_device *dev)
{
    pthread_mutex_lock(&dev->pool->lock);
    if (!dev->pool->dead) release_cached(dev, dev->pool);
    pthread_mutex_unlock(&dev->pool->lock);
}

void netcl_memory_reset_peak(netcl_device *dev)
{
    pthread_mutex_lock(&dev->pool->lock);
    dev->pool->peak = dev->pool->in_use;
    memcpy(dev->pool->owned_at_peak, dev->pool->owned, sizeof dev->pool->owned);
    pthread_mutex_unlock(&dev->pool->lock);
}

int64_t netcl_memory_owner_bytes(const netcl_device *dev, netcl_mem_owner owner, int at_peak)
{
    if (!dev || (unsigned)owner >= NETCL_MEM_OWNER_COUNT) return 0;
    return at_peak ? dev->pool->owned_at_peak[owner] : dev->pool->owned[owner];
}

void netcl_tensor_set_memory_owner(netcl_tensor *t, netcl_mem_owner owner)
{
    if (t && (unsigned)owner < NETCL_MEM_OWNER_COUNT) nc_storage_set_owner(t->storage, owner);
}

int64_t netcl_memory_backend_bytes(const netcl_device *dev)
{
    return dev && dev->backend->mem.private_bytes ? dev->backend->mem.private_bytes(dev) : 0;
}
