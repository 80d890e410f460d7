/* gemm_tune_cache.c — the GEMM tuning cache of each OpenCL device: winners of
 * netcl_tune_gemm per shape class, kept in memory and in one text file per
 * device under the program cache directory (gemm-<hash>.tune, the hash of
 * device name, driver and platform), one line per class:
 *
 *     float32 nn 4096:4096:4096 | tiled mwg=128 nwg=128 ... | 41.2 GFLOP/s at 4096x4096x4096
 *
 * The file is rewritten whole (tmp + rename) after every tuning, under an
 * exclusive lock on <file>.lock held from re-reading it to the rename, so
 * tuners in several processes neither see a half-written file nor drop
 * each other's entries; a file that fails to parse, or names another device, is ignored with a warning
 * on stderr (also returned by netcl_tune_cache_reload). */
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

nc_gemm_state *nc_gemm_state_of(nc_cl_device *cd)
{
    if (!cd->gemm) cd->gemm = calloc(1, sizeof *cd->gemm);
    return cd->gemm;
}

void nc_gemm_state_free(nc_cl_device *cd)
{
    if (!cd->gemm) return;
    if (cd->gemm->split_count) nc_cl.clReleaseMemObject(cd->gemm->split_count);
    free(cd->gemm->entries);
    free(cd->gemm);
    cd->gemm = NULL;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ULL; }
    return (h ^ 0x7c) * 0x100000001b3ULL;
}

/* The device's cache file path into buf; 0 without a cache directory. */
static int cache_path(netcl_device *dev, char *buf, size_t len)
{
    char dir[900];
    if (!nc_cl_cache_dir(dir, sizeof dir)) return 0;
    uint64_t h = hash_str(hash_str(hash_str(0xcbf29ce484222325ULL, dev->hw_name), dev->driver), dev->platform);
    snprintf(buf, len, "%s/gemm-%016llx.tune", dir, (unsigned long long)h);
    return 1;
}

static void device_line(netcl_device *dev, char *buf, size_t len)
{
    snprintf(buf, len, "# device: %s | driver: %s | platform: %s\n", dev->hw_name, dev->driver, dev->platform);
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t')) s[--n] = 0;
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t') i++;
    memmove(s, s + i, strlen(s + i) + 1);
}

/* Adds or replaces the entry for key. */
static int put_entry(nc_gemm_state *s, const char *key, const nc_gemm_cfg *cfg)
{
    for (int i = 0; i < s->nentries; i++)
        if (strcmp(s->entries[i].key, key) == 0) { s->entries[i].cfg = *cfg; return 1; }
    if (s->nentries == s->capentries) {
        int cap = s->capentries ? 2 * s->capentries : 16;
        nc_gemm_entry *e = realloc(s->entries, sizeof *e * (size_t)cap);
        if (!e) return 0;
        s->entries = e;
        s->capentries = cap;
    }
    snprintf(s->entries[s->nentries].key, sizeof s->entries[0].key, "%s", key);
    s->entries[s->nentries++].cfg = *cfg;
    return 1;
}

/* Parses the file into s's entries; returns "" or why it was ignored. */
static const char *parse_file(netcl_device *dev, FILE *f, nc_gemm_state *s, char *why, size_t len)
{
    char line[1024], want[600];
    device_line(dev, want, sizeof want);
    int lineno = 0, seen_device = 0;
    s->nentries = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (strncmp(line, "# device:", 9) == 0) {
            if (strcmp(line, want) != 0) { snprintf(why, len, "it was written for another device"); return why; }
            seen_device = 1;
            continue;
        }
        trim(line);
        if (!line[0] || line[0] == '#') continue;
        char *bar1 = strchr(line, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
        if (bar2) *bar2 = 0;
        nc_gemm_cfg cfg;
        if (!bar1 || (*bar1 = 0, trim(line), trim(bar1 + 1), !nc_gemm_cfg_parse(&cfg, bar1 + 1)) || strlen(line) >= 64 ||
            !line[0]) {
            snprintf(why, len, "line %d does not parse", lineno);
            s->nentries = 0;
            return why;
        }
        put_entry(s, line, &cfg);
    }
    if (!seen_device && s->nentries) { snprintf(why, len, "it has no device line"); s->nentries = 0; return why; }
    return "";
}

/* Loads the device's cache file once (again with force). */
static void load(netcl_device *dev, nc_gemm_state *s, int force)
{
    if (s->cache_loaded && !force) return;
    s->cache_loaded = 1;
    s->nentries = 0;
    s->cache_note[0] = 0;
    char path[1000];
    if (!cache_path(dev, path, sizeof path)) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char why[200];
    const char *note = parse_file(dev, f, s, why, sizeof why);
    fclose(f);
    if (*note) {
        snprintf(s->cache_note, sizeof s->cache_note, "netcl: ignoring the GEMM tuning cache %s: %s (retune with netcl --tune)",
                 path, note);
        fprintf(stderr, "%s\n", s->cache_note);
    }
}

int nc_gemm_tuned(const nc_gemm_call *g, nc_gemm_cfg *cfg)
{
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(g->dev));
    if (!s) return 0;
    load(g->dev, s, 0);
    if (!s->nentries) return 0;
    char key[64];
    nc_gemm_class_key(g, key, sizeof key);
    for (int i = 0; i < s->nentries; i++)
        if (strcmp(s->entries[i].key, key) == 0) { *cfg = s->entries[i].cfg; return 1; }
    return 0;
}

static netcl_status write_file(netcl_device *dev, nc_gemm_state *s, const char *path, const char *key, const char *note);

/* Records a winner and rewrites the file: entries of other classes, also
 * those another process stored meanwhile, are kept (read again under the
 * lock). Without a cache directory the entry lives in memory only. */
netcl_status nc_gemm_cache_store(netcl_device *dev, const char *key, const nc_gemm_cfg *cfg, const char *note)
{
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    if (!s) return nc_fail(NETCL_ERR_OOM, "tune: out of host memory");
    char path[1000], lock[1100];
    int have_path = cache_path(dev, path, sizeof path), fd = -1;
    if (have_path) {
        snprintf(lock, sizeof lock, "%s.lock", path);
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return nc_fail(NETCL_ERR_BACKEND, "tune: cannot open the lock file %s", lock);
        /* a file system without locks (some NFS) keeps the old behaviour:
         * a concurrent tuner's line may be lost, never a file half-written */
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    }
    load(dev, s, 1);
    netcl_status st = put_entry(s, key, cfg) ? NETCL_OK : nc_fail(NETCL_ERR_OOM, "tune: out of host memory");
    if (st == NETCL_OK && have_path) st = write_file(dev, s, path, key, note);
    if (fd >= 0) close(fd);   /* releases the lock */
    return st;
}

static netcl_status write_file(netcl_device *dev, nc_gemm_state *s, const char *path, const char *key, const char *note)
{
    char tmp[1100], line[600];
    /* notes of other entries are not kept in memory; keep them from the old file */
    FILE *old = fopen(path, "r");
    char (*notes)[160] = calloc((size_t)s->nentries, sizeof *notes);
    if (old && notes && !s->cache_note[0]) {
        while (fgets(line, sizeof line, old)) {
            char *b1 = strchr(line, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
            if (!b2 || line[0] == '#') continue;
            *b1 = 0;
            trim(line);
            trim(b2 + 1);
            for (int i = 0; i < s->nentries; i++)
                if (strcmp(s->entries[i].key, line) == 0) snprintf(notes[i], sizeof notes[i], "%s", b2 + 1);
        }
    }
    if (old) fclose(old);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) { free(notes); return nc_fail(NETCL_ERR_BACKEND, "tune: cannot write %s", tmp); }
    fprintf(f, "# netcl GEMM tuning cache (netcl --tune): <dtype> <layouts of a, w> <M:N:K buckets> | <configuration> | <measured>\n");
    device_line(dev, line, sizeof line);
    fputs(line, f);
    for (int i = 0; i < s->nentries; i++) {
        char c[200];
        nc_gemm_cfg_format(&s->entries[i].cfg, c, sizeof c);
        const char *n = strcmp(s->entries[i].key, key) == 0 ? note : notes ? notes[i] : "";
        fprintf(f, "%s | %s | %s\n", s->entries[i].key, c, n);
    }
    free(notes);
    int ok = fflush(f) == 0;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return nc_fail(NETCL_ERR_BACKEND, "tune: cannot write %s", path);
    }
    s->cache_note[0] = 0;
    return NETCL_OK;
}

/* ---- runtime entries (nc_be_runtime) ---------------------------------------------------------------------- */
static int is_opencl(const netcl_device *dev) { return dev && dev->type != NETCL_DEVICE_CPU && dev->impl; }

const char *nc_cl_tune_cache_path(netcl_device *dev)
{
    static _Thread_local char buf[1000];
    buf[0] = 0;
    if (is_opencl(dev) && !cache_path(dev, buf, sizeof buf)) buf[0] = 0;
    return buf;
}

const char *nc_cl_tune_cache_reload(netcl_device *dev)
{
    if (!is_opencl(dev)) return "";
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    if (!s) return "out of host memory";
    load(dev, s, 1);
    return s->cache_note;
}

netcl_status nc_cl_gemm_set_config(netcl_device *dev, const char *config)
{
    if (!dev) return nc_fail(NETCL_ERR_ARGUMENT, "gemm_set_config: no device");
    if (!is_opencl(dev)) return NETCL_OK;   /* the cpu backend has one kernel (or BLAS) */
    nc_gemm_state *s = nc_gemm_state_of(nc_cl_dev(dev));
    if (!s) return nc_fail(NETCL_ERR_OOM, "gemm_set_config: out of host memory");
    if (!config || !*config) { s->has_forced = 0; return NETCL_OK; }
    nc_gemm_cfg c;
    if (!nc_gemm_cfg_parse(&c, config))
        return nc_fail(NETCL_ERR_ARGUMENT, "gemm_set_config: cannot parse '%s' (e.g. \"tiled mwg=64 nwg=64 kwg=16 mdimc=8 "
                                           "ndimc=8 vwm=4 vwn=4 vw=4 pad=4\" or \"direct cmr=6 cnr=16 vw=16\")", config);
    s->forced = c;
    s->has_forced = 1;
    return NETCL_OK;
}
