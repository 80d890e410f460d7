/* core.h — devices (the registry), storages in per-device pools, and
 * tensors: refcounted views over storages. Built on the backend contract;
 * knows nothing of ops or autograd. */
#ifndef NETCL_CORE_H
#define NETCL_CORE_H

#include "base/base.h"
#include "backend/backend.h"

/* ---- devices (device.c) -------------------------------------------------- */



void nc_devices_init(void);   /* idempotent, thread-safe */
/* ---- memory pool (memory.c) ---------------------------------------------- */
typedef struct nc_storage {
    atomic_int refcount;
    netcl_device *dev;
    void *buf;         /* backend buffer */
    size_t nbytes;     /* requested */
    size_t capacity;   /* size class */
    atomic_int version;   /* bumped by every in-place write (autograd safety) */
    /* pinned host memory: a cpu storage whose bytes the backend of
     * pinned_by allocated (page-locked); freed by it, never pooled */
    netcl_device *pinned_by;
    void *pinned_handle;
    /* a transfer still in flight that reads or writes this storage: an event
     * of pending_dev's backend, settled before any use (nc_storage_settle):
     * a device storage waits in its queue, a host storage on the host */
    void *pending;
    netcl_device *pending_dev;
    /* memory attribution (memory.c): the owner the bytes count under and
     * how many graph nodes save the storage for backward */
    unsigned char owner;
    int saved;
} nc_storage;

netcl_status nc_storage_new(nc_storage **out, netcl_device *dev, size_t nbytes);
/* A cpu storage of pinned memory from for_dev's backend (plain memory where
 * it has none). */
netcl_status nc_storage_new_pinned(nc_storage **out, netcl_device *cpu, netcl_device *for_dev, size_t nbytes);
/* Makes later use of s wait for a transfer still in flight. */
void nc_storage_settle(nc_storage *s);
/* Records an in-flight transfer of dev's backend on s (takes the event). */
void nc_storage_set_pending(nc_storage *s, netcl_device *dev, void *event);
void nc_storage_retain(nc_storage *s);
void nc_storage_release(nc_storage *s);
/* Memory attribution: storages made from now on by this thread count under
 * owner (returns the previous one, for nc_mem_owner_leave); a storage
 * changes owner; a graph node starts or stops saving a storage. */
netcl_mem_owner nc_mem_owner_enter(netcl_mem_owner owner);
void nc_mem_owner_leave(netcl_mem_owner previous);
void nc_storage_set_owner(nc_storage *s, netcl_mem_owner owner);
void nc_storage_saved(nc_storage *s, int delta);
nc_pool *nc_pool_new(void);
/* fn(ctx, s) is told of every storage dev's pool creates from now on (fn
 * NULL: no longer); a capture keeps them (src/jit/capture.c). */
void nc_pool_observe(netcl_device *dev, void (*fn)(void *ctx, nc_storage *s), void *ctx);
void nc_pool_destroy(netcl_device *dev);
/* ---- tensors (tensor.c) ---------------------------------------------------- */
struct netcl_tensor {
    atomic_int refcount;
    nc_storage *storage;
    netcl_dtype dtype;
    int ndim;
    int64_t offset;
    int64_t sizes[NC_MAX_DIMS];
    int64_t strides[NC_MAX_DIMS];
    /* autograd (src/autograd/): grad_fn is the node that produced this
     * tensor (a reference), grad the accumulated gradient (a reference) */
    int requires_grad, retains_grad;
    netcl_tensor *grad;
    struct nc_node *grad_fn;
    struct nc_hook *hooks;   /* gradient hooks of a leaf (a non-leaf's live on its grad_fn) */
};

/* Autograd attaches a node and hooks to tensors (the fields above) and
 * registers, before it first does, how a dying tensor releases them. */
void nc_tensor_set_autograd_release(void (*release)(netcl_tensor *t));
/* Marks an in-place write to t (its storage's version goes up, so autograd
 * sees that values it saved have changed). */
static inline void nc_tensor_bump_version(netcl_tensor *t) { atomic_fetch_add(&t->storage->version, 1); }

netcl_status nc_tensor_new(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes);
/* A new view on t's storage with the given geometry. */
netcl_status nc_tensor_view_of(netcl_tensor **out, const netcl_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset);
void nc_desc_of(nc_desc *d, const netcl_tensor *t);
/* "float32[2,3] on cpu" into a static per-thread ring of buffers. */
const char *nc_describe(const netcl_tensor *t);
static inline netcl_device *nc_dev(const netcl_tensor *t) { return t->storage->dev; }
/* ---- fork safety (device.c) -------------------------------------------- */
/* NETCL_ERR_FORK when called in a process forked after OpenCL was used. */
netcl_status nc_check_fork(const char *what);
/* NETCL_ERR_UNSUPPORTED with a message naming `what` when a capture is
 * recording dev: a host read or upload would not be repeated by a replay. */
netcl_status nc_capture_guard(netcl_device *dev, const char *what);

/* ---- the global generator (rng.c) ---------------------------------------- */
/* Takes n counters from the global stream; returns the first (the offset). */
uint64_t nc_rng_take(uint64_t n);

#endif /* NETCL_CORE_H */
