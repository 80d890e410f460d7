/* dist/exchange.h — all_reduce through the shm transport's exchange ring:
 * each rank stages its whole tensor into its ring (a device tensor by an
 * asynchronous read on the transfer queue), every rank arrives, and each
 * rank reduces all the ranks' blocks in rank order itself — a device
 * tensor on its device, after uploading the peers' blocks — so the host
 * moves bytes by DMA only and the caller's thread never waits for the
 * device. comm.c drives the steps: place, room and stage on the caller's
 * thread, arrive on the worker, upload on the caller's thread, release on
 * a thread of its own once uploaded, and combine on the caller's thread
 * when the result is waited for. */
#ifndef NETCL_DIST_EXCHANGE_H
#define NETCL_DIST_EXCHANGE_H

#include "dist/dist.h"

typedef struct nc_exchange nc_exchange;

#define NC_EXCHANGE_MAX_UPLOADS 64

/* one all_reduce's place in the ring and the events it still holds */
typedef struct nc_ticket {
    uint64_t pos, end;            /* ring positions, identical on every rank */
    netcl_device *dev;            /* the device that holds the events */
    void *staged;                 /* the read into the ring (the worker waits for it) */
    void *uploads[NC_EXCHANGE_MAX_UPLOADS];   /* the peers' blocks read by the device */
    int nuploads;
    netcl_tensor *blocks[NC_EXCHANGE_MAX_UPLOADS + 1];   /* where they went (this rank's: NULL) */
} nc_ticket;

/* NULL in *out when the transport has no ring */
netcl_status nc_exchange_new(nc_exchange **out, nc_transport *tp);
void nc_exchange_free(nc_exchange *x);
/* whether an all_reduce of t with op goes through the ring (the same
 * answer on every rank: it depends on dtype and size only) */
int nc_exchange_takes(const nc_exchange *x, const netcl_tensor *t, netcl_dist_op op);
/* the most elements of dtype dt one all_reduce stages (half the ring);
 * comm.c cuts larger tensors into pieces of that size */
int64_t nc_exchange_piece(const nc_exchange *x, netcl_dtype dt);
/* caller: the ring positions of the next all_reduce of nbytes */
void nc_exchange_place(nc_exchange *x, int64_t nbytes, nc_ticket *tk);
/* caller: whether tk's bytes may be written (the peers have read what
 * was there); an error when a peer is gone */
netcl_status nc_exchange_room(nc_exchange *x, const nc_ticket *tk, int *room);
/* caller: t's elements into this rank's ring */
netcl_status nc_exchange_stage(nc_exchange *x, netcl_tensor *t, nc_ticket *tk);
/* worker: the staged bytes are in place, then every rank's */
netcl_status nc_exchange_arrive(nc_exchange *x, nc_ticket *tk);
/* caller, after arrive: the peers' blocks onto t's device; a cpu tensor
 * is reduced here, from the rings */
netcl_status nc_exchange_upload(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk);
/* caller, after upload: t = op over every rank's block, in rank order.
 * Kept apart from the upload so that kernels waiting for the peers'
 * blocks are not queued in the middle of the caller's other work. */
netcl_status nc_exchange_combine(nc_exchange *x, netcl_tensor *t, netcl_dist_op op, nc_ticket *tk);
/* worker: the device has read the peers' blocks: publish the consumption */
void nc_exchange_release(nc_exchange *x, nc_ticket *tk);
/* any thread: waits for and drops the events tk still holds */
void nc_exchange_forget(nc_ticket *tk);

#endif
