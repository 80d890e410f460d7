/* augment.c — the op layer of the per-sample augmentations: argument checks
 * with clear messages, a contiguous copy of x when needed, a fresh output,
 * then one backend call (cpu reference in src/backend/cpu/augment.c,
 * OpenCL in src/backend/cl/augment.c). Not differentiable: data
 * augmentation precedes the graph. */
#include "ops/ops.h"
#include <string.h>

static const char *const kind_names[] = {"flip_horizontal", "color_jitter", "erase", "random_crop"};
static const int kind_params[] = {1, 2, 5, 2};

static netcl_status check_args(const char *op, netcl_augment_kind kind, const netcl_tensor *x, const netcl_tensor *params)
{
    if (x->ndim != 4 || (x->dtype != NETCL_DTYPE_FLOAT32 && x->dtype != NETCL_DTYPE_UINT8))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: x must be float32 or uint8 [N,C,H,W], got %s", op, nc_describe(x));
    int k = kind_params[kind];
    if (nc_dev(params)->type != NETCL_DEVICE_CPU || params->dtype != NETCL_DTYPE_FLOAT32 || params->ndim != 2 ||
        params->sizes[0] != x->sizes[0] || params->sizes[1] != k)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: params must be a float32 cpu tensor [%lld,%d] for x %s, got %s", op,
                       (long long)x->sizes[0], k, nc_describe(x), nc_describe(params));
    return NETCL_OK;
}

/* Runs the backend on contiguous copies; out already allocated. */
static netcl_status run(nc_augment *a, netcl_tensor *out, netcl_tensor *x, netcl_tensor *params)
{
    netcl_tensor *xc = NULL, *pc = NULL;
    nc_desc od, xd;
    netcl_status st = nc_fwd_tensor_contiguous(&xc, x);
    if (st == NETCL_OK) st = nc_fwd_tensor_contiguous(&pc, params);
    if (st == NETCL_OK && netcl_tensor_numel(out) > 0) {
        nc_desc_of(&od, out);
        nc_desc_of(&xd, xc);
        a->out = &od;
        a->x = &xd;
        a->params = (const float *)pc->storage->buf + pc->offset;
        a->nparams = kind_params[a->kind];
        const nc_backend *be = nc_dev(x)->backend;
        st = be->augment.run ? be->augment.run(nc_dev(x), a)
                         : nc_fail(NETCL_ERR_UNSUPPORTED, "the %s backend has no augmentation kernels", be->name);
    }
    netcl_tensor_release(xc);
    netcl_tensor_release(pc);
    return st;
}

netcl_status netcl_augment(netcl_tensor **out, netcl_augment_kind kind, netcl_tensor *x, netcl_tensor *params)
{
    *out = NULL;
    if ((unsigned)kind > NETCL_AUGMENT_ERASE)
        return nc_fail(NETCL_ERR_ARGUMENT, "augment: invalid kind %d (crop is netcl_augment_crop)", (int)kind);
    const char *op = kind_names[kind];
    NC_TRY(check_args(op, kind, x, params));
    NC_TRY(nc_tensor_new(out, nc_dev(x), x->dtype, 4, x->sizes));
    nc_augment a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    netcl_status st = run(&a, *out, x, params);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s: ", op, nc_describe(x));
    }
    return st;
}

netcl_status netcl_augment_crop(netcl_tensor **out, netcl_tensor *x, netcl_tensor *params, int64_t padding,
                                int64_t out_h, int64_t out_w, int reflect, double value)
{
    *out = NULL;
    const char *op = kind_names[NETCL_AUGMENT_CROP];
    NC_TRY(check_args(op, NETCL_AUGMENT_CROP, x, params));
    int64_t h = x->sizes[2], w = x->sizes[3];
    if (padding < 0 || out_h < 1 || out_w < 1 || out_h > h + 2 * padding || out_w > w + 2 * padding)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: crop %lldx%lld with padding %lld does not fit x %s", op,
                       (long long)out_h, (long long)out_w, (long long)padding, nc_describe(x));
    if (reflect && (padding >= h || padding >= w))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: reflect padding %lld must be smaller than the image (%s)", op,
                       (long long)padding, nc_describe(x));
    /* offsets are checked here so kernels never read outside the padded image */
    const float *p = (const float *)params->storage->buf;
    for (int64_t n = 0; n < x->sizes[0]; n++) {
        double top = nc_load_double(p, NETCL_DTYPE_FLOAT32, params->offset + n * params->strides[0]);
        double left = nc_load_double(p, NETCL_DTYPE_FLOAT32, params->offset + n * params->strides[0] + params->strides[1]);
        if (top < 0 || left < 0 || top + out_h > h + 2 * padding || left + out_w > w + 2 * padding || top != (int64_t)top ||
            left != (int64_t)left)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: sample %lld offset (%g, %g) does not fit a %lldx%lld crop of the "
                           "padded %lldx%lld image", op, (long long)n + 1, top, left, (long long)out_h, (long long)out_w,
                           (long long)(h + 2 * padding), (long long)(w + 2 * padding));
    }
    int64_t sizes[4] = {x->sizes[0], x->sizes[1], out_h, out_w};
    NC_TRY(nc_tensor_new(out, nc_dev(x), x->dtype, 4, sizes));
    nc_augment a;
    memset(&a, 0, sizeof a);
    a.kind = NETCL_AUGMENT_CROP;
    a.pad = padding;
    a.reflect = reflect != 0;
    a.value = value;
    netcl_status st = run(&a, *out, x, params);
    if (st != NETCL_OK) {
        netcl_tensor_release(*out);
        *out = NULL;
        nc_error_prefix("%s %s: ", op, nc_describe(x));
    }
    return st;
}
