/* probe_l2_bandwidth.c — read bandwidth of an OpenCL GPU from buffers that
 * fit its L2 (8 and 32 MiB, read 16 times) and from ones that do not (128,
 * 512 MiB): what feeds a GEMM's tiles (docs/gemm.md). 16-byte loads spread
 * over 8 work-groups of 256 per compute unit.
 *   cc -O2 examples/bench/probe_l2_bandwidth.c -lOpenCL -o /tmp/l2bw && /tmp/l2bw */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <time.h>
static const char *src =
    "__kernel void k(__global const float4 *x, __global float *o, int n4, int reps) {\n"
    "  float4 s = 0; int g = get_group_id(0), ng = get_num_groups(0);\n"
    "  for (int r = 0; r < reps; r++)\n"
    "    for (int i = get_global_id(0) + r * 4096; i < n4 + r * 4096; i += get_global_size(0)) s += x[i % n4];\n"
    "  o[get_global_id(0)] = s.x + s.y + s.z + s.w;\n}\n";
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(void)
{
    cl_platform_id p[4]; cl_uint np; clGetPlatformIDs(4, p, &np);
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id d;
        if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL) != CL_SUCCESS) continue;
        cl_uint cus = 1; clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
        cl_int e; cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
        cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
        clBuildProgram(pr, 1, &d, "", NULL, NULL);
        cl_kernel k = clCreateKernel(pr, "k", &e);
        for (int mb = 8; mb <= 512; mb *= 4) {
            int n4 = mb * 1024 * 1024 / 16, reps = mb <= 32 ? 16 : 2;
            cl_mem x = clCreateBuffer(c, CL_MEM_READ_WRITE, (size_t)n4 * 16, NULL, &e);
            float zero = 0; clEnqueueFillBuffer(q, x, &zero, 4, 0, (size_t)n4 * 16, 0, NULL, NULL);
            size_t l = 256, g = l * cus * 8;
            cl_mem o = clCreateBuffer(c, CL_MEM_READ_WRITE, g * 4, NULL, &e);
            clSetKernelArg(k, 0, sizeof x, &x); clSetKernelArg(k, 1, sizeof o, &o); clSetKernelArg(k, 2, sizeof n4, &n4);
            clSetKernelArg(k, 3, sizeof reps, &reps);
            clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL); clFinish(q);
            double t0 = now();
            for (int r = 0; r < 3; r++) clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
            clFinish(q);
            double t = (now() - t0) / 3;
            printf("buffer %4d MiB read %d times: %.0f GB/s\n", mb, reps, (double)n4 * 16 * reps / t / 1e9);
            clReleaseMemObject(x); clReleaseMemObject(o);
        }
    }
    return 0;
}
