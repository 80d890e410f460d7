/* gemm_round_tf32.cl — a float32 GEMM operand rounded to the nearest tf32
 * (ties away, as cvt.rna and cuBLAS) into a k-contiguous workspace, for
 * the tf32 wgmma GEMM, whose tensor cores would truncate
 * (src/backend/cl/gemm_tf32.c). out [R][K] (rows ldo apart) =
 * tf32(in[off + r sr + k sk]); with
 * -DRCONT (the input's rows adjacent: sr == 1) a 32 x 32 tile goes through
 * local memory so that reads and writes both run along memory. */

__kernel __attribute__((reqd_work_group_size(32, 8, 1)))
void round_tf32_2d(__global float *out, __global const float *in, long off, long sr, long sk, int R, int K, int ldo)
{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int k0 = get_group_id(0) * 32, r0 = get_group_id(1) * 32;
#ifdef RCONT
    __local float tile[32][33];   /* [k][r], padded against bank conflicts */
    for (int j = ty; j < 32; j += 8) {
        const int r = r0 + tx, k = k0 + j;
        tile[j][tx] = r < R && k < K ? in[off + r * sr + k * sk] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = ty; j < 32; j += 8) {
        const int r = r0 + j, k = k0 + tx;
        if (r < R && k < K) out[(long)r * ldo + k] = nearest_tf32(tile[tx][j]);
    }
#else
    for (int j = ty; j < 32; j += 8) {
        const int r = r0 + j, k = k0 + tx;
        if (r < R && k < K) out[(long)r * ldo + k] = nearest_tf32(in[off + r * sr + k * sk]);
    }
#endif
}
