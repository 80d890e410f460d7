/* blas.c — an optional CPU BLAS for the cpu backend's matmul: OpenBLAS is
 * dlopen'ed at first use (like the OpenCL loader, so the library builds and
 * runs without it) and its cblas_sgemm/dgemm take float32/float64 products
 * whose operands are row- or column-major per batch. NETCL_BLAS=0 turns it
 * off (the built-in blocked kernel then runs). OpenBLAS splits M and N
 * among its threads, never K, so a result does not depend on the thread
 * count. */
#include "cpu.h"
#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);

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
        if (sgemm && dgemm) { snprintf(blas_name, sizeof blas_name, "%s", names[i]); return; }
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
    int es = netcl_dtype_size(dt);
    for (int64_t b = 0; b < B; b++) {
        const char *pa = (const char *)a->buf + (a->offset + b * a->strides[0]) * es;
        const char *pw = (const char *)w->buf + (w->offset + b * w->strides[0]) * es;
        char *po = (char *)out->buf + (out->offset + b * M * N) * es;
        if (dt == NETCL_DTYPE_FLOAT32)
            sgemm(ROW_MAJOR, ta, tw, (int)M, (int)N, (int)K, 1.0f, (const float *)pa, lda, (const float *)pw, ldw, 0.0f,
                  (float *)po, (int)N);
        else
            dgemm(ROW_MAJOR, ta, tw, (int)M, (int)N, (int)K, 1.0, (const double *)pa, lda, (const double *)pw, ldw, 0.0,
                  (double *)po, (int)N);
    }
    return 1;
}

const char *netcl_cpu_blas(void) { return nc_cpu_blas_name(); }
