/* strided.c — collapsing the shared shape of several strided operands into
 * as few dims as possible (dims merge where every operand steps across them
 * as one); both backends iterate what this produces. */
#include "core.h"

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

