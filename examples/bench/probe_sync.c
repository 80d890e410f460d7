/* probe_sync.c — what a host round trip costs on an OpenCL GPU, by the way
 * the host waits. A step that ends in loss:item() waits for the queue
 * and reads 4 bytes back. CUDA spins for a while before it sleeps; OpenCL
 * leaves the choice to the driver. This times, per round trip after a
 * kernel of about 0 / 50 / 500 µs:
 *   finish:      clFinish
 *   wait:        clWaitForEvents on the kernel's event
 *   spin:        clFlush, then poll the kernel's event status
 *   read:        a blocking 4-byte clEnqueueReadBuffer (what .item() does)
 *   read+spin:   a non-blocking read, clFlush, poll the read's event
 * and reports the median and the 90th percentile over 400 round trips,
 * minus nothing (the kernel's own time is in every row alike).
 *   cc -O2 examples/bench/probe_sync.c -lOpenCL -o /tmp/ps && /tmp/ps */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *src = "__kernel void burn(__global float *x, int n) {\n"
                         "  float v = x[get_global_id(0)];\n"
                         "  for (int i = 0; i < n; i++) v = v * 0.999f + 0.5f;\n"
                         "  x[get_global_id(0)] = v;\n"
                         "}\n";

#define CK(e)                                                                  \
    do {                                                                       \
        cl_int err_ = (e);                                                     \
        if (err_ != CL_SUCCESS) {                                              \
            fprintf(stderr, "probe_sync: %s failed: %d\n", #e, (int)err_);     \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static void spin(cl_event ev)
{
    cl_int st;
    do CK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    while (st > CL_COMPLETE);
    if (st < 0) { fprintf(stderr, "probe_sync: command failed: %d\n", (int)st); exit(1); }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    CK(clGetPlatformIDs(8, plats, &np));
    if (np > 8) np = 8;   /* the count is of all platforms, not of those returned */
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++) /* else whatever there is (PoCL) */
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
    if (!dev) { fprintf(stderr, "probe_sync: no OpenCL device\n"); return 1; }
    char name[256];
    CK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "burn", &err);
    CK(err);
    size_t global = 132 * 256, local = 256;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * sizeof(float), NULL, &err);
    CK(err);
    float zero[1] = {0};
    CK(clEnqueueFillBuffer(q, buf, zero, sizeof zero, 0, global * sizeof(float), 0, NULL, NULL));
    CK(clFinish(q));
    CK(clSetKernelArg(k, 0, sizeof buf, &buf));

    /* iterations of the burn loop for about 0, 50 and 500 µs: calibrated */
    int iters[3] = {0, 0, 0};
    double target[3] = {0, 50, 500};
    for (int t = 1; t < 3; t++) {
        int n = 1024;
        for (int round = 0; round < 12; round++) {
            CK(clSetKernelArg(k, 1, sizeof n, &n));
            double t0 = now_us();
            for (int r = 0; r < 5; r++) CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
            CK(clFinish(q));
            double each = (now_us() - t0) / 5;
            n = (int)(n * target[t] / (each > 1 ? each : 1));
            if (n < 1) n = 1;
        }
        iters[t] = n;
    }
    const char *how[5] = {"finish", "wait", "spin", "read", "read+spin"};
    printf("probe_sync on %s: µs per round trip (median / 90th percentile) after a kernel of about\n", name);
    printf("%-10s %20s %20s %20s\n", "", "0 us", "50 us", "500 us");
    enum { REPS = 400 };
    static double t_[REPS];
    for (int h = 0; h < 5; h++) {
        printf("%-10s", how[h]);
        for (int t = 0; t < 3; t++) {
            CK(clSetKernelArg(k, 1, sizeof iters[t], &iters[t]));
            for (int r = 0; r < REPS; r++) {
                float out;
                cl_event ev = NULL;
                double t0 = now_us();
                CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, h == 1 || h == 2 ? &ev : NULL));
                switch (h) {
                case 0: CK(clFinish(q)); break;
                case 1: CK(clWaitForEvents(1, &ev)); break;
                case 2: CK(clFlush(q)); spin(ev); break;
                case 3: CK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, &out, 0, NULL, NULL)); break;
                default:
                    CK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, sizeof out, &out, 0, NULL, &ev));
                    CK(clFlush(q));
                    spin(ev);
                }
                t_[r] = now_us() - t0;
                if (ev) clReleaseEvent(ev);
            }
            qsort(t_, REPS, sizeof t_[0], cmp);
            printf("   %7.1f / %7.1f", t_[REPS / 2], t_[REPS * 9 / 10]);
        }
        printf("\n");
    }
    return 0;
}
