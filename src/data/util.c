/* util.c — cpu-only helpers of the data loader: seeded permutations and key
 * mixing (the determinism rule of docs/data.md), stacking samples into a
 * batch, gathering rows by index, and directory listings for ImageFolder. */
#include "ops/ops.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t splitmix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

uint64_t netcl_data_mix(uint64_t seed, uint64_t a, uint64_t b) { return splitmix(splitmix(splitmix(seed) ^ a) ^ b); }

netcl_status netcl_data_permutation(int64_t *out, int64_t n, uint64_t seed, uint64_t stream)
{
    if (n < 0 || n >= ((int64_t)1 << 32))
        return nc_fail(NETCL_ERR_ARGUMENT, "permutation: length %lld out of range (0..2^32-1)", (long long)n);
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        uint32_t w[4];
        nc_philox((stream << 32) + (uint64_t)i, seed, w);
        int64_t j = (int64_t)((((uint64_t)w[1] << 32) | w[0]) % (uint64_t)(i + 1));
        int64_t t = out[i]; out[i] = out[j]; out[j] = t;
    }
    return NETCL_OK;
}

netcl_status netcl_data_stack(netcl_tensor **out, int n, netcl_tensor *const *items)
{
    *out = NULL;
    if (n < 1) return nc_fail(NETCL_ERR_ARGUMENT, "stack: no tensors to stack");
    const netcl_tensor *t0 = items[0];
    if (t0->ndim >= NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "stack: items have %d dims; a batch of them would pass %d", t0->ndim, NC_MAX_DIMS);
    for (int i = 1; i < n; i++) {
        const netcl_tensor *t = items[i];
        if (t->dtype != t0->dtype || t->ndim != t0->ndim || memcmp(t->sizes, t0->sizes, sizeof(int64_t) * (size_t)t->ndim))
            return nc_fail(NETCL_ERR_ARGUMENT, "stack: item %d is %s but item 1 is %s (every sample's field must agree)",
                           i + 1, nc_describe(t), nc_describe(t0));
    }
    int64_t sizes[NC_MAX_DIMS];
    sizes[0] = n;
    memcpy(sizes + 1, t0->sizes, sizeof(int64_t) * (size_t)t0->ndim);
    netcl_device *cpu;
    NC_TRY(netcl_device_get(&cpu, "cpu"));
    NC_TRY(nc_tensor_new(out, cpu, t0->dtype, t0->ndim + 1, sizes));
    int64_t bytes = netcl_tensor_numel(t0) * netcl_dtype_size(t0->dtype);
    char *dst = (*out)->storage->buf;
    for (int i = 0; i < n && bytes > 0; i++) {
        const netcl_tensor *t = items[i];
        netcl_status st;
        if (nc_dev(t) == cpu && netcl_tensor_is_contiguous(t)) {
            memcpy(dst + (size_t)i * (size_t)bytes, (char *)t->storage->buf + (size_t)t->offset * (size_t)netcl_dtype_size(t->dtype),
                   (size_t)bytes);
            continue;
        }
        if ((st = netcl_tensor_to_host(t, dst + (size_t)i * (size_t)bytes, bytes)) != NETCL_OK) {
            netcl_tensor_release(*out);
            *out = NULL;
            nc_error_prefix("stack item %d: ", i + 1);
            return st;
        }
    }
    return NETCL_OK;
}

netcl_status netcl_data_gather(netcl_tensor **out, netcl_tensor *t, int64_t n, const int64_t *indices)
{
    *out = NULL;
    if (nc_dev(t)->type != NETCL_DEVICE_CPU)
        return nc_fail(NETCL_ERR_DEVICE, "gather: %s must be on cpu", nc_describe(t));
    if (t->ndim < 1) return nc_fail(NETCL_ERR_ARGUMENT, "gather: %s has no dim to index", nc_describe(t));
    if (n < 0) return nc_fail(NETCL_ERR_ARGUMENT, "gather: negative count %lld", (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= t->sizes[0])
            return nc_fail(NETCL_ERR_ARGUMENT, "gather: index %lld (0-based) out of range for dim 1 of %s",
                           (long long)indices[i], nc_describe(t));
    netcl_tensor *c;
    NC_TRY(nc_fwd_tensor_contiguous(&c, t));
    int64_t sizes[NC_MAX_DIMS];
    memcpy(sizes, c->sizes, sizeof(int64_t) * (size_t)c->ndim);
    sizes[0] = n;
    netcl_status st = nc_tensor_new(out, nc_dev(c), c->dtype, c->ndim, sizes);
    if (st == NETCL_OK) {
        size_t row = (size_t)(c->sizes[0] ? netcl_tensor_numel(c) / c->sizes[0] : 0) * (size_t)netcl_dtype_size(c->dtype);
        const char *src = (const char *)c->storage->buf + (size_t)c->offset * (size_t)netcl_dtype_size(c->dtype);
        char *dst = (*out)->storage->buf;
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * row, src + (size_t)indices[i] * row, row);
    }
    netcl_tensor_release(c);
    return st;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Collects the entries of `path` (directories get a trailing '/'). */
static netcl_status collect(const char *path, char ***names, int64_t *count)
{
    DIR *d = opendir(path);
    if (!d) return nc_fail(NETCL_ERR_ARGUMENT, "list_dir: cannot open directory %s: %s", path, strerror(errno));
    int64_t cap = 64, n = 0;
    char **v = malloc(sizeof(char *) * (size_t)cap);
    struct dirent *e;
    netcl_status st = v ? NETCL_OK : nc_fail(NETCL_ERR_OOM, "list_dir: out of host memory");
    while (st == NETCL_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            char full[4096];
            struct stat sb;
            snprintf(full, sizeof full, "%s/%s", path, e->d_name);
            is_dir = stat(full, &sb) == 0 && S_ISDIR(sb.st_mode);
        }
        if (n == cap) {
            char **nv = realloc(v, sizeof(char *) * (size_t)(cap *= 2));
            if (!nv) { st = nc_fail(NETCL_ERR_OOM, "list_dir: out of host memory"); break; }
            v = nv;
        }
        size_t len = strlen(e->d_name);
        if (!(v[n] = malloc(len + 2))) { st = nc_fail(NETCL_ERR_OOM, "list_dir: out of host memory"); break; }
        memcpy(v[n], e->d_name, len);
        if (is_dir) v[n][len++] = '/';
        v[n][len] = 0;
        n++;
    }
    closedir(d);
    *names = v;
    *count = n;
    return st;
}

netcl_status netcl_fs_list_dir(const char *path, char *buf, int64_t buflen, int64_t *needed)
{
    char **names = NULL;
    int64_t n = 0, total = 0;
    netcl_status st = collect(path, &names, &n);
    if (st == NETCL_OK) {
        qsort(names, (size_t)n, sizeof(char *), by_name);
        for (int64_t i = 0; i < n; i++) total += (int64_t)strlen(names[i]) + 1;
        *needed = total;
        if (buf && buflen >= total)
            for (int64_t i = 0, off = 0; i < n; i++) {
                size_t len = strlen(names[i]) + 1;
                memcpy(buf + off, names[i], len);
                off += (int64_t)len;
            }
    }
    for (int64_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}
