/* optim.c — the public fused optimizer update (netcl_optim_step): an
 * in-place write autograd does not record, so refused on tensors that
 * require grad while grad mode is on; src/ops/optim.c checks the buffers
 * and runs it. */
#include "autograd/autograd.h"
#include <stdio.h>

netcl_status netcl_optim_step(netcl_optim_kind kind, int flags, netcl_tensor *param, netcl_tensor *grad,
                              netcl_tensor *state1, netcl_tensor *state2, netcl_tensor *state3,
                              const double *hyper, int nhyper)
{
    char op[32];
    snprintf(op, sizeof op, "optim_step (%s)", nc_optim_kind_name(kind));
    netcl_tensor *written[4] = {param, state1, state2, state3};
    for (int k = 0; k < 4 && (unsigned)kind < NETCL_OPTIM_KIND_END; k++)
        if (written[k]) NC_TRY(nc_untracked_write_check(written[k], op));
    return nc_fwd_optim_step(kind, flags, param, grad, state1, state2, state3, hyper, nhyper);
}

netcl_status netcl_amp_unscale_(netcl_tensor *grad, const netcl_tensor *inv_scale, netcl_tensor *found_inf)
{
    if (grad) NC_TRY(nc_untracked_write_check(grad, "amp_unscale_"));
    if (found_inf) NC_TRY(nc_untracked_write_check(found_inf, "amp_unscale_"));
    return nc_fwd_amp_unscale(grad, inv_scale, found_inf);
}
