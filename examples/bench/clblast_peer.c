/* clblast_peer.c — CLBlast's SGEMM on an OpenCL device, the "other OpenCL
 * BLAS" row of examples/bench/gemm.lua: prints "clblast N GFLOP/s" per size.
 * Built on demand by the benchmark when libclblast-dev is installed:
 *   cc -O2 -o build/clblast_peer examples/bench/clblast_peer.c -lclblast -lOpenCL
 * usage: clblast_peer DEVICE_INDEX N [N...]   (index over all OpenCL devices, as netcl's opencl:N) */
#define CL_TARGET_OPENCL_VERSION 120
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The index-th device over all platforms, netcl's numbering. */
static cl_device_id nth_device(int index)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    clGetPlatformIDs(16, plats, &np);
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id ids[32];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 32, ids, &nd) != CL_SUCCESS) continue;
        if (index < (int)nd) return ids[index];
        index -= (int)nd;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: %s DEVICE_INDEX N [N...]\n", argv[0]); return 2; }
    cl_device_id dev = nth_device(atoi(argv[1]));
    if (!dev) { fprintf(stderr, "no OpenCL device %s\n", argv[1]); return 1; }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    for (int i = 2; i < argc; i++) {
        size_t n = (size_t)atol(argv[i]);
        float *h = malloc(sizeof(float) * n * n);
        for (size_t j = 0; j < n * n; j++) h[j] = (float)((j * 2654435761u) % 1000) / 1000.0f - 0.5f;
        cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float) * n * n, h, &err);
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float) * n * n, h, &err);
        cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float) * n * n, NULL, &err);
        double best = 1e30;
        for (int r = 0; r < 4; r++) { /* the first run compiles CLBlast's kernels */
            double t0 = now();
            CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f,
                                                a, 0, n, b, 0, n, 0.0f, c, 0, n, &q, NULL);
            clFinish(q);
            if (st != CLBlastSuccess) { fprintf(stderr, "CLBlastSgemm failed: %d\n", (int)st); return 1; }
            if (r > 0 && now() - t0 < best) best = now() - t0;
        }
        printf("clblast %zu %.2f\n", n, 2.0 * (double)n * (double)n * (double)n / best / 1e9);
        fflush(stdout);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
        clReleaseMemObject(c);
        free(h);
    }
    return 0;
}
