/* netcl.h — the C contract of libnetcl: types, devices, memory, tensors
 * (creation, data movement, views). The rest of the contract is in the
 * headers it includes at its end: netcl_ops.h (the op library),
 * netcl_train.h (autograd, autocast, optimizers, capture/replay),
 * netcl_data.h (the data pipeline), netcl_dist.h (collectives) and
 * netcl_custom.h (a program's own ops). LuaJIT's FFI reads the part
 * between the cdef markers of each, in that order (lua/netcl/cdef.lua is
 * generated from them); including netcl.h gives all of it.
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
/* CRC-32 (zlib's polynomial) of nbytes at data, continuing from crc (0 to
 * start): the checkpoint checksum (lua/netcl/io.lua). */
uint32_t netcl_crc32(uint32_t crc, const void *data, int64_t nbytes);
/* Ctrl-C for an interactive host (the REPL): SIGINT goes to the handler
 * installed before the first call (LuaJIT's), and stays handled when
 * pressed again; the third press since the last call ends the process
 * (code that never answers). 0, or -1 if sigaction failed. */
int netcl_sigint_arm(void);


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
/* A 1-D view of numel elements of t's storage from element `offset`
 * (absolute, like netcl_tensor_offset), t's dtype, no autograd history:
 * what holds several tensors laid out in one storage (gradient buckets). */
netcl_status netcl_tensor_storage_range(netcl_tensor **out, netcl_tensor *t, int64_t offset, int64_t numel);
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


#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif

#include "netcl_ops.h"
#include "netcl_train.h"
#include "netcl_data.h"
#include "netcl_dist.h"
#include "netcl_custom.h"
#endif /* NETCL_H */
