/* optable.c — the op tables. nc_op_rules has one row per recorded node
 * kind (nc_rule): its name and its backward rule; the engine dispatches
 * every backward through it. The public table lists every op netcl offers
 * as Lua spells it: its C entry point, the node kind its backward runs (or
 * "composite": built from recorded ops, so its backward comes free; or
 * "-": not differentiable) and its family, which names its files in every
 * layer (docs/architecture.md, "Where an op lives"). The test runner reads
 * it through netcl_op_table_entry and fails for any op that has no
 * cpu-vs-device test, or is differentiable and has no gradient check. */
#include "autograd/autograd.h"
#include <stdio.h>

/* Slot by slot: a new node kind raises NC_RULE_COUNT, which fails the
 * assertion until its row is here (and the spec checks no slot is empty). */
_Static_assert(NC_RULE_COUNT == 29, "a new node kind needs its row in nc_op_rules: then raise this count");
const nc_op_rule nc_op_rules[NC_RULE_COUNT] = {
    [NC_RULE_UNARY] = {"unary", nc_rule_unary},
    [NC_RULE_BINARY] = {"binary", nc_rule_binary},
    [NC_RULE_BINARY_SCALAR] = {"binary_scalar", nc_rule_binary_scalar},
    [NC_RULE_WHERE] = {"where", nc_rule_where},
    [NC_RULE_REDUCE] = {"reduce", nc_rule_reduce},
    [NC_RULE_REDUCE_INDEX] = {"reduce_index", nc_rule_reduce_index},
    [NC_RULE_MATMUL] = {"matmul", nc_rule_matmul},
    [NC_RULE_RESHAPE] = {"reshape", nc_rule_reshape},
    [NC_RULE_TRANSPOSE] = {"transpose", nc_rule_transpose},
    [NC_RULE_PERMUTE] = {"permute", nc_rule_permute},
    [NC_RULE_EXPAND] = {"expand", nc_rule_expand},
    [NC_RULE_SLICE] = {"slice", nc_rule_slice},
    [NC_RULE_SELECT] = {"select", nc_rule_select},
    [NC_RULE_CAST] = {"cast", nc_rule_cast},
    [NC_RULE_TO_DEVICE] = {"to_device", nc_rule_to_device},
    [NC_RULE_PAD] = {"pad", nc_rule_pad},
    [NC_RULE_SOFTMAX] = {"softmax", nc_rule_softmax},
    [NC_RULE_UNFOLD] = {"unfold", nc_rule_unfold},
    [NC_RULE_FOLD] = {"fold", nc_rule_fold},
    [NC_RULE_CONV2D] = {"conv2d", nc_rule_conv2d},
    [NC_RULE_POOL] = {"pool", nc_rule_pool},
    [NC_RULE_BATCH_NORM] = {"batch_norm", nc_rule_batch_norm},
    [NC_RULE_CLASS_LOSS] = {"class_loss", nc_rule_class_loss},
    [NC_RULE_CAT] = {"cat", nc_rule_cat},
    [NC_RULE_GATHER] = {"gather", nc_rule_gather},
    [NC_RULE_SCATTER] = {"scatter", nc_rule_scatter},
    [NC_RULE_SORT] = {"sort", nc_rule_sort},
    [NC_RULE_SCAN] = {"scan", nc_rule_scan},
    [NC_RULE_CUSTOM] = {"custom", nc_rule_custom},
};

/* the public entry point, whatever its signature (named, never called here) */
typedef void (*nc_entry)(void);
enum { OP_COMPOSITE = -1, OP_NOT_DIFF = -2 };

typedef struct nc_opdef {
    const char *name;      /* as Lua spells it */
    nc_entry forward;      /* the public C entry point */
    const char *forward_name;
    int rule;              /* an nc_rule, OP_COMPOSITE or OP_NOT_DIFF */
    const char *family;
} nc_opdef;

#define OP(n, f, r, fam) {n, (nc_entry)(f), #f, r, fam}
#define UN(n) OP(n, netcl_unary, NC_RULE_UNARY, "elementwise")
#define BIN(n) OP(n, netcl_binary, NC_RULE_BINARY, "elementwise")
#define CMP(n) OP(n, netcl_binary, OP_NOT_DIFF, "elementwise")
#define VIEW(n, f, r) OP(n, f, r, "views")

static const nc_opdef table[] = {
    /* elementwise */
    UN("neg"), UN("abs"), UN("sign"), UN("reciprocal"), UN("square"), UN("sqrt"), UN("rsqrt"), UN("exp"),
    UN("expm1"), UN("log"), UN("log1p"), UN("log2"), UN("sin"), UN("cos"), UN("tan"), UN("tanh"), UN("sigmoid"),
    UN("relu"), UN("relu6"), UN("leaky_relu"), UN("elu"), UN("gelu"), UN("silu"), UN("softplus"), UN("hardtanh"),
    UN("clamp"), UN("floor"), UN("ceil"), UN("round"), UN("trunc"), UN("erf"),
    BIN("add"), BIN("sub"), BIN("mul"), BIN("div"), BIN("pow"), BIN("maximum"), BIN("minimum"),
    CMP("eq"), CMP("ne"), CMP("lt"), CMP("le"), CMP("gt"), CMP("ge"), BIN("fmod"), BIN("atan2"),
    CMP("logical_and"), CMP("logical_or"), CMP("logical_xor"),
    /* reductions */
    OP("sum", netcl_reduce, NC_RULE_REDUCE, "reduce"),
    OP("mean", netcl_reduce, NC_RULE_REDUCE, "reduce"),
    OP("prod", netcl_reduce, NC_RULE_REDUCE, "reduce"),
    OP("max", netcl_reduce_with_index, NC_RULE_REDUCE_INDEX, "reduce"),
    OP("min", netcl_reduce_with_index, NC_RULE_REDUCE_INDEX, "reduce"),
    OP("argmax", netcl_reduce, OP_NOT_DIFF, "reduce"),
    OP("argmin", netcl_reduce, OP_NOT_DIFF, "reduce"),
    /* matrix products */
    OP("matmul", netcl_matmul, NC_RULE_MATMUL, "linalg"),
    /* views and copies */
    VIEW("view", netcl_tensor_view, NC_RULE_RESHAPE), VIEW("reshape", netcl_tensor_reshape, NC_RULE_RESHAPE),
    VIEW("transpose", netcl_tensor_transpose, NC_RULE_TRANSPOSE), VIEW("permute", netcl_tensor_permute, NC_RULE_PERMUTE),
    VIEW("expand", netcl_tensor_expand, NC_RULE_EXPAND), VIEW("narrow", netcl_tensor_narrow, NC_RULE_SLICE),
    VIEW("select", netcl_tensor_select, NC_RULE_SELECT), VIEW("slice", netcl_tensor_slice, NC_RULE_SLICE),
    VIEW("squeeze", netcl_tensor_squeeze, NC_RULE_RESHAPE), VIEW("unsqueeze", netcl_tensor_unsqueeze, NC_RULE_RESHAPE),
    OP("contiguous", netcl_tensor_contiguous, NC_RULE_RESHAPE, "copy"),
    OP("cast", netcl_tensor_cast, NC_RULE_CAST, "copy"),
    OP("to", netcl_tensor_to_device, NC_RULE_TO_DEVICE, "copy"),
    OP("pad", netcl_pad, NC_RULE_PAD, "copy"),
    /* where, lerp, softmax */
    OP("where", netcl_where, NC_RULE_WHERE, "elementwise"),
    OP("lerp", netcl_lerp, OP_COMPOSITE, "elementwise"),
    OP("isnan", netcl_isnan, OP_NOT_DIFF, "elementwise"),
    OP("isinf", netcl_isinf, OP_NOT_DIFF, "elementwise"),
    OP("isfinite", netcl_isfinite, OP_NOT_DIFF, "elementwise"),
    OP("nan_to_num", netcl_nan_to_num, OP_COMPOSITE, "elementwise"),
    OP("softmax", netcl_softmax, NC_RULE_SOFTMAX, "softmax"),
    OP("log_softmax", netcl_softmax, NC_RULE_SOFTMAX, "softmax"),
    /* convolutions, pooling, resampling */
    OP("unfold", netcl_unfold, NC_RULE_UNFOLD, "conv"),
    OP("fold", netcl_fold, NC_RULE_FOLD, "conv"),
    OP("max_pool2d", netcl_max_pool2d, NC_RULE_POOL, "pool"),
    OP("avg_pool2d", netcl_avg_pool2d, NC_RULE_POOL, "pool"),
    OP("adaptive_avg_pool2d", netcl_adaptive_avg_pool2d, NC_RULE_POOL, "pool"),
    OP("conv2d", netcl_conv2d, NC_RULE_CONV2D, "conv"),
    OP("conv1d", netcl_conv1d, OP_COMPOSITE, "conv"),
    OP("interpolate", netcl_interpolate, OP_COMPOSITE, "interpolate"),
    OP("conv_transpose2d", netcl_conv_transpose2d, NC_RULE_CONV2D, "conv"),
    /* normalisation, dropout, losses */
    OP("batch_norm", netcl_batch_norm, NC_RULE_BATCH_NORM, "norm"),
    OP("layer_norm", netcl_layer_norm, OP_COMPOSITE, "norm"),
    OP("group_norm", netcl_group_norm, OP_COMPOSITE, "norm"),
    OP("dropout", netcl_dropout, OP_COMPOSITE, "norm"),
    OP("mse_loss", netcl_mse_loss, OP_COMPOSITE, "loss"),
    OP("l1_loss", netcl_l1_loss, OP_COMPOSITE, "loss"),
    OP("smooth_l1_loss", netcl_smooth_l1_loss, OP_COMPOSITE, "loss"),
    OP("huber_loss", netcl_huber_loss, OP_COMPOSITE, "loss"),
    OP("binary_cross_entropy", netcl_binary_cross_entropy, OP_COMPOSITE, "loss"),
    OP("binary_cross_entropy_with_logits", netcl_binary_cross_entropy_with_logits, OP_COMPOSITE, "loss"),
    OP("kl_div", netcl_kl_div, OP_COMPOSITE, "loss"),
    OP("class_loss", netcl_class_loss, NC_RULE_CLASS_LOSS, "loss"),
    OP("cross_entropy", netcl_cross_entropy, OP_COMPOSITE, "loss"),
    OP("nll_loss", netcl_nll_loss, OP_COMPOSITE, "loss"),
    /* composite reductions and matrix products */
    OP("reduce_dims", netcl_reduce_dims, OP_COMPOSITE, "reduce"),
    OP("var", netcl_var, OP_COMPOSITE, "reduce"),
    OP("std", netcl_std, OP_COMPOSITE, "reduce"),
    OP("norm", netcl_norm, OP_COMPOSITE, "reduce"),
    OP("logsumexp", netcl_logsumexp, OP_COMPOSITE, "reduce"),
    OP("any", netcl_any, OP_NOT_DIFF, "reduce"),
    OP("all", netcl_all, OP_NOT_DIFF, "reduce"),
    OP("mm", netcl_mm, OP_COMPOSITE, "linalg"),
    OP("bmm", netcl_bmm, OP_COMPOSITE, "linalg"),
    OP("addmm", netcl_addmm, OP_COMPOSITE, "linalg"),
    OP("linear", netcl_linear, OP_COMPOSITE, "linalg"),
    OP("gemm", netcl_gemm, OP_COMPOSITE, "linalg"),
    OP("outer", netcl_outer, OP_COMPOSITE, "linalg"),
    OP("dot", netcl_dot, OP_COMPOSITE, "linalg"),
    /* indexing, sort, scan, random draws */
    OP("cat", netcl_cat, NC_RULE_CAT, "index"),
    OP("stack", netcl_stack, NC_RULE_CAT, "index"),
    OP("split", netcl_tensor_narrow, OP_COMPOSITE, "index"),
    OP("chunk", netcl_tensor_narrow, OP_COMPOSITE, "index"),
    OP("repeat", netcl_repeat, OP_COMPOSITE, "index"),
    OP("flip", netcl_flip, OP_COMPOSITE, "index"),
    OP("pad_reflect", netcl_pad_with, OP_COMPOSITE, "index"),
    OP("pad_replicate", netcl_pad_with, OP_COMPOSITE, "index"),
    OP("pad_circular", netcl_pad_with, OP_COMPOSITE, "index"),
    OP("gather", netcl_gather, NC_RULE_GATHER, "index"),
    OP("scatter", netcl_scatter, NC_RULE_SCATTER, "index"),
    OP("scatter_add", netcl_scatter, NC_RULE_SCATTER, "index"),
    OP("index_select", netcl_index_select, OP_COMPOSITE, "index"),
    OP("index_add", netcl_index_add, OP_COMPOSITE, "index"),
    OP("masked_fill", netcl_masked_fill, OP_COMPOSITE, "index"),
    OP("masked_select", netcl_masked_select, OP_COMPOSITE, "index"),
    OP("nonzero", netcl_nonzero, OP_NOT_DIFF, "index"),
    OP("one_hot", netcl_one_hot, OP_NOT_DIFF, "index"),
    OP("embedding", netcl_embedding, OP_COMPOSITE, "index"),
    OP("sort", netcl_sort, NC_RULE_SORT, "index"),
    OP("topk", netcl_topk, OP_COMPOSITE, "index"),
    OP("cumsum", netcl_cumsum, NC_RULE_SCAN, "index"),
    OP("cumprod", netcl_cumprod, NC_RULE_SCAN, "index"),
    OP("bernoulli", netcl_bernoulli, OP_NOT_DIFF, "random"),
    OP("randperm", netcl_randperm, OP_NOT_DIFF, "random"),
    OP("multinomial", netcl_multinomial, OP_NOT_DIFF, "random"),
    /* optimizer updates over flat buffers (not differentiable) */
    OP("optim_step", netcl_optim_step, OP_NOT_DIFF, "optim"),
};

int netcl_op_table_size(void) { return (int)(sizeof table / sizeof table[0]); }

const char *netcl_op_table_entry(int i, int *differentiable)
{
    static _Thread_local char buf[256];
    if (i < 0 || i >= netcl_op_table_size()) return NULL;
    const nc_opdef *d = &table[i];
    const char *bwd = d->rule == OP_COMPOSITE ? "composite" : d->rule == OP_NOT_DIFF ? "-"
                    : nc_op_rules[d->rule].backward && nc_op_rules[d->rule].name ? nc_op_rules[d->rule].name : "MISSING";
    if (differentiable) *differentiable = d->rule != OP_NOT_DIFF;
    snprintf(buf, sizeof buf, "%s %s %s %s", d->name, d->forward ? d->forward_name : "MISSING", bwd, d->family);
    return buf;
}
