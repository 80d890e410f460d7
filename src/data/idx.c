/* idx.c — the IDX reader (MNIST / Fashion-MNIST files) through zlib, which
 * reads gzip and plain files alike. Big-endian payloads are converted to
 * host order; the result is a cpu tensor owned by the caller. */
#include "core/core.h"
#include <stdint.h>
#include <stdio.h>
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

/* The bytes the file holds once decompressed: a plain file's size, or a
 * gzip file's recorded size modulo 2^32 (its last four bytes); -1 when it
 * cannot be told. *mod32: the answer is modulo 2^32; *packed: the file's
 * own size (what bounds a gzip file's content). */
static int64_t stored_bytes(const char *path, int *mod32, int64_t *packed)
{
    *mod32 = 0;
    *packed = -1;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char head[2] = {0, 0}, tail[4];
    int64_t n = -1;
    *mod32 = fread(head, 1, 2, f) == 2 && head[0] == 0x1f && head[1] == 0x8b;
    if (fseek(f, 0, SEEK_END) == 0) *packed = ftell(f);
    if (fseek(f, *mod32 ? -4 : 0, SEEK_END) == 0) {
        if (!*mod32) n = ftell(f);
        else if (fread(tail, 1, 4, f) == 4)
            n = (int64_t)((uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24);
    }
    fclose(f);
    return n;
}

/* deflate expands a byte into at most 1032 (its longest match per code) */
#define DEFLATE_MAX_RATIO 1032

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
    /* the header's shape must match what the file holds before anything is allocated */
    uint64_t want = 4 + 4 * (uint64_t)ndim, count = 1;
    int too_big = 0;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] && count > UINT64_MAX / (uint64_t)sizes[d]) too_big = 1;
        else count *= (uint64_t)sizes[d];
    }
    if (!too_big && count > (UINT64_MAX - want) / (uint64_t)disk_size) too_big = 1;
    want += count * (uint64_t)disk_size;
    int mod32 = 0;
    int64_t packed, have = stored_bytes(path, &mod32, &packed);
    /* gzip's record is modulo 2^32: a claim past what the packed bytes can
     * expand to is refused before allocating it */
    if (!too_big && mod32 && packed >= 0 && want > (uint64_t)packed * DEFLATE_MAX_RATIO + 64)
        return nc_fail(NETCL_ERR_ARGUMENT, "read_idx %s: the header's shape %s needs %llu bytes, more than a gzip file of "
                       "%lld bytes can hold (truncated, or not an IDX file)",
                       path, nc_shape_str(ndim, sizes), (unsigned long long)want, (long long)packed);
    if (too_big || (have >= 0 && (mod32 ? (want & 0xffffffffu) != (uint64_t)have : want != (uint64_t)have)))
        return nc_fail(NETCL_ERR_ARGUMENT, "read_idx %s: the header's shape %s needs %s%llu bytes, the file holds %lld%s "
                       "(truncated, or not an IDX file)",
                       path, nc_shape_str(ndim, sizes), too_big ? "more than " : "", (unsigned long long)(too_big ? UINT64_MAX : want),
                       (long long)have, mod32 ? " (modulo 2^32, as gzip records it)" : "");
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
