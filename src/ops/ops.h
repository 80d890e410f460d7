/* ops.h — the forward op layer: one section per op family, named like its
 * files (src/ops/<family>*.c) and like the backend's table of kernel
 * entries it calls (nc_backend.<family>). These functions check
 * arguments, broadcast, promote dtypes and call the backend; they never
 * record autograd nodes: the public netcl_* entry points in
 * src/autograd/<family>*.c call them and record. dims are 0-based. */
#ifndef NETCL_OPS_INTERNAL_H
#define NETCL_OPS_INTERNAL_H
#include "core/core.h"

/* ---- elementwise (elementwise.c, elementwise_inplace.c) ------------------
 * and the helpers every op file shares */
netcl_status nc_same_device(const char *op, const netcl_tensor *a, const netcl_tensor *b);
/* shape a and b broadcast to, or an error naming op and both tensors */
netcl_status nc_broadcast_shape(const char *op, const netcl_tensor *a, const netcl_tensor *b, int *ndim, int64_t *sizes);
/* descriptor of t broadcast to (ndim, sizes): stride 0 on broadcast dims */
void nc_broadcast_desc(nc_desc *d, const netcl_tensor *t, int ndim, const int64_t *sizes);
/* Replaces *t by a cast copy (*owned, the caller releases it) when its
 * dtype differs from dt. */
netcl_status nc_cast_in_place(netcl_tensor **t, netcl_dtype dt, netcl_tensor **owned);
/* dtype an elementwise op computes in for operands meeting at dt */
netcl_dtype nc_compute_dtype(netcl_op op, netcl_dtype dt);
/* Fills in the defaults of a unary op's parameters (softplus: 0 -> 1, 20). */
void nc_unary_params(netcl_op op, double *p1, double *p2);
netcl_status nc_fwd_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2);
netcl_status nc_fwd_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b);
netcl_status nc_fwd_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed);
/* the gradient of operand `which` (0: a, 1: b) of a binary arithmetic op
 * from g (the output's) and the operands (a or b NULL: the scalar sa or
 * sb), in one kernel: a new tensor of g's shape and dtype */
netcl_status nc_fwd_binary_grad(netcl_tensor **out, netcl_op op, int which, netcl_tensor *g, netcl_tensor *a,
                                netcl_tensor *b, double sa, double sb);
/* the gradient of a unary op's input from g (the output's), the input x and
 * the output y, in one kernel: a new tensor of y's shape and dtype */
netcl_status nc_fwd_unary_grad(netcl_tensor **gin, netcl_op op, netcl_tensor *g, netcl_tensor *x, netcl_tensor *y,
                               double p1, double p2);
/* cond ? a : b (a NULL: the scalar sa; b NULL: sb), broadcast */
netcl_status nc_fwd_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb);
/* In-place forms: the result of the op written into `out` (any strides;
 * out may be an operand), cast to out's dtype; the storage version is
 * bumped. No autograd checks: callers do those. */
netcl_status nc_fwd_unary_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, double p1, double p2);
netcl_status nc_fwd_binary_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, netcl_tensor *b);
netcl_status nc_fwd_binary_scalar_into(netcl_tensor *out, netcl_op op, netcl_tensor *a, double s, int reversed);
/* dst = src (broadcast, cast), same device; bumps dst's version */
netcl_status nc_fwd_copy_into(netcl_tensor *dst, netcl_tensor *src);

/* ---- reduce (reduce.c): one dim, moved last for the backend ------------- */
netcl_status nc_fwd_reduce(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int keepdim);
netcl_status nc_fwd_reduce_with_index(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a,
                                      int dim, int keepdim);

/* ---- softmax (softmax.c) ----------------------------------------------------
 * the result keeps a's layout order of dims, possibly as a permuted view */
netcl_status nc_fwd_softmax(netcl_tensor **out, netcl_tensor *a, int dim, int log);
/* gin from the gradient g and the forward output y */
netcl_status nc_fwd_softmax_backward(netcl_tensor **gin, netcl_tensor *g, netcl_tensor *y, int dim, int log);

/* ---- linalg (linalg.c, linalg_tune.c) ----------------------------------- */
netcl_status nc_fwd_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b);
/* out = act(alpha * (a @ b) + beta * c + bias) in one backend gemm call */
netcl_status nc_fwd_gemm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias,
                         double alpha, double beta, int act, double act_p);
/* out = act(a @ b + bias) with the bias along the product's rows (M), as a
 * convolution's channels run in w [O, K] @ cols [K, L]. */
netcl_status nc_fwd_gemm_rowbias(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *bias, int act,
                                 double act_p);
/* The precision of float32 products (NC_FP32_*), set by
 * netcl_set_fp32_precision; passed to the backends with every product.
 * nc_fp32_scope sets this thread's own mode for the products an op makes
 * inside itself (-1: the process's again) and returns the one it replaced. */
int nc_fp32_mode(void);
int nc_fp32_scope(int mode);
/* The number of K slices matmul runs a [1,M,K] @ w [1,K,N] as (split-K;
 * 1: none), with an epilogue to apply or not, in precision fp32. */
int nc_gemm_split_count(netcl_device *dev, const nc_desc *a, const nc_desc *w, int epilogue, int fp32);

/* ---- views (views.c): geometry only; reshape alone may copy -------------- */
netcl_status nc_fwd_tensor_view(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes);
netcl_status nc_fwd_tensor_reshape(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes);
netcl_status nc_fwd_tensor_transpose(netcl_tensor **out, netcl_tensor *t, int d0, int d1);
netcl_status nc_fwd_tensor_permute(netcl_tensor **out, netcl_tensor *t, int ndim, const int *dims);
netcl_status nc_fwd_tensor_slice(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t stop, int64_t step);
netcl_status nc_fwd_tensor_narrow(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t length);
netcl_status nc_fwd_tensor_select(netcl_tensor **out, netcl_tensor *t, int dim, int64_t index);
netcl_status nc_fwd_tensor_expand(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *want);
netcl_status nc_fwd_tensor_squeeze(netcl_tensor **out, netcl_tensor *t, int dim);
netcl_status nc_fwd_tensor_unsqueeze(netcl_tensor **out, netcl_tensor *t, int dim);

/* ---- copy (copy.c): contiguous, casts, device moves, padding, writes ----- */
netcl_status nc_fwd_tensor_contiguous(netcl_tensor **out, netcl_tensor *t);
netcl_status nc_fwd_tensor_cast(netcl_tensor **out, const netcl_tensor *t, netcl_dtype dtype);
netcl_status nc_fwd_tensor_to_device(netcl_tensor **out, const netcl_tensor *t, netcl_device *dev);
netcl_status nc_fwd_pad(netcl_tensor **out, netcl_tensor *a, int npad, const int64_t *pads, double value);
/* Writes autograd does not record (src/autograd/inplace.c checks them
 * first): copy_ (broadcast, cast, any devices), fill_ and set_item; each
 * bumps the written tensor's version. */
netcl_status nc_fwd_tensor_copy_(netcl_tensor *dst, const netcl_tensor *src);
/* NETCL_ERR_ARGUMENT naming op when t has an expanded dim (several
 * elements in one location), which no in-place write can fill sensibly. */
netcl_status nc_check_writable(const char *op, const netcl_tensor *t);
netcl_status nc_fwd_tensor_fill_(netcl_tensor *dst, double value);
netcl_status nc_fwd_tensor_set_item(netcl_tensor *t, const int64_t *index, double value);

/* ---- conv (conv.c: strategies; conv_plan.c: planner; conv_tune.c; conv_unfold.c) ---
 * unfold/fold: k, d, p, s are (h, w) pairs */
/* window positions along a dim of size `in` (ceil_mode as in pooling) */
int64_t nc_window_positions(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode);
/* window arguments positive (padding non-negative), and a float input of ndim dims */
netcl_status nc_check_window(const char *op, const netcl_tensor *x, const int64_t *k, const int64_t *s,
                             const int64_t *p, const int64_t *d);
netcl_status nc_check_float_input(const char *op, const netcl_tensor *x, int ndim);
netcl_status nc_fwd_unfold(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                           const int64_t *s);
/* unfold into [K, N, L] storage (K = C*kh*kw, L = oh*ow): the [K, N*L]
 * operand of one GEMM over all samples, with no transposing copy */
netcl_status nc_fwd_unfold_kn(netcl_tensor **out, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                              const int64_t *s);
/* cols [N, K, L] with any strides for N and K and unit stride along L are
 * read in place (others are copied first) */
netcl_status nc_fwd_fold(netcl_tensor **out, netcl_tensor *cols, const int64_t *size, const int64_t *k, const int64_t *d,
                         const int64_t *p, const int64_t *s);
typedef enum nc_conv_algo {
    NC_CONV_AUTO, NC_CONV_DIRECT, NC_CONV_DEPTHWISE, NC_CONV_IM2COL, NC_CONV_GEMM1X1, NC_CONV_WINOGRAD2,
    NC_CONV_WINOGRAD4, NC_CONV_IGEMM, NC_CONV_TILED, NC_CONV_ALGO_COUNT
} nc_conv_algo;
/* A forward or backward-data pass's fused epilogue at the op level:
 * result = act(result + bias[channel]) (bias may be NULL, act -1 = none). */
typedef struct nc_conv_fuse {
    netcl_tensor *bias;
    int act;
    double act_p;
} nc_conv_fuse;
/* forward: (x, w) -> y; data: (dy, w) -> dx; weight: (x, dy) -> dw */
const char *nc_conv_algo_name(nc_conv_algo a);
nc_conv_algo nc_conv_algo_from_name(const char *name);   /* NC_CONV_ALGO_COUNT when unknown */
int nc_conv_applicable(nc_conv_algo a, const nc_conv_args *g, nc_conv_pass pass);
nc_conv_algo nc_conv_plan(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);
/* the convolution the tiled kernels run for a pass: the forward itself, or
 * for backward-data the flipped one (conv_plan.c) */
nc_conv_args nc_conv_tiled_kernel_args(const nc_conv_args *g, nc_conv_pass pass);
/* bytes of scratch strategy a takes for one pass besides its result (conv_workspace.c) */
double nc_conv_workspace_bytes(nc_conv_algo a, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);
/* the scratch a pass may take on dev (conv_workspace.c) */
double nc_conv_workspace_limit_on(const netcl_device *dev);
/* forces this thread's choice (an nc_conv_algo; -1: none) over every other */
void nc_conv_force_thread(int algo);
/* a new contiguous result of the pass, computed by the planned strategy */
netcl_status nc_fwd_conv2d_pass(netcl_tensor **out, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b);
/* the same with an epilogue (forward and backward-data passes): fused into
 * the strategy's kernels where they can, applied after them otherwise */
netcl_status nc_fwd_conv2d_fused(netcl_tensor **out, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a,
                                 netcl_tensor *b, const nc_conv_fuse *f);
/* checks the arguments and fills g (output_padding != NULL: transposed) */
netcl_status nc_conv2d_setup(const char *op, const netcl_tensor *x, const netcl_tensor *w, const netcl_tensor *b,
                             const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                             const int64_t *output_padding, nc_conv_args *g);
/* the measured winner for this geometry (NC_CONV_AUTO when none is known
 * and benchmarking is off) */
nc_conv_algo nc_conv_tuned(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);

/* ---- pool (pool.c): geometry from nc_pool_setup (mode 0 max, 1 avg, 2
 * adaptive avg) ------------------------------------------------------------ */
netcl_status nc_pool_setup(const char *op, const netcl_tensor *x, int mode, const int64_t *k, const int64_t *s,
                           const int64_t *p, const int64_t *d, int ceil_mode, int count_pad, int64_t divisor,
                           const int64_t *out_size, nc_pool_geom *g);
netcl_status nc_fwd_pool(netcl_tensor **out, netcl_tensor **idx, netcl_tensor *x, const nc_pool_geom *g);
netcl_status nc_fwd_pool_backward(netcl_tensor **gin, netcl_tensor *gout, netcl_tensor *idx, const nc_pool_geom *g);

/* ---- norm (norm.c): fused batch normalisation; mean/invstd are what
 * backward needs (eval: copies of the running statistics' values); relu:
 * the result clamped at 0 in the same pass, and backward then takes that
 * result as y (NULL otherwise) to mask g; res (may be NULL): a tensor of
 * x's shape and dtype added before the relu (a residual connection) ---- */
netcl_status nc_batch_norm_check(const netcl_tensor *x, const netcl_tensor *rm, const netcl_tensor *rv, const netcl_tensor *w,
                                 const netcl_tensor *b, int training);
netcl_status nc_fwd_batch_norm(netcl_tensor **y, netcl_tensor **mean, netcl_tensor **invstd, netcl_tensor *x,
                               netcl_tensor *rm, netcl_tensor *rv, netcl_tensor *w, netcl_tensor *b, int training,
                               double momentum, double eps, int relu, netcl_tensor *res);
netcl_status nc_fwd_batch_norm_backward(netcl_tensor **dx, netcl_tensor **dw, netcl_tensor **db, netcl_tensor *g,
                                        netcl_tensor *x, netcl_tensor *mean, netcl_tensor *invstd, netcl_tensor *w,
                                        netcl_tensor *y, int training);

/* ---- loss (loss.c): class losses over x [rows, C] (backend loss) ---------- */
netcl_status nc_fwd_class_loss(netcl_tensor **loss, netcl_tensor **wsum, netcl_tensor *x, netcl_tensor *t, netcl_tensor *w,
                               int logp, int64_t base, int64_t ignore, double eps);
netcl_status nc_fwd_class_loss_backward(netcl_tensor **gx, netcl_tensor *g, netcl_tensor *x, netcl_tensor *t,
                                        netcl_tensor *w, int logp, int64_t base, int64_t ignore, double eps);

/* ---- index (index.c, index_sort.c) --------------------------------------- */
/* stack = 1: each tensor gets a new size-1 dim at `dim` first */
netcl_status nc_fwd_cat(netcl_tensor **out, int n, netcl_tensor *const *ts, int dim, int stack);
netcl_status nc_fwd_gather(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, int base);
netcl_status nc_fwd_scatter(netcl_tensor **out, netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base);
/* the same written into a (no autograd checks; bumps a's version) */
netcl_status nc_fwd_scatter_into(netcl_tensor *a, int dim, netcl_tensor *idx, netcl_tensor *src, int acc, int base);
netcl_status nc_fwd_nonzero(netcl_tensor **out, netcl_tensor *a);
netcl_status nc_fwd_sort(netcl_tensor **values, netcl_tensor **indices, netcl_tensor *a, int dim, int descending);
/* op SUM or PROD; reverse = 1 scans from the end (the cumsum of the
 * reversed row, itself reversed: backward of cumsum) */
netcl_status nc_fwd_scan(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int reverse);
/* 1 when idx is an index tensor (int64 or int32), else an error naming op */
netcl_status nc_check_index(const char *op, const netcl_tensor *idx, int base);

/* ---- optim (optim.c): the fused update, checked by src/autograd/optim.c -- */
const char *nc_optim_kind_name(netcl_optim_kind kind);   /* "adam" */
/* mixed precision: grad *= inv_scale; found_inf = 1 where grad held inf or NaN */
netcl_status nc_fwd_amp_unscale(netcl_tensor *grad, const netcl_tensor *inv_scale, netcl_tensor *found_inf);
netcl_status nc_fwd_optim_step(netcl_optim_kind kind, int flags, netcl_tensor *param, netcl_tensor *grad,
                               netcl_tensor *state1, netcl_tensor *state2, netcl_tensor *state3, const double *hyper,
                               int nhyper);
#endif
