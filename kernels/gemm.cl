/* gemm.cl — batched GEMM with a fused epilogue:
 *   out[b] = act(alpha * (a[b] @ w[b]) + beta * c[b] + bias)
 * a [B,M,K], w [B,K,N] with any strides (batch stride 0 = broadcast), out
 * [B,M,N] contiguous, c [B,M,N] any strides (optional), bias a vector along
 * N or M (optional). Accumulates in A_CT (float for float32/16/bf16, double
 * for float64); float16/bfloat16 are storage types only (vload_half, bit
 * shifts), so no cl_khr_fp16 is needed. out may not alias a, w, c or bias.
 *
 * Two kernels, both configured entirely by -D options (src/cl/gemm.c builds
 * them; every distinct option set is its own cached program):
 *   gemm_tiled   register-tiled SIMT kernel for GPUs: local-memory staging,
 *                per-thread MWI x NWI outputs, double-buffered local tiles
 *                with the next K-tile prefetched into registers.
 *   gemm_direct  for CPU OpenCL devices (PoCL): no local memory, each work
 *                item keeps a CMR x CNR block of outputs in vector
 *                registers and streams its operands through the caches.
 *
 * The epilogue is chosen by run-time arguments (see epilogue below).
 */

/* Loops over register arrays are unrolled so the arrays are indexed by
 * constants only (a run-time index would move them to slow memory). The
 * host rebuilds with -DNC_NO_UNROLL_PRAGMA if a compiler rejects it. */
#ifdef NC_NO_UNROLL_PRAGMA
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif

/* ---- vector helpers ---------------------------------------------------------
 * VT(T, n) is the n-wide vector type (n = 1: the scalar). GETn(v, e) reads
 * component e of an n-wide vector; e is always a constant after unrolling,
 * so the ternaries fold away. */
#define VT_1(T) T
#define VT_2(T) CAT(T, 2)
#define VT_4(T) CAT(T, 4)
#define VT_8(T) CAT(T, 8)
#define VT_16(T) CAT(T, 16)
#define VT(T, n) CAT(VT_, n)(T)
#define GET1(v, e) (v)
#define GET2(v, e) ((e) == 0 ? (v).s0 : (v).s1)
#define GET4(v, e) ((e) < 2 ? GET2((v).s01, (e)) : GET2((v).s23, (e) - 2))
#define GET8(v, e) ((e) < 4 ? GET4((v).s0123, (e)) : GET4((v).s4567, (e) - 4))
#define GET16(v, e) ((e) < 8 ? GET8((v).s01234567, (e)) : GET8((v).s89abcdef, (e) - 8))
#define GETV(n, v, e) CAT(GET, n)(v, e)

/* An n-wide vector of compute type from element i of a global A_T array;
 * i is a multiple of n and the element aligned (the host checked). */
#if TA == 1
#define VLOAD_1(p, i) vload_half((i), (p))
#define VLOAD_2(p, i) vload_half2(0, (p) + (i))
#define VLOAD_4(p, i) vload_half4(0, (p) + (i))
#define VLOAD_8(p, i) vload_half8(0, (p) + (i))
#define VLOAD_16(p, i) vload_half16(0, (p) + (i))
#elif TA == 2
#define VLOAD_1(p, i) bf16_load((p)[i])
#define VLOAD_2(p, i) as_float2(convert_uint2(*(__global const ushort2 *)((p) + (i))) << 16)
#define VLOAD_4(p, i) as_float4(convert_uint4(*(__global const ushort4 *)((p) + (i))) << 16)
#define VLOAD_8(p, i) as_float8(convert_uint8(*(__global const ushort8 *)((p) + (i))) << 16)
#define VLOAD_16(p, i) as_float16(convert_uint16(*(__global const ushort16 *)((p) + (i))) << 16)
#else
#define VLOAD_1(p, i) ((p)[i])
#define VLOAD_2(p, i) (*(__global const VT(A_T, 2) *)((p) + (i)))
#define VLOAD_4(p, i) (*(__global const VT(A_T, 4) *)((p) + (i)))
#define VLOAD_8(p, i) (*(__global const VT(A_T, 8) *)((p) + (i)))
#define VLOAD_16(p, i) (*(__global const VT(A_T, 16) *)((p) + (i)))
#endif
#define VLOAD(n, p, i) CAT(VLOAD_, n)(p, i)
/* The same without the alignment promise (the CPU kernel's rows). */
#if TA == 1
#define VLOADU_8(p, i) vload_half8(0, (p) + (i))
#define VLOADU_16(p, i) vload_half16(0, (p) + (i))
#elif TA == 2
#define VLOADU_8(p, i) as_float8(convert_uint8(vload8(0, (p) + (i))) << 16)
#define VLOADU_16(p, i) as_float16(convert_uint16(vload16(0, (p) + (i))) << 16)
#else
#define VLOADU_8(p, i) vload8(0, (p) + (i))
#define VLOADU_16(p, i) vload16(0, (p) + (i))
#endif
/* An n-wide vector from a private array. */
#define VFROM_1(t) ((t)[0])
#define VFROM_2(t) vload2(0, t)
#define VFROM_4(t) vload4(0, t)
#define VFROM_8(t) vload8(0, t)
#define VFROM_16(t) vload16(0, t)
#define VLOADU_1(p, i) A_LOAD(p, i)
#define VLOADU_2(p, i) ((VT(A_CT, 2))(A_LOAD(p, i), A_LOAD(p, (i) + 1)))
#define VLOADU_4(p, i) ((VT(A_CT, 4))(VLOADU_2(p, i), VLOADU_2(p, (i) + 2)))

/* ---- epilogue -------------------------------------------------------------
 * Chosen at run time (flags and act are uniform, and the epilogue runs
 * once per output against K multiply-adds), so one program serves every
 * epilogue: flags bit 0 adds beta * c, bit 1 a bias along n, bit 2 a bias
 * along m; act is a netcl_op code (same formulas as ops.cl, so fused and
 * unfused results agree), anything else meaning none. */
inline A_CT activate(A_CT x, int act, A_CT p1)
{
    switch (act) {
    case 5: return OP_RELU(x);
    case 6: return OP_SIGMOID(x);
    case 7: return OP_TANH(x);
    case 22: return OP_SILU(x);
    case 23: return OP_GELU(x);
    case 24: return OP_GELU_TANH(x);
    case 26: return OP_RELU6(x);
    case 27: return OP_LEAKY_RELU(x);
    default: return x;
    }
}

/* The arguments every kernel of the family takes after the sizes, in order. */
#define EPI_PARAMS                                                                                       \
    A_CT alpha, A_CT beta, __global const A_T *c, long coff, long cs0, long cs1, long cs2,               \
        __global const A_T *bias, long boff, long bstride, A_CT p1, int flags, int act
/* The epilogue of one output element (batch b, row m, col n, product v). */
inline A_CT epilogue(A_CT v, long b, long m, long n, EPI_PARAMS)
{
    v *= alpha;
    if (flags & 1) v += beta * A_LOAD(c, coff + b * cs0 + m * cs1 + n * cs2);
    if (flags & 6) v += A_LOAD(bias, boff + ((flags & 2) ? n : m) * bstride);
    return activate(v, act, p1);
}
#define EPI_ARGS alpha, beta, c, coff, cs0, cs1, cs2, bias, boff, bstride, p1, flags, act

#ifdef GEMM_TILED
/* ---- gemm_tiled ----------------------------------------------------------------
 * Options: MWG NWG KWG (work-group tile), MDIMC NDIMC (threads along m, n;
 * local size MDIMC*NDIMC, 1-D), VWM VWN (a thread's rows/cols come in
 * contiguous chunks of VWM/VWN, read from local memory as vectors; chunks
 * of different threads interleave, so a warp's reads are conflict-free),
 * A_KFAST (1: a's tile is read along k, its contiguous dim when VWA > 1;
 * 0: along m), B_KFAST likewise for w (0: along n), VWA VWB (global vector
 * widths; > 1 only where that dim has stride 1 and the host checked
 * alignment and divisibility), PADA PADB (local row padding, multiples of
 * VWM/VWN, against bank conflicts of the transposing stores).
 *
 * Local tiles are stored k-major: as[k][m], bs[k][n], two of each (the
 * tile being multiplied and the next one). Each iteration issues the global
 * loads of tile t+1 into registers, multiplies tile t from local memory,
 * then stores the registers into the other buffer: one barrier per K-tile.
 * Grid: dim 0 = n-tiles * MDIMC*NDIMC, dim 1 = m-tiles, dim 2 = batches
 * (dims 1 and 2 loop when the host caps them). */
#define THREADS (MDIMC * NDIMC)
#define MWI (MWG / MDIMC)
#define NWI (NWG / NDIMC)
#define LDA (MWG + PADA)
#define LDB (NWG + PADB)
#define LA (MWG * KWG / (THREADS * VWA))   /* a vectors each thread loads per tile */
#define LB (KWG * NWG / (THREADS * VWB))

#if A_KFAST
#define A_VROW(v) ((v) / (KWG / VWA))          /* m of the a-vector v */
#define A_VCOL(v) (((v) % (KWG / VWA)) * VWA)  /* k of its first element */
#else
#define A_VROW(v) (((v) % (MWG / VWA)) * VWA)
#define A_VCOL(v) ((v) / (MWG / VWA))
#endif
#if B_KFAST
#define B_VK(v) (((v) % (KWG / VWB)) * VWB)
#define B_VN(v) ((v) / (KWG / VWB))
#else
#define B_VK(v) ((v) / (NWG / VWB))
#define B_VN(v) (((v) % (NWG / VWB)) * VWB)
#endif

/* Loads tile (m0, k0) of a into registers: vector j of thread tid. Elements
 * outside M x K read as 0 (a vector lies wholly inside or outside). */
#define LOAD_A(ra, ap, k0)                                                                              \
    UNROLL for (int j = 0; j < LA; j++) {                                                   \
        int v = tid + j * THREADS, mm = A_VROW(v), kk = A_VCOL(v);                                     \
        bool ok = m0 + mm < M && k0 + kk < K;                                                          \
        ra[j] = ok ? VLOAD(VWA, ap, (long)mm * as1 + (long)(k0 + kk) * as2) : (VT(A_CT, VWA))0;         \
    }
#define LOAD_B(rb, bp, k0)                                                                              \
    UNROLL for (int j = 0; j < LB; j++) {                                                   \
        int v = tid + j * THREADS, kk = B_VK(v), nn = B_VN(v);                                         \
        bool ok = k0 + kk < K && n0 + nn < N;                                                          \
        rb[j] = ok ? VLOAD(VWB, bp, (long)(k0 + kk) * bs1 + (long)nn * bs2) : (VT(A_CT, VWB))0;         \
    }
/* Registers -> local tile (k-major). */
#define STORE_A(ra, dst)                                                                                \
    UNROLL for (int j = 0; j < LA; j++) {                                                   \
        int v = tid + j * THREADS, mm = A_VROW(v), kk = A_VCOL(v);                                     \
        UNROLL for (int e = 0; e < VWA; e++) {                                              \
            if (A_KFAST) dst[(kk + e) * LDA + mm] = GETV(VWA, ra[j], e);                               \
            else dst[kk * LDA + mm + e] = GETV(VWA, ra[j], e);                                         \
        }                                                                                              \
    }
#define STORE_B(rb, dst)                                                                                \
    UNROLL for (int j = 0; j < LB; j++) {                                                   \
        int v = tid + j * THREADS, kk = B_VK(v), nn = B_VN(v);                                         \
        UNROLL for (int e = 0; e < VWB; e++) {                                              \
            if (B_KFAST) dst[(kk + e) * LDB + nn] = GETV(VWB, rb[j], e);                               \
            else dst[kk * LDB + nn + e] = GETV(VWB, rb[j], e);                                         \
        }                                                                                              \
    }

/* out [B,M,N] contiguous at ooff; a at aoff with strides as0..2, w likewise.
 * Tile shape MWG x NWG per work-group; each thread MWI x NWI outputs. */
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void gemm_tiled(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
                __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K, int nbatch,
                EPI_PARAMS)
{
    __local A_CT as[2 * KWG * LDA] __attribute__((aligned(64)));
    __local A_CT bs[2 * KWG * LDB] __attribute__((aligned(64)));
    const int tid = get_local_id(0), tm = tid / NDIMC, tn = tid % NDIMC;
    const int n0 = get_group_id(0) * NWG;
    const int mtiles = (M + MWG - 1) / MWG;
    for (int bb = get_group_id(2); bb < nbatch; bb += get_num_groups(2))
    for (int mt = get_group_id(1); mt < mtiles; mt += get_num_groups(1)) {
        const int m0 = mt * MWG;
        __global const A_T *ap = a + aoff + bb * as0 + (long)m0 * as1;
        __global const A_T *bp = w + woff + bb * bs0 + (long)n0 * bs2;
        A_CT acc[MWI][NWI];
        UNROLL for (int i = 0; i < MWI; i++)
            UNROLL for (int j = 0; j < NWI; j++) acc[i][j] = 0;
        VT(A_CT, VWA) ra[LA];
        VT(A_CT, VWB) rb[LB];
        LOAD_A(ra, ap, 0);
        LOAD_B(rb, bp, 0);
        STORE_A(ra, as);
        STORE_B(rb, bs);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int ntiles = (K + KWG - 1) / KWG;
        for (int t = 0; t < ntiles; t++) {
            const int cur = t & 1;
            if (t + 1 < ntiles) { /* in flight while this tile is multiplied */
                LOAD_A(ra, ap, (t + 1) * KWG);
                LOAD_B(rb, bp, (t + 1) * KWG);
            }
            __local const A_CT *at = as + cur * KWG * LDA, *bt = bs + cur * KWG * LDB;
            UNROLL for (int kk = 0; kk < KWG; kk++) {
                A_CT av[MWI], bv[NWI];
                UNROLL for (int i = 0; i < MWI / VWM; i++) {
                    VT(A_CT, VWM) x = *(__local const VT(A_CT, VWM) *)(at + kk * LDA + i * MDIMC * VWM + tm * VWM);
                    UNROLL for (int e = 0; e < VWM; e++) av[i * VWM + e] = GETV(VWM, x, e);
                }
                UNROLL for (int j = 0; j < NWI / VWN; j++) {
                    VT(A_CT, VWN) y = *(__local const VT(A_CT, VWN) *)(bt + kk * LDB + j * NDIMC * VWN + tn * VWN);
                    UNROLL for (int e = 0; e < VWN; e++) bv[j * VWN + e] = GETV(VWN, y, e);
                }
                UNROLL for (int i = 0; i < MWI; i++)
                    UNROLL for (int j = 0; j < NWI; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
            }
            if (t + 1 < ntiles) {
                STORE_A(ra, (as + (1 - cur) * KWG * LDA));
                STORE_B(rb, (bs + (1 - cur) * KWG * LDB));
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* thread (tm, tn) holds rows (i/VWM)*MDIMC*VWM + tm*VWM + i%VWM, cols likewise */
        UNROLL for (int i = 0; i < MWI; i++) {
            int m = m0 + (i / VWM) * MDIMC * VWM + tm * VWM + i % VWM;
            UNROLL for (int j = 0; j < NWI; j++) {
                int n = n0 + (j / VWN) * NDIMC * VWN + tn * VWN + j % VWN;
                if (m < M && n < N)
                    O_STORE(out, ooff + ((long)bb * M + m) * N + n, epilogue(acc[i][j], bb, m, n, EPI_ARGS));
            }
        }
    }
}
#endif /* GEMM_TILED */

#ifdef GEMM_DIRECT
/* ---- gemm_direct ----------------------------------------------------------------
 * For CPUs (PoCL compiles each work-group into a loop over its items, and
 * local memory is ordinary cached memory, so staging buys nothing). Each
 * work item computes rows [m0, m0+CMR) x cols [n0, n0+CNR) of one batch,
 * holding CMR vectors of CNR accumulators (CNR = 8 or 16 fills an AVX2 /
 * AVX-512 register); per k it broadcasts CMR values of a and loads one
 * CNR-wide row of w (a vector load when VWB == CNR, else a strided gather).
 * Rows and cols past the edge are clamped for loads and not stored.
 * Options: CMR, CNR, VWB (CNR: vector loads of w rows), KCH (K chunk the
 * work-group walks in step, 0 = none).
 * Grid: dim 0 = n-blocks, dim 1 = m-blocks, dim 2 = batches (looped). */
__kernel void gemm_direct(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
                          __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K,
                          int nbatch, EPI_PARAMS)
{
    /* items past the edge compute clamped copies and store nothing: with
     * KCH they must still reach every barrier */
    const int n0 = get_global_id(0) * CNR, m0 = get_global_id(1) * CMR;
    const int nc0 = min(n0, N - 1);
    const bool full_n = n0 + CNR <= N;
#if KCH /* the host's work-group is 1 deep in dim 2: the whole group takes one batch */
    for (int bb = get_group_id(2); bb < nbatch; bb += get_num_groups(2)) {
#else
    for (int bb = get_global_id(2); bb < nbatch; bb += get_global_size(2)) {
#endif
        __global const A_T *ap = a + aoff + bb * as0;
        __global const A_T *bp = w + woff + bb * bs0 + (long)nc0 * bs2;
        long arow[CMR];
        UNROLL for (int i = 0; i < CMR; i++) arow[i] = (long)min(m0 + i, M - 1) * as1;
        VT(A_CT, CNR) acc[CMR];
        UNROLL for (int i = 0; i < CMR; i++) acc[i] = 0;
#if KCH
        /* K in chunks, the work-group in step: PoCL runs each chunk for all
         * its items before the next, so the group's panels of a and w for
         * one chunk stay in cache while every item uses them */
        for (int kc = 0; kc < K; kc += KCH) {
            const int kend = min(kc + KCH, K);
#else
        {
            const int kc = 0, kend = K;
#endif
            for (int k = kc; k < kend; k++) {
                VT(A_CT, CNR) bv;
#if VWB == CNR
                if (full_n) bv = CAT(VLOADU_, CNR)(bp, (long)k * bs1);
                else
#endif
                {
                    A_CT tmp[CNR];
                    UNROLL for (int j = 0; j < CNR; j++)
                        tmp[j] = A_LOAD(bp, (long)k * bs1 + (long)min(j, N - 1 - nc0) * bs2);
                    bv = CAT(VFROM_, CNR)(tmp);
                }
                UNROLL for (int i = 0; i < CMR; i++)
                    acc[i] = fma((VT(A_CT, CNR))A_LOAD(ap, arow[i] + (long)k * as2), bv, acc[i]);
            }
#if KCH
            barrier(CLK_LOCAL_MEM_FENCE);
#endif
        }
        if (n0 < N)
            UNROLL for (int i = 0; i < CMR; i++) {
                int m = m0 + i;
                UNROLL for (int j = 0; j < CNR; j++) {
                    int n = n0 + j;
                    if (m < M && n < N)
                        O_STORE(out, ooff + ((long)bb * M + m) * N + n, epilogue(GETV(CNR, acc[i], j), bb, m, n, EPI_ARGS));
                }
            }
        (void)full_n;
    }
}
#endif /* GEMM_DIRECT */

#ifdef GEMM_MMA
/* ---- gemm_mma ------------------------------------------------------------------
 * Tensor cores through inline PTX (NVIDIA, sm_80+): TA = 0 float32 inputs
 * rounded to tf32 (cvt.rna.tf32.f32) and mma.m16n8k8; TA = 1/2 float16 /
 * bfloat16 with mma.m16n8k16; float32 accumulators either way.
 * Options: BM BN BK (block tile), WM WN (warps along m, n; each warp owns a
 * (BM/WM) x (BN/WN) tile of MI x NI mma tiles), STAGES (cp.async pipeline
 * depth), A_KCONT / B_KCONT (1: the operand's k dim is contiguous; else m
 * resp. n is), LDSM (16-bit types: fragments through ldmatrix.x4, .trans
 * for the layouts whose k dim is not contiguous; else 16/32-bit local
 * loads), MMA_EMULATE (PoCL testing: plain OpenCL stand-ins for every
 * PTX instruction, with the same fragment layouts, exchanging fragments
 * through local memory).
 * Global -> local: 16-byte cp.async chunks along each operand's contiguous
 * dim (the host checked alignment and that the contiguous size is a
 * multiple of the chunk); chunks past the edge are zero-filled (src-size
 * 0). Local tiles mirror the global layout, rows padded against bank
 * conflicts.
 * Grid: dim 0 = n-tiles * THREADS, dim 1 = m-tiles, dim 2 = batches. */
#define THREADS (WM * WN * 32)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#if TA == 0
#define KSTEP 8
#define ELEM float
#define CHUNK 4
#else
#define KSTEP 16
#define ELEM ushort
#define CHUNK 8
#endif
/* local tile geometry: row length and padding (elements) */
#if A_KCONT
#define LDA (BK + 16 / (int)sizeof(ELEM))
#define A_TILE (BM * LDA)
#define AS(p, m, k) (p)[(m) * LDA + (k)]
#else
#define LDA (BM + 8)
#define A_TILE (BK * LDA)
#define AS(p, m, k) (p)[(k) * LDA + (m)]
#endif
#if B_KCONT
#define LDB (BK + 16 / (int)sizeof(ELEM))
#define B_TILE (BN * LDB)
#define BS(p, k, n) (p)[(n) * LDB + (k)]
#else
#define LDB (BN + 8)
#define B_TILE (BK * LDB)
#define BS(p, k, n) (p)[(k) * LDB + (n)]
#endif
#ifndef LDSM
#define LDSM 0
#endif
#if LDSM && TA == 0
#error "ldmatrix serves the 16-bit types only"
#endif
#define NA ((BM * BK / CHUNK + THREADS - 1) / THREADS)   /* a chunks per thread and tile */
#define NB ((BN * BK / CHUNK + THREADS - 1) / THREADS)

#ifdef MMA_EMULATE
/* 16 bytes from src (or zeros) to dst: what cp.async does, done at once */
inline void cp_async16(__local ELEM *dst, __global const ELEM *src, bool ok)
{
    UNROLL for (int e = 0; e < CHUNK; e++) dst[e] = ok ? src[e] : (ELEM)0;
}
#define CP_COMMIT()
#define CP_WAIT(n)
inline uint to_tf32(float x)
{
    uint u = as_uint(x);   /* round to nearest, ties away from zero, 10 mantissa bits */
    return (u + 0x1000u) & 0xffffe000u;
}
inline float elem_float(uint bits)
{
#if TA == 1
    ushort h = (ushort)bits;
    return vload_half(0, (const __private half *)&h);
#elif TA == 2
    return as_float(bits << 16);
#else
    return as_float(bits);
#endif
}
/* One warp's mma: each lane scatters its fragments to the warp's scratch
 * (row-major A 16 x KSTEP, B KSTEP x 8), then computes its 4 outputs. */
inline void mma_emul(__private float *d, __private const uint *a, __private const uint *b, __local float *xa,
                     __local float *xb, int lane)
{
    const int g = lane >> 2, t = lane & 3;
#if TA == 0
    xa[g * 8 + t] = as_float(a[0]);
    xa[(g + 8) * 8 + t] = as_float(a[1]);
    xa[g * 8 + t + 4] = as_float(a[2]);
    xa[(g + 8) * 8 + t + 4] = as_float(a[3]);
    xb[t * 8 + g] = as_float(b[0]);
    xb[(t + 4) * 8 + g] = as_float(b[1]);
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
/* ldmatrix .x4 (.trans): lane l names the row (element offset off into
 * base) of matrix l/8; non-trans, lane l receives row l/4, cols 2(l%4) and
 * +1 of each matrix; trans, rows 2(l%4) and +1 of col l/4. */
inline void ldsm_emul(__private uint *r, __local const ELEM *base, int off, int trans, __local int *xo, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    xo[lane] = off;
    barrier(CLK_LOCAL_MEM_FENCE);
    UNROLL for (int j = 0; j < 4; j++) {
        if (trans) r[j] = (uint)base[xo[8 * j + 2 * t] + g] | ((uint)base[xo[8 * j + 2 * t + 1] + g] << 16);
        else r[j] = (uint)base[xo[8 * j + g] + 2 * t] | ((uint)base[xo[8 * j + g] + 2 * t + 1] << 16);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define LDSM_X4(r, base, off, trans) ldsm_emul(r, base, off, trans, xo + warp * 32, lane)
#else
inline void cp_async16(__local ELEM *dst, __global const ELEM *src, bool ok)
{
    /* a __local pointer is already a shared-window address on NVPTX */
    uint s = (uint)(ulong)dst;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"((ulong)src), "r"(ok ? 16 : 0)
                 : "memory");
}
#define CP_COMMIT() asm volatile("cp.async.commit_group;\n" ::: "memory")
#define LDSM_X4(r, base, off, trans)                                                                       \
    do {                                                                                                   \
        uint s_ = (uint)(ulong)((base) + (off));                                                           \
        if (trans)                                                                                         \
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"          \
                         : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"(s_) : "memory");    \
        else                                                                                               \
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"                \
                         : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"(s_) : "memory");    \
    } while (0)
#define CP_WAIT(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory")
inline uint to_tf32(float x)
{
    uint u;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
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
#endif

/* Issues the cp.async chunks of k-tile kt into local stage buffers. */
#if A_KCONT
#define A_CHUNK_MK(c) int mm = (c) / (BK / CHUNK), kk = ((c) % (BK / CHUNK)) * CHUNK
#else
#define A_CHUNK_MK(c) int kk = (c) / (BM / CHUNK), mm = ((c) % (BM / CHUNK)) * CHUNK
#endif
#if B_KCONT
#define B_CHUNK_KN(c) int nn = (c) / (BK / CHUNK), kk = ((c) % (BK / CHUNK)) * CHUNK
#else
#define B_CHUNK_KN(c) int kk = (c) / (BN / CHUNK), nn = ((c) % (BN / CHUNK)) * CHUNK
#endif
#define LOAD_TILE(kt, stage)                                                                               \
    do {                                                                                                   \
        const int k0 = (kt) * BK;                                                                          \
        __local ELEM *sa = as + (stage) * A_TILE, *sb = bs + (stage) * B_TILE;                             \
        UNROLL for (int j = 0; j < NA; j++) {                                                              \
            int c = tid + j * THREADS;                                                                     \
            if (c < BM * BK / CHUNK) {                                                                     \
                A_CHUNK_MK(c);                                                                             \
                bool ok = m0 + mm < M && k0 + kk < K;                                                      \
                cp_async16(&AS(sa, mm, kk), ok ? ap + (long)mm * as1 + (long)(k0 + kk) * as2 : ap, ok);    \
            }                                                                                              \
        }                                                                                                  \
        UNROLL for (int j = 0; j < NB; j++) {                                                              \
            int c = tid + j * THREADS;                                                                     \
            if (c < BN * BK / CHUNK) {                                                                     \
                B_CHUNK_KN(c);                                                                             \
                bool ok = n0 + nn < N && k0 + kk < K;                                                      \
                cp_async16(&BS(sb, kk, nn), ok ? bp + (long)(k0 + kk) * bs1 + (long)nn * bs2 : bp, ok);    \
            }                                                                                              \
        }                                                                                                  \
    } while (0)

/* A fragment element pair (k, k+1) of row m, and a B pair (k, k+1) of col n,
 * packed low-to-high into one 32-bit register (f16/bf16). */
#define APAIR(p, m, k) ((uint)AS(p, m, k) | ((uint)AS(p, m, (k) + 1) << 16))
#define BPAIR(p, k, n) ((uint)BS(p, k, n) | ((uint)BS(p, (k) + 1, n) << 16))

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void gemm_mma(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
              __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K, int nbatch,
              EPI_PARAMS)
{
    __local ELEM as[STAGES * A_TILE] __attribute__((aligned(16)));
    __local ELEM bs[STAGES * B_TILE] __attribute__((aligned(16)));
#ifdef MMA_EMULATE
    __local float xa[WM * WN * 16 * KSTEP], xb[WM * WN * KSTEP * 8];
    __local int xo[WM * WN * 32];
#endif
    const int tid = get_local_id(0), warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
    const int wm = warp / WN, wn = warp % WN;
    const int n0 = get_group_id(0) * BN, mtiles = (M + BM - 1) / BM, ktiles = (K + BK - 1) / BK;
    for (int bb = get_group_id(2); bb < nbatch; bb += get_num_groups(2))
    for (int mt = get_group_id(1); mt < mtiles; mt += get_num_groups(1)) {
        const int m0 = mt * BM;
        __global const ELEM *ap = (__global const ELEM *)(a + aoff + bb * as0 + (long)m0 * as1);
        __global const ELEM *bp = (__global const ELEM *)(w + woff + bb * bs0 + (long)n0 * bs2);
        float acc[MI][NI][4];
        UNROLL for (int i = 0; i < MI; i++)
            UNROLL for (int j = 0; j < NI; j++)
                UNROLL for (int r = 0; r < 4; r++) acc[i][j][r] = 0;
        /* prologue: tiles 0 .. STAGES-2 in flight (a group per tile, empty or not) */
        UNROLL for (int s = 0; s < STAGES - 1; s++) {
            if (s < ktiles) LOAD_TILE(s, s);
            CP_COMMIT();
        }
        for (int kt = 0; kt < ktiles; kt++) {
            CP_WAIT(STAGES - 2);            /* tile kt has landed (this thread's chunks) */
            barrier(CLK_LOCAL_MEM_FENCE);   /* ... and everyone's; stage (kt-1) % STAGES is free */
            if (kt + STAGES - 1 < ktiles) LOAD_TILE(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
            CP_COMMIT();
            __local const ELEM *sa = as + (kt % STAGES) * A_TILE, *sb = bs + (kt % STAGES) * B_TILE;
            UNROLL for (int ks = 0; ks < BK; ks += KSTEP) {
                uint af[MI][4], bf[NI][2];
#if LDSM
                /* ldmatrix: one x4 per A fragment, one per pair of B fragments
                 * (.trans where the operand's k dim is not the contiguous one) */
                const int lj = lane >> 3, lr = lane & 7;
                UNROLL for (int i = 0; i < MI; i++) {
#if A_KCONT
                    LDSM_X4(af[i], sa, (wm * WTM + i * 16 + lr + (lj & 1) * 8) * LDA + ks + (lj >> 1) * 8, 0);
#else
                    LDSM_X4(af[i], sa, (ks + lr + (lj >> 1) * 8) * LDA + wm * WTM + i * 16 + (lj & 1) * 8, 1);
#endif
                }
                UNROLL for (int j = 0; j < NI / 2; j++) {
                    uint q[4];
#if B_KCONT
                    LDSM_X4(q, sb, (wn * WTN + j * 16 + lr + (lj >> 1) * 8) * LDB + ks + (lj & 1) * 8, 0);
#else
                    LDSM_X4(q, sb, (ks + lr + (lj & 1) * 8) * LDB + wn * WTN + j * 16 + (lj >> 1) * 8, 1);
#endif
                    bf[2 * j][0] = q[0], bf[2 * j][1] = q[1], bf[2 * j + 1][0] = q[2], bf[2 * j + 1][1] = q[3];
                }
#else
                UNROLL for (int i = 0; i < MI; i++) {
                    const int r = wm * WTM + i * 16 + g;
#if TA == 0
                    af[i][0] = to_tf32(AS(sa, r, ks + t));
                    af[i][1] = to_tf32(AS(sa, r + 8, ks + t));
                    af[i][2] = to_tf32(AS(sa, r, ks + t + 4));
                    af[i][3] = to_tf32(AS(sa, r + 8, ks + t + 4));
#else
                    af[i][0] = APAIR(sa, r, ks + 2 * t);
                    af[i][1] = APAIR(sa, r + 8, ks + 2 * t);
                    af[i][2] = APAIR(sa, r, ks + 2 * t + 8);
                    af[i][3] = APAIR(sa, r + 8, ks + 2 * t + 8);
#endif
                }
                UNROLL for (int j = 0; j < NI; j++) {
                    const int cidx = wn * WTN + j * 8 + g;
#if TA == 0
                    bf[j][0] = to_tf32(BS(sb, ks + t, cidx));
                    bf[j][1] = to_tf32(BS(sb, ks + t + 4, cidx));
#else
                    bf[j][0] = BPAIR(sb, ks + 2 * t, cidx);
                    bf[j][1] = BPAIR(sb, ks + 2 * t + 8, cidx);
#endif
                }
#endif
                UNROLL for (int i = 0; i < MI; i++)
                    UNROLL for (int j = 0; j < NI; j++) MMA(acc[i][j], af[i], bf[j]);
            }
        }
        CP_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE);   /* the next tile's prologue reuses the stages */
        UNROLL for (int i = 0; i < MI; i++)
            UNROLL for (int j = 0; j < NI; j++)
                UNROLL for (int r = 0; r < 4; r++) {
                    int m = m0 + wm * WTM + i * 16 + g + (r >> 1) * 8, n = n0 + wn * WTN + j * 8 + 2 * t + (r & 1);
                    if (m < M && n < N)
                        O_STORE(out, ooff + ((long)bb * M + m) * N + n, epilogue(acc[i][j][r], bb, m, n, EPI_ARGS));
                }
    }
}
#endif /* GEMM_MMA */
