/* access.c — the CPU backend's typed element access: one element of any
 * dtype as int64 (saturating from floats) and runs of strided elements
 * gathered into, or scattered from, a block of the compute type (float,
 * double, int64, bool/uint8) that the elementwise, reduction, optimizer and
 * GEMM loops work on. */
#include "cpu.h"

int64_t nc_cpu_load_i64(const void *base, netcl_dtype dt, int64_t i)
{
    switch (dt) {
    case NETCL_DTYPE_INT32: return ((const int32_t *)base)[i];
    case NETCL_DTYPE_INT64: return ((const int64_t *)base)[i];
    case NETCL_DTYPE_UINT8: return ((const uint8_t *)base)[i];
    case NETCL_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: { /* saturating like nc_store_double: a float to int never hits UB */
        double v = nc_load_double(base, dt, i);
        if (v != v) return 0;
        if (v <= -9223372036854775808.0) return INT64_MIN;
        if (v >= 9223372036854775807.0) return INT64_MAX;
        return (int64_t)v;
    }
    }
}

void nc_cpu_store_i64(void *base, netcl_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case NETCL_DTYPE_INT32: ((int32_t *)base)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case NETCL_DTYPE_INT64: ((int64_t *)base)[i] = v; break;
    case NETCL_DTYPE_UINT8: ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v; break;
    case NETCL_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    default: nc_store_double(base, dt, i, (double)v); break;
    }
}

/* Gathers n elements (stride step) into a block of the compute type. */
void nc_cpu_gather_f32(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, float *dst)
{
    if (dt == NETCL_DTYPE_FLOAT32) {
        const float *p = (const float *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = p[j * step];
    } else if (dt == NETCL_DTYPE_FLOAT16) {
        const uint16_t *p = (const uint16_t *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = nc_half_to_float(p[j * step]);
    } else if (dt == NETCL_DTYPE_BFLOAT16) {
        const uint16_t *p = (const uint16_t *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = nc_bf16_to_float(p[j * step]);
    } else {
        for (int64_t j = 0; j < n; j++) dst[j] = (float)nc_load_double(base, dt, off + j * step);
    }
}

void nc_cpu_scatter_f32(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const float *src)
{
    if (dt == NETCL_DTYPE_FLOAT32) {
        float *p = (float *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = src[j];
    } else if (dt == NETCL_DTYPE_FLOAT16) {
        uint16_t *p = (uint16_t *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = nc_float_to_half(src[j]);
    } else if (dt == NETCL_DTYPE_BFLOAT16) {
        uint16_t *p = (uint16_t *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = nc_float_to_bf16(src[j]);
    } else {
        for (int64_t j = 0; j < n; j++) nc_store_double(base, dt, off + j * step, src[j]);
    }
}

void nc_cpu_gather_f64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, double *dst)
{
    if (dt == NETCL_DTYPE_FLOAT64) {
        const double *p = (const double *)base + off;
        for (int64_t j = 0; j < n; j++) dst[j] = p[j * step];
    } else {
        for (int64_t j = 0; j < n; j++) dst[j] = nc_load_double(base, dt, off + j * step);
    }
}

void nc_cpu_scatter_f64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const double *src)
{
    if (dt == NETCL_DTYPE_FLOAT64) {
        double *p = (double *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = src[j];
    } else {
        for (int64_t j = 0; j < n; j++) nc_store_double(base, dt, off + j * step, src[j]);
    }
}

void nc_cpu_gather_i64(const void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, int64_t *dst)
{
    for (int64_t j = 0; j < n; j++) dst[j] = nc_cpu_load_i64(base, dt, off + j * step);
}

void nc_cpu_scatter_i64(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const int64_t *src)
{
    for (int64_t j = 0; j < n; j++) nc_cpu_store_i64(base, dt, off + j * step, src[j]);
}

void nc_cpu_scatter_u8(void *base, netcl_dtype dt, int64_t off, int64_t step, int64_t n, const uint8_t *src)
{
    if (dt == NETCL_DTYPE_BOOL || dt == NETCL_DTYPE_UINT8) {
        uint8_t *p = (uint8_t *)base + off;
        for (int64_t j = 0; j < n; j++) p[j * step] = src[j];
    } else {
        for (int64_t j = 0; j < n; j++) nc_cpu_store_i64(base, dt, off + j * step, src[j]);
    }
}
