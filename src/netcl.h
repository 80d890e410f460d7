/* netcl.h — the whole C contract of libnetcl; LuaJIT's FFI reads the part
 * between the cdef markers (lua/netcl/cdef.lua is generated from it).
 *
 * A worked example (C):
 *
 *     netcl_device *dev; netcl_tensor *a, *b, *c;
 *     int64_t shape[2] = {2, 3};
 *     if (netcl_device_get(&dev, "opencl:0") != NETCL_OK) puts(netcl_last_error());
 *     netcl_tensor_full(&a, dev, NETCL_DTYPE_FLOAT32, 2, shape, 1.5);
 *     netcl_tensor_rand(&b, dev, NETCL_DTYPE_FLOAT32, 2, shape, NETCL_RNG_NORMAL, 0.0, 1.0);
 *     netcl_binary(&c, NETCL_OP_ADD, a, b);          // c = a + b, broadcasting
 *     netcl_tensor_release(a); netcl_tensor_release(b); netcl_tensor_release(c);
 *
 * Rules (docs/c-api.md says them at length):
 *  - Every fallible call returns a netcl_status; on failure the message
 *    (op, shapes, dtypes, device, OpenCL error name) is in netcl_last_error().
 *    Nothing here exits, aborts or longjmps on a user error.
 *  - Outputs come first. A returned handle (through an out-pointer) is a new
 *    reference owned by the caller; handle arguments are borrowed.
 *  - Dimensions and indices are 0-based in C (the Lua layer is 1-based).
 *  - No macros, structs by value or varargs in the cdef part: LuaJIT must be
 *    able to JIT-compile every call.
 */
#ifndef NETCL_H
#define NETCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

typedef struct netcl_device netcl_device;
typedef struct netcl_tensor netcl_tensor;

typedef enum netcl_status {
    NETCL_OK = 0,
    NETCL_ERR_ARGUMENT = 1,     /* bad argument: shape, dtype, index, name */
    NETCL_ERR_DEVICE = 2,       /* device missing, or tensors on different devices */
    NETCL_ERR_OOM = 3,          /* out of memory: the caller may collect garbage and retry once */
    NETCL_ERR_BACKEND = 4,      /* OpenCL or system failure */
    NETCL_ERR_UNSUPPORTED = 5,  /* valid request this device/dtype cannot do */
    NETCL_ERR_FORK = 6,         /* OpenCL touched from a forked child */
    NETCL_ERR_FREED = 7         /* use of a released tensor */
} netcl_status;

typedef enum netcl_dtype {
    NETCL_DTYPE_FLOAT32 = 0,
    NETCL_DTYPE_FLOAT16 = 1,
    NETCL_DTYPE_BFLOAT16 = 2,
    NETCL_DTYPE_FLOAT64 = 3,
    NETCL_DTYPE_INT32 = 4,
    NETCL_DTYPE_INT64 = 5,
    NETCL_DTYPE_UINT8 = 6,
    NETCL_DTYPE_BOOL = 7,
    NETCL_DTYPE_COUNT = 8
} netcl_dtype;

typedef enum netcl_device_type {
    NETCL_DEVICE_CPU = 0,          /* the plain-C backend */
    NETCL_DEVICE_OPENCL_GPU = 1,
    NETCL_DEVICE_OPENCL_CPU = 2,   /* e.g. PoCL */
    NETCL_DEVICE_OPENCL_OTHER = 3
} netcl_device_type;

/* Elementwise and reduction operators. Unary ops take one tensor (plus the
 * two scalar parameters of netcl_unary), binary ops two (or a tensor and a
 * scalar), comparisons return bool. */
typedef enum netcl_op {
    /* unary; p1/p2 are parameters where noted */
    NETCL_OP_NEG = 0,
    NETCL_OP_ABS = 1,
    NETCL_OP_EXP = 2,
    NETCL_OP_LOG = 3,
    NETCL_OP_SQRT = 4,
    NETCL_OP_RELU = 5,
    NETCL_OP_SIGMOID = 6,
    NETCL_OP_TANH = 7,
    NETCL_OP_SIGN = 8,
    NETCL_OP_RECIPROCAL = 9,
    NETCL_OP_SQUARE = 10,
    NETCL_OP_RSQRT = 11,
    NETCL_OP_EXPM1 = 12,
    NETCL_OP_LOG1P = 13,
    NETCL_OP_LOG2 = 14,
    NETCL_OP_SIN = 15,
    NETCL_OP_COS = 16,
    NETCL_OP_TAN = 17,
    NETCL_OP_FLOOR = 18,
    NETCL_OP_CEIL = 19,
    NETCL_OP_ROUND = 20,       /* half to even */
    NETCL_OP_TRUNC = 21,
    NETCL_OP_SILU = 22,
    NETCL_OP_GELU = 23,        /* erf form */
    NETCL_OP_GELU_TANH = 24,   /* tanh approximation */
    NETCL_OP_SOFTPLUS = 25,    /* log(1 + exp(x)) */
    NETCL_OP_RELU6 = 26,
    NETCL_OP_LEAKY_RELU = 27,  /* p1: negative slope */
    NETCL_OP_ELU = 28,         /* p1: alpha */
    NETCL_OP_CLAMP = 29,       /* p1: min, p2: max (hardtanh) */
    NETCL_OP_ERF = 30,
    NETCL_OP_UNARY_END = 31,
    /* binary */
    NETCL_OP_ADD = 64,
    NETCL_OP_SUB = 65,
    NETCL_OP_MUL = 66,
    NETCL_OP_DIV = 67,
    NETCL_OP_POW = 68,
    NETCL_OP_MAXIMUM = 69,
    NETCL_OP_MINIMUM = 70,
    NETCL_OP_EQ = 71,
    NETCL_OP_NE = 72,
    NETCL_OP_LT = 73,
    NETCL_OP_LE = 74,
    NETCL_OP_GT = 75,
    NETCL_OP_GE = 76,
    NETCL_OP_BINARY_END = 77,
    /* reductions */
    NETCL_OP_SUM = 96,
    NETCL_OP_MEAN = 97,
    NETCL_OP_MAX = 98,
    NETCL_OP_MIN = 99,
    NETCL_OP_ARGMAX = 100,
    NETCL_OP_ARGMIN = 101,
    NETCL_OP_PROD = 102,
    NETCL_OP_REDUCE_END = 103
} netcl_op;

typedef enum netcl_rng_kind {
    NETCL_RNG_UNIFORM = 0,   /* [p1, p2) */
    NETCL_RNG_NORMAL = 1,    /* mean p1, std p2 */
    NETCL_RNG_RANDINT = 2    /* integers in [p1, p2) */
} netcl_rng_kind;

/* ---- library ---------------------------------------------------------- */
int netcl_abi_version(void);
const char *netcl_version(void);
const char *netcl_last_error(void);
/* Releases every device, queue, program and pooled buffer; idempotent.
 * Also run at exit and on SIGINT. */
void netcl_shutdown(void);

/* ---- dtypes ------------------------------------------------------------ */
const char *netcl_dtype_name(netcl_dtype dtype);
int netcl_dtype_size(netcl_dtype dtype);
/* NETCL_DTYPE_COUNT when the name is unknown */
netcl_dtype netcl_dtype_from_name(const char *name);
const char *netcl_op_name(netcl_op op);

/* ---- devices ----------------------------------------------------------- */
int netcl_device_count(void);
/* Borrowed handles: devices live until netcl_shutdown. */
netcl_device *netcl_device_at(int index);
netcl_status netcl_device_get(netcl_device **out, const char *name);
/* Default: $NETCL_DEVICE, else the first OpenCL GPU, else "cpu". */
netcl_status netcl_device_default(netcl_device **out);
const char *netcl_device_name(const netcl_device *dev);       /* "cpu", "opencl:0" */
netcl_device_type netcl_device_type_of(const netcl_device *dev);
const char *netcl_device_hw_name(const netcl_device *dev);    /* e.g. "NVIDIA H200" */
const char *netcl_device_vendor(const netcl_device *dev);
const char *netcl_device_driver(const netcl_device *dev);
const char *netcl_device_platform(const netcl_device *dev);
int netcl_device_compute_units(const netcl_device *dev);
int64_t netcl_device_global_mem(const netcl_device *dev);
int64_t netcl_device_local_mem(const netcl_device *dev);
int64_t netcl_device_max_work_group(const netcl_device *dev);
int netcl_device_has_fp16(const netcl_device *dev);
int netcl_device_has_fp64(const netcl_device *dev);
/* NVIDIA compute capability as major*10+minor (90 for sm_90), 0 elsewhere. */
int netcl_device_compute_capability(const netcl_device *dev);
netcl_status netcl_device_synchronize(netcl_device *dev);

/* ---- memory ------------------------------------------------------------ */
/* Pool statistics of one device. */
int64_t netcl_memory_allocations(const netcl_device *dev);   /* backend allocations made */
int64_t netcl_memory_pool_hits(const netcl_device *dev);
int64_t netcl_memory_pool_misses(const netcl_device *dev);
int64_t netcl_memory_bytes_in_use(const netcl_device *dev);  /* held by live storages */
int64_t netcl_memory_bytes_cached(const netcl_device *dev);  /* free blocks kept by the pool */
int64_t netcl_memory_peak_bytes(const netcl_device *dev);
/* Bytes in use over all devices: the Lua side compares it against its GC
 * threshold after each allocation (device memory is invisible to the GC). */
int64_t netcl_memory_total_in_use(void);
/* Gives every cached free block of the device back to the backend. */
void netcl_memory_empty_cache(netcl_device *dev);
void netcl_memory_reset_peak(netcl_device *dev);

/* ---- runtime statistics -------------------------------------------------- */
int64_t netcl_runtime_programs_compiled(void);   /* built from source */
int64_t netcl_runtime_programs_loaded(void);     /* loaded from the disk cache */
int64_t netcl_runtime_kernels_launched(void);

/* ---- random numbers ------------------------------------------------------ */
/* The global generator: Philox4x32-10, keyed by the seed; every draw takes
 * the next block of counters, so results are identical on every backend. */
void netcl_rng_seed(uint64_t seed);
uint64_t netcl_rng_get_seed(void);
uint64_t netcl_rng_get_offset(void);
void netcl_rng_set_offset(uint64_t offset);

/* ---- tensors: lifetime and metadata ------------------------------------ */
void netcl_tensor_retain(netcl_tensor *t);
/* Drops one reference; NULL is allowed. */
void netcl_tensor_release(netcl_tensor *t);
int netcl_tensor_ndim(const netcl_tensor *t);
int64_t netcl_tensor_size(const netcl_tensor *t, int dim);
int64_t netcl_tensor_stride(const netcl_tensor *t, int dim);   /* in elements */
int64_t netcl_tensor_offset(const netcl_tensor *t);            /* in elements */
int64_t netcl_tensor_numel(const netcl_tensor *t);
netcl_dtype netcl_tensor_dtype(const netcl_tensor *t);
netcl_device *netcl_tensor_device(const netcl_tensor *t);
int netcl_tensor_is_contiguous(const netcl_tensor *t);
/* 1 when both views share one storage. */
int netcl_tensor_same_storage(const netcl_tensor *a, const netcl_tensor *b);
/* Writes "float32[2,3] on opencl:0" into buf (always NUL-terminated). */
void netcl_tensor_describe(const netcl_tensor *t, char *buf, int buflen);

/* ---- tensors: creation --------------------------------------------------- */
/* sizes: ndim (0..8) non-negative sizes. */
netcl_status netcl_tensor_empty(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes);
netcl_status netcl_tensor_full(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, double value);
/* 1-D: start, start+step, ... while < end (> end for negative step) */
netcl_status netcl_tensor_arange(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, double start, double end, double step);
netcl_status netcl_tensor_linspace(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, double start, double end, int64_t steps);
netcl_status netcl_tensor_eye(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int64_t n, int64_t m);
/* Copies numel elements of `dtype` from host memory (the raw-pointer form). */
netcl_status netcl_tensor_from_host(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, const void *data);
/* Fills a new tensor from doubles converted to dtype (the Lua-table form). */
netcl_status netcl_tensor_from_doubles(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, const double *data);
netcl_status netcl_tensor_rand(netcl_tensor **out, netcl_device *dev, netcl_dtype dtype, int ndim, const int64_t *sizes, netcl_rng_kind kind, double p1, double p2);

/* ---- tensors: data movement ---------------------------------------------- */
/* Copies the tensor's elements (logical order) to host memory as its own
 * dtype; waits for the device. */
netcl_status netcl_tensor_to_host(const netcl_tensor *t, void *data, int64_t nbytes);
/* Elements converted to double, logical order. */
netcl_status netcl_tensor_to_doubles(const netcl_tensor *t, double *data, int64_t count);
/* One element at a 0-based multi-index (ndim entries). */
netcl_status netcl_tensor_get_item(const netcl_tensor *t, const int64_t *index, double *value);
netcl_status netcl_tensor_set_item(netcl_tensor *t, const int64_t *index, double value);
/* New tensor on dev with the same dtype; async where the backend allows. */
netcl_status netcl_tensor_to_device(netcl_tensor **out, const netcl_tensor *t, netcl_device *dev);
/* New contiguous tensor of another dtype on the same device. */
netcl_status netcl_tensor_cast(netcl_tensor **out, const netcl_tensor *t, netcl_dtype dtype);
/* Returns t itself (new reference) when already contiguous. */
netcl_status netcl_tensor_contiguous(netcl_tensor **out, netcl_tensor *t);
/* dst[...] = src (broadcast to dst's shape, cast, any devices). */
netcl_status netcl_tensor_copy_(netcl_tensor *dst, const netcl_tensor *src);
netcl_status netcl_tensor_fill_(netcl_tensor *dst, double value);

/* ---- tensors: views (share storage, no copy) ------------------------------ */
/* One size may be -1 (inferred). view needs compatible strides; reshape
 * copies when it must. */
netcl_status netcl_tensor_view(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes);
netcl_status netcl_tensor_reshape(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes);
netcl_status netcl_tensor_transpose(netcl_tensor **out, netcl_tensor *t, int dim0, int dim1);
netcl_status netcl_tensor_permute(netcl_tensor **out, netcl_tensor *t, int ndim, const int *dims);
netcl_status netcl_tensor_narrow(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t length);
/* Removes dim. */
netcl_status netcl_tensor_select(netcl_tensor **out, netcl_tensor *t, int dim, int64_t index);
/* start:stop:step along dim (stop exclusive, step > 0), already clamped. */
netcl_status netcl_tensor_slice(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t stop, int64_t step);
/* Size-1 dims (and new leading dims) broadcast by stride 0; -1 keeps a size. */
netcl_status netcl_tensor_expand(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes);
/* Makes t view src's storage with src's geometry (Torch7's set): every
 * holder of t sees the new data. t must be a leaf; its .grad is kept when
 * the shape is unchanged (optimizers flatten parameters this way). */
netcl_status netcl_tensor_set_(netcl_tensor *t, netcl_tensor *src);
/* dim < 0 removes every size-1 dim. */
netcl_status netcl_tensor_squeeze(netcl_tensor **out, netcl_tensor *t, int dim);
netcl_status netcl_tensor_unsqueeze(netcl_tensor **out, netcl_tensor *t, int dim);

/* ---- ops (forward) ----------------------------------------------------------- */
/* out = op(a); p1/p2 are op parameters (unused by the first op set). */
netcl_status netcl_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2);
/* out = a op b with broadcasting and dtype promotion. */
netcl_status netcl_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b);
/* out = a op s (reversed: s op a) for a scalar s. */
netcl_status netcl_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed);
/* In place: a = op(a), a = a op b (b broadcast to a's shape), a = a op s;
 * the result is cast to a's dtype. With autograd: a leaf that requires
 * grad is refused (write under no_grad); any other tensor takes the op's
 * history, and a node that saved a's old values refuses at backward. */
netcl_status netcl_unary_(netcl_op op, netcl_tensor *a, double p1, double p2);
netcl_status netcl_binary_(netcl_op op, netcl_tensor *a, netcl_tensor *b);
netcl_status netcl_binary_scalar_(netcl_op op, netcl_tensor *a, double s);
/* Reduce over one dim (keepdim keeps it as size 1) or, with dim < 0, over
 * all elements (a 0-dim result). ARGMAX/ARGMIN give int64 0-based indices. */
netcl_status netcl_reduce(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int keepdim);
/* max/min over a dim giving both values and int64 indices. */
netcl_status netcl_reduce_with_index(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a, int dim, int keepdim);
/* Constant padding: pads holds (before, after) pairs for the last npad/2
 * dims, last dim first (PyTorch's F.pad order); negative values crop. */
netcl_status netcl_pad(netcl_tensor **out, netcl_tensor *a, int npad, const int64_t *pads, double value);
/* 1-D·1-D dot, 2-D matrix product, batched with broadcasting for >2-D. */
netcl_status netcl_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);

/* ---- data readers ----------------------------------------------------------
 * IDX files (MNIST, Fashion-MNIST), gzip-compressed or plain: a new cpu
 * tensor of the file's element type (uint8 -> uint8, int8 -> int32 widened,
 * int16/int32 -> int32, float32, float64) and shape. Truncated or malformed
 * files give NETCL_ERR_ARGUMENT naming the path and what is wrong. */
netcl_status netcl_read_idx(netcl_tensor **out, const char *path);

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
/* CRC-32 (zlib's polynomial) of nbytes at data, continuing from crc (0 to
 * start): the checkpoint checksum (lua/netcl/io.lua). */
uint32_t netcl_crc32(uint32_t crc, const void *data, int64_t nbytes);

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
/* grad may be NULL when root has one element (then it is 1). */
netcl_status netcl_backward(netcl_tensor *root, netcl_tensor *grad, int retain_graph);

#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif
#endif /* NETCL_H */
