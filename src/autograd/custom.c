/* custom.c — functions whose backward the caller provides
 * (netcl_autograd_function; Lua's autograd.Function): a node of kind
 * NC_RULE_CUSTOM holds the caller's callback and context; its backward
 * rule calls back and checks what comes back. A dead node's context goes
 * to a list the caller drains (netcl_autograd_function_dead), so no
 * callback runs while a tensor is being freed. */
#include "autograd/autograd.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    netcl_backward_callback fn;
    void *ctx;
    char name[48];
} custom_fn;

static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static void **dead;
static int ndead, cap_dead;

static void push_dead(void *ctx)
{
    pthread_mutex_lock(&dead_lock);
    if (ndead == cap_dead) {
        int cap = cap_dead ? 2 * cap_dead : 64;
        void **grown = realloc(dead, (size_t)cap * sizeof *grown);
        if (grown) dead = grown, cap_dead = cap;
    }
    if (ndead < cap_dead) dead[ndead++] = ctx;   /* out of memory: the context leaks, nothing breaks */
    pthread_mutex_unlock(&dead_lock);
}

int netcl_autograd_function_dead(void **ctxs, int max)
{
    pthread_mutex_lock(&dead_lock);
    int n = ndead < max ? ndead : max;
    if (n > 0) {
        memcpy(ctxs, dead + (ndead - n), (size_t)n * sizeof *ctxs);
        ndead -= n;
    }
    pthread_mutex_unlock(&dead_lock);
    return n > 0 ? n : 0;
}

void nc_custom_release(nc_node *n)
{
    custom_fn *c = (custom_fn *)(intptr_t)n->ip[0];
    if (!c) return;
    push_dead(c->ctx);
    free(c);
    n->ip[0] = 0;
}

netcl_status nc_rule_custom(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    custom_fn *c = (custom_fn *)(intptr_t)n->ip[0];
    netcl_tensor **got = calloc((size_t)n->nin, sizeof *got);
    if (!got) return nc_fail(NETCL_ERR_OOM, "%s backward: out of host memory", n->name);
    netcl_status st = NETCL_OK;
    if (c->fn(c->ctx, g, n->nin, got) != 0) st = nc_fail(NETCL_ERR_ARGUMENT, "%s: its backward function failed", n->name);
    for (int i = 0; st == NETCL_OK && i < n->nin; i++) {
        netcl_tensor *t = got[i];
        if (!t || !nc_input_needs_grad(n, i)) continue;
        const nc_edge *e = &n->in[i];
        int same = t->ndim == e->ndim && nc_dev(t) == e->dev;
        for (int d = 0; same && d < e->ndim; d++) same = t->sizes[d] == e->sizes[d];
        if (!same)
            st = nc_fail(NETCL_ERR_ARGUMENT, "%s: backward returned %s as the gradient of input %d, which has %d dims on %s",
                         n->name, nc_describe(t), i + 1, e->ndim, e->dev->name);
    }
    for (int i = 0; i < n->nin; i++) {
        if (st == NETCL_OK && got[i] && nc_input_needs_grad(n, i)) gin[i] = got[i];
        else netcl_tensor_release(got[i]);
    }
    free(got);
    return st;
}

netcl_status netcl_autograd_function(netcl_tensor **out, netcl_tensor *result, int nin, netcl_tensor *const *ins,
                                     const char *name, netcl_backward_callback fn, void *ctx)
{
    if (!out) return nc_fail(NETCL_ERR_ARGUMENT, "autograd function: out is NULL");
    *out = NULL;
    const char *nm = name && *name ? name : "function";
    if (!result || !fn || nin < 0 || (nin > 0 && !ins))
        return nc_fail(NETCL_ERR_ARGUMENT, "autograd function %s: needs a result, a backward callback and its inputs", nm);
    for (int i = 0; i < nin; i++)
        if (!ins[i]) return nc_fail(NETCL_ERR_ARGUMENT, "autograd function %s: input %d is missing", nm, i + 1);
    if (!nc_should_record(nin, ins)) {
        push_dead(ctx);
        netcl_tensor_retain(result);
        *out = result;
        return NETCL_OK;
    }
    if (result->grad_fn || result->requires_grad)
        return nc_fail(NETCL_ERR_ARGUMENT, "autograd function %s: its forward must not record (run it without grad): "
                       "the result %s already has a gradient function", nm, nc_describe(result));
    custom_fn *c = calloc(1, sizeof *c);
    if (!c) return nc_fail(NETCL_ERR_OOM, "autograd function %s: out of host memory", nm);
    c->fn = fn;
    c->ctx = ctx;
    snprintf(c->name, sizeof c->name, "%s", nm);
    NC_TRY(nc_tensor_view_of(out, result, result->ndim, result->sizes, result->strides, result->offset));
    nc_node *n = nc_node_new(NC_RULE_CUSTOM, c->name, nin, ins);
    if (!n) {
        free(c);
        return nc_record_fail(out, NULL, nm);
    }
    n->ip[0] = (int64_t)(intptr_t)c;
    nc_node_attach(n, *out);
    return NETCL_OK;
}
