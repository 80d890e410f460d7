/* common.cl — prepended to every program (then ops.cl, then the family). Dtype slots: the host passes
 * -DTA=<code> (input) and -DTO=<code> (output) with netcl's dtype codes
 * (0 f32, 1 f16, 2 bf16, 3 f64, 4 i32, 5 i64, 6 u8, 7 bool). For a slot X:
 * X_T storage type, X_CT compute type (float, double or long), X_LOAD(p,i)
 * and X_STORE(p,i,v), X_FLOAT (1 for floating dtypes). float16/bfloat16 are
 * storage only: loaded to float, rounded to nearest even on store. */
#ifdef NEED_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
/* WIDE_T: the widest float the device has, for values the host computes in
 * double (range, rng): double where the host saw fp64 support (it passes
 * -DNC_FP64 then, so both sides agree on the argument's size), else float. */
#ifdef NC_FP64
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define WIDE_T double
#else
#define WIDE_T float
#endif

/* Loops over register arrays are unrolled so the arrays are indexed by
 * constants only (a run-time index would move them to slow memory). The
 * host rebuilds with -DNC_NO_UNROLL_PRAGMA if a compiler rejects it. */
#ifdef NC_NO_UNROLL_PRAGMA
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

inline float bf16_load(ushort b) { return as_float((uint)b << 16); }
/* float32 bits to the nearest tf32 (10 mantissa bits), ties away from zero
 * as cvt.rna and cuBLAS; Inf kept, NaN quiet */
inline uint tf32_nearest_bits(uint x)
{
    if ((x & 0x7f800000u) == 0x7f800000u) return (x & 0x007fffffu) ? 0x7fc00000u : x;
    return (x + 0x1000u) & 0xffffe000u;
}
#define nearest_tf32(v) as_float(tf32_nearest_bits(as_uint(v)))
/* The power of two that takes a row whose largest finite magnitude has
 * the float32 bits mb to [2^14, 2^15) (tf32 products on float16 tensor
 * cores, src/backend/cl/gemm_tf32.c); 0 for a row of zeros. Subnormal maxima
 * count as 2^-126. */
inline int tf32_half_exp(uint mb)
{
    return mb == 0 ? 0 : 14 - (mb >= 0x800000u ? (int)(mb >> 23) - 127 : -126);
}
/* 2^e for e in [-149, 127], from its bits */
inline float pow2f(int e) { return e >= -126 ? as_float((uint)(e + 127) << 23) : as_float(1u << (e + 149)); }
/* v 2^e for e in [-298, 254], in two halves of e, each a float: exact
 * whenever the result is (both factors shrink v, or both grow it, so
 * neither step over- or underflows where the whole would not) */
inline float scale_pow2(float v, int e) { return v * pow2f(e >> 1) * pow2f(e - (e >> 1)); }
inline ushort bf16_store(float f)
{
    uint x = as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (ushort)(x >> 16);
}

#define T_0 float
#define T_1 half
#define T_2 ushort
#define T_3 double
#define T_4 int
#define T_5 long
#define T_6 uchar
#define T_7 uchar
#define CT_0 float
#define CT_1 float
#define CT_2 float
#define CT_3 double
#define CT_4 long
#define CT_5 long
#define CT_6 long
#define CT_7 long
#define FL_0 1
#define FL_1 1
#define FL_2 1
#define FL_3 1
#define FL_4 0
#define FL_5 0
#define FL_6 0
#define FL_7 0
#define LD_0(p, i) ((p)[i])
#define LD_1(p, i) vload_half((i), (p))
#define LD_2(p, i) bf16_load((p)[i])
#define LD_3(p, i) ((p)[i])
#define LD_4(p, i) ((long)(p)[i])
#define LD_5(p, i) ((p)[i])
#define LD_6(p, i) ((long)(p)[i])
#define LD_7(p, i) ((long)((p)[i] != 0))
#define ST_0(p, i, v) ((p)[i] = (float)(v))
#define ST_1(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define ST_2(p, i, v) ((p)[i] = bf16_store((float)(v)))
#define ST_3(p, i, v) ((p)[i] = (double)(v))
#define ST_4(p, i, v) ((p)[i] = (int)(v))
#define ST_5(p, i, v) ((p)[i] = (long)(v))
#define ST_6(p, i, v) ((p)[i] = (uchar)(v))
#define ST_7(p, i, v) ((p)[i] = (uchar)((v) != 0))
/* raw storage word of each dtype (fill writes host-converted bits) */
#define RAW_0 uint
#define RAW_1 ushort
#define RAW_2 ushort
#define RAW_3 ulong
#define RAW_4 uint
#define RAW_5 ulong
#define RAW_6 uchar
#define RAW_7 uchar
/* float -> integer: truncate toward zero and saturate, NaN -> 0. The NaN
 * test is explicit: NVIDIA's convert_*_sat_rtz of double (and float ->
 * long) turns NaN into the most negative value. */
#define SAT_4(v) (isnan(v) ? 0 : convert_int_sat_rtz(v))
/* int64 tops out at 2^63 - 1024 (the largest double below 2^63), as in
 * nc_store_double; the float compare is exact for both float and double */
#define SAT_5(v) (isnan(v) ? 0L : (v) >= 0x1p63f ? 9223372036854774784L : convert_long_sat_rtz(v))
#define SAT_6(v) (isnan(v) ? (uchar)0 : convert_uchar_sat_rtz(v))
#define SAT_7(v) ((v) != 0)

#ifdef TA
#define A_T CAT(T_, TA)
#define A_CT CAT(CT_, TA)
#define A_FLOAT CAT(FL_, TA)
#define A_LOAD(p, i) CAT(LD_, TA)(p, i)
#endif
#ifdef TO
#define O_T CAT(T_, TO)
#define O_CT CAT(CT_, TO)
#define O_FLOAT CAT(FL_, TO)
#define O_STORE(p, i, v) CAT(ST_, TO)(p, i, v)
#define O_RAW CAT(RAW_, TO)
#endif

/* Strided geometry (host struct nc_cl_meta): collapsed sizes, per-operand
 * strides and offsets, all 64-bit. */
typedef struct {
    long sizes[8];
    long strides[4][8];
    long offsets[4];
    long ndim, n;
} meta_t;

/* IX: the index type of kernels whose per-element index arithmetic
 * (division, modulo) dominates them. 64-bit division is emulated on GPUs;
 * the host passes -DIX32 (nc_cl_index_opts) when every element index, and
 * a grid-stride step past the last, fits in an int. Buffer offsets stay
 * long. */
#ifdef IX32
typedef int IX;
#else
typedef long IX;
#endif

/* Element offset of operand k for linear index i (row-major over sizes),
 * dividing in IX: 32-bit division where the host allows it is several
 * times cheaper than the 64-bit one GPUs emulate. */
inline long meta_offset(const meta_t *m, int k, long i)
{
    long off = m->offsets[k];
    IX j = (IX)i;
    for (int d = (int)m->ndim - 1; d >= 0; d--) {
        IX s = (IX)m->sizes[d];
        off += (long)(j % s) * m->strides[k][d];
        j /= s;
    }
    return off;
}

#define GRID_LOOP(i, n) for (long i = get_global_id(0); i < (n); i += get_global_size(0))

/* n / d for 0 <= n < 2^31 with d's magic m and shift s (Granlund-Montgomery:
 * s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1; the host computes
 * them, nc_cl_fdiv_magic) */
inline int fdiv(int n, uint m, int s) { return (int)((mul_hi((uint)n, m) + (uint)n) >> s); }

/* Records the first out-of-range index of a launch in the device error word
 * (8 ints: flag, value lo/hi, size lo/hi, op, dim, base; src/backend/cl/index.c
 * reports it at the next blocking read). */
inline void index_report(__global int *err, long v, long size, int op, int dim, long base)
{
    if (atomic_cmpxchg((volatile __global int *)err, 0, 1) != 0) return;
    err[1] = (int)v; err[2] = (int)(v >> 32);
    err[3] = (int)size; err[4] = (int)(size >> 32);
    err[5] = op; err[6] = dim; err[7] = (int)base;
}

/* Four consecutive elements per work item in the contiguous elementwise
 * kernels: 16-byte vector loads and stores when both sides are float32,
 * four scalar accesses otherwise. F is the op's scalar macro. */
#if defined(TA) && defined(TO) && TA == 0 && TO == 0
#define VEC4_APPLY1(src, dst, i, F)                                                   \
    do { float4 v_ = vload4((i), (src));                                              \
         vstore4((float4)(F(v_.s0), F(v_.s1), F(v_.s2), F(v_.s3)), (i), (dst)); } while (0)
#define VEC4_APPLY2(sa, sb, dst, i, F)                                                \
    do { float4 u_ = vload4((i), (sa)), v_ = vload4((i), (sb));                       \
         vstore4((float4)(F(u_.s0, v_.s0), F(u_.s1, v_.s1), F(u_.s2, v_.s2), F(u_.s3, v_.s3)), (i), (dst)); } while (0)
#define VEC4_APPLY3(sa, sb, sc, dst, i, F)                                             \
    do { float4 u_ = vload4((i), (sa)), v_ = vload4((i), (sb)), w_ = vload4((i), (sc)); \
         vstore4((float4)(F(u_.s0, v_.s0, w_.s0), F(u_.s1, v_.s1, w_.s1), F(u_.s2, v_.s2, w_.s2), \
                          F(u_.s3, v_.s3, w_.s3)), (i), (dst)); } while (0)
#define VEC4_APPLY_SL(src, dst, i, F, s)                                              \
    do { float4 v_ = vload4((i), (src));                                              \
         vstore4((float4)(F(v_.s0, s), F(v_.s1, s), F(v_.s2, s), F(v_.s3, s)), (i), (dst)); } while (0)
#define VEC4_APPLY_SR(src, dst, i, F, s)                                              \
    do { float4 v_ = vload4((i), (src));                                              \
         vstore4((float4)(F(s, v_.s0), F(s, v_.s1), F(s, v_.s2), F(s, v_.s3)), (i), (dst)); } while (0)
#else
#define VEC4_APPLY1(src, dst, i, F)                                                   \
    for (int k_ = 0; k_ < 4; k_++) { A_CT x_ = A_LOAD((src), 4 * (i) + k_); O_STORE((dst), 4 * (i) + k_, F(x_)); }
#define VEC4_APPLY2(sa, sb, dst, i, F)                                                \
    for (int k_ = 0; k_ < 4; k_++) {                                                  \
        A_CT x_ = A_LOAD((sa), 4 * (i) + k_), y_ = A_LOAD((sb), 4 * (i) + k_);        \
        O_STORE((dst), 4 * (i) + k_, F(x_, y_)); }
#define VEC4_APPLY3(sa, sb, sc, dst, i, F)                                             \
    for (int k_ = 0; k_ < 4; k_++) {                                                  \
        A_CT x_ = A_LOAD((sa), 4 * (i) + k_), y_ = A_LOAD((sb), 4 * (i) + k_), z_ = A_LOAD((sc), 4 * (i) + k_); \
        O_STORE((dst), 4 * (i) + k_, F(x_, y_, z_)); }
#define VEC4_APPLY_SL(src, dst, i, F, s)                                              \
    for (int k_ = 0; k_ < 4; k_++) { A_CT x_ = A_LOAD((src), 4 * (i) + k_); O_STORE((dst), 4 * (i) + k_, F(x_, s)); }
#define VEC4_APPLY_SR(src, dst, i, F, s)                                              \
    for (int k_ = 0; k_ < 4; k_++) { A_CT x_ = A_LOAD((src), 4 * (i) + k_); O_STORE((dst), 4 * (i) + k_, F(s, x_)); }
#endif

#if defined(TA) && A_FLOAT
#define NAN_MAX(x, y) (((y) > (x) || isnan(y)) ? (y) : (x))
/* Every lane of the work-group gets the group's sum of v, or (is_max) its
 * maximum with NaN winning; l holds a value per lane (local size a power of
 * two). Safe to call again right away: it waits for the last use of l. */
inline A_CT group_all(__local A_CT *l, A_CT v, int is_max)
{
    int lid = get_local_id(0), n = get_local_size(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    l[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = n / 2; s > 0; s >>= 1) {
        if (lid < s) l[lid] = is_max ? NAN_MAX(l[lid], l[lid + s]) : l[lid] + l[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return l[0];
}
#endif
