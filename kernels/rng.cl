/* rng.cl — Philox4x32-10 draws, bit-identical in their 32-bit words to the
 * C reference (src/rng.c): element i uses counter offset + i, key = seed.
 * -DKIND=0 uniform [p1, p2), 1 normal (mean p1, std p2), 2 randint [lo, hi). */
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

#if KIND == 2
__kernel void rng_fill(__global O_T *out, long off, long n, ulong seed, ulong offset, long lo, long hi)
{
    ulong range = (ulong)(hi - lo);
    GRID_LOOP(i, n) {
        uint4 w = philox(offset + (ulong)i, seed);
        ulong v = ((ulong)w.y << 32) | w.x;
        O_STORE(out, off + i, lo + (long)(range ? v % range : 0));
    }
}
#else
__kernel void rng_fill(__global O_T *out, long off, long n, ulong seed, ulong offset, float p1, float p2)
{
    GRID_LOOP(i, n) {
        uint4 w = philox(offset + (ulong)i, seed);
#if KIND == 0
        float u = (float)(w.x >> 8) * (1.0f / 16777216.0f);
        O_STORE(out, off + i, p1 + (p2 - p1) * u);
#else
        float u1 = (float)((w.x >> 8) + 1) * (1.0f / 16777216.0f);
        float u2 = (float)(w.y >> 8) * (1.0f / 16777216.0f);
        O_STORE(out, off + i, p1 + p2 * sqrt(-2.0f * log(u1)) * cos(6.283185307179586f * u2));
#endif
    }
}
#endif
