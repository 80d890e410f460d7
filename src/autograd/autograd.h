/* autograd.h — the recorded graph: a node per differentiable op call with
 * edges to the nodes (or leaves) of its inputs, the tensors its backward
 * rule needs, and the rule itself. Rules live in rules.c, one per op kind,
 * next to nothing else; the engine (engine.c) only schedules them. */
#ifndef NETCL_AUTOGRAD_H
#define NETCL_AUTOGRAD_H

#include "ops/ops.h"

#define NC_NODE_SAVED 4

/* A registered gradient hook (hooks.c). */
typedef struct nc_hook {
    netcl_grad_hook_fn fn;
    void *ctx;
    int id;
    struct nc_hook *next;
} nc_hook;
void nc_hooks_free(nc_hook *h);
/* Tells core how a dying tensor releases its grad_fn and hooks; called
 * before either is first attached (engine.c). */
void nc_autograd_register(void);
/* Releases a node reference (engine.c). */
void nc_node_release(struct nc_node *n);
/* An in-place write autograd does not record (copy_, fill_, set_item, an
 * optimizer step): refused for a tensor that requires grad while grad
 * mode is on, as its gradient would be wrong. */
netcl_status nc_untracked_write_check(const netcl_tensor *t, const char *op);

/* One entry per recorded op kind; rules.c has the table. */
typedef enum nc_rule {
    NC_RULE_UNARY, NC_RULE_BINARY, NC_RULE_BINARY_SCALAR, NC_RULE_REDUCE, NC_RULE_REDUCE_INDEX,
    NC_RULE_MATMUL, NC_RULE_RESHAPE, NC_RULE_TRANSPOSE, NC_RULE_PERMUTE, NC_RULE_EXPAND,
    NC_RULE_SLICE, NC_RULE_SELECT, NC_RULE_CAST, NC_RULE_TO_DEVICE, NC_RULE_PAD,
    /* selection and nn families (rules_nn.c) */
    NC_RULE_WHERE, NC_RULE_SOFTMAX, NC_RULE_UNFOLD, NC_RULE_FOLD, NC_RULE_POOL, NC_RULE_CLASS_LOSS, NC_RULE_CONV2D, NC_RULE_BATCH_NORM,
    /* indexing, sort, scan (rules_index.c) */
    NC_RULE_CAT, NC_RULE_GATHER, NC_RULE_SCATTER, NC_RULE_SORT, NC_RULE_SCAN,
    NC_RULE_COUNT
} nc_rule;

/* Input i of a node: where its gradient goes (the producing node, or the
 * leaf to accumulate into) and the input's geometry, which the rule's
 * result must match. */
typedef struct nc_edge {
    struct nc_node *next;       /* producer of the input (a reference) */
    netcl_tensor *leaf;         /* or the leaf to accumulate into (a reference) */
    netcl_tensor *retained;     /* non-leaf input whose grad is kept (a reference) */
    netcl_dtype dtype;
    netcl_device *dev;
    int ndim;
    int64_t sizes[NC_MAX_DIMS];
} nc_edge;

typedef struct nc_node {
    atomic_int refcount;
    nc_rule rule;
    const char *name;                     /* op name for messages and grad_fn */
    netcl_tensor *saved[NC_NODE_SAVED];   /* graph-free aliases */
    int saved_version[NC_NODE_SAVED];
    double p[4];                          /* op parameters */
    int64_t ip[24];                       /* integer parameters (pool geometry needs 17) */
    int released;                         /* saved tensors freed by a backward */
    nc_hook *hooks;                       /* hooks registered on the output tensor */
    /* view nodes: the storage the view shares and its version when the view
     * was taken; an in-place write to it since makes backward refuse */
    nc_storage *view_storage;
    int view_version;
    /* backward scratch */
    int deps;
    uint64_t mark;
    netcl_tensor *grad_acc;
    int nin;
    nc_edge in[];                         /* nin entries */
} nc_node;

/* Backward rule: given the output gradient g, set gin[i] (new references)
 * for each input that needs a gradient (nc_input_needs_grad); others stay NULL. */
typedef netcl_status (*nc_backward_fn)(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
extern const nc_backward_fn nc_backward_rules[];

int nc_input_needs_grad(const nc_node *n, int i);
/* Any input requires grad while grad mode is on. */
int nc_should_record(int nin, netcl_tensor *const *ins);
nc_node *nc_node_new(nc_rule rule, const char *name, int nin, netcl_tensor *const *ins);
/* Saves an alias of t (no graph) and its storage version; slot k. */
netcl_status nc_node_save(nc_node *n, int k, netcl_tensor *t);
/* Returns the saved tensor k, checking that it was not modified in place. */
netcl_status nc_node_saved(nc_node *n, int k, netcl_tensor **t);
/* Makes `out` the output of n (takes the caller's node reference). */
void nc_node_attach(nc_node *n, netcl_tensor *out);

/* Grad mode guard for forward calls inside recorded ops and backward. */
int nc_grad_push_disabled(void);
void nc_grad_pop(int previous);

/* Shared by the rule files: gin = cast(sum_to_shape(g)) (consumes g), and
 * a comparison as a 0/1 float mask (b NULL: against the scalar s). */
netcl_status nc_rule_finish(nc_node *n, int i, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_mask(netcl_tensor **o, netcl_op cmp, netcl_tensor *a, netcl_tensor *b, double s, netcl_dtype dt);

/* The rules (rules.c: elementwise; rules_shape.c: the rest). */
netcl_status nc_rule_unary(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_binary(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_binary_scalar(nc_node *n, netcl_tensor *g, netcl_tensor **gin);

netcl_status nc_rule_where(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_softmax(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_unfold(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_fold(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_pool(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_class_loss(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_conv2d(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_batch_norm(nc_node *n, netcl_tensor *g, netcl_tensor **gin);

/* Runs the hooks on *g (may replace it); hooks.c. */
netcl_status nc_hooks_run(nc_hook *h, netcl_tensor **g, const char *what);
/* rules_index.c */
netcl_status nc_rule_cat(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_gather(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_scatter(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_sort(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_scan(nc_node *n, netcl_tensor *g, netcl_tensor **gin);
/* inplace.c: the in-place protocol for other families (api_index.c):
 * refuse targets that cannot take a recorded write; a takes r's values
 * and history (consumes r). */
netcl_status nc_inplace_check(const netcl_tensor *a, const char *op);
netcl_status nc_inplace_adopt(netcl_tensor *a, netcl_tensor *r);

/* Sums g over broadcast dims down to (ndim, sizes). */
netcl_status nc_sum_to_shape(netcl_tensor **out, netcl_tensor *g, int ndim, const int64_t *sizes);

#endif
