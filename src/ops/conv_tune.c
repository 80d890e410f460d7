/* conv_tune.c — the convolution tuner: with benchmarking on
 * (netcl_set_conv_benchmark, like cudnn.benchmark), the first time a
 * geometry meets the planner every applicable strategy runs on the device
 * and the fastest is remembered, in memory and in a small per-device file
 * beside the program cache, so later runs skip the measurement. */
#include "ops/ops.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct entry { char key[512]; nc_conv_algo algo; struct entry *next; } entry;

static entry *table;
static int benchmark = -1;    /* -1: not read from the environment yet */
static int loaded;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int measuring;   /* the planner's calls made while measuring plan normally */

void netcl_set_conv_benchmark(int on) { benchmark = on != 0; }
int netcl_conv_benchmark(void)
{
    if (benchmark < 0) { const char *e = getenv("NETCL_CONV_BENCHMARK"); benchmark = e && strcmp(e, "1") == 0; }
    return benchmark;
}

/* device, dtype, pass, float32 precision mode (winners differ when the
 * products run on tensor cores), then the shape */
static void make_key(char *buf, size_t n, netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    snprintf(buf, n, "%s|%s|%d|%d|%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", dev->hw_name,
             netcl_dtype_name(dt), (int)pass, dt == NETCL_DTYPE_FLOAT32 ? nc_fp32_mode() : 0, (long long)g->N, (long long)g->C, (long long)g->H, (long long)g->W,
             (long long)g->O, (long long)g->G, (long long)g->KH, (long long)g->KW, (long long)g->SH, (long long)g->SW,
             (long long)g->PH, (long long)g->PW, (long long)g->DH, (long long)g->DW);
}

static const char *cache_path(char *buf, size_t n)
{
    const char *dir = getenv("NETCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir) snprintf(buf, n, "%s/conv-tuned.txt", dir);
    else if (xdg && *xdg) snprintf(buf, n, "%s/netcl/conv-tuned.txt", xdg);
    else if (home && *home) snprintf(buf, n, "%s/.cache/netcl/conv-tuned.txt", home);
    else return NULL;
    return buf;
}

static void add(const char *key, nc_conv_algo a)
{
    entry *e = calloc(1, sizeof *e);
    if (!e) return;
    snprintf(e->key, sizeof e->key, "%s", key);
    e->algo = a;
    e->next = table;
    table = e;
}

/* "key algo" lines; unknown algorithms and malformed lines are skipped */
static void load_file(void)
{
    char path[512], line[512];
    loaded = 1;
    FILE *f = cache_path(path, sizeof path) ? fopen(path, "r") : NULL;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *sp = strrchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        sp[1 + strcspn(sp + 1, "\n")] = 0;
        nc_conv_algo a = nc_conv_algo_from_name(sp + 1);
        if (a < NC_CONV_ALGO_COUNT && a != NC_CONV_AUTO) add(line, a);
    }
    fclose(f);
}

static void append_file(const char *key, nc_conv_algo a)
{
    char path[512];
    FILE *f = cache_path(path, sizeof path) ? fopen(path, "a") : NULL;
    if (!f) return;   /* no writable cache: the result stays in memory */
    fprintf(f, "%s %s\n", key, nc_conv_algo_name(a));
    fclose(f);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* times one strategy on fresh inputs of the geometry (best of three) */
static double measure(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt, nc_conv_algo a)
{
    int64_t x[4] = {g->N, g->C, g->H, g->W}, y[4] = {g->N, g->O, g->OH, g->OW}, w[4] = {g->O, g->C / g->G, g->KH, g->KW};
    const int64_t *sa = pass == NC_CONV_PASS_DATA ? y : x, *sb = pass == NC_CONV_PASS_FWD || pass == NC_CONV_PASS_DATA ? w : y;
    netcl_tensor *ta = NULL, *tb = NULL, *r = NULL;
    double best = 1e30;
    if (netcl_tensor_full(&ta, dev, dt, 4, sa, 0.5) == NETCL_OK && netcl_tensor_full(&tb, dev, dt, 4, sb, 0.25) == NETCL_OK) {
        nc_conv_force_thread((int)a);
        for (int rep = 0; rep < 4; rep++) {
            double t0 = now();
            netcl_status st = nc_fwd_conv2d_pass(&r, g, pass, ta, tb);
            if (st == NETCL_OK) st = netcl_device_synchronize(dev);
            double t = now() - t0;
            netcl_tensor_release(r);
            r = NULL;
            if (st != NETCL_OK) { best = 1e30; break; }
            if (rep > 0 && t < best) best = t;   /* the first run compiles and warms up */
        }
        nc_conv_force_thread(-1);
    }
    netcl_tensor_release(ta);
    netcl_tensor_release(tb);
    return best;
}

nc_conv_algo nc_conv_tuned(netcl_device *dev, const nc_conv_args *g, nc_conv_pass pass, netcl_dtype dt)
{
    if (measuring) return NC_CONV_AUTO;
    char key[512];
    make_key(key, sizeof key, dev, g, pass, dt);
    pthread_mutex_lock(&lock);
    if (!loaded) load_file();
    /* a winner that no longer applies (a file from a build with other
     * rules) is passed over, and this geometry measured or planned again */
    for (entry *e = table; e; e = e->next)
        if (strcmp(e->key, key) == 0 && nc_conv_applicable(e->algo, g, pass)) { pthread_mutex_unlock(&lock); return e->algo; }
    pthread_mutex_unlock(&lock);
    if (!netcl_conv_benchmark()) return NC_CONV_AUTO;
    measuring = 1;
    nc_conv_algo best = NC_CONV_AUTO;
    double best_t = 1e30;
    const char *dbg = getenv("NETCL_DEBUG");
    for (int a = NC_CONV_DIRECT; a < NC_CONV_ALGO_COUNT; a++) {
        if (!nc_conv_applicable((nc_conv_algo)a, g, pass)) continue;
        double t = measure(dev, g, pass, dt, (nc_conv_algo)a);
        if (dbg && atoi(dbg) >= 1)
            fprintf(stderr, "netcl: conv tuner %s pass %d %s: %.3f ms\n", key, (int)pass, nc_conv_algo_name((nc_conv_algo)a),
                    t < 1e29 ? t * 1e3 : -1.0);
        if (t < best_t) { best_t = t; best = (nc_conv_algo)a; }
    }
    measuring = 0;
    if (best == NC_CONV_AUTO) return NC_CONV_AUTO;
    pthread_mutex_lock(&lock);
    add(key, best);
    append_file(key, best);
    pthread_mutex_unlock(&lock);
    return best;
}
