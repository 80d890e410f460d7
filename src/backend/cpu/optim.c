/* optim.c — the CPU reference of the fused optimizer updates: float32 and
 * float64 buffers are updated in place in their own type; float16 and
 * bfloat16 are widened to float in blocks, updated, and rounded back. The
 * element range is split over the thread pool (elements are independent). */
#include "cpu.h"
#include <tgmath.h>

#define BLK 512
#define GRAIN 16384

typedef struct {
    double lr, wd, beta1, beta2, eps, bc2_sqrt, param_scale;
    int nesterov, maximize, first;
    int has[3];   /* which of the states the caller gave */
} opt_hyper;

#define CT float
#define OPT_FN(name) name##_f32
#include "optim_impl.h"
#undef CT
#undef OPT_FN
#define CT double
#define OPT_FN(name) name##_f64
#include "optim_impl.h"
#undef CT
#undef OPT_FN

typedef struct {
    netcl_optim_kind kind;
    const nc_desc *p, *g, *const *s;
    opt_hyper h;
} opt_ctx;

static void *elem(const nc_desc *d, int64_t i)
{
    return (char *)d->buf + (d->offset + i) * netcl_dtype_size(d->dtype);
}

/* float16/bfloat16: one block at a time through float scratch */
static void half_part(const opt_ctx *c, int64_t start, int64_t end)
{
    float pb[BLK], gb[BLK], sb[3][BLK] = {{0}};
    float *sp[3] = {sb[0], sb[1], sb[2]};
    netcl_dtype dt = c->p->dtype;
    for (int64_t b = start; b < end; b += BLK) {
        int64_t n = end - b < BLK ? end - b : BLK;
        nc_cpu_gather_f32(c->p->buf, dt, c->p->offset + b, 1, n, pb);
        nc_cpu_gather_f32(c->g->buf, dt, c->g->offset + b, 1, n, gb);
        for (int k = 0; k < 3; k++)
            if (c->s[k]) nc_cpu_gather_f32(c->s[k]->buf, dt, c->s[k]->offset + b, 1, n, sb[k]);
        step_f32(c->kind, pb, gb, sp, n, &c->h);
        for (int64_t j = 0; j < n; j++) {
            nc_store_double(c->p->buf, dt, c->p->offset + b + j, pb[j]);
            for (int k = 0; k < 3; k++)
                if (c->s[k]) nc_store_double(c->s[k]->buf, dt, c->s[k]->offset + b + j, sb[k][j]);
        }
    }
}

/* Blocks of the range in place; absent states point at zeroed scratch that
 * the kernels write but whose values never reach a result. */
#define DIRECT_PART(T, FN)                                                              \
    do {                                                                                \
        T scratch[3][BLK] = {{0}};                                                      \
        for (int64_t b = start; b < end; b += BLK) {                                    \
            int64_t n = end - b < BLK ? end - b : BLK;                                  \
            T *s[3];                                                                    \
            for (int k = 0; k < 3; k++) s[k] = c->s[k] ? (T *)elem(c->s[k], b) : scratch[k]; \
            FN(c->kind, (T *)elem(c->p, b), (const T *)elem(c->g, b), s, n, &c->h);     \
        }                                                                               \
    } while (0)

static void part(void *vctx, int64_t start, int64_t end)
{
    const opt_ctx *c = vctx;
    netcl_dtype dt = c->p->dtype;
    if (dt == NETCL_DTYPE_FLOAT32) DIRECT_PART(float, step_f32);
    else if (dt == NETCL_DTYPE_FLOAT64) DIRECT_PART(double, step_f64);
    else half_part(c, start, end);
}

netcl_status nc_cpu_optim_step(netcl_device *dev, netcl_optim_kind kind, int flags, const nc_desc *p, const nc_desc *g,
                               const nc_desc *const *s, const double *hyper)
{
    (void)dev;
    opt_ctx c = {kind, p, g, s,
                 {hyper[NETCL_OPTIM_LR], hyper[NETCL_OPTIM_WEIGHT_DECAY], hyper[NETCL_OPTIM_BETA1],
                  hyper[NETCL_OPTIM_BETA2], hyper[NETCL_OPTIM_EPS], hyper[NETCL_OPTIM_BC2_SQRT],
                  hyper[NETCL_OPTIM_PARAM_SCALE], (flags & NETCL_OPTIM_NESTEROV) != 0,
                  (flags & NETCL_OPTIM_MAXIMIZE) != 0, (flags & NETCL_OPTIM_FIRST_STEP) != 0,
                  {s[0] != NULL, s[1] != NULL, s[2] != NULL}}};
    nc_parallel_for(p->sizes[0], GRAIN, part, &c);
    return NETCL_OK;
}

/* ---- mixed precision's unscale ---------------------------------------------------- */
typedef struct { const nc_desc *g; double inv; int bad; } unscale_ctx;

static void unscale_part(void *vctx, int64_t start, int64_t end)
{
    unscale_ctx *c = vctx;
    int bad = 0;
    if (c->g->dtype == NETCL_DTYPE_FLOAT32) {
        float *g = (float *)elem(c->g, 0), inv = (float)c->inv;
        for (int64_t i = start; i < end; i++) {
            bad |= !isfinite(g[i]);
            g[i] *= inv;
        }
    } else {
        for (int64_t i = start; i < end; i++) {
            double v = nc_load_double(c->g->buf, c->g->dtype, c->g->offset + i);
            bad |= !isfinite(v);
            nc_store_double(c->g->buf, c->g->dtype, c->g->offset + i, c->g->dtype == NETCL_DTYPE_FLOAT64 ? v * c->inv : (float)v * (float)c->inv);
        }
    }
    if (bad) __atomic_store_n(&c->bad, 1, __ATOMIC_RELAXED);
}

netcl_status nc_cpu_amp_unscale(netcl_device *dev, const nc_desc *g, const nc_desc *inv, const nc_desc *found)
{
    (void)dev;
    unscale_ctx c = {g, *(const float *)elem(inv, 0), 0};
    nc_parallel_for(g->sizes[0], GRAIN, unscale_part, &c);
    if (c.bad) *(float *)elem(found, 0) = 1.0f;
    return NETCL_OK;
}
