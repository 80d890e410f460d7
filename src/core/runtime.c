/* runtime.c — process-wide runtime figures and reports, gathered from the
 * backends of the registered devices through their runtime entries:
 * program and launch counters, the kernel profile, the cpu's BLAS and a
 * device's tensor cores. */
#include "core/core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the sum of one counter over every backend in use */
static int64_t counter_total(nc_counter which)
{
    const nc_backend *seen[8];
    int nseen = 0;
    int64_t total = 0;
    for (int i = 0; i < netcl_device_count(); i++) {
        const nc_backend *be = netcl_device_at(i)->backend;
        int dup = 0;
        for (int k = 0; k < nseen; k++) dup |= seen[k] == be;
        if (dup || nseen == 8) continue;
        seen[nseen++] = be;
        if (be->runtime.counter) total += be->runtime.counter(which);
    }
    return total;
}

int64_t netcl_runtime_programs_compiled(void) { return counter_total(NC_COUNT_PROGRAMS_COMPILED); }
int64_t netcl_runtime_programs_loaded(void) { return counter_total(NC_COUNT_PROGRAMS_LOADED); }
int64_t netcl_runtime_kernels_launched(void) { return counter_total(NC_COUNT_KERNELS_LAUNCHED); }
int64_t netcl_runtime_enqueue_ns(void) { return counter_total(NC_COUNT_ENQUEUE_NS); }

/* NETCL_PROFILE turns kernel profiling on (read by the backends before
 * their first launch); the rows come from the backend that profiles its
 * kernels (OpenCL). */
int netcl_profile_report(char *buf, int len, int reset)
{
    if (!buf || len <= 0) return 0;
    buf[0] = 0;
    const char *e = getenv("NETCL_PROFILE");
    if (!e || !*e || strcmp(e, "0") == 0)
        return snprintf(buf, (size_t)len, "kernel profiling is off (set NETCL_PROFILE=1 before the first device call)\n");
    int n = 0;
    for (int i = 0; i < netcl_device_count() && n == 0; i++) {
        const nc_backend *be = netcl_device_at(i)->backend;
        if (be->runtime.profile_report) n = be->runtime.profile_report(buf, len, reset);
    }
    return n > 0 ? n : snprintf(buf, (size_t)len, "no OpenCL kernel launched yet\n");
}

const char *netcl_cpu_blas(void) { return nc_cpu_blas_name(); }

const char *netcl_device_tensor_cores(netcl_device *dev)
{
    if (!dev || !dev->backend->runtime.tensor_cores) return "none (not an OpenCL device)";
    return dev->backend->runtime.tensor_cores(dev);
}
