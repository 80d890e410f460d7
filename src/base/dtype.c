/* dtype.c — dtype names, sizes, promotion and host-side element access,
 * including software float16/bfloat16 conversion (round to nearest even). */
#include "base/base.h"
#include <math.h>
#include <string.h>

static const char *const dtype_names[NETCL_DTYPE_COUNT] = {
    "float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool"};
static const int dtype_sizes[NETCL_DTYPE_COUNT] = {4, 2, 2, 8, 4, 8, 1, 1};

const char *netcl_dtype_name(netcl_dtype dt)
{
    return (unsigned)dt < NETCL_DTYPE_COUNT ? dtype_names[dt] : "invalid-dtype";
}

int netcl_dtype_size(netcl_dtype dt)
{
    return (unsigned)dt < NETCL_DTYPE_COUNT ? dtype_sizes[dt] : 0;
}

netcl_dtype netcl_dtype_from_name(const char *name)
{
    static const struct { const char *alias; netcl_dtype dt; } aliases[] = {
        {"float", NETCL_DTYPE_FLOAT32}, {"half", NETCL_DTYPE_FLOAT16},
        {"double", NETCL_DTYPE_FLOAT64}, {"int", NETCL_DTYPE_INT32},
        {"long", NETCL_DTYPE_INT64}, {"byte", NETCL_DTYPE_UINT8},
        {"bf16", NETCL_DTYPE_BFLOAT16}, {"fp16", NETCL_DTYPE_FLOAT16},
    };
    if (!name) return NETCL_DTYPE_COUNT;
    for (int i = 0; i < NETCL_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0) return (netcl_dtype)i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) return aliases[i].dt;
    return NETCL_DTYPE_COUNT;
}

bool nc_dtype_is_float(netcl_dtype dt)
{
    return dt == NETCL_DTYPE_FLOAT32 || dt == NETCL_DTYPE_FLOAT16 ||
           dt == NETCL_DTYPE_BFLOAT16 || dt == NETCL_DTYPE_FLOAT64;
}

/* Rank for promotion: bool < uint8 < int32 < int64 < bf16/f16 < f32 < f64;
 * f16 with bf16 meets at f32 (as PyTorch). */
static int rank(netcl_dtype dt)
{
    switch (dt) {
    case NETCL_DTYPE_BOOL: return 0;
    case NETCL_DTYPE_UINT8: return 1;
    case NETCL_DTYPE_INT32: return 2;
    case NETCL_DTYPE_INT64: return 3;
    case NETCL_DTYPE_FLOAT16: case NETCL_DTYPE_BFLOAT16: return 4;
    case NETCL_DTYPE_FLOAT32: return 5;
    case NETCL_DTYPE_FLOAT64: return 6;
    default: return -1;
    }
}

netcl_dtype nc_dtype_promote(netcl_dtype a, netcl_dtype b)
{
    if (a == b) return a;
    if ((a == NETCL_DTYPE_FLOAT16 && b == NETCL_DTYPE_BFLOAT16) ||
        (a == NETCL_DTYPE_BFLOAT16 && b == NETCL_DTYPE_FLOAT16))
        return NETCL_DTYPE_FLOAT32;
    return rank(a) >= rank(b) ? a : b;
}

float nc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: value = man * 2^-24 */
            float f = (float)man * 5.9604644775390625e-8f;
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t nc_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan */
        return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
    if (absx >= 0x477ff000u) return sign | 0x7c00; /* rounds to >= 65520: overflow */
    if (absx < 0x38800000u) { /* below the smallest normal: subnormal or zero */
        float a;
        memcpy(&a, &absx, 4);
        /* scale so the subnormal unit is 1, then round to nearest even */
        float scaled = a * 16777216.0f; /* 2^24 */
        uint16_t m = (uint16_t)lrintf(scaled);
        return sign | m;
    }
    uint32_t exp = ((absx >> 23) - 112) << 10, man = (absx >> 13) & 0x3ff;
    uint32_t rest = absx & 0x1fff, h = exp | man;
    if (rest > 0x1000 || (rest == 0x1000 && (man & 1))) h++;
    return sign | (uint16_t)h;
}

float nc_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t nc_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double nc_load_double(const void *base, netcl_dtype dt, int64_t i)
{
    switch (dt) {
    case NETCL_DTYPE_FLOAT32: return ((const float *)base)[i];
    case NETCL_DTYPE_FLOAT16: return nc_half_to_float(((const uint16_t *)base)[i]);
    case NETCL_DTYPE_BFLOAT16: return nc_bf16_to_float(((const uint16_t *)base)[i]);
    case NETCL_DTYPE_FLOAT64: return ((const double *)base)[i];
    case NETCL_DTYPE_INT32: return ((const int32_t *)base)[i];
    case NETCL_DTYPE_INT64: return (double)((const int64_t *)base)[i];
    case NETCL_DTYPE_UINT8: return ((const uint8_t *)base)[i];
    case NETCL_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: return 0;
    }
}

/* Float to integer conversion truncates toward zero and saturates, so an
 * out-of-range value never invokes undefined behaviour. */
static int64_t to_int64(double v, double lo, double hi)
{
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void nc_store_double(void *base, netcl_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case NETCL_DTYPE_FLOAT32: ((float *)base)[i] = (float)v; break;
    case NETCL_DTYPE_FLOAT16: ((uint16_t *)base)[i] = nc_float_to_half((float)v); break;
    case NETCL_DTYPE_BFLOAT16: ((uint16_t *)base)[i] = nc_float_to_bf16((float)v); break;
    case NETCL_DTYPE_FLOAT64: ((double *)base)[i] = v; break;
    case NETCL_DTYPE_INT32: ((int32_t *)base)[i] = (int32_t)to_int64(v, -2147483648.0, 2147483647.0); break;
    case NETCL_DTYPE_INT64: ((int64_t *)base)[i] = to_int64(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case NETCL_DTYPE_UINT8: ((uint8_t *)base)[i] = (uint8_t)to_int64(v, 0, 255); break;
    case NETCL_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    default: break;
    }
}
