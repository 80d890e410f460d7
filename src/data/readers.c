/* readers.c — CIFAR-10/100 binary batches and PNG images (libpng's
 * simplified API, which reports errors by return value, so no longjmp
 * crosses netcl's API). Results are new cpu tensors owned by the caller;
 * every failure names the path and what is wrong. */
#include "core/core.h"
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CIFAR_PIXELS 3072

netcl_status netcl_read_cifar(netcl_tensor **images, netcl_tensor **labels, const char *path, int label_bytes)
{
    *images = *labels = NULL;
    if (label_bytes != 1 && label_bytes != 2)
        return nc_fail(NETCL_ERR_ARGUMENT, "read_cifar %s: label_bytes must be 1 (CIFAR-10) or 2 (CIFAR-100), got %d",
                       path, label_bytes);
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(NETCL_ERR_ARGUMENT, "read_cifar: cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    long rec = label_bytes + CIFAR_PIXELS;
    netcl_status st = NETCL_OK;
    if (size <= 0 || size % rec != 0)
        st = nc_fail(NETCL_ERR_ARGUMENT, "read_cifar %s: %ld bytes is not a whole number of %ld-byte records "
                     "(truncated, or not a CIFAR-%s binary batch)", path, size, rec, label_bytes == 1 ? "10" : "100");
    int64_t n = size / rec, isz[4] = {n, 3, 32, 32}, lsz[2] = {n, label_bytes};
    netcl_device *cpu = NULL;
    if (st == NETCL_OK) st = netcl_device_get(&cpu, "cpu");
    if (st == NETCL_OK) st = nc_tensor_new(images, cpu, NETCL_DTYPE_UINT8, 4, isz);
    if (st == NETCL_OK) st = nc_tensor_new(labels, cpu, NETCL_DTYPE_UINT8, 2, lsz);
    unsigned char *buf = st == NETCL_OK ? malloc((size_t)rec) : NULL;
    if (st == NETCL_OK && !buf) st = nc_fail(NETCL_ERR_OOM, "read_cifar %s: out of host memory", path);
    for (int64_t i = 0; st == NETCL_OK && i < n; i++) {
        if (fread(buf, 1, (size_t)rec, f) != (size_t)rec) {
            st = nc_fail(NETCL_ERR_ARGUMENT, "read_cifar %s: short read at record %lld", path, (long long)i);
            break;
        }
        memcpy((unsigned char *)(*labels)->storage->buf + i * label_bytes, buf, (size_t)label_bytes);
        memcpy((unsigned char *)(*images)->storage->buf + i * CIFAR_PIXELS, buf + label_bytes, CIFAR_PIXELS);
    }
    free(buf);
    fclose(f);
    if (st != NETCL_OK) {
        netcl_tensor_release(*images);
        netcl_tensor_release(*labels);
        *images = *labels = NULL;
    }
    return st;
}

netcl_status netcl_image_read_png(netcl_tensor **out, const char *path)
{
    *out = NULL;
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path))
        return nc_fail(NETCL_ERR_ARGUMENT, "image.load %s: %s", path, img.message);
    /* keep the file's channels (color, alpha); always 8-bit, sRGB-coded */
    img.format &= PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA;
    int c = (int)PNG_IMAGE_SAMPLE_CHANNELS(img.format);
    int64_t h = img.height, w = img.width;
    size_t bytes = PNG_IMAGE_SIZE(img);
    unsigned char *hwc = malloc(bytes ? bytes : 1);
    if (!hwc) { png_image_free(&img); return nc_fail(NETCL_ERR_OOM, "image.load %s: out of host memory", path); }
    if (!png_image_finish_read(&img, NULL, hwc, 0, NULL)) {
        netcl_status st = nc_fail(NETCL_ERR_ARGUMENT, "image.load %s: %s", path, img.message);
        png_image_free(&img);
        free(hwc);
        return st;
    }
    int64_t sizes[3] = {c, h, w};
    netcl_device *cpu;
    netcl_status st = netcl_device_get(&cpu, "cpu");
    if (st == NETCL_OK) st = nc_tensor_new(out, cpu, NETCL_DTYPE_UINT8, 3, sizes);
    if (st == NETCL_OK) {
        unsigned char *chw = (*out)->storage->buf;
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                for (int k = 0; k < c; k++) chw[(k * h + y) * w + x] = hwc[(y * w + x) * c + k];
    }
    free(hwc);
    return st;
}

netcl_status netcl_image_write_png(const netcl_tensor *t, const char *path)
{
    int planar = t->ndim == 3;
    int64_t c = planar ? t->sizes[0] : 1, h = t->sizes[t->ndim - 2 >= 0 ? t->ndim - 2 : 0], w = t->sizes[t->ndim - 1];
    if (t->dtype != NETCL_DTYPE_UINT8 || (t->ndim != 2 && t->ndim != 3) || c < 1 || c > 4 || h < 1 || w < 1 ||
        h > 0x7fffffff || w > 0x7fffffff)
        return nc_fail(NETCL_ERR_ARGUMENT, "image.save %s: need a uint8 [C,H,W] (C = 1..4) or [H,W] tensor, got %s",
                       path, nc_describe(t));
    size_t n = (size_t)(c * h * w);
    unsigned char *chw = malloc(n), *hwc = malloc(n);
    netcl_status st = chw && hwc ? netcl_tensor_to_host(t, chw, (int64_t)n)
                                 : nc_fail(NETCL_ERR_OOM, "image.save %s: out of host memory", path);
    if (st == NETCL_OK) {
        for (int64_t k = 0; k < c; k++)
            for (int64_t i = 0; i < h * w; i++) hwc[i * c + k] = chw[k * h * w + i];
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        img.width = (png_uint_32)w;
        img.height = (png_uint_32)h;
        static const png_uint_32 formats[5] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
        img.format = formats[c];
        if (!png_image_write_to_file(&img, path, 0, hwc, 0, NULL))
            st = nc_fail(NETCL_ERR_ARGUMENT, "image.save %s: %s", path, img.message);
        png_image_free(&img);
    }
    free(chw);
    free(hwc);
    return st;
}
