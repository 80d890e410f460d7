/* netcl_ops.h — the op library of the C contract (docs/ops.md): elementwise,
 * selection and neural-network functions, reductions and products,
 * indexing, shape, sort, scan and random ops, and the kernel-tuning calls
 * behind them. Part of the contract netcl.h opens (it includes this file
 * at its end); its cdef section follows netcl.h's. */
#ifndef NETCL_OPS_H
#define NETCL_OPS_H

#include "netcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cdef-begin */
#pragma GCC visibility push(default)

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

#pragma GCC visibility pop
/* cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* NETCL_OPS_H */
