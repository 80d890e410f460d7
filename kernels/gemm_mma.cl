/* gemm_mma.cl — the tensor-core GEMM (NVIDIA, sm_80+, inline PTX), built
 * as the program "gemm+gemm_ffma+gemm_mma" with -DGEMM_MMA: gemm.cl before
 * it gives the epilogue, the operand types and the loads it shares with
 * the other GEMM kernels; gemm_ffma.cl the float32-FMA path's operand
 * reads. src/cl/mma.c chooses the options and probes the device.
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
 * On by default in blocks of 128x128 or more (H100, 8192^3: bfloat16
 * 350-357 -> 383-400 TFLOP/s, float16 364-371 -> 390, tf32x3 57 -> 62;
 * plain tf32 161-165 -> 185 once the loop was unswitched, below); 64x64
 * blocks of tf32x3 lost (1024^3: 36 -> 27-32). -DFRAG_PIPE forces it,
 * -DNO_FRAG_PIPE turns it off. Needs an even number of k-steps per tile. */
#if !defined(FRAG_PIPE) && !defined(NO_FRAG_PIPE) && BM * BN >= 16384 && !defined(WGMMA)
#define FRAG_PIPE
#endif
#if defined(FRAG_PIPE) && ((BK / KSTEP) % 2 || defined(FFMA))
#undef FRAG_PIPE
#endif
/* FFMA_PIPE (FFMA): a k-step's operands loaded a step ahead, below. On by
 * default in the plain products' blocks of at most 4096 outputs (64x64,
 * 128x32; H200, 1024^3 in gemm.lua: 29.7-30.0 -> 31.2 TFLOP/s, the
 * default 64x64 blocks); the 128x64 blocks of 8 x 16
 * outputs lost (2048^3 tn 39.5 -> 33.8: 243 registers where they had 255
 * and ptxas's own hoisting), and the convolutions keep what they were
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
 * every block that does not load a step ahead (H100: 4096^3 tn 48.0-48.3
 * -> 50.7-51.2, 8192^3 with a copied 48.5-48.9 -> 51.5-52.2 TFLOP/s, conv
 * layers unchanged); row by row in those that do (1024^3 through the CUDA
 * driver: 61.7 against 62.8 us by columns, and 62.4-63.6 for seven other
 * orders). -DFFMA_COLUMNS=0 / =1 forces either. */
#if defined(FFMA) && !defined(FFMA_COLUMNS)
#ifdef FFMA_PIPE
#define FFMA_COLUMNS 0
#else
#define FFMA_COLUMNS 1
#endif
#endif
/* FFMA_SUB (FFMA): k-steps per read of an operand whose k dim is
 * contiguous, kernels/gemm_ffma.cl. 2 in the 64x64 blocks that load a step
 * ahead with both operands so (x @ w^T's small blocks; H100, nt 1024^3
 * 60.5-60.9 -> 57.7-58.1 us), 4 elsewhere (with 2: the 64x32 blocks lost
 * 2-4% in nt and nn, the 128x64 ones did not move). -DFFMA_SUB=2 / =4
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
#define AOFF(r, c) (A_PADDED ? (r) * A_RB + (c) * 16 : TOFF(A_CPR, r, c))
#if defined(WGMMA) && !B_KCONT
/* wgmma reads an n-contiguous B transposed from 128-byte-swizzled atoms of
 * 8 k-rows x 64 n: the tile is stored [n / 64][k][128 bytes], each row's
 * chunks XOR k % 8 */
#define BOFF(r, c) (((c) / 8) * (BK * 128) + (r) * 128 + (((c) % 8) ^ ((r) % 8)) * 16)
#define B_ROWB 128 /* bytes between a tile's rows within an atom column */
#else
#define BOFF(r, c) (B_PADDED ? (r) * B_RB + (c) * 16 : TOFF(B_CPR, r, c))
#define B_ROWB B_RB
#endif
#define A_ROWB A_RB
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
/* cvt.rna.tf32.f32: to nearest, ties away (Inf and NaN kept, NaN quiet) */
inline uint to_tf32(uint x)
{
    if ((x & 0x7f800000u) == 0x7f800000u) return (x & 0x007fffffu) ? 0x7fc00000u : x;
    return (x + 0x1000u) & 0xffffe000u;
}
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

#ifdef WGMMA
/* ---- wgmma (sm_90a) ----------------------------------------------------------------
 * Warpgroups (4 warps) stacked along m, each owning MI slabs of 64 rows
 * (MI = 1 or 2): per slab wgmma.m64n{BN}k{KSTEP} reads both operands
 * straight from the stage through matrix descriptors and accumulates BN/2
 * floats a thread, laid out as mma.m16n8's C fragments side by side (warp
 * w of the group: rows 16 w .. 16 w + 15 of each slab), so acc[i][j][q]
 * and the epilogue below serve both paths (FRAG_ROW). The operands
 * are k-contiguous rows of BK * ESZ = 32, 64 or 128 bytes: exactly the
 * hardware's 32-, 64- and 128-byte swizzles, which the copies' XOR
 * swizzle already is (SWZ_KEY above), so the stage needs no other layout.
 * NVIDIA's OpenCL compiles for sm_90, where ptxas refuses wgmma: every
 * wgmma line is written as a PTX comment marked "//@", which compiles
 * with the operands' registers allocated; program.c uncomments the marked
 * lines of the driver's PTX, retargets it to sm_90a and builds it again
 * (docs/gemm.md, "Hopper's wgmma"). */
#if defined(FFMA) || defined(TF32X3) || WN != 1 || WM % 4 || (MI != 1 && MI != 2) || MI * BN > 256 || !A_KCONT || \
    (!B_KCONT && (TA == 0 || BK % 16)) || (BK * ESZ != 32 && BK * ESZ != 64 && BK * ESZ != 128)
#error "WGMMA: warpgroups along m of 64 or 128 rows, A k-contiguous rows of 32, 64 or 128 bytes, B k- or (16-bit) n-contiguous"
#endif
#define WG_RB (BK * ESZ)
/* a warpgroup's MI slabs of 64 rows; warp w % 4 of it holds rows 16 w.. of each */
#define FRAG_ROW(i) ((wm / 4) * 4 * WTM + (i) * 64 + (wm % 4) * 16)
#define WG_MODE (WG_RB == 128 ? 1 : WG_RB == 64 ? 2 : 3)
/* the descriptor of a k-contiguous tile starting at local byte address
 * addr: 8-row groups 8 WG_RB apart, the swizzle (the leading offset is
 * unused by swizzled k-major tiles); a k-step further is addr + 32 */
inline ulong wg_desc(uint addr)
{
    return (ulong)((addr & 0x3FFFF) >> 4) | (1ul << 16) | ((ulong)(8 * WG_RB >> 4) << 32) | ((ulong)WG_MODE << 62);
}
#define WG_STEP(desc, bytes) ((desc) + (ulong)((bytes) >> 4))
#if B_KCONT
#define WG_BSTEP (KSTEP * ESZ) /* bytes from one k-step to the next along B */
#define WG_B_DESC(addr) wg_desc(addr)
#else
/* n-contiguous B: the leading offset steps between 64-column atoms, the
 * stride offset between 8-row groups of k; a k-step is 16 rows further */
#define WG_BSTEP (KSTEP * 128)
#define WG_B_DESC(addr) ((ulong)(((addr) & 0x3FFFF) >> 4) | ((ulong)(BK * 128 >> 4) << 16) | ((ulong)(1024 >> 4) << 32) | (1ul << 62))
#endif
#ifdef MMA_EMULATE
/* What the hardware reads through a descriptor: element (r, k) at start +
 * (r / 8) SBO + (r % 8) width + k ESZ, address bits 4.. XOR bits 7.. */
inline float wg_elem(__local const uchar *smem, ulong desc, int r, int k)
{
    const uint start = (uint)(desc & 0x3FFF) << 4, sbo = (uint)((desc >> 32) & 0x3FFF) << 4, mode = (uint)(desc >> 62);
    const uint width = mode == 1 ? 128 : mode == 2 ? 64 : 32;
    uint addr = start + (uint)(r / 8) * sbo + (uint)(r % 8) * width + (uint)k * ESZ;
    addr ^= ((addr >> 7) & (width / 16 - 1)) << 4;
#if TA == 0
    return elem_float(*(__local const uint *)(smem + addr));
#else
    return elem_float(*(__local const ushort *)(smem + addr));
#endif
}
/* B read transposed: element (n, k) at start + (n / 64) LBO + (k / 8) SBO
 * + (k % 8) 128 + n ESZ % 128, address bits 4..6 XOR bits 7..9 */
inline float wg_elem_t(__local const uchar *smem, ulong desc, int n, int k)
{
    const uint start = (uint)(desc & 0x3FFF) << 4, lbo = (uint)((desc >> 16) & 0x3FFF) << 4;
    const uint sbo = (uint)((desc >> 32) & 0x3FFF) << 4;
    uint addr = start + (uint)(n / 64) * lbo + (uint)(k / 8) * sbo + (uint)(k % 8) * 128 + (uint)(n % 64) * ESZ;
    addr ^= ((addr >> 7) & 7) << 4;
    return elem_float(*(__local const ushort *)(smem + addr));
}
inline void wg_emul(__private float *d, __local const uchar *smem, ulong da, ulong db, int warp, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < BN / 8; j++)
        for (int q = 0; q < 4; q++) {
            const int r = 16 * (warp % 4) + g + (q >> 1) * 8, c = 8 * j + 2 * t + (q & 1);
            float s = 0;
#if B_KCONT
            for (int k = 0; k < KSTEP; k++) s += wg_elem(smem, da, r, k) * wg_elem(smem, db, c, k);
#else
            for (int k = 0; k < KSTEP; k++) s += wg_elem(smem, da, r, k) * wg_elem_t(smem, db, c, k);
#endif
            d[4 * j + q] += s;
        }
}
#define WG_MMA(acc, da, db) wg_emul(&acc[0][0], smem, da, db, warp, lane)
#define WG_FENCE()
#define WG_PROXY_FENCE()
#define WG_COMMIT()
#define WG_WAIT_ALL(acc)
#define WG_SBASE 0u /* descriptors hold offsets from smem */
#else
#define WG_STR_(x) #x
#define WG_STR(x) WG_STR_(x)
#if TA == 0
#define WG_OP "wgmma.mma_async.sync.aligned.m64n" WG_STR(BN) "k8.f32.tf32.tf32"
#define WG_TRANS ""
#else
#if TA == 1
#define WG_OP "wgmma.mma_async.sync.aligned.m64n" WG_STR(BN) "k16.f32.f16.f16"
#else
#define WG_OP "wgmma.mma_async.sync.aligned.m64n" WG_STR(BN) "k16.f32.bf16.bf16"
#endif
#if B_KCONT
#define WG_TRANS ", 0, 0" /* both operands k-major */
#else
#define WG_TRANS ", 0, 1" /* B read transposed */
#endif
#endif
/* operand lists: BN / 2 accumulators %0.., then the two descriptors and a 1 */
#define WG_C4(d, j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define WG_C16(d, j) WG_C4(d, j), WG_C4(d, (j) + 1), WG_C4(d, (j) + 2), WG_C4(d, (j) + 3)
#define WG_T16(a) /* %a0 .. %a9 */ "%" #a "0,%" #a "1,%" #a "2,%" #a "3,%" #a "4,%" #a "5,%" #a "6,%" #a "7,%" #a "8,%" #a "9"
#define WG_T0 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9"
#define WG_T10_59 WG_T16(1) "," WG_T16(2) "," WG_T16(3) "," WG_T16(4) "," WG_T16(5)
#define WG_A32 WG_T0 "," WG_T16(1) "," WG_T16(2) ",%30,%31"
#define WG_A64 WG_T0 "," WG_T10_59 ",%60,%61,%62,%63"
#define WG_A128 WG_T0 "," WG_T10_59 "," WG_T16(6) "," WG_T16(7) "," WG_T16(8) "," WG_T16(9) "," WG_T16(10) "," \
    WG_T16(11) ",%120,%121,%122,%123,%124,%125,%126,%127"
#if BN == 64
#define WG_ACC WG_A32
#define WG_DESCS "%32, %33"
#define WG_PRED "%34"
#define WG_CONS(d) WG_C16(d, 0), WG_C16(d, 4)
#elif BN == 128
#define WG_ACC WG_A64
#define WG_DESCS "%64, %65"
#define WG_PRED "%66"
#define WG_CONS(d) WG_C16(d, 0), WG_C16(d, 4), WG_C16(d, 8), WG_C16(d, 12)
#elif BN == 256
#define WG_ACC WG_A128
#define WG_DESCS "%128, %129"
#define WG_PRED "%130"
#define WG_CONS(d) WG_C16(d, 0), WG_C16(d, 4), WG_C16(d, 8), WG_C16(d, 12), WG_C16(d, 16), WG_C16(d, 20), \
    WG_C16(d, 24), WG_C16(d, 28)
#else
#error "WGMMA: BN is 64, 128 or 256"
#endif
/* the scale-d predicate comes from the last operand (1: accumulate) */
#define WG_MMA(acc, da, db)                                                                               \
    asm volatile("//@{ .reg .pred p;\n//@setp.ne.b32 p, " WG_PRED ", 0;\n//@" WG_OP " {" WG_ACC "}, "    \
                 WG_DESCS ", p, 1, 1" WG_TRANS ";\n//@}\n"                                                \
                 : WG_CONS(acc) : "l"(da), "l"(db), "r"(1) : "memory")
#define WG_FENCE() asm volatile("//@wgmma.fence.sync.aligned;\n" ::: "memory")
/* cp.async's writes (the generic proxy) made visible to wgmma's reads */
#define WG_PROXY_FENCE() asm volatile("//@fence.proxy.async.shared::cta;\n" ::: "memory")
/* the wgmmas issued since the last commit as one group */
#define WG_COMMIT() asm volatile("//@wgmma.commit_group.sync.aligned;\n" ::: "memory")
/* every group done; the accumulators are operands, so that no read of them
 * moves above the wait */
#define WG_WAIT_ALL(acc) asm volatile("//@wgmma.wait_group.sync.aligned 0;\n" : WG_CONS_ALL(acc) :: "memory")
#if MI == 1
#define WG_CONS_ALL(acc) WG_CONS(acc[0])
#else
#define WG_CONS_ALL(acc) WG_CONS(acc[0]), WG_CONS(acc[1])
#endif
#define WG_SBASE sbase
#endif
/* The turn of the k loop: every thread's part of tile kt has landed (and
 * is rounded), and every warpgroup is done with tile kt - 1, whose stage
 * the copies of tile kt + FETCH_AHEAD then take */
#define WG_TURN()                                                                                         \
    do {                                                                                                  \
        WG_PROXY_FENCE();                                                                                 \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                     \
        PIPE_FETCH(ws);                                                                                   \
    } while (0)
#if TA == 0 && !defined(NO_WG_ROUND)
/* wgmma reads a float32 operand as tf32 by truncation, which biases every
 * product of positive values by 2^-11 on average (see to_tf32): each
 * thread rounds the chunks it copied into the stage due (its own copies
 * have landed) to the nearest tf32 in place, before the barrier */
inline void wg_round16(__local uchar *p)
{
    __local uint4 *q = (__local uint4 *)p;
    uint4 v = *q;
    v.x = to_tf32(v.x), v.y = to_tf32(v.y), v.z = to_tf32(v.z), v.w = to_tf32(v.w);
    *q = v;
}
#define WG_ROUND_OWN(stage)                                                                               \
    do {                                                                                                  \
        __local uchar *st_ = smem + (stage) * STAGE_BYTES;                                                \
        UNROLL for (int j = 0; j < NA; j++) if (X_PRESENT(A, j)) wg_round16(st_ + X_SOFF(A, j));          \
        UNROLL for (int j = 0; j < NB; j++) if (X_PRESENT(B, j)) wg_round16(st_ + A_BYTES + X_SOFF(B, j)); \
    } while (0)
#else
#define WG_ROUND_OWN(stage)
#endif
#else
#define WG_PROXY_FENCE()
#define WG_ROUND_OWN(stage)
#define FRAG_ROW(i) (wm * WTM + (i) * 16) /* the first row of mma tile i of this warp */
#endif /* WGMMA */

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
 * fixed offsets) ran at 227 against 398 TFLOP/s (bfloat16 8192^3, H100): a
 * warp's copies then touch 32 rows at once. */
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

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void gemm_mma(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
              __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K, int nbatch,
              EPI_PARAMS SPLIT_PARAMS)
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
    const ulong wg_a0 = wg_desc(WG_SBASE + (uint)(warp / 4) * 64 * MI * WG_RB), wg_b0 = WG_B_DESC(WG_SBASE + A_BYTES);
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
         * two copy paths into one stream: 231 instructions per k-tile
         * around 64 mma, 150 now (SASS of the bfloat16 128x128 kernel;
         * 8192^3 410 -> 450 TFLOP/s). -DNO_UNSWITCH keeps one loop. */
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
                    WG_MMA(acc[i], WG_STEP(wg_a0, sa + i * 64 * WG_RB + s * KSTEP * ESZ), WG_STEP(wg_b0, sa + s * WG_BSTEP));
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
                    O_STORE(out, ooff + OUT_INDEX(m, n), epilogue(acc[i][j], bb, m, n, EPI_ARGS));
            }
#else
        UNROLL for (int i = 0; i < MI; i++)
            UNROLL for (int j = 0; j < NI; j++)
                UNROLL for (int q = 0; q < 4; q++) {
                    int m = m0 + FRAG_ROW(i) + g + (q >> 1) * 8, n = n0 + wn * WTN + j * 8 + 2 * t + (q & 1);
                    if (m < M && n < N)
                        O_STORE(out, ooff + OUT_INDEX(m, n), epilogue(acc[i][j][q], bb, m, n, EPI_ARGS));
                }
#endif
    }
}
