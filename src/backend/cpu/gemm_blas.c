/* gemm_blas.c — an optional CPU BLAS for the cpu backend's matmul (gemm.c):
 * OpenBLAS is dlopen'ed at first use (like the OpenCL loader, so the
 * library builds and runs without it) and its cblas_sgemm/dgemm take
 * float32/float64 products whose operands are row- or column-major per
 * batch. NETCL_BLAS=0 turns it off (the built-in blocked kernel then runs).
 *
 * Threads. OpenBLAS's result bits depend on how a product is cut: its edge
 * micro-kernels sum k in another order than the full ones (the Haswell/Zen
 * sgemm n=4 kernel keeps even and odd k apart), its threaded driver cuts K
 * differently from the serial one, and its threads split both M and N by
 * the thread count. So a result that must not depend on the thread count
 * cannot come from OpenBLAS's threads, nor from splitting rows by threads.
 * Instead each product is cut into output tiles whose sizes depend on the
 * shape alone; each tile is one single-threaded BLAS call over all of K,
 * and the netcl pool deals the tiles (of every batch item) to its threads.
 * The same calls run on the same data whatever the thread count, nested or
 * not, so the bits agree (spec/ops_spec.lua checks 1, 2 and 3 threads).
 *
 * NETCL_BLAS_THREADED=1 trades that for OpenBLAS's own threads: a large
 * product is one call per batch item with OpenBLAS at netcl's thread count
 * (outside the pool, which waits), faster where tiles balance badly, with
 * bits that change with the thread count. */
#include "cpu.h"
#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);

typedef void (*set_threads_fn)(int);

static sgemm_fn sgemm;
static dgemm_fn dgemm;
static set_threads_fn set_threads;
static int threaded;               /* NETCL_BLAS_THREADED=1 */
static char blas_name[64] = "none";

/* Sets an OpenBLAS variable for its initialisation (it reads them once, in
 * dlopen) unless the user did; undone after, so child processes do not
 * inherit netcl's choice. */
static void env_for_load(const char *name, const char *value, int *set)
{
    *set = getenv(name) == NULL && setenv(name, value, 0) == 0;
}

static void env_after_load(const char *name, int set)
{
    if (set) unsetenv(name);
}

/* OpenBLAS 0.3.21 (Debian 12) does not recognise newer Intel Xeons,
 * notably under a hypervisor's generic CPU name, and falls back to a slow
 * generic kernel, several times slower than the one OPENBLAS_CORETYPE
 * names (measurements: docs/notes/kernels.md). The kernel family is named
 * from the CPU's own features on Intel; AMD parts are recognised as they
 * are. */
static const char *intel_core_type(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
    return NULL;
#else
    __builtin_cpu_init();
    if (!__builtin_cpu_is("intel")) return NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
#endif
}

static void *open_blas(const char *name)
{
    /* In tile mode OpenBLAS's threads never get work: do not start them.
     * Threaded mode: a thread that finds no work sleeps after 2^16 cycles
     * (~25 us) instead of 2^28 (~0.1 s), which it spends in a sched_yield
     * loop that takes a core from the pool's next job. */
    int set_n, set_t, set_c = 0;
    const char *core = intel_core_type();
    env_for_load("OPENBLAS_NUM_THREADS", "1", &set_n);
    env_for_load("OPENBLAS_THREAD_TIMEOUT", "16", &set_t);
    if (core) env_for_load("OPENBLAS_CORETYPE", core, &set_c);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    env_after_load("OPENBLAS_NUM_THREADS", set_n);
    env_after_load("OPENBLAS_THREAD_TIMEOUT", set_t);
    env_after_load("OPENBLAS_CORETYPE", set_c);
    return h;
}

static void load(void)
{
    const char *env = getenv("NETCL_BLAS");
    if (env && strcmp(env, "0") == 0) return;
    env = getenv("NETCL_BLAS_THREADED");
    threaded = env && strcmp(env, "1") == 0;
    const char *names[] = {"libopenblas.so.0", "libopenblas.so", NULL};
    for (int i = 0; names[i]; i++) {
        void *h = open_blas(names[i]);
        if (!h) continue;
        sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
        dgemm = (dgemm_fn)dlsym(h, "cblas_dgemm");
        set_threads = (set_threads_fn)dlsym(h, "openblas_set_num_threads");
        if (sgemm && dgemm) {
            /* single-threaded except inside threaded mode's exclusive calls */
            if (set_threads) set_threads(1);
            else threaded = 0;
            snprintf(blas_name, sizeof blas_name, "%s", names[i]);
            return;
        }
        sgemm = NULL;
        dgemm = NULL;
        dlclose(h);
    }
}

static void ensure_loaded(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load);
}

/* Loading sets and clears OpenBLAS's variables in the environment, which
 * must not happen while another thread may read it: an OpenCL driver
 * compiling on its own threads (PoCL spawns its linker with posix_spawn,
 * which once failed with EFAULT in a test run while a pool thread loaded
 * the BLAS). So the cpu device loads it when it registers, before OpenCL
 * starts any thread. */
void nc_cpu_blas_init(void) { ensure_loaded(); }

const char *nc_cpu_blas_name(void)
{
    ensure_loaded();
    return blas_name;
}

/* A [rows, cols] operand per batch: its transpose flag and leading dim, or 0
 * when neither dim has unit stride (then the built-in kernel runs). */
static int layout(const nc_desc *d, int *trans, int *ld)
{
    int64_t rows = d->sizes[1], cols = d->sizes[2], s1 = d->strides[1], s2 = d->strides[2];
    if ((s2 == 1 || cols == 1) && s1 >= (cols > 1 ? cols : 1) && s1 < INT32_MAX) { *trans = NO_TRANS; *ld = (int)(s1 ? s1 : 1); return 1; }
    if ((s1 == 1 || rows == 1) && s2 >= (rows > 1 ? rows : 1) && s2 < INT32_MAX) { *trans = TRANS; *ld = (int)(s2 ? s2 : 1); return 1; }
    return 0;
}

typedef struct {
    const nc_desc *out, *a, *w;
    int64_t M, K, N;
    int64_t tm, tn, mt, nt;        /* tile sizes; tiles along M and N per batch item */
    int ta, tw, lda, ldw, es;
    nc_cpu_block_fn after;         /* on each finished block, or NULL */
    void *after_ctx;
} blas_job;

/* One BLAS call: rows [m0, m0+m) x cols [n0, n0+n) of batch item b. */
static void gemm_block(const blas_job *j, int64_t b, int64_t m0, int64_t m, int64_t n0, int64_t n)
{
    int64_t aoff = j->ta == NO_TRANS ? m0 * j->lda : m0;     /* row m0 of op(A) */
    int64_t woff = j->tw == NO_TRANS ? n0 : n0 * j->ldw;     /* col n0 of op(W) */
    const char *pa = (const char *)j->a->buf + (j->a->offset + b * j->a->strides[0] + aoff) * j->es;
    const char *pw = (const char *)j->w->buf + (j->w->offset + b * j->w->strides[0] + woff) * j->es;
    char *po = (char *)j->out->buf + (j->out->offset + (b * j->M + m0) * j->N + n0) * j->es;
    int k = (int)j->K, ldc = (int)j->N;
    if (j->out->dtype == NETCL_DTYPE_FLOAT32)
        sgemm(ROW_MAJOR, j->ta, j->tw, (int)m, (int)n, k, 1.0f, (const float *)pa, j->lda, (const float *)pw, j->ldw,
              0.0f, (float *)po, ldc);
    else
        dgemm(ROW_MAJOR, j->ta, j->tw, (int)m, (int)n, k, 1.0, (const double *)pa, j->lda, (const double *)pw, j->ldw,
              0.0, (double *)po, ldc);
}

/* tiles [t0, t1) of all batch items, batch-major */
static void run_tiles(void *v, int64_t t0, int64_t t1)
{
    const blas_job *j = v;
    for (int64_t t = t0; t < t1; t++) {
        int64_t per = j->mt * j->nt, b = t / per, mi = t % per / j->nt, ni = t % j->nt;
        int64_t m0 = mi * j->tm, n0 = ni * j->tn;
        int64_t m = j->M - m0 < j->tm ? j->M - m0 : j->tm, n = j->N - n0 < j->tn ? j->N - n0 : j->tn;
        gemm_block(j, b, m0, m, n0, n);
        if (j->after) j->after(j->after_ctx, b, m0, m0 + m, n0, n0 + n);
    }
}

#define MIN_WORK 1048576.0    /* multiply-adds below which a part is not worth a thread */
#define TILE_WORK 4194304.0   /* and below which a tile is not cut further */
enum { TILE_MIN = 64,         /* tiles are not cut below this many rows or columns */
       TASKS = 32 };          /* tiles wanted per product: two each for 16 threads */

/* Halves a tile side, keeping it a multiple of 16 (OpenBLAS's widest
 * micro-tile) so that cut tiles run full micro-kernels. */
static int64_t halve(int64_t s) { return ((s + 1) / 2 + 15) / 16 * 16; }

/* The tile sizes for a [B, M, N] output: from the shape alone, never the
 * thread count. Each item is cut until it has ~TASKS/B tiles, but no tile
 * below TILE_WORK or TILE_MIN a side. Rows are cut first until a tile is
 * twice as wide as tall: a small square tile runs OpenBLAS worst (64x64
 * tiles of 256^3 ran ~20% below 64x256 panels). */
static void pick_tiles(blas_job *j, int64_t B)
{
    double item = (double)j->M * (double)j->N * (double)j->K;
    double per = TASKS / B > 1 ? TASKS / B : 1, target = item / per;
    if (target < TILE_WORK) target = TILE_WORK;
    j->tm = j->M;
    j->tn = j->N;
    while ((double)j->tm * (double)j->tn * (double)j->K > target) {
        int64_t *s = 2 * j->tm >= j->tn ? &j->tm : &j->tn;
        if (*s <= TILE_MIN) s = s == &j->tm ? &j->tn : &j->tm;
        if (*s <= TILE_MIN) break;
        *s = halve(*s);
    }
    j->mt = (j->M + j->tm - 1) / j->tm;
    j->nt = (j->N + j->tn - 1) / j->tn;
}

/* Threaded mode: one call per item with OpenBLAS's threads, the pool idle. */
static void run_threaded(void *v)
{
    const blas_job *j = v;
    set_threads(nc_cpu_threads());
    for (int64_t b = 0; b < j->out->sizes[0]; b++) gemm_block(j, b, 0, j->M, 0, j->N);
    set_threads(1);
    if (j->after)
        for (int64_t b = 0; b < j->out->sizes[0]; b++) j->after(j->after_ctx, b, 0, j->M, 0, j->N);
}

int nc_cpu_blas_matmul(const nc_desc *out, const nc_desc *a, const nc_desc *w, nc_cpu_block_fn after, void *ctx)
{
    ensure_loaded();
    netcl_dtype dt = out->dtype;
    if (!(dt == NETCL_DTYPE_FLOAT32 && sgemm) && !(dt == NETCL_DTYPE_FLOAT64 && dgemm)) return 0;
    if (a->dtype != dt || w->dtype != dt) return 0;
    int64_t B = out->sizes[0], M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || K == 0) return 0;
    int ta, tw, lda, ldw;
    if (!layout(a, &ta, &lda) || !layout(w, &tw, &ldw)) return 0;
    blas_job j = {out, a, w, M, K, N, 0, 0, 0, 0, ta, tw, lda, ldw, netcl_dtype_size(dt), after, ctx};
    double item = (double)M * (double)N * (double)K;
    if (threaded && item >= MIN_WORK && nc_cpu_threads() > 1 && !nc_cpu_nested()) {
        nc_parallel_exclusive(run_threaded, &j);
        return 1;
    }
    pick_tiles(&j, B);
    /* tasks per part: at least MIN_WORK multiply-adds, so tiny products stay serial */
    double tile = (double)j.tm * (double)j.tn * (double)K;
    nc_parallel_for(B * j.mt * j.nt, (int64_t)(MIN_WORK / tile) + 1, run_tiles, &j);
    return 1;
}

