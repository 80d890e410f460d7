/* ptx_ncu.c — run a float32 gemm_mma program that netcl's OpenCL build
 * left in its disk cache through the CUDA driver API, so that NVIDIA's
 * Nsight Compute (which does not see OpenCL launches) can profile it:
 * stall reasons, issue rate, the SASS line by line. NVIDIA's OpenCL
 * caches PTX; the entry takes the same arguments whichever API launches
 * it, except that it reads the group offset and the number of groups from
 * the OpenCL runtime's environment registers (%envreg0, %envreg6), which
 * this tool rewrites to 0 and %nctaid.x. It refuses PTX that reads any
 * other environment register. It also times the launches (CUDA events)
 * and checks 64 outputs against a double-precision sum.
 *
 * Find the program: run the product once with an empty cache dir; the
 * newest .bin holding ".entry gemm_mma" is the product's (the probe's is
 * older). On the GPU machine (docs/gemm.md, "Profiling with Nsight
 * Compute"):
 *   NETCL_CACHE_DIR=/tmp/pc build/netcl my_product.lua
 *   nvcc -O2 -o /tmp/ptx_ncu examples/bench/ptx_ncu.c -lcuda
 *   /tmp/ptx_ncu /tmp/pc/<hash>.bin 4096 4096 4096 tn 128 64 20
 *   ncu -k gemm_mma -c 1 --set full -o /tmp/r /tmp/ptx_ncu ... 1
 * Arguments: program M N K layout (nn: a row-major; tn: a m-contiguous;
 * w row-major either way) BM BN (the block tile the program was built
 * with: one group per tile) reps. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                  \
    do {                                                                                       \
        CUresult r_ = (x);                                                                     \
        if (r_ != CUDA_SUCCESS) {                                                              \
            const char *s_ = "?";                                                              \
            cuGetErrorString(r_, &s_);                                                         \
            fprintf(stderr, "ptx_ncu: %s failed: %s\n", #x, s_);                               \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* The cached program is the PTX text, NULs and a metadata section after
 * it; returns the PTX with the environment registers replaced. */
static char *load_ptx(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n <= 0) { fprintf(stderr, "ptx_ncu: %s is empty or unreadable\n", path); exit(1); }
    /* each %envreg6 -> %nctaid.x adds a byte, and one needs 8 bytes at least */
    char *raw = calloc((size_t)n + 1, 1), *out = calloc((size_t)n + (size_t)n / 8 + 1, 1);
    if (!raw || !out || fread(raw, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "ptx_ncu: cannot read %s\n", path); exit(1); }
    fclose(f);
    size_t len = 0;
    for (long i = 0; i < n; i++) if (raw[i]) raw[len++] = raw[i];
    raw[len] = 0;
    char *meta = strstr(raw, "\n.metadata_section");
    if (meta) meta[1] = 0;
    if (!strstr(raw, ".entry gemm_mma")) { fprintf(stderr, "ptx_ncu: %s holds no gemm_mma entry\n", path); exit(1); }
    char *o = out;
    for (const char *p = raw; *p;) {
        if (!strncmp(p, "%envreg", 7)) {
            int r = atoi(p + 7);
            if (r != 0 && r != 6) { fprintf(stderr, "ptx_ncu: the PTX reads %%envreg%d, whose meaning this tool does not know\n", r); exit(1); }
            o += sprintf(o, "%s", r == 0 ? "0" : "%nctaid.x");
            p += 7;
            while (*p >= '0' && *p <= '9') p++;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    free(raw);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: ptx_ncu program.bin M N K nn|tn BM BN reps\n");
        return 2;
    }
    char *ptx = load_ptx(argv[1]);
    int M = atoi(argv[2]), N = atoi(argv[3]), K = atoi(argv[4]), tn = !strcmp(argv[5], "tn");
    int bm = atoi(argv[6]), bn = atoi(argv[7]), reps = atoi(argv[8]);
    if (M <= 0 || N <= 0 || K <= 0 || bm <= 0 || bn <= 0 || reps <= 0 || (!tn && strcmp(argv[5], "nn"))) {
        fprintf(stderr, "ptx_ncu: bad arguments\n");
        return 2;
    }
    if (M % 4 || N % 4 || K % 4) { /* the copies move 16-byte chunks of rows */
        fprintf(stderr, "ptx_ncu: M, N and K must be multiples of 4 (%d x %d x %d)\n", M, N, K);
        return 2;
    }
    const char *r = strstr(ptx, ".reqntid");
    int threads = r ? atoi(r + 8) : 0;
    if (threads <= 0) { fprintf(stderr, "ptx_ncu: no .reqntid in the PTX\n"); return 1; }
    unsigned groups = (unsigned)(((M + bm - 1) / bm) * ((N + bn - 1) / bn));

    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUmodule mod;
    char log[8192] = "";
    CUjit_option jo[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *jv[2] = {log, (void *)(size_t)sizeof log};
    if (cuModuleLoadDataEx(&mod, ptx, 2, jo, jv) != CUDA_SUCCESS) { fprintf(stderr, "ptx_ncu: PTX load failed: %s\n", log); return 1; }
    CUfunction fn;
    CK(cuModuleGetFunction(&fn, mod, "gemm_mma"));

    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *ha = malloc(na * 4), *hb = malloc(nb * 4), *hc = malloc(nc * 4);
    if (!ha || !hb || !hc) { fprintf(stderr, "ptx_ncu: out of host memory\n"); return 1; }
    srand(1);
    for (size_t i = 0; i < na; i++) ha[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < nb; i++) hb[i] = (float)rand() / RAND_MAX - 0.5f;
    CUdeviceptr a, b, c;
    CK(cuMemAlloc(&a, na * 4));
    CK(cuMemAlloc(&b, nb * 4));
    CK(cuMemAlloc(&c, nc * 4));
    CK(cuMemcpyHtoD(a, ha, na * 4));
    CK(cuMemcpyHtoD(b, hb, nb * 4));

    /* gemm_mma's arguments (kernels/gemm_mma.cl, EPI_PARAMS in gemm.cl):
     * the epilogue is compiled in, so its run-time ones are placeholders */
    long ooff = 0, aoff = 0, as0 = (long)na, as1 = tn ? 1 : K, as2 = tn ? M : 1;
    long woff = 0, bs0 = (long)nb, bs1 = N, bs2 = 1, coff = 0, cs0 = 0, cs1 = 0, cs2 = 0, boff = 0, bstride = 0;
    int im = M, in = N, ik = K, nbatch = 1, flags = 0, act = -1;
    float alpha = 1, beta = 0, p1 = 0;
    void *args[] = {&c, &ooff, &a, &aoff, &as0, &as1, &as2, &b, &woff, &bs0, &bs1, &bs2, &im, &in, &ik, &nbatch,
                    &alpha, &beta, &c, &coff, &cs0, &cs1, &cs2, &c, &boff, &bstride, &p1, &flags, &act};

    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    CK(cuLaunchKernel(fn, groups, 1, 1, (unsigned)threads, 1, 1, 0, 0, args, 0));
    CK(cuCtxSynchronize());
    CK(cuEventRecord(e0, 0));
    for (int i = 0; i < reps; i++) CK(cuLaunchKernel(fn, groups, 1, 1, (unsigned)threads, 1, 1, 0, 0, args, 0));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    float ms = 0;
    CK(cuEventElapsedTime(&ms, e0, e1));
    CK(cuMemcpyDtoH(hc, c, nc * 4));

    double worst = 0;
    for (int t = 0; t < 64; t++) {
        int m = rand() % M, n = rand() % N;
        double s = 0;
        for (int k = 0; k < K; k++) s += (double)(tn ? ha[(size_t)k * M + m] : ha[(size_t)m * K + k]) * hb[(size_t)k * N + n];
        double e = s - hc[(size_t)m * N + n];
        if (e < 0) e = -e;
        if (e > worst) worst = e;
    }
    double us = ms * 1e3 / reps;
    printf("gemm_mma %dx%dx%d %s: %u groups of %d, %.1f us, %.1f TFLOP/s, largest error %.1e\n", M, N, K, argv[5], groups,
           threads, us, 2.0 * M * N * K / us * 1e-6, worst);
    return worst < 1e-3 * K ? 0 : 1;
}
