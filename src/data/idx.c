/* idx.c — the IDX reader (MNIST / Fashion-MNIST files) through zlib, which
 * reads gzip and plain files alike. Big-endian payloads are converted to
 * host order; the result is a cpu tensor owned by the caller. */
#include "core/core.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static netcl_status read_exact(gzFile f, const char *path, void *dst, size_t n, const char *what)
{
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(f, (char *)dst + got, chunk);
        if (r <= 0) {
            int zerr = 0;
            const char *msg = r < 0 ? gzerror(f, &zerr) : "unexpected end of file";
            return nc_fail(NETCL_ERR_ARGUMENT, "read_idx %s: truncated or corrupt while reading %s (%zu of %zu bytes): %s",
                           path, what, got, n, msg);
        }
        got += (size_t)r;
    }
    return NETCL_OK;
}

static void swap_bytes(unsigned char *p, int64_t n, int es)
{
    for (int64_t i = 0; i < n; i++, p += es)
        for (int a = 0, b = es - 1; a < b; a++, b--) { unsigned char t = p[a]; p[a] = p[b]; p[b] = t; }
}

/* element code -> (on-disk size, netcl dtype) */
static int idx_type(int code, int *disk_size, netcl_dtype *dt)
{
    switch (code) {
    case 0x08: *disk_size = 1; *dt = NETCL_DTYPE_UINT8; return 1;
    case 0x09: *disk_size = 1; *dt = NETCL_DTYPE_INT32; return 1;
    case 0x0B: *disk_size = 2; *dt = NETCL_DTYPE_INT32; return 1;
    case 0x0C: *disk_size = 4; *dt = NETCL_DTYPE_INT32; return 1;
    case 0x0D: *disk_size = 4; *dt = NETCL_DTYPE_FLOAT32; return 1;
    case 0x0E: *disk_size = 8; *dt = NETCL_DTYPE_FLOAT64; return 1;
    default: return 0;
    }
}

/* widens int8/int16 payloads (already host order) to int32 in place, back to front */
static void widen(void *buf, int64_t n, int code)
{
    int32_t *dst = buf;
    for (int64_t i = n - 1; i >= 0; i--) {
        if (code == 0x09) dst[i] = ((int8_t *)buf)[i];
        else if (code == 0x0B) dst[i] = ((int16_t *)buf)[i];
    }
}

static netcl_status read_body(gzFile f, const char *path, netcl_tensor **out)
{
    unsigned char magic[4];
    NC_TRY(read_exact(f, path, magic, 4, "the magic number"));
    int disk_size, ndim = magic[3];
    netcl_dtype dt;
    if (magic[0] || magic[1] || !idx_type(magic[2], &disk_size, &dt) || ndim < 1 || ndim > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_ARGUMENT, "read_idx %s: not an IDX file (magic %02x %02x %02x %02x)",
                       path, magic[0], magic[1], magic[2], magic[3]);
    int64_t sizes[NC_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        unsigned char b[4];
        NC_TRY(read_exact(f, path, b, 4, "the dimensions"));
        sizes[d] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
    }
    netcl_device *cpu;
    NC_TRY(netcl_device_get(&cpu, "cpu"));
    NC_TRY(netcl_tensor_empty(out, cpu, dt, ndim, sizes));
    int64_t n = netcl_tensor_numel(*out);
    void *data = (*out)->storage->buf;
    netcl_status st = read_exact(f, path, data, (size_t)n * (size_t)disk_size, "the data");
    if (st == NETCL_OK) {
        if (disk_size > 1) swap_bytes(data, n, disk_size);
        if (magic[2] == 0x09 || magic[2] == 0x0B) widen(data, n, magic[2]);
        unsigned char extra;
        if (gzread(f, &extra, 1) > 0)
            st = nc_fail(NETCL_ERR_ARGUMENT, "read_idx %s: trailing bytes after %lld elements of shape %s",
                         path, (long long)n, nc_shape_str(ndim, sizes));
    }
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

netcl_status netcl_read_idx(netcl_tensor **out, const char *path)
{
    *out = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f) return nc_fail(NETCL_ERR_ARGUMENT, "read_idx: cannot open %s", path);
    netcl_status st = read_body(f, path, out);
    gzclose(f);
    return st;
}
