/* iter.c — strided multi-operand iteration for the CPU backend: collapse
 * dims, then walk any linear index range row by row (so ranges can be
 * handed to threads). */
#include "cpu.h"
#include <string.h>

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

void nc_iter_range(const nc_iter *it, int64_t start, int64_t end, nc_row_fn row, void *ctx)
{
    int nd = it->ndim, inner = nd - 1;
    int64_t idx[NC_MAX_DIMS], off[NC_ITER_OPS], step[NC_ITER_OPS];
    /* unravel start */
    int64_t rem = start;
    for (int d = nd - 1; d >= 0; d--) { idx[d] = rem % it->sizes[d]; rem /= it->sizes[d]; }
    for (int k = 0; k < it->nops; k++) {
        off[k] = it->offsets[k];
        for (int d = 0; d < nd; d++) off[k] += idx[d] * it->strides[k][d];
        step[k] = it->strides[k][inner];
    }
    int64_t pos = start;
    while (pos < end) {
        int64_t count = it->sizes[inner] - idx[inner];
        if (count > end - pos) count = end - pos;
        row(ctx, off, step, count);
        pos += count;
        if (pos >= end) break;
        /* advance to the next row: carry through the outer dims */
        for (int k = 0; k < it->nops; k++) off[k] += (count - 1) * step[k];
        idx[inner] += count - 1;
        for (int d = inner; d >= 0; d--) {
            if (++idx[d] < it->sizes[d]) {
                for (int k = 0; k < it->nops; k++) off[k] += it->strides[k][d];
                break;
            }
            for (int k = 0; k < it->nops; k++) off[k] -= (it->sizes[d] - 1) * it->strides[k][d];
            idx[d] = 0;
        }
    }
}
