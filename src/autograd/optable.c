/* optable.c — the table of every op netcl offers: its name (as Lua spells
 * it), the C entry point that runs it, where its backward comes from (a
 * rule kind, "composite" when it is built from other recorded ops, "-"
 * when it is not differentiable) and its kernels (a kernels/<family>.cl
 * file, or "composite"). The test runner reads it through
 * netcl_op_table_entry and fails for any op that has no cpu-vs-device
 * test, or is differentiable and has no gradient check. */
#include "core/core.h"
#include <stdio.h>

typedef struct nc_opdef {
    const char *name, *forward, *backward, *kernels;
    int differentiable;
} nc_opdef;

#define UN(n) {n, "netcl_unary", "unary", "unary", 1}
#define BIN(n) {n, "netcl_binary", "binary", "binary", 1}
#define CMP(n) {n, "netcl_binary", "-", "binary", 0}
#define VIEW(n, f, r) {n, f, r, "none", 1}

static const nc_opdef table[] = {
    /* elementwise unary (kernels/unary.cl, rules_unary.c) */
    UN("neg"), UN("abs"), UN("sign"), UN("reciprocal"), UN("square"), UN("sqrt"), UN("rsqrt"), UN("exp"),
    UN("expm1"), UN("log"), UN("log1p"), UN("log2"), UN("sin"), UN("cos"), UN("tan"), UN("tanh"), UN("sigmoid"),
    UN("relu"), UN("relu6"), UN("leaky_relu"), UN("elu"), UN("gelu"), UN("silu"), UN("softplus"), UN("hardtanh"),
    UN("clamp"), UN("floor"), UN("ceil"), UN("round"), UN("trunc"), UN("erf"),
    /* elementwise binary (kernels/binary.cl, rules.c) */
    BIN("add"), BIN("sub"), BIN("mul"), BIN("div"), BIN("pow"), BIN("maximum"), BIN("minimum"),
    CMP("eq"), CMP("ne"), CMP("lt"), CMP("le"), CMP("gt"), CMP("ge"), BIN("fmod"), BIN("atan2"),
    CMP("logical_and"), CMP("logical_or"), CMP("logical_xor"),
    /* reductions (kernels/reduce.cl, rules_shape.c) */
    {"sum", "netcl_reduce", "reduce", "reduce", 1},
    {"mean", "netcl_reduce", "reduce", "reduce", 1},
    {"prod", "netcl_reduce", "reduce", "reduce", 1},
    {"max", "netcl_reduce_with_index", "reduce_index", "reduce", 1},
    {"min", "netcl_reduce_with_index", "reduce_index", "reduce", 1},
    {"argmax", "netcl_reduce", "-", "reduce", 0},
    {"argmin", "netcl_reduce", "-", "reduce", 0},
    /* linear algebra */
    {"matmul", "netcl_matmul", "matmul", "gemm", 1},
    /* views and copies */
    VIEW("view", "netcl_tensor_view", "reshape"), VIEW("reshape", "netcl_tensor_reshape", "reshape"),
    VIEW("transpose", "netcl_tensor_transpose", "transpose"), VIEW("permute", "netcl_tensor_permute", "permute"),
    VIEW("expand", "netcl_tensor_expand", "expand"), VIEW("narrow", "netcl_tensor_narrow", "slice"),
    VIEW("select", "netcl_tensor_select", "select"), VIEW("slice", "netcl_tensor_slice", "slice"),
    VIEW("squeeze", "netcl_tensor_squeeze", "reshape"), VIEW("unsqueeze", "netcl_tensor_unsqueeze", "reshape"),
    {"contiguous", "netcl_tensor_contiguous", "reshape", "copy", 1},
    {"cast", "netcl_tensor_cast", "cast", "copy", 1},
    {"to", "netcl_tensor_to_device", "to_device", "copy", 1},
    {"pad", "netcl_pad", "pad", "copy", 1},
    /* selection and nn functions (kernels/select.cl, rules_nn.c) */
    {"where", "netcl_where", "where", "select", 1},
    {"lerp", "netcl_lerp", "composite", "composite", 1},
    {"softmax", "netcl_softmax", "softmax", "select", 1},
    {"log_softmax", "netcl_softmax", "softmax", "select", 1},
    /* convolution windows and pooling (kernels/conv.cl, kernels/pool.cl, rules_nn.c) */
    {"unfold", "netcl_unfold", "unfold", "conv", 1},
    {"fold", "netcl_fold", "fold", "conv", 1},
    {"max_pool2d", "netcl_max_pool2d", "pool", "pool", 1},
    {"avg_pool2d", "netcl_avg_pool2d", "pool", "pool", 1},
    {"adaptive_avg_pool2d", "netcl_adaptive_avg_pool2d", "pool", "pool", 1},
    {"conv2d", "netcl_conv2d", "conv2d", "convdirect+conv+matmul", 1},
    {"conv1d", "netcl_conv1d", "composite", "composite", 1},
    {"interpolate", "netcl_interpolate", "composite", "composite", 1},
    {"conv_transpose2d", "netcl_conv_transpose2d", "conv2d", "convdirect+conv+matmul", 1},
    /* normalisation, dropout and elementwise losses (src/composite/norm.c, loss.c) */
    {"batch_norm", "netcl_batch_norm", "batch_norm", "bnorm", 1},
    {"layer_norm", "netcl_layer_norm", "composite", "composite", 1},
    {"group_norm", "netcl_group_norm", "composite", "composite", 1},
    {"dropout", "netcl_dropout", "composite", "composite", 1},
    {"mse_loss", "netcl_mse_loss", "composite", "composite", 1},
    {"l1_loss", "netcl_l1_loss", "composite", "composite", 1},
    {"smooth_l1_loss", "netcl_smooth_l1_loss", "composite", "composite", 1},
    {"huber_loss", "netcl_huber_loss", "composite", "composite", 1},
    {"binary_cross_entropy", "netcl_binary_cross_entropy", "composite", "composite", 1},
    {"binary_cross_entropy_with_logits", "netcl_binary_cross_entropy_with_logits", "composite", "composite", 1},
    {"kl_div", "netcl_kl_div", "composite", "composite", 1},
    /* class losses (kernels/loss.cl, rules_nn.c; reductions composite) */
    {"class_loss", "netcl_class_loss", "class_loss", "loss", 1},
    {"cross_entropy", "netcl_cross_entropy", "composite", "composite", 1},
    {"nll_loss", "netcl_nll_loss", "composite", "composite", 1},
    /* composite reductions and matrix products (src/composite/) */
    {"reduce_dims", "netcl_reduce_dims", "composite", "composite", 1},
    {"var", "netcl_var", "composite", "composite", 1},
    {"std", "netcl_std", "composite", "composite", 1},
    {"norm", "netcl_norm", "composite", "composite", 1},
    {"logsumexp", "netcl_logsumexp", "composite", "composite", 1},
    {"any", "netcl_any", "-", "composite", 0},
    {"all", "netcl_all", "-", "composite", 0},
    {"mm", "netcl_mm", "composite", "composite", 1},
    {"bmm", "netcl_bmm", "composite", "composite", 1},
    {"addmm", "netcl_addmm", "composite", "composite", 1},
    {"linear", "netcl_linear", "composite", "composite", 1},
    {"gemm", "netcl_gemm", "composite", "gemm", 1},
    {"outer", "netcl_outer", "composite", "composite", 1},
    {"dot", "netcl_dot", "composite", "composite", 1},
    /* indexing, shape, sort, scan, random (src/index.c, sort.c, sample.c,
     * composite/index.c, kernels/index.cl, sort.cl, scan.cl, rules_index.c;
     * "host": computed on the host and uploaded) */
    {"cat", "netcl_cat", "cat", "copy", 1},
    {"stack", "netcl_stack", "cat", "copy", 1},
    {"split", "netcl_tensor_narrow", "composite", "none", 1},
    {"chunk", "netcl_tensor_narrow", "composite", "none", 1},
    {"repeat", "netcl_repeat", "composite", "composite", 1},
    {"flip", "netcl_flip", "composite", "composite", 1},
    {"pad_reflect", "netcl_pad_with", "composite", "composite", 1},
    {"pad_replicate", "netcl_pad_with", "composite", "composite", 1},
    {"pad_circular", "netcl_pad_with", "composite", "composite", 1},
    {"gather", "netcl_gather", "gather", "index", 1},
    {"scatter", "netcl_scatter", "scatter", "index", 1},
    {"scatter_add", "netcl_scatter", "scatter", "index", 1},
    {"index_select", "netcl_index_select", "composite", "composite", 1},
    {"index_add", "netcl_index_add", "composite", "composite", 1},
    {"masked_fill", "netcl_masked_fill", "composite", "composite", 1},
    {"masked_select", "netcl_masked_select", "composite", "composite", 1},
    {"nonzero", "netcl_nonzero", "-", "host", 0},
    {"one_hot", "netcl_one_hot", "-", "composite", 0},
    {"embedding", "netcl_embedding", "composite", "composite", 1},
    {"sort", "netcl_sort", "sort", "sort", 1},
    {"topk", "netcl_topk", "composite", "composite", 1},
    {"cumsum", "netcl_cumsum", "scan", "scan", 1},
    {"cumprod", "netcl_cumprod", "scan", "scan", 1},
    {"bernoulli", "netcl_bernoulli", "-", "composite", 0},
    {"randperm", "netcl_randperm", "-", "host", 0},
    {"multinomial", "netcl_multinomial", "-", "host", 0},
    /* optimizer updates over flat buffers (kernels/optim.cl, src/optim.c; not differentiable) */
    {"optim_step", "netcl_optim_step", "-", "optim", 0},
};

int netcl_op_table_size(void) { return (int)(sizeof table / sizeof table[0]); }

const char *netcl_op_table_entry(int i, int *differentiable)
{
    static _Thread_local char buf[256];
    if (i < 0 || i >= netcl_op_table_size()) return NULL;
    const nc_opdef *d = &table[i];
    if (differentiable) *differentiable = d->differentiable;
    snprintf(buf, sizeof buf, "%s %s %s %s", d->name, d->forward, d->backward, d->kernels);
    return buf;
}
