/* backend.c — the CPU backend: host memory (64-byte aligned), the device
 * profile and the vtable tying the families together. Its buffers are plain
 * host pointers, which the core relies on to use cpu tensors as staging for
 * other devices. */
#include "cpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static netcl_status cpu_alloc(netcl_device *dev, size_t nbytes, void **buf)
{
    if (dev->global_mem > 0 && nbytes > (size_t)dev->global_mem) return NETCL_ERR_OOM;
    size_t n = (nbytes + 63) & ~(size_t)63;
    *buf = aligned_alloc(64, n ? n : 64);
    return *buf ? NETCL_OK : NETCL_ERR_OOM;
}

static void cpu_free(netcl_device *dev, void *buf) { (void)dev; free(buf); }

static netcl_status cpu_write(netcl_device *dev, void *buf, size_t offset, const void *src, size_t nbytes,
                              const nc_keep *keep, void **event)
{
    (void)dev;
    memcpy((char *)buf + offset, src, nbytes);
    if (event) *event = NULL;   /* memcpy is synchronous: nothing to keep alive */
    if (keep) keep->release(keep->obj);
    return NETCL_OK;
}

static netcl_status cpu_read(netcl_device *dev, void *buf, size_t offset, void *dst, size_t nbytes)
{
    (void)dev;
    memcpy(dst, (const char *)buf + offset, nbytes);
    return NETCL_OK;
}

static netcl_status cpu_sync(netcl_device *dev) { (void)dev; return NETCL_OK; }

/* GEMM tuning: the cpu runs its BLAS or its own kernel, with nothing to tune */
static netcl_status cpu_tune_gemm(netcl_device *dev, const nc_gemm_problem *p, int max, char *report, int64_t len)
{
    (void)p; (void)max;
    if (report && len > 0)
        snprintf(report + strlen(report), (size_t)len - strlen(report), "%s: nothing to tune (the cpu backend uses %s)\n",
                 dev->name, nc_cpu_blas_name());
    return NETCL_OK;
}

static netcl_status cpu_gemm_config(netcl_device *dev, const nc_gemm_problem *p, char *buf, int64_t len)
{
    (void)dev; (void)p;
    snprintf(buf, (size_t)len, "cpu %s (default)", nc_cpu_blas_name());
    return NETCL_OK;
}

static const nc_backend cpu_backend = {
    .name = "cpu",
    .mem = {.alloc = cpu_alloc, .free = cpu_free, .write = cpu_write, .read = cpu_read, .synchronize = cpu_sync},
    .runtime = {.tune_gemm = cpu_tune_gemm, .gemm_config = cpu_gemm_config},
    .elementwise = {.copy = nc_cpu_copy, .fill = nc_cpu_fill, .range = nc_cpu_range, .unary = nc_cpu_unary, .unary_grad = nc_cpu_unary_grad,
                    .binary_grad = nc_cpu_binary_grad, .fused = nc_cpu_fused,
                    .binary = nc_cpu_binary, .where = nc_cpu_where},
    .reduce = {.run = nc_cpu_reduce},
    .softmax = {.forward = nc_cpu_softmax, .backward = nc_cpu_softmax_backward},
    .linalg = {.gemm = nc_cpu_gemm},
    .conv = {.im2col = nc_cpu_im2col, .col2im = nc_cpu_col2im, .kernel = nc_cpu_conv, .implicit_gemm = nc_cpu_conv_gemm,
             .tiled = nc_cpu_conv_tiled, .tiled_weight = nc_cpu_conv_tiled_weight},
    .pool = {.forward = nc_cpu_pool, .backward = nc_cpu_pool_backward},
    .norm = {.batch_norm = nc_cpu_batch_norm},
    .loss = {.class_loss = nc_cpu_class_loss, .class_loss_backward = nc_cpu_class_loss_backward},
    .index = {.gather = nc_cpu_gather, .scatter = nc_cpu_scatter, .sort = nc_cpu_sort, .scan = nc_cpu_scan},
    .random = {.draw = nc_cpu_rng},
    .optim = {.step = nc_cpu_optim_step, .unscale = nc_cpu_amp_unscale},
    .augment = {.run = nc_cpu_augment},
};

/* Copies the value of the first "key : value" line of /proc/cpuinfo. */
static void cpuinfo_field(const char *key, char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, key, klen) == 0 && colon && colon[1]) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = 0;
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    fclose(f);
}

int nc_cpu_discover(netcl_device *d, int max)
{
    if (max < 1) return 0;
    d->type = NETCL_DEVICE_CPU;
    d->backend = &cpu_backend;
    nc_cpu_blas_init();
    snprintf(d->hw_name, sizeof d->hw_name, "CPU");
    cpuinfo_field("model name", d->hw_name, sizeof d->hw_name);
    snprintf(d->vendor, sizeof d->vendor, "unknown");
    cpuinfo_field("vendor_id", d->vendor, sizeof d->vendor);
    snprintf(d->driver, sizeof d->driver, "netcl-cpu %s", NC_VERSION);
    snprintf(d->platform, sizeof d->platform, "netcl");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    d->compute_units = ncpu > 0 ? (int)ncpu : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    d->global_mem = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    d->local_mem = l2 > 0 ? l2 : 0;
    d->max_work_group = 1;
    d->has_fp16 = d->has_fp64 = 1;
    d->compute_capability = 0;
    return 1;
}
