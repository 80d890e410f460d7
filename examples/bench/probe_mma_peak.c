/* probe_mma_peak.c — the ceiling of mma.sync through NVIDIA's OpenCL (the
 * instruction netcl's tensor-core GEMM is built on): register-only loops
 * of independent mma.sync per warp, no memory traffic, bfloat16, float16
 * and tf32, a few accumulator counts and work-group sizes. No netcl code:
 *   cc -O2 examples/bench/probe_mma_peak.c -lOpenCL -o /tmp/mma_peak && /tmp/mma_peak
 * With arguments NACC WARPS BLOCKS_PER_CU it runs that one shape (e.g. the
 * GEMM kernel's: 32 accumulators, 4 warps, 2 blocks per multiprocessor);
 * a fourth argument "tile" (with NACC 32) feeds each mma distinct
 * fragments as a 64x64 warp tile does (4 A and 8 B fragments, each A used
 * 8 times, each B 4 times) instead of the same registers every time.
 * (an NVIDIA GPU of compute capability 8.0 or newer; docs/gemm.md). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static const char *src =
    "#if KIND == 0\n#define OP \"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32\"\n"
    "#elif KIND == 1\n#define OP \"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\"\n"
    "#else\n#define OP \"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32\"\n#endif\n"
    "#define MMA16(op) asm volatile(op \" {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\" : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))\n"
    "#define MMAF(op, A, B) asm volatile(op \" {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\" : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"((A)[0]), \"r\"((A)[1]), \"r\"((A)[2]), \"r\"((A)[3]), \"r\"((B)[0]), \"r\"((B)[1]))\n"
    "__kernel void k(__global float *o, int iters) {\n"
    "  uint a0 = get_global_id(0), a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, b0 = a0 * 3, b1 = a0 * 5;\n"
    "  float d[NACC][4];\n"
    "  for (int j = 0; j < NACC; j++) d[j][0] = d[j][1] = d[j][2] = d[j][3] = 0;\n"
    "#ifdef WARP_TILE\n"
    "  uint af[4][4], bf[8][2];\n"
    "  for (int q = 0; q < 4; q++) { af[q][0] = a0 + q; af[q][1] = a1 * q; af[q][2] = a2 ^ q; af[q][3] = a3 + 7 * q; }\n"
    "  for (int q = 0; q < 8; q++) { bf[q][0] = b0 + q; bf[q][1] = b1 ^ q; }\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < 32; j++) MMAF(OP, af[j / 8], bf[j % 8]);\n"
    "  }\n"
    "#else\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < NACC; j++) MMA16(OP);\n"
    "  }\n"
    "#endif\n"
    "  float s = 0; for (int j = 0; j < NACC; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
    "  o[get_global_id(0)] = s;\n}\n";
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int nacc_is_32(const char *s) { return atoi(s) == 32; }
int main(int argc, char **argv)
{
    int tile = argc == 5 && nacc_is_32(argv[1]);
    int only = argc >= 4, o_nacc = only ? atoi(argv[1]) : 0, o_wpb = only ? atoi(argv[2]) : 0, o_bpc = only ? atoi(argv[3]) : 16;
    cl_platform_id p[4]; cl_uint np; clGetPlatformIDs(4, p, &np);
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id d;
        if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL) != CL_SUCCESS) continue;
        cl_uint cus = 1; clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
        cl_int e; cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
        const char *ops[] = {"\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32\"", "\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\"",
                             "\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32\""};
        double flops_per[] = {4096, 4096, 2048};
        for (int op = 0; op < 3; op++)
            for (int nacc = only ? o_nacc : 4; nacc <= (only ? o_nacc : 16); nacc *= 2)
                for (int wpb = only ? o_wpb : 4; wpb <= (only ? o_wpb : 8); wpb *= 2) {
                    char opts[300];
                    snprintf(opts, sizeof opts, "-DKIND=%d -DNACC=%d%s", op, nacc, tile ? " -DWARP_TILE" : "");
                    cl_program pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
                    if (clBuildProgram(pr, 1, &d, opts, NULL, NULL) != CL_SUCCESS) {
                        char log[4096] = ""; clGetProgramBuildInfo(pr, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
                        printf("build failed %s\n%s\n", opts, log); return 1; }
                    cl_kernel k = clCreateKernel(pr, "k", &e);
                    size_t l = 32 * wpb, g = l * cus * o_bpc;
                    cl_mem o = clCreateBuffer(c, CL_MEM_READ_WRITE, g * 4, NULL, &e);
                    int iters = 4096;
                    clSetKernelArg(k, 0, sizeof o, &o); clSetKernelArg(k, 1, sizeof iters, &iters);
                    clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL); clFinish(q);
                    double t0 = now();
                    for (int r = 0; r < 5; r++) clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
                    clFinish(q);
                    double t = (now() - t0) / 5, fl = (double)(g / 32) * iters * nacc * flops_per[op];
                    printf("%-55s acc %2d%s warps/block %d blocks/cu %d: %7.1f TFLOP/s\n", ops[op], nacc, tile ? " (warp tile)" : "", wpb, o_bpc, fl / t / 1e12);
                    clReleaseMemObject(o); clReleaseKernel(k); clReleaseProgram(pr);
                }
    }
    return 0;
}
