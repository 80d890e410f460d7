/* readers.c — CIFAR-10/100 binary batches (labels checked against the
 * format's classes) and PNG images (read through libpng with its errors
 * caught in the reader's own frame; written through its simplified API).
 * Results are new cpu tensors owned by the caller; every failure names the
 * path and what is wrong. */
#include "core/core.h"
#include <errno.h>
#include <png.h>
#include <setjmp.h>
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
        /* CIFAR-10: a class 0..9; CIFAR-100: coarse 0..19, fine 0..99 */
        if (buf[0] >= (label_bytes == 1 ? 10 : 20) || (label_bytes == 2 && buf[1] >= 100)) {
            st = label_bytes == 1
                     ? nc_fail(NETCL_ERR_ARGUMENT, "read_cifar %s: record %lld has label %d (CIFAR-10 labels are 0..9): "
                               "not a CIFAR-10 batch", path, (long long)i, buf[0])
                     : nc_fail(NETCL_ERR_ARGUMENT, "read_cifar %s: record %lld has labels %d, %d (CIFAR-100's are 0..19 "
                               "and 0..99): not a CIFAR-100 batch", path, (long long)i, buf[0], buf[1]);
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

/* libpng reports errors by longjmp: this frame catches them, so none
 * crosses netcl's API. The samples are the file's own (no gamma or colour
 * conversion); 16-bit samples keep their high byte, palettes and low bit
 * depths expand to 8 bits, transparency becomes an alpha channel. */
static void png_fail(png_structp png, png_const_charp msg)
{
    char *why = png_get_error_ptr(png);
    snprintf(why, 200, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

netcl_status netcl_image_read_png(netcl_tensor **out, const char *path)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return nc_fail(NETCL_ERR_ARGUMENT, "image.load %s: %s", path, strerror(errno));
    char why[200] = "not a PNG file";
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, why, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *volatile hwc = NULL;
    png_bytep *volatile rows = NULL;
    netcl_status st = NETCL_OK;
    if (!info) {
        st = nc_fail(NETCL_ERR_OOM, "image.load %s: out of host memory", path);
    } else if (setjmp(png_jmpbuf(png))) {
        st = nc_fail(NETCL_ERR_ARGUMENT, "image.load %s: %s", path, why);
    } else {
        png_init_io(png, f);
        png_read_info(png, info);
        png_set_expand(png);   /* palette -> RGB, gray below 8 bits -> 8, tRNS -> alpha */
        png_set_strip_16(png);
        png_read_update_info(png, info);
        int c = png_get_channels(png, info);
        int64_t h = png_get_image_height(png, info), w = png_get_image_width(png, info);
        size_t rowbytes = png_get_rowbytes(png, info);
        hwc = malloc(rowbytes * (size_t)h + 1);
        rows = malloc(sizeof *rows * (size_t)(h ? h : 1));
        if (!hwc || !rows) {
            st = nc_fail(NETCL_ERR_OOM, "image.load %s: out of host memory", path);
        } else {
            for (int64_t y = 0; y < h; y++) rows[y] = hwc + (size_t)y * rowbytes;
            png_read_image(png, rows);
            int64_t sizes[3] = {c, h, w};
            netcl_device *cpu;
            st = netcl_device_get(&cpu, "cpu");
            if (st == NETCL_OK) st = nc_tensor_new(out, cpu, NETCL_DTYPE_UINT8, 3, sizes);
            if (st == NETCL_OK) {
                unsigned char *chw = (*out)->storage->buf;
                for (int64_t y = 0; y < h; y++)
                    for (int64_t x = 0; x < w; x++)
                        for (int k = 0; k < c; k++) chw[(k * h + y) * w + x] = rows[y][x * c + k];
            }
        }
    }
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    free(hwc);
    free(rows);
    fclose(f);
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
