/* gemm.h — the OpenCL GEMM's kernel configurations, shared by the linalg
 * family's files (gemm*.c: gemm.c selects and launches, gemm_tune.c and
 * gemm_tune_cache.c tune and keep the winners, gemm_mma.c is the
 * tensor-core path) and the implicit-GEMM convolution. A configuration
 * names a kernel of kernels/gemm.cl or kernels/gemm_mma.cl and its -D
 * parameters; it prints and parses as "key=value" words, the form of the
 * tuning cache and of $NETCL_GEMM_CONFIG. */
#ifndef NETCL_CL_GEMM_H
#define NETCL_CL_GEMM_H

#include "cl.h"

typedef enum { NC_GEMM_TILED = 0, NC_GEMM_DIRECT = 1, NC_GEMM_MMA = 2, NC_GEMM_FFMA = 3, NC_GEMM_WGMMA = 4 } nc_gemm_kernel;

typedef struct nc_gemm_cfg {
    int kernel;                                  /* nc_gemm_kernel */
    /* tiled: work-group tile, threads, local read chunks, global vector width, padding;
     * mma: mwg x nwg x kwg block tile, mdimc x ndimc warps;
     * ffma: the same, and vwm x vwn outputs a thread;
     * wgmma: mwg x nwg x kwg block tile, mdimc warps along m (4 a warpgroup), ndimc 1 */
    int mwg, nwg, kwg, mdimc, ndimc, vwm, vwn, vw, pad;
    int cmr, cnr;                                /* direct: rows x cols per work item */
    int stages;                                  /* mma, ffma: cp.async pipeline depth */
    int gm;                                      /* mma, ffma: raster group (m-tiles walking the n-tiles together; 0 = 8) */
} nc_gemm_cfg;

/* One GEMM as the kernels see it: out [B,M,N] = epi(a [B,M,K] @ w [B,K,N]). */
typedef struct nc_gemm_call {
    netcl_device *dev;
    const nc_desc *out, *a, *w;
    const nc_gemm_epi *epi;
    int64_t B, M, N, K;
} nc_gemm_call;

/* Per-device GEMM state (nc_cl_device.gemm, created on first use). */
typedef struct nc_gemm_entry {
    char key[64];          /* nc_gemm_class_key */
    nc_gemm_cfg cfg;
} nc_gemm_entry;
typedef struct nc_gemm_state {
    int no_pragma;                 /* the compiler rejected #pragma unroll */
    int warned;                    /* a kernel failed and the direct one stood in */
    int has_forced;                /* netcl_gemm_set_config */
    nc_gemm_cfg forced;
    int cache_loaded;              /* tuning cache read (gemm_tune.c) */
    nc_gemm_entry *entries;
    int nentries, capentries;
    char cache_note[1400];         /* why the cache file was ignored, or "" */
    int tc_probed;                 /* tensor-core probe ran (gemm_mma.c) */
    int tc_ok[7];                  /* tf32, f16, bf16, ffma (float32 FMAs fed by cp.async), wgmma tf32, f16, bf16 passed */
    char tc_status[256];
    cl_mem split_count;            /* split-K's tile counts, zeros between products (gemm_split.c) */
    int64_t split_count_n;
} nc_gemm_state;
/* The device's state, created on first use (NULL only when out of memory). */
nc_gemm_state *nc_gemm_state_of(nc_cl_device *cd);
/* device bytes the state keeps (the split-K counts) */
int64_t nc_gemm_private_bytes(const struct nc_gemm_state *s);
void nc_gemm_state_free(nc_cl_device *cd);

/* "tiled mwg=128 ..." into buf; 1 if s parsed into a valid-looking cfg. */
void nc_gemm_cfg_format(const nc_gemm_cfg *c, char *buf, size_t len);
int nc_gemm_cfg_parse(nc_gemm_cfg *c, const char *s);
/* The key of a problem's shape class, e.g. "float32 nt 1024:1024:4096"
 * with each size rounded up to a power-of-two bucket (see gemm.c). */
void nc_gemm_class_key(const nc_gemm_call *g, char *buf, size_t len);
/* Launches g with cfg; NETCL_ERR_UNSUPPORTED (no message) when cfg cannot
 * serve this problem on this device (local memory, work-group size). */
netcl_status nc_gemm_launch(const nc_gemm_call *g, const nc_gemm_cfg *cfg);
/* The configuration a call gets; *why: "forced", "NETCL_GEMM_CONFIG",
 * "tuned" or "default". */
void nc_gemm_choose(const nc_gemm_call *g, nc_gemm_cfg *cfg, const char **why);
/* The configuration used without a tuned entry (the tensor-core or FFMA
 * kernel where it serves, else nc_gemm_default), and the device type's
 * default of the kernels in gemm.cl. */
void nc_gemm_untuned(const nc_gemm_call *g, nc_gemm_cfg *cfg);
void nc_gemm_default(const nc_gemm_call *g, nc_gemm_cfg *cfg);
/* Work-groups of an mwg x nwg tiling of g (all batches), and the share of
 * a t x t tiling's work that lands inside the product (not on padding). */
int64_t nc_gemm_groups(const nc_gemm_call *g, int mwg, int nwg);
double nc_gemm_fill(const nc_gemm_call *g, int t);

/* gemm_tune.c: the tuned configuration for g's class, if the cache has one. */
int nc_gemm_tuned(const nc_gemm_call *g, nc_gemm_cfg *cfg);

/* gemm_tiled of program `family` ("gemm", or "conv_implicit+gemm" with its
 * extra -D options) built for cfg and g; an operand with kfast >= 0 is
 * gathered (vector width 1, loaded along k when kfast). Fills the grid;
 * NETCL_ERR_UNSUPPORTED when cfg cannot serve g. */
netcl_status nc_gemm_tiled_kernel(const nc_gemm_call *g, const nc_gemm_cfg *c, const char *family, const char *extra,
                                  int kfast_a, int kfast_b, cl_kernel *k, size_t global[3], size_t local[3]);
/* Kernel `name` of program `family` built with opts (appended to, len its
 * buffer's size); retried without `#pragma unroll` where that fails */
netcl_status nc_gemm_build_kernel(nc_cl_device *cd, const char *family, char *opts, size_t len, const char *name,
                                  cl_kernel *k, size_t *wg);
/* 1 where a configuration is forced on dev (netcl_gemm_set_config or
 * $NETCL_GEMM_CONFIG), or its GEMM state is missing: the product-shaping
 * rules (copies, split-K) then leave the product as given */
int nc_gemm_forced(netcl_device *dev);
/* Kernel arguments shared by every GEMM kernel (gemm.c). */
netcl_status nc_gemm_set_args(const nc_gemm_call *g, cl_kernel k);
netcl_status nc_gemm_set_epi_args(cl_kernel k, cl_uint first, const nc_desc *o, const nc_gemm_epi *e, cl_mem absent,
                                  int batched);

/* gemm_mma.c: whether the tensor-core path serves g (device probed for the
 * dtype, fp32_precision not "ieee" for float32, operand layouts cp.async can copy), its
 * default configuration and candidates, and the launch (no usability check). */
int nc_mma_usable(const nc_gemm_call *g);
/* Hopper's wgmma (sm_90a through patched PTX, gemm_mma.c): where the tensor-core
 * path serves g, the device is of compute capability 9.0, its probe passed
 * for the dtype, a is k-contiguous and w k-contiguous or (16-bit) n-contiguous. */
int nc_wgmma_usable(const nc_gemm_call *g);
/* nc_mma_launch for float32 operands already rounded to tf32
 * (gemm_tf32.c): a wgmma configuration then skips its own rounding */
netcl_status nc_mma_launch_tf32_exact(const nc_gemm_call *g, const nc_gemm_cfg *c);
/* nc_mma_launch for float16 operands of a float32 output that carry tf32
 * values scaled per row of a and column of w (gemm_tf32.c): escale holds
 * the rows' and columns' largest magnitudes, a's M then w's N */
netcl_status nc_mma_launch_scaled_half(const nc_gemm_call *g, const nc_gemm_cfg *c, cl_mem escale);
/* gemm_tf32.c: large tf32 products with both operands rounded into a
 * workspace first, then wgmma; whether g takes that way, the product,
 * and its description for netcl_gemm_config */
typedef enum { NC_TF32_NONE, NC_TF32_FLOAT32, NC_TF32_HALF } nc_tf32_way;   /* none, float32 or float16 workspaces */
nc_tf32_way nc_gemm_tf32_round_first(const nc_gemm_call *g);
netcl_status nc_gemm_tf32_rounded(const nc_gemm_call *g, nc_tf32_way way);
void nc_gemm_tf32_describe(nc_tf32_way way, char *buf, size_t len);
/* The same pipeline feeding float32 FMAs (ieee float32 on those devices). */
int nc_ffma_usable(const nc_gemm_call *g);
void nc_ffma_default(const nc_gemm_call *g, nc_gemm_cfg *cfg);
int64_t nc_ffma_small_groups(const nc_gemm_call *g);
/* The shortest K at which the FFMA kernel serves a product whose small
 * blocks do not fill the device, and so the shortest K slice gemm_split.c
 * cuts for one: 512 where both operands are row-major (shorter ones keep
 * gemm_tiled), else 256 (gemm.c, nc_gemm_untuned) */
int64_t nc_ffma_few_blocks_k(const nc_gemm_call *g);
/* whether nc_ffma_default gives g (a tn product) the two-warp tn blocks */
int nc_ffma_tn_blocks(const nc_gemm_call *g);
int nc_ffma_candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max);
void nc_mma_default(const nc_gemm_call *g, nc_gemm_cfg *cfg);
int nc_mma_candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max);
netcl_status nc_mma_launch(const nc_gemm_call *g, const nc_gemm_cfg *cfg);
/* Split-K summed inside the FFMA kernel (gemm_split.c): g's B batches are
 * K slices of g->K elements of one output, g->out [1, M, N] (the last
 * slice klast long); their partial tiles go to part (B x mwg x nwg floats
 * a tile) and the tile's last block adds them (count: an int a tile, 0
 * between products). NETCL_ERR_UNSUPPORTED where cfg is not an FFMA one. */
typedef struct nc_split_sum {
    cl_mem part, count;
    int64_t klast;
} nc_split_sum;
netcl_status nc_ffma_split_launch(const nc_gemm_call *g, const nc_gemm_cfg *cfg, const nc_split_sum *split);
/* Whether split-K sums its slices inside the kernel of cfg (gemm_split.c):
 * the FFMA kernel's small blocks (64x64 outputs and fewer), whose last
 * block of a tile adds the partials, which saves gemm_slices' launch. Not
 * the 128x64 blocks: the tn ones of 8 x 16 a thread lost, the others
 * hardly moved (measurements: docs/notes/kernels.md).
 * $NETCL_GEMM_SPLIT_SUM=pass keeps the separate pass everywhere, =kernel
 * sums in every FFMA kernel (for comparisons) */
int nc_gemm_split_in_kernel(const nc_gemm_cfg *cfg);
/* a [1, M, K], w [1, K, N] and out [1, M, N] become split-K's S slices of
 * ks: [S, M, ks] @ [S, ks, N] -> [S, M, N], the batch strides along K
 * (views, no copies; gemm_split.c) */
void nc_gemm_slice_descs(nc_desc *a, nc_desc *w, nc_desc *out, int S, int64_t ks);
/* The FFMA kernel as a convolution pass (groups 1, float32), the input
 * gathered by its copies: forward y <- x, b = w, e fused; backward-weight
 * out [slices, O, C*KH*KW] <- x, b = dy, slice s summing images [s ip,
 * (s+1) ip), ip = ceil(N / slices) (slices past the images come out 0).
 * usable: 0 where the kernel cannot serve the pass, else 1 (forward) or
 * the slices it wants (backward-weight). */
int64_t nc_ffma_conv_usable(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt);
netcl_status nc_ffma_conv_launch(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, const nc_desc *out,
                                 const nc_desc *x, const nc_desc *b, const nc_gemm_epi *e, int64_t slices);

/* gemm_tune.c: runs cfg (any kernel, no usability check) on a random problem
 * and returns its relative error against the reference kernel; < 0 when it
 * did not run (the reason in netcl_last_error). */
double nc_gemm_check_cfg(netcl_device *dev, netcl_dtype dt, int64_t M, int64_t N, int64_t K, int ta, int tb,
                         const nc_gemm_cfg *cfg);

#endif
