/* cl.h — state shared by the OpenCL backend's files: the per-device
 * context/queue, the program and kernel caches, and launch helpers. */
#ifndef NETCL_CL_H
#define NETCL_CL_H

#include "loader.h"

typedef struct nc_cl_program {
    char key[1024];             /* family + options (longer ones are refused, never cut) */
    cl_program program;
    int nkernels;
    struct { char name[48]; cl_kernel kernel; size_t wg; } kernels[192];
    struct nc_cl_program *next;
} nc_cl_program;

typedef struct nc_cl_pending {   /* an async write whose host object must live until done */
    cl_event event;
    nc_keep keep;
    struct nc_cl_pending *next;
} nc_cl_pending;

/* A slot of the per-device kernel lookup table (program.c): the hash of
 * (family, options, kernel name) and where that kernel lives; hash 0 = empty. */
typedef struct nc_cl_kslot {
    uint64_t hash;
    nc_cl_program *prog;
    int k;
} nc_cl_kslot;

typedef struct nc_cl_device {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    cl_command_queue xfer;      /* copy-only queue for uploads from pinned memory (transfer.c), lazily */
    cl_mem scratch[3];          /* reduction partials, grown on demand and reused (the queue is in order) */
    size_t scratch_size[3];
    netcl_device *dev;
    struct nc_cl_profile *profile;   /* NETCL_PROFILE=1: launches' events and times (profile.c) */
    nc_cl_program *programs;
    nc_cl_kslot *kslots;        /* open addressing, kcap a power of two, at most half full */
    size_t kcap, kcount;
    nc_cl_pending *pending;
    size_t max_wg;
    int64_t max_alloc;
    /* index family (index.c): the error word index kernels report
     * out-of-range indices in (created on first use), whether an index
     * kernel ran since the host last looked at it, and whether the device
     * has 64-bit atomics (-1: not asked yet) */
    cl_mem err_word;
    int err_pending;
    int int64_atomics;
    struct nc_gemm_state *gemm;  /* GEMM tuning and tensor-core state (gemm.h) */
} nc_cl_device;

/* Strided geometry passed by value to kernels; the layout matches the
 * `meta_t` struct in kernels/common.cl (all 64-bit fields). */
#define NC_CL_META_OPS 4
typedef struct nc_cl_meta {
    cl_long sizes[NC_MAX_DIMS];
    cl_long strides[NC_CL_META_OPS][NC_MAX_DIMS];
    cl_long offsets[NC_CL_META_OPS];
    cl_long ndim, n;
} nc_cl_meta;

static inline nc_cl_device *nc_cl_dev(netcl_device *d) { return (nc_cl_device *)d->impl; }

/* Registers a source generated at run time as program `family` (copied;
 * kept for the process); 0 when out of memory. */
int nc_cl_source_add(const char *family, const char *source);
/* Kernel `name` of program `family` built with `options` (cached). */
netcl_status nc_cl_kernel(nc_cl_device *cd, const char *family, const char *options, const char *name,
                          cl_kernel *kernel, size_t *wg);
/* Enqueues a 1-D launch of at least `n` work items (rounded to the
 * work-group size, capped: kernels loop with a grid stride). */
netcl_status nc_cl_launch(nc_cl_device *cd, cl_kernel k, size_t wg, int64_t n);
/* Enqueues an N-D launch with explicit sizes. */
netcl_status nc_cl_launch_nd(nc_cl_device *cd, cl_kernel k, int dims, const size_t *global, const size_t *local);
/* Entry check of every kernel family: not in a forked child, and float64
 * only where the device has it (NETCL_ERR_UNSUPPORTED naming op and device). */
netcl_status nc_cl_enter(netcl_device *dev, const char *op, netcl_dtype a, netcl_dtype b);
/* Kernel profiling (profile.c): whether NETCL_PROFILE asks for it (queues
 * are then created with profiling on), a launch's event handed over, and a
 * device's records dropped at shutdown. */
int nc_cl_profiling(void);
void nc_cl_profile_record(nc_cl_device *cd, cl_kernel k, int dims, const size_t *global, const size_t *local, cl_event ev);
void nc_cl_profile_release(nc_cl_device *cd);
/* -DTA=<code> style dtype options for a slot */
void nc_cl_dtype_opts(char *buf, size_t len, netcl_dtype a, netcl_dtype o);
/* Appends -DIX32 to buf when a launch over `count` elements may do its
 * index arithmetic in int (common.cl's IX): below 2^30, so a grid-stride
 * step past the last index cannot overflow either. */
void nc_cl_index_opts(char *buf, size_t len, int64_t count);
/* common.cl's fdiv constants for divisor d (1 <= d < 2^31): magic m, shift s */
void nc_cl_fdiv_magic(int64_t d, cl_uint *m, cl_int *s);
/* Collapsed geometry of nops descriptors. */
void nc_cl_meta_of(nc_cl_meta *m, int nops, const nc_desc *const *ops);
int nc_cl_meta_contiguous(const nc_cl_meta *m, int nops);
void nc_cl_release_programs(nc_cl_device *cd);
/* The disk cache directory ($NETCL_CACHE_DIR, $XDG_CACHE_HOME/netcl,
 * ~/.cache/netcl), created if missing; 0 when there is none. */
int nc_cl_cache_dir(char *buf, size_t len);
void nc_cl_poll_pending(nc_cl_device *cd, int wait);

/* Backend entry points, one group per table of nc_backend, in the family's
 * files (<family>*.c, kernels <family>*.cl). */
/* elementwise (elementwise.c) */
netcl_status nc_cl_copy(netcl_device *dev, const nc_desc *dst, const nc_desc *src);
netcl_status nc_cl_fill(netcl_device *dev, const nc_desc *dst, double value);
netcl_status nc_cl_range(netcl_device *dev, const nc_desc *dst, double start, double step);
netcl_status nc_cl_unary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2);
netcl_status nc_cl_binary_grad(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                               const nc_desc *a, const nc_desc *b, double sa, double sb);
netcl_status nc_cl_fused(netcl_device *dev, const nc_fused *f);
netcl_status nc_cl_unary_grad(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                              const nc_desc *y, double p1, double p2);
netcl_status nc_cl_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b, double s, int reversed);
netcl_status nc_cl_where(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a,
                         const nc_desc *b, double sa, double sb);
/* reduce (reduce.c) */
netcl_status nc_cl_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a);
/* softmax (softmax.c) */
netcl_status nc_cl_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log);
netcl_status nc_cl_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log);
/* linalg (gemm*.c, gemm.h) */
netcl_status nc_cl_gemm(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w, const nc_gemm_epi *epi);
int nc_cl_gemm_copies(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32);
/* split-K (gemm_split.c): the linalg entries split, split_sum and split_run */
int nc_cl_gemm_split(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32);
netcl_status nc_cl_gemm_sum(netcl_device *dev, const nc_desc *out, const nc_desc *part, const nc_gemm_epi *epi);
netcl_status nc_cl_gemm_split_run(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w,
                                  const nc_gemm_epi *epi, int S);
/* conv (conv_unfold.c, conv_direct.c, conv_depthwise.c, conv_implicit.c, conv_tiled.c) */
netcl_status nc_cl_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g);
netcl_status nc_cl_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g);
netcl_status nc_cl_conv(netcl_device *dev, nc_conv_kernel k, const nc_conv_args *g, const nc_desc *out,
                         const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1);
/* the depthwise kinds (NC_DW_*; ip: images per slice of backward-weight) */
netcl_status nc_cl_conv_depthwise(netcl_device *dev, nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out,
                                  const nc_desc *a, const nc_desc *b, int64_t ip);
int64_t nc_cl_conv_gemm_fast(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);
netcl_status nc_cl_conv_gemm(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                             const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices);
netcl_status nc_cl_conv_tiled(netcl_device *dev, const nc_conv_args *g, const nc_desc *out, const nc_desc *x,
                              const nc_desc *w, const nc_conv_epi *epi, int flip);
netcl_status nc_cl_conv_tiled_weight(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                     const nc_desc *dy, int64_t per);
/* pool (pool.c) */
netcl_status nc_cl_pool(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x, const nc_pool_geom *g);
netcl_status nc_cl_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                 const nc_pool_geom *g);
/* norm (norm.c) */
netcl_status nc_cl_batch_norm(netcl_device *dev, nc_batch_norm_kernel k, const nc_batch_norm_args *a);
/* loss (loss.c) */
netcl_status nc_cl_class_loss(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                               const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps);
netcl_status nc_cl_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                        const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                        double eps);
/* random (random.c) */
netcl_status nc_cl_rng(netcl_device *dev, const nc_desc *out, netcl_rng_kind kind, uint64_t seed, uint64_t offset, double p1, double p2);
/* optim (optim.c) */
netcl_status nc_cl_amp_unscale(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found);
/* a program's own kernels (user.c) */
netcl_status nc_cl_user_create(netcl_device *dev, const char *source, const char *name, const char *options, void **out);
netcl_status nc_cl_user_launch(netcl_device *dev, void *kernel, int nargs, const nc_user_arg *args, int ndim,
                               const int64_t *global, const int64_t *local);
void nc_cl_user_release(netcl_device *dev, void *kernel);
netcl_status nc_cl_optim_step(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                              const nc_desc *const *s, const double *hyper);
/* augment (augment.c) */
netcl_status nc_cl_augment(netcl_device *dev, const nc_augment *a);
/* index: indexing, sort, scan (index.c, index_sort.c) */
netcl_status nc_cl_gather(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim, int64_t base);
netcl_status nc_cl_scatter(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim, int64_t base, int accumulate);
netcl_status nc_cl_sort(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a, int descending);
netcl_status nc_cl_scan(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a);
/* Called at every blocking point (read, synchronize): when an index kernel
 * ran since the last call, reads the error word and, if a kernel recorded
 * an out-of-range index, clears it and returns NETCL_ERR_ARGUMENT naming
 * the op, the index, the size and the device. Costs nothing otherwise. */
netcl_status nc_cl_check_index_error(nc_cl_device *cd);
/* The device's index error word (created on first use); a kernel given it
 * must be followed by cd->err_pending = 1. */
netcl_status nc_cl_error_word(nc_cl_device *cd, cl_mem *out);
void nc_cl_release_index(nc_cl_device *cd);

/* Sets kernel argument i from a value of the kernel's compute type for
 * dtype dt (float, double or long): scalars cross as that type. */
netcl_status nc_cl_set_scalar(cl_kernel k, int i, netcl_dtype dt, double v);
/* Sets a WIDE_T argument (double where the device has fp64, see common.cl). */
netcl_status nc_cl_set_wide(netcl_device *dev, cl_kernel k, int i, double v);
#define NC_ARG(k, i, v) NETCL_CL_CHECK(nc_cl.clSetKernelArg((k), (i), sizeof(v), &(v)))

/* ---- transfer.c --------------------------------------------------------- */
/* Scratch buffer k (0 or 1) of at least nbytes, kept for the next launch;
 * valid until the next call for the same k (the queue is in order). */
netcl_status nc_cl_scratch(nc_cl_device *cd, int k, size_t nbytes, cl_mem *out);
/* bytes of the scratch arenas and the split-K counts (mem.private_bytes) */
int64_t nc_cl_private_bytes(const netcl_device *dev);
/* pinned memory and uploads on the transfer queue */
netcl_status nc_cl_alloc_pinned(netcl_device *dev, size_t nbytes, void **host, void **handle);
void nc_cl_free_pinned(netcl_device *dev, void *handle);
netcl_status nc_cl_write_async(netcl_device *dev, void *buf, size_t off, const void *src, size_t n,
                               const nc_keep *keep, void *events[2]);
void nc_cl_settle(netcl_device *dev, void *event, int on_device);
netcl_status nc_cl_register_host(netcl_device *dev, void *host, size_t nbytes, void **handle);
void nc_cl_unregister_host(netcl_device *dev, void *handle);
netcl_status nc_cl_read_async(netcl_device *dev, void *buf, size_t off, void *dst, size_t n, void **event);
void nc_cl_release_transfers(nc_cl_device *cd);

/* The OpenCL text of the elementwise ops and their gradients, generated
 * from src/base/elementwise_ops.h (elementwise_ops.c); NULL when out of
 * memory. */
const char *nc_cl_elementwise_source(void);
/* $NETCL_DEBUG as a number (0 when unset), read once (program.c) */
int nc_cl_debug_level(void);
/* NETCL_ERR_FORK when called in a process forked after OpenCL was
 * initialised (backend.c): OpenCL is not fork-safe. */
netcl_status nc_check_fork(const char *what);

/* ---- runtime entries (nc_be_runtime) ------------------------------------- */
int64_t nc_cl_counter(nc_counter which);                                  /* program.c */
int nc_cl_profile_report(char *buf, int len, int reset);                  /* profile.c */
netcl_status nc_cl_tune_gemm(netcl_device *dev, const nc_gemm_problem *p, int max_candidates, char *report,
                             int64_t report_len);                         /* gemm_tune.c */
netcl_status nc_cl_gemm_config(netcl_device *dev, const nc_gemm_problem *p, char *buf, int64_t len);
netcl_status nc_cl_gemm_set_config(netcl_device *dev, const char *config); /* gemm_tune_cache.c */
const char *nc_cl_tune_cache_path(netcl_device *dev);
const char *nc_cl_tune_cache_reload(netcl_device *dev);
const char *nc_cl_tensor_cores(netcl_device *dev);                        /* gemm_mma.c */

/* After a build from source (ptx_patch.c): on NVIDIA, a program whose PTX
 * holds "//@"-marked lines is rebuilt from that PTX with them uncommented
 * and its target raised to sm_90a (*prog replaced). */
netcl_status nc_cl_ptx_finish(nc_cl_device *cd, cl_program *prog, const char *family, const char *opts);

#endif
