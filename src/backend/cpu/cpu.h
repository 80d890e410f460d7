/* cpu.h — shared pieces of the CPU backend: the thread pool, the strided
 * iterator that walks several operands of one shape row by row, the NCHW
 * plane helpers of conv_unfold.c and pool.c, typed element access, and the
 * per-family entry points that backend.c puts into the vtable. */
#ifndef NETCL_CPU_H
#define NETCL_CPU_H

#include "backend/backend.h"

/* NC_CPU_WIDE on a hot loop's function: GCC builds it for AVX-512 (x86-64-v4),
 * AVX2 (v3) and the baseline, and the loader picks the widest the CPU runs
 * (an ifunc), so one build serves every x86-64 machine. The arithmetic is
 * the same in each (C11 mode contracts nothing into an FMA), so the bits
 * are too. Sanitizer builds and other compilers get the baseline only. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(NC_NO_WIDE)
#define NC_CPU_WIDE __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define NC_CPU_WIDE
#endif

/* ---- thread pool (parallel.c) ------------------------------------------------
 * Runs fn over [0, n) split into contiguous ranges of at least `grain`
 * items; serial when small, when nested, or in a forked child. */
typedef void (*nc_range_fn)(void *ctx, int64_t start, int64_t end);
void nc_parallel_for(int64_t n, int64_t grain, nc_range_fn fn, void *ctx);
int nc_cpu_threads(void);
/* 1 on a pool worker and while the caller runs its own part (or an
 * exclusive section): work started there runs serially. */
int nc_cpu_nested(void);
/* Runs fn(ctx) on the calling thread while no pool job runs, for a library
 * that brings threads of its own (OpenBLAS) and must not share the cores
 * with a job; nested parallel work inside runs serially. */
void nc_parallel_exclusive(void (*fn)(void *ctx), void *ctx);

/* ---- strided iteration (iter.c; nc_iter_init is in the core) ---------------- */
/* Calls row(ctx, off, step, count) for each row piece of the linear index
 * range [start, end): off[k] is operand k's element offset, step[k] its
 * stride along the row. */
typedef void (*nc_row_fn)(void *ctx, const int64_t *off, const int64_t *step, int64_t count);
void nc_iter_range(const nc_iter *it, int64_t start, int64_t end, nc_row_fn row, void *ctx);

/* ---- planes of NCHW tensors (conv_unfold.c, pool.c) ------------------------------
 * [*lo, *hi): the outputs o < n whose tap o * stride + b lands in [0, size) */
static inline void nc_cpu_tap_range(int64_t n, int64_t stride, int64_t b, int64_t size, int64_t *lo, int64_t *hi)
{
    int64_t l = b >= 0 ? 0 : (-b + stride - 1) / stride;
    int64_t h = size - b <= 0 ? 0 : (size - b + stride - 1) / stride;
    *lo = l < n ? l : n;
    *hi = h < *lo ? *lo : h < n ? h : n;
}
/* the thread pool's grain for planes of `work` elements each */
static inline int64_t nc_cpu_plane_grain(int64_t work) { return work >= 65536 ? 1 : 65536 / (work ? work : 1); }

/* ---- typed element access ------------------------------------------------------ */
int64_t nc_cpu_load_i64(const void *base, netcl_dtype dt, int64_t i);
void nc_cpu_store_i64(void *base, netcl_dtype dt, int64_t i, int64_t v);
/* dst[j] = base[off + j*step] as float, j < n (float16/bfloat16 decoded). */
void nc_cpu_gather_f32(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, float *dst);
void nc_cpu_scatter_f32(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const float *src);
void nc_cpu_gather_f64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, double *dst);
void nc_cpu_scatter_f64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const double *src);
void nc_cpu_gather_i64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, int64_t *dst);
void nc_cpu_scatter_i64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const int64_t *src);
void nc_cpu_scatter_u8(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const uint8_t *src);

/* a float32 descriptor's first element (its offset added), writable and not */
#define NC_CPU_F32(d) ((float *)(d)->buf + (d)->offset)
#define NC_CPU_CF32(d) ((const float *)(d)->buf + (d)->offset)

/* Element i of a descriptor's buffer as double, and back (float32 and
 * float64 directly, other dtypes through the converters). i is absolute:
 * callers add d->offset. The kernels that compute in double use these. */
static inline double nc_cpu_ld(const nc_desc *d, int64_t i)
{
    if (d->dtype == NETCL_DTYPE_FLOAT32) return ((const float *)d->buf)[i];
    if (d->dtype == NETCL_DTYPE_FLOAT64) return ((const double *)d->buf)[i];
    return nc_load_double(d->buf, d->dtype, i);
}

static inline void nc_cpu_st(const nc_desc *d, int64_t i, double v)
{
    if (d->dtype == NETCL_DTYPE_FLOAT32) ((float *)d->buf)[i] = (float)v;
    else if (d->dtype == NETCL_DTYPE_FLOAT64) ((double *)d->buf)[i] = v;
    else nc_store_double(d->buf, d->dtype, i, v);
}

/* ---- families: one group per table of nc_backend, in the family's files ---------- */
/* elementwise (elementwise.c) */
netcl_status nc_cpu_copy(netcl_device *dev, const nc_desc *dst, const nc_desc *src);
netcl_status nc_cpu_fill(netcl_device *dev, const nc_desc *dst, double value);
netcl_status nc_cpu_range(netcl_device *dev, const nc_desc *dst, double start, double step);
netcl_status nc_cpu_unary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2);
netcl_status nc_cpu_binary_grad(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                                const nc_desc *a, const nc_desc *b, double sa, double sb);
netcl_status nc_cpu_fused(netcl_device *dev, const nc_fused *f);
netcl_status nc_cpu_unary_grad(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                               const nc_desc *y, double p1, double p2);
netcl_status nc_cpu_binary(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b, double s, int reversed);
netcl_status nc_cpu_where(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a,
                          const nc_desc *b, double sa, double sb);

/* reduce (reduce.c) */
netcl_status nc_cpu_reduce(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a);

/* softmax (softmax.c) */
netcl_status nc_cpu_softmax(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log);
netcl_status nc_cpu_softmax_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log);

/* linalg (gemm.c, gemm_blas.c) */
/* gemm_blas.c: the product through a dlopen'ed CPU BLAS when one is present and
 * the operands suit it (out contiguous [B,M,N]); 0 when it did not run.
 * after (may be NULL) runs on each finished block of out — rows [m0, m1),
 * columns [n0, n1) of item b — on the thread that computed it, while the
 * block is still in cache (gemm's epilogue). */
typedef void (*nc_cpu_block_fn)(void *ctx, int64_t b, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
int nc_cpu_blas_matmul(const nc_desc *out, const nc_desc *a, const nc_desc *w, nc_cpu_block_fn after, void *ctx);
const char *nc_cpu_blas_name(void);
/* Loads the BLAS now (device discovery, while the process has one thread). */
void nc_cpu_blas_init(void);
netcl_status nc_cpu_matmul(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *b);
netcl_status nc_cpu_gemm(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w, const nc_gemm_epi *e);
/* A fused activation by netcl_op code (the gemm and convolution epilogues;
 * any other code: v unchanged). */
double nc_cpu_activate(int act, double v, double p);

/* conv (conv_unfold.c, conv_direct.c, conv_depthwise.c, conv_implicit.c, conv_tiled.c) */
netcl_status nc_cpu_im2col(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g);
netcl_status nc_cpu_col2im(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g);
netcl_status nc_cpu_conv(netcl_device *dev, nc_conv_kernel k, const nc_conv_args *g, const nc_desc *out,
                         const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1);
/* conv_direct.c: the backward-weight sum of weight (o, cg, ki, kj) over images [n0, n1), in double */
double nc_cpu_conv_weight_sum(const nc_conv_args *g, const nc_desc *x, const nc_desc *dy, int64_t o, int64_t cg, int64_t ki,
                              int64_t kj, int64_t n0, int64_t n1);
/* conv_depthwise.c: the NC_DW_* kinds in float32 (ip: images per backward-weight slice) */
netcl_status nc_cpu_conv_depthwise(nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out, const nc_desc *a,
                                   const nc_desc *b, int64_t ip);
/* conv_winograd.c: the NC_WINO_* kinds (m = p0, the kind's p1) when out and a
 * are float32 (returns 1), else 0 (conv_direct.c's reference serves) */
int nc_cpu_winograd_f32(nc_conv_kernel kind, const nc_conv_args *g, const nc_desc *out, const nc_desc *a, int64_t m,
                        int64_t p1);
netcl_status nc_cpu_conv_gemm(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                              const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices);
/* conv_vec.c: the float32 tiled pass with output channels as vector lanes
 * (groups 1); 0 when it does not apply or has no memory (the caller runs
 * the rows of conv_tiled.c) */
int nc_cpu_conv_vec(const nc_conv_args *g, const nc_desc *y, const nc_desc *x, const nc_desc *w, const nc_conv_epi *epi,
                    int flip);
/* conv_vec.c: backward-weight out [O, C*KH*KW] <- x, dy (float32, groups 1),
 * the implicit_gemm strategy's weight pass on the cpu; 0 when it does not
 * apply or has no memory */
int nc_cpu_conv_vec_weight(const nc_conv_args *g, const nc_desc *out, const nc_desc *x, const nc_desc *dy);
netcl_status nc_cpu_conv_tiled(netcl_device *dev, const nc_conv_args *g, const nc_desc *y, const nc_desc *x,
                               const nc_desc *w, const nc_conv_epi *epi, int flip);
netcl_status nc_cpu_conv_tiled_weight(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                      const nc_desc *dy, int64_t per);

/* pool (pool.c) */
netcl_status nc_cpu_pool(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x, const nc_pool_geom *g);
netcl_status nc_cpu_pool_backward(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                                  const nc_pool_geom *g);

/* norm (norm.c) */
netcl_status nc_cpu_batch_norm(netcl_device *dev, nc_batch_norm_kernel k, const nc_batch_norm_args *a);

/* loss (loss.c) */
netcl_status nc_cpu_class_loss(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                               const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps);
netcl_status nc_cpu_class_loss_backward(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                        const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                        double eps);

/* index: indexing, sort, scan (index.c, index_sort.c) */
netcl_status nc_cpu_gather(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim, int64_t base);
netcl_status nc_cpu_scatter(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim, int64_t base, int accumulate);
netcl_status nc_cpu_sort(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a, int descending);
netcl_status nc_cpu_scan(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a);

/* random (random.c) */
netcl_status nc_cpu_rng(netcl_device *dev, const nc_desc *out, netcl_rng_kind kind, uint64_t seed, uint64_t offset, double p1,
                        double p2);

/* optim (optim.c, optim_impl.h) */
netcl_status nc_cpu_amp_unscale(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found);
netcl_status nc_cpu_optim_step(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                               const nc_desc *const *s, const double *hyper);

/* augment (augment.c) */
netcl_status nc_cpu_augment(netcl_device *dev, const nc_augment *a);

#endif
