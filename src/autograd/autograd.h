/* autograd.h — the recorded graph: a node per differentiable op call with
 * edges to the nodes (or leaves) of its inputs, the tensors its backward
 * rule needs, and the rule itself. Each family's public entry points and
 * rules live together in <family>*.c; optable.c maps node kinds to rules;
 * the engine (engine.c) records nodes and schedules the rules. */
#ifndef NETCL_AUTOGRAD_H
#define NETCL_AUTOGRAD_H

#include "ops/ops.h"

#define NC_NODE_SAVED 5

/* A registered gradient hook (hooks.c). */
typedef struct nc_hook {
    netcl_grad_hook_fn fn;
    void *ctx;
    int id;
    int post;   /* runs after a leaf's .grad took the gradient, on the leaf */
    struct nc_hook *next;
} nc_hook;
void nc_hooks_free(nc_hook *h);
/* The post-accumulate hooks of a leaf whose .grad has just taken a gradient. */
netcl_status nc_hooks_run_post(nc_hook *h, netcl_tensor *leaf);
/* Tells core how a dying tensor releases its grad_fn and hooks; called
 * before either is first attached (engine.c). */
void nc_autograd_register(void);
/* Releases a node reference (engine.c). */
void nc_node_release(struct nc_node *n);
/* An in-place write autograd does not record (copy_, fill_, set_item, an
 * optimizer step): refused for a tensor that requires grad while grad
 * mode is on, as its gradient would be wrong. */
netcl_status nc_untracked_write_check(const netcl_tensor *t, const char *op);

/* One entry per recorded node kind, grouped by family; optable.c has the
 * table of rules. */
typedef enum nc_rule {
    NC_RULE_UNARY, NC_RULE_BINARY, NC_RULE_BINARY_SCALAR, NC_RULE_WHERE,   /* elementwise.c */
    NC_RULE_REDUCE, NC_RULE_REDUCE_INDEX,                                  /* reduce.c */
    NC_RULE_MATMUL,                                                        /* linalg.c */
    NC_RULE_RESHAPE, NC_RULE_TRANSPOSE, NC_RULE_PERMUTE, NC_RULE_EXPAND,   /* views.c */
    NC_RULE_SLICE, NC_RULE_SELECT,
    NC_RULE_CAST, NC_RULE_TO_DEVICE, NC_RULE_PAD,                          /* copy.c */
    NC_RULE_SOFTMAX,                                                       /* softmax.c */
    NC_RULE_UNFOLD, NC_RULE_FOLD, NC_RULE_CONV2D,                          /* conv.c */
    NC_RULE_POOL,                                                          /* pool.c */
    NC_RULE_BATCH_NORM,                                                    /* norm.c */
    NC_RULE_CLASS_LOSS,                                                    /* loss.c */
    NC_RULE_CAT, NC_RULE_GATHER, NC_RULE_SCATTER, NC_RULE_SORT, NC_RULE_SCAN,   /* index.c */
    NC_RULE_CUSTOM,                                                        /* custom.c */
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
    nc_storage *view_storage;   /* let go with the saved tensors once backward ran */
    int view_version;
    int is_view;
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
/* The rule table: a row per node kind (optable.c). */
typedef struct nc_op_rule {
    const char *name;
    nc_backward_fn backward;
} nc_op_rule;
extern const nc_op_rule nc_op_rules[NC_RULE_COUNT];

int nc_input_needs_grad(const nc_node *n, int i);
/* Ops with a gradient: not comparisons, logical ops or argmax/argmin. */
static inline int nc_op_differentiable(netcl_op op)
{
    return !nc_op_is_predicate(op) && op != NETCL_OP_ARGMAX && op != NETCL_OP_ARGMIN;
}
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
/* Runs `call` with grad mode off (so helper ops inside a recorded op
 * record nothing); `st` receives its status. */
#define NC_FORWARD(st, call) do { int prev_ = nc_grad_push_disabled(); st = (call); nc_grad_pop(prev_); } while (0)
/* Recording helpers of the entry points (engine.c): a failure to record
 * releases n and *out and reports running out of host memory; a node of
 * `rule` with one input, no saved tensors and integer parameters ip. */
netcl_status nc_record_fail(netcl_tensor **out, nc_node *n, const char *op);
netcl_status nc_record_simple(netcl_tensor **out, nc_rule rule, const char *name, netcl_tensor *in, const int64_t *ip,
                              int nip);
/* The body of an entry point of a view-like op (one input t, result *out)
 * whose backward is `rule` with parameters ip (views.c, copy.c). */
#define NC_VIEW_OP(name, rule, call, ip, nip)                                                  \
    do {                                                                                    \
        netcl_status st_;                                                                   \
        NC_FORWARD(st_, call);                                                              \
        if (st_ != NETCL_OK || !nc_should_record(1, &t)) return st_;                        \
        return nc_record_simple(out, rule, name, t, ip, nip);                               \
    } while (0)

/* Shared by the rule files (expr.c): gin = cast(sum_to_shape(g)) (consumes
 * g), and a comparison as a 0/1 float mask (b NULL: against the scalar s). */
netcl_status nc_rule_finish(nc_node *n, int i, netcl_tensor *g, netcl_tensor **gin);
netcl_status nc_rule_mask(netcl_tensor **o, netcl_op cmp, netcl_tensor *a, netcl_tensor *b, double s, netcl_dtype dt);

/* The rules, by family file. */
#define NC_RULE_FN(name) netcl_status nc_rule_##name(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
NC_RULE_FN(unary); NC_RULE_FN(binary); NC_RULE_FN(binary_scalar); NC_RULE_FN(where);   /* elementwise.c */
NC_RULE_FN(reduce); NC_RULE_FN(reduce_index);                                         /* reduce.c */
NC_RULE_FN(matmul);                                                                   /* linalg.c */
NC_RULE_FN(reshape); NC_RULE_FN(transpose); NC_RULE_FN(permute); NC_RULE_FN(expand);  /* views.c */
NC_RULE_FN(slice); NC_RULE_FN(select);
NC_RULE_FN(cast); NC_RULE_FN(to_device); NC_RULE_FN(pad);                             /* copy.c */
NC_RULE_FN(softmax);                                                                  /* softmax.c */
NC_RULE_FN(unfold); NC_RULE_FN(fold); NC_RULE_FN(conv2d);                             /* conv.c */
NC_RULE_FN(pool);                                                                     /* pool.c */
NC_RULE_FN(batch_norm);                                                               /* norm.c */
NC_RULE_FN(class_loss);                                                               /* loss.c */
NC_RULE_FN(cat); NC_RULE_FN(gather); NC_RULE_FN(scatter); NC_RULE_FN(sort); NC_RULE_FN(scan);   /* index.c */
NC_RULE_FN(custom);                                                                   /* custom.c */
/* A custom node's context, handed back when the node dies (custom.c). */
void nc_custom_release(nc_node *n);

/* Runs the hooks on *g (may replace it); hooks.c. */
netcl_status nc_hooks_run(nc_hook *h, netcl_tensor **g, const char *what);
/* inplace.c: the in-place protocol for other families (index.c):
 * refuse targets that cannot take a recorded write; a takes r's values
 * and history (consumes r). */
netcl_status nc_inplace_check(const netcl_tensor *a, const char *op);
netcl_status nc_inplace_adopt(netcl_tensor *a, netcl_tensor *r);

/* Sums g over broadcast dims down to (ndim, sizes). */
/* t reduced by op over the dims marked in reduced (kept, size 1); each run
 * of adjacent marked dims that one stride walks is one reduction, so a
 * conv bias's gradient, [N, C, H, W] -> [1, C, 1, 1], takes two. Not
 * recorded. nc_reduce_run gives the first dim of the run that ends at
 * marked dim hi, and the shape of t with that run as one dim. */
int nc_reduce_run(const netcl_tensor *t, const int *reduced, int hi, int64_t *shape);
netcl_status nc_reduce_runs(netcl_tensor **out, netcl_op op, netcl_tensor *t, const int *reduced);
netcl_status nc_sum_to_shape(netcl_tensor **out, netcl_tensor *g, int ndim, const int64_t *sizes);

/* ---- autocast (autocast.c) ----------------------------------------------
 * Under an enabled autocast region, nc_autocast_args replaces the op's
 * tensor arguments t[0..n) (NULL entries allowed) by new references cast
 * per pol and returns 1 (*st: the casts' status); else returns 0 and
 * leaves t alone. NC_AUTOCAST calls the entry point again on the cast
 * arguments (ac[0], ac[1], ...) and returns its status. */
typedef enum { NC_AUTOCAST_LOWER, NC_AUTOCAST_FLOAT32 } nc_autocast_policy;
int nc_autocast_args(nc_autocast_policy pol, int n, netcl_tensor **t, netcl_status *st);
void nc_autocast_release(int n, netcl_tensor **t);
/* 1 for the unary ops autocast runs in float32 (exp, log, their kin, ...) */
int nc_autocast_float32_op(netcl_op op);
#define NC_AUTOCAST(pol, call, ...)                                                          \
    do {                                                                                     \
        netcl_tensor *ac[] = {__VA_ARGS__};                                                  \
        int nac_ = (int)(sizeof ac / sizeof *ac);                                            \
        netcl_status ast_;                                                                   \
        if (nc_autocast_args((pol), nac_, ac, &ast_)) {                                      \
            if (ast_ == NETCL_OK) ast_ = (call);                                             \
            nc_autocast_release(nac_, ac);                                                   \
            return ast_;                                                                     \
        }                                                                                    \
    } while (0)

#endif
