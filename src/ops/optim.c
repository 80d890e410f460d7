/* optim.c — the fused optimizer update (netcl_optim_step, whose public
 * entry in src/autograd/optim.c refuses tensors that require grad): checks
 * the flat buffers (one device, one float dtype, one element count,
 * contiguous, no overlap), bumps the written ones' versions, then makes one
 * backend call (optim.step). */
#include "ops/ops.h"
#include <stdio.h>
#include <string.h>

static const char *const kind_names[NETCL_OPTIM_KIND_END] = {"sgd", "adam", "rmsprop", "adagrad"};
const char *nc_optim_kind_name(netcl_optim_kind kind) { return (unsigned)kind < NETCL_OPTIM_KIND_END ? kind_names[kind] : "invalid"; }
static const char *const state_names[NETCL_OPTIM_KIND_END][3] = {
    {"momentum buffer", NULL, NULL},
    {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    {"square_avg", "momentum buffer", "grad_avg"},
    {"sum", NULL, NULL},
};

/* Which of state1..3 the kind and flags read and write. */
static void needed_states(netcl_optim_kind kind, int flags, const double *hyper, int need[3])
{
    need[0] = need[1] = need[2] = 0;
    switch (kind) {
    case NETCL_OPTIM_SGD: need[0] = hyper[NETCL_OPTIM_BETA1] != 0; break;
    case NETCL_OPTIM_ADAM: need[0] = need[1] = 1; need[2] = (flags & NETCL_OPTIM_AMSGRAD) != 0; break;
    case NETCL_OPTIM_RMSPROP:
        need[0] = 1;
        need[1] = hyper[NETCL_OPTIM_BETA1] != 0;
        need[2] = (flags & NETCL_OPTIM_CENTERED) != 0;
        break;
    default: need[0] = 1; break;
    }
}

/* t is a flat operand of the update: like param in device, dtype and count. */
static netcl_status check_operand(const char *op, const char *what, const netcl_tensor *t, const netcl_tensor *param)
{
    if (!t) return nc_fail(NETCL_ERR_ARGUMENT, "%s: the %s is missing (NULL)", op, what);
    NC_TRY(nc_same_device(op, param, t));
    if (t->dtype != param->dtype || netcl_tensor_numel(t) != netcl_tensor_numel(param))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the %s %s does not match the parameter buffer %s (same dtype and element count needed)",
                       op, what, nc_describe(t), nc_describe(param));
    if (!netcl_tensor_is_contiguous(t))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the %s %s is not contiguous (flat buffers only)", op, what, nc_describe(t));
    return NETCL_OK;
}

static int overlap(const netcl_tensor *a, const netcl_tensor *b)
{
    if (!a || !b || a->storage != b->storage) return 0;
    int64_t n = netcl_tensor_numel(a);
    return a->offset < b->offset + n && b->offset < a->offset + n;
}

static void flat_desc(nc_desc *d, const netcl_tensor *t)
{
    nc_desc_of(d, t);
    d->ndim = 1;
    d->sizes[0] = netcl_tensor_numel(t);
    d->strides[0] = 1;
}

netcl_status nc_fwd_optim_step(netcl_optim_kind kind, int flags, netcl_tensor *param, netcl_tensor *grad,
                              netcl_tensor *state1, netcl_tensor *state2, netcl_tensor *state3,
                              const double *hyper, int nhyper)
{
    if ((unsigned)kind >= NETCL_OPTIM_KIND_END) return nc_fail(NETCL_ERR_ARGUMENT, "optim_step: invalid optimizer kind %d", (int)kind);
    char op[32];
    snprintf(op, sizeof op, "optim_step (%s)", kind_names[kind]);
    if (!hyper || nhyper < NETCL_OPTIM_NHYPER)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: %d hyper-parameters given, %d needed", op, hyper ? nhyper : 0, NETCL_OPTIM_NHYPER);
    if (flags & ~31) return nc_fail(NETCL_ERR_ARGUMENT, "%s: unknown flag bits 0x%x", op, (unsigned)(flags & ~31));
    if (!param) return nc_fail(NETCL_ERR_ARGUMENT, "%s: the parameter buffer is missing (NULL)", op);
    if (!nc_dtype_is_float(param->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: parameters must have a float dtype, got %s", op, nc_describe(param));
    NC_TRY(check_operand(op, "parameter buffer", param, param));
    NC_TRY(check_operand(op, "gradient buffer", grad, param));
    netcl_tensor *states[3] = {state1, state2, state3};
    int need[3];
    needed_states(kind, flags, hyper, need);
    for (int k = 0; k < 3; k++) {
        if (!need[k]) { states[k] = NULL; continue; }
        NC_TRY(check_operand(op, state_names[kind][k], states[k], param));
    }
    netcl_tensor *all[5] = {param, grad, states[0], states[1], states[2]};
    const char *role[5] = {"parameter buffer", "gradient buffer", state_names[kind][0], state_names[kind][1],
                           state_names[kind][2]};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (overlap(all[i], all[j]))
                return nc_fail(NETCL_ERR_ARGUMENT, "%s: the %s and the %s overlap in memory (%s)", op, role[i], role[j],
                               nc_describe(all[i]));
    nc_tensor_bump_version(param);
    for (int k = 0; k < 3; k++)
        if (states[k]) nc_tensor_bump_version(states[k]);
    if (netcl_tensor_numel(param) == 0) return NETCL_OK;
    nc_desc p, g, s[3];
    const nc_desc *sp[3] = {NULL, NULL, NULL};
    flat_desc(&p, param);
    flat_desc(&g, grad);
    for (int k = 0; k < 3; k++)
        if (states[k]) { flat_desc(&s[k], states[k]); sp[k] = &s[k]; }
    netcl_device *dev = nc_dev(param);
    netcl_status st = dev->backend->optim.step(dev, kind, flags, &p, &g, sp, hyper);
    if (st != NETCL_OK) nc_error_prefix("%s %s: ", op, nc_describe(param));
    return st;
}

netcl_status nc_fwd_amp_unscale(netcl_tensor *grad, const netcl_tensor *inv_scale, netcl_tensor *found_inf)
{
    const char *op = "amp_unscale_";
    if (!grad || !inv_scale || !found_inf) return nc_fail(NETCL_ERR_ARGUMENT, "%s: a gradient, inv_scale and found_inf are needed", op);
    NC_TRY(nc_same_device(op, grad, inv_scale));
    NC_TRY(nc_same_device(op, grad, found_inf));
    if (!nc_dtype_is_float(grad->dtype) || !netcl_tensor_is_contiguous(grad))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the gradient %s must be a contiguous float tensor", op, nc_describe(grad));
    const netcl_tensor *one[2] = {inv_scale, found_inf};
    const char *name[2] = {"inv_scale", "found_inf"};
    for (int i = 0; i < 2; i++)
        if (one[i]->dtype != NETCL_DTYPE_FLOAT32 || netcl_tensor_numel(one[i]) != 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: %s must be one float32 element, got %s", op, name[i], nc_describe(one[i]));
    if (grad->storage == found_inf->storage || grad->storage == inv_scale->storage)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the gradient %s shares its storage with inv_scale or found_inf", op, nc_describe(grad));
    nc_tensor_bump_version(grad);
    nc_tensor_bump_version(found_inf);
    if (netcl_tensor_numel(grad) == 0) return NETCL_OK;
    nc_desc g, i, f;
    flat_desc(&g, grad);
    nc_desc_of(&i, inv_scale);
    nc_desc_of(&f, found_inf);
    netcl_device *dev = nc_dev(grad);
    if (!dev->backend->optim.unscale) return nc_fail(NETCL_ERR_UNSUPPORTED, "%s: %s has no unscale kernel", op, dev->name);
    netcl_status st = dev->backend->optim.unscale(dev, &g, &i, &f);
    if (st != NETCL_OK) nc_error_prefix("%s %s: ", op, nc_describe(grad));
    return st;
}
