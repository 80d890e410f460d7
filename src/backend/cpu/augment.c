/* augment.c (cpu) — the reference of the per-sample augmentations
 * (nc_augment in backend/backend.h): plain loops over [N,C] planes, float32 or uint8.
 * The OpenCL kernels (kernels/augment.cl) follow these formulas exactly:
 * jitter computes x*c + b in float without contraction, uint8 results round
 * half to even and clamp to 0..255. */
#include "cpu.h"
#include <math.h>

static inline float load(const nc_augment *a, const void *base, int64_t i)
{
    return a->x->dtype == NETCL_DTYPE_UINT8 ? (float)((const uint8_t *)base)[i] : ((const float *)base)[i];
}

static inline void store(const nc_augment *a, void *base, int64_t i, float v)
{
    if (a->out->dtype == NETCL_DTYPE_UINT8) {
        float r = nearbyintf(v);
        ((uint8_t *)base)[i] = (uint8_t)(r != r ? 0 : r < 0 ? 0 : r > 255 ? 255 : r);
    } else {
        ((float *)base)[i] = v;
    }
}

/* source row/col of padded coordinate p in [0, n + 2 pad): -1 = constant */
static inline int64_t source(int64_t p, int64_t pad, int64_t n, int reflect)
{
    int64_t s = p - pad;
    if (s >= 0 && s < n) return s;
    if (!reflect) return -1;
    return s < 0 ? -s : 2 * (n - 1) - s;
}

static void plane(const nc_augment *a, int64_t plane_index)
{
    const nc_desc *x = a->x, *o = a->out;
    int64_t C = x->sizes[1], H = x->sizes[2], W = x->sizes[3], OH = o->sizes[2], OW = o->sizes[3];
    int64_t n = plane_index / C;
    const float *p = a->params + n * a->nparams;
    const char *xb = (const char *)x->buf + x->offset * netcl_dtype_size(x->dtype);
    char *ob = (char *)o->buf + o->offset * netcl_dtype_size(o->dtype);
    int64_t xin = plane_index * H * W, oin = plane_index * OH * OW;
    for (int64_t i = 0; i < OH; i++) {
        for (int64_t j = 0; j < OW; j++) {
            float v;
            switch (a->kind) {
            case NETCL_AUGMENT_FLIP:
                v = load(a, xb, xin + i * W + (p[0] != 0 ? W - 1 - j : j));
                break;
            case NETCL_AUGMENT_JITTER: {
                float prod = load(a, xb, xin + i * W + j) * p[1];
                v = prod + p[0];
                break;
            }
            case NETCL_AUGMENT_ERASE: {
                int64_t top = (int64_t)p[0], left = (int64_t)p[1], bh = (int64_t)p[2], bw = (int64_t)p[3];
                int in = i >= top && i < top + bh && j >= left && j < left + bw;
                v = in ? p[4] : load(a, xb, xin + i * W + j);
                break;
            }
            default: {   /* CROP */
                int64_t sy = source((int64_t)p[0] + i, a->pad, H, a->reflect);
                int64_t sx = source((int64_t)p[1] + j, a->pad, W, a->reflect);
                v = sy < 0 || sx < 0 ? (float)a->value : load(a, xb, xin + sy * W + sx);
            }
            }
            store(a, ob, oin + i * OW + j, v);
        }
    }
}

static void planes(void *ctx, int64_t s, int64_t e)
{
    for (int64_t i = s; i < e; i++) plane(ctx, i);
}

netcl_status nc_cpu_augment(netcl_device *dev, const nc_augment *a)
{
    (void)dev;
    int64_t np = a->out->sizes[0] * a->out->sizes[1];
    int64_t per = a->out->sizes[2] * a->out->sizes[3];
    nc_parallel_for(np, per > 0 ? 1 + 65536 / per : 1, planes, (void *)a);
    return NETCL_OK;
}
