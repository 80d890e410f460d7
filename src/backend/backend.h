/* backend.h — the backend contract: what a backend (src/backend/cpu,
 * src/backend/cl) implements and what the layers above may ask of it. A
 * backend sees devices, buffers and strided descriptors, never tensors,
 * storages or autograd. */
#ifndef NETCL_BACKEND_H
#define NETCL_BACKEND_H

#include "base/base.h"
#include <stdio.h>

/* ---- backends ---------------------------------------------------------------
 * A backend owns memory and runs forward kernels. Buffers are opaque
 * (a host pointer on cpu, a cl_mem on OpenCL). Every kernel entry receives
 * descriptors already checked by the ops layer: shapes agree (broadcast
 * inputs have stride 0), dtypes are as documented per entry, all on `dev`. */
/* Geometry of a 2-D convolution window over contiguous NCHW input x [N, C,
 * H, W] giving oh x ow positions (kernels/conv_unfold.cl mirrors it). */
typedef struct nc_conv_geom {
    int64_t N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
} nc_conv_geom;
/* cols [N, K, L] of im2col/col2im keeps samples next to each other (the
 * [K, N, L] storage one GEMM over the batch reads): backends then deal their
 * work over samples before channels, so each cols row is written or read
 * contiguously */
static inline int nc_cols_samples_adjacent(const nc_desc *cols) { return cols->strides[0] < cols->strides[1]; }

/* Geometry of 2-D pooling (kernels/pool.cl mirrors it). mode 0 max, 1
 * average (count_pad: padding counts in the divisor; divisor > 0 overrides
 * it), 2 adaptive average (kernel/stride/padding unused). */
typedef struct nc_pool_geom {
    int64_t N, C, H, W, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode, count_pad, divisor;
} nc_pool_geom;

/* The precision of float32 products (netcl_set_fp32_precision; the ops
 * layer passes it down with every product): IEEE float32 FMAs, tensor cores
 * through three TF32 products of split operands (near-float32 accuracy),
 * or tensor cores with inputs rounded to TF32. */
enum { NC_FP32_IEEE = 0, NC_FP32_TF32X3 = 1, NC_FP32_TF32 = 2 };

/* The fused epilogue of the backend's gemm entry:
 *   out = act(alpha * (a @ w) + beta * c + bias)
 * c [B,M,N] any strides (stride 0 broadcasts) or NULL, when beta is not
 * read; bias 1-D along N (bias_dim 2) or M (bias_dim 1), any stride, or
 * NULL; act a netcl_op among relu, sigmoid, tanh, silu, gelu, gelu_tanh,
 * relu6, leaky_relu (act_p: its slope), or -1 for none. */
typedef struct nc_gemm_epi {
    double alpha, beta;
    const nc_desc *c, *bias;
    int bias_dim;
    int act;
    double act_p;
    int fp32;     /* how float32 products multiply: NC_FP32_* */
} nc_gemm_epi;
/* nc_backend.gemm_copies: the operands a product copies first: COPY_A a
 * to m-contiguous, COPY_W w to n-contiguous, PAD_A / PAD_W the operand in
 * its own layout; every such copy's rows (along its contiguous dim) start
 * on 128-byte lines */
enum { NC_GEMM_COPY_A = 1, NC_GEMM_COPY_W = 2, NC_GEMM_PAD_A = 4, NC_GEMM_PAD_W = 8 };
/* n elements of dt rounded up to whole 128-byte lines: the row stride of
 * such copies and of the backends' GEMM workspaces */
static inline int64_t nc_line_elems(int64_t n, netcl_dtype dt)
{
    int64_t per = 128 / (int64_t)netcl_dtype_size(dt);
    return (n + per - 1) / per * per;
}
struct nc_augment;
/* A 2-D convolution: x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW]
 * (kernels/conv_direct.cl mirrors it). */
typedef struct nc_conv_args {
    int64_t N, C, H, W, O, G, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
} nc_conv_args;

/* The tiled backward-weight's limits (backend conv_tiled_weight), shared by
 * the planner and the backends: a block of NC_TW_OB output channels has at
 * most 1024 weight rows (o, c, kh: 256 threads x 4), and one image's input
 * window plus that block's dy fit in 6144 values (24 KiB of float32 local
 * memory, plus a value of padding per row). The window is the input the
 * taps read, from (-PH, -PW). */
#define NC_TW_OB 8
#define NC_TW_MAX_ROWS 1024
#define NC_TW_MAX_STAGED 6144
static inline int64_t nc_tw_rows(const nc_conv_args *g) { return (g->OH - 1) * g->SH + (g->KH - 1) * g->DH + 1; }
static inline int64_t nc_tw_cols(const nc_conv_args *g) { return (g->OW - 1) * g->SW + (g->KW - 1) * g->DW + 1; }
static inline int64_t nc_tw_block(const nc_conv_args *g) { return g->O / g->G < NC_TW_OB ? g->O / g->G : NC_TW_OB; }
/* work-groups a part of images takes: groups x blocks of output channels */
static inline int64_t nc_tw_blocks(const nc_conv_args *g) { return g->G * ((g->O / g->G + NC_TW_OB - 1) / NC_TW_OB); }
static inline int nc_tw_fits(const nc_conv_args *g)
{
    int64_t cg = g->C / g->G, ob = nc_tw_block(g);
    return ob * cg * g->KH <= NC_TW_MAX_ROWS && cg * nc_tw_rows(g) * nc_tw_cols(g) + ob * g->OH * g->OW <= NC_TW_MAX_STAGED;
}
/* the local memory it stages: rows and channels padded to odd strides */
static inline int64_t nc_tw_staged(const nc_conv_args *g)
{
    return (g->C / g->G) * nc_tw_rows(g) * (nc_tw_cols(g) | 1) + nc_tw_block(g) * ((g->OH * g->OW) | 1);
}

/* The tiled direct convolution's work-group on OpenCL devices
 * (kernels/conv_tiled.cl), shared by the planner (its local memory) and the
 * backend: ty rows x tx*rx columns of output pixels of one image for ob
 * output channels, cb input channels staged in local memory at a time. g
 * is the convolution as the kernel runs it (backward-data: the forward one
 * over dy). Outputs up to 32 columns wide get a tile one row wide and at
 * most 256 items, as tall as needs the fewest row tiles (LeNet's 10 x 10
 * outputs: one 10 x 10 tile, not the 8 x 32 that left 60% of its items
 * idle); wider ones 8 x 32. A stem (32 or more output channels from 32
 * taps or fewer, 17-32 columns) gets blocks of 32 channels, 4 columns x
 * 32 channels an item (up to 16 rows of 8 items a tile, 16 x 32 pixels at
 * ResNet's 32 x 32 outputs), each tap's weights and pixels read from
 * local memory once for 128 multiply-adds rather than 16. cb shrinks until the staged values (in the
 * kernel's compute type: float64's 8 bytes, else 4) fit NC_TILE_LOCAL
 * bytes and the device's local memory; 0 where even one channel does not. */
#define NC_TILE_LOCAL 32768
typedef struct { int tx, ty, rx, ob, cb; } nc_conv_tile;
static inline int64_t nc_conv_tile_staged(const nc_conv_args *g, const nc_conv_tile *t)
{
    int64_t ph = (t->ty - 1) * g->SH + (g->KH - 1) * g->DH + 1, pw = (t->tx * t->rx - 1) * g->SW + (g->KW - 1) * g->DW + 1;
    return t->cb * (ph * pw + g->KH * g->KW * t->ob);
}
static inline nc_conv_tile nc_conv_tile_for(const nc_conv_args *g, netcl_dtype dt, int64_t local_mem)
{
    int64_t elem = dt == NETCL_DTYPE_FLOAT64 ? 8 : 4, budget = local_mem < NC_TILE_LOCAL ? local_mem : NC_TILE_LOCAL;
    nc_conv_tile t = {16, 8, 2, 8, 8};
    int64_t og = g->O / g->G, cg = g->C / g->G;
    if (og < t.ob) t.ob = og > 0 ? (int)og : 1;
    if (cg < t.cb) t.cb = cg > 0 ? (int)cg : 1;
    if (g->OW <= 32) {
        int stem = og >= 32 && cg * g->KH * g->KW <= 32 && g->OW > 16;   /* few taps, many outputs */
        if (stem) t.ob = 32;
        t.rx = stem ? 4 : g->OW > 16 ? 2 : 1;
        t.tx = g->OW > 0 ? (int)((g->OW + t.rx - 1) / t.rx) : 1;
        int64_t most = 256 / t.tx < 16 ? 256 / t.tx : 16, rows = g->OH > 0 ? (g->OH + most - 1) / most : 1;
        t.ty = g->OH > 0 ? (int)((g->OH + rows - 1) / rows) : 1;
    }
    while (t.cb > 0 && nc_conv_tile_staged(g, &t) * elem > budget) t.cb--;
    return t;
}

/* The kernels of the direct and Winograd convolution strategies. */
typedef enum nc_conv_kernel {
    NC_CONV_FWD,          /* out y <- a x, b w */
    NC_CONV_BWD_DATA,     /* out dx <- a dy, b w */
    NC_CONV_BWD_WEIGHT,   /* out dw <- a x, b dy */
    NC_WINO_INPUT,        /* out V [T, S, C, ps] <- a x (m = p0; tiles p = s*ps + k in blocks of ps = p1,
                             zeros past P; p1 = 0: one block of P) */
    NC_WINO_WEIGHT,       /* out U [T, O, C] <- a w (m = p0; p1: flipped, transposed w [C, O, 3, 3]) */
    NC_WINO_OUTPUT,       /* out y <- a M [T, O, P] (m = p0) */
    NC_WINO_OUTPUT_GRAD,  /* out dM [T, S, O, ps] <- a dy: the output transform's adjoint (m = p0, ps = p1 > 0) */
    NC_WINO_WEIGHT_GRAD,  /* out dw [O, C, 3, 3] <- a dU [T, O, C]: the weight transform's adjoint (m = p0) */
    NC_DW_FWD,            /* depthwise (groups = C): out y <- a x, b w */
    NC_DW_DATA,           /* depthwise: out dx <- a dy, b w */
    NC_DW_WEIGHT          /* depthwise: out part [S, O, KH*KW] <- a x, b dy, sums over slices of p0 images */
} nc_conv_kernel;

/* The three passes of a convolution (ops.h plans a strategy for each). */
typedef enum nc_conv_pass { NC_CONV_PASS_FWD, NC_CONV_PASS_DATA, NC_CONV_PASS_WEIGHT } nc_conv_pass;
/* The epilogue a forward convolution kernel fuses: y = act(y + bias[channel]);
 * bias may be NULL (contiguous [O] in the output's dtype), act a netcl_op
 * that nc_gemm_act_ok accepts or -1 for none, act_p its parameter. */
typedef struct nc_conv_epi {
    const nc_desc *bias;
    int act;
    double act_p;
} nc_conv_epi;

/* The kernels of fused batch normalisation over x viewed [N, C, S] (all
 * operands contiguous, one float dtype; per-channel vectors of C). */
typedef enum nc_batch_norm_kernel {
    NC_BATCH_NORM_STATS,         /* mean, invstd <- x; running mean/var updated in place when given */
    NC_BATCH_NORM_APPLY,         /* y <- x, mean, invstd, w?, b? */
    NC_BATCH_NORM_GRAD_REDUCE,   /* sg = sum g, sgx = sum g (x - mean) <- g, x, mean */
    NC_BATCH_NORM_GRAD_APPLY     /* dx <- g, x, mean, invstd, w?, sg, sgx (training) or dx = g w invstd */
} nc_batch_norm_kernel;

typedef struct nc_batch_norm_args {
    int64_t N, C, S;
    int training;
    double momentum, eps;
    /* APPLY: y = relu(normalised x + res) (batch_norm_act; res may be NULL) */
    int relu;
    /* operands (NULL where the kernel or the call has none); y, in the
     * backward kernels: a fused relu's output, whose zeros mask g; res: a
     * residual of x's shape and dtype added before the relu (APPLY) */
    const nc_desc *x, *g, *mean, *invstd, *w, *b, *rmean, *rvar, *sg, *sgx, *out, *y, *res;
} nc_batch_norm_args;

/* ---- the contract ------------------------------------------------------------
 * A backend is one nc_backend: memory and transfers, its runtime (programs,
 * counters, tuning), and one table of kernel entries per op family. The
 * family tables are named like the files that implement them
 * (src/backend/<cpu|cl>/<family>*.c, kernels/<family>*.cl) and like the op
 * files above that call them (src/ops/<family>*.c). Entries marked "may be
 * NULL" are optional; the rest every backend provides. */

/* A host object that an asynchronous copy keeps alive: the backend calls
 * release(obj) exactly once, when the copy no longer reads the object (at
 * once where it copies synchronously). */
typedef struct nc_keep {
    void *obj;
    void (*release)(void *obj);
} nc_keep;

typedef struct nc_be_memory {
    /* alloc returns NETCL_ERR_OOM (no message needed) when the device is full */
    netcl_status (*alloc)(netcl_device *dev, size_t nbytes, void **buf);
    void (*free)(netcl_device *dev, void *buf);
    /* host <-> device, byte offsets into buf. write may return before the
     * copy is done only when keep is non-NULL (the source lives in keep's
     * object): *event then receives an event that a later write of the
     * source must settle first (NULL where the copy was synchronous). */
    netcl_status (*write)(netcl_device *dev, void *buf, size_t offset, const void *src, size_t nbytes,
                          const nc_keep *keep, void **event);
    netcl_status (*read)(netcl_device *dev, void *buf, size_t offset, void *dst, size_t nbytes);
    netcl_status (*synchronize)(netcl_device *dev);
    /* Pinned (page-locked) host memory: *host points at nbytes; handle frees
     * it. write_async copies from such memory into buf on a separate
     * transfer queue, keeping keep's object alive until done, and gives two
     * events (references): events[0] for the source (a host wait before it
     * is written), events[1] for the destination (a queue wait before it is
     * used). settle makes the main queue (on_device) or the host wait for
     * an event and releases it. All four may be NULL (then transfers stay
     * synchronous). */
    netcl_status (*alloc_pinned)(netcl_device *dev, size_t nbytes, void **host, void **handle);
    void (*free_pinned)(netcl_device *dev, void *handle);
    netcl_status (*write_async)(netcl_device *dev, void *buf, size_t off, const void *src, size_t nbytes,
                                const nc_keep *keep, void *events[2]);
    void (*settle)(netcl_device *dev, void *event, int on_device);
    /* Host memory another party owns (a shared segment) made as fast to
     * copy to and from as pinned memory: register gives the handle that
     * unregister takes. read_async copies buf -> dst (host memory) after
     * the work queued so far without holding up later work (nor ordering
     * later writes of buf after it: the caller's business), and gives an
     * event (a reference) that the host settles before dst is read. All
     * three may be NULL (reads stay synchronous). */
    netcl_status (*register_host)(netcl_device *dev, void *host, size_t nbytes, void **handle);
    void (*unregister_host)(netcl_device *dev, void *handle);
    netcl_status (*read_async)(netcl_device *dev, void *buf, size_t off, void *dst, size_t nbytes, void **event);
    /* releases everything the device holds (may be NULL) */
    void (*shutdown)(netcl_device *dev);
    /* bytes of device memory held outside the pool: arenas the backend
     * grows and keeps (may be NULL: none) */
    int64_t (*private_bytes)(const netcl_device *dev);
} nc_be_memory;

/* The process-wide counters a backend keeps (nc_be_runtime.counter). */
typedef enum nc_counter {
    NC_COUNT_PROGRAMS_COMPILED, NC_COUNT_PROGRAMS_LOADED, NC_COUNT_KERNELS_LAUNCHED, NC_COUNT_ENQUEUE_NS
} nc_counter;

/* One GEMM problem as the tuning entries see it: out [m, n] = a @ w with a
 * [m, k] (trans_a: stored column-major) and w [k, n] (trans_b), float32
 * products in precision fp32 (NC_FP32_*); split: the K slices matmul runs
 * it as (nc_gemm_split_count, 1: none) and copies: the operand copies it
 * makes first (NC_GEMM_COPY_* | NC_GEMM_PAD_*, from linalg.gemm_copies). */
typedef struct nc_gemm_problem {
    netcl_dtype dtype;
    int64_t m, n, k;
    int trans_a, trans_b, fp32, split, copies;
} nc_gemm_problem;

/* Programs, counters, profiling and GEMM tuning; every entry may be NULL. */
typedef struct nc_be_runtime {
    /* a process-wide total of this backend */
    int64_t (*counter)(nc_counter which);
    /* the rows of the per-kernel device-time report (NETCL_PROFILE) into
     * buf, cut at len; returns the length they need, 0 when there are none
     * (netcl_profile_report in core/runtime.c frames them) */
    int (*profile_report)(char *buf, int len, int reset);
    /* measures configurations for p and caches the winner (report: a
     * human-readable account, len bytes) */
    netcl_status (*tune_gemm)(netcl_device *dev, const nc_gemm_problem *p, int max_candidates, char *report,
                              int64_t len);
    /* the configuration p runs with and why, into buf */
    netcl_status (*gemm_config)(netcl_device *dev, const nc_gemm_problem *p, char *buf, int64_t len);
    /* forces a configuration on dev (NULL or "": none) */
    netcl_status (*gemm_set_config)(netcl_device *dev, const char *config);
    /* the tuning cache file, and reading it again (returns why it was
     * ignored, or "") */
    const char *(*tune_cache_path)(netcl_device *dev);
    const char *(*tune_cache_reload)(netcl_device *dev);
    /* whether the tensor-core kernels serve on dev, and why */
    const char *(*tensor_cores)(netcl_device *dev);
} nc_be_runtime;

/* ---- op families ----------------------------------------------------------
 * Every kernel entry receives descriptors already checked by the ops
 * layer: shapes agree (broadcast inputs have stride 0), dtypes are as
 * documented per entry, all on `dev`. */

/* A fused elementwise program (elementwise.fused): nodes in topological
 * order, each computing a value per element in the compute type from
 * earlier nodes. INPUT loads operand `input` (converted to the compute
 * type; bool and integers as 0/1 and their values); SCALAR is p1; UNARY,
 * BINARY (arithmetic or comparison, a comparison giving 0 or 1), UNARY_GRAD
 * (args: g, x, y) and BINARY_GRAD (args: g, a, b; `which` operand) follow
 * the ops' formulas (base/elementwise_ops.h); WHERE is arg0 != 0 ? arg1 :
 * arg2. */
typedef enum nc_fuse_kind {
    NC_FUSE_INPUT, NC_FUSE_SCALAR, NC_FUSE_UNARY, NC_FUSE_BINARY, NC_FUSE_WHERE, NC_FUSE_UNARY_GRAD,
    NC_FUSE_BINARY_GRAD,
    NC_FUSE_ROUND       /* arg[0] rounded to the 16-bit float dtype `which`, as a store and load of it would */
} nc_fuse_kind;
#define NC_FUSE_MAX_NODES 64
#define NC_FUSE_MAX_OPERANDS NC_ITER_OPS   /* inputs and outputs together */
typedef struct nc_fuse_node {
    nc_fuse_kind kind;
    netcl_op op;
    int which;          /* BINARY_GRAD: 0 a, 1 b; ROUND: the netcl_dtype */
    int arg[3];         /* earlier nodes */
    int input;          /* INPUT: the operand */
    double p1, p2;      /* UNARY, UNARY_GRAD: the op's parameters; SCALAR: the value */
} nc_fuse_node;
/* outputs[k] stores node out_node[k]; every operand has the outputs'
 * shape (broadcast inputs with stride 0); outputs are float dtypes or bool,
 * never aliasing an input in another layout; compute is float32 or float64. */
typedef struct nc_fused {
    int nnodes, ninputs, noutputs;
    const nc_fuse_node *nodes;
    const nc_desc *const *inputs;
    const nc_desc *const *outputs;
    const int *out_node;
    netcl_dtype compute;
} nc_fused;

/* elementwise: copies, constants, unary and binary ops, where, fused chains */
typedef struct nc_be_elementwise {
    /* dst = cast(src); same shape; any dtypes; both strided (copy, contiguous, cast) */
    netcl_status (*copy)(netcl_device *dev, const nc_desc *dst, const nc_desc *src);
    /* dst = value (strided) */
    netcl_status (*fill)(netcl_device *dev, const nc_desc *dst, double value);
    /* dst[i] = start + i*step, dst contiguous 1-D */
    netcl_status (*range)(netcl_device *dev, const nc_desc *dst, double start, double step);
    /* out = op(a; p1, p2); out contiguous, same dtype as a (a float dtype
     * unless nc_op_int_ok(op), which the ops layer guarantees) */
    netcl_status (*unary)(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, double p1, double p2);
    /* gin = the gradient of a unary op's input from g (its output's), its
     * input x and output y, by the op's GRAD formula
     * (base/elementwise_ops.h); all four of one shape and one float dtype,
     * any strides; gin aliases none of the others. */
    netcl_status (*unary_grad)(netcl_device *dev, netcl_op op, const nc_desc *gin, const nc_desc *g, const nc_desc *x,
                               const nc_desc *y, double p1, double p2);
    /* out = the gradient of operand `which` (0: a, 1: b) of a binary
     * arithmetic op from g (the output's) and the operands a and b (NULL:
     * the scalar sa / sb), by the op's GRAD_A / GRAD_B formula
     * (base/elementwise_ops.h); out, g and the operands of out's shape (a
     * broadcast operand has stride 0) and one float dtype; out aliases none
     * of them. */
    netcl_status (*binary_grad)(netcl_device *dev, netcl_op op, int which, const nc_desc *out, const nc_desc *g,
                                const nc_desc *a, const nc_desc *b, double sa, double sb);
    /* out = a op b; a and b share one dtype, out has it too, or bool for
     * comparisons; b == NULL means the scalar `s` (reversed: s op a). */
    netcl_status (*binary)(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a, const nc_desc *b,
                           double s, int reversed);
    /* One pass of a fused elementwise program over its operands (see
     * nc_fused); may be NULL (no fusion: the ops run one by one). */
    netcl_status (*fused)(netcl_device *dev, const nc_fused *f);
    /* out = cond ? a : b elementwise: cond bool, a and b of out's dtype (a
     * NULL: the scalar sa; b NULL: sb), all of out's shape (broadcast inputs
     * have stride 0); out may not overlap the inputs. */
    netcl_status (*where)(netcl_device *dev, const nc_desc *out, const nc_desc *cond, const nc_desc *a,
                          const nc_desc *b, double sa, double sb);
} nc_be_elementwise;

/* reduce: reductions of the last dim */
typedef struct nc_be_reduce {
    /* Reduce the LAST dim of `a` (shape [..., R], any strides).
     * `out` is contiguous with shape [...] (a's dims minus the last).
     * SUM/MEAN/PROD/MAX/MIN: out dtype = a dtype (the ops layer casts first
     * where the result type differs, e.g. int sums in int64, means in float).
     * R may be 0 only for SUM (0) and PROD (1). ARGMAX/ARGMIN: out int64 (0-based). `idx` != NULL
     * (MAX/MIN only): also writes int64 indices of the extremum into idx
     * (contiguous with out's shape, at its own offset). Ties pick the
     * first index; NaN wins max/min like PyTorch. */
    netcl_status (*run)(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *idx, const nc_desc *a);
} nc_be_reduce;

/* softmax: the row-wise softmax family */
typedef struct nc_be_softmax {
    /* Row-wise over contiguous a [rows, R] (R > 0): out = softmax(a) or, with
     * log, log_softmax(a); out contiguous, a's float dtype. */
    netcl_status (*forward)(netcl_device *dev, const nc_desc *out, const nc_desc *a, int log);
    /* Its backward from the forward output y and the gradient g (all
     * contiguous [rows, R], one dtype): gin = y (g - sum(g y)) for softmax,
     * g - exp(y) sum(g) for log_softmax. */
    netcl_status (*backward)(netcl_device *dev, const nc_desc *gin, const nc_desc *g, const nc_desc *y, int log);
} nc_be_softmax;

/* linalg: matrix products */
typedef struct nc_be_linalg {
    /* out[b] = epi(a[b] @ w[b]): a [B,M,K], w [B,K,N], out [B,M,N]
     * contiguous; a and w any strides (stride 0 on B for broadcast); one
     * float dtype; the fused epilogue of nc_gemm_epi (never NULL); c and
     * bias have out's dtype and never alias out. */
    netcl_status (*gemm)(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w,
                         const nc_gemm_epi *epi);
    /* Which operands a product of a [1,M,K] and w [B,K,N] as given should
     * copy first, the copies' time included (NC_GEMM_COPY_A: a to
     * m-contiguous; NC_GEMM_COPY_W: w, B = 1, to n-contiguous; NC_GEMM_PAD_A
     * / _W: in its own layout, B = 1, its rows on 128-byte lines); fp32 the
     * precision of float32 products; may be NULL (never). */
    int (*gemm_copies)(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32);
    /* Split-K (ops/linalg.c): the number of K slices a float32 product of
     * a [1,M,K] and w [1,K,N] in precision fp32 runs as (1: none; 0: the
     * generic rule decides); and the sum of their partial products part
     * [S,M,N] (contiguous) into out [1,M,N] through the epilogue. Either
     * may be NULL: then the generic rule, and a plain sum (no epilogue, so
     * products with one are not split). */
    int (*split)(netcl_device *dev, const nc_desc *a, const nc_desc *w, int fp32);
    netcl_status (*split_sum)(netcl_device *dev, const nc_desc *out, const nc_desc *part, const nc_gemm_epi *epi);
    /* Split-K in one call where the backend can (may be NULL): out [1,M,N]
     * = epi(a [1,M,K] @ w [1,K,N]) over S slices of K, the first S-1
     * nc_gemm_slice_len(K, S) long and the last the rest, their partial
     * products added in slice order. NETCL_ERR_UNSUPPORTED, with nothing
     * launched and no message, where it cannot: the ops layer then runs
     * the slices and split_sum. */
    netcl_status (*split_run)(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *w,
                              const nc_gemm_epi *epi, int S);
} nc_be_linalg;

/* conv: im2col/col2im (unfold/fold) and the convolution strategies' kernels */
typedef struct nc_be_conv {
    /* cols [N, C*kh*kw, oh*ow] <- x [N, C, H, W] (zero padding) and its
     * adjoint, x = sum of the cols entries that read each pixel; x
     * contiguous, cols with any non-negative strides for its first two dims
     * and unit stride along the last (a [K, N, L] layout read or written
     * in place); one float dtype, never aliasing. */
    netcl_status (*im2col)(netcl_device *dev, const nc_desc *cols, const nc_desc *x, const nc_conv_geom *g);
    netcl_status (*col2im)(netcl_device *dev, const nc_desc *x, const nc_desc *cols, const nc_conv_geom *g);
    /* One kernel of the direct / Winograd / depthwise strategies (see
     * nc_conv_kernel): all operands contiguous, one float dtype, the output
     * written whole, never aliasing the inputs. */
    netcl_status (*kernel)(netcl_device *dev, nc_conv_kernel k, const nc_conv_args *g, const nc_desc *out,
                           const nc_desc *a, const nc_desc *b, int64_t p0, int64_t p1);
    /* Implicit-GEMM convolution pass: the input (or dy) is gathered tile by
     * tile, never unfolded. forward: out y <- a x, b w (epi may be NULL);
     * data: out dx <- a dy, b w; weight: out [kslices, O, C/G*KH*KW] <- a x,
     * b dy, the K range (images x output pixels) cut into kslices partial
     * sums that the caller adds. All contiguous, one float dtype. */
    netcl_status (*implicit_gemm)(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                                  const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices);
    /* Whether implicit_gemm runs this pass at about a plain product's
     * speed (no unfold to pay for, so the planner prefers it to im2col): 0
     * no, else 1, or for backward-weight the kslices it wants; may be NULL
     * (never). */
    int64_t (*implicit_gemm_fast)(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);
    /* Tiled direct convolution: out y <- x, w of geometry g through
     * local-memory tiles of input and weights, epi fused (may be NULL).
     * flip: w is the [C, O, KH, KW] weight of a stride-1 convolution whose
     * backward-data pass g is, read as w'[o, c, kh, kw] = w[c, o, KH-1-kh,
     * KW-1-kw] (groups 1). All contiguous, one float dtype. */
    netcl_status (*tiled)(netcl_device *dev, const nc_conv_args *g, const nc_desc *out, const nc_desc *x,
                          const nc_desc *w, const nc_conv_epi *epi, int flip);
    /* Tiled backward-weight of a small weight (nc_tw_fits):
     * parts [S, O, C/G, KH, KW] <- x, dy; part s sums images [s*per,
     * min(N, (s+1)*per)), the caller adds the parts. All contiguous, one
     * float dtype. */
    netcl_status (*tiled_weight)(netcl_device *dev, const nc_conv_args *g, const nc_desc *parts, const nc_desc *x,
                                 const nc_desc *dy, int64_t per);
} nc_be_conv;

/* pool: 2-D pooling */
typedef struct nc_be_pool {
    /* out [N, C, oh, ow] <- x [N, C, H, W]; idx (int64, max only) the
     * winner's h*W + w; and the gradient gin [N, C, H, W] from gout (and
     * idx). All contiguous, one float dtype. */
    netcl_status (*forward)(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *x,
                            const nc_pool_geom *g);
    netcl_status (*backward)(netcl_device *dev, const nc_desc *gin, const nc_desc *gout, const nc_desc *idx,
                             const nc_pool_geom *g);
} nc_be_pool;

/* norm: fused batch normalisation */
typedef struct nc_be_norm {
    /* One kernel of fused batch normalisation (see nc_batch_norm_kernel). */
    netcl_status (*batch_norm)(netcl_device *dev, nc_batch_norm_kernel k, const nc_batch_norm_args *a);
} nc_be_norm;

/* loss: the class losses */
typedef struct nc_be_loss {
    /* Class losses over contiguous x [rows, C] with contiguous int64 targets
     * t [rows] (class t - base; t == ignore: a row of 0) and optional class
     * weights w [C] in x's dtype: loss [rows] and wsum [rows] (the target's
     * weight), cross-entropy with label smoothing eps on logits, or (logp)
     * nll of log-probabilities; the backward writes gx [rows, C] from g
     * [rows]. All outputs contiguous, aliasing no input; a target out of
     * range fails on the cpu and, on devices, gives NaN rows and an error
     * at the next blocking read (as an out-of-range index does). */
    netcl_status (*class_loss)(netcl_device *dev, const nc_desc *loss, const nc_desc *wsum, const nc_desc *x,
                               const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore, double eps);
    netcl_status (*class_loss_backward)(netcl_device *dev, const nc_desc *gx, const nc_desc *g, const nc_desc *x,
                                        const nc_desc *t, const nc_desc *w, int logp, int64_t base, int64_t ignore,
                                        double eps);
} nc_be_loss;

/* index: gather, scatter, sort, scan
 * Index descriptors are int64 or int32, any strides (stride 0 allowed);
 * every index has `base` (0 or 1) subtracted. An index outside [0, size)
 * is never used to address memory: cpu fails with NETCL_ERR_ARGUMENT
 * (nc_index_error below); OpenCL skips the element and reports it through
 * the device's error word (src/backend/cl/index.c) at the next blocking
 * read or synchronize. */
typedef struct nc_be_index {
    /* gather: out[p] = a[p with coordinate dim replaced by idx[p] - base].
     * out contiguous with idx's shape; a any strides, same ndim and dtype as
     * out (its sizes other than dim may exceed idx's); out never aliases a. */
    netcl_status (*gather)(netcl_device *dev, const nc_desc *out, const nc_desc *a, const nc_desc *idx, int dim,
                           int64_t base);
    /* scatter: for every p of idx's shape, out[p with coordinate dim replaced
     * by idx[p] - base] = src[p] (accumulate: +=), written in place. out any
     * strides without overlapping elements; src has idx's shape and out's
     * dtype, any strides (stride 0 for a scalar), never aliases out.
     * accumulate only for float32, float64, int32, int64 (the ops layer
     * widens the others); devices may refuse 64-bit dtypes without
     * cl_khr_int64_base_atomics (NETCL_ERR_UNSUPPORTED). Duplicates without
     * accumulate: the last in index order wins on cpu, unspecified elsewhere. */
    netcl_status (*scatter)(netcl_device *dev, const nc_desc *out, const nc_desc *idx, const nc_desc *src, int dim,
                            int64_t base, int accumulate);
    /* sort: sorts the LAST dim of a (shape [..., R], any strides, any dtype)
     * into values (a's dtype) and indices (int64, 0-based), both any strides
     * with a's shape. Ascending or descending by value, ties by index (so
     * every backend gives the same result), NaN greater than any number. */
    netcl_status (*sort)(netcl_device *dev, const nc_desc *values, const nc_desc *indices, const nc_desc *a,
                         int descending);
    /* scan: inclusive prefix SUM or PROD along the LAST dim of a (any strides,
     * including negative ones, which the ops layer uses for reverse scans);
     * out has a's shape and dtype (any strides, never aliasing a). Floats
     * accumulate in double on cpu (double where the device has it on OpenCL);
     * integers in int64 with wrap-around. */
    netcl_status (*scan)(netcl_device *dev, netcl_op op, const nc_desc *out, const nc_desc *a);
} nc_be_index;

/* random: draws from the Philox stream */
typedef struct nc_be_random {
    /* out contiguous; element i is nc_rng_value(kind, seed, offset, i, p1,
     * p2) (base.h's stream rule), as the C reference computes it. */
    netcl_status (*draw)(netcl_device *dev, const nc_desc *out, netcl_rng_kind kind, uint64_t seed, uint64_t offset,
                         double p1, double p2);
} nc_be_random;

/* optim: fused optimizer updates */
typedef struct nc_be_optim {
    /* One update (src/ops/optim.c checks the operands): p, g and each
     * non-NULL s[0..2] are contiguous 1-D descriptors of one float dtype
     * and p->sizes[0] elements; s[k] is NULL where netcl_optim_step
     * (netcl.h) says the kind and flags leave it unused. hyper holds
     * NETCL_OPTIM_NHYPER values indexed by netcl_optim_hyper. */
    netcl_status (*step)(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                         const nc_desc *const *s, const double *hyper);
    /* Mixed precision's unscale: g *= inv[0] over a contiguous 1-D float
     * buffer, and found[0] = 1 when any element of g was not finite (else
     * found is left alone); inv and found are float32 single elements. */
    netcl_status (*unscale)(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found);
} nc_be_optim;

/* augment: per-sample data augmentation */
typedef struct nc_be_augment {
    /* one launch (src/data/augment.c checks the arguments): see nc_augment */
    netcl_status (*run)(netcl_device *dev, const struct nc_augment *a);
} nc_be_augment;

/* ---- a user's own kernels ---------------------------------------------------
 * Kernels compiled from OpenCL C a program supplies (netcl_kernel_*). One
 * launch argument: a buffer at an element offset (two kernel arguments:
 * the buffer, then the offset as a long) or a scalar of the given kind. */
typedef struct nc_user_arg {
    netcl_kernel_arg kind;
    void *buf;            /* NETCL_ARG_TENSOR */
    int64_t offset;       /* NETCL_ARG_TENSOR, in elements */
    double value;         /* scalars */
} nc_user_arg;

/* Every entry may be NULL: the backend runs no user kernels. */
typedef struct nc_be_user {
    /* compiles `source` (cached like netcl's own programs) and takes kernel `name` */
    netcl_status (*create)(netcl_device *dev, const char *source, const char *name, const char *options, void **kernel);
    netcl_status (*launch)(netcl_device *dev, void *kernel, int nargs, const nc_user_arg *args, int ndim,
                           const int64_t *global, const int64_t *local);
    void (*release)(netcl_device *dev, void *kernel);
} nc_be_user;

typedef struct nc_backend {
    const char *name;
    nc_be_memory mem;
    nc_be_runtime runtime;
    nc_be_elementwise elementwise;
    nc_be_reduce reduce;
    nc_be_softmax softmax;
    nc_be_linalg linalg;
    nc_be_conv conv;
    nc_be_pool pool;
    nc_be_norm norm;
    nc_be_loss loss;
    nc_be_index index;
    nc_be_random random;
    nc_be_optim optim;
    nc_be_augment augment;
    nc_be_user user;
} nc_backend;

/* One augmentation launch. x [N,C,H,W] contiguous, float32 or uint8; out
 * contiguous, same dtype: [N,C,oh,ow] for CROP, x's shape otherwise (never
 * aliasing x). params: host floats [N, nparams] (see netcl_augment_kind). */
typedef struct nc_augment {
    netcl_augment_kind kind;
    const nc_desc *out, *x;
    const float *params;
    int nparams;
    int64_t pad;       /* CROP: padding on every side */
    int reflect;       /* CROP: 1 reflect, 0 constant `value` */
    double value;
} nc_augment;

typedef struct nc_pool nc_pool;
/* A device as the backends and the registry see it (src/core/device.c). */
struct netcl_device {
    int index;                 /* position in the device list */
    char name[32];             /* "cpu", "opencl:N" */
    netcl_device_type type;
    const nc_backend *backend;
    void *impl;                /* backend-private state */
    char hw_name[128], vendor[128], driver[128], platform[128];
    int compute_units;
    int64_t global_mem, local_mem, max_work_group;
    int has_fp16, has_fp64;
    int compute_capability;
    nc_pool *pool;
    int capturing;             /* a capture records this device's kernels (src/jit/): host reads and uploads refuse */
};

/* ---- discovery ---------------------------------------------------------------
 * The registry (src/core/device.c) asks each backend once for its devices:
 * the backend fills up to max zeroed records (type, backend, impl and the
 * profile; the registry sets index, name and pool) and returns how many. */
int nc_cpu_discover(netcl_device *out, int max);
int nc_opencl_discover(netcl_device *out, int max);   /* 0 when no ICD loader is found */
/* The cpu backend's BLAS, for netcl_cpu_blas (e.g. "OpenBLAS 0.3.21"). */
const char *nc_cpu_blas_name(void);

/* ---- shared rules (backend/shared.c) -------------------------------------- */
/* 1 when the activation can be fused by every backend's gemm. */
int nc_gemm_act_ok(int act);
/* The length of each of S slices of K (multiples of 8; the rest, K - S
 * times it, is one more product) */
int64_t nc_gemm_slice_len(int64_t K, int S);
/* d = a [1, rows, cols] matrix in buf, row-major or (trans) column-major */
void nc_matrix_desc(nc_desc *d, void *buf, netcl_dtype dt, int64_t rows, int64_t cols, int trans);

/* The message of an out-of-range index: `value` as the caller gave it
 * (base included), `dim` 0-based, `where` the operand ("float32[3,10] on
 * cpu") and `tail` an addition (may be ""). */
static inline netcl_status nc_index_error(const char *op, int64_t value, int64_t base, int dim, int64_t size,
                                          const char *where, const char *tail)
{
    if (base == 1)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "%s: index %lld out of range for dim %d (size %lld) of %s (indices and dims are 1-based%s)",
                       op, (long long)value, dim + 1, (long long)size, where, tail);
    return nc_fail(NETCL_ERR_ARGUMENT, "%s: index %lld out of range for dim %d (size %lld) of %s (0-based%s)",
                   op, (long long)value, dim, (long long)size, where, tail);
}

/* "float32[3,10] on cpu" for a descriptor */
static inline const char *nc_desc_str(char *buf, size_t len, const nc_desc *d, const netcl_device *dev)
{
    snprintf(buf, len, "%s%s on %s", netcl_dtype_name(d->dtype), nc_shape_str(d->ndim, d->sizes), dev->name);
    return buf;
}

#endif /* NETCL_BACKEND_H */
