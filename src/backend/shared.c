/* shared.c — rules the op layer and every backend share: which
 * activations a GEMM epilogue fuses, how split-K cuts K, and the
 * descriptor of a plain matrix. */
#include "backend/backend.h"
#include <string.h>

int nc_gemm_act_ok(int act)
{
    switch (act) {
    case -1: case NETCL_OP_RELU: case NETCL_OP_SIGMOID: case NETCL_OP_TANH: case NETCL_OP_SILU:
    case NETCL_OP_GELU: case NETCL_OP_GELU_TANH: case NETCL_OP_RELU6: case NETCL_OP_LEAKY_RELU: return 1;
    default: return 0;
    }
}

int64_t nc_gemm_slice_len(int64_t K, int S) { return K / S / 8 * 8; }

void nc_matrix_desc(nc_desc *d, void *buf, netcl_dtype dt, int64_t rows, int64_t cols, int trans)
{
    memset(d, 0, sizeof *d);
    d->buf = buf;
    d->dtype = dt;
    d->ndim = 3;
    d->sizes[0] = 1, d->sizes[1] = rows, d->sizes[2] = cols;
    d->strides[0] = rows * cols;
    d->strides[1] = trans ? 1 : cols;
    d->strides[2] = trans ? rows : 1;
}
