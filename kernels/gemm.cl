/* gemm.cl — batched GEMM with a fused epilogue:
 *   out[b] = act(alpha * (a[b] @ w[b]) + beta * c[b] + bias)
 * a [B,M,K], w [B,K,N] with any strides (batch stride 0 = broadcast), out
 * [B,M,N] contiguous, c [B,M,N] any strides (optional), bias a vector along
 * N or M (optional). Accumulates in A_CT (float for float32/16/bf16, double
 * for float64); float16/bfloat16 are storage types only (vload_half, bit
 * shifts), so no cl_khr_fp16 is needed. out may not alias a, w, c or bias.
 *
 * Two kernels here, both configured entirely by -D options (src/backend/cl/gemm.c
 * builds them; every distinct option set is its own cached program), and
 * the tensor-core kernel gemm_mma (gemm_mma.cl .. gemm_mma_kernel.cl), built after this file:
 *   gemm_tiled   register-tiled SIMT kernel for GPUs: local-memory staging,
 *                per-thread MWI x NWI outputs, double-buffered local tiles
 *                with the next K-tile prefetched into registers.
 *   gemm_direct  for CPU OpenCL devices (PoCL): no local memory, each work
 *                item keeps a CMR x CNR block of outputs in vector
 *                registers and streams its operands through the caches.
 *
 * The epilogue is chosen by run-time arguments (see epilogue below).
 */


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
 * along m; act is a netcl_op code for activate (ops.cl), anything else
 * meaning none. The tensor-core kernel fixes them at build time instead. */
/* The arguments every kernel of the family takes after the sizes, in order. */
#ifdef ESCALE /* float16 operands of a float32 product (tf32 on float16): c and bias are the output's type */
#define E_T O_T
#define E_LOAD(p, i) CAT(LD_, TO)(p, i)
#else
#define E_T A_T
#define E_LOAD(p, i) A_LOAD(p, i)
#endif
#define EPI_PARAMS                                                                                       \
    A_CT alpha, A_CT beta, __global const E_T *c, long coff, long cs0, long cs1, long cs2,               \
        __global const E_T *bias, long boff, long bstride, A_CT p1, int flags, int act
/* The epilogue of one output element (batch b, row m, col n, product v). */
inline A_CT epilogue(A_CT v, long b, long m, long n, EPI_PARAMS)
{
    v *= alpha;
    if (flags & 1) v += beta * E_LOAD(c, coff + b * cs0 + m * cs1 + n * cs2);
    if (flags & 6) v += E_LOAD(bias, boff + ((flags & 2) ? n : m) * bstride);
    return activate(v, act, p1);
}
#define EPI_ARGS alpha, beta, c, coff, cs0, cs1, cs2, bias, boff, bstride, p1, flags, act

#ifdef GEMM_SLICES
/* ---- gemm_slices ----------------------------------------------------------------
 * Split-K's last pass (src/backend/cl/gemm_split.c): out [M, N] = epilogue of the
 * sum of the partial products part [S, M, N] (contiguous from element
 * poff) of the S slices of K, added in slice order, so the bits depend on
 * the split alone. VW adjacent outputs a work item (VW divides N and poff);
 * grid dim 0 over a row's vectors, dim 1 over rows (looping where the host
 * capped it). */
__kernel void gemm_slices(__global O_T *out, long ooff, __global const A_T *part, long poff, int S, long M, long N,
                          EPI_PARAMS)
{
    const long n = get_global_id(0) * VW, MN = M * N;
    if (n >= N) return;
    for (long m = get_global_id(1); m < M; m += get_global_size(1)) {
        const long i = poff + m * N + n;
        VT(A_CT, VW) v = VLOAD(VW, part, i);
        for (int s = 1; s < S; s++) v += VLOAD(VW, part, s * MN + i);
        UNROLL for (int e = 0; e < VW; e++)
            O_STORE(out, ooff + m * N + n + e, epilogue(GETV(VW, v, e), 0, m, n + e, EPI_ARGS));
    }
}
#endif

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
 * outside M x K (the k range up to kend) read as 0 (a vector lies wholly
 * inside or outside). A convolution pass (conv_implicit.cl) gathers an operand
 * element by element instead (its vector width is 1). */
#ifdef A_GATHER
#define A_ELEM(mm, kk) A_GATHER(m0 + (mm), kk)
#else
#define A_ELEM(mm, kk) VLOAD(VWA, ap, (long)(mm) * as1 + (long)(kk) * as2)
#endif
#ifdef B_GATHER
#define B_ELEM(kk, nn) B_GATHER(kk, n0 + (nn))
#else
#define B_ELEM(kk, nn) VLOAD(VWB, bp, (long)(kk) * bs1 + (long)(nn) * bs2)
#endif
#define LOAD_A(ra, ap, k0)                                                                              \
    UNROLL for (int j = 0; j < LA; j++) {                                                   \
        int v = tid + j * THREADS, mm = A_VROW(v), kk = A_VCOL(v);                                     \
        bool ok = m0 + mm < M && k0 + kk < kend;                                                       \
        ra[j] = ok ? A_ELEM(mm, k0 + kk) : (VT(A_CT, VWA))0;                                           \
    }
#define LOAD_B(rb, bp, k0)                                                                              \
    UNROLL for (int j = 0; j < LB; j++) {                                                   \
        int v = tid + j * THREADS, kk = B_VK(v), nn = B_VN(v);                                         \
        bool ok = k0 + kk < kend && n0 + nn < N;                                                       \
        rb[j] = ok ? B_ELEM(k0 + kk, nn) : (VT(A_CT, VWB))0;                                           \
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
#ifndef CONV_PARAMS
#define CONV_PARAMS
#endif
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void gemm_tiled(__global O_T *out, long ooff, __global const A_T *a, long aoff, long as0, long as1, long as2,
                __global const A_T *w, long woff, long bs0, long bs1, long bs2, int M, int N, int K, int nbatch,
                EPI_PARAMS CONV_PARAMS)
{
    __local A_CT as[2 * KWG * LDA] __attribute__((aligned(64)));
    __local A_CT bs[2 * KWG * LDB] __attribute__((aligned(64)));
    const int tid = get_local_id(0), tm = tid / NDIMC, tn = tid % NDIMC;
    const int n0 = get_group_id(0) * NWG;
    const int mtiles = (M + MWG - 1) / MWG;
    for (int bb = get_group_id(2); bb < nbatch; bb += get_num_groups(2))
    for (int mt = get_group_id(1); mt < mtiles; mt += get_num_groups(1)) {
        const int m0 = mt * MWG;
#ifdef CONV_PASS
        /* a convolution's group; backward-weight's batch is slice * G + group,
         * each slice a part of the K range (the host sums the slices) */
        const int grp = bb % (int)cg.G, kchunk = ((K + kslices - 1) / kslices + KWG - 1) / KWG * KWG;
        const int kbeg = min(K, (bb / (int)cg.G) * kchunk), kend = kslices > 1 ? min(K, kbeg + kchunk) : K;
#else
        const int kbeg = 0, kend = K;
#endif
        __global const A_T *ap = a + aoff + bb * as0 + (long)m0 * as1;
        __global const A_T *bp = w + woff + bb * bs0 + (long)n0 * bs2;
        A_CT acc[MWI][NWI];
        UNROLL for (int i = 0; i < MWI; i++)
            UNROLL for (int j = 0; j < NWI; j++) acc[i][j] = 0;
        VT(A_CT, VWA) ra[LA];
        VT(A_CT, VWB) rb[LB];
        LOAD_A(ra, ap, kbeg);
        LOAD_B(rb, bp, kbeg);
        STORE_A(ra, as);
        STORE_B(rb, bs);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int ntiles = (kend - kbeg + KWG - 1) / KWG;
        for (int t = 0; t < ntiles; t++) {
            const int cur = t & 1;
            if (t + 1 < ntiles) { /* in flight while this tile is multiplied */
                LOAD_A(ra, ap, kbeg + (t + 1) * KWG);
                LOAD_B(rb, bp, kbeg + (t + 1) * KWG);
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
                if (m < M && n < N) {
#ifdef CONV_PASS /* the bias runs along the convolution's channels */
                    O_STORE(out, ooff + CONV_OUT(m, n), epilogue(acc[i][j], bb, grp * M + m, n, EPI_ARGS));
#else
                    O_STORE(out, ooff + ((long)bb * M + m) * N + n, epilogue(acc[i][j], bb, m, n, EPI_ARGS));
#endif
                }
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
