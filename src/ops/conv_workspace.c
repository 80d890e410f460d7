/* conv_workspace.c — how much scratch a convolution strategy takes for one
 * pass, and the limit the planner (conv.c) holds it against. */
#include "ops/ops.h"
#include <math.h>
#include <stdatomic.h>

/* The workspace limit: bytes a strategy's scratch may take for one pass
 * (netcl_set_conv_workspace_limit; -1: an eighth of the device's memory). */
static _Atomic int64_t workspace_limit = -1;

void netcl_set_conv_workspace_limit(int64_t bytes) { atomic_store(&workspace_limit, bytes < 0 ? -1 : bytes); }
int64_t netcl_conv_workspace_limit(void) { return atomic_load(&workspace_limit); }

/* The limit on dev: the one set, else an eighth of its memory; never more
 * than half of what the pool has not handed out, so near a full device
 * (the largest batch that fits) a pass runs without scratch rather than
 * failing for it. */
double nc_conv_workspace_limit_on(const netcl_device *dev)
{
    int64_t l = atomic_load(&workspace_limit);
    if (dev->global_mem <= 0) return l >= 0 ? (double)l : 1e300;
    double left = ((double)dev->global_mem - (double)netcl_memory_bytes_in_use(dev)) / 2;
    double lim = l >= 0 ? (double)l : (double)dev->global_mem / 8;
    return lim < left ? lim : left;
}

/* The scratch a strategy allocates for one pass besides its result, as
 * the planner holds it against the limit: im2col's unfolded matrix
 * [N, C*KH*KW, OH*OW] (backward-data: the GEMM's columns before the fold),
 * Winograd's transformed tiles of input, output and weights (float32,
 * alpha = (m+2)^2 per tile); the others allocate at most partial sums of
 * the weight's size. */
double nc_conv_workspace_bytes(nc_conv_algo a, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    double cols = (double)g->N * (double)(g->C * g->KH * g->KW) * (double)(g->OH * g->OW) * netcl_dtype_size(dt);
    if (a == NC_CONV_IM2COL) return cols;
    if (a == NC_CONV_WINOGRAD2 || a == NC_CONV_WINOGRAD4) {
        double m = a == NC_CONV_WINOGRAD2 ? 2 : 4, alpha = (m + 2) * (m + 2);
        double tiles = (double)g->N * ceil((double)g->OH / m) * ceil((double)g->OW / m);
        return 4.0 * alpha * ((double)g->C * tiles + (double)g->O * tiles + (double)g->C * (double)g->O);
    }
    (void)pass;
    return 0;
}
