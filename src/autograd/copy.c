/* copy.c — copies with autograd: contiguous, casts, device moves and
 * padding (forward: src/ops/copy.c; kernels: backend elementwise.copy) and
 * their backward rules; and the writes autograd does not record (copy_,
 * fill_, set_item), refused on tensors that require grad. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_tensor_contiguous(netcl_tensor **out, netcl_tensor *t)
{
    if (netcl_tensor_is_contiguous(t)) { netcl_tensor_retain(t); *out = t; return NETCL_OK; }
    NC_VIEW_OP("contiguous", NC_RULE_RESHAPE, nc_fwd_tensor_contiguous(out, t), NULL, 0);
}

netcl_status netcl_tensor_cast(netcl_tensor **out, const netcl_tensor *ct, netcl_dtype dtype)
{
    netcl_tensor *t = (netcl_tensor *)ct;
    if (!nc_dtype_is_float(dtype)) { /* integer results leave the graph */
        netcl_status st;
        NC_FORWARD(st, nc_fwd_tensor_cast(out, t, dtype));
        return st;
    }
    NC_VIEW_OP("cast", NC_RULE_CAST, nc_fwd_tensor_cast(out, t, dtype), NULL, 0);
}

netcl_status netcl_tensor_to_device(netcl_tensor **out, const netcl_tensor *ct, netcl_device *dev)
{
    netcl_tensor *t = (netcl_tensor *)ct;
    NC_VIEW_OP("to", NC_RULE_TO_DEVICE, nc_fwd_tensor_to_device(out, t, dev), NULL, 0);
}

netcl_status netcl_pad(netcl_tensor **out, netcl_tensor *t, int npad, const int64_t *pads, double value)
{
    if (npad > NC_MAX_DIMS + 2) return nc_fail(NETCL_ERR_ARGUMENT, "pad: %d pad values for %s", npad, nc_describe(t));
    netcl_status st;
    NC_FORWARD(st, nc_fwd_pad(out, t, npad, pads, value));
    if (st != NETCL_OK || !nc_should_record(1, &t)) return st;
    st = nc_record_simple(out, NC_RULE_PAD, "pad", t, pads, npad);
    if (st == NETCL_OK) (*out)->grad_fn->p[0] = npad;
    return st;
}

netcl_status nc_rule_cast(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor_retain(g);
    return nc_rule_finish(n, 0, g, &gin[0]);
}

netcl_status nc_rule_to_device(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *t;
    NC_TRY(nc_fwd_tensor_to_device(&t, g, n->in[0].dev));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* padding's gradient is the padding removed: pad g with the negated pads */
netcl_status nc_rule_pad(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    int64_t neg[NC_MAX_DIMS * 2];
    int npad = (int)n->p[0];
    for (int i = 0; i < npad; i++) neg[i] = -n->ip[i];
    netcl_tensor *t;
    NC_TRY(nc_fwd_pad(&t, g, npad, neg, 0));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* ---- writes autograd does not record ------------------------------------ */
netcl_status netcl_tensor_copy_(netcl_tensor *dst, const netcl_tensor *src)
{
    NC_TRY(nc_untracked_write_check(dst, "copy_"));
    return nc_fwd_tensor_copy_(dst, src);
}

netcl_status netcl_tensor_fill_(netcl_tensor *dst, double value)
{
    NC_TRY(nc_untracked_write_check(dst, "fill_"));
    return nc_fwd_tensor_fill_(dst, value);
}

netcl_status netcl_tensor_set_item(netcl_tensor *t, const int64_t *index, double value)
{
    NC_TRY(nc_untracked_write_check(t, "set_item"));
    return nc_fwd_tensor_set_item(t, index, value);
}
