/* gemm_wgmma.cl — Hopper's wgmma for the tensor-core GEMM (-DWGMMA), built
 * into the program "gemm+gemm_ffma+gemm_mma+gemm_wgmma+gemm_mma_kernel":
 * after gemm_mma.cl's layouts, PTX wrappers and loaders, before the kernel
 * (gemm_mma_kernel.cl) that issues it. Without -DWGMMA only the fallbacks
 * at the end remain. docs/gemm.md, "Hopper's wgmma".
 */

#ifdef WGMMA
/* ---- wgmma (sm_90a) ----------------------------------------------------------------
 * Warpgroups (4 warps) stacked along m, each owning MI slabs of 64 rows
 * (MI = 1 or 2): per slab wgmma.m64n{BN}k{KSTEP} reads both operands
 * straight from the stage through matrix descriptors and accumulates BN/2
 * floats a thread, laid out as mma.m16n8's C fragments side by side (warp
 * w of the group: rows 16 w .. 16 w + 15 of each slab), so acc[i][j][q]
 * and the kernel's epilogue serve both paths (FRAG_ROW). A, and a
 * k-contiguous B, are rows of BK * ESZ = 32, 64 or 128 bytes: exactly the
 * hardware's 32-, 64- and 128-byte swizzles, which the copies' XOR swizzle
 * already is (SWZ_KEY, gemm_mma.cl); an n-contiguous 16-bit B is read
 * transposed from 128-byte atoms (BOFF, gemm_mma.cl).
 * NVIDIA's OpenCL compiles for sm_90, where ptxas refuses wgmma: every
 * wgmma line is written as a PTX comment marked "//@", which compiles
 * with the operands' registers allocated; src/backend/cl/ptx_patch.c uncomments the marked
 * lines of the driver's PTX, retargets it to sm_90a and builds it again
 * (docs/gemm.md, "Hopper's wgmma"). */
#if defined(FFMA) || defined(TF32X3) || WN != 1 || WM % 4 || (MI != 1 && MI != 2) || MI * BN > 256 || \
    (!A_KCONT && (TA == 0 || BK % 16)) || (!B_KCONT && (TA == 0 || BK % 16)) ||                          \
    (BK * ESZ != 32 && BK * ESZ != 64 && BK * ESZ != 128)
#error "WGMMA: warpgroups along m of 64 or 128 rows, k-contiguous rows of 32, 64 or 128 bytes, 16-bit A m- and B n-contiguous"
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
/* an operand read transposed (ATOM_OFF): the leading offset steps between
 * 64-column atoms, the stride offset between 8-row groups of k; a k-step
 * is 16 rows further */
#define WG_T_DESC(addr) ((ulong)(((addr) & 0x3FFFF) >> 4) | ((ulong)(BK * 128 >> 4) << 16) | ((ulong)(1024 >> 4) << 32) | (1ul << 62))
#if A_KCONT
#define WG_ASLAB (64 * WG_RB) /* bytes from one 64-row slab of A to the next */
#define WG_ASTEP (KSTEP * ESZ) /* and from one k-step to the next */
#define WG_A_DESC(addr) wg_desc(addr)
#else /* a slab is one atom column */
#define WG_ASLAB (BK * 128)
#define WG_ASTEP (KSTEP * 128)
#define WG_A_DESC(addr) WG_T_DESC(addr)
#endif
#if B_KCONT
#define WG_BSTEP (KSTEP * ESZ) /* bytes from one k-step to the next along B */
#define WG_B_DESC(addr) wg_desc(addr)
#else
#define WG_BSTEP (KSTEP * 128)
#define WG_B_DESC(addr) WG_T_DESC(addr)
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
/* an operand read transposed: element (n, k) at start + (n / 64) LBO +
 * (k / 8) SBO + (k % 8) 128 + n ESZ % 128, address bits 4..6 XOR bits 7..9 */
inline float wg_elem_t(__local const uchar *smem, ulong desc, int n, int k)
{
    const uint start = (uint)(desc & 0x3FFF) << 4, lbo = (uint)((desc >> 16) & 0x3FFF) << 4;
    const uint sbo = (uint)((desc >> 32) & 0x3FFF) << 4;
    uint addr = start + (uint)(n / 64) * lbo + (uint)(k / 8) * sbo + (uint)(k % 8) * 128 + (uint)(n % 64) * ESZ;
    addr ^= ((addr >> 7) & 7) << 4;
    return elem_float(*(__local const ushort *)(smem + addr));
}
#if A_KCONT
#define WG_ELEM_A(r, k) wg_elem(smem, da, r, k)
#else
#define WG_ELEM_A(r, k) wg_elem_t(smem, da, r, k)
#endif
#if B_KCONT
#define WG_ELEM_B(c, k) wg_elem(smem, db, c, k)
#else
#define WG_ELEM_B(c, k) wg_elem_t(smem, db, c, k)
#endif
inline void wg_emul(__private float *d, __local const uchar *smem, ulong da, ulong db, int warp, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < BN / 8; j++)
        for (int q = 0; q < 4; q++) {
            const int r = 16 * (warp % 4) + g + (q >> 1) * 8, c = 8 * j + 2 * t + (q & 1);
            float s = 0;
            for (int k = 0; k < KSTEP; k++) s += WG_ELEM_A(r, k) * WG_ELEM_B(c, k);
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
/* imm-trans-a, imm-trans-b: 1 where the operand is read transposed */
#if A_KCONT
#define WG_TA ", 0"
#else
#define WG_TA ", 1"
#endif
#if B_KCONT
#define WG_TRANS WG_TA ", 0"
#else
#define WG_TRANS WG_TA ", 1"
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
