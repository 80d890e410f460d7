/* conv_implicit.c — host side of the convolution family's implicit GEMM on
 * OpenCL devices: gemm.cl's gemm_tiled with kernels/conv_implicit.cl's
 * gathers (program "conv_implicit+gemm"), one launch per pass, the GEMM's
 * batch running over the groups (times the K slices of backward-weight).
 * The gathers divide by runtime sizes through magic numbers computed here.
 * Where the FFMA kernel serves (gemm_mma.c: NVIDIA sm_80+, float32,
 * groups 1), the forward and backward-weight passes run on it instead, x
 * gathered by its cp.async copies. */
#include "gemm.h"
#include <stdio.h>
#include <string.h>

/* The GEMM of one pass: sizes, and which operand plays a and which w. */
typedef struct {
    int64_t M, N, K, batches;
    const nc_desc *ga, *gw;          /* the kernel's a and w arguments */
    int kfast_a, kfast_b;            /* gathered operands' load direction; -1: plain strides */
    int64_t div[4];                  /* K', KW, pixels per image, pixels per row */
} conv_gemm;

static void plan(nc_conv_pass pass, const nc_conv_args *g, const nc_desc *a, const nc_desc *b, int kslices, conv_gemm *p)
{
    int64_t Cg = g->C / g->G, Og = g->O / g->G, KK = g->KH * g->KW, L = g->OH * g->OW, P = g->H * g->W;
    int data = pass == NC_CONV_PASS_DATA;
    if (pass == NC_CONV_PASS_FWD)          /* y = w [Og, Cg*K'] @ unfold(x) */
        *p = (conv_gemm){Og, g->N * L, Cg * KK, g->G, b, a, -1, 0, {0}};
    else if (data)                         /* dx = w^T [Cg, Og*K'] @ scatter(dy) */
        *p = (conv_gemm){Cg, g->N * P, Og * KK, g->G, b, a, 1, 0, {0}};
    else                                   /* dw = dy [Og, imgs*L] @ unfold(x)^T, in K slices */
        *p = (conv_gemm){Og, Cg * KK, g->N * L, g->G * kslices, b, a, 1, 1, {0}};
    p->div[0] = KK, p->div[1] = g->KW, p->div[2] = data ? P : L, p->div[3] = data ? g->W : g->OW;
}

/* A tile configuration: the device's default for a GEMM of these sizes
 * (the tuner's classes are for plain products), small tiles on CPUs. */
static void choose(const nc_gemm_call *c, nc_gemm_cfg *cfg)
{
    if (c->dev->type == NETCL_DEVICE_OPENCL_CPU) {
        *cfg = (nc_gemm_cfg){NC_GEMM_TILED, 32, 32, 16, 8, 8, 2, 2, 1, 0, 0, 0, 0, 0};
        return;
    }
    nc_gemm_default(c, cfg);
}

/* the planner's question (backend conv_gemm_fast): does this pass's
 * implicit GEMM run on the pipelined kernel, at a plain product's speed?
 * (backward-weight: in how many K slices). Against im2col: 1x1 windows
 * gather x as a strided read, which pays in the forward pass but not in
 * backward-weight; with fewer than 64 output pixels an image (ResNet-18's
 * 256->512 3x3 layer's 4x4) the gathers lose both passes (measurements,
 * examples/bench/layers.lua: docs/notes/kernels.md). */
int64_t nc_cl_conv_gemm_fast(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    if (g->KH * g->KW == 1) return pass == NC_CONV_PASS_FWD ? nc_ffma_conv_usable(dev, g, pass, dt) : 0;
    return g->OH * g->OW >= 64 ? nc_ffma_conv_usable(dev, g, pass, dt) : 0;
}

netcl_status nc_cl_conv_gemm(netcl_device *dev, nc_conv_pass pass, const nc_conv_args *g, const nc_desc *out,
                             const nc_desc *a, const nc_desc *b, const nc_conv_epi *epi, int kslices)
{
    static const char *const names[3] = {"conv2d (implicit gemm)", "conv2d backward-data (implicit gemm)",
                                         "conv2d backward-weight (implicit gemm)"};
    NC_TRY(nc_cl_enter(dev, names[pass], a->dtype, out->dtype));
    if (kslices < 1 || pass != NC_CONV_PASS_WEIGHT) kslices = 1;
    if (pass != NC_CONV_PASS_DATA) {   /* the FFMA kernel where it serves (it says NETCL_ERR_UNSUPPORTED otherwise) */
        nc_gemm_epi e = {1, 0, NULL, NULL, 1, -1, 0, NC_FP32_IEEE};   /* float32 FMAs */
        if (pass == NC_CONV_PASS_FWD && epi) e.bias = epi->bias, e.act = epi->act, e.act_p = epi->act_p;
        netcl_status st = nc_ffma_conv_launch(dev, g, pass, out, a, b, &e, kslices);
        if (st != NETCL_ERR_UNSUPPORTED) return st;   /* else the tiled kernel below */
    }
    conv_gemm p;
    plan(pass, g, a, b, kslices, &p);
    if (p.M * g->G > INT32_MAX || p.N > INT32_MAX || p.K > INT32_MAX || p.batches > INT32_MAX)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s: a %lld x %lld x %lld product exceeds the OpenCL kernels' 32-bit sizes",
                       names[pass], (long long)p.M, (long long)p.N, (long long)p.K);
    /* a's plain strides (forward's w [G, Og, K]); gathered operands need none */
    nc_desc da = *p.ga, dw = *p.gw, dout = *out;
    da.ndim = dw.ndim = dout.ndim = 3;
    memset(da.strides, 0, sizeof da.strides);
    memset(dw.strides, 0, sizeof dw.strides);
    if (p.kfast_a < 0) da.strides[0] = p.M * p.K, da.strides[1] = p.K, da.strides[2] = 1;
    da.sizes[0] = dw.sizes[0] = dout.sizes[0] = p.batches;
    da.sizes[1] = p.M, da.sizes[2] = p.K, dw.sizes[1] = p.K, dw.sizes[2] = p.N, dout.sizes[1] = p.M, dout.sizes[2] = p.N;
    nc_gemm_epi e = {1, 0, NULL, NULL, 1, -1, 0, NC_FP32_IEEE};   /* gemm_tiled: float32 FMAs */
    if (pass != NC_CONV_PASS_WEIGHT && epi) e.bias = epi->bias, e.act = epi->act, e.act_p = epi->act_p;
    nc_gemm_call c = {dev, &dout, &da, &dw, &e, p.batches, p.M, p.N, p.K};
    nc_gemm_cfg cfg;
    choose(&c, &cfg);
    char extra[32];
    snprintf(extra, sizeof extra, " -DCONV_PASS=%d", (int)pass);
    cl_kernel k;
    size_t global[3], local[3];
    netcl_status st = nc_gemm_tiled_kernel(&c, &cfg, "conv_implicit+gemm", extra, p.kfast_a, p.kfast_b, &k, global, local);
    if (st == NETCL_ERR_UNSUPPORTED) {   /* a device with little local memory or small groups */
        cfg = (nc_gemm_cfg){NC_GEMM_TILED, 16, 16, 8, 4, 4, 1, 1, 1, 0, 0, 0, 0, 0};
        st = nc_gemm_tiled_kernel(&c, &cfg, "conv_implicit+gemm", extra, p.kfast_a, p.kfast_b, &k, global, local);
    }
    if (st == NETCL_ERR_UNSUPPORTED) return nc_fail(st, "%s: no GEMM tile configuration fits %s", names[pass], dev->name);
    NC_TRY(st);
    NC_TRY(nc_gemm_set_args(&c, k));
    cl_int4 dv;
    cl_uint4 dm;
    cl_int4 ds;
    for (int i = 0; i < 4; i++) {
        dv.s[i] = (cl_int)p.div[i];
        nc_cl_fdiv_magic(p.div[i], &dm.s[i], &ds.s[i]);
    }
    cl_int ks = kslices;
    NETCL_CL_CHECK(nc_cl.clSetKernelArg(k, 29, sizeof *g, g));
    NC_ARG(k, 30, dv); NC_ARG(k, 31, dm); NC_ARG(k, 32, ds); NC_ARG(k, 33, ks);
    return nc_cl_launch_nd(nc_cl_dev(dev), k, 3, global, local);
}
