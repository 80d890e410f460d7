/* probe_host_copy.c — what moving a gradient bucket through the host costs
 * on this machine, the numbers a host-staged all-reduce between GPUs is
 * built on (docs/distributed.md):
 *   memcpy with 1..16 threads, 64 MB (host memory bandwidth per rank);
 *   process_vm_readv of 64 MB (the shm backend's single-copy path);
 *   device->host and host->device copies of 64 MB on OpenCL GPU 0 into
 *   pageable memory (malloc), a shared mapping (/dev/shm, what peers see)
 *   and pinned memory (CL_MEM_ALLOC_HOST_PTR, mapped); then the shared
 *   mapping again once a CL_MEM_USE_HOST_PTR buffer wraps it (a driver
 *   may pin it then), and clEnqueueCopyBuffer to and from that buffer.
 * Each figure is the best of 5, GB/s.
 *   cc -O2 examples/bench/probe_host_copy.c -lOpenCL -lpthread -o /tmp/ph && /tmp/ph */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MB (64u << 20)
#define CK(e)                                                                          \
    do {                                                                               \
        cl_int err_ = (e);                                                             \
        if (err_ != CL_SUCCESS) { fprintf(stderr, "%s: %d\n", #e, err_); exit(1); }    \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct { char *dst; const char *src; size_t n; } part;
static void *copy_part(void *a) { part *p = a; memcpy(p->dst, p->src, p->n); return NULL; }

static double memcpy_gbps(char *dst, const char *src, int threads)
{
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        pthread_t th[16];
        part p[16];
        double t0 = now();
        for (int i = 0; i < threads; i++) {
            p[i] = (part){ dst + (size_t)MB / threads * i, src + (size_t)MB / threads * i, MB / threads };
            pthread_create(&th[i], NULL, copy_part, &p[i]);
        }
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return MB / best / 1e9;
}

typedef enum { READ, WRITE } dir;
static double cl_gbps(cl_command_queue q, cl_mem buf, void *host, dir d)
{
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        if (d == READ) CK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, MB, host, 0, NULL, NULL));
        else CK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, MB, host, 0, NULL, NULL));
        double t = now() - t0;
        if (t < best) best = t;
    }
    return MB / best / 1e9;
}

int main(void)
{
    char *a = malloc(MB), *b = malloc(MB);
    memset(a, 1, MB);
    memset(b, 2, MB);
    printf("memcpy 64 MB, GB/s:");
    for (int t = 1; t <= 16; t *= 2) printf("  %d thr %.1f", t, memcpy_gbps(b, a, t));
    printf("\n");

    struct iovec local = { b, MB }, remote = { a, MB };
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        double t = now() - t0;
        if (got != (ssize_t)MB) { printf("process_vm_readv: refused\n"); best = 0; break; }
        if (t < best) best = t;
    }
    if (best > 0) printf("process_vm_readv 64 MB: %.1f GB/s\n", MB / best / 1e9);

    char name[64];
    snprintf(name, sizeof name, "/probe-host-copy-%d", (int)getpid());
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, MB) != 0) { perror("shm"); return 1; }
    char *shm = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    shm_unlink(name);
    memset(shm, 3, MB);
    printf("memcpy into the shared mapping: %.1f GB/s (1 thr)\n", memcpy_gbps(shm, a, 1));

    cl_platform_id plats[8];
    cl_uint np = 0;
    CK(clGetPlatformIDs(8, plats, &np));
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
    if (!dev) { printf("no OpenCL GPU\n"); return 0; }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CK(err);
    cl_mem d = clCreateBuffer(ctx, CL_MEM_READ_WRITE, MB, NULL, &err);
    CK(err);
    cl_mem pin = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, MB, NULL, &err);
    CK(err);
    void *pinned = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, MB, 0, NULL, NULL, &err);
    CK(err);
    memset(pinned, 4, MB);
    CK(clEnqueueWriteBuffer(q, d, CL_TRUE, 0, MB, a, 0, NULL, NULL));
    struct { const char *name; void *p; } hosts[] = { { "pageable", b }, { "shared mapping", shm }, { "pinned", pinned } };
    for (int i = 0; i < 3; i++)
        printf("%-15s device->host %.1f GB/s, host->device %.1f GB/s\n", hosts[i].name, cl_gbps(q, d, hosts[i].p, READ),
               cl_gbps(q, d, hosts[i].p, WRITE));
    cl_mem wrap = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, MB, shm, &err);
    CK(err);
    printf("%-15s device->host %.1f GB/s, host->device %.1f GB/s\n", "wrapped shared", cl_gbps(q, d, shm, READ),
           cl_gbps(q, d, shm, WRITE));
    for (int way = 0; way < 2; way++) {
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            CK(way == 0 ? clEnqueueCopyBuffer(q, d, wrap, 0, 0, MB, 0, NULL, NULL) : clEnqueueCopyBuffer(q, wrap, d, 0, 0, MB, 0, NULL, NULL));
            void *m = clEnqueueMapBuffer(q, wrap, CL_TRUE, CL_MAP_READ, 0, MB, 0, NULL, NULL, &err);
            CK(err);
            CK(clEnqueueUnmapMemObject(q, wrap, m, 0, NULL, NULL));
            CK(clFinish(q));
            double t = now() - t0;
            if (t < best) best = t;
        }
        printf("copy buffer %s wrapped shared + map: %.1f GB/s\n", way == 0 ? "device->" : "->device", MB / best / 1e9);
    }
    return 0;
}
