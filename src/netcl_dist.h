/* netcl_dist.h — collectives between processes (docs/distributed.md): a
 * communicator over shared memory on one host or over MPI across hosts,
 * and the collectives on tensors of any device and dtype. Part of the C
 * contract netcl.h opens (it includes this file at its end); its cdef
 * section follows netcl_data.h's. */
#ifndef NETCL_DIST_H
#define NETCL_DIST_H

#include "netcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

typedef struct netcl_comm netcl_comm;
/* A collective started asynchronously: netcl_dist_wait finishes it. */
typedef struct netcl_dist_work netcl_dist_work;

typedef enum netcl_dist_backend {
    NETCL_DIST_SHM = 0,   /* processes of one host, through a shared segment */
    NETCL_DIST_MPI = 1    /* MPI (Open MPI), loaded at run time */
} netcl_dist_backend;

typedef enum netcl_dist_op {
    NETCL_DIST_SUM = 0,
    NETCL_DIST_AVG = 1,       /* float dtypes only */
    NETCL_DIST_MAX = 2,
    NETCL_DIST_MIN = 3,
    NETCL_DIST_PRODUCT = 4
} netcl_dist_op;

/* Joins a communicator. SHM: every rank 0..world-1 of the job calls it with
 * the same name (the launcher sets it); rank 0 creates the segment, which
 * is unlinked as soon as all ranks have attached. MPI: rank and world come
 * from MPI (the arguments are ignored). timeout_s bounds every wait for a
 * peer: a peer that died or stays away that long makes the call fail with
 * a message naming it, and the communicator refuses further work. */
netcl_status netcl_comm_init(netcl_comm **out, netcl_dist_backend backend, const char *name, int rank, int world,
                             double timeout_s);
int netcl_comm_rank(const netcl_comm *c);
int netcl_comm_size(const netcl_comm *c);
/* The rank among the processes of this host (MPI: from the launcher's
 * environment; SHM: the rank). */
int netcl_comm_local_rank(const netcl_comm *c);
/* Finishes queued work and leaves (MPI: MPI_Finalize). NULL is allowed. */
void netcl_comm_release(netcl_comm *c);

/* Every collective works in place on tensors of any device, dtype and
 * layout; device tensors are staged through pinned host memory. Ranks must
 * issue the same collectives in the same order. With async NULL the call
 * returns when done; otherwise *async is a new handle and the call returns
 * once the inputs are read: the outputs hold the result after
 * netcl_dist_wait. Results are bitwise identical on every rank. */
netcl_status netcl_dist_all_reduce(netcl_comm *c, netcl_tensor *t, netcl_dist_op op, netcl_dist_work **async);
netcl_status netcl_dist_broadcast(netcl_comm *c, netcl_tensor *t, int root, netcl_dist_work **async);
/* out (numel n) of rank r = reduction over ranks of in's slice r (in: numel world*n). */
netcl_status netcl_dist_reduce_scatter(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, netcl_dist_op op,
                                       netcl_dist_work **async);
/* out (numel world*n) = every rank's in (numel n), in rank order. */
netcl_status netcl_dist_all_gather(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, netcl_dist_work **async);
/* As all_gather, the result on root only (out may be NULL on other ranks). */
netcl_status netcl_dist_gather(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, int root, netcl_dist_work **async);
/* out (numel n) of rank r = root's in slice r (in: numel world*n, root only). */
netcl_status netcl_dist_scatter(netcl_comm *c, netcl_tensor *out, netcl_tensor *in, int root, netcl_dist_work **async);
netcl_status netcl_dist_barrier(netcl_comm *c);
/* Waits for the work, writes its outputs back and releases the handle
 * (the handle is gone after the call, whatever the status). */
netcl_status netcl_dist_wait(netcl_dist_work *w);
/* 1 when the work has finished (wait is still needed for the outputs). */
int netcl_dist_done(const netcl_dist_work *w);
/* Moves started all_reduces along without waiting: those whose peers have
 * all arrived get their reduction enqueued on the device. Data-parallel
 * training calls it while backward runs. NULL is allowed. */
void netcl_dist_progress(netcl_comm *c);

#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif
#endif /* NETCL_DIST_H */
