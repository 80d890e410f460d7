/* random.c — the CPU random family: Philox4x32-10 draws over a contiguous
 * output, element i computed by the reference nc_rng_value
 * (src/base/philox.c) and split across the thread pool; float32 is stored
 * directly. */
#include "cpu.h"

typedef struct { const nc_desc *d; netcl_rng_kind kind; uint64_t seed, offset; double p1, p2; } rng_ctx;

static void rng_part(void *vctx, int64_t s, int64_t e)
{
    rng_ctx *c = vctx;
    if (c->d->dtype == NETCL_DTYPE_FLOAT32) {
        float *p = (float *)c->d->buf + c->d->offset;
        for (int64_t i = s; i < e; i++) p[i] = (float)nc_rng_value(c->kind, c->seed, c->offset, i, c->p1, c->p2);
        return;
    }
    for (int64_t i = s; i < e; i++)
        nc_store_double(c->d->buf, c->d->dtype, c->d->offset + i, nc_rng_value(c->kind, c->seed, c->offset, i, c->p1, c->p2));
}

netcl_status nc_cpu_rng(netcl_device *dev, const nc_desc *d, netcl_rng_kind kind, uint64_t seed, uint64_t offset, double p1,
                        double p2)
{
    (void)dev;
    rng_ctx c = {d, kind, seed, offset, p1, p2};
    nc_parallel_for(nc_numel(d->ndim, d->sizes), 16384, rng_part, &c);
    return NETCL_OK;
}
