/* dist/plugin/mpi.c — libnetcl_mpi.so, the only code that includes mpi.h.
 * It is built (by mpicc) only where Open MPI's headers are installed and
 * loaded by dist/mpi.c at run time, so libnetcl builds and runs without
 * MPI. Every function returns 0 or writes a message and returns -1.
 * Counts are split into pieces of at most INT_MAX elements (MPI's int). */
#include "netcl.h"
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static char *g_err;
static int g_errlen;

static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    snprintf(g_err, (size_t)g_errlen, "%s: %s", what, text);
    return -1;
}

static MPI_Datatype type_of(int dt)
{
    switch (dt) {
    case NETCL_DTYPE_FLOAT32: return MPI_FLOAT;
    case NETCL_DTYPE_FLOAT64: return MPI_DOUBLE;
    case NETCL_DTYPE_INT32: return MPI_INT32_T;
    case NETCL_DTYPE_INT64: return MPI_INT64_T;
    case NETCL_DTYPE_UINT8: return MPI_UINT8_T;
    default: return MPI_C_BOOL;
    }
}

static MPI_Op op_of(int dt, int op)
{
    if (dt == NETCL_DTYPE_BOOL)
        return (op == NETCL_DIST_MIN || op == NETCL_DIST_PRODUCT) ? MPI_LAND : MPI_LOR;
    switch (op) {
    case NETCL_DIST_MAX: return MPI_MAX;
    case NETCL_DIST_MIN: return MPI_MIN;
    case NETCL_DIST_PRODUCT: return MPI_PROD;
    default: return MPI_SUM;
    }
}

EXPORT int ncmpi_init(char *err, int errlen, int *rank, int *world)
{
    g_err = err;
    g_errlen = errlen;
    int ready = 0, provided = 0;
    MPI_Initialized(&ready);
    /* one worker thread makes every call after init: SERIALIZED suffices */
    if (!ready && check(MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread")) return -1;
    if (!ready && provided < MPI_THREAD_SERIALIZED) {
        snprintf(err, (size_t)errlen, "MPI_Init_thread: this MPI provides thread level %d, netcl needs SERIALIZED", provided);
        return -1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (check(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank")) return -1;
    return check(MPI_Comm_size(MPI_COMM_WORLD, world), "MPI_Comm_size");
}

EXPORT int ncmpi_finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
    return done ? 0 : check(MPI_Finalize(), "MPI_Finalize");
}

EXPORT int ncmpi_all_reduce(void *buf, int64_t n, int dt, int op, int64_t esize)
{
    for (int64_t off = 0; off < n; off += INT_MAX) {
        int cnt = (int)(n - off < INT_MAX ? n - off : INT_MAX);
        if (check(MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * esize, cnt, type_of(dt), op_of(dt, op), MPI_COMM_WORLD),
                  "MPI_Allreduce")) return -1;
    }
    return 0;
}

EXPORT int ncmpi_broadcast(void *buf, int64_t nbytes, int root)
{
    for (int64_t off = 0; off < nbytes; off += INT_MAX) {
        int cnt = (int)(nbytes - off < INT_MAX ? nbytes - off : INT_MAX);
        if (check(MPI_Bcast((char *)buf + off, cnt, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast")) return -1;
    }
    return 0;
}

/* The block collectives move one contiguous block per rank; blocks over
 * INT_MAX bytes go as a derived type of 1 MiB units plus a tail. */
static int block_type(int64_t nbytes, MPI_Datatype *t, int *count)
{
    if (nbytes <= INT_MAX) { *t = MPI_BYTE; *count = (int)nbytes; return 0; }
    if (nbytes % 1048576) { snprintf(g_err, (size_t)g_errlen, "MPI: a block of %lld bytes over 2 GiB must be a multiple of 1 MiB", (long long)nbytes); return -1; }
    if (check(MPI_Type_contiguous(1048576, MPI_BYTE, t), "MPI_Type_contiguous") || check(MPI_Type_commit(t), "MPI_Type_commit")) return -1;
    *count = (int)(nbytes / 1048576);
    return 0;
}

static void block_free(MPI_Datatype *t)
{
    if (*t != MPI_BYTE) MPI_Type_free(t);
}

EXPORT int ncmpi_all_gather(const void *in, void *out, int64_t nbytes)
{
    MPI_Datatype t;
    int c, rc;
    if (block_type(nbytes, &t, &c)) return -1;
    rc = check(MPI_Allgather(in, c, t, out, c, t, MPI_COMM_WORLD), "MPI_Allgather");
    block_free(&t);
    return rc;
}

EXPORT int ncmpi_gather(const void *in, void *out, int64_t nbytes, int root)
{
    MPI_Datatype t;
    int c, rc;
    if (block_type(nbytes, &t, &c)) return -1;
    rc = check(MPI_Gather(in, c, t, out, c, t, root, MPI_COMM_WORLD), "MPI_Gather");
    block_free(&t);
    return rc;
}

EXPORT int ncmpi_scatter(const void *in, void *out, int64_t nbytes, int root)
{
    MPI_Datatype t;
    int c, rc;
    if (block_type(nbytes, &t, &c)) return -1;
    rc = check(MPI_Scatter(in, c, t, out, c, t, root, MPI_COMM_WORLD), "MPI_Scatter");
    block_free(&t);
    return rc;
}

EXPORT int ncmpi_reduce_scatter(const void *in, void *out, int64_t n, int dt, int op)
{
    if (n > INT_MAX) { snprintf(g_err, (size_t)g_errlen, "MPI_Reduce_scatter_block: %lld elements per rank is over INT_MAX", (long long)n); return -1; }
    return check(MPI_Reduce_scatter_block(in, out, (int)n, type_of(dt), op_of(dt, op), MPI_COMM_WORLD),
                 "MPI_Reduce_scatter_block");
}

EXPORT int ncmpi_barrier(void)
{
    return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}
