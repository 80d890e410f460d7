/* gemm_ffma.cl — how the float32-FMA path of gemm_mma.cl ("FFMA", built
 * with -DFFMA) reads its operands from the pipeline's stages, feeds them
 * to its FMAs and stores its outputs: macros only, expanded inside
 * gemm_mma (whose names they use: the stage layout, the lane's place,
 * acc, the output tile). The program is gemm.cl + this file + gemm_mma.cl
 * + gemm_wgmma.cl + gemm_mma_kernel.cl (src/backend/cl/gemm_mma.c). */
#ifdef FFMA
/* Each thread owns TM x TN outputs of its warp's 8TM x 4TN tile: rows
 * FFMA_ROW(i), columns FFMA_COL(j) (relative to the warp tile). Per k it
 * takes its TM values of a and TN of w from the stage (an operand whose k
 * dim is contiguous: one 16-byte load per row for 4 k-steps; otherwise one
 * 16-byte load per 4 values per k-step), then TM x TN FMAs. */
#if A_KCONT
#define FFMA_ROW(i) (lm + 8 * (i))
#else
#define FFMA_ROW(i) ((lm + 8 * ((i) / 4)) * 4 + (i) % 4)
#endif
#if B_KCONT
#define FFMA_COL(j) (ln + 4 * (j))
#else
#define FFMA_COL(j) ((ln + 4 * ((j) / 4)) * 4 + (j) % 4)
#endif
#define LDF4(p, off) (*(__local const float4 *)((p) + (off)))
/* FFMA_SUB (gemm_mma.cl says where): the k-steps read at once from an
 * operand whose k dim is contiguous, 4 (a 16-byte chunk) or 2 (half of
 * one: 8-byte loads, half the registers holding values in flight) */
#define FFMA_VT VT(float, FFMA_SUB)
#define LDFV(p, off) (*(__local const FFMA_VT *)((p) + (off)))
#define FFMA_GETV(v, e) GETV(FFMA_SUB, v, e)
/* the byte offset of part s (k-steps s FFMA_SUB ..) in a row whose chunks XOR with key */
#define FFMA_PART(s, key) ((((((s) * FFMA_SUB) >> 2) ^ (key)) << 4) + (((s) * FFMA_SUB) & 3) * 4)
#define SPLAT4(v, i, x) ((v)[4 * (i)] = (x).s0, (v)[4 * (i) + 1] = (x).s1, (v)[4 * (i) + 2] = (x).s2, (v)[4 * (i) + 3] = (x).s3)
/* An operand whose k dim is contiguous is read FFMA_SUB k-steps at a time
 * (a 16-byte chunk or half of one), one load per row, before those
 * k-steps; the other kind is read per k-step, one 16-byte load per 4
 * values. The loop over a tile's chunks is unrolled too: ptxas then
 * hoists much of a tile's loads (a 256-thread block of 8 x 8 takes 226
 * registers, and OpenCL has no launch bounds; NVIDIA's compiler ignores
 * -cl-nv-maxrregcount), but a rolled loop ran slower (measurements:
 * docs/notes/kernels.md). The tiles are ta_ and tb_. */
#if A_KCONT /* rows 8 apart: the swizzle is the same for all of them */
#define FFMA_A4(c, i) LDFV(ta_, fa0 + FFMA_PART(c, fas) + (i) * 8 * A_RB) /* part c of the lane's row i */
#define FFMA_CHUNK_A(c) FFMA_VT a4[TM]; UNROLL for (int i = 0; i < TM; i++) a4[i] = FFMA_A4(c, i)
#define FFMA_LOAD_A(av, k) UNROLL for (int i = 0; i < TM; i++) av[i] = FFMA_GETV(a4[i], (k) % FFMA_SUB)
#else /* chunk lm + 8i of the warp tile in row k: XOR its low 3 bits */
#define FFMA_CHUNK_A(c)
#define FFMA_LOAD_A(av, k)                                                                                    \
    UNROLL for (int i = 0; i < TM / 4; i++)                                                                  \
        SPLAT4(av, i, LDF4(ta_, (k) * A_RB + (wm * WTM / 4 + 8 * i + (lm ^ SWZ_KEY(A_CPR, k))) * 16))
#endif
#if B_KCONT /* rows 4 apart: two swizzles, repeating every 8 rows */
#define FFMA_B4(c, j) LDFV(tb_, fb0[(j) & 1] + FFMA_PART(c, fbs[(j) & 1]) + ((j) >> 1) * 8 * B_RB)
#define FFMA_CHUNK_B(c) FFMA_VT b4[TN]; UNROLL for (int j = 0; j < TN; j++) b4[j] = FFMA_B4(c, j)
#define FFMA_LOAD_B(bv, k) UNROLL for (int j = 0; j < TN; j++) bv[j] = FFMA_GETV(b4[j], (k) % FFMA_SUB)
#else /* chunk ln + 4j of the warp tile: 8 (j / 2) + (ln + 4 (j % 2)), the latter swizzled */
#define FFMA_CHUNK_B(c)
#define FFMA_LOAD_B(bv, k)                                                                                    \
    UNROLL for (int j = 0; j < TN / 4; j++)                                                                  \
        SPLAT4(bv, j, LDF4(tb_, (k) * B_RB + (wn * WTN / 4 + 8 * (j >> 1) + ((ln + 4 * (j & 1)) ^ SWZ_KEY(B_CPR, k))) * 16))
#endif
/* A k-step's FMAs, row by row or (FFMA_COLUMNS, gemm_mma.cl says where)
 * column by column, a column's rows alternately down and up: consecutive
 * FMAs share an operand, the turn included, and which one they share, a
 * or w, changes how the operands meet in the register banks. NVIDIA's
 * ptxas allocates the registers and OpenCL has no say there; the order is
 * the lever left, and by columns issued faster in large products
 * (measurements: docs/notes/kernels.md). */
#define FFMA_FMAS(av, bv)                                                                                     \
    do {                                                                                                     \
        if (FFMA_COLUMNS) {                                                                                  \
            UNROLL for (int j = 0; j < TN; j++) UNROLL for (int r = 0; r < TM; r++) {                        \
                const int i = (j & 1) ? TM - 1 - r : r;                                                      \
                acc[i][j] = fma(av[i], bv[j], acc[i][j]);                                                    \
            }                                                                                                \
        } else {                                                                                             \
            UNROLL for (int i = 0; i < TM; i++) UNROLL for (int j = 0; j < TN; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]); \
        }                                                                                                    \
    } while (0)
/* One tile at local tiles ta, tb, in the tile's own order. */
#define FFMA_TILE(ta, tb)                                                                                     \
    do {                                                                                                     \
        __local const uchar *ta_ = (ta), *tb_ = (tb);                                                        \
        UNROLL for (int c = 0; c < BK / FFMA_SUB; c++) {                                                     \
            FFMA_CHUNK_A(c);                                                                                 \
            FFMA_CHUNK_B(c);                                                                                 \
            UNROLL for (int kk = 0; kk < FFMA_SUB; kk++) {                                                   \
                float av[TM], bv[TN];                                                                        \
                FFMA_LOAD_A(av, FFMA_SUB * c + kk);                                                          \
                FFMA_LOAD_B(bv, FFMA_SUB * c + kk);                                                          \
                FFMA_FMAS(av, bv);                                                                           \
            }                                                                                                \
        }                                                                                                    \
    } while (0)
/* FFMA_PIPE: the operands first used at k-step k are loaded during step
 * k - 1, into the other of two register sets (a chunk's set where k is
 * contiguous, a step's otherwise), across the tile's barrier too: the
 * first step after a barrier no longer waits for its loads. */
#if A_KCONT
#define FFMA_PA_DECL FFMA_VT pa[2][TM]
#define FFMA_FETCH_A(k) \
    if ((k) % FFMA_SUB == 0) UNROLL for (int i = 0; i < TM; i++) pa[((k) / FFMA_SUB) & 1][i] = FFMA_A4((k) / FFMA_SUB, i)
#define FFMA_GET_A(av, k) UNROLL for (int i = 0; i < TM; i++) av[i] = FFMA_GETV(pa[((k) / FFMA_SUB) & 1][i], (k) % FFMA_SUB)
#else
#define FFMA_PA_DECL float pa[2][TM]
#define FFMA_FETCH_A(k) FFMA_LOAD_A(pa[(k) & 1], k)
#define FFMA_GET_A(av, k) UNROLL for (int i = 0; i < TM; i++) av[i] = pa[(k) & 1][i]
#endif
#if B_KCONT
#define FFMA_PB_DECL FFMA_VT pb[2][TN]
#define FFMA_FETCH_B(k) \
    if ((k) % FFMA_SUB == 0) UNROLL for (int j = 0; j < TN; j++) pb[((k) / FFMA_SUB) & 1][j] = FFMA_B4((k) / FFMA_SUB, j)
#define FFMA_GET_B(bv, k) UNROLL for (int j = 0; j < TN; j++) bv[j] = FFMA_GETV(pb[((k) / FFMA_SUB) & 1][j], (k) % FFMA_SUB)
#else
#define FFMA_PB_DECL float pb[2][TN]
#define FFMA_FETCH_B(k) FFMA_LOAD_B(pb[(k) & 1], k)
#define FFMA_GET_B(bv, k) UNROLL for (int j = 0; j < TN; j++) bv[j] = pb[(k) & 1][j]
#endif
/* k-step k's operands from the stage at local byte offset sa */
#define FFMA_FETCH(sa, k)                                                                                     \
    do {                                                                                                     \
        __local const uchar *ta_ = smem + (sa), *tb_ = smem + (sa) + A_BYTES;                                \
        FFMA_FETCH_A(k);                                                                                     \
        FFMA_FETCH_B(k);                                                                                     \
    } while (0)
#define FFMA_STEP(k)                                                                                          \
    do {                                                                                                     \
        float av[TM], bv[TN];                                                                                \
        FFMA_GET_A(av, k);                                                                               \
        FFMA_GET_B(bv, k);                                                                               \
        FFMA_FMAS(av, bv);                                                                                   \
    } while (0)
/* Stores. Scalar stores queued in the load-store unit for a good share of
 * a short product's time (docs/gemm.md, "Loop and stores"; docs/notes/kernels.md), so
 * gemm_mma_kernel.cl stores an interior block of a 16-byte-aligned output as
 * float4s, one of two ways by the layout of w; -DNO_FFMA_VEC_STORE turns
 * both off. FFMA_STORE4: outputs (m, n .. n + 3) of values x0 .. x3,
 * through the epilogue. */
#define FFMA_STORE4(m, n, x0, x1, x2, x3)                                                                     \
    do {                                                                                                     \
        float4 v;                                                                                            \
        v.s0 = epilogue(x0, bb, m, n, EPI_ARGS);                                                             \
        v.s1 = epilogue(x1, bb, m, (n) + 1, EPI_ARGS);                                                       \
        v.s2 = epilogue(x2, bb, m, (n) + 2, EPI_ARGS);                                                       \
        v.s3 = epilogue(x3, bb, m, (n) + 3, EPI_ARGS);                                                       \
        *(__global float4 *)(out + ooff + OUT_INDEX(m, n)) = v;                                              \
    } while (0)
/* w n-contiguous: a thread's columns come in runs of 4 (FFMA_COL), each
 * run one float4 straight from the registers (the short products gain
 * most; measurements: docs/notes/kernels.md) */
#define FFMA_STORE_RUNS()                                                                                     \
    UNROLL for (int i = 0; i < TM; i++)                                                                      \
        UNROLL for (int q = 0; q < TN / 4; q++) {                                                            \
            const int m = m0 + wm * WTM + FFMA_ROW(i), n = n0 + wn * WTN + FFMA_COL(4 * q);                  \
            FFMA_STORE4(m, n, acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);       \
        }
/* w k-contiguous (x @ w^T): a thread's columns lie 4 apart, so the block
 * goes through the free stages, each warp's tile as rows padded by 4 (a
 * warp's writes of one (i, j) hit 8 rows x 4 consecutive columns: 32
 * banks), and leaves as float4 runs of rows. Small blocks only (the 64x64
 * ones gain; the 128x64 blocks of 8 x 8 lost, through ptxas's allocation of
 * their 250-odd registers; measurements: docs/notes/kernels.md). */
#define FFMA_STORE_STAGED()                                                                                   \
    do {                                                                                                     \
        __local float *wt = (__local float *)smem + warp * WTM * (WTN + 4);                                  \
        UNROLL for (int i = 0; i < TM; i++)                                                                  \
            UNROLL for (int j = 0; j < TN; j++) wt[FFMA_ROW(i) * (WTN + 4) + FFMA_COL(j)] = acc[i][j];        \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
        UNROLL for (int r = 0; r < TM * TN / 4; r++) {                                                       \
            const int q = r * 32 + lane, row = q / (WTN / 4), c4 = q % (WTN / 4);                            \
            const float4 x = *(__local const float4 *)(wt + row * (WTN + 4) + 4 * c4);                       \
            const int m = m0 + wm * WTM + row, n = n0 + wn * WTN + 4 * c4;                                   \
            FFMA_STORE4(m, n, x.s0, x.s1, x.s2, x.s3);                                                       \
        }                                                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE); /* the next tile's prologue reuses the stages */                       \
    } while (0)
/* Split-K summed inside the product (-DSPLIT_SUM, src/backend/cl/gemm_split.c):
 * batch kb is slice kb of K (the last one Klast long) of one output. Every
 * block stores its partial tile to part in its threads' own order (tile
 * r's slices side by side, a thread's outputs as float4s THREADS apart:
 * a warp's stores and loads are 512 contiguous bytes); the block that
 * completes its tile's count, the last of the tile's S slices to finish,
 * adds the S partials in slice order (its own read back too, so the sum
 * does not depend on which block finishes last) and goes on to the
 * output's stores and epilogue; the others stop. It sets the count back
 * to 0 for the next product (the queue is in order). */
#ifdef SPLIT_SUM
#define SPLIT_PARAMS , __global float4 *part, __global int *tile_count, int Klast
#ifdef MMA_EMULATE
#define SPLIT_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define SPLIT_LOAD(p) (*(p))
#else
/* membar.gl: CUDA's __threadfence, this thread's writes seen device-wide
 * before its later ones; ld.global.cg: from L2, past the L1 that other
 * multiprocessors' writes do not reach (asm volatile: not above the fence) */
#define SPLIT_FENCE() __asm__ volatile("membar.gl;" ::: "memory")
inline float4 split_load(__global const float4 *p)
{
    float4 v;
    __asm__ volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.s0), "=f"(v.s1), "=f"(v.s2), "=f"(v.s3)
                     : "l"(p));
    return v;
}
#define SPLIT_LOAD(p) split_load(p)
#endif
#define SPLIT_NV (TM * TN / 4) /* a thread's float4s */
#define SPLIT_A(q, e) acc[(4 * (q)) / TN][(4 * (q)) % TN + (e)]
#define SPLIT_ADD4(q, v, op) (SPLIT_A(q, 0) op (v).s0, SPLIT_A(q, 1) op (v).s1, SPLIT_A(q, 2) op (v).s2, SPLIT_A(q, 3) op (v).s3)
/* a block, not do-while: its continue moves on to the next tile */
#define SPLIT_SUM_TILE()                                                                                      \
    {                                                                                                        \
        __global float4 *pt_ = part + (long)r * nbatch * SPLIT_NV * THREADS + tid;                           \
        UNROLL for (int q = 0; q < SPLIT_NV; q++)                                                            \
            pt_[(kb * SPLIT_NV + q) * THREADS] = (float4)(SPLIT_A(q, 0), SPLIT_A(q, 1), SPLIT_A(q, 2), SPLIT_A(q, 3)); \
        SPLIT_FENCE();                                                                                       \
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);                                                 \
        __local volatile int *last_ = (__local volatile int *)smem;                                          \
        if (tid == 0) {                                                                                      \
            const int done_ = atomic_inc(tile_count + r) == nbatch - 1;                                      \
            if (done_) atomic_xchg(tile_count + r, 0);                                                       \
            *last_ = done_;                                                                                  \
        }                                                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
        const int mine_ = *last_;                                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
        if (!mine_) continue;                                                                                \
        SPLIT_FENCE();                                                                                       \
        UNROLL for (int q = 0; q < SPLIT_NV; q++) {                                                          \
            const float4 v_ = SPLIT_LOAD(pt_ + q * THREADS);                                                 \
            SPLIT_ADD4(q, v_, =);                                                                            \
        }                                                                                                    \
        for (int s_ = 1; s_ < nbatch; s_++)                                                                  \
            UNROLL for (int q = 0; q < SPLIT_NV; q++) {                                                      \
                const float4 v_ = SPLIT_LOAD(pt_ + (s_ * SPLIT_NV + q) * THREADS);                           \
                SPLIT_ADD4(q, v_, +=);                                                                       \
            }                                                                                                \
    }
#endif /* SPLIT_SUM */
#endif /* FFMA */
