/* gemm_mma_kernel.cl — the kernel of the tensor-core / FFMA / wgmma GEMM
 * family, last in the program "gemm+gemm_ffma+gemm_mma+gemm_wgmma+
 * gemm_mma_kernel": the options, layouts and loaders it uses are gemm_mma.cl's,
 * the FFMA reads gemm_ffma.cl's, the wgmma parts gemm_wgmma.cl's.
 */

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void gemm_mma(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
              __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K, int nbatch,
              EPI_PARAMS SPLIT_PARAMS ESCALE_PARAMS)
{
#ifdef WGMMA /* the swizzles follow address bits: stages aligned to their 8-row atoms */
    __local uchar smem[STAGES * STAGE_BYTES] __attribute__((aligned(1024)));
#else
    __local uchar smem[STAGES * STAGE_BYTES] __attribute__((aligned(128)));
#endif
#if defined(MMA_EMULATE) && !defined(FFMA) && !defined(WGMMA)
    __local float xa[WM * WN * 16 * KSTEP], xb[WM * WN * KSTEP * 8];
    __local int xo[WM * WN * 32];
#else
    const uint sbase = (uint)(ulong)smem;
#endif
#ifdef EPI_FLAGS
    flags = EPI_FLAGS;
    act = EPI_ACT;
#endif
    const int tid = get_local_id(0), warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
#if defined(FFMA) && !defined(NO_FFMA_VEC_STORE) && !defined(CONV_X) && !defined(CONV_W)
    const bool vec_out = (N & 3) == 0 && (ooff & 3) == 0;
#endif
#ifdef PAIR_STORE /* gemm_mma.cl */
    const bool pair_out = (N & 1) == 0 && (ooff & 1) == 0;   /* every (m, even n) starts an aligned pair */
#else
    const bool pair_out = false;
#endif
#ifdef STAGE_OUT
    const bool stage_out = (N & 7) == 0 && (ooff & 7) == 0;   /* rows of 16-byte chunks */
#endif
    const int lr = lane & 7, lj = lane >> 3, wm = warp / WN, wn = warp % WN;
    /* the loader's first chunk: row, chunk, local byte offset */
    const int Ar0 = tid / A_CPR, Ac0 = tid % A_CPR, As0 = AOFF(Ar0, Ac0);
    const int Br0 = tid / B_CPR, Bc0 = tid % B_CPR, Bs0 = BOFF(Br0, Bc0);
#ifdef FFMA
    /* lanes 8 (m) x 4 (n); a lane's rows lie 8 apart (4-row chunks 32
     * apart when m is contiguous), its columns 4 apart (4-column chunks 16
     * apart), so a warp's reads hit 8 (4) consecutive rows or chunks: one
     * bank group each under the swizzle, which repeats every 8 rows */
    const int lm = lane >> 2, ln = lane & 3;
    /* an operand whose k dim is contiguous: the lane's first row's byte
     * offset and swizzle key (chunk c sits at chunk c ^ key) */
#if A_KCONT
    const int fa0 = (wm * WTM + lm) * A_RB, fas = SWZ_KEY(A_CPR, wm * WTM + lm);
#endif
#if B_KCONT
    const int fb0[2] = {(wn * WTN + ln) * B_RB, (wn * WTN + ln + 4) * B_RB};
    const int fbs[2] = {SWZ_KEY(B_CPR, wn * WTN + ln), SWZ_KEY(B_CPR, wn * WTN + ln + 4)};
#endif
#elif defined(WGMMA)
    /* the descriptors of stage 0: this warp's warpgroup's rows of A, and B */
    const ulong wg_a0 = WG_A_DESC(WG_SBASE + (uint)(warp / 4) * MI * WG_ASLAB), wg_b0 = WG_B_DESC(WG_SBASE + A_BYTES);
#else
    /* each lane's ldmatrix row address (byte offset in its tile) per k-step,
     * or per fragment for the transposed loads: the swizzle depends on the
     * row only through its low bits, which the other terms leave alone */
#if A_KCONT
    int aoffs[BK / KSTEP];
    UNROLL for (int s = 0; s < BK / KSTEP; s++)
        aoffs[s] = TOFF(A_CPR, wm * WTM + lr + (lj & 1) * 8, s * KSTEP / CHUNK + (lj >> 1));
#elif TA != 0
    int aoffs[MI];
    UNROLL for (int i = 0; i < MI; i++)
        aoffs[i] = TOFF(A_CPR, lr + (lj >> 1) * 8, (wm * WTM + i * 16 + (lj & 1) * 8) / 8);
#else
    const int aoffs0 = t * A_RB + (wm * WTM + g) * 4;   /* padded: element (m, k) at k * A_RB + 4 m */
#endif
#if B_KCONT
    int boffs[BK / KSTEP];
    UNROLL for (int s = 0; s < BK / KSTEP; s++)
        boffs[s] = TOFF(B_CPR, wn * WTN + lr + (lj >> 1) * 8, s * KSTEP / CHUNK + (lj & 1));
#elif TA != 0
    int boffs[NI / 2];
    UNROLL for (int j = 0; j < NI / 2; j++)
        boffs[j] = TOFF(B_CPR, lr + (lj & 1) * 8, (wn * WTN + j * 16 + (lj >> 1) * 8) / 8);
#else
    const int boffs0 = t * B_RB + (wn * WTN + g) * 4;   /* padded: element (k, n) at k * B_RB + 4 n */
#endif
#endif /* FFMA */
#ifdef CONV_W
    const int Kall = K;   /* a slice's pixels: the last slice may hold fewer images */
#elif defined(SPLIT_SUM)
    const int Kall = K;   /* a slice's length; the last slice's is Klast */
#endif
    const int mtiles = (M + BM - 1) / BM, ntiles = (N + BN - 1) / BN;
    const int per_batch = mtiles * ntiles;
    for (long tile = get_group_id(0); tile < (long)per_batch * nbatch; tile += get_num_groups(0)) {
        /* raster: groups of GM m-tiles walk the n-tiles together */
        const int kb = (int)(tile / per_batch), r = (int)(tile % per_batch), width = GM * ntiles;
#ifdef SPLIT_SUM
        const int bb = 0;   /* batch kb is K slice kb of one output */
        const int K = kb == nbatch - 1 ? Klast : Kall;
#else
        const int bb = kb;
#endif
        const int first = (r / width) * GM, gsize = min(mtiles - first, GM);
        const int mt = first + (r % width) % gsize, nt = (r % width) / gsize;
        const int m0 = mt * BM, n0 = nt * BN;
        __global const ELEM *ap = (__global const ELEM *)(a + aoff + kb * as0) + (long)m0 * (A_KCONT ? as1 : 1);
        __global const ELEM *bp = (__global const ELEM *)(w + woff + kb * bs0) + (long)n0 * (B_KCONT ? bs2 : 1);
#ifdef CONV_W
        const int K = max(0, min(Kall, (CV_N - bb * CV_IP) * CV_L));
#endif
        const int ktiles = (K + BK - 1) / BK;
        const bool inner = m0 + BM <= M && n0 + BN <= N;
        /* this thread's first chunks and the byte steps between its chunks */
        __global const uchar *Ag = (__global const uchar *)(ap + (long)Ar0 * A_RSTRIDE + Ac0 * CHUNK);
        __global const uchar *Bg = (__global const uchar *)(bp + (long)Br0 * B_RSTRIDE + Bc0 * CHUNK);
        const long Ags = (long)A_RSTEP * A_RSTRIDE * ESZ, Bgs = (long)B_RSTEP * B_RSTRIDE * ESZ;
#ifdef CONV_X
        /* this thread's four pixels: input origin and offset (a pixel past
         * N gets an origin no tap brings inside) */
        __global const A_T *cx_x = w + woff;
        int cx_ih[4], cx_iw[4], cx_off[4];
        UNROLL for (int e = 0; e < 4; e++) {
            const int n_ = n0 + Bc0 * CHUNK + e, img = n_ / CV_L, p_ = n_ - img * CV_L, oh = p_ / CV_OW;
            cx_ih[e] = oh * CV_SH - CV_PH;
            cx_iw[e] = (p_ - oh * CV_OW) * CV_SW - CV_PW;
            cx_off[e] = img * (CV_C * CV_HW) + cx_ih[e] * CV_W + cx_iw[e];
            if (n_ >= N) cx_ih[e] = -(1 << 28);
        }
#elif defined(CONV_W)
        /* this thread's taps (rows of B's tile): offset from a pixel's
         * origin and the shift that must stay inside x (a tap past N never
         * fits) */
        __global const A_T *cx_x = w + woff;
        int cw_tap[NB], cw_dh[NB], cw_dw[NB];
        UNROLL for (int j = 0; j < NB; j++) {
            const int n_ = n0 + Br0 + j * B_RSTEP, c_ = n_ / CV_KK, t_ = n_ - c_ * CV_KK, kh_ = t_ / CV_KW;
            cw_dh[j] = kh_ * CV_DH;
            cw_dw[j] = (t_ - kh_ * CV_KW) * CV_DW;
            cw_tap[j] = c_ * CV_HW + cw_dh[j] * CV_W + cw_dw[j];
            if (n_ >= N) cw_dh[j] = -(1 << 28);
        }
#endif
#ifdef FFMA
        float acc[TM][TN];
        UNROLL for (int i = 0; i < TM; i++)
            UNROLL for (int j = 0; j < TN; j++) acc[i][j] = 0;
#else
        float acc[MI][NI][4];
        UNROLL for (int i = 0; i < MI; i++)
            UNROLL for (int j = 0; j < NI; j++)
                UNROLL for (int q = 0; q < 4; q++) acc[i][j][q] = 0;
#endif
        /* prologue: tiles 0 .. FETCH_AHEAD-1 in flight (a group per tile,
         * empty or not); FRAG_PIPE fills every stage, waits for the first
         * and loads its first fragments */
        UNROLL for (int s = 0; s < FETCH_AHEAD; s++) {
            const bool full = inner && (s + 1) * BK <= K;
            if (s < ktiles) LOAD_TILE(s * BK, s);
            CP_COMMIT();
        }
#ifdef WGMMA
        CP_WAIT(STAGES - 2);   /* this thread's part of tile 0 landed (WG_TURN) */
        WG_ROUND_OWN(0);
#endif
#ifdef FRAG_PIPE
        CP_WAIT(FETCH_AHEAD - 1);
        barrier(CLK_LOCAL_MEM_FENCE);
#ifdef FFMA
        FFMA_PA_DECL;
        FFMA_PB_DECL;
        FFMA_FETCH(0, 0);
#else
        uint afb[2][MI][4], bfb[2][NI][2];
        LOAD_FRAGS(afb[0], bfb[0], 0, 0);
#endif
#endif
        int rs = 0, ws = STAGES - 1;   /* the stages read and written next */
        /* The loop runs in two phases, unrolled into two copies: while the
         * tile fetched lies whole inside the operands (phase 0) its copies
         * need no bounds checks, and that copy of the loop carries none of
         * the edge code. One loop for both had the compiler predicate the
         * two copy paths into one stream, half again as many instructions
         * per k-tile around the mma (SASS; measurements:
         * docs/notes/kernels.md). -DNO_UNSWITCH keeps one loop. */
#ifdef NO_UNSWITCH
        const int kfast = 0;
#else
        const int kfast = inner ? max(0, K / BK - FETCH_AHEAD) : 0;
#endif
        int kt = 0;
        UNROLL for (int phase = 0; phase < 2; phase++)
        for (const int kend = phase == 0 ? kfast : ktiles; kt < kend; kt++) {
#ifdef WGMMA
            WG_TURN();
#elif !defined(FRAG_PIPE)
            PIPE_TURN(ws);   /* tile kt has landed; the stage read last round is free */
#endif
            const int sa = rs * STAGE_BYTES;
#if defined(FFMA) && defined(FRAG_PIPE)
            /* as the tensor cores' FRAG_PIPE below: the tile's last step
             * waits for the next tile, whose stage the barrier frees */
            UNROLL for (int k = 0; k < BK; k++) {
                if (k == BK - 1) {
                    PIPE_TURN(rs);
                    FFMA_FETCH(NEXT_STAGE(rs) * STAGE_BYTES, 0);
                } else {
                    FFMA_FETCH(sa, k + 1);
                }
                FFMA_STEP(k);
            }
#elif defined(FFMA)
            FFMA_TILE(smem + sa, smem + sa + A_BYTES);
#elif defined(WGMMA)
            /* the tile's k-steps as one group; while it runs, this
             * thread's part of the next tile lands and is rounded (tf32),
             * then the group is waited for: the next turn's barrier frees
             * this stage */
            WG_FENCE();
            UNROLL for (int s = 0; s < BK / KSTEP; s++)
                UNROLL for (int i = 0; i < MI; i++)
                    WG_MMA(acc[i], WG_STEP(wg_a0, sa + i * WG_ASLAB + s * WG_ASTEP), WG_STEP(wg_b0, sa + s * WG_BSTEP));
            WG_COMMIT();
            CP_WAIT(STAGES - 2);
            WG_ROUND_OWN(NEXT_STAGE(rs));
            WG_WAIT_ALL(acc);
#else
            UNROLL for (int s = 0; s < BK / KSTEP; s++) {
                uint af[MI][4], bf[NI][2];
#ifdef FRAG_PIPE
                /* this step's fragments were loaded a step ahead; load the
                 * next step's now, so their latency hides under this
                 * step's mma. Before the tile's last step: tile kt+1 must
                 * have landed, and after the barrier no warp reads tile
                 * kt's stage any more, so tile kt+STAGES takes it. */
                UNROLL for (int i = 0; i < MI; i++) UNROLL for (int q = 0; q < 4; q++) af[i][q] = afb[s & 1][i][q];
                UNROLL for (int j = 0; j < NI; j++) UNROLL for (int q = 0; q < 2; q++) bf[j][q] = bfb[s & 1][j][q];
                if (s == BK / KSTEP - 1) {
                    PIPE_TURN(rs);
                    LOAD_FRAGS(afb[(s + 1) & 1], bfb[(s + 1) & 1], NEXT_STAGE(rs) * STAGE_BYTES, 0);
                } else {
                    LOAD_FRAGS(afb[(s + 1) & 1], bfb[(s + 1) & 1], sa, s + 1);
                }
#else
                LOAD_FRAGS(af, bf, sa, s);
#endif
#if TA == 0 && defined(TF32X3)
                /* three products per mma tile, the small ones first, from
                 * zero: they join the accumulators by a float32 add, as the
                 * tensor cores truncate their sums (a long sum of positive
                 * products would lose 2^-25 of itself per step); the adds of
                 * one column of tiles wait until the next column's products
                 * are issued. Splitting costs a cvt and a subtraction per
                 * fragment element: an integer rounding (8 instructions) ran
                 * 25% slower. */
                uint al[MI][4];
                UNROLL for (int i = 0; i < MI; i++)
                    UNROLL for (int q = 0; q < 4; q++) {
                        const uint x = af[i][q];
                        af[i][q] = to_tf32(x);
                        al[i][q] = tf32_lo(x, af[i][q]);
                    }
                float part[2][MI][4];
                UNROLL for (int j = 0; j < NI; j++) {
                    uint bh[2], bl[2];
                    UNROLL for (int q = 0; q < 2; q++) {
                        bh[q] = to_tf32(bf[j][q]);
                        bl[q] = tf32_lo(bf[j][q], bh[q]);
                    }
                    UNROLL for (int i = 0; i < MI; i++) MMA0(part[j & 1][i], al[i], bh);
                    UNROLL for (int i = 0; i < MI; i++) MMA(part[j & 1][i], af[i], bl);
                    UNROLL for (int i = 0; i < MI; i++) MMA(part[j & 1][i], af[i], bh);
                    if (j > 0)
                        UNROLL for (int i = 0; i < MI; i++)
                            UNROLL for (int q = 0; q < 4; q++) acc[i][j - 1][q] += part[(j - 1) & 1][i][q];
                }
                UNROLL for (int i = 0; i < MI; i++)
                    UNROLL for (int q = 0; q < 4; q++) acc[i][NI - 1][q] += part[(NI - 1) & 1][i][q];
#else
#if TA == 0
                UNROLL for (int i = 0; i < MI; i++)
                    UNROLL for (int q = 0; q < 4; q++) af[i][q] = to_tf32(af[i][q]);
                UNROLL for (int j = 0; j < NI; j++)
                    UNROLL for (int q = 0; q < 2; q++) bf[j][q] = to_tf32(bf[j][q]);
#endif
                UNROLL for (int i = 0; i < MI; i++)
                    UNROLL for (int j = 0; j < NI; j++) MMA(acc[i][j], af[i], bf[j]);
#endif
            }
#endif /* FFMA */
            rs = NEXT_STAGE(rs);
            ws = NEXT_STAGE(ws);
        }
        CP_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE);   /* the next tile's prologue reuses the stages */
#ifdef SPLIT_SUM
        SPLIT_SUM_TILE();   /* kernels/gemm_ffma.cl: the tile's last slice goes on, the others stop here */
#endif
#ifdef FFMA
        /* an interior block of a 16-byte-aligned output stores float4s
         * (kernels/gemm_ffma.cl, "Stores"); the rest one float at a time */
#if B_KCONT && A_KCONT && BM * BN <= 4096 && !defined(NO_FFMA_VEC_STORE) && !defined(CONV_W) && \
    WM * WN * WTM * (WTN + 4) * 4 <= STAGES * STAGE_BYTES
        if (inner && vec_out) {
            FFMA_STORE_STAGED();
            continue;
        }
#elif !B_KCONT && !defined(CONV_X) && !defined(NO_FFMA_VEC_STORE)
        if (inner && vec_out) {
            FFMA_STORE_RUNS();
            continue;
        }
#endif
        UNROLL for (int i = 0; i < TM; i++)
            UNROLL for (int j = 0; j < TN; j++) {
                int m = m0 + wm * WTM + FFMA_ROW(i), n = n0 + wn * WTN + FFMA_COL(j);
                if (m < M && n < N)
                    O_STORE(out, ooff + OUT_INDEX(m, n), epilogue(ESCALED(acc[i][j], m, n), bb, m, n, EPI_ARGS));
            }
#else
#ifdef STAGE_OUT
        if (inner && stage_out) {
            __local uint *so_ = (__local uint *)smem;
            UNROLL for (int i = 0; i < MI; i++)
                UNROLL for (int j = 0; j < NI; j++)
                    UNROLL for (int h = 0; h < 2; h++) {
                        /* (names apart from EPI_ARGS', whose c is the epilogue's operand) */
                        const int sr_ = FRAG_ROW(i) + g + h * 8, sc_ = wn * WTN + j * 8 + 2 * t, m = m0 + sr_, n = n0 + sc_;
                        so_[sr_ * SO_ROW + sc_ / 2] = mma_pack2(epilogue(ESCALED(acc[i][j][2 * h], m, n), bb, m, n, EPI_ARGS),
                                                                epilogue(ESCALED(acc[i][j][2 * h + 1], m, n + 1), bb, m, n + 1, EPI_ARGS));
                    }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int q = tid; q < BM * (BN / 8); q += THREADS) {
                const int sr_ = q / (BN / 8), sc_ = q % (BN / 8);
                *(__global uint4 *)(out + ooff + OUT_INDEX(m0 + sr_, n0 + 8 * sc_)) = *(__local const uint4 *)(so_ + sr_ * SO_ROW + 4 * sc_);
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* the next tile's prologue reuses the stages */
            continue;
        }
#endif
        /* PAIR_STORE (gemm_mma.cl) where pair_out, else one by one */
        UNROLL for (int i = 0; i < MI; i++)
            UNROLL for (int j = 0; j < NI; j++)
                UNROLL for (int h = 0; h < 2; h++) {
                    const int m = m0 + FRAG_ROW(i) + g + h * 8, n = n0 + wn * WTN + j * 8 + 2 * t;
                    if (m >= M || n >= N) continue;
                    const float v0 = epilogue(ESCALED(acc[i][j][2 * h], m, n), bb, m, n, EPI_ARGS);
                    if (n + 1 >= N) {
                        O_STORE(out, ooff + OUT_INDEX(m, n), v0);
                        continue;
                    }
                    const float v1 = epilogue(ESCALED(acc[i][j][2 * h + 1], m, n + 1), bb, m, n + 1, EPI_ARGS);
                    if (pair_out) {
                        mma_store2(out + ooff + OUT_INDEX(m, n), v0, v1);
                    } else {
                        O_STORE(out, ooff + OUT_INDEX(m, n), v0);
                        O_STORE(out, ooff + OUT_INDEX(m, n + 1), v1);
                    }
                }
#endif
    }
}
