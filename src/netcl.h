/* netcl.h — the whole C contract of libnetcl, with netcl_data.h (the data
 * pipeline's half, included at the end); LuaJIT's FFI reads the part
 * between the cdef markers of each, in that order (lua/netcl/cdef.lua is
 * generated from them).
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
    NETCL_OP_SOFTPLUS = 25,    /* log(1 + exp(p1 x)) / p1, x where p1 x > p2 (p1: beta, 0 means 1; p2: threshold, 0 means 20) */
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
    NETCL_OP_FMOD = 77,        /* remainder with the sign of the dividend (C fmod) */
    NETCL_OP_ATAN2 = 78,       /* atan2(a, b) */
    NETCL_OP_LOGICAL_AND = 79, /* logical ops: operands read as (x != 0), bool result */
    NETCL_OP_LOGICAL_OR = 80,
    NETCL_OP_LOGICAL_XOR = 81,
    NETCL_OP_BINARY_END = 82,
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

/* How a loss reduces its per-element values. */
typedef enum netcl_reduction {
    NETCL_REDUCTION_NONE = 0,
    NETCL_REDUCTION_MEAN = 1,
    NETCL_REDUCTION_SUM = 2,
    NETCL_REDUCTION_BATCHMEAN = 3   /* sum / size of dim 0 (kl_div) */
} netcl_reduction;

/* interpolate modes: nearest neighbour, or (bi)linear over the spatial dims. */
typedef enum netcl_interp_mode {
    NETCL_INTERP_NEAREST = 0,
    NETCL_INTERP_LINEAR = 1
} netcl_interp_mode;

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
/* The Lua binding's claim on the process: 0 for the first caller, -1 for
 * every later one. The engine's state is process-wide, so one Lua state
 * per process uses netcl (a second one is refused when it loads netcl). */
int netcl_claim_lua_state(void);

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
/* The CPU BLAS the cpu backend's matmul uses ("libopenblas.so.0"), or
 * "none" (the built-in kernel); NETCL_BLAS=0 disables it. */
const char *netcl_cpu_blas(void);
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
/* Who holds the bytes in use: each storage counts under one owner. A
 * storage is "saved" while the autograd graph keeps it for backward (unless
 * it is a parameter, gradient or optimizer state); "workspace" while an op
 * holds it as scratch; "backward" while it carries a gradient in flight;
 * "other" for the rest (inputs, results and intermediates held by Lua). */
typedef enum netcl_mem_owner {
    NETCL_MEM_OTHER = 0,
    NETCL_MEM_PARAMETERS,   /* leaves that require grad */
    NETCL_MEM_GRADIENTS,    /* leaves' .grad */
    NETCL_MEM_OPTIMIZER,    /* optimizer state (tagged by the optimizers) */
    NETCL_MEM_SAVED,        /* saved for backward by the graph */
    NETCL_MEM_WORKSPACE,    /* an op's scratch (unfolded inputs, operand copies) */
    NETCL_MEM_BACKWARD,     /* gradients in flight during backward */
    NETCL_MEM_OWNER_COUNT
} netcl_mem_owner;
/* Bytes in use by owner now, or (at_peak) when the peak was reached. */
int64_t netcl_memory_owner_bytes(const netcl_device *dev, netcl_mem_owner owner, int at_peak);
/* Counts t's storage under owner from now on (the optimizers tag their state). */
void netcl_tensor_set_memory_owner(netcl_tensor *t, netcl_mem_owner owner);
/* Device memory the backend holds outside the pool (arenas it grows and
 * keeps for its kernels' partials and operand copies). */
int64_t netcl_memory_backend_bytes(const netcl_device *dev);

/* ---- runtime statistics -------------------------------------------------- */
int64_t netcl_runtime_programs_compiled(void);   /* built from source */
int64_t netcl_runtime_programs_loaded(void);     /* loaded from the disk cache */
int64_t netcl_runtime_kernels_launched(void);
/* Nanoseconds spent inside the OpenCL driver's kernel enqueue, in total. */
int64_t netcl_runtime_enqueue_ns(void);
/* Device time per OpenCL kernel (NETCL_PROFILE=1 in the environment before
 * the first device call): writes a table of the kernels launched so far,
 * by kernel name and grid, largest total first, into buf (cut at len);
 * returns the length the whole table needs. reset != 0 clears the counts
 * when the table fitted. */
int netcl_profile_report(char *buf, int len, int reset);

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

/* ---- the op table --------------------------------------------------------
 * Every op netcl offers (src/autograd/optable.c): entry i is "name forward backward
 * kernels" (space-separated), *differentiable set; NULL past the end. The
 * test runner checks each against the specs' coverage. */
int netcl_op_table_size(void);
const char *netcl_op_table_entry(int i, int *differentiable);

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
/* 1 when t is its storage's only possible view: contiguous, from the start, to the end. */
int netcl_tensor_is_whole(const netcl_tensor *t);
/* A count every write through netcl to t's storage raises (in-place ops,
 * copy_, fill_, optimizer steps): equal counts mean no such write between. */
int netcl_tensor_version(const netcl_tensor *t);
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
/* A cpu tensor in pinned (page-locked) memory of for_dev's driver: copying
 * it to for_dev with netcl_tensor_to_device or copy_ is a DMA on a separate
 * transfer queue that overlaps the work already queued (work queued later
 * that uses the copy waits for it). Plain memory where for_dev has no
 * pinned memory (the cpu). */
netcl_status netcl_tensor_empty_pinned(netcl_tensor **out, netcl_device *for_dev, netcl_dtype dtype, int ndim,
                                       const int64_t *sizes);
int netcl_tensor_is_pinned(const netcl_tensor *t);
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

/* ---- ops: selection and neural-network functions --------------------------
 * where: out = cond ? a : b with broadcasting; cond is read as bool; a NULL
 * a (b) means the scalar sa (sb). The result dtype is the tensors'
 * promotion (a lone integer tensor with a fractional scalar: float32). */
netcl_status netcl_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb);
/* Finiteness, as bool tensors of a's shape: isnan, isinf (+-inf),
 * isfinite (neither); integer and bool tensors are all finite. */
netcl_status netcl_isnan(netcl_tensor **out, netcl_tensor *a);
netcl_status netcl_isinf(netcl_tensor **out, netcl_tensor *a);
netcl_status netcl_isfinite(netcl_tensor **out, netcl_tensor *a);
/* a with NaN replaced by nan, +inf by posinf and -inf by neginf; posinf =
 * +INFINITY (neginf = -INFINITY) means the dtype's largest (lowest) finite
 * value. Integer tensors are copied. Differentiable where a is finite. */
netcl_status netcl_nan_to_num(netcl_tensor **out, netcl_tensor *a, double nan, double posinf, double neginf);
/* lerp: a + w (b - a), broadcasting; w a tensor or (w NULL) the scalar ws. */
netcl_status netcl_lerp(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *w, double ws);
/* softmax (log != 0: log_softmax) over dim, computed max-subtracted in the
 * input's float dtype (float16/bfloat16 in float32). */
netcl_status netcl_softmax(netcl_tensor **out, netcl_tensor *a, int dim, int log);

/* unfold (im2col): x [N, C, H, W] -> [N, C*kh*kw, L], L the window
 * positions; fold (col2im) is its adjoint: cols [N, C*kh*kw, L] -> [N, C,
 * size[0], size[1]], overlapping entries summed. kernel, dilation, padding,
 * stride are (h, w) pairs. */
netcl_status netcl_unfold(netcl_tensor **out, netcl_tensor *x, const int64_t *kernel, const int64_t *dilation,
                          const int64_t *padding, const int64_t *stride);
netcl_status netcl_fold(netcl_tensor **out, netcl_tensor *cols, const int64_t *size, const int64_t *kernel,
                        const int64_t *dilation, const int64_t *padding, const int64_t *stride);
/* 2-D pooling over x [N, C, H, W] with (h, w) pairs; padding at most half
 * the kernel. max_pool2d's indices (may be NULL) are int64, 0-based h*W + w
 * within each plane. avg_pool2d: divisor_override 0 = none. */
netcl_status netcl_max_pool2d(netcl_tensor **out, netcl_tensor **indices, netcl_tensor *x, const int64_t *kernel,
                              const int64_t *stride, const int64_t *padding, const int64_t *dilation, int ceil_mode);
netcl_status netcl_avg_pool2d(netcl_tensor **out, netcl_tensor *x, const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, int ceil_mode, int count_include_pad, int64_t divisor_override);
netcl_status netcl_adaptive_avg_pool2d(netcl_tensor **out, netcl_tensor *x, const int64_t *size);
/* Convolutions: x [N, C, H, W], w [O, C/groups, kh, kw], b [O] or NULL;
 * conv1d on [N, C, L]; the transposed convolution's w is [C, O/groups,
 * kh, kw]. Each pass (forward, backward-data, backward-weight) runs the
 * strategy the planner picks (direct, depthwise, im2col, gemm1x1,
 * winograd2, winograd4, implicit_gemm, tiled; NETCL_CONV_ALGO=<name>
 * forces one where it applies). The bias is added in the pass's own
 * kernels where the strategy can (implicit_gemm, tiled, im2col, gemm1x1).
 * The _act forms end in an activation (a netcl_op: relu, sigmoid, tanh,
 * silu, gelu, gelu_tanh, relu6, leaky_relu with act_param its slope; -1
 * none), fused into those kernels when no input records a gradient, and
 * recorded as its own op after the convolution when one does. With conv
 * benchmarking on (or NETCL_CONV_BENCHMARK=1), the first pass of a
 * geometry times every applicable strategy and keeps the fastest, cached
 * on disk per device. */
void netcl_set_conv_benchmark(int on);
int netcl_conv_benchmark(void);
/* Forces a strategy by name for every convolution pass it applies to
 * ("auto", NULL or "": the planner again), ahead of NETCL_CONV_ALGO;
 * NETCL_ERR_ARGUMENT for an unknown name. */
netcl_status netcl_set_conv_algo(const char *name);
/* The most bytes of scratch the planner lets a convolution strategy take
 * for one pass (im2col's unfolded input, Winograd's transformed tiles);
 * one that would take more gives way to implicit GEMM, which unfolds
 * nothing. Negative: the default, an eighth of the device's memory.
 * Either way at most half of the device memory not in use. A strategy
 * forced by name is not held to it. */
void netcl_set_conv_workspace_limit(int64_t bytes);
int64_t netcl_conv_workspace_limit(void);   /* -1: the default */
/* The strategy the planner picks on dev for one pass (0 forward, 1
 * backward-data, 2 backward-weight) of a convolution of input sizes
 * x_sizes [N, C, H, W] and weight sizes w_sizes [O, C/groups, kh, kw] with
 * (h, w) pairs stride, padding, dilation: its name into buf. Measures
 * nothing unless conv benchmarking is on. */
netcl_status netcl_conv2d_strategy(netcl_device *dev, netcl_dtype dtype, const int64_t *x_sizes, const int64_t *w_sizes,
                                   const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                                   int pass, char *buf, int64_t len);
netcl_status netcl_conv2d(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b, const int64_t *stride,
                          const int64_t *padding, const int64_t *dilation, int64_t groups);
netcl_status netcl_conv2d_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int64_t groups, netcl_op act, double act_param);
netcl_status netcl_conv1d(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b, int64_t stride,
                          int64_t padding, int64_t dilation, int64_t groups);
netcl_status netcl_conv_transpose2d(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                    const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                    const int64_t *dilation, int64_t groups);
netcl_status netcl_conv_transpose2d_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b,
                                        const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                        const int64_t *dilation, int64_t groups, netcl_op act, double act_param);

/* interpolate: x [N, C, L] or [N, C, H, W] resized to size (one entry per
 * spatial dim); scale (may be NULL) the factors the sizes came from, whose
 * inverse then maps coordinates (PyTorch's rule); align_corners as PyTorch. */
netcl_status netcl_interpolate(netcl_tensor **out, netcl_tensor *x, const int64_t *size, const double *scale,
                               netcl_interp_mode mode, int align_corners);
/* Normalisation and dropout (composites). batch_norm: x [N, C, ...],
 * statistics over every dim but 1; training updates running_mean/var in
 * place (momentum; the variance unbiased) when given; any of running_*,
 * weight, bias may be NULL (eval needs the running ones). layer_norm
 * normalises the last nnorm dims (weight/bias of their shape). dropout:
 * x * mask / (1 - p) with mask ~ Bernoulli(1 - p) from the global
 * generator; channelwise draws one per (n, c) (dropout2d); not training:
 * x itself. */
netcl_status netcl_batch_norm(netcl_tensor **out, netcl_tensor *x, netcl_tensor *running_mean, netcl_tensor *running_var,
                              netcl_tensor *weight, netcl_tensor *bias, int training, double momentum, double eps);
/* act(batch_norm(x) + residual): residual (may be NULL) of x's shape and
 * dtype, added in the normalising pass (a ResNet block's shortcut); act as
 * netcl_conv2d_act's (-1 none): relu is applied in that pass too and its
 * mask in the backward pass (no tensor or pass of its own); others run as
 * their own op. */
netcl_status netcl_batch_norm_act(netcl_tensor **out, netcl_tensor *x, netcl_tensor *residual, netcl_tensor *running_mean,
                                  netcl_tensor *running_var, netcl_tensor *weight, netcl_tensor *bias, int training,
                                  double momentum, double eps, netcl_op act, double act_param);
netcl_status netcl_layer_norm(netcl_tensor **out, netcl_tensor *x, int nnorm, netcl_tensor *weight, netcl_tensor *bias,
                              double eps);
netcl_status netcl_group_norm(netcl_tensor **out, netcl_tensor *x, int64_t groups, netcl_tensor *weight,
                              netcl_tensor *bias, double eps);
netcl_status netcl_dropout(netcl_tensor **out, netcl_tensor *x, double p, int training, int channelwise);
/* Elementwise losses (composites) with PyTorch's formulas; input and
 * target of one shape. weight/pos_weight broadcast (may be NULL). */
netcl_status netcl_mse_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_reduction r);
netcl_status netcl_l1_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_reduction r);
netcl_status netcl_smooth_l1_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, double beta, netcl_reduction r);
netcl_status netcl_huber_loss(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, double delta, netcl_reduction r);
netcl_status netcl_binary_cross_entropy(netcl_tensor **out, netcl_tensor *p, netcl_tensor *y, netcl_tensor *weight,
                                        netcl_reduction r);
netcl_status netcl_binary_cross_entropy_with_logits(netcl_tensor **out, netcl_tensor *x, netcl_tensor *y,
                                                    netcl_tensor *weight, netcl_tensor *pos_weight, netcl_reduction r);
/* Class losses: x [N, C] or [N, C, d...] (or [C] with a 0-dim target),
 * integer targets [N, d...]; class = target - index_base (Lua passes 1);
 * rows whose target equals ignore_index count 0 and leave the mean's
 * denominator. cross_entropy takes logits (label_smoothing in [0, 1]),
 * nll_loss log-probabilities. mean divides by the summed target weights.
 * class_loss is the per-row primitive both use: loss and wsum [rows]. */
netcl_status netcl_cross_entropy(netcl_tensor **out, netcl_tensor *logits, netcl_tensor *target, netcl_tensor *weight,
                                 int64_t index_base, int64_t ignore_index, double label_smoothing, netcl_reduction r);
netcl_status netcl_nll_loss(netcl_tensor **out, netcl_tensor *logp, netcl_tensor *target, netcl_tensor *weight,
                            int64_t index_base, int64_t ignore_index, netcl_reduction r);
netcl_status netcl_class_loss(netcl_tensor **loss, netcl_tensor **wsum, netcl_tensor *x, netcl_tensor *target,
                              netcl_tensor *weight, int logp, int64_t index_base, int64_t ignore_index, double label_smoothing);
netcl_status netcl_kl_div(netcl_tensor **out, netcl_tensor *input, netcl_tensor *target, netcl_reduction r, int log_target);

/* ---- ops: composite reductions and matrix products --------------------------
 * Built from the ops above, so they differentiate like them. dims are
 * 0-based; ndims == 0 reduces every dim. correction: 1 for the unbiased
 * estimate, 0 for the population one. norm: p = 1, 2, other p > 0, +inf
 * (max |a|), -inf (min |a|). any/all give bool. */
netcl_status netcl_reduce_dims(netcl_tensor **out, netcl_op op, netcl_tensor *a, int ndims, const int *dims, int keepdim);
netcl_status netcl_var(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, double correction, int keepdim);
netcl_status netcl_std(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, double correction, int keepdim);
netcl_status netcl_norm(netcl_tensor **out, netcl_tensor *a, double p, int ndims, const int *dims, int keepdim);
netcl_status netcl_logsumexp(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim);
netcl_status netcl_any(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim);
netcl_status netcl_all(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims, int keepdim);
/* mm: 2-D only; bmm: 3-D with equal batches; addmm: beta c + alpha a@b;
 * linear: x @ w^T + b (b may be NULL); outer: [n] x [m] -> [n, m]; dot: 1-D. */
netcl_status netcl_mm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);
netcl_status netcl_bmm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);
netcl_status netcl_addmm(netcl_tensor **out, netcl_tensor *c, netcl_tensor *a, netcl_tensor *b, double beta, double alpha);
netcl_status netcl_linear(netcl_tensor **out, netcl_tensor *x, netcl_tensor *w, netcl_tensor *b);
/* Fused GEMM: out = act(alpha * (a @ b) + beta * c + bias). a and b at
 * least 2-D, batched and broadcast like matmul; c (may be NULL; not read
 * when beta is 0) broadcasts to the product's shape; bias (may be NULL) is
 * 1-D along the last dim; act a netcl_op among relu, sigmoid, tanh, silu,
 * gelu, gelu_tanh, relu6, leaky_relu (act_p: its slope), or -1 for none.
 * One kernel when no input requires grad; otherwise recorded as its parts,
 * so it differentiates. addmm and linear take this path. */
netcl_status netcl_gemm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias,
                        double alpha, double beta, int act, double act_p);
netcl_status netcl_outer(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);
netcl_status netcl_dot(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);
/* ---- ops: indexing, shape, sort, scan, random ------------------------------
 * Index arguments are int64 or int32 tensors of any strides (an expanded,
 * stride-0 index is fine). `index_base` (0 or 1) is subtracted from every
 * index, so the Lua layer passes its 1-based indices unchanged. An index out
 * of range never touches memory out of bounds and is NETCL_ERR_ARGUMENT: on
 * cpu at once; on OpenCL the kernel skips that element and the error is
 * returned by the next blocking read (to_host, to_doubles, get_item) or
 * synchronize on that device. Returned indices (sort, topk, nonzero,
 * randperm, multinomial) are int64 and 0-based. Differentiable ops record
 * autograd nodes like every other op. */
typedef enum netcl_pad_mode {
    NETCL_PAD_CONSTANT = 0,
    NETCL_PAD_REFLECT = 1,     /* mirror without repeating the edge: pads < size */
    NETCL_PAD_REPLICATE = 2,   /* repeat the edge element */
    NETCL_PAD_CIRCULAR = 3     /* wrap around: pads <= size */
} netcl_pad_mode;
/* The n tensors (same ndim, sizes equal except along dim) joined along dim;
 * dtypes promote as for binary ops. 1-D empty tensors are skipped (Torch7). */
netcl_status netcl_cat(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim);
/* The n tensors (one shape) joined along a new dim (0..ndim). */
netcl_status netcl_stack(netcl_tensor **out, int n, netcl_tensor *const *tensors, int dim);
/* out[p] = a[q], q = p with coordinate dim replaced by index[p]. out has index's shape;
 * index has a's ndim and index.size(d) <= a.size(d) for d != dim. */
netcl_status netcl_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, int index_base);
/* out = a copy of a, then for every p of index's shape out[q] = src[p]
 * (accumulate: +=), q = p with coordinate dim replaced by index[p]. src (cast to a's
 * dtype) has a's ndim and sizes >= index's; index.size(d) <= a.size(d) for
 * d != dim. Duplicate indices without accumulate: the last in index order
 * wins on cpu, any one of them on OpenCL. Accumulation order on OpenCL is
 * unspecified (float sums may differ in the last bits). */
netcl_status netcl_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int accumulate, int index_base);
netcl_status netcl_scatter_(netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int accumulate, int index_base);
/* index 1-D with k entries: a with dim replaced by the k selected slices. */
netcl_status netcl_index_select(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, int index_base);
/* a with src's slices added at index along dim (src: a's shape with dim of
 * the index's length; duplicates accumulate). */
netcl_status netcl_index_add(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int index_base);
netcl_status netcl_index_add_(netcl_tensor *a, int dim, netcl_tensor *index, netcl_tensor *src, int index_base);
/* a with value where mask (bool, broadcast to a's shape) is true. */
netcl_status netcl_masked_fill(netcl_tensor **out, netcl_tensor *a, netcl_tensor *mask, double value);
netcl_status netcl_masked_fill_(netcl_tensor *a, netcl_tensor *mask, double value);
/* 1-D: a's elements where mask (bool; a and mask broadcast) is true, in
 * row-major order. Reads the mask on the host (synchronises). */
netcl_status netcl_masked_select(netcl_tensor **out, netcl_tensor *a, netcl_tensor *mask);
/* int64 [n, ndim]: coordinates of the non-zero elements (NaN counts), in
 * row-major order. Reads a on the host (synchronises). */
netcl_status netcl_nonzero(netcl_tensor **out, netcl_tensor *a);
/* out[..., c] = 1 where index[...] - index_base == c, else 0, for c <
 * num_classes, as dtype (index's shape + [num_classes]). */
netcl_status netcl_one_hot(netcl_tensor **out, netcl_tensor *index, int64_t num_classes, netcl_dtype dtype, int index_base);
/* weight [V, D]: out[..., :] = weight[index[...], :] (index's shape + [D]). */
netcl_status netcl_embedding(netcl_tensor **out, netcl_tensor *index, netcl_tensor *weight, int index_base);
/* Reverses the element order along each of the ndims dims. */
netcl_status netcl_flip(netcl_tensor **out, netcl_tensor *a, int ndims, const int *dims);
/* PyTorch's repeat: ndim >= a's ndim counts (a gets leading size-1 dims);
 * out.size(d) = size(d) * repeats[d]. */
netcl_status netcl_repeat(netcl_tensor **out, netcl_tensor *a, int ndim, const int64_t *repeats);
/* netcl_pad with a mode; value is used by NETCL_PAD_CONSTANT only. */
netcl_status netcl_pad_with(netcl_tensor **out, netcl_tensor *a, int npad, const int64_t *pads, netcl_pad_mode mode, double value);
/* Sorts along dim, stable (equal values keep their order, so every backend
 * gives the same indices); NaN sorts as the largest value. values: a's
 * dtype and shape; indices: int64 positions along dim. */
netcl_status netcl_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending);
/* The k largest (largest = 0: smallest) along dim, in sorted order. */
netcl_status netcl_topk(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int64_t k, int dim, int largest);
/* Inclusive prefix sum / product along dim; integer and bool inputs give int64. */
netcl_status netcl_cumsum(netcl_tensor **out, netcl_tensor *a, int dim);
netcl_status netcl_cumprod(netcl_tensor **out, netcl_tensor *a, int dim);
/* 1 with probability p[i] (else 0), p's dtype (float), from the global
 * stream exactly as netcl_tensor_rand (uniform u < p). */
netcl_status netcl_bernoulli(netcl_tensor **out, netcl_tensor *p);
/* A random permutation of 0..n-1 (dtype: any integer or float type).
 * Generated on the host from the global stream (n counters: element i of
 * the Fisher-Yates shuffle uses counter offset + i) and uploaded, so it is
 * identical on every backend. */
netcl_status netcl_randperm(netcl_tensor **out, netcl_device *dev, int64_t n, netcl_dtype dtype);
/* n category indices per row of probs ([C] or [B, C]; non-negative weights,
 * each row with a positive sum), with or without replacement (then n <= the
 * row's non-zero count). Reads probs on the host (synchronises); draws from
 * the global stream on the host (with replacement n counters per row,
 * without C), so the result is identical on every backend. */
netcl_status netcl_multinomial(netcl_tensor **out, netcl_tensor *probs, int64_t n, int replacement);

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
/* CRC-32 (zlib's polynomial) of nbytes at data, continuing from crc (0 to
 * start): the checkpoint checksum (lua/netcl/io.lua). */
uint32_t netcl_crc32(uint32_t crc, const void *data, int64_t nbytes);
/* ---- tuning ------------------------------------------------------------------
 * GEMM kernel selection on OpenCL devices (docs/gemm.md). A configuration
 * is one line of words, e.g. "tiled mwg=128 nwg=128 kwg=16 mdimc=16
 * ndimc=16 vwm=4 vwn=4 vw=4 pad=4" or "direct cmr=6 cnr=16 vw=16". The
 * cpu device has nothing to tune: these calls succeed and do nothing there.
 *
 * netcl_tune_gemm measures up to max_candidates (<= 0: all) configurations
 * for one problem, out [m, n] = a [m, k] @ w [k, n] of dtype, where trans_a
 * / trans_b make a / w transposed views of row-major storage; each
 * candidate's result is checked against a reference kernel, and the fastest
 * correct one becomes the device's choice for the problem's shape class
 * (dtype, layouts, sizes rounded up to powers of two), kept on disk in a
 * cache file per device and driver. report (may be NULL) receives one line
 * per candidate and the winner. */
netcl_status netcl_tune_gemm(netcl_device *dev, netcl_dtype dtype, int64_t m, int64_t n, int64_t k, int trans_a,
                             int trans_b, int max_candidates, char *report, int64_t report_len);
/* The configuration a GEMM of that problem would use on dev, and why
 * ("tuned", "default", "forced", "NETCL_GEMM_CONFIG"), written into buf. */
netcl_status netcl_gemm_config(netcl_device *dev, netcl_dtype dtype, int64_t m, int64_t n, int64_t k, int trans_a,
                               int trans_b, char *buf, int64_t len);
/* Forces one configuration for every GEMM on dev (NULL or "": automatic
 * again); NETCL_ERR_ARGUMENT when it does not parse. A forced configuration
 * that cannot serve a problem falls back to the default. $NETCL_GEMM_CONFIG
 * forces one for every device. */
netcl_status netcl_gemm_set_config(netcl_device *dev, const char *config);
/* The tuning cache file of dev ("" for the cpu or without a cache
 * directory); reload reads it again and returns why it was ignored
 * (unparsable, another device), or "". */
const char *netcl_tune_cache_path(netcl_device *dev);
const char *netcl_tune_cache_reload(netcl_device *dev);
/* How float32 GEMMs (and the convolutions built on them) multiply, like
 * PyTorch's torch.backends.cuda.matmul.fp32_precision: "ieee" (default)
 * float32 FMAs; "tf32x3" tensor cores where usable, each operand split
 * into two TF32 parts and three products summed (errors near float32's,
 * about 3x the time of "tf32"); "tf32" tensor cores with inputs rounded to
 * TF32 (10 mantissa bits). Devices without tensor cores multiply in
 * float32 whatever the mode. */
netcl_status netcl_set_fp32_precision(const char *mode);
const char *netcl_get_fp32_precision(void);
/* allow_tf32 = 1 is fp32_precision "tf32", 0 is "ieee" (like PyTorch's
 * torch.backends.cuda.matmul.allow_tf32). */
void netcl_set_allow_tf32(int allow);
int netcl_get_allow_tf32(void);
/* Tensor cores of dev as verified by the probe (run on first call or first
 * use): e.g. "tf32,f16,bf16", or "none (why)". */
const char *netcl_device_tensor_cores(netcl_device *dev);

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
netcl_status netcl_tensor_remove_hook(netcl_tensor *t, int id);
/* Ctrl-C for an interactive host (the REPL): SIGINT goes to the handler
 * installed before the first call (LuaJIT's), and stays handled when
 * pressed again; the third press since the last call ends the process
 * (code that never answers). 0, or -1 if sigaction failed. */
int netcl_sigint_arm(void);

/* grad may be NULL when root has one element (then it is 1). */
netcl_status netcl_backward(netcl_tensor *root, netcl_tensor *grad, int retain_graph);


#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif

#include "netcl_data.h"
#include "netcl_dist.h"
#include "netcl_custom.h"
#endif /* NETCL_H */
