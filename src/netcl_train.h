/* netcl_train.h — what training adds to the ops in the C contract:
 * autograd, autocast (docs/amp.md), the optimizers' fused updates
 * (docs/optim.md) and capture/replay (docs/jit.md). Part of the contract
 * netcl.h opens (it includes this file at its end); its cdef section
 * follows netcl_ops.h's. */
#ifndef NETCL_TRAIN_H
#define NETCL_TRAIN_H

#include "netcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

/* ---- autograd -------------------------------------------------------------
 * While grad mode is on (per thread, default on), every op with an input
 * that requires grad records a node on its output. netcl_backward runs the
 * recorded graph from `root` and accumulates into the .grad of each leaf
 * that requires grad; saved tensors are freed as each node is consumed
 * unless retain_graph is set. */
int netcl_grad_enabled(void);
void netcl_set_grad_enabled(int enabled);
/* Leaves only (tensors no op produced); floating dtypes only. */
netcl_status netcl_tensor_set_requires_grad(netcl_tensor *t, int requires_grad);
int netcl_tensor_requires_grad(const netcl_tensor *t);
int netcl_tensor_is_leaf(const netcl_tensor *t);
/* Keep the gradient of a non-leaf tensor in its .grad during backward. */
netcl_status netcl_tensor_retain_grad(netcl_tensor *t);
/* New reference to the accumulated gradient, or NULL when there is none. */
netcl_tensor *netcl_tensor_grad(const netcl_tensor *t);
/* Replaces (same shape, dtype and device) or, with NULL, clears the gradient. */
netcl_status netcl_tensor_set_grad(netcl_tensor *t, netcl_tensor *grad);
/* A new tensor sharing t's storage, cut off from the graph. */
netcl_status netcl_tensor_detach(netcl_tensor **out, netcl_tensor *t);
/* Name of the op that produced t ("mul", "matmul", ...), NULL for leaves. */
const char *netcl_tensor_grad_fn(const netcl_tensor *t);
/* Gradient hooks (tensor.register_hook): during backward, fn(ctx, grad,
 * &replace) sees the gradient flowing into t (for a leaf, before it is
 * added to .grad); it may put a new reference of the same shape into
 * *replace to change it. A non-zero return stops backward with an error.
 * *id names the hook for netcl_tensor_remove_hook. */
typedef int (*netcl_grad_hook_fn)(void *ctx, netcl_tensor *grad, netcl_tensor **replace);
netcl_status netcl_tensor_register_hook(netcl_tensor *t, netcl_grad_hook_fn fn, void *ctx, int *id);
/* A leaf's post-accumulate hook: fn(ctx, leaf, replace) runs once the
 * leaf's .grad has taken a gradient during backward (replace is ignored);
 * removed with netcl_tensor_remove_hook. */
netcl_status netcl_tensor_register_post_accumulate_hook(netcl_tensor *t, netcl_grad_hook_fn fn, void *ctx, int *id);
netcl_status netcl_tensor_remove_hook(netcl_tensor *t, int id);

/* grad may be NULL when root has one element (then it is 1). */
netcl_status netcl_backward(netcl_tensor *root, netcl_tensor *grad, int retain_graph);

/* ---- optimizers: fused updates over flat buffers -----------------------------
 * One call updates a whole flat parameter buffer and its state buffers in
 * one kernel. param, grad and the state tensors are contiguous, of one
 * float dtype and one element count, on one device, and do not overlap.
 * hyper holds NETCL_OPTIM_NHYPER values indexed by netcl_optim_hyper; the
 * caller computes step-dependent factors (bias corrections, decayed rates)
 * on the host, so the update never reads the device back. param and the
 * states are written in place (their versions bumped), grad is read. As
 * for any in-place write, a param that requires grad is refused while grad
 * mode is on. Lua: lua/netcl/optim (docs/optim.md gives the formulas). */
typedef enum netcl_optim_kind {
    NETCL_OPTIM_SGD = 0,       /* state1: momentum buffer (needed when momentum != 0) */
    NETCL_OPTIM_ADAM = 1,      /* state1: exp_avg, state2: exp_avg_sq, state3: max_exp_avg_sq (amsgrad) */
    NETCL_OPTIM_RMSPROP = 2,   /* state1: square_avg, state2: momentum buffer (momentum != 0), state3: grad_avg (centered) */
    NETCL_OPTIM_ADAGRAD = 3,   /* state1: sum of squared gradients */
    NETCL_OPTIM_KIND_END = 4
} netcl_optim_kind;

typedef enum netcl_optim_flag {
    NETCL_OPTIM_NESTEROV = 1,     /* SGD */
    NETCL_OPTIM_AMSGRAD = 2,      /* Adam */
    NETCL_OPTIM_CENTERED = 4,     /* RMSProp */
    NETCL_OPTIM_MAXIMIZE = 8,     /* ascend: the gradient's sign is flipped first */
    NETCL_OPTIM_FIRST_STEP = 16   /* SGD: the momentum buffer starts as the gradient */
} netcl_optim_flag;

typedef enum netcl_optim_hyper {
    NETCL_OPTIM_LR = 0,            /* step size (Adam: lr / (1 - beta1^t); Adagrad: lr / (1 + (t-1) lr_decay)) */
    NETCL_OPTIM_WEIGHT_DECAY = 1,  /* L2 term added to the gradient (0 for AdamW) */
    NETCL_OPTIM_BETA1 = 2,         /* SGD and RMSProp momentum, Adam beta1 */
    NETCL_OPTIM_BETA2 = 3,         /* Adam beta2, RMSProp alpha, SGD dampening */
    NETCL_OPTIM_EPS = 4,
    NETCL_OPTIM_BC2_SQRT = 5,      /* Adam: sqrt(1 - beta2^t) */
    NETCL_OPTIM_PARAM_SCALE = 6,   /* param multiplied first (AdamW: 1 - lr * weight_decay), else 1 */
    NETCL_OPTIM_NHYPER = 8
} netcl_optim_hyper;

/* state1..3 may be NULL where the kind and flags do not use them. */
netcl_status netcl_optim_step(netcl_optim_kind kind, int flags, netcl_tensor *param, netcl_tensor *grad,
                              netcl_tensor *state1, netcl_tensor *state2, netcl_tensor *state3,
                              const double *hyper, int nhyper);
/* Mixed precision's unscale, in place: grad *= inv_scale and found_inf = 1
 * when grad held an inf or NaN (else found_inf is left alone); grad a
 * contiguous float tensor, inv_scale and found_inf float32 single elements
 * on grad's device. One kernel; nothing is read back to the host. */
netcl_status netcl_amp_unscale_(netcl_tensor *grad, const netcl_tensor *inv_scale, netcl_tensor *found_inf);

/* ---- autocast (src/autograd/autocast.c, docs/amp.md) --------------------------
 * Regions per thread, nested: between netcl_autocast_begin(enabled, dtype)
 * and netcl_autocast_end, while the innermost region is enabled, products
 * (matmul, gemm, addmm, linear, convolutions) read float32 tensors as dtype
 * (float16 or bfloat16; float32 accumulation), and softmax, sums, means,
 * products, var/std/norm/logsumexp, exp/log and their kin, pow, the norms
 * and the losses read float16/bfloat16 tensors as float32. The casts are
 * recorded (gradients come back in the arguments' dtypes). */
netcl_status netcl_autocast_begin(int enabled, netcl_dtype dtype);
netcl_status netcl_autocast_end(void);
int netcl_autocast_enabled(void);
netcl_dtype netcl_autocast_dtype(void);
int netcl_autocast_depth(void);   /* open regions on this thread */

/* ---- capture and replay (src/jit/) ---------------------------------------
 * Between netcl_capture_begin(dev) and netcl_capture_end every kernel netcl
 * runs on dev is also recorded (it still runs). The result is a program:
 * netcl_program_run replays the recorded kernels over the same buffers with
 * one call (fuse != 0: chains of elementwise kernels whose intermediates
 * nothing else reads run as one generated kernel). Tensors made during the
 * capture that are still held when it ends hold the results of the latest
 * replay; the values only the program holds share buffers by a static
 * memory plan, so a replay allocates nothing. A step that reads device values on the host
 * or uploads host data cannot be replayed: capture_end refuses it and says
 * why. Random draws take fresh numbers at every replay; optimizer steps use
 * the hyper-parameters last given with netcl_program_set_optim_hyper (k
 * counts the program's optimizer steps from 0). One capture at a time. */
typedef struct netcl_program netcl_program;
netcl_status netcl_capture_begin(netcl_device *dev);
netcl_status netcl_capture_end(netcl_program **out, int fuse);
int netcl_capturing(void);
netcl_status netcl_program_run(netcl_program *p);
int netcl_program_steps(const netcl_program *p);            /* kernel calls a replay makes */
int netcl_program_captured_steps(const netcl_program *p);   /* the kernels recorded, before fusion */
int netcl_program_optim_steps(const netcl_program *p);
/* One line per kernel call of a replay ("12 fused (5 nodes, 2 loads, 1
 * stores) -> float32[64, 120]") into buf; returns the length the whole
 * listing needs, with its terminating zero. */
int netcl_program_describe(const netcl_program *p, char *buf, int len);
netcl_status netcl_program_set_optim_hyper(netcl_program *p, int k, const double *hyper, int nhyper);
/* A binding lets a later run use another tensor where the capture used t
 * (an input or a result): netcl_program_bind(p, t, result, &id) notes every
 * kernel argument on t's storage (t must be the whole of its storage; with
 * result != 0 t must also be a tensor the capture made that nothing but the
 * caller's one reference and the program holds, so no one else expects its
 * values), and netcl_program_rebind(p, id, now) points those arguments at
 * now (same device, dtype, shape and strides) until the next rebind. now
 * must outlive the runs that use it. */
netcl_status netcl_program_bind(netcl_program *p, const netcl_tensor *t, int result, int *id);
netcl_status netcl_program_rebind(netcl_program *p, int id, const netcl_tensor *now);
void netcl_program_release(netcl_program *p);


#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* NETCL_TRAIN_H */
