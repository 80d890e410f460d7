/* profile.c — device time per OpenCL kernel, for finding where a step's
 * time goes (NVIDIA's profilers do not see OpenCL kernels). With
 * NETCL_PROFILE=1 in the environment before the first device call, each
 * device's queue is created with profiling on and every launch keeps its
 * event; netcl_profile_report waits for them, adds each kernel's start-to-
 * end time to its row (kernel name, global and local size) and prints the
 * rows by total time. Events are resolved in batches, so memory stays
 * bounded in long runs; that wait serialises the host with the device
 * once per batch, a cost only profiling runs pay. */
#include "cl.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PENDING_MAX = 4096 };

typedef struct prof_row {
    char key[96];
    int64_t calls, total_ns, max_ns;
} prof_row;

typedef struct nc_cl_profile {
    nc_cl_device *cd;
    struct { cl_event ev; char key[96]; } pending[PENDING_MAX];
    int npending;
    prof_row *rows;
    int nrows, cap;
    struct nc_cl_profile *next;
} nc_cl_profile;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nc_cl_profile *profiles;   /* one per device that launched something */

int nc_cl_profiling(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("NETCL_PROFILE");
        on = e && *e && strcmp(e, "0") != 0;
    }
    return on;
}

static prof_row *row_of(nc_cl_profile *p, const char *key)
{
    for (int i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].key, key) == 0) return &p->rows[i];
    if (p->nrows == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        prof_row *r = realloc(p->rows, sizeof *r * (size_t)cap);
        if (!r) return NULL;
        p->rows = r, p->cap = cap;
    }
    prof_row *r = &p->rows[p->nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "%s", key);
    return r;
}

/* waits for the pending launches and adds their times (lock held) */
static void resolve(nc_cl_profile *p)
{
    for (int i = 0; i < p->npending; i++) {
        cl_event ev = p->pending[i].ev;
        cl_ulong t0 = 0, t1 = 0;
        if (nc_cl.clWaitForEvents(1, &ev) == CL_SUCCESS &&
            nc_cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
            nc_cl.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS) {
            prof_row *r = row_of(p, p->pending[i].key);
            int64_t ns = t1 > t0 ? (int64_t)(t1 - t0) : 0;
            if (r) {
                if (ns > r->max_ns) r->max_ns = ns;
                r->calls++, r->total_ns += ns;
            }
        }
        nc_cl.clReleaseEvent(ev);
    }
    p->npending = 0;
}

void nc_cl_profile_record(nc_cl_device *cd, cl_kernel k, int dims, const size_t *global, const size_t *local, cl_event ev)
{
    char name[48] = "?";
    nc_cl.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
    name[sizeof name - 1] = 0;
    pthread_mutex_lock(&lock);
    nc_cl_profile *p = cd->profile;
    if (!p && (p = calloc(1, sizeof *p))) {
        p->cd = cd, p->next = profiles, profiles = p;
        cd->profile = p;
    }
    if (!p) { pthread_mutex_unlock(&lock); nc_cl.clReleaseEvent(ev); return; }
    if (p->npending == PENDING_MAX) resolve(p);
    char *key = p->pending[p->npending].key;
    const size_t klen = sizeof p->pending[0].key;
    size_t n = (size_t)snprintf(key, klen, "%s %zu", name, global[0]);
    for (int d = 1; d < dims && n < klen; d++) n += (size_t)snprintf(key + n, klen - n, "x%zu", global[d]);
    if (n < klen) snprintf(key + n, klen - n, " / %zu", local ? local[0] : (size_t)0);
    p->pending[p->npending++].ev = ev;
    pthread_mutex_unlock(&lock);
}

static int by_total(const void *a, const void *b)
{
    int64_t x = ((const prof_row *)a)->total_ns, y = ((const prof_row *)b)->total_ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

int nc_cl_profile_report(char *buf, int len, int reset)
{
    if (!buf || len <= 0 || !nc_cl_profiling()) return 0;
    buf[0] = 0;
    int n = 0;
#define PUT(...) (n += snprintf(buf + (n < len ? n : len - 1), (size_t)(n < len ? len - n : 1), __VA_ARGS__))
    pthread_mutex_lock(&lock);
    for (nc_cl_profile *p = profiles; p; p = p->next) {
        resolve(p);
        qsort(p->rows, (size_t)p->nrows, sizeof *p->rows, by_total);
        int64_t all = 0;
        for (int i = 0; i < p->nrows; i++) all += p->rows[i].total_ns;
        PUT("kernel time on %s: %.3f ms in %d kernel shapes\n", p->cd->dev->name, (double)all * 1e-6, p->nrows);
        PUT("%10s %6s %9s %9s %9s  %s\n", "total ms", "share", "calls", "mean us", "max us", "kernel global / local");
        for (int i = 0; i < p->nrows; i++) {
            const prof_row *r = &p->rows[i];
            PUT("%10.3f %5.1f%% %9lld %9.1f %9.1f  %s\n", (double)r->total_ns * 1e-6,
                all ? 100.0 * (double)r->total_ns / (double)all : 0.0, (long long)r->calls,
                (double)r->total_ns * 1e-3 / (double)r->calls, (double)r->max_ns * 1e-3, r->key);
        }
    }
    /* cleared only when the caller got the whole table */
    if (reset && n < len)
        for (nc_cl_profile *p = profiles; p; p = p->next) p->nrows = 0;
    pthread_mutex_unlock(&lock);
#undef PUT
    return n;
}

void nc_cl_profile_release(nc_cl_device *cd)
{
    pthread_mutex_lock(&lock);
    nc_cl_profile **pp = &profiles;
    while (*pp && (*pp)->cd != cd) pp = &(*pp)->next;
    if (*pp) {
        nc_cl_profile *p = *pp;
        *pp = p->next;
        for (int i = 0; i < p->npending; i++) nc_cl.clReleaseEvent(p->pending[i].ev);
        free(p->rows);
        free(p);
    }
    cd->profile = NULL;
    pthread_mutex_unlock(&lock);
}
