/* blas.c — an optional CPU BLAS for the cpu backend's matmul: OpenBLAS is
 * dlopen'ed at first use (like the OpenCL loader, so the library builds and
 * runs without it) and its cblas_sgemm/dgemm take float32/float64 products
 * whose operands are row- or column-major per batch. NETCL_BLAS=0 turns it
 * off (the built-in blocked kernel then runs). OpenBLAS runs
 * single-threaded inside the parts of the netcl thread pool (rows split,
 * never K), so a result does not depend on the thread count. */
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
static char blas_name[64] = "none";

static void load(void)
{
    const char *env = getenv("NETCL_BLAS");
    if (env && strcmp(env, "0") == 0) return;
    const char *names[] = {"libopenblas.so.0", "libopenblas.so", NULL};
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
        dgemm = (dgemm_fn)dlsym(h, "cblas_dgemm");
        if (sgemm && dgemm) {
            /* one threading system: OpenBLAS runs single-threaded inside the
             * netcl thread pool's parts (its own spinning threads would fight
             * the pool for the cores) */
            set_threads_fn set = (set_threads_fn)dlsym(h, "openblas_set_num_threads");
            if (set) set(1);
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
    int ta, tw, lda, ldw, es;
} blas_job;

/* rows [r0, r1) of the flattened [B*M] output: one GEMM per batch segment */
static void blas_rows(void *v, int64_t r0, int64_t r1)
{
    const blas_job *j = v;
    while (r0 < r1) {
        int64_t b = r0 / j->M, m0 = r0 % j->M, m1 = j->M;
        if (b * j->M + m1 > r1) m1 = r1 - b * j->M;
        int64_t arow = j->ta == NO_TRANS ? m0 * j->lda : m0;   /* row m0 of op(A) */
        const char *pa = (const char *)j->a->buf + (j->a->offset + b * j->a->strides[0] + arow) * j->es;
        const char *pw = (const char *)j->w->buf + (j->w->offset + b * j->w->strides[0]) * j->es;
        char *po = (char *)j->out->buf + (j->out->offset + (b * j->M + m0) * j->N) * j->es;
        int m = (int)(m1 - m0), n = (int)j->N, k = (int)j->K;
        if (j->out->dtype == NETCL_DTYPE_FLOAT32)
            sgemm(ROW_MAJOR, j->ta, j->tw, m, n, k, 1.0f, (const float *)pa, j->lda, (const float *)pw, j->ldw, 0.0f, (float *)po, n);
        else
            dgemm(ROW_MAJOR, j->ta, j->tw, m, n, k, 1.0, (const double *)pa, j->lda, (const double *)pw, j->ldw, 0.0, (double *)po, n);
        r0 = b * j->M + m1;
    }
}

int nc_cpu_blas_matmul(const nc_desc *out, const nc_desc *a, const nc_desc *w)
{
    ensure_loaded();
    netcl_dtype dt = out->dtype;
    if (!(dt == NETCL_DTYPE_FLOAT32 && sgemm) && !(dt == NETCL_DTYPE_FLOAT64 && dgemm)) return 0;
    if (a->dtype != dt || w->dtype != dt) return 0;
    int64_t B = out->sizes[0], M = a->sizes[1], K = a->sizes[2], N = w->sizes[2];
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || K == 0) return 0;
    int ta, tw, lda, ldw;
    if (!layout(a, &ta, &lda) || !layout(w, &tw, &ldw)) return 0;
    blas_job j = {out, a, w, M, K, N, ta, tw, lda, ldw, netcl_dtype_size(dt)};
    /* parts of at least ~1M multiply-adds; each row keeps its k order, so
     * results do not depend on how the rows are split */
    int64_t per_row = K * N;
    nc_parallel_for(B * M, (1 << 20) / (per_row + 1) + 1, blas_rows, &j);
    return 1;
}

const char *netcl_cpu_blas(void) { return nc_cpu_blas_name(); }
