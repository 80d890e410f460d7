/* program.c — OpenCL programs: source assembly (kernels/common.cl is
 * prepended to every family), builds with the build log in errors, an
 * in-memory cache per device and a disk cache of program binaries keyed by
 * source, options, device, driver and netcl version (written atomically).
 * Every program is common.cl (types, loads, stores) + the elementwise ops
 * (elementwise_ops.c) + ops.cl (the fused activation) + its family. */
#include "cl.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const char *const nc_embedded_kernels[][2];

/* process-wide counters; atomic because any thread may launch */
static int64_t compiled, loaded, launched, enqueue_ns;
int64_t nc_cl_counter(nc_counter which)
{
    switch (which) {
    case NC_COUNT_PROGRAMS_COMPILED: return __atomic_load_n(&compiled, __ATOMIC_RELAXED);
    case NC_COUNT_PROGRAMS_LOADED: return __atomic_load_n(&loaded, __ATOMIC_RELAXED);
    case NC_COUNT_KERNELS_LAUNCHED: return __atomic_load_n(&launched, __ATOMIC_RELAXED);
    case NC_COUNT_ENQUEUE_NS: return __atomic_load_n(&enqueue_ns, __ATOMIC_RELAXED);
    }
    return 0;
}

int nc_cl_debug_level(void)
{
    static int level = -1;
    if (level < 0) { const char *e = getenv("NETCL_DEBUG"); level = e ? atoi(e) : 0; }
    return level;
}

/* Sources generated at run time (fused kernels), by family name; kept for
 * the process. */
typedef struct generated_source {
    char *family, *source;
    struct generated_source *next;
} generated_source;
static generated_source *generated;
static pthread_mutex_t generated_lock = PTHREAD_MUTEX_INITIALIZER;

int nc_cl_source_add(const char *family, const char *source)
{
    pthread_mutex_lock(&generated_lock);
    generated_source *g = generated;
    while (g && strcmp(g->family, family) != 0) g = g->next;
    if (!g && (g = calloc(1, sizeof *g)) && (g->family = strdup(family)) && (g->source = strdup(source))) {
        g->next = generated;
        generated = g;
    } else if (g && !g->source) {
        free(g->family);
        free(g);
        g = NULL;
    }
    pthread_mutex_unlock(&generated_lock);
    return g != NULL;
}

static char *generated_copy(const char *name)
{
    char *s = NULL;
    pthread_mutex_lock(&generated_lock);
    for (generated_source *g = generated; g; g = g->next)
        if (strcmp(g->family, name) == 0) { s = strdup(g->source); break; }
    pthread_mutex_unlock(&generated_lock);
    return s;
}

/* Source of kernels/<name>.cl: a generated source of that name, else
 * $NETCL_KERNEL_DIR, else embedded. Returns a malloc'd string. */
static char *kernel_source(const char *name)
{
    char *gen = generated_copy(name);
    if (gen) return gen;
    const char *dir = getenv("NETCL_KERNEL_DIR");
    if (dir && *dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.cl", dir, name);
        FILE *f = fopen(path, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            char *s = malloc((size_t)n + 1);
            if (s && fread(s, 1, (size_t)n, f) == (size_t)n) { s[n] = 0; fclose(f); return s; }
            free(s);
            fclose(f);
        }
    }
    for (int i = 0; nc_embedded_kernels[i][0]; i++)
        if (strcmp(nc_embedded_kernels[i][0], name) == 0) return strdup(nc_embedded_kernels[i][1]);
    return NULL;
}

/* The source of a family: kernels/<family>.cl, or for "a+b+..." the files
 * in that order (a prelude that configures the next, as conv_implicit.cl does
 * gemm.cl, or parts one builds on, as gemm.cl and gemm_ffma.cl are for
 * gemm_mma.cl). */
static char *family_source(const char *family)
{
    const char *plus = strchr(family, '+');
    if (!plus) return kernel_source(family);
    char first[64];
    snprintf(first, sizeof first, "%.*s", (int)(plus - family), family);
    char *a = kernel_source(first), *b = family_source(plus + 1), *s = NULL;
    if (a && b && (s = malloc(strlen(a) + strlen(b) + 2))) sprintf(s, "%s\n%s", a, b);
    free(a);
    free(b);
    return s;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ULL; }
    return h ^ 0xff;   /* separator so ("ab","c") and ("a","bc") differ */
}

int nc_cl_cache_dir(char *buf, size_t len)
{
    const char *d = getenv("NETCL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (d && *d) snprintf(buf, len, "%s", d);
    else if (x && *x) snprintf(buf, len, "%s/netcl", x);
    else if (home && *home) snprintf(buf, len, "%s/.cache/netcl", home);
    else return 0;
    /* create each level; an existing directory is fine */
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(buf, 0755);
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static cl_program load_binary(nc_cl_device *cd, const char *path, const char *options)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bin = n > 0 ? malloc((size_t)n) : NULL;
    cl_program prog = NULL;
    if (bin && fread(bin, 1, (size_t)n, f) == (size_t)n) {
        size_t len = (size_t)n;
        cl_int err, status;
        const unsigned char *bins[1] = {bin};
        prog = nc_cl.clCreateProgramWithBinary(cd->ctx, 1, &cd->id, &len, bins, &status, &err);
        if (prog && (err != CL_SUCCESS || status != CL_SUCCESS ||
                     nc_cl.clBuildProgram(prog, 1, &cd->id, options, NULL, NULL) != CL_SUCCESS)) {
            nc_cl.clReleaseProgram(prog);
            prog = NULL;
        }
    }
    free(bin);
    fclose(f);
    return prog;
}

static void save_binary(nc_cl_device *cd, cl_program prog, const char *path)
{
    size_t len = 0;
    if (nc_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || len == 0) return;
    unsigned char *bin = malloc(len);
    unsigned char *bins[1] = {bin};
    if (bin && nc_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            int ok = fwrite(bin, 1, len, f) == len;
            ok = (fflush(f) == 0) && ok;
            fclose(f);
            if (!ok || rename(tmp, path) != 0) unlink(tmp);
        }
    }
    (void)cd;
    free(bin);
}

static void print_build_log(nc_cl_device *cd, cl_program prog, const char *family)
{
    size_t len = 0;
    nc_cl.clGetProgramBuildInfo(prog, cd->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = len > 1 ? malloc(len + 1) : NULL;
    if (!log) return;
    nc_cl.clGetProgramBuildInfo(prog, cd->id, CL_PROGRAM_BUILD_LOG, len, log, NULL);
    log[len] = 0;
    fprintf(stderr, "netcl: build log of %s:\n%s\n", family, log);
    free(log);
}

static netcl_status build(nc_cl_device *cd, const char *family, const char *options, cl_program *out)
{
    char *common = kernel_source("common"), *ops = kernel_source("ops"), *body = family_source(family);
    const char *ew = nc_cl_elementwise_source();
    if (!common || !ops || !body || !ew) {
        free(common);
        free(ops);
        free(body);
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: kernel source '%s' not found (embedded or in NETCL_KERNEL_DIR)", family);
    }
    char opts[1400];
    /* -DNC_FP64: the host's view of fp64 support, which picks WIDE_T (common.cl) */
    /* NETCL_CL_OPTIONS: extra compiler options for experiments (e.g.
     * NVIDIA's -cl-nv-verbose, whose ptxas report NETCL_DEBUG=2 prints) */
    const char *extra = getenv("NETCL_CL_OPTIONS");
    if (snprintf(opts, sizeof opts, "-cl-std=CL1.2%s %s%s%s", cd->dev->has_fp64 ? " -DNC_FP64" : "", options,
                 extra && *extra ? " " : "", extra ? extra : "") >= (int)sizeof opts) {
        free(common);
        free(ops);
        free(body);
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: the build options of program %s are too long (NETCL_CL_OPTIONS?)", family);
    }
    const char *srcs[4] = {common, ew, ops, body};
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a(h, common); h = fnv1a(h, ew); h = fnv1a(h, ops); h = fnv1a(h, body); h = fnv1a(h, opts);
    h = fnv1a(h, cd->dev->hw_name); h = fnv1a(h, cd->dev->driver); h = fnv1a(h, cd->dev->platform); h = fnv1a(h, NC_VERSION);
    char dir[900], path[1000];
    int have_dir = nc_cl_cache_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%016llx.bin", dir, (unsigned long long)h);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cl_program prog = have_dir ? load_binary(cd, path, opts) : NULL;
    int from_disk = prog != NULL;
    netcl_status st = NETCL_OK;
    if (!prog) {
        cl_int err;
        prog = nc_cl.clCreateProgramWithSource(cd->ctx, 4, srcs, NULL, &err);
        if (err != CL_SUCCESS) st = nc_cl_fail(err, "clCreateProgramWithSource", __FILE__, __LINE__);
        else if ((err = nc_cl.clBuildProgram(prog, 1, &cd->id, opts, NULL, NULL)) != CL_SUCCESS) {
            size_t loglen = 0;
            nc_cl.clGetProgramBuildInfo(prog, cd->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
            char *log = malloc(loglen + 1);
            if (log) { nc_cl.clGetProgramBuildInfo(prog, cd->id, CL_PROGRAM_BUILD_LOG, loglen, log, NULL); log[loglen] = 0; }
            st = nc_fail(NETCL_ERR_BACKEND, "OpenCL: building kernels/%s.cl with options '%s' on %s failed (%s):\n%.3000s",
                         family, opts, cd->dev->name, nc_cl_error_name(err), log ? log : "(no build log)");
            free(log);
            nc_cl.clReleaseProgram(prog);
            prog = NULL;
        } else if ((st = nc_cl_ptx_finish(cd, &prog, family, opts)) != NETCL_OK) {
            nc_cl.clReleaseProgram(prog);   /* sm_90a lines that did not build (ptx_patch.c) */
            prog = NULL;
        } else {
            __atomic_fetch_add(&compiled, 1, __ATOMIC_RELAXED);
            if (nc_cl_debug_level() >= 2) print_build_log(cd, prog, family);
            if (have_dir) save_binary(cd, prog, path);
        }
    } else {
        __atomic_fetch_add(&loaded, 1, __ATOMIC_RELAXED);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st == NETCL_OK && nc_cl_debug_level() >= 1)
        fprintf(stderr, "netcl: %s program %s [%s] on %s in %.1f ms\n", from_disk ? "loaded" : "built", family, options,
                cd->dev->name, (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    free(common);
    free(ops);
    free(body);
    *out = prog;
    return st;
}

/* The lookup key of a kernel; never 0, which marks an empty slot. */
static uint64_t kernel_hash(const char *family, const char *options, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a(h, family);
    h = fnv1a(h, options);
    return fnv1a(h, name) | 1;
}

static int slot_is(const nc_cl_kslot *s, const char *family, const char *options, const char *name)
{
    size_t lf = strlen(family);
    const char *key = s->prog->key;
    return strncmp(key, family, lf) == 0 && key[lf] == '|' && strcmp(key + lf + 1, options) == 0 &&
           strcmp(s->prog->kernels[s->k].name, name) == 0;
}

/* Adds a slot, doubling the table at half load (no error: a failed grow
 * only means the next launch takes the slow path again). */
static void slot_add(nc_cl_device *cd, uint64_t h, nc_cl_program *p, int k)
{
    if (2 * (cd->kcount + 1) > cd->kcap) {
        size_t cap = cd->kcap ? 2 * cd->kcap : 256;
        nc_cl_kslot *t = calloc(cap, sizeof *t);
        if (!t) return;
        for (size_t i = 0; i < cd->kcap; i++) {
            if (!cd->kslots[i].hash) continue;
            size_t j = cd->kslots[i].hash & (cap - 1);
            while (t[j].hash) j = (j + 1) & (cap - 1);
            t[j] = cd->kslots[i];
        }
        free(cd->kslots);
        cd->kslots = t;
        cd->kcap = cap;
    }
    size_t j = h & (cd->kcap - 1);
    while (cd->kslots[j].hash) j = (j + 1) & (cd->kcap - 1);
    cd->kslots[j] = (nc_cl_kslot){h, p, k};
    cd->kcount++;
}

/* Slow path: find or build the program, create the kernel, size its group. */
static netcl_status kernel_create(nc_cl_device *cd, const char *family, const char *options, const char *name,
                                  nc_cl_program **prog, int *index)
{
    char key[sizeof cd->programs->key];
    if (snprintf(key, sizeof key, "%s|%s", family, options) >= (int)sizeof key)
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: the build options of program %s are too long (%zu characters)", family,
                       strlen(options));
    nc_cl_program *p = cd->programs;
    while (p && strcmp(p->key, key) != 0) p = p->next;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p) return nc_fail(NETCL_ERR_OOM, "OpenCL: out of host memory");
        snprintf(p->key, sizeof p->key, "%s", key);
        netcl_status st = build(cd, family, options, &p->program);
        if (st != NETCL_OK) { free(p); return st; }
        p->next = cd->programs;
        cd->programs = p;
    }
    if (p->nkernels == (int)(sizeof p->kernels / sizeof p->kernels[0]))
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: too many kernels in program %s", family);
    cl_int err;
    cl_kernel k = nc_cl.clCreateKernel(p->program, name, &err);
    if (err != CL_SUCCESS)
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: kernel %s not found in kernels/%s.cl [%s]: %s", name, family, options, nc_cl_error_name(err));
    /* the kernel's own limit (registers, local memory) and the device's,
     * capped at 256 and rounded down to a power of two for the tree reductions */
    size_t kwg = 0;
    nc_cl.clGetKernelWorkGroupInfo(k, cd->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL);
    if (kwg == 0 || kwg > cd->max_wg) kwg = cd->max_wg;
    if (kwg > 256) kwg = 256;
    size_t pow2 = 1;
    while (pow2 * 2 <= kwg) pow2 *= 2;
    snprintf(p->kernels[p->nkernels].name, sizeof p->kernels[0].name, "%s", name);
    p->kernels[p->nkernels].kernel = k;
    p->kernels[p->nkernels].wg = pow2;
    *prog = p;
    *index = p->nkernels++;
    return NETCL_OK;
}

netcl_status nc_cl_kernel(nc_cl_device *cd, const char *family, const char *options, const char *name,
                          cl_kernel *kernel, size_t *wg)
{
    /* every launch comes through here: a hash probe, no key strings built */
    uint64_t h = kernel_hash(family, options, name);
    if (cd->kcap) {
        for (size_t j = h & (cd->kcap - 1); cd->kslots[j].hash; j = (j + 1) & (cd->kcap - 1)) {
            const nc_cl_kslot *s = &cd->kslots[j];
            if (s->hash == h && slot_is(s, family, options, name)) {
                *kernel = s->prog->kernels[s->k].kernel;
                *wg = s->prog->kernels[s->k].wg;
                return NETCL_OK;
            }
        }
    }
    nc_cl_program *p;
    int i;
    NC_TRY(kernel_create(cd, family, options, name, &p, &i));
    slot_add(cd, h, p, i);
    *kernel = p->kernels[i].kernel;
    *wg = p->kernels[i].wg;
    return NETCL_OK;
}

netcl_status nc_cl_launch_nd(nc_cl_device *cd, cl_kernel k, int dims, const size_t *global, const size_t *local)
{
    if (nc_cl_debug_level() >= 2) {
        char name[64] = "?";
        nc_cl.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        name[sizeof name - 1] = 0;
        fprintf(stderr, "netcl: launch %s on %s global %zu x %zu x %zu local %zu\n", name, cd->dev->name, global[0],
                dims > 1 ? global[1] : (size_t)1, dims > 2 ? global[2] : (size_t)1, local ? local[0] : (size_t)0);
    }
    __atomic_fetch_add(&launched, 1, __ATOMIC_RELAXED);
    struct timespec t0, t1;   /* the driver's share of the per-op cost (the benchmarks report it) */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cl_event ev = NULL;
    cl_int err = nc_cl.clEnqueueNDRangeKernel(cd->queue, k, (cl_uint)dims, NULL, global, local, 0, NULL,
                                              nc_cl_profiling() ? &ev : NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (ev) nc_cl_profile_record(cd, k, dims, global, local, ev);
    __atomic_fetch_add(&enqueue_ns, (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec), __ATOMIC_RELAXED);
    NETCL_CL_CHECK(err);
    return NETCL_OK;
}

netcl_status nc_cl_launch(nc_cl_device *cd, cl_kernel k, size_t wg, int64_t n)
{
    /* enough groups to fill the device; kernels loop with a grid stride */
    int64_t cap = (int64_t)wg * 1024 * (cd->dev->compute_units > 0 ? cd->dev->compute_units : 1);
    int64_t items = n < cap ? n : cap;
    size_t global = (size_t)((items + (int64_t)wg - 1) / (int64_t)wg) * wg;
    if (global == 0) global = wg;
    return nc_cl_launch_nd(cd, k, 1, &global, &wg);
}

void nc_cl_dtype_opts(char *buf, size_t len, netcl_dtype a, netcl_dtype o)
{
    snprintf(buf, len, "-DTA=%d -DTO=%d%s", (int)a, (int)o,
             (a == NETCL_DTYPE_FLOAT64 || o == NETCL_DTYPE_FLOAT64) ? " -DNEED_FP64" : "");
}

/* fdiv's constants for divisor d (1 <= d < 2^31): s = ceil(log2 d),
 * m = floor(2^32 (2^s - d) / d) + 1; then n / d = (mulhi(n, m) + n) >> s
 * for every 0 <= n < 2^31 (Granlund and Montgomery, 1994). */
void nc_cl_fdiv_magic(int64_t d, cl_uint *m, cl_int *s)
{
    int l = 0;
    while (((int64_t)1 << l) < d) l++;
    *s = l;
    *m = (cl_uint)(((((uint64_t)1 << l) - (uint64_t)d) << 32) / (uint64_t)d + 1);
}

void nc_cl_index_opts(char *buf, size_t len, int64_t count)
{
    size_t n = strlen(buf);
    if (count < ((int64_t)1 << 30) && n < len) snprintf(buf + n, len - n, " -DIX32");
}

void nc_cl_meta_of(nc_cl_meta *m, int nops, const nc_desc *const *ops)
{
    nc_iter it;
    nc_iter_init(&it, nops, ops);
    memset(m, 0, sizeof *m);
    m->ndim = it.ndim;
    m->n = nc_iter_numel(&it);
    for (int d = 0; d < it.ndim; d++) m->sizes[d] = it.sizes[d];
    for (int k = 0; k < nops; k++) {
        m->offsets[k] = it.offsets[k];
        for (int d = 0; d < it.ndim; d++) m->strides[k][d] = it.strides[k][d];
    }
}

int nc_cl_meta_contiguous(const nc_cl_meta *m, int nops)
{
    if (m->ndim != 1) return 0;
    for (int k = 0; k < nops; k++)
        if (m->strides[k][0] != 1) return 0;
    return 1;
}

netcl_status nc_cl_set_scalar(cl_kernel k, int i, netcl_dtype dt, double v)
{
    if (dt == NETCL_DTYPE_FLOAT64) { cl_double d = v; NC_ARG(k, i, d); }
    else if (nc_dtype_is_float(dt)) { cl_float f = (cl_float)v; NC_ARG(k, i, f); }
    else {
        cl_long l = v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (cl_long)v;
        NC_ARG(k, i, l);
    }
    return NETCL_OK;
}

netcl_status nc_cl_set_wide(netcl_device *dev, cl_kernel k, int i, double v)
{
    if (dev->has_fp64) { cl_double d = v; NC_ARG(k, i, d); }
    else { cl_float f = (cl_float)v; NC_ARG(k, i, f); }
    return NETCL_OK;
}

void nc_cl_release_programs(nc_cl_device *cd)
{
    free(cd->kslots);
    cd->kslots = NULL;
    cd->kcap = cd->kcount = 0;
    while (cd->programs) {
        nc_cl_program *p = cd->programs;
        cd->programs = p->next;
        for (int i = 0; i < p->nkernels; i++) nc_cl.clReleaseKernel(p->kernels[i].kernel);
        nc_cl.clReleaseProgram(p->program);
        free(p);
    }
}

netcl_status nc_cl_enter(netcl_device *dev, const char *op, netcl_dtype a, netcl_dtype b)
{
    NC_TRY(nc_check_fork(op));
    /* async writes whose copy finished can let go of their host tensor */
    if (nc_cl_dev(dev)->pending) nc_cl_poll_pending(nc_cl_dev(dev), 0);
    if ((a == NETCL_DTYPE_FLOAT64 || b == NETCL_DTYPE_FLOAT64) && !dev->has_fp64)
        return nc_fail(NETCL_ERR_UNSUPPORTED, "%s: %s (%s) has no float64 support (cl_khr_fp64)", op, dev->name, dev->hw_name);
    return NETCL_OK;
}
