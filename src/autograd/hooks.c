/* hooks.c — gradient hooks: registered on a leaf tensor or on the node
 * that produced a non-leaf, run by the engine on the gradient flowing
 * into that tensor, in registration order; and a leaf's post-accumulate
 * hooks, run on the leaf once its .grad has taken the gradient. */
#include "autograd/autograd.h"
#include <stdlib.h>
#include <string.h>

static atomic_int next_id = 1;

void nc_hooks_free(nc_hook *h)
{
    while (h) {
        nc_hook *next = h->next;
        free(h);
        h = next;
    }
}

/* where t's hooks live: the leaf itself, or the node that produced it */
static nc_hook **hook_list(netcl_tensor *t) { return t->grad_fn ? &t->grad_fn->hooks : &t->hooks; }

static netcl_status add_hook(netcl_tensor *t, netcl_grad_hook_fn fn, void *ctx, int *id, int post)
{
    const char *what = post ? "register_post_accumulate_grad_hook" : "register_hook";
    if (!t->requires_grad)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: %s does not require grad, so no gradient will reach it", what, nc_describe(t));
    if (post && t->grad_fn)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: %s is not a leaf (only a leaf's .grad accumulates)", what, nc_describe(t));
    nc_hook *h = calloc(1, sizeof *h);
    if (!h) return nc_fail(NETCL_ERR_OOM, "%s: out of host memory", what);
    nc_autograd_register();
    h->fn = fn;
    h->ctx = ctx;
    h->post = post;
    h->id = atomic_fetch_add(&next_id, 1);
    nc_hook **p = hook_list(t);
    while (*p) p = &(*p)->next;   /* run in registration order */
    *p = h;
    *id = h->id;
    return NETCL_OK;
}

netcl_status netcl_tensor_register_hook(netcl_tensor *t, netcl_grad_hook_fn fn, void *ctx, int *id)
{
    return add_hook(t, fn, ctx, id, 0);
}

netcl_status netcl_tensor_register_post_accumulate_hook(netcl_tensor *t, netcl_grad_hook_fn fn, void *ctx, int *id)
{
    return add_hook(t, fn, ctx, id, 1);
}

netcl_status nc_hooks_run_post(nc_hook *h, netcl_tensor *leaf)
{
    for (; h; h = h->next) {
        netcl_tensor *rep = NULL;
        if (!h->post) continue;
        int bad = h->fn(h->ctx, leaf, &rep);
        netcl_tensor_release(rep);
        if (bad) return nc_fail(NETCL_ERR_ARGUMENT, "backward: a post-accumulate hook on %s failed", nc_describe(leaf));
    }
    return NETCL_OK;
}

netcl_status netcl_tensor_remove_hook(netcl_tensor *t, int id)
{
    for (nc_hook **p = hook_list(t); *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            nc_hook *h = *p;
            *p = h->next;
            free(h);
            return NETCL_OK;
        }
    }
    return nc_fail(NETCL_ERR_ARGUMENT, "remove_hook: %s has no hook %d", nc_describe(t), id);
}

netcl_status nc_hooks_run(nc_hook *h, netcl_tensor **g, const char *what)
{
    for (; h; h = h->next) {
        netcl_tensor *rep = NULL;
        if (h->post) continue;
        if (h->fn(h->ctx, *g, &rep) != 0) {
            netcl_tensor_release(rep);
            return nc_fail(NETCL_ERR_ARGUMENT, "backward: a gradient hook on %s failed", what);
        }
        if (!rep) continue;
        if (rep->ndim != (*g)->ndim || memcmp(rep->sizes, (*g)->sizes, sizeof(int64_t) * (size_t)rep->ndim) != 0 ||
            nc_dev(rep) != nc_dev(*g)) {
            netcl_status st = nc_fail(NETCL_ERR_ARGUMENT, "backward: a hook returned %s for a gradient %s (same shape "
                                      "and device needed)", nc_describe(rep), nc_describe(*g));
            netcl_tensor_release(rep);
            return st;
        }
        netcl_tensor_release(*g);
        *g = rep;
    }
    return NETCL_OK;
}
