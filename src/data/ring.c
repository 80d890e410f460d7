/* ring.c — the loader's shared-memory ring of batch slots. One anonymous
 * MAP_SHARED mapping (made before the workers fork, so it has no name and
 * cannot leak): per-slot metadata first, then the slots, page aligned.
 * Invariant: a slot's state says who may touch its bytes; only the parent
 * moves FREE -> ASSIGNED and READY -> READING -> FREE, only a worker moves
 * ASSIGNED -> WRITING -> READY. Stores of a new state are releases and
 * loads are acquires, so the bytes written before a state are visible to
 * whoever sees that state, across processes. */
#include "core/core.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RING_MAX_FIELDS 16
#define RING_PAGE 4096

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the ring needs lock-free int atomics across processes");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the ring needs lock-free 64-bit atomics across processes");

typedef struct ring_field {
    int32_t dtype, ndim;
    int64_t sizes[NC_MAX_DIMS];
    int64_t offset, nbytes;        /* within the slot */
} ring_field;

typedef struct ring_meta {        /* lives in the shared mapping */
    atomic_int state;
    int32_t nfields;
    atomic_llong batch;
    ring_field fields[RING_MAX_FIELDS];
} ring_meta;

struct netcl_ring {               /* process-local (a forked child has its copy) */
    char *base;
    size_t map_bytes;
    int nslots;
    int64_t slot_bytes;
    ring_meta *meta;
    char *data;
};

static const char *state_name(int s)
{
    static const char *const names[] = {"FREE", "ASSIGNED", "WRITING", "READY", "READING"};
    return s >= 0 && s <= 4 ? names[s] : "invalid";
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

netcl_status netcl_ring_create(netcl_ring **out, int nslots, int64_t slot_bytes)
{
    *out = NULL;
    if (nslots < 1 || nslots > 4096 || slot_bytes < 1 || slot_bytes > ((int64_t)1 << 40))
        return nc_fail(NETCL_ERR_ARGUMENT, "ring_create: %d slots of %lld bytes (want 1..4096 slots of 1 byte..1 TiB)",
                       nslots, (long long)slot_bytes);
    netcl_ring *r = calloc(1, sizeof *r);
    if (!r) return nc_fail(NETCL_ERR_OOM, "ring_create: out of host memory");
    size_t meta_bytes = round_up(sizeof(ring_meta) * (size_t)nslots, RING_PAGE);
    r->slot_bytes = (int64_t)round_up((size_t)slot_bytes, RING_PAGE);
    r->map_bytes = meta_bytes + (size_t)r->slot_bytes * (size_t)nslots;
    r->base = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r->base == MAP_FAILED) {
        free(r);
        return nc_fail(NETCL_ERR_OOM, "ring_create: cannot map %zu bytes of shared memory (%d slots of %lld bytes)",
                       (size_t)meta_bytes + (size_t)slot_bytes * (size_t)nslots, nslots, (long long)slot_bytes);
    }
    r->nslots = nslots;
    r->meta = (ring_meta *)r->base;
    r->data = r->base + meta_bytes;
    for (int i = 0; i < nslots; i++) {
        atomic_init(&r->meta[i].state, NETCL_RING_FREE);
        atomic_init(&r->meta[i].batch, -1);
    }
    *out = r;
    return NETCL_OK;
}

void netcl_ring_destroy(netcl_ring *r)
{
    if (!r) return;
    munmap(r->base, r->map_bytes);
    free(r);
}

int netcl_ring_slots(const netcl_ring *r) { return r->nslots; }
int64_t netcl_ring_slot_bytes(const netcl_ring *r) { return r->slot_bytes; }

netcl_ring_state netcl_ring_state_of(const netcl_ring *r, int slot)
{
    if (slot < 0 || slot >= r->nslots) return (netcl_ring_state)-1;
    return (netcl_ring_state)atomic_load_explicit(&r->meta[slot].state, memory_order_acquire);
}

static netcl_status check_slot(const char *op, const netcl_ring *r, int slot)
{
    if (!r) return nc_fail(NETCL_ERR_ARGUMENT, "%s: the ring is closed", op);
    if (slot < 0 || slot >= r->nslots)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: slot %d out of range (the ring has %d slots, 0-based)", op, slot, r->nslots);
    return NETCL_OK;
}

/* Moves slot from `from` to `to` or explains why it cannot. */
static netcl_status transition(const char *op, netcl_ring *r, int slot, int from, int to)
{
    int expected = from;
    if (atomic_compare_exchange_strong_explicit(&r->meta[slot].state, &expected, to, memory_order_acq_rel,
                                                memory_order_acquire))
        return NETCL_OK;
    return nc_fail(NETCL_ERR_ARGUMENT, "%s: slot %d is %s, expected %s", op, slot, state_name(expected), state_name(from));
}

netcl_status netcl_ring_assign(netcl_ring *r, int slot, int64_t batch)
{
    NC_TRY(check_slot("ring_assign", r, slot));
    int s = atomic_load_explicit(&r->meta[slot].state, memory_order_acquire);
    if (s != NETCL_RING_FREE)
        return nc_fail(NETCL_ERR_ARGUMENT, "ring_assign: slot %d is %s, expected FREE", slot, state_name(s));
    atomic_store_explicit(&r->meta[slot].batch, batch, memory_order_relaxed);
    return transition("ring_assign", r, slot, NETCL_RING_FREE, NETCL_RING_ASSIGNED);
}

int64_t netcl_ring_bytes_needed(int nfields, netcl_tensor *const *fields)
{
    int64_t total = 0;
    for (int i = 0; i < nfields; i++)
        total += (int64_t)round_up((size_t)(netcl_tensor_numel(fields[i]) * netcl_dtype_size(fields[i]->dtype)), 64);
    return total;
}

netcl_status netcl_ring_put(netcl_ring *r, int slot, int64_t batch, int nfields, netcl_tensor *const *fields)
{
    NC_TRY(check_slot("ring_put", r, slot));
    if (nfields < 0 || nfields > RING_MAX_FIELDS)
        return nc_fail(NETCL_ERR_ARGUMENT, "ring_put: %d fields (at most %d)", nfields, RING_MAX_FIELDS);
    int64_t need = netcl_ring_bytes_needed(nfields, fields);
    if (need > r->slot_bytes)
        return nc_fail(NETCL_ERR_ARGUMENT, "ring_put: batch %lld needs %lld bytes, a slot has %lld",
                       (long long)batch, (long long)need, (long long)r->slot_bytes);
    ring_meta *m = &r->meta[slot];
    int64_t want = atomic_load_explicit(&m->batch, memory_order_relaxed);
    NC_TRY(transition("ring_put", r, slot, NETCL_RING_ASSIGNED, NETCL_RING_WRITING));
    if (want != batch) {
        atomic_store_explicit(&m->state, NETCL_RING_ASSIGNED, memory_order_release);
        return nc_fail(NETCL_ERR_ARGUMENT, "ring_put: slot %d was assigned batch %lld, not %lld", slot,
                       (long long)want, (long long)batch);
    }
    char *dst = r->data + (size_t)slot * (size_t)r->slot_bytes;
    int64_t off = 0;
    for (int i = 0; i < nfields; i++) {
        const netcl_tensor *t = fields[i];
        ring_field *f = &m->fields[i];
        f->dtype = t->dtype;
        f->ndim = t->ndim;
        memcpy(f->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        f->offset = off;
        f->nbytes = netcl_tensor_numel(t) * netcl_dtype_size(t->dtype);
        netcl_status st = netcl_tensor_to_host(t, dst + off, f->nbytes);
        if (st != NETCL_OK) {
            atomic_store_explicit(&m->state, NETCL_RING_ASSIGNED, memory_order_release);
            nc_error_prefix("ring_put field %d: ", i + 1);
            return st;
        }
        off += (int64_t)round_up((size_t)f->nbytes, 64);
    }
    m->nfields = nfields;
    atomic_store_explicit(&m->state, NETCL_RING_READY, memory_order_release);
    return NETCL_OK;
}

netcl_status netcl_ring_take(netcl_ring *r, int slot, int64_t batch, netcl_tensor **fields, int maxfields, int *nfields)
{
    *nfields = 0;
    NC_TRY(check_slot("ring_take", r, slot));
    ring_meta *m = &r->meta[slot];
    NC_TRY(transition("ring_take", r, slot, NETCL_RING_READY, NETCL_RING_READING));
    int64_t got = atomic_load_explicit(&m->batch, memory_order_relaxed);
    netcl_status st = NETCL_OK;
    if (got != batch)
        st = nc_fail(NETCL_ERR_ARGUMENT, "ring_take: slot %d holds batch %lld, not %lld", slot, (long long)got, (long long)batch);
    else if (m->nfields > maxfields)
        st = nc_fail(NETCL_ERR_ARGUMENT, "ring_take: slot %d holds %d fields, room for %d", slot, m->nfields, maxfields);
    netcl_device *cpu = NULL;
    if (st == NETCL_OK) st = netcl_device_get(&cpu, "cpu");
    const char *src = r->data + (size_t)slot * (size_t)r->slot_bytes;
    int n = 0;
    for (; st == NETCL_OK && n < m->nfields; n++) {
        ring_field *f = &m->fields[n];
        st = nc_tensor_new(&fields[n], cpu, (netcl_dtype)f->dtype, f->ndim, f->sizes);
        if (st == NETCL_OK) memcpy(fields[n]->storage->buf, src + f->offset, (size_t)f->nbytes);
    }
    if (st != NETCL_OK) {
        for (int i = 0; i < n; i++) { netcl_tensor_release(fields[i]); fields[i] = NULL; }
        n = 0;
    }
    *nfields = n;
    /* copied out (or refused): the slot is the parent's again either way */
    atomic_store_explicit(&m->state, NETCL_RING_FREE, memory_order_release);
    return st;
}

netcl_status netcl_ring_release(netcl_ring *r, int slot, int force)
{
    NC_TRY(check_slot("ring_release", r, slot));
    if (force) {
        atomic_store_explicit(&r->meta[slot].state, NETCL_RING_FREE, memory_order_release);
        return NETCL_OK;
    }
    return transition("ring_release", r, slot, NETCL_RING_ASSIGNED, NETCL_RING_FREE);
}
