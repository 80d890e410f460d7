/* probe_wgmma.c — can OpenCL kernels on NVIDIA run Hopper's wgmma?
 * The OpenCL compiler targets sm_90 and ptxas refuses wgmma there (it needs
 * sm_90a). The probe writes the wgmma lines as marked PTX comments in
 * OpenCL C inline assembly ("//@"), so the source builds for sm_90 with the
 * operands' registers already allocated, then reads the driver's PTX back,
 * uncomments the marked lines, retargets it to sm_90a and loads it as a
 * program binary. It checks:
 *   check: one warpgroup computes D[64][32] = A[64][K] B[32][K]^T from local
 *          memory through four k-steps (f16 K = 64, tf32 K = 32), with the
 *          operands unswizzled (8x16-byte core matrices) and 128-byte
 *          swizzled, against the host; and f16 with B read transposed
 *          (n contiguous) from 128-byte-swizzled atoms (check_trans);
 *   peak:  register-resident loops of wgmma m64nNk16 (f16) / k8 (tf32),
 *          TFLOP/s over the whole device.
 * H100 (2026-11-27): every check exact (check_trans: variant 0, variant 1
 * wrong); peaks 949-978 TFLOP/s f16/bf16, 488 tf32 (mma.sync: 659 / 329).
 * netcl's own path: src/backend/cl/ptx_patch.c.
 *   cc -O2 examples/bench/probe_wgmma.c -lOpenCL -o /tmp/wg && /tmp/wg */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *buf;
static size_t used, cap;

static void put(const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(buf + used, cap - used, fmt, ap);
        va_end(ap);
        if ((size_t)n < cap - used) { used += (size_t)n; return; }
        cap = cap * 2 + (size_t)n + 4096;
        buf = realloc(buf, cap);
    }
}

/* the wgmma call as an OpenCL C statement: accumulators acc[0..n/2-1],
 * descriptors da, db; every PTX line marked to be uncommented later */
static void put_wgmma(const char *type, int n, const char *acc, const char *da, const char *db)
{
    int nacc = n / 2, k = strcmp(type, "tf32") ? 16 : 8;
    put("asm volatile(\"//@{ .reg .pred p;\\n//@setp.ne.b32 p, %%%d, 0;\\n"
        "//@wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", nacc + 2, n, k, type, type);
    for (int i = 0; i < nacc; i++) put("%s%%%d", i ? "," : "", i);
    put("}, %%%d, %%%d, p, 1, 1%s;\\n//@}\" : ", nacc, nacc + 1, k == 16 ? ", 0, 0" : "");
    for (int i = 0; i < nacc; i++) put("%s\"+f\"(%s[%d])", i ? "," : "", acc, i);
    put(" : \"l\"(%s), \"l\"(%s), \"r\"(1) : \"memory\");\n", da, db);
}

/* wait for every group, with the accumulators as operands so that no read
 * of them moves above the wait */
static void put_wait(int n, const char *acc, int depth)
{
    put("asm volatile(\"//@wgmma.commit_group.sync.aligned;\\n//@wgmma.wait_group.sync.aligned %d;\" : ", depth);
    for (int i = 0; i < n / 2; i++) put("%s\"+f\"(%s[%d])", i ? "," : "", acc, i);
    put(" :: \"memory\");\n");
}

static const char *common =
    "ulong desc(uint addr, uint lbo, uint sbo, uint mode) {\n"
    "  return (ulong)((addr & 0x3FFFF) >> 4) | ((ulong)(lbo >> 4) << 16) |\n"
    "         ((ulong)(sbo >> 4) << 32) | ((ulong)mode << 62);\n"
    "}\n"
    /* word w (4 bytes) of row r of a 128-byte-wide tile: unswizzled as
     * 8-row core matrices of 16 bytes a row (k chunks 128 bytes apart, row
     * groups 1024), or rows of 128 bytes with 16-byte chunks XOR row % 8 */
    "uint lay(uint r, uint w, uint swz) {\n"
    "  uint c = w / 4, in = w % 4;\n"
    "  return swz ? r * 32 + ((c ^ (r % 8)) * 4) + in\n"
    "             : (r / 8) * 256 + c * 32 + (r % 8) * 4 + in;\n"
    "}\n";

static char *check_src(const char *type)
{
    used = 0;
    put("%s", common);
    put("__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
        "void check(__global const uint *A, __global const uint *B, __global float *D, uint swz) {\n"
        "  __local uint sa[64 * 32] __attribute__((aligned(1024)));\n"
        "  __local uint sb[32 * 32] __attribute__((aligned(1024)));\n"
        "  uint t = get_local_id(0);\n"
        "  for (uint i = t; i < 64 * 32; i += 128) sa[lay(i / 32, i %% 32, swz)] = A[i];\n"
        "  for (uint i = t; i < 32 * 32; i += 128) sb[lay(i / 32, i %% 32, swz)] = B[i];\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  asm volatile(\"//@fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
        "  float d[16];\n"
        "  for (int i = 0; i < 16; i++) d[i] = 0.0f;\n"
        "  uint a0 = (uint)(ulong)sa, b0 = (uint)(ulong)sb;\n"
        "  asm volatile(\"//@wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
        "  for (uint s = 0; s < 4; s++) {\n"
        "    uint step = swz ? 32 * s : 256 * s;\n"
        "    ulong da = desc(a0 + step, swz ? 16 : 128, 1024, swz ? 1 : 0);\n"
        "    ulong db = desc(b0 + step, swz ? 16 : 128, 1024, swz ? 1 : 0);\n");
    put_wgmma(type, 32, "d", "da", "db");
    put("  }\n");
    put_wait(32, "d", 0);
    put("  uint w = t / 32, l = t %% 32, row = 16 * w + l / 4;\n"
        "  for (int j = 0; j < 4; j++) {\n"
        "    uint col = 8 * j + (l %% 4) * 2;\n"
        "    D[row * 32 + col] = d[4 * j];\n"
        "    D[row * 32 + col + 1] = d[4 * j + 1];\n"
        "    D[(row + 8) * 32 + col] = d[4 * j + 2];\n"
        "    D[(row + 8) * 32 + col + 1] = d[4 * j + 3];\n"
        "  }\n"
        "}\n");
    return strdup(buf);
}

static char *peak_src(const char *type, int n, int wg, int depth)
{
    used = 0;
    put("%s", common);
    put("__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\n"
        "void peak(__global float *out, uint iters) {\n"
        "  __local uint sa[64 * 32] __attribute__((aligned(1024)));\n"
        "  __local uint sb[256 * 32] __attribute__((aligned(1024)));\n"
        "  uint t = get_local_id(0);\n"
        "  for (uint i = t; i < 64 * 32; i += %d) sa[i] = 0x3c003c00u;\n"
        "  for (uint i = t; i < 256 * 32; i += %d) sb[i] = 0x3c003c00u;\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  asm volatile(\"//@fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
        "  float d[%d];\n"
        "  for (int i = 0; i < %d; i++) d[i] = 0.0f;\n"
        "  uint a0 = (uint)(ulong)sa, b0 = (uint)(ulong)sb;\n"
        "  asm volatile(\"//@wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
        "  for (uint it = 0; it < iters; it++) {\n"
        "    for (uint s = 0; s < 4; s++) {\n"
        "      ulong da = desc(a0 + 32 * s, 16, 1024, 1), db = desc(b0 + 32 * s, 16, 1024, 1);\n",
        128 * wg, 128 * wg, 128 * wg, n / 2, n / 2);
    put_wgmma(type, n, "d", "da", "db");
    put("    }\n");
    put_wait(n, "d", depth);
    put("  }\n");
    put_wait(n, "d", 0);
    put("  float s = 0.0f;\n"
        "  for (int i = 0; i < %d; i++) s += d[i];\n"
        "  out[get_global_id(0)] = s;\n"
        "}\n",
        n / 2);
    return strdup(buf);
}

/* uncomment the marked lines and retarget the PTX to sm_90a */
static char *patch(const char *ptx)
{
    char *out = malloc(strlen(ptx) + 16), *w = out;
    for (const char *p = ptx; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e + 1 - p) : strlen(p);
        const char *s = p;
        while (s < p + len && (*s == ' ' || *s == '\t')) s++;
        if (!strncmp(s, "//@", 3)) {
            memcpy(w, p, (size_t)(s - p)), w += s - p;
            memcpy(w, s + 3, len - (size_t)(s + 3 - p)), w += len - (size_t)(s + 3 - p);
        } else if (!strncmp(s, ".target sm_90", 13) && s[13] != 'a') {
            w += sprintf(w, ".target sm_90a");
            memcpy(w, s + 13, len - (size_t)(s + 13 - p)), w += len - (size_t)(s + 13 - p);
        } else {
            memcpy(w, p, len), w += len;
        }
        p += len;
    }
    *w = 0;
    return out;
}

static void print_log(cl_program p, cl_device_id d, const char *what, cl_int e)
{
    static char log[16384];
    log[0] = 0;
    clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    printf("  %s: error %d\n%.3000s\n", what, e, log);
}

/* source -> the driver's PTX -> patched -> program */
static cl_program build(cl_context c, cl_device_id d, const char *src, int show)
{
    cl_int e;
    cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &e);
    e = clBuildProgram(p, 1, &d, "", NULL, NULL);
    if (e != CL_SUCCESS) { print_log(p, d, "build from source", e); return NULL; }
    size_t len = 0;
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
    char *ptx = calloc(1, len + 1);
    clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL);
    clReleaseProgram(p);
    char *pp = patch(ptx);
    if (show) {
        const char *v = strstr(pp, ".version"), *t = strstr(pp, ".target"), *g = strstr(pp, "wgmma.mma_async");
        printf("  PTX: %.13s, %.15s, first wgmma: %.80s\n", v ? v : "?", t ? t : "?", g ? g : "(none)");
    }
    free(ptx);
    len = strlen(pp) + 1;
    cl_int st;
    p = clCreateProgramWithBinary(c, 1, &d, &len, (const unsigned char **)&pp, &st, &e);
    if (e != CL_SUCCESS) { printf("  clCreateProgramWithBinary: %d (status %d)\n", e, st); free(pp); return NULL; }
    e = clBuildProgram(p, 1, &d, "", NULL, NULL);
    free(pp);
    if (e != CL_SUCCESS) { print_log(p, d, "build from patched PTX", e); return NULL; }
    return p;
}

static unsigned short f2h(float f) /* exact for the probe's values k/8 */
{
    unsigned u;
    memcpy(&u, &f, 4);
    if (!(u & 0x7fffffff)) return (unsigned short)(u >> 16);
    unsigned s = (u >> 16) & 0x8000, e = ((u >> 23) & 0xff) - 127 + 15, m = (u >> 13) & 0x3ff;
    return (unsigned short)(s | (e << 10) | m);
}

/* a 16-bit element's bits: float16, or bfloat16 (the top half) */
static unsigned half2(float f, int bf)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return bf ? u >> 16 : f2h(f);
}

/* one check kernel's buffers: A, B in, D out, then the variant argument */
typedef struct {
    cl_mem a, b, d;
    cl_kernel k;
    size_t dsz;
} check_bufs;

static check_bufs check_setup(cl_context c, cl_program p, const char *name, const void *A, size_t asz, const void *B,
                              size_t bsz, size_t dsz)
{
    cl_int e;
    check_bufs cb = {clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, asz, (void *)A, &e),
                     clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bsz, (void *)B, &e),
                     clCreateBuffer(c, CL_MEM_READ_WRITE, dsz, NULL, &e), clCreateKernel(p, name, &e), dsz};
    return cb;
}

/* one warpgroup's run with `variant`; D (poisoned first) into out */
static void check_run(cl_command_queue q, check_bufs *cb, unsigned variant, float *out, cl_int *er, cl_int *ef)
{
    clSetKernelArg(cb->k, 0, sizeof cb->a, &cb->a);
    clSetKernelArg(cb->k, 1, sizeof cb->b, &cb->b);
    clSetKernelArg(cb->k, 2, sizeof cb->d, &cb->d);
    clSetKernelArg(cb->k, 3, sizeof variant, &variant);
    memset(out, 0xff, cb->dsz);
    clEnqueueWriteBuffer(q, cb->d, CL_TRUE, 0, cb->dsz, out, 0, NULL, NULL);
    size_t gl = 128, lo = 128;
    *er = clEnqueueNDRangeKernel(q, cb->k, 1, NULL, &gl, &lo, 0, NULL, NULL);
    *ef = clFinish(q);
    clEnqueueReadBuffer(q, cb->d, CL_TRUE, 0, cb->dsz, out, 0, NULL, NULL);
}

static void check_release(check_bufs *cb)
{
    clReleaseKernel(cb->k);
    clReleaseMemObject(cb->a);
    clReleaseMemObject(cb->b);
    clReleaseMemObject(cb->d);
}

static void check(cl_context c, cl_device_id d, cl_command_queue q, const char *type)
{
    char *src = check_src(type);
    cl_program p = build(c, d, src, 1);
    free(src);
    if (!p) return;
    int f16 = strcmp(type, "tf32") != 0, bf = !strcmp(type, "bf16"), K = f16 ? 64 : 32;
    static float a[64][64], b[32][64], ref[64][32], out[64 * 32];
    static unsigned A[64 * 32], B[32 * 32];
    srand(7);
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < K; k++) a[r][k] = (float)(rand() % 33 - 16) / 8;
    for (int r = 0; r < 32; r++)
        for (int k = 0; k < K; k++) b[r][k] = (float)(rand() % 33 - 16) / 8;
    for (int w = 0; w < 32; w++) {
        for (int r = 0; r < 64; r++) {
            if (f16) A[r * 32 + w] = half2(a[r][2 * w], bf) | half2(a[r][2 * w + 1], bf) << 16;
            else memcpy(&A[r * 32 + w], &a[r][w], 4);
        }
        for (int r = 0; r < 32; r++) {
            if (f16) B[r * 32 + w] = half2(b[r][2 * w], bf) | half2(b[r][2 * w + 1], bf) << 16;
            else memcpy(&B[r * 32 + w], &b[r][w], 4);
        }
    }
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 32; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[m][k] * b[n][k];
            ref[m][n] = (float)s;
        }
    check_bufs cb = check_setup(c, p, "check", A, sizeof A, B, sizeof B, sizeof out);
    for (unsigned swz = 0; swz < 2; swz++) {
        cl_int er, ef;
        check_run(q, &cb, swz, out, &er, &ef);
        int bad = 0, fm = -1, fn = -1;
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < 32; n++)
                if (out[m * 32 + n] != ref[m][n]) {
                    if (!bad) fm = m, fn = n;
                    bad++;
                }
        printf("  check %s %s: enqueue %d finish %d, %d of 2048 wrong", type, swz ? "128B-swizzled" : "unswizzled",
               er, ef, bad);
        if (bad) printf(" (first D[%d][%d] = %g, want %g)", fm, fn, out[fm * 32 + fn], ref[fm][fn]);
        printf("\n");
    }
    check_release(&cb);
    clReleaseProgram(p);
}

static void peak(cl_context c, cl_device_id d, cl_command_queue q, const char *type, int n, int wg, int depth)
{
    char *src = peak_src(type, n, wg, depth);
    cl_program p = build(c, d, src, 0);
    free(src);
    if (!p) return;
    cl_uint cus = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    cl_int e;
    size_t lo = 128 * (size_t)wg, gl = lo * cus * (wg == 1 ? 2 : 1);
    cl_mem mo = clCreateBuffer(c, CL_MEM_READ_WRITE, gl * sizeof(float), NULL, &e);
    cl_kernel k = clCreateKernel(p, "peak", &e);
    cl_uint iters = 4096;
    clSetKernelArg(k, 0, sizeof mo, &mo);
    clSetKernelArg(k, 1, sizeof iters, &iters);
    double best = 0;
    cl_int er = 0, ef = 0;
    for (int rep = 0; rep < 5; rep++) {
        cl_event ev;
        er = clEnqueueNDRangeKernel(q, k, 1, NULL, &gl, &lo, 0, NULL, &ev);
        ef = clFinish(q);
        if (er || ef) break;
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(ev);
        double flop = (double)(gl / 128) * iters * 4 * 2.0 * 64 * n * (strcmp(type, "tf32") ? 16 : 8);
        double tf = flop / ((double)(t1 - t0) * 1e-9) / 1e12;
        if (tf > best) best = tf;
    }
    printf("  peak %s m64n%d, %d warpgroup(s) a block, wait depth %d: enqueue %d finish %d, %.1f TFLOP/s\n", type, n, wg,
           depth, er, ef, best);
    clReleaseKernel(k);
    clReleaseMemObject(mo);
    clReleaseProgram(p);
}

/* B read transposed (imm-trans-b 1): w stored [k][n] with n contiguous, as
 * a row-major product's second operand. The 128-byte swizzle's atoms are 8
 * k-rows of 64 n-elements; the stage holds them as [n-block][k][128 bytes],
 * and the two descriptor offsets are tried both ways round: variant 0 has
 * the leading offset step between n-blocks and the stride offset between
 * 8-row groups of k, variant 1 the reverse. f16, m64n128, K = 64. */
static char *check_trans_src(void)
{
    used = 0;
    put("%s", common);
    put("__kernel __attribute__((reqd_work_group_size(128, 1, 1)))\n"
        "void check_t(__global const uint *A, __global const uint *B, __global float *D, uint variant) {\n"
        "  __local uint sa[64 * 32] __attribute__((aligned(1024)));\n"
        "  __local uint sb[64 * 64] __attribute__((aligned(1024)));\n"
        "  uint t = get_local_id(0);\n"
        "  for (uint i = t; i < 64 * 32; i += 128) sa[lay(i / 32, i %% 32, 1)] = A[i];\n"
        "  for (uint i = t; i < 64 * 64; i += 128) {\n"
        "    uint k = i / 64, w = i %% 64, nb = w / 32, c = (w %% 32) / 4;\n"
        "    sb[nb * 2048 + k * 32 + ((c ^ (k %% 8)) * 4) + w %% 4] = B[i];\n"
        "  }\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  asm volatile(\"//@fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
        "  float d[64];\n"
        "  for (int i = 0; i < 64; i++) d[i] = 0.0f;\n"
        "  uint a0 = (uint)(ulong)sa, b0 = (uint)(ulong)sb;\n"
        "  asm volatile(\"//@wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
        "  for (uint s = 0; s < 4; s++) {\n"
        "    ulong da = desc(a0 + 32 * s, 16, 1024, 1);\n"
        "    ulong db = variant ? desc(b0 + 2048 * s, 1024, 8192, 1) : desc(b0 + 2048 * s, 8192, 1024, 1);\n");
    /* put_wgmma with imm-trans-b 1 */
    put("asm volatile(\"//@{ .reg .pred p;\\n//@setp.ne.b32 p, %%66, 0;\\n"
        "//@wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {");
    for (int i = 0; i < 64; i++) put("%s%%%d", i ? "," : "", i);
    put("}, %%64, %%65, p, 1, 1, 0, 1;\\n//@}\" : ");
    for (int i = 0; i < 64; i++) put("%s\"+f\"(d[%d])", i ? "," : "", i);
    put(" : \"l\"(da), \"l\"(db), \"r\"(1) : \"memory\");\n  }\n");
    put_wait(128, "d", 0);
    put("  uint w = t / 32, l = t %% 32, row = 16 * w + l / 4;\n"
        "  for (int j = 0; j < 16; j++) {\n"
        "    uint col = 8 * j + (l %% 4) * 2;\n"
        "    D[row * 128 + col] = d[4 * j];\n"
        "    D[row * 128 + col + 1] = d[4 * j + 1];\n"
        "    D[(row + 8) * 128 + col] = d[4 * j + 2];\n"
        "    D[(row + 8) * 128 + col + 1] = d[4 * j + 3];\n"
        "  }\n"
        "}\n");
    return strdup(buf);
}

static void check_trans(cl_context c, cl_device_id d, cl_command_queue q)
{
    char *src = check_trans_src();
    cl_program p = build(c, d, src, 0);
    free(src);
    if (!p) return;
    static float a[64][64], b[64][128], ref[64][128], out[64 * 128];
    static unsigned A[64 * 32], B[64 * 64];
    srand(9);
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < 64; k++) a[r][k] = (float)(rand() % 33 - 16) / 8;
    for (int k = 0; k < 64; k++)
        for (int n = 0; n < 128; n++) b[k][n] = (float)(rand() % 33 - 16) / 8;
    for (int r = 0; r < 64; r++)
        for (int w = 0; w < 32; w++) A[r * 32 + w] = f2h(a[r][2 * w]) | (unsigned)f2h(a[r][2 * w + 1]) << 16;
    for (int k = 0; k < 64; k++)
        for (int w = 0; w < 64; w++) B[k * 64 + w] = f2h(b[k][2 * w]) | (unsigned)f2h(b[k][2 * w + 1]) << 16;
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 128; n++) {
            double sum = 0;
            for (int k = 0; k < 64; k++) sum += (double)a[m][k] * b[k][n];
            ref[m][n] = (float)sum;
        }
    check_bufs cb = check_setup(c, p, "check_t", A, sizeof A, B, sizeof B, sizeof out);
    for (unsigned v = 0; v < 2; v++) {
        cl_int er, ef;
        check_run(q, &cb, v, out, &er, &ef);
        int bad = 0;
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < 128; n++) bad += out[m * 128 + n] != ref[m][n];
        printf("  check f16, B transposed, variant %u (%s): enqueue %d finish %d, %d of 8192 wrong\n", v,
               v ? "leading offset 8-row k groups, stride n-blocks" : "leading offset n-blocks, stride 8-row k groups", er,
               ef, bad);
    }
    check_release(&cb);
    clReleaseProgram(p);
}

/* the first NVIDIA GPU's device, or 0 */
static int nvidia_gpu(cl_device_id *out)
{
    cl_platform_id pl[4];
    cl_uint np = 0;
    char vendor[256];
    clGetPlatformIDs(4, pl, &np);
    for (cl_uint i = 0; i < np; i++)
        if (clGetDeviceIDs(pl[i], CL_DEVICE_TYPE_GPU, 1, out, NULL) == CL_SUCCESS &&
            clGetDeviceInfo(*out, CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL) == CL_SUCCESS && strstr(vendor, "NVIDIA"))
            return 1;
    return 0;
}

int main(void)
{
    cap = 1 << 16;
    buf = malloc(cap);
    cl_device_id d;
    if (!nvidia_gpu(&d)) {
        printf("no NVIDIA GPU\n");
        return 0;
    }
    char name[256];
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("%s\n", name);
    cl_int e;
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    cl_command_queue q = clCreateCommandQueue(c, d, CL_QUEUE_PROFILING_ENABLE, &e);
    check(c, d, q, "f16");
    check(c, d, q, "bf16");
    check(c, d, q, "tf32");
    check_trans(c, d, q);
    if (getenv("PROBE_CHECKS_ONLY")) return 0;
    peak(c, d, q, "f16", 128, 2, 1);
    peak(c, d, q, "f16", 256, 1, 1);
    peak(c, d, q, "f16", 256, 2, 1);
    peak(c, d, q, "f16", 256, 2, 0);
    peak(c, d, q, "bf16", 256, 2, 1);
    peak(c, d, q, "tf32", 256, 2, 1);
    clReleaseCommandQueue(q);
    clReleaseContext(c);
    return 0;
}
