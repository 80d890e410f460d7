/* probe_cluster.c — can OpenCL kernels on NVIDIA run as thread-block
 * clusters (sm_90)? OpenCL has no launch attribute for them, but a PTX
 * entry may carry its cluster shape itself (.reqnctapercluster), and
 * NVIDIA's OpenCL takes PTX back as a program binary. The probe builds two
 * kernels from OpenCL C with inline PTX, reads the driver's PTX, adds the
 * directive, reloads it and checks:
 *   rank:      %cluster_ctarank / %cluster_nctarank, and a read of the peer
 *              block's local memory (mapa + ld.shared::cluster)
 *   multicast: each block of a pair copies half of a 256-byte row with one
 *              cp.async.bulk ... .multicast::cluster into both blocks' local
 *              memory, completion counted on an mbarrier
 * Each directive variant runs in a fresh context, unpatched first
 * (clusters of one: what OpenCL gives). H200, driver 580 (2026-11-26): bulk
 * copies work; .reqnctapercluster builds but launches clusters of one;
 * .explicitcluster faults (docs/gemm.md, "Clusters and bulk copies").
 *   cc -O2 examples/bench/probe_cluster.c -lOpenCL -o /tmp/clu && /tmp/clu */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
    "#define CBAR() asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\" \\\n"
    "                            \"barrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\")\n"
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void rank(__global uint *o) {\n"
    "  __local uint buf[64];\n"
    "  uint lid = get_local_id(0), r, n, v, ra;\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(n));\n"
    "  buf[lid] = (uint)get_group_id(0) * 1000 + lid;\n"
    "  CBAR();\n"
    "  uint la = (uint)(ulong)&buf[lid];\n"
    "  asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(ra) : \"r\"(la), \"r\"((r + 1) % n));\n"
    "  asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(v) : \"r\"(ra) : \"memory\");\n"
    "  CBAR();\n"
    "  size_t g = get_group_id(0);\n"
    "  if (lid == 0) { o[g * 4] = r; o[g * 4 + 1] = n; }\n"
    "  if (lid == 1) o[g * 4 + 3] = v;\n"
    "}\n"
    "__kernel __attribute__((reqd_work_group_size(32, 1, 1)))\n"
    "void multicast(__global const uint *s, __global uint *o, uint pair) {\n"
    "  __local uint buf[64] __attribute__((aligned(128)));\n"
    "  __local ulong mbar __attribute__((aligned(8)));\n"
    "  uint lid = get_local_id(0), r, n, done = 0;\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(n));\n"
    "  uint bar = (uint)(ulong)&mbar, dst = (uint)(ulong)buf;\n"
    "  if (lid == 0) {\n"
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"(bar) : \"memory\");\n"
    "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "  }\n"
    "  CBAR();\n"
    "  if (lid == 0) {\n"
    "    uint bytes = pair && n > 1 ? 256 : 128;\n"
    "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n"
    "    __global const uint *from = s + (get_group_id(0) / n) * 64 + r * 32;\n"
    "    if (pair && n > 1)\n"
    "      asm volatile(\"{ .reg .b16 m; mov.b16 m, 3;\\n\"\n"
    "                   \"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster\"\n"
    "                   \" [%0], [%1], 128, [%2], m; }\" :: \"r\"(dst + r * 128), \"l\"((ulong)from), \"r\"(bar) : \"memory\");\n"
    "    else\n"
    "      asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
    "                   \" [%0], [%1], 128, [%2];\" :: \"r\"(dst + r * 128), \"l\"((ulong)from), \"r\"(bar) : \"memory\");\n"
    "  }\n"
    "  while (!done)\n"
    "    asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }\"\n"
    "                 : \"=r\"(done) : \"r\"(bar) : \"memory\");\n"
    "  size_t g = get_group_id(0);\n"
    "  o[g * 64 + lid] = buf[lid];\n"
    "  o[g * 64 + 32 + lid] = buf[32 + lid];\n"
    "  CBAR();\n"
    "}\n";

/* the PTX with `directive` added after each entry's .reqntid line */
static char *patch(const char *ptx, const char *directive)
{
    size_t n = strlen(ptx), dn = strlen(directive);
    char *out = malloc(n + 8 * (dn + 2) + 1), *w = out;
    const char *p = ptx;
    for (;;) {
        const char *q = strstr(p, ".reqntid");
        if (!q) break;
        const char *e = strchr(q, '\n');
        if (!e) break;
        memcpy(w, p, (size_t)(e + 1 - p)), w += e + 1 - p;
        memcpy(w, directive, dn), w += dn;
        *w++ = '\n';
        p = e + 1;
    }
    strcpy(w, p);
    return out;
}

static cl_program from_ptx(cl_context c, cl_device_id d, const char *ptx)
{
    size_t len = strlen(ptx) + 1;
    cl_int st, e;
    cl_program p = clCreateProgramWithBinary(c, 1, &d, &len, (const unsigned char **)&ptx, &st, &e);
    if (e != CL_SUCCESS) { printf("  clCreateProgramWithBinary: %d\n", e); return NULL; }
    e = clBuildProgram(p, 1, &d, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        char *adv = strstr(log, "Advisory");
        if (adv) *adv = 0;
        printf("  build from PTX: %d %s\n", e, log);
        return NULL;
    }
    return p;
}

static void run(cl_context c, cl_command_queue q, cl_program p, const char *what)
{
    enum { G = 8 };
    cl_int e;
    unsigned in[G * 64], out[G * 64];
    for (int i = 0; i < G * 64; i++) in[i] = 100000 + (unsigned)i;
    cl_mem mi = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof in, in, &e);
    cl_mem mo = clCreateBuffer(c, CL_MEM_READ_WRITE, sizeof out, NULL, &e);
    cl_kernel k = clCreateKernel(p, "rank", &e);
    clSetKernelArg(k, 0, sizeof mo, &mo);
    size_t gl = G * 64, lo = 64;
    memset(out, 0xff, sizeof out);
    clEnqueueWriteBuffer(q, mo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    cl_int er = clEnqueueNDRangeKernel(q, k, 1, NULL, &gl, &lo, 0, NULL, NULL), ef = clFinish(q);
    clEnqueueReadBuffer(q, mo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    printf("%s rank: enqueue %d finish %d |", what, er, ef);
    for (int g = 0; g < G; g++) printf(" g%d r%u/%u peer %u", g, out[g * 4], out[g * 4 + 1], out[g * 4 + 3]);
    printf("\n");
    clReleaseKernel(k);
    for (unsigned pair = 0; pair < 2; pair++) {
        k = clCreateKernel(p, "multicast", &e);
        clSetKernelArg(k, 0, sizeof mi, &mi);
        clSetKernelArg(k, 1, sizeof mo, &mo);
        clSetKernelArg(k, 2, sizeof pair, &pair);
        gl = G * 32, lo = 32;
        memset(out, 0xff, sizeof out);
        clEnqueueWriteBuffer(q, mo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
        er = clEnqueueNDRangeKernel(q, k, 1, NULL, &gl, &lo, 0, NULL, NULL), ef = clFinish(q);
        clEnqueueReadBuffer(q, mo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
        printf("%s %s: enqueue %d finish %d | words 0, 31, 32, 63 of each block:", what,
               pair ? "multicast" : "bulk copy", er, ef);
        for (int g = 0; g < G; g++) printf(" [%u %u %u %u]", out[g * 64], out[g * 64 + 31], out[g * 64 + 32], out[g * 64 + 63]);
        printf("\n");
        clReleaseKernel(k);
    }
    clReleaseMemObject(mi);
    clReleaseMemObject(mo);
}

int main(void)
{
    cl_platform_id pl[4];
    cl_uint np = 0;
    clGetPlatformIDs(4, pl, &np);
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id d;
        char name[256];
        if (clGetDeviceIDs(pl[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL) != CL_SUCCESS) continue;
        clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
        printf("%s\n", name);
        cl_int e;
        cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
        cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &e);
        e = clBuildProgram(p, 1, &d, "", NULL, NULL);
        if (e != CL_SUCCESS) {
            char log[8192] = "";
            clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
            printf("  build: %d %s\n", e, log);
            continue;
        }
        size_t len = 0;
        clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
        char *ptx = calloc(1, len + 1);
        clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL);
        const char *t = strstr(ptx, ".target");
        printf("  PTX %zu bytes, %.40s\n", len, t ? t : "(no .target)");
        /* .explicitcluster alone faults (it wants a launch with cluster dims),
         * and after a fault the driver's later contexts fail too: last */
        const char *dirs[] = {"", ".reqnctapercluster 2, 1, 1", ".reqnctapercluster 2, 1, 1\n.maxclusterrank 2",
                              ".explicitcluster\n.reqnctapercluster 2, 1, 1", ".explicitcluster"};
        for (int v = 0; v < 5; v++) {
            char *pp = patch(ptx, dirs[v]);
            /* a fresh context each: a kernel that faults takes its context down */
            cl_context c2 = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
            cl_command_queue q2 = clCreateCommandQueue(c2, d, 0, &e);
            cl_program p2 = from_ptx(c2, d, pp);
            char what[96];
            snprintf(what, sizeof what, "  patched [%s]", dirs[v]);
            for (char *z = what; *z; z++) if (*z == '\n') *z = ' ';
            if (p2) run(c2, q2, p2, what);
            else printf("%s: no program\n", what);
            if (p2) clReleaseProgram(p2);
            clReleaseCommandQueue(q2);
            clReleaseContext(c2);
            free(pp);
        }
    }
    return 0;
}
