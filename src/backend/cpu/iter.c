/* iter.c — walks any linear index range of a collapsed strided iteration
 * (nc_iter, from the core) row by row, so ranges can be handed to threads. */
#include "cpu.h"
#include <string.h>

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
