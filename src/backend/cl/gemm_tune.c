/* gemm_tune.c — the GEMM tuner: for one problem (dtype, sizes, operand layouts)
 * it measures candidate configurations on the device, checks each one's
 * result against a reference (the simplest kernel, itself checked against
 * sampled dot products computed on the host in double), and stores the
 * fastest correct one in the device's tuning cache (gemm_tune_cache.c) for the
 * problem's shape class. Buffers are the backend's own cl_mem, filled with
 * host random numbers: the tuner needs no tensors and no higher layer. */
#include "gemm.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

netcl_status nc_gemm_cache_store(netcl_device *dev, const char *key, const nc_gemm_cfg *cfg, const char *note);

/* ---- candidate sets ---------------------------------------------------------------
 * GPUs: work-group tiles from 32x32 to 256x128, 64 to 512 threads, 4x4 to
 * 8x16 outputs per thread, local reads of 1 to 8 wide, with and without
 * padding. CPUs: the direct kernel's register blocks and one tiled one. */
static const nc_gemm_cfg gpu_candidates[] = {
    {NC_GEMM_TILED, 128, 128, 16, 16, 16, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 8, 16, 16, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 16, 16, 4, 4, 4, 0, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 8, 16, 16, 4, 4, 4, 0, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 16, 16, 2, 2, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 16, 16, 1, 1, 4, 1, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 16, 16, 8, 8, 4, 8, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 32, 8, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 16, 8, 32, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 128, 32, 16, 16, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 256, 128, 8, 32, 16, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 256, 8, 16, 32, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 128, 64, 16, 16, 8, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 64, 128, 16, 8, 16, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 64, 64, 16, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 64, 64, 32, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 64, 64, 16, 16, 16, 2, 2, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 32, 32, 16, 8, 8, 2, 2, 4, 2, 0, 0, 0, 0},
    {NC_GEMM_TILED, 64, 32, 16, 8, 8, 4, 2, 4, 4, 0, 0, 0, 0},
    {NC_GEMM_TILED, 32, 64, 16, 8, 8, 2, 4, 4, 4, 0, 0, 0, 0},
};
static const nc_gemm_cfg cpu_candidates[] = {
    /* direct: {kernel, -, -, K chunk, group m, group n, -, -, vw, -, cmr, cnr} */
    {NC_GEMM_DIRECT, 0, 0, 128, 8, 8, 1, 1, 16, 0, 8, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 256, 4, 8, 1, 1, 16, 0, 6, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 256, 4, 8, 1, 1, 16, 0, 8, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 64, 8, 16, 1, 1, 16, 0, 6, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 128, 8, 8, 1, 1, 16, 0, 4, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 0, 0, 0, 1, 1, 16, 0, 6, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 0, 0, 0, 1, 1, 16, 0, 4, 16, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 128, 8, 8, 1, 1, 8, 0, 8, 8, 0, 0},
    {NC_GEMM_DIRECT, 0, 0, 0, 0, 0, 1, 1, 8, 0, 8, 8, 0, 0},
    {NC_GEMM_TILED, 64, 64, 16, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0},
};


/* ---- buffers ------------------------------------------------------------------------- */
typedef struct {
    cl_mem a, w, o, r;
    nc_desc da, dw, dout, dref;
    float *ha, *hw;        /* host copies (as float) for the sampled check */
    float *got, *want;     /* results read back */
} tune_bufs;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void release(tune_bufs *b)
{
    cl_mem ms[4] = {b->a, b->w, b->o, b->r};
    for (int i = 0; i < 4; i++)
        if (ms[i]) nc_cl.clReleaseMemObject(ms[i]);
    free(b->ha);
    free(b->hw);
    free(b->got);
    free(b->want);
}

/* Uniform [-1, 1) numbers in dt's storage, written to a new buffer; the
 * float values (as rounded to dt) go to *host. */
static netcl_status random_buffer(nc_cl_device *cd, netcl_dtype dt, int64_t n, uint64_t seed, cl_mem *out, float **host)
{
    int es = netcl_dtype_size(dt);
    unsigned char *raw = malloc((size_t)(n * es));
    *host = malloc(sizeof(float) * (size_t)n);
    if (!raw || !*host) { free(raw); return nc_fail(NETCL_ERR_OOM, "tune: out of host memory"); }
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = (double)(x >> 11) * 0x1p-52 - 1.0;
        nc_store_double(raw, dt, i, v);
        (*host)[i] = (float)nc_load_double(raw, dt, i);
    }
    cl_int err;
    *out = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, (size_t)(n * es), NULL, &err);
    if (err == CL_SUCCESS) err = nc_cl.clEnqueueWriteBuffer(cd->queue, *out, CL_TRUE, 0, (size_t)(n * es), raw, 0, NULL, NULL);
    free(raw);
    return err == CL_SUCCESS ? NETCL_OK : nc_cl_fail(err, "tune: buffer", __FILE__, __LINE__);
}

static netcl_status make_bufs(nc_cl_device *cd, netcl_dtype dt, int64_t M, int64_t N, int64_t K, int ta, int tb, tune_bufs *b)
{
    memset(b, 0, sizeof *b);
    NC_TRY(random_buffer(cd, dt, M * K, 1, &b->a, &b->ha));
    NC_TRY(random_buffer(cd, dt, K * N, 2, &b->w, &b->hw));
    cl_int err;
    size_t onb = (size_t)(M * N * netcl_dtype_size(dt));
    b->o = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, onb, NULL, &err);
    if (err == CL_SUCCESS) b->r = nc_cl.clCreateBuffer(cd->ctx, CL_MEM_READ_WRITE, onb, NULL, &err);
    if (err != CL_SUCCESS) return nc_cl_fail(err, "tune: output buffer", __FILE__, __LINE__);
    b->got = malloc(sizeof(float) * (size_t)(M * N));
    b->want = malloc(sizeof(float) * (size_t)(M * N));
    if (!b->got || !b->want) return nc_fail(NETCL_ERR_OOM, "tune: out of host memory");
    nc_matrix_desc(&b->da, b->a, dt, M, K, ta);
    nc_matrix_desc(&b->dw, b->w, dt, K, N, tb);
    nc_matrix_desc(&b->dout, b->o, dt, M, N, 0);
    nc_matrix_desc(&b->dref, b->r, dt, M, N, 0);
    return NETCL_OK;
}

/* Reads an output buffer back as floats. */
static netcl_status read_floats(nc_cl_device *cd, cl_mem m, netcl_dtype dt, int64_t n, float *dst)
{
    int es = netcl_dtype_size(dt);
    unsigned char *raw = malloc((size_t)(n * es));
    if (!raw) return nc_fail(NETCL_ERR_OOM, "tune: out of host memory");
    cl_int err = nc_cl.clEnqueueReadBuffer(cd->queue, m, CL_TRUE, 0, (size_t)(n * es), raw, 0, NULL, NULL);
    for (int64_t i = 0; err == CL_SUCCESS && i < n; i++) dst[i] = (float)nc_load_double(raw, dt, i);
    free(raw);
    return err == CL_SUCCESS ? NETCL_OK : nc_cl_fail(err, "tune: read back", __FILE__, __LINE__);
}

/* max |got - want| / max |want| */
static double rel_error(const float *got, const float *want, int64_t n)
{
    double err = 0, scale = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= err)) err = d;   /* NaN wins */
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    }
    return err / scale;
}

/* ---- measuring ------------------------------------------------------------------------ */
/* Best time of a few runs (more when they are short; one when it is 4x
 * slower than the best so far), after the checking run warmed it up. */
static netcl_status time_cfg(const nc_gemm_call *g, const nc_gemm_cfg *c, double best_so_far, double *best)
{
    nc_cl_device *cd = nc_cl_dev(g->dev);
    double budget = best_so_far < 1e29 ? 10 * best_so_far : 0.2, spent = 0;
    *best = 1e30;
    for (int r = 0; r < 50 && (r < 3 || spent < budget); r++) {
        double t0 = now_s();
        NC_TRY(nc_gemm_launch(g, c));
        NETCL_CL_CHECK(nc_cl.clFinish(cd->queue));
        double t = now_s() - t0;
        spent += t;
        if (t < *best) *best = t;
        if (t > 4 * best_so_far) break;
    }
    return NETCL_OK;
}

/* Reference result into b->want (the direct kernel, one output per item),
 * checked against 64 dot products computed on the host in double. */
static netcl_status reference(nc_gemm_call *g, tune_bufs *b, double tol)
{
    nc_gemm_cfg ref = {.kernel = NC_GEMM_DIRECT, .cmr = 1, .cnr = 1, .vw = 1, .vwm = 1, .vwn = 1};
    g->out = &b->dref;
    NC_TRY(nc_gemm_launch(g, &ref));
    NC_TRY(read_floats(nc_cl_dev(g->dev), b->r, g->out->dtype, g->M * g->N, b->want));
    g->out = &b->dout;
    uint64_t x = 12345;
    for (int s = 0; s < 64; s++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t m = (int64_t)(x % (uint64_t)g->M), n = (int64_t)((x >> 20) % (uint64_t)g->N);
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < g->K; k++) {
            double p = (double)b->ha[m * g->a->strides[1] + k * g->a->strides[2]] *
                       (double)b->hw[k * g->w->strides[1] + n * g->w->strides[2]];
            acc += p;
            mag += fabs(p);
        }
        if (fabs(acc - b->want[m * g->N + n]) > tol * (mag + 1e-30))
            return nc_fail(NETCL_ERR_BACKEND, "tune: the reference kernel disagrees with the host at (%lld, %lld): %g vs %g",
                           (long long)m, (long long)n, (double)b->want[m * g->N + n], acc);
    }
    return NETCL_OK;
}

static void append(char *report, int64_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *report, int64_t len, const char *fmt, ...)
{
    if (!report || len <= 0) return;
    size_t n = strlen(report);
    if ((int64_t)n + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report + n, (size_t)len - n, fmt, ap);
    va_end(ap);
}

/* Candidates for g: mma ones alone where that path is usable; else the
 * untuned choice, the FFMA kernel's where it is usable, then the device
 * type's list, de-duplicated against the first. */
static int candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max)
{
    int n = nc_mma_candidates(g, out, max);
    if (n > 0) return n;   /* tensor-core problems: only tensor-core configurations compete */
    const nc_gemm_cfg *list = g->dev->type == NETCL_DEVICE_OPENCL_CPU ? cpu_candidates : gpu_candidates;
    int count = g->dev->type == NETCL_DEVICE_OPENCL_CPU ? (int)(sizeof cpu_candidates / sizeof cpu_candidates[0])
                                                        : (int)(sizeof gpu_candidates / sizeof gpu_candidates[0]);
    nc_gemm_cfg ffma[16];
    int nffma = nc_ffma_candidates(g, ffma, 16);
    nc_gemm_untuned(g, &out[0]);
    n = 1;
    for (int i = 0; i < nffma + count && n < max; i++) {
        const nc_gemm_cfg *c = i < nffma ? &ffma[i] : &list[i - nffma];
        if (memcmp(c, &out[0], sizeof out[0]) != 0) out[n++] = *c;
    }
    return n;
}

/* Measures every candidate; *best gets the fastest correct one. */
static netcl_status search(nc_gemm_call *g, tune_bufs *b, int max, double tol, nc_gemm_cfg *best, double *best_t,
                           char *report, int64_t rlen)
{
    nc_gemm_cfg cands[64];
    int n = candidates(g, cands, max < 64 ? max : 64);
    double flop = 2.0 * (double)g->M * (double)g->N * (double)g->K;
    *best_t = 1e30;
    for (int i = 0; i < n; i++) {
        char text[200];
        nc_gemm_cfg_format(&cands[i], text, sizeof text);
        netcl_status st = nc_gemm_launch(g, &cands[i]);
        if (st == NETCL_OK) st = read_floats(nc_cl_dev(g->dev), b->o, g->out->dtype, g->M * g->N, b->got);
        if (st != NETCL_OK) {
            append(report, rlen, "  %-72s does not run here\n", text);
            continue;
        }
        double err = rel_error(b->got, b->want, g->M * g->N), t;
        if (!(err <= tol)) {
            append(report, rlen, "  %-72s WRONG (relative error %.2g)\n", text, err);
            continue;
        }
        NC_TRY(time_cfg(g, &cands[i], *best_t, &t));
        append(report, rlen, "  %-72s %9.1f GFLOP/s\n", text, flop / t / 1e9);
        if (t < *best_t) { *best_t = t; *best = cands[i]; }
    }
    return NETCL_OK;
}

double nc_gemm_check_cfg(netcl_device *dev, netcl_dtype dt, int64_t M, int64_t N, int64_t K, int ta, int tb,
                         const nc_gemm_cfg *cfg)
{
    nc_cl_device *cd = nc_cl_dev(dev);
    tune_bufs b;
    netcl_status st = make_bufs(cd, dt, M, N, K, ta, tb, &b);
    /* float32 configurations of the tensor-core kernels are checked in tf32 */
    int fp32 = dt == NETCL_DTYPE_FLOAT32 && cfg->kernel != NC_GEMM_FFMA ? NC_FP32_TF32 : NC_FP32_IEEE;
    nc_gemm_epi epi = {1, 0, NULL, NULL, 0, -1, 0, fp32};
    nc_gemm_call g = {dev, &b.dout, &b.da, &b.dw, &epi, 1, M, N, K};
    int lowp = dt != NETCL_DTYPE_FLOAT32 && dt != NETCL_DTYPE_FLOAT64;
    if (st == NETCL_OK) st = reference(&g, &b, lowp ? 1e-2 : 1e-4);
    if (st == NETCL_OK) st = cfg->kernel == NC_GEMM_MMA || cfg->kernel == NC_GEMM_FFMA || cfg->kernel == NC_GEMM_WGMMA ? nc_mma_launch(&g, cfg) : nc_gemm_launch(&g, cfg);
    if (st == NETCL_ERR_UNSUPPORTED) st = nc_fail(st, "the configuration does not fit %s", dev->name);
    if (st == NETCL_OK) st = read_floats(cd, b.o, dt, M * N, b.got);
    double err = st == NETCL_OK ? rel_error(b.got, b.want, M * N) : -1;
    release(&b);
    return err;
}

netcl_status nc_cl_tune_gemm(netcl_device *dev, const nc_gemm_problem *p, int max_candidates, char *report,
                             int64_t report_len)
{
    if (!dev->impl) return nc_fail(NETCL_ERR_DEVICE, "tune: %s was shut down", dev->name);
    netcl_dtype dtype = p->dtype;
    int64_t m = p->m, n = p->n, k = p->k;
    NC_TRY(nc_cl_enter(dev, "tune", dtype, dtype));
    nc_cl_device *cd = nc_cl_dev(dev);
    tune_bufs b;
    netcl_status st = make_bufs(cd, dtype, m, n, k, p->trans_a, p->trans_b, &b);
    nc_gemm_epi epi = {1, 0, NULL, NULL, 0, -1, 0, p->fp32};
    nc_gemm_call g = {dev, &b.dout, &b.da, &b.dw, &epi, 1, m, n, k};
    int lowp = dtype == NETCL_DTYPE_FLOAT16 || dtype == NETCL_DTYPE_BFLOAT16;
    int tf32 = dtype == NETCL_DTYPE_FLOAT32 && nc_mma_usable(&g) && p->fp32 == NC_FP32_TF32;
    double tol = dtype == NETCL_DTYPE_FLOAT64 ? 1e-10 : lowp || tf32 ? 1e-2 : 1e-4;
    char key[64];
    nc_gemm_class_key(&g, key, sizeof key);
    append(report, report_len, "%s %s %lldx%lldx%lld (class %s)\n", dev->name, netcl_dtype_name(dtype), (long long)m,
           (long long)n, (long long)k, key);
    if (st == NETCL_OK) st = reference(&g, &b, lowp || tf32 ? 1e-2 : 1e-4);
    nc_gemm_cfg best;
    double best_t = 1e30;
    if (st == NETCL_OK) st = search(&g, &b, max_candidates > 0 ? max_candidates : 64, tol, &best, &best_t, report, report_len);
    if (st == NETCL_OK && best_t < 1e29) {
        char text[200], note[160];
        nc_gemm_cfg_format(&best, text, sizeof text);
        snprintf(note, sizeof note, "%.1f GFLOP/s at %lldx%lldx%lld", 2.0 * (double)m * (double)n * (double)k / best_t / 1e9,
                 (long long)m, (long long)n, (long long)k);
        append(report, report_len, "  winner: %s (%s)\n", text, note);
        st = nc_gemm_cache_store(dev, key, &best, note);
    } else if (st == NETCL_OK) {
        st = nc_fail(NETCL_ERR_BACKEND, "tune: no candidate ran correctly on %s for %s", dev->name, key);
    }
    release(&b);
    return st;
}

/* The product matmul runs (the caller worked out its K slices and operand
 * copies, as ops/linalg.c does) and the configuration it gets. */
netcl_status nc_cl_gemm_config(netcl_device *dev, const nc_gemm_problem *p, char *buf, int64_t len)
{
    if (!dev->impl) return nc_fail(NETCL_ERR_DEVICE, "gemm_config: %s was shut down", dev->name);
    netcl_dtype dtype = p->dtype;
    int64_t m = p->m, n = p->n, k = p->k;
    nc_desc da, dw, dout;
    nc_matrix_desc(&da, NULL, dtype, m, k, p->trans_a);
    nc_matrix_desc(&dw, NULL, dtype, k, n, p->trans_b);
    nc_matrix_desc(&dout, NULL, dtype, m, n, 0);
    int S = p->split, copies = p->copies;
    int64_t ks = S > 1 ? nc_gemm_slice_len(k, S) : k;
    if (S > 1) nc_gemm_slice_descs(&da, &dw, &dout, S, ks);
    if (copies & NC_GEMM_COPY_A) nc_matrix_desc(&da, NULL, dtype, m, k, 1);
    if (copies & NC_GEMM_COPY_W) nc_matrix_desc(&dw, NULL, dtype, k, n, 0);
    nc_gemm_epi epi = {1, 0, NULL, NULL, 0, -1, 0, p->fp32};
    nc_gemm_call g = {dev, &dout, &da, &dw, &epi, S > 1 ? S : 1, m, n, ks};
    nc_tf32_way way = S == 1 && !copies ? nc_gemm_tf32_round_first(&g) : NC_TF32_NONE;
    if (way != NC_TF32_NONE) {
        nc_gemm_tf32_describe(way, buf, (size_t)len);
        return NETCL_OK;
    }
    nc_gemm_cfg cfg;
    const char *why;
    nc_gemm_choose(&g, &cfg, &why);
    char text[200], split[80] = "";
    nc_gemm_cfg_format(&cfg, text, sizeof text);
    if (S > 1) {
        int in_kernel = nc_gemm_split_in_kernel(&cfg);
        snprintf(split, sizeof split, "; K in %d slices of %lld%s, summed%s", S, (long long)ks,
                 S * ks < k ? in_kernel ? " and the rest (in the last)" : " and the rest" : "", in_kernel ? " in the kernel" : "");
    }
    snprintf(buf, (size_t)len, "%s (%s%s%s%s%s%s)", text, why, split, copies & NC_GEMM_COPY_A ? "; a copied m-contiguous first" : "",
             copies & NC_GEMM_COPY_W ? "; w copied n-contiguous first" : "",
             copies & NC_GEMM_PAD_A ? "; a copied first, its rows on 128-byte lines" : "",
             copies & NC_GEMM_PAD_W ? "; w copied first, its rows on 128-byte lines" : "");
    return NETCL_OK;
}
