/* netcl_data.h — the C half of lua/netcl/data (docs/data.md): IDX readers,
 * the loader ring shared with worker processes, the batch wire format and
 * the augmentation kernels. Part of the C contract netcl.h opens (it
 * includes this file at its end); its cdef section follows netcl.h's. */
#ifndef NETCL_DATA_H
#define NETCL_DATA_H

#include "netcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

/* ---- data readers ----------------------------------------------------------
 * IDX files (MNIST, Fashion-MNIST), gzip-compressed or plain: a new cpu
 * tensor of the file's element type (uint8 -> uint8, int8 -> int32 widened,
 * int16/int32 -> int32, float32, float64) and shape. Truncated or malformed
 * files give NETCL_ERR_ARGUMENT naming the path and what is wrong. */
netcl_status netcl_read_idx(netcl_tensor **out, const char *path);

/* ---- data: loader ring, wire format, readers, augmentation -----------------
 * The C half of lua/netcl/data (docs/data.md). Everything here is CPU-side
 * and fork-safe (no OpenCL) except netcl_augment/netcl_augment_crop, which
 * run on the input's device. */
typedef struct netcl_ring netcl_ring;

typedef enum netcl_ring_state {
    NETCL_RING_FREE = 0,      /* owned by the parent, may be assigned */
    NETCL_RING_ASSIGNED = 1,  /* parent assigned a batch; a worker will fill it */
    NETCL_RING_WRITING = 2,   /* a worker is copying a batch in */
    NETCL_RING_READY = 3,     /* the batch is complete; the parent may copy it out */
    NETCL_RING_READING = 4    /* the parent is copying it out; FREE right after */
} netcl_ring_state;

/* Shared-memory ring of nslots batch slots of slot_bytes each: one anonymous
 * MAP_SHARED mapping made before the workers fork (it has no name, so it
 * cannot outlive the processes that map it). */
netcl_status netcl_ring_create(netcl_ring **out, int nslots, int64_t slot_bytes);
/* Unmaps the ring in this process; NULL is allowed. */
void netcl_ring_destroy(netcl_ring *ring);
int netcl_ring_slots(const netcl_ring *ring);
int64_t netcl_ring_slot_bytes(const netcl_ring *ring);
netcl_ring_state netcl_ring_state_of(const netcl_ring *ring, int slot);
/* Parent: FREE -> ASSIGNED(batch). */
netcl_status netcl_ring_assign(netcl_ring *ring, int slot, int64_t batch);
/* Worker: ASSIGNED(batch) -> WRITING, copies the fields (any cpu tensors)
 * in, -> READY. A batch larger than a slot is NETCL_ERR_ARGUMENT and leaves
 * the slot ASSIGNED (the caller sends it through the pipe instead). */
netcl_status netcl_ring_put(netcl_ring *ring, int slot, int64_t batch, int nfields, netcl_tensor *const *fields);
/* Parent: READY(batch) -> READING, new contiguous cpu tensors copied out into
 * fields[0..*nfields), -> FREE. */
netcl_status netcl_ring_take(netcl_ring *ring, int slot, int64_t batch, netcl_tensor **fields, int maxfields, int *nfields);
/* Parent: ASSIGNED -> FREE (the batch came through the pipe), or any state
 * -> FREE with force (every worker is gone). */
netcl_status netcl_ring_release(netcl_ring *ring, int slot, int force);
/* Bytes nfields tensors take in a slot (fields are 64-byte aligned). */
int64_t netcl_ring_bytes_needed(int nfields, netcl_tensor *const *fields);

/* Messages on a pipe between the loader and its workers (docs/data.md, "wire
 * format"): a 32-byte header {magic, kind, batch, a, b} and a payload. */
typedef enum netcl_wire_kind {
    NETCL_WIRE_NONE = 0,    /* recv: nothing arrived within the timeout */
    NETCL_WIRE_TASK = 1,    /* parent -> worker: a = epoch, b = ring slot or -1 */
    NETCL_WIRE_BATCH = 2,   /* worker -> parent: a = nfields, b = ring slot or -1 (fields follow) */
    NETCL_WIRE_ERROR = 3,   /* worker -> parent: a = message bytes (the text follows) */
    NETCL_WIRE_STOP = 4,    /* parent -> worker: exit */
    NETCL_WIRE_EOF = 5      /* recv: the other end was closed (the process died or exited) */
} netcl_wire_kind;

/* A pipe whose ends close on exec, with a 1 MiB buffer where Linux allows. */
netcl_status netcl_wire_pipe(int *fds);
netcl_status netcl_wire_send(int fd, netcl_wire_kind kind, int64_t batch, int64_t a, int64_t b);
/* BATCH header, then each field (dtype, shape, raw bytes) unless slot >= 0. */
netcl_status netcl_wire_send_batch(int fd, int64_t batch, int slot, int nfields, netcl_tensor *const *fields);
netcl_status netcl_wire_send_error(int fd, int64_t batch, const char *message);
/* Waits up to timeout_ms (< 0: forever) for a header; NONE on timeout, EOF
 * when the writer is gone. A header that starts arriving is read whole. */
netcl_status netcl_wire_recv(int fd, int timeout_ms, netcl_wire_kind *kind, int64_t *batch, int64_t *a, int64_t *b);
/* The payload of a BATCH sent inline: nfields new cpu tensors. */
netcl_status netcl_wire_recv_fields(int fd, int nfields, netcl_tensor **fields);
/* The payload of an ERROR: n bytes into buf (NUL-terminated, truncated to buflen). */
netcl_status netcl_wire_recv_text(int fd, int64_t n, char *buf, int64_t buflen);
/* Forks a loader worker. In the child (*pid = 0): closes the listed fds,
 * asks to be killed when the parent dies, restores SIGPIPE's default. */
netcl_status netcl_worker_fork(int *pid, const int *close_fds, int nclose);
/* Ignores SIGPIPE in this process: a worker that dies makes a write fail
 * with EPIPE instead of killing the loader. */
void netcl_worker_ignore_sigpipe(void);

/* Loader helpers (cpu only). */
/* out[0..n) = a permutation of 0..n-1 (Fisher-Yates over Philox draws keyed
 * by seed, counters from stream << 32): the same on every machine. */
netcl_status netcl_data_permutation(int64_t *out, int64_t n, uint64_t seed, uint64_t stream);
/* A 64-bit key mixed from (seed, a, b) (splitmix64 rounds). */
uint64_t netcl_data_mix(uint64_t seed, uint64_t a, uint64_t b);
/* out = n tensors of one dtype and shape stacked along a new leading dim,
 * a new contiguous cpu tensor (items may be strided, on any device). */
netcl_status netcl_data_stack(netcl_tensor **out, int n, netcl_tensor *const *items);
/* out = rows indices[0..n) (0-based) of t along dim 0, a new cpu tensor. */
netcl_status netcl_data_gather(netcl_tensor **out, netcl_tensor *t, int64_t n, const int64_t *indices);
/* Names in a directory (not . and ..), sorted bytewise, each NUL-terminated,
 * directories with a trailing '/'. *needed = bytes the list takes; when
 * buflen < *needed nothing is written (call again with a larger buffer). */
netcl_status netcl_fs_list_dir(const char *path, char *buf, int64_t buflen, int64_t *needed);

/* CIFAR-10/100 binary batch file: images uint8 [N,3,32,32] and labels uint8
 * [N,label_bytes] (CIFAR-10: 1 label byte; CIFAR-100: 2, coarse then fine),
 * labels 0-based as stored. A size that is not a whole number of records is
 * NETCL_ERR_ARGUMENT naming the path. */
netcl_status netcl_read_cifar(netcl_tensor **images, netcl_tensor **labels, const char *path, int label_bytes);
/* PNG (libpng) -> uint8 [C,H,W]: C = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA;
 * palettes expand to RGB(A), 16-bit samples reduce to 8. */
netcl_status netcl_image_read_png(netcl_tensor **out, const char *path);
/* uint8 [C,H,W] (C 1..4) or [H,W] on any device -> 8-bit PNG file. */
netcl_status netcl_image_write_png(const netcl_tensor *t, const char *path);

/* Per-sample image augmentation with host-supplied randomness: pure
 * functions of (x, params), the same on every device. */
typedef enum netcl_augment_kind {
    NETCL_AUGMENT_FLIP = 0,     /* params [N,1]: non-zero flips sample n left-right */
    NETCL_AUGMENT_JITTER = 1,   /* params [N,2] (b, c): x*c + b (uint8: rounded half-even, clamped 0..255) */
    NETCL_AUGMENT_ERASE = 2,    /* params [N,5] (top, left, h, w, value): the box (clipped) = value */
    NETCL_AUGMENT_CROP = 3      /* netcl_augment_crop */
} netcl_augment_kind;
/* out = a new tensor like x (float32 or uint8 [N,C,H,W], any strides, any
 * device); params a float32 cpu tensor [N,k] for the kind. */
netcl_status netcl_augment(netcl_tensor **out, netcl_augment_kind kind, netcl_tensor *x, netcl_tensor *params);
/* out [N,C,out_h,out_w]: x padded by `padding` on every side (reflect != 0:
 * mirror without repeating the edge, else the constant value) and cut at
 * params [N,2] (top, left), 0-based in padded coordinates. */
netcl_status netcl_augment_crop(netcl_tensor **out, netcl_tensor *x, netcl_tensor *params, int64_t padding, int64_t out_h, int64_t out_w, int reflect, double value);

#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif
#endif /* NETCL_DATA_H */
