/* conv_plan.c — the convolution planner: the strategies' names and where
 * each applies, the forced choices (this thread's for the tuner, the
 * process's from netcl_set_conv_algo, NETCL_CONV_ALGO), the rule that picks
 * a strategy per pass when nothing is forced or measured, and
 * netcl_conv2d_strategy, which shows a layer's choices. The strategies
 * themselves run in conv.c. */
#include "ops/ops.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const algo_names[NC_CONV_ALGO_COUNT] = {
    [NC_CONV_AUTO] = "auto", [NC_CONV_DIRECT] = "direct", [NC_CONV_DEPTHWISE] = "depthwise",
    [NC_CONV_IM2COL] = "im2col", [NC_CONV_GEMM1X1] = "gemm1x1", [NC_CONV_WINOGRAD2] = "winograd2",
    [NC_CONV_WINOGRAD4] = "winograd4", [NC_CONV_IGEMM] = "implicit_gemm", [NC_CONV_TILED] = "tiled",
};

const char *nc_conv_algo_name(nc_conv_algo a) { return (unsigned)a < NC_CONV_ALGO_COUNT ? algo_names[a] : "?"; }

nc_conv_algo nc_conv_algo_from_name(const char *name)
{
    for (int i = 0; i < NC_CONV_ALGO_COUNT; i++)
        if (name && strcmp(name, algo_names[i]) == 0) return (nc_conv_algo)i;
    return NC_CONV_ALGO_COUNT;
}

/* The tiled kernels compile the taps in and stage a tile's whole input
 * patch: small kernels, strides and dilations; its grid's third dim holds
 * images x groups x blocks of 8 channels. Backward-data runs as the
 * forward convolution of dy with the flipped weights (stride 1, groups 1,
 * padding d (k - 1) - p >= 0). */
static int tiled_applicable(const nc_conv_args *g, nc_conv_pass pass)
{
    if (g->KH > 11 || g->KW > 11 || g->SH > 4 || g->SW > 4 || g->DH * (g->KH - 1) > 20 || g->DW * (g->KW - 1) > 20)
        return 0;
    if (pass == NC_CONV_PASS_FWD) return g->N * g->G * ((g->O / g->G + 7) / 8) <= 65535;
    if (pass == NC_CONV_PASS_DATA)
        return g->SH == 1 && g->SW == 1 && g->G == 1 && g->DH * (g->KH - 1) >= g->PH && g->DW * (g->KW - 1) >= g->PW &&
               g->N * ((g->C + 7) / 8) <= 65535;
    return nc_tw_fits(g);
}

/* the depthwise kernels keep a sum per tap in registers (backward-weight) */
#define DW_TAPS 81

int nc_conv_applicable(nc_conv_algo a, const nc_conv_args *g, nc_conv_pass pass)
{
    switch (a) {
    case NC_CONV_DIRECT: case NC_CONV_IM2COL: case NC_CONV_IGEMM: return 1;
    case NC_CONV_TILED: return tiled_applicable(g, pass);
    case NC_CONV_DEPTHWISE: return g->G == g->C && g->G > 1 && g->KH * g->KW <= DW_TAPS;
    case NC_CONV_GEMM1X1:
        return g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PH == 0 && g->PW == 0 && g->G == 1;
    case NC_CONV_WINOGRAD2: case NC_CONV_WINOGRAD4:
        return g->KH == 3 && g->KW == 3 && g->SH == 1 && g->SW == 1 && g->DH == 1 && g->DW == 1 && g->G == 1 &&
               (pass != NC_CONV_PASS_DATA || (g->PH <= 2 && g->PW <= 2));
    default: return 0;
    }
}

/* the convolution conv_tiled.cl runs for a pass: the forward itself, or for
 * backward-data at stride 1 the forward convolution of dy with the
 * flipped, transposed weights and padding d (k - 1) - p */
nc_conv_args nc_conv_tiled_kernel_args(const nc_conv_args *g, nc_conv_pass pass)
{
    if (pass != NC_CONV_PASS_DATA) return *g;
    return (nc_conv_args){g->N, g->O, g->OH, g->OW, g->C, 1, g->KH, g->KW, 1, 1, g->DH * (g->KH - 1) - g->PH,
                          g->DW * (g->KW - 1) - g->PW, g->DH, g->DW, g->H, g->W};
}

/* The cpu's float32 convolutions with 16 output channels per vector
 * (src/backend/cpu/conv_vec.c) stream the whole weight (or, backward-weight,
 * an image's dy once per block of taps): they win with groups 1, a
 * reduction C*KH*KW of 64 or more, vectors at least half used and a weight
 * of at most max_bytes rounded to vectors (measured: docs/notes/planner.md). */
static int cpu_vec_suits(const nc_conv_args *k, netcl_dtype dt, double max_bytes)
{
    int64_t ov = (k->O + 15) / 16 * 16, red = k->C * k->KH * k->KW;
    return dt == NETCL_DTYPE_FLOAT32 && k->G == 1 && red >= 64 && 2 * k->O >= ov &&
           4.0 * (double)red * (double)ov <= max_bytes;
}

/* Tiled wins where the reduction per output is short and the channel
 * blocks are few (LeNet's 5x5 layers; ResNet's 64-channel 3x3 layers go
 * to Winograd), and a stem's forward pass on the wide tile
 * (nc_conv_tile_for; stride 1 only, as measured: docs/notes/planner.md).
 * Backward-data runs the flipped convolution, whose reduction is over the
 * output channels. */
static int tiled_suits(const netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    if (!tiled_applicable(g, pass)) return 0;
    /* backward-weight: LeNet's layers where im2col unfolds, copies and
     * splits K to produce a few thousand weights */
    if (pass == NC_CONV_PASS_WEIGHT) return dev->type == NETCL_DEVICE_OPENCL_GPU;
    if (dev->type == NETCL_DEVICE_CPU) {
        /* weights that stay in L2: 1 MiB forward, 96 KiB backward-data */
        nc_conv_args k = nc_conv_tiled_kernel_args(g, pass);
        return cpu_vec_suits(&k, dt, pass == NC_CONV_PASS_FWD ? 1048576.0 : 98304.0);
    }
    /* CPU OpenCL devices: im2col ran steadier than the tiled rows (docs/notes/planner.md) */
    if (dev->type != NETCL_DEVICE_OPENCL_GPU) return 0;
    nc_conv_args k = nc_conv_tiled_kernel_args(g, pass);
    nc_conv_tile t = nc_conv_tile_for(&k, dt, dev->local_mem);
    return t.cb >= 1 && (int64_t)t.tx * t.ty <= dev->max_work_group && k.C / k.G * k.KH * k.KW <= 512 &&
           (k.O / k.G <= 32 || (t.ob == 32 && k.KH * k.KW > 1 && k.SH == 1 && k.SW == 1));
}

/* Forced strategies, checked before NETCL_CONV_ALGO: this thread's (the
 * tuner's measurements) and the process's (netcl_set_conv_algo); -1 none.
 * Neither touches the environment, which other threads may be reading. */
static _Thread_local int thread_algo = -1;
static atomic_int process_algo = -1;
void nc_conv_force_thread(int algo) { thread_algo = algo; }

netcl_status netcl_set_conv_algo(const char *name)
{
    if (!name || !*name) { atomic_store(&process_algo, -1); return NETCL_OK; }
    nc_conv_algo a = nc_conv_algo_from_name(name);
    if (a == NC_CONV_ALGO_COUNT)
        return nc_fail(NETCL_ERR_ARGUMENT, "set_conv_algo: unknown strategy '%s' (auto, direct, depthwise, im2col, gemm1x1, "
                       "winograd2, winograd4, implicit_gemm, tiled)", name);
    atomic_store(&process_algo, a == NC_CONV_AUTO ? -1 : (int)a);
    return NETCL_OK;
}

static nc_conv_algo forced_algo(void)
{
    if (thread_algo >= 0) return (nc_conv_algo)thread_algo;
    int p = atomic_load(&process_algo);
    if (p >= 0) return (nc_conv_algo)p;
    const char *env = getenv("NETCL_CONV_ALGO");
    return env ? nc_conv_algo_from_name(env) : NC_CONV_ALGO_COUNT;
}

/* The planner: a forced choice (netcl_set_conv_algo, NETCL_CONV_ALGO) where it applies, else the
 * tuner's measured winner once it has one, else a rule: depthwise, gemm1x1,
 * tiled for thin layers, implicit GEMM where im2col's unfolded matrix would
 * be large, direct for small convolutions on GPUs, Winograd for 3x3
 * stride-1 ones on GPUs, im2col otherwise. */
static nc_conv_algo plan_rule(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);

/* A strategy whose scratch would pass the workspace limit gives way to
 * implicit GEMM, which unfolds nothing. */
nc_conv_algo nc_conv_plan(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    nc_conv_algo forced = forced_algo();
    if (forced < NC_CONV_ALGO_COUNT && forced != NC_CONV_AUTO && nc_conv_applicable(forced, g, pass)) return forced;
    nc_conv_algo tuned = nc_conv_tuned(dev, g, pass, dt);
    nc_conv_algo a = tuned != NC_CONV_AUTO ? tuned : plan_rule(dev, g, pass, dt);
    return nc_conv_workspace_bytes(a, g, pass, dt) > nc_conv_workspace_limit_on(dev) ? NC_CONV_IGEMM : a;
}

static nc_conv_algo plan_rule(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    if (nc_conv_applicable(NC_CONV_DEPTHWISE, g, pass)) return NC_CONV_DEPTHWISE;
    /* larger depthwise windows: one direct kernel beats unfolding a GEMM
     * of one row per channel */
    if (g->G == g->C && g->G > 1 && dev->type == NETCL_DEVICE_OPENCL_GPU) return NC_CONV_DIRECT;
    /* gemm1x1 runs per-image products over H*W columns; on a GPU, rows of
     * H*W not a multiple of 4 (ResNet-50's 7x7 stage) keep those off the
     * tensor-core and cp.async kernels, and im2col's one product over
     * N*H*W columns takes them */
    if (nc_conv_applicable(NC_CONV_GEMM1X1, g, pass) && (dev->type != NETCL_DEVICE_OPENCL_GPU || (g->H * g->W) % 4 == 0))
        return NC_CONV_GEMM1X1;
    /* on the cpu, float32 3x3 stride-1 layers of 64 channels or more take
     * Winograd (conv_winograd.c's vectorised transforms, 36 products through
     * the BLAS) over the direct tiled kernels; F(4x4) down to 4x4 outputs
     * (measurements in docs/notes/kernels.md) */
    if (dev->type == NETCL_DEVICE_CPU && dt == NETCL_DTYPE_FLOAT32 && g->C >= 64 && g->O >= 64 &&
        nc_conv_applicable(NC_CONV_WINOGRAD4, g, pass))
        return g->OH >= 4 && g->OW >= 4 ? NC_CONV_WINOGRAD4 : NC_CONV_WINOGRAD2;
    if (tiled_suits(dev, g, pass, dt)) return NC_CONV_TILED;
    /* the cpu's float32 backward-weight as vectors (the implicit_gemm entry
     * there): a window past 1x1 and a weight gradient of at most 128 KiB
     * (the demo's and LeNet's second layers; ResNet's larger ones lost) */
    if (dev->type == NETCL_DEVICE_CPU && pass == NC_CONV_PASS_WEIGHT && g->KH * g->KW > 1 && cpu_vec_suits(g, dt, 131072.0))
        return NC_CONV_IGEMM;
    /* Winograd and the others below unfold nothing as large as im2col's
     * [N, C*KH*KW, OH*OW] (in the data pass, its adjoint): past an eighth of
     * the device's memory (a large image batch), gather instead. 16-bit
     * layers run it too, in float32 with TF32 products (wino_dtype). */
    int winograd_ok = dev->type == NETCL_DEVICE_OPENCL_GPU && g->C >= 16 && g->O >= 16 && nc_dtype_is_float(dt) &&
                      nc_conv_applicable(NC_CONV_WINOGRAD4, g, pass);
    if (!winograd_ok && nc_conv_workspace_bytes(NC_CONV_IM2COL, g, pass, dt) > nc_conv_workspace_limit_on(dev)) return NC_CONV_IGEMM;
    /* on a GPU a small convolution is launch-bound: one direct kernel beats
     * im2col's unfold, copies and GEMM (about 16M multiply-adds or fewer) */
    double macs = (double)g->N * (double)g->O * (double)g->OH * (double)g->OW * (double)(g->C / g->G) * (double)g->KH *
                  (double)g->KW;
    if (dev->type == NETCL_DEVICE_OPENCL_GPU && macs <= 16e6) return NC_CONV_DIRECT;
    /* an implicit GEMM at a product's speed (the FFMA kernel's gathers on
     * NVIDIA) saves the unfold; not where float32 products run on tensor
     * cores (TF32 modes), which im2col's GEMM uses and the FFMA kernel not */
    int tf32 = dt == NETCL_DTYPE_FLOAT32 && nc_fp32_mode() != NC_FP32_IEEE;
    if (!winograd_ok && !tf32 && dev->backend->conv.implicit_gemm_fast && dev->backend->conv.implicit_gemm_fast(dev, g, pass, dt) > 0)
        return NC_CONV_IGEMM;
    /* on a GPU, Winograd does 3x3 stride-1 passes in 2.25x (F(2x2)) or 4x
     * (F(4x4)) fewer multiplies; F(4x4) wins from 8x8 outputs up; few
     * channels leave its batched GEMMs too thin to pay for the transforms */
    if (winograd_ok) return g->OH >= 8 && g->OW >= 8 ? NC_CONV_WINOGRAD4 : NC_CONV_WINOGRAD2;
    return NC_CONV_IM2COL;
}

/* ---- the planner as the user sees it ------------------------------------------------ */

netcl_status netcl_conv2d_strategy(netcl_device *dev, netcl_dtype dtype, const int64_t *x_sizes, const int64_t *w_sizes,
                                   const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                                   int pass, char *buf, int64_t len)
{
    if (!dev || !x_sizes || !w_sizes || !stride || !padding || !dilation || !buf || len <= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "conv2d_strategy: missing device, sizes or buffer");
    if (pass < NC_CONV_PASS_FWD || pass > NC_CONV_PASS_WEIGHT || !nc_dtype_is_float(dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "conv2d_strategy: pass %d (0 forward, 1 data, 2 weight) or dtype %s invalid", pass,
                       netcl_dtype_name(dtype));
    int64_t G = groups;
    if (G < 1 || x_sizes[1] != w_sizes[1] * G || w_sizes[0] % G)
        return nc_fail(NETCL_ERR_ARGUMENT, "conv2d_strategy: input channels %lld do not match weight [%lld, %lld, ...] with "
                       "groups = %lld", (long long)x_sizes[1], (long long)w_sizes[0], (long long)w_sizes[1], (long long)G);
    nc_conv_args g = {x_sizes[0], x_sizes[1], x_sizes[2], x_sizes[3], w_sizes[0], G, w_sizes[2], w_sizes[3], stride[0],
                      stride[1], padding[0], padding[1], dilation[0], dilation[1], 0, 0};
    g.OH = nc_window_positions(g.H, g.KH, g.SH, g.PH, g.DH, 0);
    g.OW = nc_window_positions(g.W, g.KW, g.SW, g.PW, g.DW, 0);
    if (g.OH <= 0 || g.OW <= 0 || g.SH <= 0 || g.SW <= 0 || g.DH <= 0 || g.DW <= 0 || g.PH < 0 || g.PW < 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "conv2d_strategy: the window does not fit the input (or a stride, padding or "
                       "dilation is invalid)");
    snprintf(buf, (size_t)len, "%s", nc_conv_algo_name(nc_conv_plan(dev, &g, (nc_conv_pass)pass, dtype)));
    return NETCL_OK;
}
