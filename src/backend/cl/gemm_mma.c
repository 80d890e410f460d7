/* gemm_mma.c — the tensor-core GEMM path (kernels/gemm_mma.cl) on
 * NVIDIA OpenCL devices of compute capability 8.0 or newer: inline PTX
 * mma.sync (tf32 m16n8k8, f16/bf16 m16n8k16, f32 accumulators) fed by
 * cp.async through swizzled local tiles and read with ldmatrix; and the
 * same pipeline feeding float32 FMAs (NC_GEMM_FFMA, -DFFMA) for IEEE
 * float32 products. Nothing here runs on other devices: the PTX would not
 * compile.
 *
 * The probe: before a dtype first uses the path, the real kernel (default
 * configuration) runs on a small problem with edges in two layouts and its
 * result is compared with the reference kernel's; a build failure, a run
 * failure or a wrong result disables that dtype, and the reason is kept for
 * netcl_device_tensor_cores() (and printed with NETCL_DEBUG=1).
 * NETCL_MMA_EMULATE=1 compiles the kernel with plain-OpenCL stand-ins for
 * the PTX (same fragment layouts) on any device, so the kernel's indexing
 * is tested on PoCL too. */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dt_names[7] = {"tf32", "f16", "bf16", "ffma", "wgmma tf32", "wgmma f16", "wgmma bf16"};
#define KIND_FFMA 3  /* the probe slot of the FFMA kernel */
#define KIND_WGMMA 4 /* + the mma kind: the probe slots of the wgmma kernel */

static int emulated(void)
{
    const char *e = getenv("NETCL_MMA_EMULATE");
    return e && *e && strcmp(e, "0") != 0;
}

/* 0 tf32, 1 f16, 2 bf16, -1 none */
static int mma_kind(netcl_dtype dt)
{
    return dt == NETCL_DTYPE_FLOAT32 ? 0 : dt == NETCL_DTYPE_FLOAT16 ? 1 : dt == NETCL_DTYPE_BFLOAT16 ? 2 : -1;
}

static int hardware_ok(const netcl_device *dev)
{
    return emulated() || (strstr(dev->vendor, "NVIDIA") && dev->compute_capability >= 80);
}

static int env_is(const char *name, const char *value)
{
    const char *e = getenv(name);
    return e && strcmp(e, value) == 0;
}

/* wgmma is sm_90a's alone (Blackwell has none); NETCL_WGMMA=0 turns it
 * off, NETCL_WGMMA_EMULATE=1 emulates it with NETCL_MMA_EMULATE */
static int wgmma_hardware_ok(const netcl_device *dev)
{
    if (env_is("NETCL_WGMMA", "0")) return 0;
    if (emulated()) return env_is("NETCL_WGMMA_EMULATE", "1");
    return strstr(dev->vendor, "NVIDIA") && dev->compute_capability == 90;
}

/* An operand [B, rows, cols] cp.async can copy: one of its two matrix dims
 * contiguous, and 16-byte chunks along it aligned and whole. */
static int operand_ok(const nc_desc *d, int chunk, int64_t B)
{
    for (int dim = 2; dim >= 1; dim--) {
        int other = dim == 2 ? 1 : 2;
        if (d->strides[dim] != 1) continue;
        if (d->sizes[dim] % chunk == 0 && d->offset % chunk == 0 && d->strides[other] % chunk == 0 &&
            (B == 1 || d->strides[0] % chunk == 0))
            return 1;
    }
    return 0;
}

static int k_contig(const nc_desc *d, int kdim) { return d->strides[kdim] == 1; }

static void probe(netcl_device *dev, nc_gemm_state *s, int kind);

int nc_mma_usable(const nc_gemm_call *g)
{
    int kind = mma_kind(g->out->dtype);
    if (kind < 0 || (kind == 0 && g->epi->fp32 == NC_FP32_IEEE) || !hardware_ok(g->dev)) return 0;
    int chunk = kind == 0 ? 4 : 8;
    if (!operand_ok(g->a, chunk, g->B) || !operand_ok(g->w, chunk, g->B)) return 0;
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(g->dev));
    if (!s) return 0;
    probe(g->dev, s, kind);
    return s->tc_ok[kind] == 1;
}

/* a m-contiguous, w n-contiguous: read transposed, which wgmma does for
 * 16-bit types only */
static int wgmma_layout_ok(const nc_gemm_call *g)
{
    int half = g->out->dtype != NETCL_DTYPE_FLOAT32;
    return (k_contig(g->a, 2) || (half && g->a->strides[1] == 1)) && (k_contig(g->w, 1) || (half && g->w->strides[2] == 1));
}

int nc_wgmma_usable(const nc_gemm_call *g)
{
    if (!nc_mma_usable(g) || !wgmma_hardware_ok(g->dev) || !wgmma_layout_ok(g) ||
        (g->out->dtype == NETCL_DTYPE_FLOAT32 && g->epi->fp32 != NC_FP32_TF32))
        return 0;
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(g->dev));
    int kind = KIND_WGMMA + mma_kind(g->out->dtype);
    probe(g->dev, s, kind);
    return s->tc_ok[kind] == 1;
}

int nc_ffma_usable(const nc_gemm_call *g)
{
    if (g->out->dtype != NETCL_DTYPE_FLOAT32 || !hardware_ok(g->dev)) return 0;
    if (!operand_ok(g->a, 4, g->B) || !operand_ok(g->w, 4, g->B)) return 0;
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(g->dev));
    if (!s) return 0;
    probe(g->dev, s, KIND_FFMA);
    return s->tc_ok[KIND_FFMA] == 1;
}

/* the FFMA defaults' blocks: 128 x 64 of 2 x 2 warps of 8 x 8 outputs, two
 * stages; for tn, 128 x 64 of 2 x 1 warps of 8 x 16, 16-deep tiles in four
 * stages; 64 x 64 of 4 x 8, three stages; 64 x 32 of 2 x 1 warps of 4 x 8,
 * 32-deep tiles in two stages (ahead of 16-deep tiles in four in every
 * product measured: docs/notes/kernels.md) */
static const nc_gemm_cfg ffma_128x64 = {.kernel = NC_GEMM_FFMA, 128, 64, 32, 2, 2, 8, 8, 1, 0, 0, 0, 2, 8};
static const nc_gemm_cfg ffma_tn_128x64 = {.kernel = NC_GEMM_FFMA, 128, 64, 16, 2, 1, 8, 16, 1, 0, 0, 0, 4, 8};
static const nc_gemm_cfg ffma_64x64 = {.kernel = NC_GEMM_FFMA, 64, 64, 32, 2, 2, 4, 8, 1, 0, 0, 0, 3, 8};
static const nc_gemm_cfg ffma_64x32 = {.kernel = NC_GEMM_FFMA, 64, 32, 32, 2, 1, 4, 8, 1, 0, 0, 0, 2, 8};
/* tn products of one round of four-warp blocks: 16-deep tiles in four
 * stages (ffma_blocks) */
static const nc_gemm_cfg ffma_tn_round = {.kernel = NC_GEMM_FFMA, 128, 64, 16, 2, 2, 8, 8, 1, 0, 0, 0, 4, 8};

/* How full the last round of `blocks` is when `slots` run at once (1: every
 * round full). */
static double last_round_fill(int64_t blocks, int64_t slots)
{
    int64_t rounds = (blocks + slots - 1) / slots;
    return (double)blocks / (double)(rounds * slots);
}

/* Whether `blocks` run well with `slots` at once: one round at most, three
 * or more, or a last round at least 85% full (else the product waits on
 * a thin last round, ffma_blocks) */
static int rounds_fill(int64_t blocks, int64_t slots)
{
    return blocks <= slots || blocks >= 3 * slots || last_round_fill(blocks, slots) >= 0.85;
}

/* the large blocks where the product has enough of them, else `small` */
static void ffma_blocks(const nc_gemm_call *g, nc_gemm_cfg *c, const nc_gemm_cfg *small)
{
    int cu = g->dev->compute_units > 0 ? g->dev->compute_units : 1;
    /* a m-contiguous and w n-contiguous (tn): 2x1 warps of 8 x 16 outputs,
     * 16-deep tiles in 4 stages (ahead in tn; the same blocks lose in the
     * other transposed layouts; measurements: docs/notes/kernels.md) */
    int tn = !k_contig(g->a, 2) && !k_contig(g->w, 1);
    int64_t big = nc_gemm_fill(g, 128) >= 0.8 * nc_gemm_fill(g, 64) ? nc_gemm_groups(g, 128, 64) : 0;
    /* the tn blocks are of two warps: with fewer than three a multiprocessor
     * they lose to 64x64 blocks (measurements: docs/notes/kernels.md) */
    /* Rounds: four tn blocks run on a multiprocessor at once (251
     * registers), two of the four-warp 128x64 ones. A tn product of one to
     * three rounds whose last round is under 85% full waits on it; the
     * four-warp blocks serve where their own last round is fuller, else the
     * small blocks (measurements: docs/notes/kernels.md). */
    if (tn && big >= 3 * cu) {
        if (rounds_fill(big, 4 * (int64_t)cu)) *c = ffma_tn_128x64;
        else if (last_round_fill(big, 2 * (int64_t)cu) >= 0.85) *c = ffma_128x64;
        else *c = *small;
    } else if (tn && big <= 2 * (int64_t)cu && last_round_fill(big, 2 * (int64_t)cu) >= 0.85) {
        /* one round of four-warp blocks, at least 85% full: those, with
         * 16-deep tiles in four stages (32-deep tiles in two ran slower),
         * since their interior blocks store float4s and so beat the small
         * blocks. A round 73% full lost to the small blocks, and so did a
         * thin second round (measurements: docs/notes/kernels.md). */
        *c = ffma_tn_round;
    } else if (!tn && big >= cu) {
        /* the same rounds for the four-warp blocks, two a multiprocessor
         * (ahead of the small blocks in nt and tt; measurements:
         * docs/notes/kernels.md) */
        *c = rounds_fill(big, 2 * (int64_t)cu) ? ffma_128x64 : *small;
    } else *c = *small;
}

/* Products: the small blocks are 64 x 32 of two warps where w is not
 * k-contiguous (a little ahead of 64 x 64, and twice as many blocks fill
 * the device from half the size, so products such as 1024 x 512 x 2048
 * leave gemm_tiled); with w k-contiguous (nt) they lost, and 64 x 64 stays
 * (measurements: docs/notes/kernels.md). */
static const nc_gemm_cfg *small_blocks(const nc_gemm_call *g)
{
    return k_contig(g->w, 1) ? &ffma_64x64 : &ffma_64x32;
}

void nc_ffma_default(const nc_gemm_call *g, nc_gemm_cfg *c)
{
    ffma_blocks(g, c, small_blocks(g));
}

int nc_ffma_tn_blocks(const nc_gemm_call *g)
{
    nc_gemm_cfg c;
    nc_ffma_default(g, &c);
    return memcmp(&c, &ffma_tn_128x64, sizeof c) == 0;
}

/* the groups of the blocks nc_ffma_default picks for small products */
int64_t nc_ffma_small_groups(const nc_gemm_call *g)
{
    const nc_gemm_cfg *s = small_blocks(g);
    return nc_gemm_groups(g, s->mwg, s->nwg);
}

/* wgmma's blocks: 128 x 128 of one warpgroup (two m64n128 slabs, 128
 * accumulators a thread; 192 registers: two blocks a multiprocessor, and
 * three at 168 gained nothing, the blocks being fed by L2), k-tiles of 32
 * 16-bit elements (A's 64-byte rows: the 64-byte swizzle; an n-contiguous
 * B in 128-byte atoms) in three stages: ahead of mma.sync in float16 and
 * bfloat16, row-major and x @ w^T alike (two warpgroups of one slab gained
 * nothing). Wider blocks lost: 128 x 256 holds two stages of 64-byte rows
 * or four of 32-byte ones; so did 32-byte rows at 128 x 128 (six stages),
 * every k-tile's barrier and wait costing more than the stages give. tf32
 * keeps mma.sync: wgmma reads its operands straight from local memory,
 * where rounding them to the nearest tf32 (WG_ROUND_OWN) costs more than
 * wgmma gains (truncating them runs ahead, with truncation's bias),
 * except large products, whose operands are rounded first (gemm_tf32.c).
 * Products of a round of such blocks at least, in every 16-bit layout: an
 * m-contiguous a read transposed too (tn ahead of mma.sync, tt level with
 * it at 4096^3 and ahead at 8192^3). Measurements: docs/notes/kernels.md. */
static int wgmma_default(const nc_gemm_call *g, nc_gemm_cfg *c)
{
    int cu = g->dev->compute_units > 0 ? g->dev->compute_units : 1;
    if (g->out->dtype == NETCL_DTYPE_FLOAT32 || nc_gemm_groups(g, 128, 128) < cu || !nc_wgmma_usable(g)) return 0;
    *c = (nc_gemm_cfg){.kernel = NC_GEMM_WGMMA, 128, 128, 32, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8};
    return 1;
}

void nc_mma_default(const nc_gemm_call *g, nc_gemm_cfg *c)
{
    if (wgmma_default(g, c)) return;
    /* 128 x 128 blocks of four 64 x 64 warp tiles, three stages of
     * 16-byte-swizzled tiles (no padding: 48 KiB, what OpenCL gets on
     * NVIDIA); 64 x 64 blocks with four stages when the large ones would
     * leave multiprocessors idle or spend much more of their work on
     * padding (a 64-row product, as Winograd's per-position GEMMs at 64
     * channels, idles half a block) */
    int cu = g->dev->compute_units > 0 ? g->dev->compute_units : 1;
    int kbk = g->out->dtype == NETCL_DTYPE_FLOAT32 ? 16 : 32;
    int64_t big = nc_gemm_fill(g, 128) >= 0.8 * nc_gemm_fill(g, 64) ? nc_gemm_groups(g, 128, 128) : 0;
    if (big >= cu) *c = (nc_gemm_cfg){.kernel = NC_GEMM_MMA, 128, 128, kbk, 2, 2, 1, 1, 1, 0, 0, 0, 3, 8};
    else *c = (nc_gemm_cfg){.kernel = NC_GEMM_MMA, 64, 64, kbk, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8};
}

/* {kernel, BM, BN, BK, WM, WN, -, -, -, -, -, -, stages, raster group} */
static const nc_gemm_cfg candidates_f32[] = {
    {NC_GEMM_MMA, 128, 128, 16, 2, 2, 1, 1, 1, 0, 0, 0, 3, 8},  {NC_GEMM_MMA, 128, 128, 8, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},
    {NC_GEMM_MMA, 128, 256, 8, 2, 4, 1, 1, 1, 0, 0, 0, 4, 8},   {NC_GEMM_MMA, 256, 128, 8, 4, 2, 1, 1, 1, 0, 0, 0, 4, 8},
    {NC_GEMM_MMA, 128, 128, 16, 2, 2, 1, 1, 1, 0, 0, 0, 2, 8},  {NC_GEMM_MMA, 128, 128, 16, 4, 2, 1, 1, 1, 0, 0, 0, 3, 8},
    {NC_GEMM_MMA, 64, 128, 16, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},   {NC_GEMM_MMA, 128, 64, 16, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},
    {NC_GEMM_MMA, 64, 64, 16, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},    {NC_GEMM_MMA, 64, 64, 32, 2, 2, 1, 1, 1, 0, 0, 0, 3, 8},
    {NC_GEMM_MMA, 128, 128, 16, 2, 2, 1, 1, 1, 0, 0, 0, 3, 16},
};
static const nc_gemm_cfg candidates_f16[] = {
    {NC_GEMM_MMA, 128, 128, 32, 2, 2, 1, 1, 1, 0, 0, 0, 3, 8},  {NC_GEMM_MMA, 128, 128, 32, 2, 2, 1, 1, 1, 0, 0, 0, 2, 8},
    {NC_GEMM_MMA, 128, 256, 32, 2, 4, 1, 1, 1, 0, 0, 0, 2, 8},  {NC_GEMM_MMA, 256, 128, 32, 4, 2, 1, 1, 1, 0, 0, 0, 2, 8},
    {NC_GEMM_MMA, 128, 256, 16, 2, 4, 1, 1, 1, 0, 0, 0, 4, 8},  {NC_GEMM_MMA, 256, 128, 16, 4, 2, 1, 1, 1, 0, 0, 0, 4, 8},
    {NC_GEMM_MMA, 128, 128, 16, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},  {NC_GEMM_MMA, 128, 128, 32, 4, 2, 1, 1, 1, 0, 0, 0, 3, 8},
    {NC_GEMM_MMA, 64, 128, 32, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},   {NC_GEMM_MMA, 128, 64, 32, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},
    {NC_GEMM_MMA, 64, 64, 32, 2, 2, 1, 1, 1, 0, 0, 0, 4, 8},    {NC_GEMM_MMA, 128, 128, 32, 2, 2, 1, 1, 1, 0, 0, 0, 3, 16},
};

/* {kernel, BM, BN, BK, warps along m, 1, -, ..., stages, raster group},
 * BK in 16-bit elements (halved for tf32: the same bytes a row): rows of
 * 64 bytes, or 32 where four stages of 128 x 256 fit */
static const nc_gemm_cfg candidates_wgmma[] = {
    {NC_GEMM_WGMMA, 128, 128, 32, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8}, {NC_GEMM_WGMMA, 128, 128, 32, 8, 1, 1, 1, 1, 0, 0, 0, 3, 8},
    {NC_GEMM_WGMMA, 128, 256, 16, 8, 1, 1, 1, 1, 0, 0, 0, 4, 8}, {NC_GEMM_WGMMA, 128, 256, 32, 8, 1, 1, 1, 1, 0, 0, 0, 2, 8},
    {NC_GEMM_WGMMA, 64, 128, 32, 4, 1, 1, 1, 1, 0, 0, 0, 4, 8},  {NC_GEMM_WGMMA, 128, 128, 32, 4, 1, 1, 1, 1, 0, 0, 0, 3, 16},
};

int nc_mma_candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max)
{
    if (!nc_mma_usable(g)) return 0;
    int f32 = g->out->dtype == NETCL_DTYPE_FLOAT32;
    const nc_gemm_cfg *list = f32 ? candidates_f32 : candidates_f16;
    int count = f32 ? (int)(sizeof candidates_f32 / sizeof candidates_f32[0]) : (int)(sizeof candidates_f16 / sizeof candidates_f16[0]);
    int n = 0;
    nc_mma_default(g, &out[n++]);
    if (nc_wgmma_usable(g))
        for (int i = 0; i < (int)(sizeof candidates_wgmma / sizeof candidates_wgmma[0]) && n < max; i++) {
            out[n] = candidates_wgmma[i];
            if (f32) out[n].kwg /= 2;
            if (memcmp(&out[n], &out[0], sizeof out[0]) != 0) n++;
        }
    for (int i = 0; i < count && n < max; i++)
        if (memcmp(&list[i], &out[0], sizeof out[0]) != 0) out[n++] = list[i];
    return n;
}

/* The FFMA kernel's tuning candidates, in the configuration syntax
 * (mwg = 8 mdimc vwm, nwg = 4 ndimc vwn: warps of 8 x 4 lanes) */
static const char *const candidates_ffma[] = {
    "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=8 vwn=8 stages=4 gm=8",
    "ffma mwg=128 nwg=64 kwg=16 mdimc=2 ndimc=1 vwm=8 vwn=16 stages=4 gm=8",
    "ffma mwg=128 nwg=128 kwg=16 mdimc=2 ndimc=4 vwm=8 vwn=8 stages=3 gm=8",
    "ffma mwg=128 nwg=128 kwg=16 mdimc=2 ndimc=2 vwm=8 vwn=16 stages=3 gm=8",
    "ffma mwg=128 nwg=128 kwg=8 mdimc=2 ndimc=4 vwm=8 vwn=8 stages=4 gm=8",
    "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=4 gm=8",
    "ffma mwg=128 nwg=64 kwg=32 mdimc=2 ndimc=2 vwm=8 vwn=8 stages=2 gm=8",
    "ffma mwg=64 nwg=64 kwg=32 mdimc=2 ndimc=2 vwm=4 vwn=8 stages=3 gm=8",
    "ffma mwg=64 nwg=128 kwg=32 mdimc=1 ndimc=4 vwm=8 vwn=8 stages=2 gm=8",
    /* two-warp blocks that win some mid-size tn products against the
     * default: 128x32 (1024^3), 64x64 of 4 x 16 (1000 x 2000 x 1000);
     * measurements: docs/notes/kernels.md */
    "ffma mwg=128 nwg=32 kwg=16 mdimc=2 ndimc=1 vwm=8 vwn=8 stages=4 gm=8",
    "ffma mwg=64 nwg=64 kwg=16 mdimc=2 ndimc=1 vwm=4 vwn=16 stages=4 gm=8",
    /* the small products' default where w is not k-contiguous, for the
     * others, and its 16-deep tiles in four stages */
    "ffma mwg=64 nwg=32 kwg=32 mdimc=2 ndimc=1 vwm=4 vwn=8 stages=2 gm=8",
    "ffma mwg=64 nwg=32 kwg=16 mdimc=2 ndimc=1 vwm=4 vwn=8 stages=4 gm=8",
};

int nc_ffma_candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max)
{
    if (!nc_ffma_usable(g)) return 0;
    int n = 0;
    for (int i = 0; i < (int)(sizeof candidates_ffma / sizeof candidates_ffma[0]) && n < max; i++)
        if (nc_gemm_cfg_parse(&out[n], candidates_ffma[i])) n++;
    return n;
}

/* Local memory of one pipeline stage in bytes, as gemm_mma.cl lays it out:
 * swizzled tiles carry no padding; tf32 tiles whose k dim is not the
 * contiguous one are rows padded by 8 elements. */
static int64_t stage_bytes(const nc_gemm_cfg *c, int kind, int a_kc, int b_kc)
{
    int esize = kind == 0 ? 4 : 2;
    int64_t a = a_kc || kind ? (int64_t)c->mwg * c->kwg * esize : (int64_t)c->kwg * (c->mwg + 8) * esize;
    int64_t b = b_kc || kind ? (int64_t)c->nwg * c->kwg * esize : (int64_t)c->kwg * (c->nwg + 8) * esize;
    return a + b;
}

/* The deepest pipeline up to cfg's that fits the device's local memory
 * (0: not even two stages). */
static int fit_stages(const nc_gemm_cfg *c, const netcl_device *dev, int kind, int a_kc, int b_kc, int wg)
{
    int64_t extra = emulated() && !wg ? (int64_t)c->mdimc * c->ndimc * ((16 + 8) * 16 * 4 + 32 * 4) : 0;
    for (int st = c->stages; st >= 2; st--)
        if (st * stage_bytes(c, kind, a_kc, b_kc) + extra <= dev->local_mem) return st;
    return 0;
}

/* The epilogue as build options: a fixed one compiles to only its own
 * code (the plain product: none at all). */
static void epilogue_opts(const nc_gemm_epi *e, char *buf, size_t len)
{
    int flags = (e->c ? 1 : 0) | (e->bias ? e->bias_dim == 1 ? 4 : 2 : 0);
    snprintf(buf, len, " -DEPI_FLAGS=%d -DEPI_ACT=%d", flags, nc_gemm_act_ok(e->act) ? e->act : -1);
}

/* A convolution pass run as an implicit GEMM with w's elements gathered
 * from x: the forward (-DCONV_X, B_KCONT 0) or backward-weight (-DCONV_W,
 * B_KCONT 1, the batch index a slice of ip images). */
typedef struct {
    const nc_conv_args *g;
    nc_conv_pass pass;
    int64_t ip;
} conv_gather;

/* conv: NULL for a plain product; split: NULL, or g's batches are the K
 * slices of one output, summed in the kernel (-DSPLIT_SUM, FFMA only);
 * tf32_exact: float32 operands already rounded to tf32 (gemm_tf32.c);
 * escale: float16 operands of a float32 output, scaled per row of a and
 * column of w by the powers of two the buffer's maxima give (gemm_tf32.c) */
static netcl_status launch(const nc_gemm_call *g, const nc_gemm_cfg *c, const conv_gather *conv,
                           const nc_split_sum *split, int tf32_exact, cl_mem escale)
{
    int ffma = c->kernel == NC_GEMM_FFMA, wg = c->kernel == NC_GEMM_WGMMA;
    if (split && (!ffma || conv)) return NETCL_ERR_UNSUPPORTED;
    if (escale && (ffma || conv || split || g->a->dtype != NETCL_DTYPE_FLOAT16 || g->w->dtype != NETCL_DTYPE_FLOAT16 ||
                   g->out->dtype != NETCL_DTYPE_FLOAT32))
        return NETCL_ERR_UNSUPPORTED;
    netcl_dtype in_dtype = escale ? NETCL_DTYPE_FLOAT16 : g->out->dtype;
    int kind = ffma ? (g->out->dtype == NETCL_DTYPE_FLOAT32 ? 0 : -1) : mma_kind(in_dtype);
    int threads = c->mdimc * c->ndimc * 32, chunk = kind == 0 ? 4 : 8;
    int kstep = kind == 0 ? 8 : 16;
    /* whole k-steps per tile, whole ldmatrix pairs of B fragments per warp
     * (ffma: warp tiles of 8 vwm x 4 vwn), at least two 16-byte chunks along
     * every tile row and a power of two of them (the swizzle permutes a
     * row's chunks by XOR: 3 or 6 chunks a row would leave it) */
    if (kind < 0 || (c->kernel != NC_GEMM_MMA && !ffma && !wg) || c->stages < 2 || c->stages > (wg ? 6 : 4) || c->mdimc <= 0 ||
        c->ndimc <= 0 || c->kwg <= 0 || (c->kwg & (c->kwg - 1)) || !operand_ok(g->a, chunk, g->B) ||
        (!conv && !operand_ok(g->w, chunk, g->B)))
        return NETCL_ERR_UNSUPPORTED;
    if (ffma ? c->vwm <= 0 || c->vwn <= 0 || c->mwg != c->mdimc * 8 * c->vwm || c->nwg != c->ndimc * 4 * c->vwn ||
                   c->vwm % 4 || c->vwn % 8 || c->kwg < 8
             : c->mwg <= 0 || c->nwg <= 0 || c->mwg % (16 * c->mdimc) || c->nwg % (16 * c->ndimc) || c->kwg % kstep ||
                   c->kwg < 2 * chunk)
        return NETCL_ERR_UNSUPPORTED;
    int a_kc = k_contig(g->a, 2), b_kc = conv ? conv->pass == NC_CONV_PASS_WEIGHT : k_contig(g->w, 1);
    /* wgmma: warpgroups along m of one or two m64 slabs (two: n of 128 at
     * most, the accumulators of one asm), k-contiguous rows of 32, 64 or
     * 128 bytes; tf32 operands k-contiguous */
    int row_bytes = c->kwg * (kind == 0 ? 4 : 2);
    if (wg && (conv || (!a_kc && kind == 0) || (!b_kc && (kind == 0 || c->nwg < 64)) || c->ndimc != 1 || c->mdimc % 4 ||
               (c->mwg != 16 * c->mdimc && (c->mwg != 32 * c->mdimc || c->nwg > 128)) ||
               (c->nwg != 64 && c->nwg != 128 && c->nwg != 256) || (row_bytes != 32 && row_bytes != 64 && row_bytes != 128)))
        return NETCL_ERR_UNSUPPORTED;
    /* ffma tiles are all swizzled, none padded */
    int stages = fit_stages(c, g->dev, kind, a_kc || ffma, b_kc || ffma, wg);
    if (!stages || threads > g->dev->max_work_group) return NETCL_ERR_UNSUPPORTED;
    /* a tile row's chunks are copied by distinct threads (threads >= chunks per row) */
    int64_t a_cpr = (a_kc ? c->kwg : c->mwg) / chunk, b_cpr = (b_kc ? c->kwg : c->nwg) / chunk;
    if (a_cpr > threads || b_cpr > threads) return NETCL_ERR_UNSUPPORTED;
    nc_cl_device *cd = nc_cl_dev(g->dev);
    char opts[700], epi[64], ffma_opts[40] = "", conv_opts[300] = "";
    if (ffma) snprintf(ffma_opts, sizeof ffma_opts, " -DFFMA -DTM=%d -DTN=%d", c->vwm, c->vwn);
    if (conv) {
        const nc_conv_args *v = conv->g;
        int n = snprintf(conv_opts, sizeof conv_opts,
                         " -DCONV_%c -DCV_C=%lld -DCV_H=%lld -DCV_W=%lld -DCV_KH=%lld -DCV_KW=%lld -DCV_SH=%lld"
                         " -DCV_SW=%lld -DCV_PH=%lld -DCV_PW=%lld -DCV_DH=%lld -DCV_DW=%lld -DCV_OH=%lld -DCV_OW=%lld",
                         conv->pass == NC_CONV_PASS_WEIGHT ? 'W' : 'X', (long long)v->C, (long long)v->H,
                         (long long)v->W, (long long)v->KH, (long long)v->KW, (long long)v->SH, (long long)v->SW,
                         (long long)v->PH, (long long)v->PW, (long long)v->DH, (long long)v->DW, (long long)v->OH,
                         (long long)v->OW);
        if (conv->pass == NC_CONV_PASS_WEIGHT)
            snprintf(conv_opts + n, sizeof conv_opts - n, " -DCV_N=%lld -DCV_O=%lld -DCV_IP=%lld", (long long)v->N,
                     (long long)v->O, (long long)conv->ip);
    }
    nc_cl_dtype_opts(opts, sizeof opts, in_dtype, g->out->dtype);
    epilogue_opts(g->epi, epi, sizeof epi);
    size_t n = strlen(opts);
    snprintf(opts + n, sizeof opts - n,
             " -DGEMM_MMA -DBM=%d -DBN=%d -DBK=%d -DWM=%d -DWN=%d -DSTAGES=%d -DA_KCONT=%d -DB_KCONT=%d -DGM=%d%s%s%s%s%s%s%s%s",
             c->mwg, c->nwg, c->kwg, c->mdimc, c->ndimc, stages, a_kc, b_kc, c->gm > 0 ? c->gm : 8, epi, ffma_opts, conv_opts,
             kind == 0 && !ffma && !wg && g->epi->fp32 == NC_FP32_TF32X3 ? " -DTF32X3" : "", emulated() ? " -DMMA_EMULATE" : "",
             split ? " -DSPLIT_SUM" : "", wg ? kind == 0 && tf32_exact ? " -DWGMMA -DNO_WG_ROUND" : " -DWGMMA" : "",
             escale ? " -DESCALE" : "");
    cl_kernel k;
    size_t kwg_size, kmax = 0;
    NC_TRY(nc_cl_kernel(cd, "gemm+gemm_ffma+gemm_mma+gemm_wgmma+gemm_mma_kernel", opts, "gemm_mma", &k, &kwg_size));
    nc_cl.clGetKernelWorkGroupInfo(k, cd->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
    if (kmax && kmax < (size_t)threads) {
        if (nc_cl_debug_level() >= 1)
            fprintf(stderr, "netcl: the GEMM kernel takes at most %zu threads a block, not %d\n", kmax, threads);
        return NETCL_ERR_UNSUPPORTED;
    }
    NC_TRY(nc_gemm_set_args(g, k));
    if (split) {
        cl_mem pb = split->part, cb = split->count;
        cl_int klast = (cl_int)split->klast;
        NC_ARG(k, 29, pb); NC_ARG(k, 30, cb); NC_ARG(k, 31, klast);
    }
    if (escale) NC_ARG(k, 29, escale);
    /* one block per output tile, capped (the blocks loop over the rest) */
    int64_t tiles = ((g->M + c->mwg - 1) / c->mwg) * ((g->N + c->nwg - 1) / c->nwg) * g->B;
    size_t global = (size_t)(tiles < (1 << 20) ? tiles : (1 << 20)) * (size_t)threads, local = (size_t)threads;
    return nc_cl_launch_nd(cd, k, 1, &global, &local);
}

netcl_status nc_mma_launch(const nc_gemm_call *g, const nc_gemm_cfg *c) { return launch(g, c, NULL, NULL, 0, NULL); }

netcl_status nc_mma_launch_tf32_exact(const nc_gemm_call *g, const nc_gemm_cfg *c) { return launch(g, c, NULL, NULL, 1, NULL); }

netcl_status nc_mma_launch_scaled_half(const nc_gemm_call *g, const nc_gemm_cfg *c, cl_mem escale)
{
    return launch(g, c, NULL, NULL, 0, escale);
}

netcl_status nc_ffma_split_launch(const nc_gemm_call *g, const nc_gemm_cfg *c, const nc_split_sum *split)
{
    return launch(g, c, NULL, split, 0, NULL);
}

/* ---- convolution passes as implicit GEMMs ----------------------------------------- */
/* forward: y [N, O, OH*OW] = w [O, K] @ B, B [K = C*KH*KW, N*OH*OW]
 * gathered from x; backward-weight: part [S, O, K] with part s = dy_s [O,
 * ip*L] @ B_s, B_s [ip*L, K] gathered from the slice's x (L = OH*OW). Both
 * float32 products of one group, sizes in 32-bit indices; the forward's
 * weight rows in whole 16-byte chunks, backward-weight's k-tiles inside one
 * image (kwg divides L). */
static int conv_fits(const nc_conv_args *cv, nc_conv_pass pass)
{
    int64_t K = cv->C * cv->KH * cv->KW, L = cv->OH * cv->OW, lim = (int64_t)1 << 31;
    /* (N + 1) images: the offsets of pixels past the last one are formed, never used */
    if (cv->G != 1 || (cv->N + 1) * cv->C * cv->H * cv->W >= lim || cv->N * cv->O * L >= lim || cv->O * K >= lim)
        return 0;
    return pass == NC_CONV_PASS_FWD ? K % 4 == 0 : pass == NC_CONV_PASS_WEIGHT && L % 8 == 0 && cv->N * cv->O * K < lim;
}

/* backward-weight's block: 128 x 64 (64 x 64 for 64 or fewer output
 * channels), k-tiles that divide L */
static void weight_cfg(const nc_conv_args *cv, nc_gemm_cfg *c)
{
    int64_t L = cv->OH * cv->OW;
    *c = cv->O > 64 ? ffma_128x64 : ffma_64x64;
    if (L % 32) c->kwg = L % 16 ? 8 : 16, c->stages = 4;
}

/* images per slice: fewest rounds of blocks times images a block sums
 * (ties to more images: fewer partial sums), at least 2 k-tiles a slice */
static int64_t weight_images(const netcl_device *dev, const nc_conv_args *cv)
{
    nc_gemm_cfg c;
    weight_cfg(cv, &c);
    int64_t K = cv->C * cv->KH * cv->KW, L = cv->OH * cv->OW;
    int64_t tiles = ((cv->O + c.mwg - 1) / c.mwg) * ((K + c.nwg - 1) / c.nwg);
    int64_t slots = 2 * (dev->compute_units > 0 ? dev->compute_units : 1), best = cv->N, best_cost = -1;
    for (int64_t ip = cv->N; ip >= 1; ip--) {
        if (ip * L < 2 * c.kwg && ip < cv->N) break;
        int64_t S = (cv->N + ip - 1) / ip, cost = (tiles * S + slots - 1) / slots * ip;
        if (best_cost < 0 || cost < best_cost) best = ip, best_cost = cost;
    }
    return best;
}

static int conv_usable(netcl_device *dev, const nc_conv_args *cv, nc_conv_pass pass, netcl_dtype dt)
{
    if (dt != NETCL_DTYPE_FLOAT32 || !hardware_ok(dev) || !conv_fits(cv, pass)) return 0;
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    if (!s) return 0;
    probe(dev, s, KIND_FFMA);
    return s->tc_ok[KIND_FFMA] == 1;
}

int64_t nc_ffma_conv_usable(netcl_device *dev, const nc_conv_args *cv, nc_conv_pass pass, netcl_dtype dt)
{
    if (!conv_usable(dev, cv, pass, dt)) return 0;
    if (pass != NC_CONV_PASS_WEIGHT) return 1;
    int64_t ip = weight_images(dev, cv);
    return (cv->N + ip - 1) / ip;
}

netcl_status nc_ffma_conv_launch(netcl_device *dev, const nc_conv_args *cv, nc_conv_pass pass, const nc_desc *out,
                                 const nc_desc *x, const nc_desc *b, const nc_gemm_epi *e, int64_t slices)
{
    if (!conv_usable(dev, cv, pass, out->dtype) || (pass == NC_CONV_PASS_WEIGHT && slices < 1))
        return NETCL_ERR_UNSUPPORTED;
    int64_t K = cv->C * cv->KH * cv->KW, L = cv->OH * cv->OW;
    nc_desc da = *b, dx = *x, dout = *out;
    da.ndim = dx.ndim = dout.ndim = 3;
    memset(dx.strides, 0, sizeof dx.strides);
    nc_gemm_cfg cfg;
    nc_gemm_call g;
    conv_gather cg = {cv, pass, 0};
    if (pass == NC_CONV_PASS_FWD) {   /* a = w [O, K], out [1, O, N*L] (scattered to [N, O, L]) */
        da.sizes[0] = dx.sizes[0] = dout.sizes[0] = 1;
        da.sizes[1] = cv->O, da.sizes[2] = K, da.strides[0] = 0, da.strides[1] = K, da.strides[2] = 1;
        dx.sizes[1] = K, dx.sizes[2] = cv->N * L;
        dout.sizes[1] = cv->O, dout.sizes[2] = cv->N * L;
        dout.strides[0] = 0, dout.strides[1] = cv->N * L, dout.strides[2] = 1;
        g = (nc_gemm_call){dev, &dout, &da, &dx, e, 1, cv->O, cv->N * L, K};
        ffma_blocks(&g, &cfg, &ffma_64x64);   /* the blocks the convolutions were measured with */
    } else {                          /* a = dy [S][O, ip*L], out [S, O, K] */
        cg.ip = (cv->N + slices - 1) / slices;
        da.sizes[0] = dx.sizes[0] = dout.sizes[0] = slices;
        da.sizes[1] = cv->O, da.sizes[2] = cg.ip * L;
        da.strides[0] = cg.ip * cv->O * L, da.strides[1] = L, da.strides[2] = 1;
        dx.sizes[1] = cg.ip * L, dx.sizes[2] = K;
        dout.sizes[1] = cv->O, dout.sizes[2] = K, dout.strides[0] = cv->O * K, dout.strides[1] = K, dout.strides[2] = 1;
        g = (nc_gemm_call){dev, &dout, &da, &dx, e, slices, cv->O, K, cg.ip * L};
        weight_cfg(cv, &cfg);
    }
    return launch(&g, &cfg, &cg, NULL, 0, NULL);
}

/* ---- the probe ------------------------------------------------------------------- */
/* Runs the kernel (64 x 64 blocks) on a problem with edges in m and n,
 * two k-tiles and a half, row-major then both operands transposed (wgmma:
 * w transposed, i.e. k-contiguous, then for 16-bit types the layouts it
 * reads transposed: row-major, both transposed, a alone); "" when the
 * results are right, else why not. */
static void probe_cfg(netcl_device *dev, int kind, char *why, size_t len)
{
    static const netcl_dtype dts[7] = {NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT16, NETCL_DTYPE_BFLOAT16, NETCL_DTYPE_FLOAT32,
                                       NETCL_DTYPE_FLOAT32, NETCL_DTYPE_FLOAT16, NETCL_DTYPE_BFLOAT16};
    const int64_t M = 72, N = 40, K = 56;
    int wg = kind >= KIND_WGMMA;
    why[0] = 0;
    /* 0 row-major, 1 both transposed, 2 w transposed, 3 a transposed */
    static const int layouts[2][4] = {{0, 1}, {2, 0, 1, 3}};
    int nlayouts = !wg ? 2 : dts[kind] == NETCL_DTYPE_FLOAT32 ? 1 : 4;
    for (int li = 0; li < nlayouts && !why[0]; li++) {
        int layout = layouts[wg][li], ta = layout == 1 || layout == 3, tb = layout == 1 || layout == 2;
        nc_gemm_cfg cfg;
        if (kind == KIND_FFMA) /* 64 x 64 blocks of 2 x 2 warps: several blocks */
            cfg = (nc_gemm_cfg){.kernel = NC_GEMM_FFMA, 64, 64, 16, 2, 2, 4, 8, 1, 0, 0, 0, 3, 8};
        else {   /* several blocks and pipeline stages */
            int kbk = dts[kind] == NETCL_DTYPE_FLOAT32 ? 16 : 32;
            cfg = wg ? (nc_gemm_cfg){.kernel = NC_GEMM_WGMMA, 64, 64, kbk, 4, 1, 1, 1, 1, 0, 0, 0, 3, 8}
                     : (nc_gemm_cfg){.kernel = NC_GEMM_MMA, 64, 64, kbk, 2, 2, 1, 1, 1, 0, 0, 0, 3, 8};
        }
        double err = nc_gemm_check_cfg(dev, dts[kind], M, N, K, ta, tb, &cfg);
        if (err < 0) snprintf(why, len, "%s: %.150s", dt_names[kind], netcl_last_error());
        else if (!(err <= (kind == KIND_FFMA ? 1e-4 : 1e-2)))
            snprintf(why, len, "%s: wrong result (relative error %.2g)", dt_names[kind], err);
    }
}

static void probe(netcl_device *dev, nc_gemm_state *s, int kind)
{
    if (s->tc_ok[kind] != 0) return;   /* 1 passed, -1 failed */
    char why[200];
    probe_cfg(dev, kind, why, sizeof why);
    s->tc_ok[kind] = why[0] ? -1 : 1;
    if (why[0]) {
        size_t n = strlen(s->tc_status);
        snprintf(s->tc_status + n, sizeof s->tc_status - n, "%s%s", n ? "; " : "", why);
        const char *dbg = getenv("NETCL_DEBUG");
        if (dbg && atoi(dbg) >= 1)
            fprintf(stderr, "netcl: tensor-core probe failed on %s: %s\n", dev->name, why);
    }
}

const char *nc_cl_tensor_cores(netcl_device *dev)
{
    static _Thread_local char buf[400];
    if (!dev || dev->type == NETCL_DEVICE_CPU || !dev->impl) return "none (not an OpenCL device)";
    if (!hardware_ok(dev))
        return "none (needs an NVIDIA device of compute capability 8.0 or newer)";
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    if (!s) return "none (out of host memory)";
    buf[0] = 0;
    for (int k = 0; k < 3; k++) {
        probe(dev, s, k);
        if (s->tc_ok[k] == 1) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? "," : "", dt_names[k]);
    }
    /* ",wgmma" where Hopper's instruction serves at least one of them */
    int wgmma = 0;
    for (int k = KIND_WGMMA; k < KIND_WGMMA + 3 && wgmma_hardware_ok(dev); k++) {
        probe(dev, s, k);
        wgmma |= s->tc_ok[k] == 1 && s->tc_ok[k - KIND_WGMMA] == 1;
    }
    if (buf[0] && wgmma) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ",wgmma");
    if (!buf[0]) snprintf(buf, sizeof buf, "none (probe failed: %.300s)", s->tc_status);
    else if (emulated()) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (emulated)");
    return buf;
}
