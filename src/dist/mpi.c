/* dist/mpi.c — the MPI transport: loads libnetcl_mpi.so (dist/plugin/mpi.c,
 * built where Open MPI is installed) from beside libnetcl or from
 * NETCL_MPI_PLUGIN, so netcl builds and runs on machines without MPI and
 * says what is missing when a job asks for it. RTLD_GLOBAL: Open MPI's own
 * components are loaded later and need libmpi's symbols. When a rank dies,
 * mpirun ends the job; the timeout is the launcher's. */
#include "dist/dist.h"
#include "base/base.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    nc_transport base;
    char err[512];
    int (*init)(char *, int, int *, int *);
    int (*finalize)(void);
    int (*all_reduce)(void *, int64_t, int, int, int64_t);
    int (*broadcast)(void *, int64_t, int);
    int (*all_gather)(const void *, void *, int64_t);
    int (*gather)(const void *, void *, int64_t, int);
    int (*scatter)(const void *, void *, int64_t, int);
    int (*reduce_scatter)(const void *, void *, int64_t, int, int);
    int (*barrier)(void);
} mpi_t;

static netcl_status result(mpi_t *m, int rc, const char *what)
{
    return rc == 0 ? NETCL_OK : nc_fail(NETCL_ERR_BACKEND, "distributed %s (mpi): %s", what, m->err);
}

static netcl_status m_all_reduce(nc_transport *t, void *buf, int64_t n, netcl_dtype dt, netcl_dist_op op)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->all_reduce(buf, n, (int)dt, (int)op, netcl_dtype_size(dt)), "all_reduce");
}

static netcl_status m_broadcast(nc_transport *t, void *buf, int64_t nbytes, int root)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->broadcast(buf, nbytes, root), "broadcast");
}

static netcl_status m_reduce_scatter(nc_transport *t, const void *in, void *out, int64_t n, netcl_dtype dt, netcl_dist_op op)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->reduce_scatter(in, out, n, (int)dt, (int)op), "reduce_scatter");
}

static netcl_status m_all_gather(nc_transport *t, const void *in, void *out, int64_t nbytes)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->all_gather(in, out, nbytes), "all_gather");
}

static netcl_status m_gather(nc_transport *t, const void *in, void *out, int64_t nbytes, int root)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->gather(in, out, nbytes, root), "gather");
}

static netcl_status m_scatter(nc_transport *t, const void *in, void *out, int64_t nbytes, int root)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->scatter(in, out, nbytes, root), "scatter");
}

static netcl_status m_barrier(nc_transport *t)
{
    mpi_t *m = (mpi_t *)t;
    return result(m, m->barrier(), "barrier");
}

static void m_destroy(nc_transport *t)
{
    mpi_t *m = (mpi_t *)t;
    m->finalize();
    free(m);
}

static const nc_transport_ops mpi_ops = {
    .all_reduce = m_all_reduce, .broadcast = m_broadcast, .reduce_scatter = m_reduce_scatter,
    .all_gather = m_all_gather, .gather = m_gather, .scatter = m_scatter, .barrier = m_barrier,
    .destroy = m_destroy,
};

/* The plugin's path: NETCL_MPI_PLUGIN, else beside this library. */
static void plugin_path(char *path, size_t n)
{
    const char *env = getenv("NETCL_MPI_PLUGIN");
    if (env && *env) { snprintf(path, n, "%s", env); return; }
    Dl_info info;
    if (dladdr((void *)nc_mpi_open, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = slash ? (int)(slash - info.dli_fname) : 0;
        snprintf(path, n, "%.*s%slibnetcl_mpi.so", dir, info.dli_fname, slash ? "/" : "");
    } else {
        snprintf(path, n, "libnetcl_mpi.so");
    }
}

netcl_status nc_mpi_open(nc_transport **out, double timeout_s)
{
    (void)timeout_s;
    *out = NULL;
    char path[4096];
    plugin_path(path, sizeof path);
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "distributed init: the mpi backend needs %s, built by make where Open MPI "
                       "is installed (libopenmpi-dev; make deps installs it): %s", path, dlerror());
    mpi_t *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(NETCL_ERR_OOM, "distributed init: out of host memory");
#define NC_SYM(field, name)                                                                          \
    if (!(*(void **)&m->field = dlsym(lib, name))) {                                                 \
        free(m);                                                                                     \
        return nc_fail(NETCL_ERR_UNSUPPORTED, "distributed init: %s has no %s (rebuild it)", path, name); \
    }
    NC_SYM(init, "ncmpi_init");
    NC_SYM(finalize, "ncmpi_finalize");
    NC_SYM(all_reduce, "ncmpi_all_reduce");
    NC_SYM(broadcast, "ncmpi_broadcast");
    NC_SYM(all_gather, "ncmpi_all_gather");
    NC_SYM(gather, "ncmpi_gather");
    NC_SYM(scatter, "ncmpi_scatter");
    NC_SYM(reduce_scatter, "ncmpi_reduce_scatter");
    NC_SYM(barrier, "ncmpi_barrier");
#undef NC_SYM
    if (m->init(m->err, (int)sizeof m->err, &m->base.rank, &m->base.world) != 0) {
        netcl_status st = nc_fail(NETCL_ERR_BACKEND, "distributed init (mpi): %s", m->err);
        free(m);
        return st;
    }
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    m->base.local_rank = lr ? atoi(lr) : m->base.rank;
    m->base.ops = &mpi_ops;
    *out = &m->base;
    return NETCL_OK;
}
