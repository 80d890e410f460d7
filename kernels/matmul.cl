/* matmul.cl — batched out[b] = a[b] @ w[b]; a [B,M,K], w [B,K,N] with any
 * strides (batch stride 0 = broadcast), out [B,M,N] contiguous. Tiles of
 * TS x TS staged in local memory; each work item computes a WPT x WPT block
 * of outputs (work-group (TS/WPT) x (TS/WPT)). Accumulates in A_CT. */
#define TS 32
#define WPT 4
#define RTS (TS / WPT)

__kernel __attribute__((reqd_work_group_size(RTS, RTS, 1)))
void matmul_tiled(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
                  __global const A_T *w, long woff, long ws0, long ws1, long ws2, long M, long K, long N)
{
    __local A_CT at[TS][TS + 1];
    __local A_CT wt[TS][TS + 1];
    int tx = get_local_id(0), ty = get_local_id(1);
    long b = get_global_id(2);
    long col0 = get_group_id(0) * TS, row0 = get_group_id(1) * TS;
    A_CT acc[WPT][WPT];
    for (int i = 0; i < WPT; i++)
        for (int j = 0; j < WPT; j++) acc[i][j] = 0;
    long abase = aoff + b * as0, wbase = woff + b * ws0;
    for (long k0 = 0; k0 < K; k0 += TS) {
        for (int i = 0; i < WPT; i++) {
            for (int j = 0; j < WPT; j++) {
                /* neighbouring work items take neighbouring columns: coalesced loads */
                int r = ty + i * RTS, c = tx + j * RTS;
                long ar = row0 + r, ak = k0 + c;
                at[r][c] = (ar < M && ak < K) ? A_LOAD(a, abase + ar * as1 + ak * as2) : (A_CT)0;
                long wk = k0 + r, wc = col0 + c;
                wt[r][c] = (wk < K && wc < N) ? A_LOAD(w, wbase + wk * ws1 + wc * ws2) : (A_CT)0;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS; kk++) {
            A_CT wv[WPT];
            for (int j = 0; j < WPT; j++) wv[j] = wt[kk][tx + j * RTS];
            for (int i = 0; i < WPT; i++) {
                A_CT av = at[ty + i * RTS][kk];
                for (int j = 0; j < WPT; j++) acc[i][j] += av * wv[j];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WPT; i++) {
        long r = row0 + ty + i * RTS;
        for (int j = 0; j < WPT; j++) {
            long c = col0 + tx + j * RTS;
            if (r < M && c < N) O_STORE(out, ooff + (b * M + r) * N + c, acc[i][j]);
        }
    }
}
