/* api.c — the public op entry points: run the forward op with grad mode
 * off (so helper ops inside it record nothing), then, when an input
 * requires grad, record one node on the output with what its rule needs. */
#include "autograd/autograd.h"
#include <string.h>

/* Runs `call` with grad mode off; `st` receives its status. */
#define FORWARD(st, call) do { int prev_ = nc_grad_push_disabled(); st = (call); nc_grad_pop(prev_); } while (0)

static netcl_status record_fail(netcl_tensor **out, nc_node *n, const char *op)
{
    nc_node_release(n);
    netcl_tensor_release(*out);
    *out = NULL;
    return nc_fail(NETCL_ERR_OOM, "%s: out of host memory recording the graph", op);
}

/* One input, one output, no saved tensors: a node of `rule` with ip[]. */
static netcl_status record_simple(netcl_tensor **out, nc_rule rule, const char *name, netcl_tensor *in,
                                  const int64_t *ip, int nip)
{
    nc_node *n = nc_node_new(rule, name, 1, &in);
    if (!n) return record_fail(out, n, name);
    for (int i = 0; i < nip; i++) n->ip[i] = ip[i];
    if ((*out)->storage == in->storage) { /* a view: remember what it views (engine.c checks at backward) */
        n->view_storage = in->storage;
        nc_storage_retain(in->storage);
        n->view_version = atomic_load(&in->storage->version);
    }
    nc_node_attach(n, *out);
    return NETCL_OK;
}

static int differentiable(netcl_op op)
{
    return !nc_op_is_predicate(op) && op != NETCL_OP_ARGMAX && op != NETCL_OP_ARGMIN;
}

netcl_status netcl_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2)
{
    nc_unary_params(op, &p1, &p2);
    netcl_status st;
    FORWARD(st, nc_fwd_unary(out, op, a, p1, p2));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_UNARY, netcl_op_name(op), 1, &a);
    if (!n) return record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    n->p[1] = p1;
    n->p[2] = p2;
    /* rules read the input (slot 0) and, where cheaper, the output (slot 1) */
    if (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK) return record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    FORWARD(st, nc_fwd_binary(out, op, a, b));
    if (st != NETCL_OK || !nc_should_record(2, ins) || !differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_BINARY, netcl_op_name(op), 2, ins);
    if (!n) return record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    if (op != NETCL_OP_ADD && op != NETCL_OP_SUB &&
        (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, b) != NETCL_OK))
        return record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed)
{
    netcl_status st;
    FORWARD(st, nc_fwd_binary_scalar(out, op, a, s, reversed));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_BINARY_SCALAR, netcl_op_name(op), 1, &a);
    if (!n) return record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    n->p[1] = s;
    n->p[2] = reversed;
    int needs_a = op == NETCL_OP_POW || op == NETCL_OP_MAXIMUM || op == NETCL_OP_MINIMUM || op == NETCL_OP_ATAN2 ||
                  ((op == NETCL_OP_DIV || op == NETCL_OP_FMOD) && reversed);
    if ((needs_a && nc_node_save(n, 0, a) != NETCL_OK) ||
        (op == NETCL_OP_POW && reversed && nc_node_save(n, 1, *out) != NETCL_OK))
        return record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_reduce(netcl_tensor **out, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    netcl_status st;
    FORWARD(st, nc_fwd_reduce(out, op, a, dim, keepdim));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_REDUCE, netcl_op_name(op), 1, &a);
    if (!n) return record_fail(out, n, netcl_op_name(op));
    n->ip[0] = op;
    n->ip[1] = dim;
    n->ip[2] = keepdim;
    if (op != NETCL_OP_SUM && op != NETCL_OP_MEAN &&
        (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK))
        return record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_reduce_with_index(netcl_tensor **values, netcl_tensor **indices, netcl_op op, netcl_tensor *a, int dim, int keepdim)
{
    netcl_status st;
    FORWARD(st, nc_fwd_reduce_with_index(values, indices, op, a, dim, keepdim));
    if (st != NETCL_OK || !nc_should_record(1, &a)) return st;
    nc_node *n = nc_node_new(NC_RULE_REDUCE_INDEX, netcl_op_name(op), 1, &a);
    if (!n || nc_node_save(n, 0, *indices) != NETCL_OK) {
        netcl_tensor_release(*indices);
        *indices = NULL;
        return record_fail(values, n, netcl_op_name(op));
    }
    n->ip[0] = op;
    n->ip[1] = dim;
    n->ip[2] = keepdim;
    nc_node_attach(n, *values);
    return NETCL_OK;
}

netcl_status netcl_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    FORWARD(st, nc_fwd_matmul(out, a, b));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_MATMUL, "matmul", 2, ins);
    if (!n || nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, b) != NETCL_OK) return record_fail(out, n, "matmul");
    nc_node_attach(n, *out);
    return NETCL_OK;
}

/* ---- views, casts, moves ---------------------------------------------------- */

/* A view-like op whose backward is `rule` with parameters ip. */
#define VIEW_OP(name, rule, call, ip, nip)                                                  \
    do {                                                                                    \
        netcl_status st_;                                                                   \
        FORWARD(st_, call);                                                                 \
        if (st_ != NETCL_OK || !nc_should_record(1, &t)) return st_;                        \
        return record_simple(out, rule, name, t, ip, nip);                                  \
    } while (0)

netcl_status netcl_tensor_view(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ VIEW_OP("view", NC_RULE_RESHAPE, nc_fwd_tensor_view(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_reshape(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ VIEW_OP("reshape", NC_RULE_RESHAPE, nc_fwd_tensor_reshape(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_squeeze(netcl_tensor **out, netcl_tensor *t, int dim)
{ VIEW_OP("squeeze", NC_RULE_RESHAPE, nc_fwd_tensor_squeeze(out, t, dim), NULL, 0); }

netcl_status netcl_tensor_unsqueeze(netcl_tensor **out, netcl_tensor *t, int dim)
{ VIEW_OP("unsqueeze", NC_RULE_RESHAPE, nc_fwd_tensor_unsqueeze(out, t, dim), NULL, 0); }

netcl_status netcl_tensor_contiguous(netcl_tensor **out, netcl_tensor *t)
{
    if (netcl_tensor_is_contiguous(t)) { netcl_tensor_retain(t); *out = t; return NETCL_OK; }
    VIEW_OP("contiguous", NC_RULE_RESHAPE, nc_fwd_tensor_contiguous(out, t), NULL, 0);
}

netcl_status netcl_tensor_transpose(netcl_tensor **out, netcl_tensor *t, int d0, int d1)
{
    int64_t ip[2] = {d0, d1};
    VIEW_OP("transpose", NC_RULE_TRANSPOSE, nc_fwd_tensor_transpose(out, t, d0, d1), ip, 2);
}

netcl_status netcl_tensor_permute(netcl_tensor **out, netcl_tensor *t, int ndim, const int *dims)
{
    int64_t ip[NC_MAX_DIMS];
    for (int i = 0; i < ndim && i < NC_MAX_DIMS; i++) ip[i] = dims[i];
    VIEW_OP("permute", NC_RULE_PERMUTE, nc_fwd_tensor_permute(out, t, ndim, dims), ip, ndim < NC_MAX_DIMS ? ndim : NC_MAX_DIMS);
}

netcl_status netcl_tensor_expand(netcl_tensor **out, netcl_tensor *t, int ndim, const int64_t *sizes)
{ VIEW_OP("expand", NC_RULE_EXPAND, nc_fwd_tensor_expand(out, t, ndim, sizes), NULL, 0); }

netcl_status netcl_tensor_slice(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t stop, int64_t step)
{
    int64_t ip[4] = {dim, start, stop, step};
    VIEW_OP("slice", NC_RULE_SLICE, nc_fwd_tensor_slice(out, t, dim, start, stop, step), ip, 4);
}

netcl_status netcl_tensor_narrow(netcl_tensor **out, netcl_tensor *t, int dim, int64_t start, int64_t length)
{
    int64_t ip[4] = {dim, start, start + length, 1};
    VIEW_OP("narrow", NC_RULE_SLICE, nc_fwd_tensor_narrow(out, t, dim, start, length), ip, 4);
}

netcl_status netcl_tensor_select(netcl_tensor **out, netcl_tensor *t, int dim, int64_t index)
{
    int64_t ip[2] = {dim, index};
    VIEW_OP("select", NC_RULE_SELECT, nc_fwd_tensor_select(out, t, dim, index), ip, 2);
}

netcl_status netcl_tensor_cast(netcl_tensor **out, const netcl_tensor *ct, netcl_dtype dtype)
{
    netcl_tensor *t = (netcl_tensor *)ct;
    if (!nc_dtype_is_float(dtype)) { /* integer results leave the graph */
        netcl_status st;
        FORWARD(st, nc_fwd_tensor_cast(out, t, dtype));
        return st;
    }
    VIEW_OP("cast", NC_RULE_CAST, nc_fwd_tensor_cast(out, t, dtype), NULL, 0);
}

netcl_status netcl_tensor_to_device(netcl_tensor **out, const netcl_tensor *ct, netcl_device *dev)
{
    netcl_tensor *t = (netcl_tensor *)ct;
    VIEW_OP("to", NC_RULE_TO_DEVICE, nc_fwd_tensor_to_device(out, t, dev), NULL, 0);
}

netcl_status netcl_pad(netcl_tensor **out, netcl_tensor *t, int npad, const int64_t *pads, double value)
{
    if (npad > NC_MAX_DIMS + 2) return nc_fail(NETCL_ERR_ARGUMENT, "pad: %d pad values for %s", npad, nc_describe(t));
    netcl_status st;
    FORWARD(st, nc_fwd_pad(out, t, npad, pads, value));
    if (st != NETCL_OK || !nc_should_record(1, &t)) return st;
    st = record_simple(out, NC_RULE_PAD, "pad", t, pads, npad);
    if (st == NETCL_OK) (*out)->grad_fn->p[0] = npad;
    return st;
}
