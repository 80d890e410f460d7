/* rng.c — the global counter-based generator: a seed and an offset into
 * the Philox4x32-10 stream (base/philox.c has the formulas). */
#include "core/core.h"

static uint64_t rng_seed = 0x853c49e6748fea9bULL, rng_offset;

void netcl_rng_seed(uint64_t seed) { rng_seed = seed; rng_offset = 0; }
uint64_t netcl_rng_get_seed(void) { return rng_seed; }
uint64_t netcl_rng_get_offset(void) { return rng_offset; }
void netcl_rng_set_offset(uint64_t offset) { rng_offset = offset; }

/* Takes n counters from the global stream; returns the first. */
uint64_t nc_rng_take(uint64_t n)
{
    uint64_t first = rng_offset;
    rng_offset += n;
    return first;
}
