/* philox.c — Philox4x32-10 and the per-element reference formulas that
 * every backend reproduces exactly (the stream rule in base.h). */
#include "base/base.h"
#include <math.h>

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

void nc_philox(uint64_t counter, uint64_t key, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

double nc_rng_value(netcl_rng_kind kind, uint64_t seed, uint64_t offset, int64_t i, double p1, double p2)
{
    uint32_t w[4];
    nc_philox(offset + (uint64_t)i, seed, w);
    switch (kind) {
    case NETCL_RNG_UNIFORM: {
        float u = (float)(w[0] >> 8) * (1.0f / 16777216.0f);
        return p1 + (p2 - p1) * u;
    }
    case NETCL_RNG_NORMAL: {
        float u1 = (float)((w[0] >> 8) + 1) * (1.0f / 16777216.0f);
        float u2 = (float)(w[1] >> 8) * (1.0f / 16777216.0f);
        return p1 + p2 * sqrt(-2.0 * log((double)u1)) * cos(6.283185307179586 * (double)u2);
    }
    case NETCL_RNG_RANDINT: {
        uint64_t range = (uint64_t)(p2 - p1);
        uint64_t v = ((uint64_t)w[1] << 32) | w[0];
        return p1 + (double)(range ? v % range : 0);
    }
    }
    return 0;
}
