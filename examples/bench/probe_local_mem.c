/* probe_local_mem.c — how much local memory a work-group really gets from
 * an OpenCL GPU: a __local kernel argument of 32 KiB to 195 KiB, launched
 * and checked (NVIDIA: CL_DEVICE_LOCAL_MEM_SIZE 49152, and an argument of
 * 49,152 bytes already fails with CL_OUT_OF_RESOURCES; docs/gemm.md).
 *   cc -O2 examples/bench/probe_local_mem.c -lOpenCL -o /tmp/lmem && /tmp/lmem */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
static const char *src =
    "__kernel void k(__global float *o, __local float *l, int n) {\n"
    "  for (int i = get_local_id(0); i < n; i += get_local_size(0)) l[i] = i;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (get_local_id(0) == 0) o[get_group_id(0)] = l[n - 1];\n}\n";
int main(void)
{
    cl_platform_id p[4]; cl_uint np; clGetPlatformIDs(4, p, &np);
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id d; char name[256];
        if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL) != CL_SUCCESS) continue;
        clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
        cl_ulong lm; clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
        printf("%s: CL_DEVICE_LOCAL_MEM_SIZE %llu\n", name, (unsigned long long)lm);
        cl_int e; cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
        cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
        e = clBuildProgram(pr, 1, &d, "", NULL, NULL);
        cl_kernel k = clCreateKernel(pr, "k", &e);
        cl_mem o = clCreateBuffer(c, CL_MEM_READ_WRITE, 4096, NULL, &e);
        size_t sizes[] = {32768, 49152, 65536, 98304, 163840, 200000};
        for (int s = 0; s < 6; s++) {
            int n = (int)(sizes[s] / 4);
            clSetKernelArg(k, 0, sizeof o, &o);
            cl_int ea = clSetKernelArg(k, 1, sizes[s], NULL);
            clSetKernelArg(k, 2, sizeof n, &n);
            size_t g = 256 * 4, l = 256;
            cl_int er = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
            cl_int ef = clFinish(q);
            float r = -1; clEnqueueReadBuffer(q, o, CL_TRUE, 0, 4, &r, 0, NULL, NULL);
            printf("  local %zu bytes: setarg %d enqueue %d finish %d result %g (want %d)\n", sizes[s], ea, er, ef, r, n - 1);
        }
    }
    return 0;
}
