/* gemm_mma.cl — the tensor-core GEMM (NVIDIA, sm_80+, inline PTX): its
 * options, stage layouts, PTX wrappers (and their emulation) and loaders.
 * Built as the program "gemm+gemm_ffma+gemm_mma+gemm_wgmma+gemm_mma_kernel"
 * with -DGEMM_MMA: gemm.cl before it gives the epilogue, the operand types
 * and the loads it shares with the other GEMM kernels; gemm_ffma.cl the
 * float32-FMA path's operand reads; gemm_wgmma.cl Hopper's wgmma; the
 * kernel itself is gemm_mma_kernel.cl. src/backend/cl/gemm_mma.c chooses
 * the options and probes the device.
 */

/* ---- gemm_mma ------------------------------------------------------------------
 * Tensor cores through inline PTX (NVIDIA, sm_80+): TA = 0 float32 inputs
 * rounded to the nearest tf32 (cvt.rna; TF32X3 splits each into two tf32
 * parts and sums three products, for float32 accuracy) and mma.m16n8k8; TA = 1/2 float16 / bfloat16
 * with mma.m16n8k16; float32 accumulators either way. FFMA (IEEE float32,
 * TA = 0): the same pipeline feeding float32 FMAs, TM x TN outputs a thread
 * (below, "FFMA").
 * Options: BM BN BK (block tile), WM WN (warps along m, n; each warp owns a
 * (BM/WM) x (BN/WN) tile of MI x NI mma tiles), STAGES (cp.async pipeline
 * depth), A_KCONT / B_KCONT (1: the operand's k dim is contiguous; else m
 * resp. n is), GM (raster: GM m-tiles take their n-tiles in turn, so the
 * blocks in flight share operands in L2), EPI_FLAGS / EPI_ACT (the
 * epilogue fixed at build time, so the plain product carries none of its
 * code; absent: read from the arguments), CONV_X / CONV_W (a convolution's
 * forward / backward-weight pass: w is its input x, gathered by the copies;
 * the geometry in CV_*, see LOAD_B), MMA_EMULATE (PoCL testing:
 * plain OpenCL stand-ins for every PTX instruction with the same fragment
 * layouts, exchanging fragments through local memory).
 * Local memory: per stage an A tile and a B tile, each stored as rows of
 * 16-byte chunks along the operand's contiguous dim (A_KCONT: BM rows of
 * BK elements, else BK rows of BM), the chunk index XOR-swizzled with the
 * row so that the 8 row reads of an ldmatrix and the chunk writes of
 * cp.async land in distinct banks with no padding (three stages of
 * 128x128x32 16-bit tiles fill the 48 KiB OpenCL gets on NVIDIA).
 * Fragments: ldmatrix.x4 wherever the operand's k dim is contiguous (tf32
 * too: a 32-bit element is a pair of b16), ldmatrix.x4.trans for 16-bit
 * operands whose m / n dim is, 32-bit local loads for those of tf32.
 * Grid: 1-D, THREADS per block; blocks loop over (batch, m-tile, n-tile). */
#define THREADS (WM * WN * 32)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#if TA == 0
#define KSTEP 8
#define ESZ 4
#else
#define KSTEP 16
#define ESZ 2
#endif
#define CHUNK (16 / ESZ) /* elements per 16-byte chunk */
#if A_KCONT
#define A_ROWS BM
#define A_CPR (BK / CHUNK)
#else
#define A_ROWS BK
#define A_CPR (BM / CHUNK)
#endif
#if B_KCONT
#define B_ROWS BN
#define B_CPR (BK / CHUNK)
#else
#define B_ROWS BK
#define B_CPR (BN / CHUNK)
#endif
/* tf32 operands whose k dim is not contiguous are read with 32-bit loads:
 * their tiles are rows padded by 8 elements instead (every fragment load
 * of a warp hits 32 banks, at offsets fixed per lane), the others swizzled */
#ifdef FFMA /* float32 FMAs read chunks, so every tile is swizzled */
#define A_PADDED 0
#define B_PADDED 0
#else
#define A_PADDED (TA == 0 && !A_KCONT)
#define B_PADDED (TA == 0 && !B_KCONT)
#endif
#define A_RB (A_PADDED ? (BM + 8) * ESZ : A_CPR * 16) /* bytes per tile row */
#define B_RB (B_PADDED ? (BN + 8) * ESZ : B_CPR * 16)
#define A_BYTES (A_ROWS * A_RB)
#define STAGE_BYTES (A_BYTES + B_ROWS * B_RB)
#define NA ((A_ROWS * A_CPR + THREADS - 1) / THREADS) /* chunks per thread and tile */
#define NB ((B_ROWS * B_CPR + THREADS - 1) / THREADS)
#define A_RSTEP (THREADS / A_CPR) /* rows between a thread's chunks (THREADS >= cpr, host-checked) */
#define B_RSTEP (THREADS / B_CPR)
#ifndef GM
#define GM 8
#endif
#define NEXT_STAGE(x) ((x) == STAGES - 1 ? 0 : (x) + 1) /* the pipeline's ring */
/* FRAG_PIPE: fragments loaded a k-step ahead, across the k-tile barrier
 * too (the first k-step after a barrier no longer waits for its ldmatrix).
 * On by default in blocks of 128x128 or more, where every dtype gains
 * (plain tf32 with the loop unswitched, below); 64x64 blocks of tf32x3
 * lost (measurements: docs/notes/kernels.md). -DFRAG_PIPE forces it,
 * -DNO_FRAG_PIPE turns it off. Needs an even number of k-steps per tile. */
#if !defined(FRAG_PIPE) && !defined(NO_FRAG_PIPE) && BM * BN >= 16384 && !defined(WGMMA)
#define FRAG_PIPE
#endif
#if defined(FRAG_PIPE) && ((BK / KSTEP) % 2 || defined(FFMA))
#undef FRAG_PIPE
#endif
/* FFMA_PIPE (FFMA): a k-step's operands loaded a step ahead, below. On by
 * default in the plain products' blocks of at most 4096 outputs (64x64,
 * 128x32), which gain; the 128x64 blocks of 8 x 16 outputs lost (243
 * registers where they had 255, and ptxas's own hoisting; measurements:
 * docs/notes/kernels.md), and the convolutions keep what they were
 * measured with. -DFFMA_PIPE forces it, -DNO_FFMA_PIPE turns it off. */
#if defined(FFMA) && !defined(FFMA_PIPE) && !defined(NO_FFMA_PIPE) && BM * BN <= 4096 && BK % 8 == 0 && \
    !defined(CONV_X) && !defined(CONV_W)
#define FFMA_PIPE
#endif
#if defined(FFMA) && defined(FFMA_PIPE)
#if BK % 8 /* two register sets alternate by chunk (4 k-steps): a tile must hold an even number */
#error "FFMA_PIPE needs BK a multiple of 8"
#endif
#define FRAG_PIPE
#endif
/* FFMA_COLUMNS (FFMA): the order of a k-step's TM x TN FMAs, kernels/
 * gemm_ffma.cl. Column by column, each column's rows back and forth, in
 * every block that does not load a step ahead (large products gain, conv
 * layers do not move); row by row in those that do (there the fastest of
 * the nine orders tried; measurements: docs/notes/kernels.md).
 * -DFFMA_COLUMNS=0 / =1 forces either. */
#if defined(FFMA) && !defined(FFMA_COLUMNS)
#ifdef FFMA_PIPE
#define FFMA_COLUMNS 0
#else
#define FFMA_COLUMNS 1
#endif
#endif
/* FFMA_SUB (FFMA): k-steps per read of an operand whose k dim is
 * contiguous, kernels/gemm_ffma.cl. 2 in the 64x64 blocks that load a step
 * ahead with both operands so (x @ w^T's small blocks, which gain), 4
 * elsewhere (with 2 the 64x32 blocks lost in nt and nn, the 128x64 ones
 * did not move; measurements: docs/notes/kernels.md). -DFFMA_SUB=2 / =4
 * forces either. */
#if defined(FFMA) && !defined(FFMA_SUB)
#if defined(FFMA_PIPE) && A_KCONT && B_KCONT && BM * BN == 4096
#define FFMA_SUB 2
#else
#define FFMA_SUB 4
#endif
#endif
#if defined(FFMA) && FFMA_SUB != 2 && FFMA_SUB != 4
#error "FFMA_SUB is 2 or 4"
#endif
#ifdef FRAG_PIPE
#define FETCH_AHEAD STAGES /* tile kt + FETCH_AHEAD is fetched during tile kt */
#else
#define FETCH_AHEAD (STAGES - 1)
#endif
/* The swizzled place of chunk c of row r in a tile of cpr chunks per row:
 * the 8 chunks of a 128-byte line are permuted by the row's position, so
 * 8 consecutive rows at one chunk hit 8 different 16-byte bank groups (an
 * ldmatrix), and so do the 8 consecutive chunks of a row that 8 threads
 * copy. Wide rows XOR with r % 8 bit-reversed (any permutation of it
 * serves both; this one also spreads 2 rows of 4 chunks, should a loader
 * ever copy those). It depends on r only through r % 8 (cpr >= 8) or
 * r * cpr / 8 % cpr, so moving 8 rows keeps it. */
#define BITREV3(x) ((((x) & 1) << 2) | ((x) & 2) | (((x) >> 2) & 1))
#ifdef WGMMA /* the hardware's own swizzles: 128-byte rows XOR with r % 8 itself */
#define SWZ_KEY(cpr, r) ((cpr) >= 8 ? (r) & 7 : ((r) * (cpr) / 8) & ((cpr) - 1))
#else
#define SWZ_KEY(cpr, r) ((cpr) >= 8 ? BITREV3((r) & 7) : ((r) * (cpr) / 8) & ((cpr) - 1))
#endif
#define SWZ(cpr, r, c) ((c) ^ SWZ_KEY(cpr, r))
#define TOFF(cpr, r, c) ((((r) * (cpr)) + SWZ(cpr, r, c)) * 16) /* byte offset of (row, chunk) */
/* wgmma reads a 16-bit operand whose m (n) dim is contiguous transposed,
 * from 128-byte-swizzled atoms of 8 k-rows x 64 m (n): the tile is stored
 * [m / 64][k][128 bytes], each row's chunks XOR k % 8 */
#define ATOM_OFF(r, c) (((c) / 8) * (BK * 128) + (r) * 128 + (((c) % 8) ^ ((r) % 8)) * 16)
#if defined(WGMMA) && !A_KCONT
#define AOFF(r, c) ATOM_OFF(r, c)
#define A_ROWB 128 /* bytes between a tile's rows within an atom column */
#else
#define AOFF(r, c) (A_PADDED ? (r) * A_RB + (c) * 16 : TOFF(A_CPR, r, c))
#define A_ROWB A_RB
#endif
#if defined(WGMMA) && !B_KCONT
#define BOFF(r, c) ATOM_OFF(r, c)
#define B_ROWB 128
#else
#define BOFF(r, c) (B_PADDED ? (r) * B_RB + (c) * 16 : TOFF(B_CPR, r, c))
#define B_ROWB B_RB
#endif
/* a thread's chunks lie a fixed byte distance apart when the swizzle repeats */
#define A_SSTEP_OK (A_PADDED || A_RSTEP % 8 == 0)
#define B_SSTEP_OK (B_PADDED || B_RSTEP % 8 == 0)

#ifdef MMA_EMULATE
/* 16 bytes from src (or zeros) to dst: what cp.async does, done at once */
inline void cp_async16(__local uchar *dst, __global const uchar *src, bool ok)
{
    UNROLL for (int e = 0; e < 16; e++) dst[e] = ok ? src[e] : (uchar)0;
}
inline void cp_async4(__local uchar *dst, __global const uchar *src, bool ok)
{
    *(__local uint *)dst = ok ? *(__global const uint *)src : 0u;
}
#define CP_COMMIT()
#define CP_WAIT(n)
/* cvt.rna.tf32.f32, as common.cl computes it */
inline uint to_tf32(uint x) { return tf32_nearest_bits(x); }
inline float elem_float(uint bits)
{
#if TA == 1
    ushort h = (ushort)bits;
    return vload_half(0, (const __private half *)&h);
#elif TA == 2
    return as_float(bits << 16);
#else
    return as_float(bits & 0xffffe000u);
#endif
}
/* One warp's mma: each lane scatters its fragments to the warp's scratch
 * (row-major A 16 x KSTEP, B KSTEP x 8), then computes its 4 outputs. */
inline void mma_emul(__private float *d, __private const uint *a, __private const uint *b, __local float *xa,
                     __local float *xb, int lane)
{
    const int g = lane >> 2, t = lane & 3;
#if TA == 0
    xa[g * 8 + t] = elem_float(a[0]);
    xa[(g + 8) * 8 + t] = elem_float(a[1]);
    xa[g * 8 + t + 4] = elem_float(a[2]);
    xa[(g + 8) * 8 + t + 4] = elem_float(a[3]);
    xb[t * 8 + g] = elem_float(b[0]);
    xb[(t + 4) * 8 + g] = elem_float(b[1]);
#else
    UNROLL for (int r = 0; r < 4; r++) {
        int row = g + (r & 1) * 8, col = 2 * t + (r >> 1) * 8;
        xa[row * 16 + col] = elem_float(a[r] & 0xffffu);
        xa[row * 16 + col + 1] = elem_float(a[r] >> 16);
    }
    UNROLL for (int r = 0; r < 2; r++) {
        xb[(2 * t + r * 8) * 8 + g] = elem_float(b[r] & 0xffffu);
        xb[(2 * t + r * 8 + 1) * 8 + g] = elem_float(b[r] >> 16);
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    UNROLL for (int r = 0; r < 4; r++) {
        int row = g + (r >> 1) * 8, col = 2 * t + (r & 1);
        float s = 0;
        for (int k = 0; k < KSTEP; k++) s += xa[row * KSTEP + k] * xb[k * 8 + col];
        d[r] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define MMA(d, a, b) mma_emul(d, a, b, xa + warp * 16 * KSTEP, xb + warp * KSTEP * 8, lane)
#define MMA0(d, a, b)                                                                                     \
    do {                                                                                                  \
        UNROLL for (int z_ = 0; z_ < 4; z_++) (d)[z_] = 0;                                                \
        MMA(d, a, b);                                                                                     \
    } while (0)
/* ldmatrix .x4 (.trans) at byte offsets: lane l names the row of matrix
 * l/8; non-trans, lane l receives 32-bit word l%4 of row l/4 of each
 * matrix; trans (16-bit), the halves at element l/4 of rows 2(l%4), +1. */
inline void ldsm_emul(__private uint *r, __local const uchar *base, int off, int trans, __local int *xo, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    xo[lane] = off;
    barrier(CLK_LOCAL_MEM_FENCE);
    UNROLL for (int j = 0; j < 4; j++) {
        if (trans)
            r[j] = (uint)*(__local const ushort *)(base + xo[8 * j + 2 * t] + 2 * g) |
                   ((uint)*(__local const ushort *)(base + xo[8 * j + 2 * t + 1] + 2 * g) << 16);
        else
            r[j] = *(__local const uint *)(base + xo[8 * j + g] + 4 * t);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define LDSM_X4(r, off, trans) ldsm_emul(r, smem, off, trans, xo + warp * 32, lane)
#define LDS32(off) (*(__local const uint *)(smem + (off)))
#else
inline void cp_async16(__local uchar *dst, __global const uchar *src, bool ok)
{
    /* a __local pointer is already a shared-window address on NVPTX */
    uint s = (uint)(ulong)dst;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"((ulong)src), "r"(ok ? 16 : 0)
                 : "memory");
}
/* one element (the implicit convolution's gathers): .ca, as .cg takes only 16 bytes */
inline void cp_async4(__local uchar *dst, __global const uchar *src, bool ok)
{
    uint s = (uint)(ulong)dst;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"((ulong)src), "r"(ok ? 4 : 0)
                 : "memory");
}
#define CP_COMMIT() asm volatile("cp.async.commit_group;\n" ::: "memory")
#define CP_WAIT(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory")
#define LDSM_X4(r, off, trans)                                                                             \
    do {                                                                                                   \
        uint s_ = sbase + (uint)(off);                                                                     \
        if (trans)                                                                                         \
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"          \
                         : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"(s_));               \
        else                                                                                               \
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"                \
                         : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"(s_));               \
    } while (0)
#define LDS32(off) (*(__local const uint *)(smem + (off)))
/* float32 to the nearest tf32, ties away (a truncation, which the tensor
 * cores would do by themselves, biases every product of positive values
 * by 2^-11 on average: 6e-4 relative error after ReLU-like inputs) */
inline uint to_tf32(uint x)
{
    uint u;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(as_float(x)));
    return u;
}
#if TA == 0
#define MMA_OP "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
#elif TA == 1
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#endif
#define MMA(d, a, b)                                                                                      \
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                       \
                 : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])                                 \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
/* d = a b with zero accumulators (a constant operand, no moves) */
#define MMA0(d, a, b)                                                                                     \
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"                   \
                 : "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3])                                 \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]), "f"(0.0f))
#endif

#if TA == 0 && defined(TF32X3)
/* 3xTF32 (float32 accuracy from TF32 tensor cores): x = hi + lo, hi the
 * nearest tf32 and lo the rest (exact in float32; the tensor cores read
 * its top 19 bits); a product is hi*hi + hi*lo + lo*hi, the terms dropped
 * below 2^-21 of it. Inf and NaN go whole into hi, with lo 0. */
inline uint tf32_lo(uint x, uint hi)
{
    return isfinite(as_float(x)) ? as_uint(as_float(x) - as_float(hi)) : 0u;
}
#endif

/* The cp.async chunks of one k-tile. Chunk q = tid + j * THREADS of a tile
 * is (row q / cpr, chunk q % cpr), so consecutive threads copy consecutive
 * 16-byte pieces of a row (coalesced), and a thread's chunks are X_RSTEP
 * rows apart in both memories; a row is an m (resp. n) when k is
 * contiguous and a k otherwise. Per output tile each thread computes the
 * address of its first chunk (xg) and the byte step between its chunks
 * (xgs) once; a k-tile then costs an add per chunk, and an interior one
 * ("full") issues its copies with no bounds checks at all. At an edge,
 * chunks outside are zero-filled (src-size 0) from a safe address. Giving
 * each thread whole rows instead (one address per tile, the chunks at
 * fixed offsets) ran at little more than half the speed (measurements:
 * docs/notes/kernels.md): a warp's copies then touch 32 rows at once. */
#if A_KCONT
#define A_RSTRIDE as1
#define A_KSTRIDE 1
#define A_OK(r, c, k0) (m0 + (r) < M && (k0) + (c) * CHUNK < K)
#else
#define A_RSTRIDE as2
#define A_KSTRIDE as2
#define A_OK(r, c, k0) ((k0) + (r) < K && m0 + (c) * CHUNK < M)
#endif
#if B_KCONT
#define B_RSTRIDE bs2
#define B_KSTRIDE 1
#define B_OK(r, c, k0) (n0 + (r) < N && (k0) + (c) * CHUNK < K)
#else
#define B_RSTRIDE bs1
#define B_KSTRIDE bs1
#define B_OK(r, c, k0) ((k0) + (r) < K && n0 + (c) * CHUNK < N)
#endif
/* where k-tile k0 starts along an operand, in elements from its k = 0 */
#define B_KOFF(k0) ((k0) * B_KSTRIDE)
#ifdef CONV_W /* dy [img, O, L] as [O][k = (img, l)]: a k-tile lies in one image (BK divides L) */
#define A_KOFF(k0) ((k0) / CV_L * (CV_O * CV_L) + (k0) % CV_L)
#else
#define A_KOFF(k0) ((k0) * A_KSTRIDE)
#endif
#define X_PRESENT(X, j) (N##X * THREADS == X##_ROWS * X##_CPR || tid + (j) * THREADS < X##_ROWS * X##_CPR)
#define X_SOFF(X, j) (X##_SSTEP_OK ? X##s0 + (j) * X##_RSTEP * X##_ROWB : X##OFF(X##r0 + (j) * X##_RSTEP, X##c0))
#define LOAD_OPERAND(X, xs, k0)                                                                           \
    do {                                                                                                 \
        __global const uchar *src_ = X##g + (long)X##_KOFF(k0) * ESZ;                                     \
        if (full) {                                                                                      \
            UNROLL for (int j = 0; j < N##X; j++)                                                        \
                if (X_PRESENT(X, j)) cp_async16((xs) + X_SOFF(X, j), src_ + j * X##gs, true);            \
        } else {                                                                                         \
            UNROLL for (int j = 0; j < N##X; j++)                                                        \
                if (X_PRESENT(X, j)) {                                                                   \
                    const bool ok = X##_OK(X##r0 + j * X##_RSTEP, X##c0, k0);                            \
                    cp_async16((xs) + X_SOFF(X, j), ok ? src_ + j * X##gs : X##g, ok);                   \
                }                                                                                        \
        }                                                                                                \
    } while (0)
#if defined(CONV_X) || defined(CONV_W)
#define CV_KK (CV_KH * CV_KW)
#define CV_HW (CV_H * CV_W)
#define CV_L (CV_OH * CV_OW)
#endif
#ifdef CONV_X
/* The forward convolution as an implicit GEMM (CONV_X; B_KCONT 0, one
 * batch): B[k][n] = x[img, c, oh SH - PH + kh DH, ow SW - PW + kw DW] for
 * k = (c, kh, kw) and n = (img, oh, ow), 0 in the padding, copied one
 * 4-byte element at a time (zero-filled where a tap falls outside), to the
 * places a chunk's four elements take in the stage. A thread's chunk
 * column is the same in every k-tile, so its four pixels' input origins
 * are worked out once per output tile (cx_*); a row costs its tap's
 * offset. The geometry is compiled in (CV_*): divisions by constants. The
 * output goes to y [img, M, OH*OW]. */
#define LOAD_B(xs, k0)                                                                                     \
    UNROLL for (int j = 0; j < NB; j++)                                                                    \
        if (X_PRESENT(B, j)) {                                                                             \
            const int k_ = (k0) + Br0 + j * B_RSTEP, c_ = k_ / CV_KK, t_ = k_ - c_ * CV_KK, kh_ = t_ / CV_KW; \
            const int dh_ = kh_ * CV_DH, dw_ = (t_ - kh_ * CV_KW) * CV_DW, tap_ = c_ * CV_HW + dh_ * CV_W + dw_; \
            const bool kin_ = full || k_ < K;                                                              \
            __local uchar *d_ = (xs) + X_SOFF(B, j);                                                       \
            UNROLL for (int e = 0; e < 4; e++) {                                                           \
                const bool ok_ = kin_ && (uint)(cx_ih[e] + dh_) < CV_H && (uint)(cx_iw[e] + dw_) < CV_W;   \
                cp_async4(d_ + 4 * e, (__global const uchar *)(ok_ ? cx_x + cx_off[e] + tap_ : cx_x), ok_); \
            }                                                                                              \
        }
#elif defined(CONV_W)
/* Backward-weight (CONV_W; B_KCONT 1; the batch index is a slice of CV_IP
 * images): dw_s [O, C*KH*KW] = dy_s [O, (img, l)] @ B, B[k = (img, oh,
 * ow)][n = (c, kh, kw)] = x at that tap, the chunks along k (4 pixels of
 * one image). A thread's rows (taps) stay the same through the slice, so
 * their offsets are worked out once per output tile (cw_*); a k-tile
 * costs its four pixels' origins. */
#define LOAD_B(xs, k0)                                                                                     \
    do {                                                                                                   \
        const int p0_ = (k0) % CV_L + Bc0 * CHUNK, img_ = bb * CV_IP + (k0) / CV_L;                        \
        int ih_[4], iw_[4], off_[4];                                                                       \
        UNROLL for (int e = 0; e < 4; e++) {                                                               \
            const int oh_ = (p0_ + e) / CV_OW;                                                             \
            ih_[e] = oh_ * CV_SH - CV_PH, iw_[e] = (p0_ + e - oh_ * CV_OW) * CV_SW - CV_PW;                \
            off_[e] = img_ * (CV_C * CV_HW) + ih_[e] * CV_W + iw_[e];                                      \
        }                                                                                                  \
        const bool kin_ = full || (k0) + Bc0 * CHUNK < K;                                                  \
        UNROLL for (int j = 0; j < NB; j++)                                                                \
            if (X_PRESENT(B, j)) {                                                                         \
                __local uchar *d_ = (xs) + X_SOFF(B, j);                                                   \
                UNROLL for (int e = 0; e < 4; e++) {                                                       \
                    const bool ok_ = kin_ && (uint)(ih_[e] + cw_dh[j]) < CV_H && (uint)(iw_[e] + cw_dw[j]) < CV_W; \
                    cp_async4(d_ + 4 * e, (__global const uchar *)(ok_ ? cx_x + off_[e] + cw_tap[j] : cx_x), ok_); \
                }                                                                                          \
            }                                                                                              \
    } while (0)
#else
#define LOAD_B(xs, k0) LOAD_OPERAND(B, xs, k0)
#endif
#define LOAD_TILE(k0, stage)                                                                               \
    do {                                                                                                   \
        __local uchar *sa_ = smem + (stage) * STAGE_BYTES;                                                 \
        LOAD_OPERAND(A, sa_, k0);                                                                          \
        LOAD_B(sa_ + A_BYTES, k0);                                                                         \
    } while (0)
/* The pipeline's turn inside the k loop (kt, phase, inner, K in scope):
 * wait until the tile due next has landed (this thread's chunks, then
 * everyone's at the barrier); no warp reads the stage freed last any more,
 * so tile kt + FETCH_AHEAD is queued into it (a group, empty or not). */
#define PIPE_TURN(stage)                                                                                   \
    do {                                                                                                   \
        CP_WAIT(STAGES - 2);                                                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
        PIPE_FETCH(stage);                                                                                 \
    } while (0)
/* tile kt + FETCH_AHEAD queued into `stage` (a group, empty or not) */
#define PIPE_FETCH(stage)                                                                                  \
    do {                                                                                                   \
        const int k0 = (kt + FETCH_AHEAD) * BK;                                                            \
        const bool full = phase == 0 || (inner && k0 + BK <= K);                                           \
        if (phase == 0 || k0 < K) LOAD_TILE(k0, stage);                                                    \
        CP_COMMIT();                                                                                       \
    } while (0)

/* One k-step's fragments (step S of the tile at local byte offset SA:
 * its A part at SA, its B part at SA + A_BYTES) into AF [MI][4] and
 * BF [NI][2]. */
#if A_KCONT
#define LOAD_FRAGS_A(AF, SA, S) UNROLL for (int i = 0; i < MI; i++) LDSM_X4(AF[i], (SA) + aoffs[S] + i * 16 * A_RB, 0)
#elif TA != 0
#define LOAD_FRAGS_A(AF, SA, S) UNROLL for (int i = 0; i < MI; i++) LDSM_X4(AF[i], (SA) + aoffs[i] + (S) * KSTEP * A_RB, 1)
#else
#define LOAD_FRAGS_A(AF, SA, S)                                                                            \
    UNROLL for (int i = 0; i < MI; i++)                                                                    \
        UNROLL for (int q = 0; q < 4; q++)                                                                 \
            AF[i][q] = LDS32((SA) + aoffs0 + ((S) * KSTEP + (q >> 1) * 4) * A_RB + (i * 16 + (q & 1) * 8) * 4)
#endif
#if B_KCONT
#define LOAD_FRAGS_B(BF, SB, S)                                                                            \
    UNROLL for (int j = 0; j < NI / 2; j++) {                                                              \
        uint q4[4];                                                                                        \
        LDSM_X4(q4, (SB) + boffs[S] + j * 16 * B_RB, 0);                                                   \
        BF[2 * j][0] = q4[0], BF[2 * j][1] = q4[1], BF[2 * j + 1][0] = q4[2], BF[2 * j + 1][1] = q4[3];    \
    }
#elif TA != 0
#define LOAD_FRAGS_B(BF, SB, S)                                                                            \
    UNROLL for (int j = 0; j < NI / 2; j++) {                                                              \
        uint q4[4];                                                                                        \
        LDSM_X4(q4, (SB) + boffs[j] + (S) * KSTEP * B_RB, 1);                                              \
        BF[2 * j][0] = q4[0], BF[2 * j][1] = q4[1], BF[2 * j + 1][0] = q4[2], BF[2 * j + 1][1] = q4[3];    \
    }
#else
#define LOAD_FRAGS_B(BF, SB, S)                                                                            \
    UNROLL for (int j = 0; j < NI; j++)                                                                    \
        UNROLL for (int q = 0; q < 2; q++) BF[j][q] = LDS32((SB) + boffs0 + ((S) * KSTEP + q * 4) * B_RB + j * 32)
#endif
#define LOAD_FRAGS(AF, BF, SA, S)                                                                          \
    do {                                                                                                   \
        LOAD_FRAGS_A(AF, SA, S);                                                                           \
        LOAD_FRAGS_B(BF, (SA) + A_BYTES, S);                                                               \
    } while (0)

/* The FFMA path's operand reads and FMAs: kernels/gemm_ffma.cl. */

#ifdef CONV_X
#define OUT_INDEX(m, n) (((long)((n) / CV_L) * M + (m)) * CV_L + (n) % CV_L)
#else
#define OUT_INDEX(m, n) (((long)bb * M + (m)) * N + (n))
#endif

/* PAIR_STORE: a lane's two adjacent outputs (fragment elements q, q + 1)
 * leave in one store where the output's rows allow (the 16-bit and tf32
 * products gain); not the float32 outputs of float16 operands (ESCALE) nor
 * tf32x3, which lost with it (measurements: docs/notes/kernels.md), nor
 * the convolutions' outputs (not rows of the product) */
#if !defined(FFMA) && !defined(NO_PAIR_STORE) && !defined(CONV_X) && !defined(CONV_W) && !defined(ESCALE) && \
    !defined(TF32X3)
#define PAIR_STORE
#endif
/* Two adjacent outputs (v0 at p, v1 after it, p aligned to the pair) in
 * one store: float2, or the pair converted by one cvt to f16x2 / bf16x2
 * (round to nearest even, as ST_1 / ST_2; a NaN becomes the canonical
 * one); the emulation stores them one by one */
#if defined(MMA_EMULATE) || (TO != 0 && TO != 1 && TO != 2)
#define mma_store2(p, v0, v1) (O_STORE((p), 0, (v0)), O_STORE((p), 1, (v1)))
#elif TO == 0
#define mma_store2(p, v0, v1) (*(__global float2 *)(p) = (float2)((v0), (v1)))
#else
/* v0 (low half) and v1 converted to the 16-bit output type */
inline uint mma_pack2(float v0, float v1)
{
    uint u;
#if TO == 1
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(v1), "f"(v0));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(v1), "f"(v0));
#endif
    return u;
}
#define mma_store2(p, v0, v1) (*(__global uint *)(p) = mma_pack2((v0), (v1)))
#endif
/* STAGE_OUT: an interior block's 16-bit outputs go through the free stages
 * (rows of BN padded by 16 bytes, so that a warp's pair writes hit 32
 * banks) and leave as 16-byte row chunks (gemm_mma_kernel.cl);
 * -DNO_STAGE_OUT keeps the pairs */
#define SO_ROW ((BN + 8) / 2) /* uints a staged row */
#if defined(PAIR_STORE) && (TO == 1 || TO == 2) && !defined(MMA_EMULATE) && !defined(NO_STAGE_OUT) && \
    BM * SO_ROW * 4 <= STAGES * STAGE_BYTES
#define STAGE_OUT
#endif

/* -DESCALE (src/backend/cl/gemm_tf32.c): float16 operands that carry tf32 values
 * scaled by a power of two per row of a and column of w, whose largest
 * finite magnitudes (float32 bits) esc holds, a's M then w's N; every
 * output is scaled back before the epilogue */
#ifdef ESCALE
#define ESCALE_PARAMS , __global const uint *esc
/* by multiplications: ldexp here cost a large share of the product's time (measurements: docs/notes/kernels.md) */
#define ESCALED(v, m, n) scale_pow2((v), -(tf32_half_exp(esc[m]) + tf32_half_exp(esc[M + (n)])))
#else
#define ESCALE_PARAMS
#define ESCALED(v, m, n) (v)
#endif
#ifndef SPLIT_SUM
#define SPLIT_PARAMS
#elif !defined(FFMA)
#error "SPLIT_SUM needs FFMA"
#endif

#if TA == 0
#define ELEM uint
#else
#define ELEM ushort
#endif
