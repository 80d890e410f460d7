/* random.cl — the random family's kernels: Philox4x32-10 draws,
 * bit-identical in their 32-bit words to the C reference
 * (src/base/philox.c): element i uses counter offset + i, key = seed.
 * -DKIND=0 uniform [p1, p2), 1 normal (mean p1, std p2), 2 randint [p1, p2). */
inline uint4 philox(ulong counter, ulong key)
{
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)key, k1 = (uint)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint lo0 = 0xD2511F53u * c0, hi0 = mul_hi(0xD2511F53u, c0);
        uint lo1 = 0xCD9E8D57u * c2, hi1 = mul_hi(0xCD9E8D57u, c2);
        uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (uint4)(c0, c1, c2, c3);
}

#if O_FLOAT
#define WIDE_STORE(p, i, v) O_STORE(p, i, v)
#else
#define WIDE_STORE(p, i, v) O_STORE(p, i, CAT(SAT_, TO)(v))
#endif

/* rng_fill: out[off + i] = draw i, for n elements; out contiguous. The
 * formulas are src/base/philox.c's, evaluated in WIDE_T (double where the device
 * has it, as the C reference does), so uniform and randint match the CPU
 * bit for bit and normal up to libm ulps. */
__kernel void rng_fill(__global O_T *out, long off, long n, ulong seed, ulong offset, WIDE_T p1, WIDE_T p2)
{
#if KIND == 2
    ulong range = (ulong)(p2 - p1);
#endif
    GRID_LOOP(i, n) {
        uint4 w = philox(offset + (ulong)i, seed);
#if KIND == 0
        float u = (float)(w.x >> 8) * (1.0f / 16777216.0f);
        WIDE_STORE(out, off + i, p1 + (p2 - p1) * (WIDE_T)u);
#elif KIND == 1
        float u1 = (float)((w.x >> 8) + 1) * (1.0f / 16777216.0f);
        float u2 = (float)(w.y >> 8) * (1.0f / 16777216.0f);
        WIDE_T r = sqrt((WIDE_T)-2.0f * log((WIDE_T)u1)) * cos((WIDE_T)6.283185307179586 * (WIDE_T)u2);
        WIDE_STORE(out, off + i, p1 + p2 * r);
#else
        ulong v = ((ulong)w.y << 32) | w.x;
        WIDE_STORE(out, off + i, p1 + (WIDE_T)(range ? v % range : 0));
#endif
    }
}
