/* dist/dist.h — the collectives' inner interface: a transport moves and
 * reduces host buffers between the ranks (shm.c, mpi.c); comm.c turns
 * tensor collectives into transport calls run by one worker thread per
 * communicator. Transports see float32, float64, int32, int64, uint8 and
 * bool only, and never AVG: comm.c widens 16-bit floats and divides. */
#ifndef NETCL_DIST_INTERNAL_H
#define NETCL_DIST_INTERNAL_H

#include "netcl_dist.h"
#include <stdint.h>

typedef struct nc_transport nc_transport;
/* What a transport does, one static table per transport. */
typedef struct nc_transport_ops {
    netcl_status (*all_reduce)(nc_transport *t, void *buf, int64_t n, netcl_dtype dt, netcl_dist_op op);
    netcl_status (*broadcast)(nc_transport *t, void *buf, int64_t nbytes, int root);
    /* in: world slices of n elements; out: n elements */
    netcl_status (*reduce_scatter)(nc_transport *t, const void *in, void *out, int64_t n, netcl_dtype dt,
                                   netcl_dist_op op);
    /* in: nbytes; out: world * nbytes (gather: root only) */
    netcl_status (*all_gather)(nc_transport *t, const void *in, void *out, int64_t nbytes);
    netcl_status (*gather)(nc_transport *t, const void *in, void *out, int64_t nbytes, int root);
    /* in: world * nbytes on root; out: nbytes */
    netcl_status (*scatter)(nc_transport *t, const void *in, void *out, int64_t nbytes, int root);
    netcl_status (*barrier)(nc_transport *t);
    void (*destroy)(nc_transport *t);
    /* The exchange ring (shm only, where ring_bytes > 0): ring_bytes of
     * each rank's memory in the segment, where float all_reduces stage
     * whole tensors (exchange.c). Positions grow for ever; a
     * rank's position p lives at area(rank) + p % ring_bytes. */
    unsigned char *(*ring_area)(nc_transport *t, int rank);
    /* whether every rank (this one too) has consumed up to end -
     * ring_bytes, so the bytes up to end may be written; an error when a
     * peer is gone */
    netcl_status (*ring_room)(nc_transport *t, uint64_t end, int *room);
    void (*ring_consumed)(nc_transport *t, uint64_t end);   /* this rank has read its peers' bytes up to end */
    netcl_status (*ring_arrive)(nc_transport *t);          /* every rank's staged bytes are in place */
} nc_transport_ops;

struct nc_transport {
    const nc_transport_ops *ops;
    int rank, world, local_rank;
    uint64_t ring_bytes;
};

/* ring_bytes: the exchange ring's bytes per rank (0: none) */
netcl_status nc_shm_open(nc_transport **out, const char *name, int rank, int world, double timeout_s, uint64_t ring_bytes);
netcl_status nc_mpi_open(nc_transport **out, double timeout_s);

/* acc[i] = acc[i] op src[i] for the transport dtypes (op not AVG). */
void nc_dist_accumulate(void *acc, const void *src, int64_t n, netcl_dtype dt, netcl_dist_op op);
const char *nc_dist_op_name(netcl_dist_op op);

#endif
