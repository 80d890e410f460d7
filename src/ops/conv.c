/* conv.c — 2-D convolution passes (forward, backward-data,
 * backward-weight) with several strategies (conv_plan.c picks one):
 *   direct     the reference kernels (any geometry)
 *   depthwise  groups = C (any channel multiplier), windows up to 81 taps:
 *              kernels of their own (the window compiled in)
 *   im2col     unfold + one GEMM per group for the whole batch (+ fold)
 *   gemm1x1    1x1 stride-1 unpadded: the GEMM on the input as it is
 *   winograd2  F(2x2, 3x3) and winograd4 F(4x4, 3x3): 3x3, stride 1,
 *              dilation 1, groups 1 (all three passes; backward-weight
 *              through the transforms' adjoints)
 *   implicit_gemm  the GEMM with the input gathered tile by tile, never
 *              unfolded (any geometry, all three passes)
 *   tiled      direct convolution through local-memory tiles of input and
 *              weights (forward; backward-data at stride 1, groups 1;
 *              backward-weight of small weights, image by image)
 * netcl_set_conv_algo or NETCL_CONV_ALGO=<name> forces one wherever it
 * applies (the planner's choice elsewhere: conv_plan.c). Every pass returns
 * a new contiguous tensor. Forward and backward-data passes take an epilogue (bias, activation), fused into
 * the kernels by implicit_gemm, tiled, im2col and gemm1x1 (one group) and
 * applied after the others. */
#include "ops/ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------- */

#define R(t) netcl_tensor_release(t)

/* A scratch list: every temporary of a strategy, released at the end. */
typedef struct { netcl_tensor *t[24]; int n; netcl_status st; } scratch;

static netcl_tensor *keep(scratch *s, netcl_status st, netcl_tensor *t)
{
    if (s->st != NETCL_OK) { R(t); return NULL; }
    if (st != NETCL_OK || s->n == 24) { s->st = st != NETCL_OK ? st : nc_fail(NETCL_ERR_BACKEND, "conv2d: scratch full"); R(t); return NULL; }
    s->t[s->n++] = t;
    return t;
}

static netcl_status finish(scratch *s, netcl_tensor **out, netcl_tensor *res)
{
    if (s->st == NETCL_OK && res) { netcl_tensor_retain(res); *out = res; }
    for (int i = 0; i < s->n; i++) R(s->t[i]);
    return s->st;
}

static netcl_tensor *view(scratch *s, netcl_tensor *t, int nd, const int64_t *sizes)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_tensor_reshape(&o, t, nd, sizes);
    return keep(s, r, o);
}
static netcl_tensor *transpose(scratch *s, netcl_tensor *t, int a, int b)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_tensor_transpose(&o, t, a, b);
    return keep(s, r, o);
}
static netcl_tensor *contig(scratch *s, netcl_tensor *t)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_tensor_contiguous(&o, t);
    return keep(s, r, o);
}
static netcl_tensor *mm(scratch *s, netcl_tensor *a, netcl_tensor *b)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_matmul(&o, a, b);
    return keep(s, r, o);
}
static netcl_tensor *unfold(scratch *s, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p, const int64_t *st)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_unfold(&o, x, k, d, p, st);
    return keep(s, r, o);
}
/* unfold into [K, N, L] storage (one GEMM's [K, N*L] operand, no copy) */
static netcl_tensor *unfold_kn(scratch *s, netcl_tensor *x, const int64_t *k, const int64_t *d, const int64_t *p,
                               const int64_t *st)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_unfold_kn(&o, x, k, d, p, st);
    return keep(s, r, o);
}
static netcl_tensor *fold(scratch *s, netcl_tensor *c, const int64_t *size, const int64_t *k, const int64_t *d,
                          const int64_t *p, const int64_t *st)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_fold(&o, c, size, k, d, p, st);
    return keep(s, r, o);
}
static netcl_tensor *sum_dim(scratch *s, netcl_tensor *t, int dim)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_reduce(&o, NETCL_OP_SUM, t, dim, 0);
    return keep(s, r, o);
}
static netcl_tensor *sum0(scratch *s, netcl_tensor *t) { return sum_dim(s, t, 0); }
static netcl_tensor *sum1(scratch *s, netcl_tensor *t) { return sum_dim(s, t, 1); }
static netcl_tensor *empty_dt(scratch *s, netcl_tensor *like, netcl_dtype dt, int nd, const int64_t *sizes)
{
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_tensor_new(&o, nc_dev(like), dt, nd, sizes);
    return keep(s, r, o);
}
static netcl_tensor *empty(scratch *s, netcl_tensor *like, int nd, const int64_t *sizes)
{
    return s->st != NETCL_OK ? NULL : empty_dt(s, like, like->dtype, nd, sizes);
}
static void kernel(scratch *s, nc_conv_kernel k, const nc_conv_args *g, netcl_tensor *out, netcl_tensor *a,
                   netcl_tensor *b, int64_t p0, int64_t p1)
{
    if (s->st != NETCL_OK || netcl_tensor_numel(out) == 0) return;
    nc_desc o, x, y;
    nc_desc_of(&o, out);
    nc_desc_of(&x, a);
    if (b) nc_desc_of(&y, b);
    s->st = nc_dev(out)->backend->conv.kernel(nc_dev(out), k, g, &o, &x, b ? &y : NULL, p0, p1);
}

/* a @ b with the epilogue f along a's rows (the output channels), or plain */
static netcl_tensor *mm_fused(scratch *s, netcl_tensor *a, netcl_tensor *b, const nc_conv_fuse *f)
{
    if (!f) return mm(s, a, b);
    netcl_tensor *o = NULL;
    if (s->st != NETCL_OK) return NULL;
    netcl_status r = nc_fwd_gemm_rowbias(&o, a, b, f->bias, f->act, f->act_p);
    return keep(s, r, o);
}

/* the backend's form of an epilogue (NULL for none); bd holds the bias */
static const nc_conv_epi *backend_epi(const nc_conv_fuse *f, nc_desc *bd, nc_conv_epi *e)
{
    if (!f) return NULL;
    if (f->bias) nc_desc_of(bd, f->bias);
    *e = (nc_conv_epi){f->bias ? bd : NULL, f->act, f->act_p};
    return e;
}

static void run_conv_gemm(scratch *s, nc_conv_pass pass, const nc_conv_args *g, netcl_tensor *out, netcl_tensor *a,
                          netcl_tensor *b, const nc_conv_fuse *f, int slices)
{
    if (s->st != NETCL_OK || netcl_tensor_numel(out) == 0) return;
    nc_desc o, x, y, bd;
    nc_conv_epi e;
    nc_desc_of(&o, out);
    nc_desc_of(&x, a);
    nc_desc_of(&y, b);
    s->st = nc_dev(out)->backend->conv.implicit_gemm(nc_dev(out), pass, g, &o, &x, &y, backend_epi(f, &bd, &e), slices);
}

static void run_conv_tiled(scratch *s, const nc_conv_args *g, netcl_tensor *out, netcl_tensor *x, netcl_tensor *w,
                           const nc_conv_fuse *f, int flip)
{
    if (s->st != NETCL_OK || netcl_tensor_numel(out) == 0) return;
    nc_desc o, xd, wd, bd;
    nc_conv_epi e;
    nc_desc_of(&o, out);
    nc_desc_of(&xd, x);
    nc_desc_of(&wd, w);
    s->st = nc_dev(out)->backend->conv.tiled(nc_dev(out), g, &o, &xd, &wd, backend_epi(f, &bd, &e), flip);
}

/* [N, O, OH, OW] -> [G, O/G, N*L] (a copy when N > 1) */
static netcl_tensor *by_group(scratch *s, netcl_tensor *t, int64_t G)
{
    int64_t N = t->sizes[0], C = t->sizes[1], L = t->sizes[2] * t->sizes[3], shape[3] = {G, C / G, N * L};
    return view(s, N > 1 ? transpose(s, t, 0, 1) : t, 3, shape);
}

/* [G, O/G, N*L] -> contiguous [N, O, OH, OW] */
static netcl_tensor *to_nchw(scratch *s, netcl_tensor *y, int64_t N, int64_t O, int64_t OH, int64_t OW)
{
    int64_t shape[4] = {O, N, OH, OW};
    netcl_tensor *v = view(s, y, 4, shape);
    return N > 1 ? contig(s, transpose(s, v, 0, 1)) : view(s, v, 4, (int64_t[]){N, O, OH, OW});
}

/* ---- strategies ------------------------------------------------------------------- */

/* im2col for one group and large images (L = OH*OW >= 256): one GEMM per
 * sample as a strided batch with the weight broadcast, so neither cols nor
 * dy is transposed or copied (the flat form below transposes dy and the
 * output, N*O*L elements each; its columns are built in [K, N, L] storage);
 * backward-weight sums per-sample [O, K] products, unless those would
 * outgrow 32M elements, where the flat form's split-K serves. */
static int per_sample(const nc_conv_args *g, nc_conv_pass pass)
{
    if (g->G != 1 || g->OH * g->OW < 256) return 0;
    return pass != NC_CONV_PASS_WEIGHT || g->N * g->O * g->C * g->KH * g->KW <= ((int64_t)32 << 20);
}

static netcl_tensor *im2col_per_sample(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b,
                                       const nc_conv_fuse *f)
{
    int64_t k[2] = {g->KH, g->KW}, d[2] = {g->DH, g->DW}, p[2] = {g->PH, g->PW}, st[2] = {g->SH, g->SW};
    int64_t K = g->C * g->KH * g->KW, L = g->OH * g->OW, N = g->N, O = g->O;
    if (pass == NC_CONV_PASS_DATA) {   /* a dy, b w: cols[n] = w^T dy[n], then fold */
        /* w^T copied (O*K elements): a column-major operand broadcast over
         * the batch runs much slower than a row-major one */
        netcl_tensor *wt = contig(s, transpose(s, view(s, b, 3, (int64_t[]){1, O, K}), 1, 2));
        netcl_tensor *dc = mm(s, wt, view(s, a, 3, (int64_t[]){N, O, L}));          /* [N, K, L] */
        return fold(s, dc, (int64_t[]){g->H, g->W}, k, d, p, st);
    }
    netcl_tensor *cols = unfold(s, a, k, d, p, st);                                   /* [N, K, L] */
    if (pass == NC_CONV_PASS_WEIGHT) { /* dw = sum over n of dy[n] cols[n]^T */
        netcl_tensor *per = mm(s, view(s, b, 3, (int64_t[]){N, O, L}), transpose(s, cols, 1, 2));
        return view(s, sum0(s, per), 4, (int64_t[]){O, g->C, g->KH, g->KW});
    }
    netcl_tensor *wv = view(s, b, 3, (int64_t[]){1, O, K});
    /* rows of K not a multiple of 4 (the 7x7 stem's 147) keep the tensor-core
     * kernels, which copy 16-byte chunks along a contiguous dim, off a
     * K-contiguous weight: on devices it goes in O-contiguous (a copy of
     * O*K elements) */
    if (K % 4 && O % 8 == 0 && nc_dev(b)->type != NETCL_DEVICE_CPU) wv = transpose(s, contig(s, transpose(s, wv, 1, 2)), 1, 2);
    netcl_tensor *y = mm_fused(s, wv, cols, f);                                      /* [N, O, L] */
    return view(s, y, 4, (int64_t[]){N, O, g->OH, g->OW});
}

/* f: the forward epilogue, fused into the product for one group (NULL:
 * none or left to the caller) */
static netcl_tensor *im2col_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b,
                                 const nc_conv_fuse *f)
{
    int64_t k[2] = {g->KH, g->KW}, d[2] = {g->DH, g->DW}, p[2] = {g->PH, g->PW}, st[2] = {g->SH, g->SW};
    int64_t G = g->G, K = g->C * g->KH * g->KW, L = g->OH * g->OW, N = g->N;
    if (per_sample(g, pass)) return im2col_per_sample(s, g, pass, a, b, f);
    /* the columns in [K, N, L] storage: the GEMM's operand as it is, and
     * fold reads the product's [N, K, L] view in place */
    if (pass == NC_CONV_PASS_DATA) {   /* a dy, b w: cols = w^T dy, then fold */
        netcl_tensor *wt = transpose(s, view(s, b, 3, (int64_t[]){G, g->O / G, K / G}), 1, 2);
        netcl_tensor *dc = mm(s, wt, by_group(s, a, G));                              /* [G, K/G, N*L] */
        netcl_tensor *dn = view(s, dc, 3, (int64_t[]){K, N, L});
        return fold(s, transpose(s, dn, 0, 1), (int64_t[]){g->H, g->W}, k, d, p, st);
    }
    netcl_tensor *c2 = view(s, unfold_kn(s, a, k, d, p, st), 3, (int64_t[]){G, K / G, N * L});
    if (pass == NC_CONV_PASS_WEIGHT) { /* dw = dy cols^T */
        netcl_tensor *dw = mm(s, by_group(s, b, G), transpose(s, c2, 1, 2));          /* [G, O/G, K/G] */
        return view(s, dw, 4, (int64_t[]){g->O, g->C / G, g->KH, g->KW});
    }
    netcl_tensor *y = mm_fused(s, view(s, b, 3, (int64_t[]){G, g->O / G, K / G}), c2, f);   /* [G, O/G, N*L] */
    return to_nchw(s, y, N, g->O, g->OH, g->OW);
}

static netcl_tensor *gemm1x1_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b,
                                  const nc_conv_fuse *f)
{
    int64_t N = g->N, HW = g->H * g->W;
    if (pass == NC_CONV_PASS_WEIGHT) {  /* sum over n of dy[n] x[n]^T */
        netcl_tensor *x3 = view(s, a, 3, (int64_t[]){N, g->C, HW}), *dy3 = view(s, b, 3, (int64_t[]){N, g->O, HW});
        netcl_tensor *per = mm(s, dy3, transpose(s, x3, 1, 2));                       /* [N, O, C] */
        return view(s, sum0(s, per), 4, (int64_t[]){g->O, g->C, 1, 1});
    }
    netcl_tensor *w2 = view(s, b, 2, (int64_t[]){g->O, g->C});
    if (pass == NC_CONV_PASS_DATA) {
        netcl_tensor *dx = mm(s, transpose(s, w2, 0, 1), view(s, a, 3, (int64_t[]){N, g->O, HW}));
        return view(s, dx, 4, (int64_t[]){N, g->C, g->H, g->W});
    }
    netcl_tensor *y = mm_fused(s, w2, view(s, a, 3, (int64_t[]){N, g->C, HW}), f);
    return view(s, y, 4, (int64_t[]){N, g->O, g->OH, g->OW});
}

/* The transforms' and products' dtype: float32 for 16-bit operands. F(4x4)'s
 * transforms scale by up to 8 and 1/24 and cancel large terms; kept in
 * float16 they were off by 1.1% of the output's largest value (bfloat16:
 * 6%) on a 3-channel 8x8 layer, where rounding the output alone costs
 * 0.03% (0.35%); in float32 they match the direct kernels. Their float32
 * products then run in TF32 (winograd_pass): its 11 significant bits are
 * float16's and more than bfloat16's 8, so a 16-bit layer keeps the
 * precision of a 16-bit product and gets the tensor cores. */
static netcl_dtype wino_dtype(const netcl_tensor *x)
{
    return x->dtype == NETCL_DTYPE_FLOAT16 || x->dtype == NETCL_DTYPE_BFLOAT16 ? NETCL_DTYPE_FLOAT32 : x->dtype;
}

/* forward on (x, w) with geometry g; flip: w is the original [C, O] weight */
static netcl_tensor *winograd_fwd(scratch *s, const nc_conv_args *g, int64_t m, netcl_tensor *x, netcl_tensor *w, int flip)
{
    int64_t th = (g->OH + m - 1) / m, tw = (g->OW + m - 1) / m, P = g->N * th * tw, T = (m + 2) * (m + 2);
    netcl_dtype wd = wino_dtype(x);
    netcl_tensor *V = empty_dt(s, x, wd, 3, (int64_t[]){T, g->C, P}), *U = empty_dt(s, x, wd, 3, (int64_t[]){T, g->O, g->C});
    kernel(s, NC_WINO_INPUT, g, V, x, NULL, m, 0);
    kernel(s, NC_WINO_WEIGHT, g, U, w, NULL, m, flip);
    netcl_tensor *M = mm(s, U, V);
    netcl_tensor *y = empty(s, x, 4, (int64_t[]){g->N, g->O, g->OH, g->OW});
    kernel(s, NC_WINO_OUTPUT, g, y, M, NULL, m, 0);
    return y;
}

/* Tiles per block of the backward-weight layouts: the [T, O, C] products'
 * K (the P tiles) is cut into blocks so that the batched GEMM has about two
 * output tiles per compute unit (as linalg.c's split-K), blocks of at
 * least 1024 tiles and at most 4096, a multiple of 8 (aligned operands for
 * the tensor-core path). */
static int64_t wino_block(const netcl_device *dev, const nc_conv_args *g, int64_t T, int64_t P)
{
    int64_t tiles = T * ((g->O + 127) / 128) * ((g->C + 127) / 128), S = (P + 4095) / 4096;
    if (dev->type != NETCL_DEVICE_CPU) {
        int64_t want = 2 * (dev->compute_units > 0 ? dev->compute_units : 16), s2 = (want + tiles - 1) / tiles;
        if (s2 > P / 1024) s2 = P / 1024;
        if (s2 > S) S = s2;
    }
    return ((P + S - 1) / S + 7) / 8 * 8;
}

/* backward-weight: dU[t] = dM[t] V[t]^T with dM the output transform's
 * adjoint applied to dy and V the input transform of x, summed over the
 * blocks of tiles; dw = the weight transform's adjoint of dU */
static netcl_tensor *winograd_weight(scratch *s, const nc_conv_args *g, int64_t m, netcl_tensor *x, netcl_tensor *dy)
{
    int64_t th = (g->OH + m - 1) / m, tw = (g->OW + m - 1) / m, P = g->N * th * tw, T = (m + 2) * (m + 2);
    int64_t ps = wino_block(nc_dev(x), g, T, P), S = (P + ps - 1) / ps, O = g->O, C = g->C;
    netcl_dtype wd = wino_dtype(x);
    netcl_tensor *V = empty_dt(s, x, wd, 3, (int64_t[]){T * S, C, ps}), *D = empty_dt(s, x, wd, 3, (int64_t[]){T * S, O, ps});
    kernel(s, NC_WINO_INPUT, g, V, x, NULL, m, ps);
    kernel(s, NC_WINO_OUTPUT_GRAD, g, D, dy, NULL, m, ps);
    netcl_tensor *dU = mm(s, D, transpose(s, V, 1, 2));                               /* [T*S, O, C] */
    if (S > 1) dU = sum1(s, view(s, dU, 3, (int64_t[]){T, S, O * C}));
    netcl_tensor *dw = empty(s, x, 4, (int64_t[]){O, C, 3, 3});
    kernel(s, NC_WINO_WEIGHT_GRAD, g, dw, dU, NULL, m, 0);
    return dw;
}

static netcl_tensor *winograd_run(scratch *s, const nc_conv_args *g, nc_conv_pass pass, int64_t m, netcl_tensor *a,
                                  netcl_tensor *b)
{
    if (pass == NC_CONV_PASS_FWD) return winograd_fwd(s, g, m, a, b, 0);
    if (pass == NC_CONV_PASS_WEIGHT) return winograd_weight(s, g, m, a, b);
    /* backward-data of a stride-1 3x3 conv: a forward conv of dy with the
     * flipped, transposed weights and padding 2 - p */
    nc_conv_args t = {g->N, g->O, g->OH, g->OW, g->C, 1, 3, 3, 1, 1, 2 - g->PH, 2 - g->PW, 1, 1, g->H, g->W};
    return winograd_fwd(s, &t, m, a, b, 1);
}

static netcl_tensor *winograd_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, int64_t m, netcl_tensor *a,
                                   netcl_tensor *b)
{
    if (wino_dtype(a) == a->dtype) return winograd_run(s, g, pass, m, a, b);
    int old = nc_fp32_scope(NC_FP32_TF32);
    netcl_tensor *r = winograd_run(s, g, pass, m, a, b);
    nc_fp32_scope(old);
    return r;
}

/* K slices of the implicit backward-weight GEMM: its output [O, C/G*K']
 * has few tiles and its K (images x pixels) is long, so on a GPU the K
 * range is cut until about two tiles per compute unit run (as linalg.c's
 * split-K), slices of at least 1024; a backend kernel that wants its own
 * count says so (conv_gemm_fast) */
static int weight_slices(netcl_device *dev, const nc_conv_args *g, netcl_dtype dt)
{
    if (dev->type == NETCL_DEVICE_CPU) return 1;
    int64_t fast = dev->backend->conv.implicit_gemm_fast ? dev->backend->conv.implicit_gemm_fast(dev, g, NC_CONV_PASS_WEIGHT, dt) : 0;
    if (fast > 0) return fast < INT32_MAX ? (int)fast : 1;
    int64_t og = g->O / g->G, n = g->C / g->G * g->KH * g->KW, K = g->N * g->OH * g->OW;
    int64_t tiles = g->G * ((og + 63) / 64) * ((n + 63) / 64), want = 2 * (dev->compute_units > 0 ? dev->compute_units : 16);
    if (tiles >= want || K < 2048) return 1;
    int64_t sl = (want + tiles - 1) / tiles;
    if (sl > K / 1024) sl = K / 1024;
    return sl < 2 ? 1 : (int)sl;
}

static netcl_tensor *igemm_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b,
                                const nc_conv_fuse *f)
{
    if (pass == NC_CONV_PASS_WEIGHT) {
        int sl = weight_slices(nc_dev(a), g, a->dtype);
        int64_t n = g->C / g->G * g->KH * g->KW;
        netcl_tensor *part = empty(s, a, 3, (int64_t[]){sl, g->O, n});
        run_conv_gemm(s, pass, g, part, a, b, NULL, sl);
        return view(s, sl > 1 ? sum0(s, part) : part, 4, (int64_t[]){g->O, g->C / g->G, g->KH, g->KW});
    }
    int64_t shape[2][4] = {{g->N, g->O, g->OH, g->OW}, {g->N, g->C, g->H, g->W}};
    netcl_tensor *out = empty(s, a, 4, shape[pass]);
    run_conv_gemm(s, pass, g, out, a, b, f, 1);
    return out;
}

/* Backward-weight passes that sum parts of images: parts of *per images
 * each, about four work-groups (the pass's `blocks` a part times the
 * parts) a compute unit; returns the number of parts (the batch is never
 * empty here: nc_fwd_conv2d_fused answers that itself). */
static int64_t image_parts(const netcl_device *dev, int64_t N, int64_t blocks, int64_t *per)
{
    int64_t cu = dev->compute_units > 0 ? dev->compute_units : 1, S = (4 * cu + blocks - 1) / blocks;
    *per = N > S ? (N + S - 1) / S : 1;
    return (N + *per - 1) / *per;
}

/* backward-weight: a x, b dy, in parts of images (blocks: channel blocks x
 * groups), summed */
static netcl_tensor *tiled_weight(scratch *s, const nc_conv_args *g, netcl_tensor *a, netcl_tensor *b)
{
    netcl_device *dev = nc_dev(a);
    int64_t per, S = image_parts(dev, g->N, nc_tw_blocks(g), &per);
    int64_t wshape[4] = {g->O, g->C / g->G, g->KH, g->KW};
    netcl_tensor *parts = empty(s, a, 5, (int64_t[]){S, g->O, g->C / g->G, g->KH, g->KW});
    if (s->st == NETCL_OK && netcl_tensor_numel(parts) > 0) {
        nc_desc p, x, y;
        nc_desc_of(&p, parts);
        nc_desc_of(&x, a);
        nc_desc_of(&y, b);
        s->st = dev->backend->conv.tiled_weight(dev, g, &p, &x, &y, per);
    }
    return view(s, S > 1 ? sum0(s, parts) : parts, 4, wshape);
}

static netcl_tensor *tiled_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b,
                                const nc_conv_fuse *f)
{
    if (pass == NC_CONV_PASS_WEIGHT) return tiled_weight(s, g, a, b);
    if (pass == NC_CONV_PASS_FWD) {
        netcl_tensor *y = empty(s, a, 4, (int64_t[]){g->N, g->O, g->OH, g->OW});
        run_conv_tiled(s, g, y, a, b, f, 0);
        return y;
    }
    nc_conv_args t = nc_conv_tiled_kernel_args(g, pass);
    netcl_tensor *dx = empty(s, a, 4, (int64_t[]){g->N, g->C, g->H, g->W});
    run_conv_tiled(s, &t, dx, a, b, f, 1);
    return dx;
}

/* depthwise: the backend's NC_DW_* kernels; backward-weight in slices of
 * images (a work-group per output channel a slice), summed */
static netcl_tensor *depthwise_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b)
{
    if (pass == NC_CONV_PASS_FWD) {
        netcl_tensor *y = empty(s, a, 4, (int64_t[]){g->N, g->O, g->OH, g->OW});
        kernel(s, NC_DW_FWD, g, y, a, b, 0, 0);
        return y;
    }
    if (pass == NC_CONV_PASS_DATA) {
        netcl_tensor *dx = empty(s, a, 4, (int64_t[]){g->N, g->C, g->H, g->W});
        kernel(s, NC_DW_DATA, g, dx, a, b, 0, 0);
        return dx;
    }
    int64_t per, S = image_parts(nc_dev(a), g->N, g->O, &per);
    netcl_tensor *parts = empty(s, a, 5, (int64_t[]){S, g->O, 1, g->KH, g->KW});
    kernel(s, NC_DW_WEIGHT, g, parts, a, b, per, 0);
    return view(s, S > 1 ? sum0(s, parts) : parts, 4, (int64_t[]){g->O, 1, g->KH, g->KW});
}

static netcl_tensor *direct_pass(scratch *s, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b)
{
    static const nc_conv_kernel kinds[3] = {NC_CONV_FWD, NC_CONV_BWD_DATA, NC_CONV_BWD_WEIGHT};
    int64_t shapes[3][4] = {{g->N, g->O, g->OH, g->OW}, {g->N, g->C, g->H, g->W}, {g->O, g->C / g->G, g->KH, g->KW}};
    netcl_tensor *out = empty(s, a, 4, shapes[pass]);
    kernel(s, kinds[pass], g, out, a, b, 0, 0);
    return out;
}

/* the epilogue applied after a strategy that did not fuse it: y += bias
 * along the channels (dim 1), then the activation, in place on the fresh y */
static void apply_epilogue(scratch *s, netcl_tensor *y, const nc_conv_fuse *f)
{
    if (s->st != NETCL_OK || !y || !f) return;
    if (f->bias) {
        netcl_tensor *bv = view(s, f->bias, 4, (int64_t[]){1, f->bias->sizes[0], 1, 1});
        if (s->st == NETCL_OK) s->st = nc_fwd_binary_into(y, NETCL_OP_ADD, y, bv);
    }
    if (s->st == NETCL_OK && f->act >= 0) s->st = nc_fwd_unary_into(y, (netcl_op)f->act, y, f->act_p, 0);
}

static netcl_status conv2d_fused(netcl_tensor **out, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a,
                                 netcl_tensor *b, const nc_conv_fuse *f)
{
    *out = NULL;
    if (f && (pass == NC_CONV_PASS_WEIGHT || (!f->bias && f->act < 0))) f = NULL;
    if (f && !nc_gemm_act_ok(f->act))
        return nc_fail(NETCL_ERR_ARGUMENT, "conv2d: activation %d cannot be fused (relu, sigmoid, tanh, silu, gelu, "
                       "gelu_tanh, relu6, leaky_relu or none)", f->act);
    scratch s = {{0}, 0, NETCL_OK};
    netcl_tensor *ac = contig(&s, a), *bc = contig(&s, b), *r = NULL;
    nc_conv_fuse fc;
    if (f) { fc = *f; if (fc.bias) fc.bias = contig(&s, fc.bias); f = &fc; }
    /* an empty batch: an empty result, or a weight gradient of zeros (not
     * planned, so never tuned) */
    if (g->N == 0 && s.st == NETCL_OK) {
        int64_t shapes[3][4] = {{0, g->O, g->OH, g->OW}, {0, g->C, g->H, g->W}, {g->O, g->C / g->G, g->KH, g->KW}};
        netcl_tensor *z = NULL;
        netcl_status zs = netcl_tensor_full(&z, nc_dev(a), a->dtype, 4, shapes[pass], 0.0);
        r = keep(&s, zs, z);
        return finish(&s, out, r);
    }
    nc_conv_algo algo = nc_conv_plan(nc_dev(a), g, pass, a->dtype);
    /* strategies that fuse the epilogue take it; the others leave it to apply_epilogue */
    int fuses = algo == NC_CONV_IGEMM || algo == NC_CONV_TILED || ((algo == NC_CONV_IM2COL || algo == NC_CONV_GEMM1X1) &&
                                                                  pass == NC_CONV_PASS_FWD && g->G == 1);
    const nc_conv_fuse *ff = fuses ? f : NULL;
    if (s.st == NETCL_OK) {
        switch (algo) {
        case NC_CONV_IM2COL: r = im2col_pass(&s, g, pass, ac, bc, ff); break;
        case NC_CONV_GEMM1X1: r = gemm1x1_pass(&s, g, pass, ac, bc, ff); break;
        case NC_CONV_WINOGRAD2: r = winograd_pass(&s, g, pass, 2, ac, bc); break;
        case NC_CONV_WINOGRAD4: r = winograd_pass(&s, g, pass, 4, ac, bc); break;
        case NC_CONV_IGEMM: r = igemm_pass(&s, g, pass, ac, bc, ff); break;
        case NC_CONV_TILED: r = tiled_pass(&s, g, pass, ac, bc, ff); break;
        case NC_CONV_DEPTHWISE: r = depthwise_pass(&s, g, pass, ac, bc); break;
        default: r = direct_pass(&s, g, pass, ac, bc); break;
        }
    }
    if (s.st == NETCL_OK && r && !netcl_tensor_is_contiguous(r)) r = contig(&s, r);
    if (!fuses) apply_epilogue(&s, r, f);
    netcl_status st = finish(&s, out, r);
    if (st != NETCL_OK) {
        static const char *const pass_names[3] = {"forward", "backward-data", "backward-weight"};
        char da[192];
        snprintf(da, sizeof da, "%s", nc_describe(a));   /* nc_describe's buffer is reused by the next call */
        nc_error_prefix("conv2d (%s) %s of %s and %s: ", nc_conv_algo_name(algo), pass_names[pass], da, nc_describe(b));
    }
    return st;
}

/* Every storage a strategy makes counts as workspace until the result
 * leaves it, which then counts under the caller's owner. */
netcl_status nc_fwd_conv2d_fused(netcl_tensor **out, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a,
                                 netcl_tensor *b, const nc_conv_fuse *f)
{
    netcl_mem_owner owner = nc_mem_owner_enter(NETCL_MEM_WORKSPACE);
    netcl_status st = conv2d_fused(out, g, pass, a, b, f);
    nc_mem_owner_leave(owner);
    if (*out && (*out)->storage->owner == NETCL_MEM_WORKSPACE) nc_storage_set_owner((*out)->storage, owner);
    return st;
}

netcl_status nc_fwd_conv2d_pass(netcl_tensor **out, const nc_conv_args *g, nc_conv_pass pass, netcl_tensor *a, netcl_tensor *b)
{
    return nc_fwd_conv2d_fused(out, g, pass, a, b, NULL);
}

/* ---- argument checks: the geometry of conv2d / conv_transpose2d ------------------ */

/* x [N, C, H, W] and w [O, C/G, KH, KW] (transposed: x [N, Cin, H, W], w
 * [Cin, Cout/G, KH, KW], and g describes the forward conv whose
 * backward-data pass the transposed conv is: g's "x" is the output). */
netcl_status nc_conv2d_setup(const char *op, const netcl_tensor *x, const netcl_tensor *w, const netcl_tensor *b,
                             const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                             const int64_t *output_padding, nc_conv_args *g)
{
    if (x->ndim != 4 || w->ndim != 4)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: input %s and weight %s must be 4-dimensional", op, nc_describe(x), nc_describe(w));
    NC_TRY(nc_same_device(op, x, w));
    if (b) NC_TRY(nc_same_device(op, x, b));
    if (!nc_dtype_is_float(x->dtype) || w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: input %s, weight %s%s%s must share one floating dtype", op, nc_describe(x),
                       nc_describe(w), b ? " and bias " : "", b ? nc_describe(b) : "");
    for (int i = 0; i < 2; i++)
        if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: stride (%lld, %lld) and dilation (%lld, %lld) must be positive and "
                           "padding (%lld, %lld) non-negative", op, (long long)stride[0], (long long)stride[1],
                           (long long)dilation[0], (long long)dilation[1], (long long)padding[0], (long long)padding[1]);
    int64_t G = groups, Cx = x->sizes[1];
    int transposed = output_padding != NULL;
    int64_t O = transposed ? w->sizes[1] * G : w->sizes[0];
    if (G < 1 || (transposed ? (w->sizes[0] != Cx || Cx % G) : (O % G || Cx != w->sizes[1] * G)))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: input %s does not match weight %s with groups = %lld (%s)", op,
                       nc_describe(x), nc_describe(w), (long long)G,
                       transposed ? "weight dim 1 must equal the input channels, divisible by groups"
                                  : "input channels must be weight dim 2 x groups, output channels divisible by groups");
    if (b && (b->ndim != 1 || b->sizes[0] != O))
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: bias %s must have %lld elements (one per output channel)", op,
                       nc_describe(b), (long long)O);
    int64_t KH = w->sizes[2], KW = w->sizes[3];
    if (!transposed) {
        *g = (nc_conv_args){x->sizes[0], Cx, x->sizes[2], x->sizes[3], O, G, KH, KW, stride[0], stride[1], padding[0],
                            padding[1], dilation[0], dilation[1], 0, 0};
        g->OH = nc_window_positions(g->H, KH, g->SH, g->PH, g->DH, 0);
        g->OW = nc_window_positions(g->W, KW, g->SW, g->PW, g->DW, 0);
        if (g->OH <= 0 || g->OW <= 0)
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: a %lld x %lld kernel (dilation %lld, %lld) does not fit into %s padded by "
                           "(%lld, %lld)", op, (long long)KH, (long long)KW, (long long)g->DH, (long long)g->DW,
                           nc_describe(x), (long long)g->PH, (long long)g->PW);
        return NETCL_OK;
    }
    int64_t size[2];
    for (int i = 0; i < 2; i++) {
        if (output_padding[i] < 0 || (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]))
            return nc_fail(NETCL_ERR_ARGUMENT, "%s: output_padding (%lld, %lld) must be smaller than the stride or the dilation",
                           op, (long long)output_padding[0], (long long)output_padding[1]);
        size[i] = (x->sizes[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * ((i ? KW : KH) - 1) + output_padding[i] + 1;
    }
    if (size[0] <= 0 || size[1] <= 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: the output of %s with this kernel and padding would be empty", op, nc_describe(x));
    *g = (nc_conv_args){x->sizes[0], O, size[0], size[1], Cx, G, KH, KW, stride[0], stride[1], padding[0], padding[1],
                        dilation[0], dilation[1], x->sizes[2], x->sizes[3]};
    return NETCL_OK;
}
