/* engine.c — graph recording and the backward pass. Backward counts, for
 * each node reachable from the root, how many consumers will send it a
 * gradient; a node runs once all have, and (without retain_graph) frees
 * its saved tensors right after, so memory stays bounded in a loop. */
#include "autograd/autograd.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local int grad_disabled;

int netcl_grad_enabled(void) { return !grad_disabled; }
void netcl_set_grad_enabled(int enabled) { grad_disabled = !enabled; }
int nc_grad_push_disabled(void) { int prev = grad_disabled; grad_disabled = 1; return prev; }
void nc_grad_pop(int previous) { grad_disabled = previous; }

int nc_should_record(int nin, netcl_tensor *const *ins)
{
    if (grad_disabled) return 0;
    for (int i = 0; i < nin; i++)
        if (ins[i] && ins[i]->requires_grad) return 1;
    return 0;
}

int nc_input_needs_grad(const nc_node *n, int i) { return n->in[i].next || n->in[i].leaf; }

nc_node *nc_node_new(nc_rule rule, const char *name, int nin, netcl_tensor *const *ins)
{
    nc_node *n = calloc(1, sizeof *n + (size_t)nin * sizeof(nc_edge));
    if (!n) return NULL;
    atomic_init(&n->refcount, 1);
    n->rule = rule;
    n->name = name;
    n->nin = nin;
    for (int i = 0; i < nin; i++) {
        netcl_tensor *t = ins[i];
        if (!t) continue;
        n->in[i].dtype = t->dtype;
        n->in[i].dev = nc_dev(t);
        n->in[i].ndim = t->ndim;
        memcpy(n->in[i].sizes, t->sizes, sizeof t->sizes);
        if (!t->requires_grad) continue;
        if (t->grad_fn) {
            n->in[i].next = t->grad_fn;
            atomic_fetch_add(&t->grad_fn->refcount, 1);
            if (t->retains_grad) { n->in[i].retained = t; netcl_tensor_retain(t); }
        } else {
            n->in[i].leaf = t;
            netcl_tensor_retain(t);
        }
    }
    return n;
}

static void release_saved(nc_node *n)
{
    for (int k = 0; k < NC_NODE_SAVED; k++) {
        if (!n->saved[k]) continue;
        nc_storage_saved(n->saved[k]->storage, -1);
        netcl_tensor_release(n->saved[k]);
        n->saved[k] = NULL;
    }
    nc_storage_release(n->view_storage);   /* a view node's base, kept for its version check */
    n->view_storage = NULL;
}

void nc_node_release(nc_node *n)
{
    /* iterative over long chains so a deep graph cannot overflow the stack */
    while (n && atomic_fetch_sub(&n->refcount, 1) == 1) {
        nc_node *chain = NULL;
        if (n->rule == NC_RULE_CUSTOM) nc_custom_release(n);
        release_saved(n);
        netcl_tensor_release(n->grad_acc);
        nc_hooks_free(n->hooks);
        for (int i = 0; i < n->nin; i++) {
            netcl_tensor_release(n->in[i].leaf);
            netcl_tensor_release(n->in[i].retained);
            if (n->in[i].next && !chain) chain = n->in[i].next;
            else nc_node_release(n->in[i].next);
        }
        free(n);
        n = chain;
    }
}

netcl_status nc_node_save(nc_node *n, int k, netcl_tensor *t)
{
    NC_TRY(nc_tensor_view_of(&n->saved[k], t, t->ndim, t->sizes, t->strides, t->offset));
    n->saved_version[k] = atomic_load(&t->storage->version);
    nc_storage_saved(t->storage, +1);
    return NETCL_OK;
}

netcl_status nc_node_saved(nc_node *n, int k, netcl_tensor **t)
{
    *t = n->saved[k];
    if (atomic_load(&(*t)->storage->version) != n->saved_version[k])
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "a tensor it saved (%s) was modified in place after the forward pass", nc_describe(*t));
    return NETCL_OK;
}

static void release_state(netcl_tensor *t)
{
    nc_node_release(t->grad_fn);
    nc_hooks_free(t->hooks);
}

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static void install(void) { nc_tensor_set_autograd_release(release_state); }
void nc_autograd_register(void) { pthread_once(&registered, install); }

void nc_node_attach(nc_node *n, netcl_tensor *out)
{
    nc_autograd_register();
    out->grad_fn = n;
    out->requires_grad = 1;
}

/* ---- tensor-level autograd state ------------------------------------------ */

netcl_status netcl_tensor_set_requires_grad(netcl_tensor *t, int flag)
{
    if (t->grad_fn)
        return nc_fail(NETCL_ERR_ARGUMENT, "requires_grad: %s is not a leaf (it comes from %s); use detach() first",
                       nc_describe(t), t->grad_fn->name);
    if (flag && !nc_dtype_is_float(t->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "requires_grad: only floating tensors can require grad, got %s", nc_describe(t));
    t->requires_grad = flag != 0;
    if (flag) nc_storage_set_owner(t->storage, NETCL_MEM_PARAMETERS);
    else if (t->storage->owner == NETCL_MEM_PARAMETERS) nc_storage_set_owner(t->storage, NETCL_MEM_OTHER);
    return NETCL_OK;
}

int netcl_tensor_requires_grad(const netcl_tensor *t) { return t->requires_grad; }
int netcl_tensor_is_leaf(const netcl_tensor *t) { return t->grad_fn == NULL; }
const char *netcl_tensor_grad_fn(const netcl_tensor *t) { return t->grad_fn ? t->grad_fn->name : NULL; }

netcl_status netcl_tensor_retain_grad(netcl_tensor *t)
{
    if (!t->requires_grad)
        return nc_fail(NETCL_ERR_ARGUMENT, "retain_grad: %s does not require grad", nc_describe(t));
    t->retains_grad = 1;
    return NETCL_OK;
}

netcl_tensor *netcl_tensor_grad(const netcl_tensor *t)
{
    if (t->grad) netcl_tensor_retain(t->grad);
    return t->grad;
}

netcl_status netcl_tensor_set_grad(netcl_tensor *t, netcl_tensor *grad)
{
    if (grad && (grad->dtype != t->dtype || nc_dev(grad) != nc_dev(t) || grad->ndim != t->ndim ||
                 memcmp(grad->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) != 0))
        return nc_fail(NETCL_ERR_ARGUMENT, "set_grad: gradient %s does not match tensor %s", nc_describe(grad), nc_describe(t));
    if (grad) {
        netcl_tensor_retain(grad);
        nc_storage_set_owner(grad->storage, NETCL_MEM_GRADIENTS);
    }
    netcl_tensor_release(t->grad);
    t->grad = grad;
    return NETCL_OK;
}

netcl_status netcl_tensor_set_(netcl_tensor *t, netcl_tensor *src)
{
    if (t->grad_fn)
        return nc_fail(NETCL_ERR_ARGUMENT, "set_: %s is not a leaf (it comes from %s)", nc_describe(t), t->grad_fn->name);
    if (t->dtype != src->dtype)
        return nc_fail(NETCL_ERR_ARGUMENT, "set_: dtypes differ: %s and %s", nc_describe(t), nc_describe(src));
    if (t->grad && (t->grad->ndim != src->ndim ||
                    memcmp(t->grad->sizes, src->sizes, sizeof(int64_t) * (size_t)src->ndim) != 0)) {
        netcl_tensor_release(t->grad);   /* a gradient of the old shape means nothing now */
        t->grad = NULL;
    }
    nc_storage_retain(src->storage);
    nc_storage_release(t->storage);
    t->storage = src->storage;
    if (t->requires_grad) nc_storage_set_owner(t->storage, NETCL_MEM_PARAMETERS);
    t->offset = src->offset;
    t->ndim = src->ndim;
    memcpy(t->sizes, src->sizes, sizeof t->sizes);
    memcpy(t->strides, src->strides, sizeof t->strides);
    return NETCL_OK;
}

netcl_status netcl_tensor_detach(netcl_tensor **out, netcl_tensor *t)
{
    return nc_tensor_view_of(out, t, t->ndim, t->sizes, t->strides, t->offset);
}

netcl_status nc_untracked_write_check(const netcl_tensor *t, const char *op)
{
    if (!grad_disabled && t->requires_grad)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "%s: %s requires grad; an in-place write would make its gradient wrong "
                       "(write under no_grad, or into a detached copy)", op, nc_describe(t));
    return NETCL_OK;
}

/* ---- recording helpers of the entry points ---------------------------------- */

netcl_status nc_record_fail(netcl_tensor **out, nc_node *n, const char *op)
{
    nc_node_release(n);
    netcl_tensor_release(*out);
    *out = NULL;
    return nc_fail(NETCL_ERR_OOM, "%s: out of host memory recording the graph", op);
}

/* One input, one output, no saved tensors: a node of `rule` with ip[]. */
netcl_status nc_record_simple(netcl_tensor **out, nc_rule rule, const char *name, netcl_tensor *in, const int64_t *ip,
                              int nip)
{
    nc_node *n = nc_node_new(rule, name, 1, &in);
    if (!n) return nc_record_fail(out, n, name);
    for (int i = 0; i < nip; i++) n->ip[i] = ip[i];
    if ((*out)->storage == in->storage) { /* a view: remember what it views (engine.c checks at backward) */
        n->view_storage = in->storage;
        n->is_view = 1;
        nc_storage_retain(in->storage);
        n->view_version = atomic_load(&in->storage->version);
    }
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* ---- backward ------------------------------------------------------------------ */

/* g repeats elements (a stride-0 dim): a broadcast view */
static int broadcast_view(const netcl_tensor *g)
{
    for (int d = 0; d < g->ndim; d++)
        if (g->strides[d] == 0 && g->sizes[d] > 1) return 1;
    return 0;
}

/* *acc += g (out of place; takes ownership of g). A first gradient that is
 * a broadcast view is made contiguous so it never becomes someone's .grad;
 * other views (a transposed product) pass as they are, for the rule that
 * takes them to read in place. */
static netcl_status accumulate(netcl_tensor **acc, netcl_tensor *g)
{
    if (*acc && g && (*acc)->storage == g->storage) {   /* never add a tensor into itself in place */
        netcl_tensor *c;
        netcl_status st = nc_fwd_tensor_cast(&c, g, g->dtype);
        netcl_tensor_release(g);
        if (st != NETCL_OK) return st;
        g = c;
    }
    netcl_tensor *sum;
    if (!*acc && !broadcast_view(g)) {
        *acc = g;
        return NETCL_OK;
    }
    if (!*acc) {
        netcl_status st = nc_fwd_tensor_contiguous(acc, g);
        netcl_tensor_release(g);
        return st;
    }
    netcl_status st = nc_fwd_binary(&sum, NETCL_OP_ADD, *acc, g);
    netcl_tensor_release(g);
    if (st != NETCL_OK) return st;
    netcl_tensor_release(*acc);
    *acc = sum;
    return NETCL_OK;
}

/* A retained non-leaf's .grad (takes ownership of g): its first gradient
 * is copied, since g also flows on through the graph and may be the
 * caller's own tensor (backward(grad) passes it in uncopied) or a view of
 * it; later ones are added out of place. */
static netcl_status accumulate_retained(netcl_tensor *t, netcl_tensor *g)
{
    if (t->grad) return accumulate(&t->grad, g);
    netcl_status st = nc_fwd_tensor_cast(&t->grad, g, g->dtype);
    netcl_tensor_release(g);
    return st;
}

typedef struct { nc_node **items; size_t n, cap; } node_list;

static int push(node_list *l, nc_node *n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        nc_node **items = realloc(l->items, cap * sizeof *items);
        if (!items) return 0;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = n;
    return 1;
}

/* Counts consumers of every node reachable from root (iterative DFS). */
static netcl_status count_deps(nc_node *root, uint64_t mark, node_list *all)
{
    node_list stack = {0};
    root->mark = mark;
    root->deps = 0;
    if (!push(&stack, root) || !push(all, root)) goto oom;
    while (stack.n) {
        nc_node *n = stack.items[--stack.n];
        for (int i = 0; i < n->nin; i++) {
            nc_node *m = n->in[i].next;
            if (!m) continue;
            if (m->mark != mark) {
                m->mark = mark;
                m->deps = 0;
                if (!push(&stack, m) || !push(all, m)) goto oom;
            }
            m->deps++;
        }
    }
    free(stack.items);
    return NETCL_OK;
oom:
    free(stack.items);
    return nc_fail(NETCL_ERR_OOM, "backward: out of host memory");
}

/* A leaf's .grad: the first gradient is stored (contiguous); later ones
 * are added in place, as PyTorch does, so a .grad that is a view into a
 * flat buffer (optimizers) stays one. */
static netcl_status accumulate_into_leaf(netcl_tensor *leaf, netcl_tensor *g)
{
    if (leaf->hooks) {
        netcl_status st = nc_hooks_run(leaf->hooks, &g, "a leaf tensor");
        if (st != NETCL_OK) { netcl_tensor_release(g); return st; }
    }
    netcl_tensor *cur = leaf->grad;
    if (!cur) {
        /* later gradients land in .grad in place, so it must not share its
         * storage with anything else (a rule may hand one tensor to two inputs) */
        if (atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 && netcl_tensor_is_contiguous(g)) {
            leaf->grad = g;
            nc_storage_set_owner(g->storage, NETCL_MEM_GRADIENTS);
            return NETCL_OK;
        }
        netcl_status st = nc_fwd_tensor_cast(&leaf->grad, g, g->dtype);
        netcl_tensor_release(g);
        if (st == NETCL_OK) nc_storage_set_owner(leaf->grad->storage, NETCL_MEM_GRADIENTS);
        return st;
    }
    if (cur->dtype != leaf->dtype || cur->ndim != leaf->ndim ||
        memcmp(cur->sizes, leaf->sizes, sizeof(int64_t) * (size_t)leaf->ndim) != 0)
        return accumulate(&leaf->grad, g);
    netcl_status st = nc_fwd_binary_into(cur, NETCL_OP_ADD, cur, g);
    netcl_tensor_release(g);
    return st;
}

/* ... then the leaf's post-accumulate hooks */
static netcl_status accumulate_leaf(netcl_tensor *leaf, netcl_tensor *g)
{
    netcl_status st = accumulate_into_leaf(leaf, g);
    if (st == NETCL_OK && leaf->hooks) st = nc_hooks_run_post(leaf->hooks, leaf);
    return st;
}

/* A view node refuses when the storage it views was written in place after
 * the view was taken: its recorded history no longer describes the values. */
static netcl_status check_view(const nc_node *n)
{
    if (n->view_storage && atomic_load(&n->view_storage->version) != n->view_version)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "the tensor it is a view of was modified in place after the view was taken; "
                       "take the view after the in-place op, or clone() before it");
    return NETCL_OK;
}

static netcl_status run_node(nc_node *n, int retain_graph, node_list *ready)
{
    netcl_tensor *small[8] = {0};
    netcl_tensor **gin = n->nin <= 8 ? small : calloc((size_t)n->nin, sizeof *gin);
    if (!gin) return nc_fail(NETCL_ERR_OOM, "backward: out of host memory");
    netcl_status st = NETCL_OK;
    netcl_tensor *g = n->grad_acc;
    n->grad_acc = NULL;
    if (g && n->hooks) {
        char what[96];
        snprintf(what, sizeof what, "the output of %s", n->name);
        st = nc_hooks_run(n->hooks, &g, what);
    }
    if (g && st == NETCL_OK) {
        if (n->released)
            st = nc_fail(NETCL_ERR_ARGUMENT, "the graph through %s was already freed by an earlier backward; "
                         "pass retain_graph to run backward twice", n->name);
        else if ((st = check_view(n)) == NETCL_OK)
            st = nc_op_rules[n->rule].backward(n, g, gin);
        if (st != NETCL_OK) nc_error_prefix("backward of %s: ", n->name);
    }
    for (int i = 0; i < n->nin; i++) {
        netcl_tensor *gi = gin[i];
        gin[i] = NULL;
        if (st == NETCL_OK && gi && n->in[i].retained) {
            netcl_tensor_retain(gi);
            st = accumulate_retained(n->in[i].retained, gi);
        }
        if (st == NETCL_OK && gi && n->in[i].leaf) st = accumulate_leaf(n->in[i].leaf, gi);
        else if (st == NETCL_OK && gi && n->in[i].next) st = accumulate(&n->in[i].next->grad_acc, gi);
        else netcl_tensor_release(gi);
        if (n->in[i].next && --n->in[i].next->deps == 0 && !push(ready, n->in[i].next) && st == NETCL_OK)
            st = nc_fail(NETCL_ERR_OOM, "backward: out of host memory");
    }
    netcl_tensor_release(g);
    if (gin != small) free(gin);
    if (!retain_graph) { release_saved(n); n->released = 1; }
    return st;
}

netcl_status netcl_backward(netcl_tensor *root, netcl_tensor *grad, int retain_graph)
{
    static _Atomic uint64_t marks;
    if (!root->requires_grad)
        return nc_fail(NETCL_ERR_ARGUMENT, "backward: %s does not require grad (no input of its graph has requires_grad)",
                       nc_describe(root));
    netcl_tensor *g = NULL;
    int prev = nc_grad_push_disabled();
    netcl_mem_owner owner = nc_mem_owner_enter(NETCL_MEM_BACKWARD);
    netcl_status st = NETCL_OK;
    if (grad) {
        if (grad->ndim != root->ndim || memcmp(grad->sizes, root->sizes, sizeof(int64_t) * (size_t)root->ndim) != 0)
            st = nc_fail(NETCL_ERR_ARGUMENT, "backward: gradient %s does not match output %s", nc_describe(grad), nc_describe(root));
        else if (nc_dev(grad) != nc_dev(root))   /* it would become a .grad on the wrong device */
            st = nc_fail(NETCL_ERR_ARGUMENT, "backward: gradient %s is on another device than output %s", nc_describe(grad),
                         nc_describe(root));
        /* the caller's tensor flows into the graph as it is (rules and
         * accumulation never write into a gradient they were given; a
         * stored .grad is a copy: accumulate_leaf, accumulate_retained);
         * a copy here only for a cast or a leaf root */
        else if (grad->dtype == root->dtype && root->grad_fn) { netcl_tensor_retain(grad); g = grad; }
        else st = nc_fwd_tensor_cast(&g, grad, root->dtype);
    } else if (netcl_tensor_numel(root) != 1) {
        st = nc_fail(NETCL_ERR_ARGUMENT, "backward: %s is not a single element; pass a gradient of its shape", nc_describe(root));
    } else {
        st = netcl_tensor_full(&g, nc_dev(root), root->dtype, root->ndim, root->sizes, 1.0);
    }
    if (st == NETCL_OK && !root->grad_fn) { /* a leaf: its gradient is g */
        st = accumulate_leaf(root, g);
        g = NULL;
    } else if (st == NETCL_OK) {
        if (root->retains_grad) { netcl_tensor_retain(g); st = accumulate_retained(root, g); }
        node_list all = {0}, ready = {0};
        if (st == NETCL_OK) st = count_deps(root->grad_fn, ++marks, &all);
        if (st == NETCL_OK) {
            root->grad_fn->grad_acc = g;
            g = NULL;
            if (!push(&ready, root->grad_fn)) st = nc_fail(NETCL_ERR_OOM, "backward: out of host memory");
        }
        while (ready.n) {
            nc_node *n = ready.items[--ready.n];
            netcl_status s = run_node(n, retain_graph, &ready);
            if (st == NETCL_OK) st = s;
        }
        /* after an error, drop partial gradients still waiting in the graph */
        for (size_t i = 0; i < all.n; i++) { netcl_tensor_release(all.items[i]->grad_acc); all.items[i]->grad_acc = NULL; }
        free(all.items);
        free(ready.items);
    }
    netcl_tensor_release(g);
    nc_grad_pop(prev);
    nc_mem_owner_leave(owner);
    return st;
}
