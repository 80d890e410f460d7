/* inplace.c — in-place ops with autograd. Without recording they write
 * straight into the target. When the op must be recorded, the target's old
 * values are first copied (a recorded copy, so the op's node saves values
 * that stay valid and its edge leads to the target's old history), the
 * result is computed out of place, copied into the target, and the target
 * adopts the result's node. That write bumps the storage version, so any
 * other node that saved the old values refuses at backward instead of
 * giving a wrong gradient. PyTorch clones the original for the same reason. */
#include "autograd/autograd.h"

/* Targets that cannot take a recorded in-place write. */
static netcl_status check_target(const netcl_tensor *a, const char *op)
{
    if (a->requires_grad && !a->grad_fn)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "%s_: %s is a leaf that requires grad; an in-place write would make its gradient wrong "
                       "(write under no_grad, or into a clone)", op, nc_describe(a));
    if (a->grad_fn && a->grad_fn->is_view)
        return nc_fail(NETCL_ERR_ARGUMENT,
                       "%s_: %s is a view (from %s) of a tensor in the graph; in-place ops on such views are not "
                       "supported: clone() it first, or use the out-of-place %s", op, nc_describe(a), a->grad_fn->name, op);
    return NETCL_OK;
}

/* A recorded copy of a's current values. */
static netcl_status snapshot(netcl_tensor *a, netcl_tensor **copy) { return netcl_tensor_cast(copy, a, a->dtype); }

/* a takes r's values and r's history; consumes r. */
static netcl_status adopt(netcl_tensor *a, netcl_tensor *r)
{
    int prev = nc_grad_push_disabled();
    netcl_status st = nc_fwd_copy_into(a, r);
    nc_grad_pop(prev);
    if (st == NETCL_OK && r->grad_fn) {
        nc_node *old = a->grad_fn;
        atomic_fetch_add(&r->grad_fn->refcount, 1);
        a->grad_fn = r->grad_fn;
        a->requires_grad = 1;
        nc_node_release(old);
    }
    netcl_tensor_release(r);
    return st;
}

netcl_status netcl_binary_(netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    netcl_tensor *ins[2] = {a, b};
    if (!nc_should_record(2, ins)) return nc_fwd_binary_into(a, op, a, b);
    NC_TRY(check_target(a, netcl_op_name(op)));
    netcl_tensor *old, *r;
    NC_TRY(snapshot(a, &old));
    netcl_status st = netcl_binary(&r, op, old, b == a ? old : b);
    netcl_tensor_release(old);
    return st == NETCL_OK ? adopt(a, r) : st;
}

netcl_status netcl_binary_scalar_(netcl_op op, netcl_tensor *a, double s)
{
    if (!nc_should_record(1, &a)) return nc_fwd_binary_scalar_into(a, op, a, s, 0);
    NC_TRY(check_target(a, netcl_op_name(op)));
    netcl_tensor *old, *r;
    NC_TRY(snapshot(a, &old));
    netcl_status st = netcl_binary_scalar(&r, op, old, s, 0);
    netcl_tensor_release(old);
    return st == NETCL_OK ? adopt(a, r) : st;
}

netcl_status netcl_unary_(netcl_op op, netcl_tensor *a, double p1, double p2)
{
    if (!nc_should_record(1, &a)) return nc_fwd_unary_into(a, op, a, p1, p2);
    NC_TRY(check_target(a, netcl_op_name(op)));
    netcl_tensor *old, *r;
    NC_TRY(snapshot(a, &old));
    netcl_status st = netcl_unary(&r, op, old, p1, p2);
    netcl_tensor_release(old);
    return st == NETCL_OK ? adopt(a, r) : st;
}

/* the same protocol for in-place ops of other families (index.c) */
netcl_status nc_inplace_check(const netcl_tensor *a, const char *op) { return check_target(a, op); }
netcl_status nc_inplace_adopt(netcl_tensor *a, netcl_tensor *r) { return adopt(a, r); }
