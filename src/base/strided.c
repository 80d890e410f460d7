/* strided.c — shapes: element counts and their printed form, and the
 * collapsing of several strided operands' shared shape into as few dims as
 * possible (dims merge where every operand steps across them as one); both
 * backends iterate what this produces. */
#include "base/base.h"
#include <stdio.h>

/* A zero anywhere makes the count 0 before a large product can overflow;
 * otherwise it saturates (shapes are validated below 2^62 bytes first). */
int64_t nc_numel(int ndim, const int64_t *sizes)
{
    for (int i = 0; i < ndim; i++)
        if (sizes[i] == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(n, sizes[i], &n)) return INT64_MAX;
    return n;
}

/* A small per-thread ring so one message can describe several tensors. */
char *nc_msg_scratch(void)
{
    static _Thread_local char ring[8][NC_MSG_SCRATCH];
    static _Thread_local int next;
    next = (next + 1) % 8;
    return ring[next];
}

const char *nc_shape_str(int ndim, const int64_t *sizes)
{
    char *b = nc_msg_scratch();
    int used = snprintf(b, NC_MSG_SCRATCH, "[");
    for (int i = 0; i < ndim && used < NC_MSG_SCRATCH - 12; i++)
        used += snprintf(b + used, NC_MSG_SCRATCH - (size_t)used, "%s%lld", i ? "," : "", (long long)sizes[i]);
    snprintf(b + used, NC_MSG_SCRATCH - (size_t)used, "]");
    return b;
}


void nc_iter_init(nc_iter *it, int nops, const nc_desc *const *ops)
{
    const nc_desc *d0 = ops[0];
    it->nops = nops;
    it->ndim = 0;
    for (int k = 0; k < nops; k++) it->offsets[k] = ops[k]->offset;
    /* keep non-trivial dims, merging a dim into the previous (outer) one
     * when every operand steps across both as one */
    for (int d = 0; d < d0->ndim; d++) {
        if (d0->sizes[d] == 1) continue;
        int n = it->ndim;
        int merge = n > 0;
        for (int k = 0; merge && k < nops; k++)
            if (it->strides[k][n - 1] != ops[k]->strides[d] * d0->sizes[d]) merge = 0;
        if (merge) {
            it->sizes[n - 1] *= d0->sizes[d];
            for (int k = 0; k < nops; k++) it->strides[k][n - 1] = ops[k]->strides[d];
        } else {
            it->sizes[n] = d0->sizes[d];
            for (int k = 0; k < nops; k++) it->strides[k][n] = ops[k]->strides[d];
            it->ndim++;
        }
    }
    if (it->ndim == 0) { /* a single element */
        it->ndim = 1;
        it->sizes[0] = nc_numel(d0->ndim, d0->sizes) ? 1 : 0;
        for (int k = 0; k < nops; k++) it->strides[k][0] = 1;
    }
}

int64_t nc_iter_numel(const nc_iter *it) { return nc_numel(it->ndim, it->sizes); }

