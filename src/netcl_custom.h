/* netcl_custom.h — a program's own ops (docs/custom-ops.md): functions
 * whose backward the caller provides (Lua's autograd.Function) and
 * kernels of the program's own OpenCL C (netcl.kernel). Part of the C
 * contract netcl.h opens (it includes this file at its end); its cdef
 * section follows netcl_dist.h's. */
#ifndef NETCL_CUSTOM_H
#define NETCL_CUSTOM_H

#include "netcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

/* ---- functions with a backward of their own (autograd.Function) ------------
 * result was computed by the caller without recording (any ops, a user
 * kernel); *out is a new tensor sharing it whose grad_fn is a node named
 * `name` with inputs ins. During backward, fn(ctx, grad, nin, grads) puts
 * a new reference (or NULL: no gradient) into grads[i] for each input, of
 * the input's shape; a non-zero return stops backward with an error. When
 * the node dies its ctx joins a list netcl_autograd_function_dead drains
 * (so a Lua caller frees its state outside any finalizer). Without grad
 * mode or an input that requires grad, *out is result itself (a new
 * reference) and ctx goes to that list at once. */
typedef int (*netcl_backward_callback)(void *ctx, netcl_tensor *grad, int nin, netcl_tensor **grads);
netcl_status netcl_autograd_function(netcl_tensor **out, netcl_tensor *result, int nin, netcl_tensor *const *ins,
                                     const char *name, netcl_backward_callback fn, void *ctx);
/* Moves up to max contexts of dead nodes into ctxs; returns how many. */
int netcl_autograd_function_dead(void **ctxs, int max);

/* ---- a user's own OpenCL kernels ----------------------------------------------
 * netcl_kernel_create compiles OpenCL C `source` for dev (an OpenCL device;
 * the cpu backend runs none) with `options`, cached in memory and on disk
 * like netcl's programs, and takes kernel `name`. A launch passes each
 * tensor as two kernel arguments: its buffer (__global T *) and its offset
 * in elements (long); scalars as int, long, float or double. Every tensor
 * argument's storage counts as written. */
typedef struct netcl_kernel netcl_kernel;
typedef enum netcl_kernel_arg {
    NETCL_ARG_TENSOR = 0,
    NETCL_ARG_INT = 1,
    NETCL_ARG_LONG = 2,
    NETCL_ARG_FLOAT = 3,
    NETCL_ARG_DOUBLE = 4
} netcl_kernel_arg;
netcl_status netcl_kernel_create(netcl_kernel **out, netcl_device *dev, const char *source, const char *name,
                                 const char *options);
/* kinds[i] says what argument i is: tensors[i] (TENSOR) or scalars[i];
 * global: ndim (1..3) work sizes; local NULL lets the driver choose. */
netcl_status netcl_kernel_launch(netcl_kernel *k, int nargs, const netcl_kernel_arg *kinds, netcl_tensor *const *tensors,
                                 const double *scalars, int ndim, const int64_t *global, const int64_t *local);
void netcl_kernel_release(netcl_kernel *k);

#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif
#endif /* NETCL_CUSTOM_H */
