/* base.h — what every layer of the engine may use: the error channel,
 * dtypes and their host-side conversions, op properties, the strided
 * descriptor a kernel sees and strided iteration, and the Philox reference
 * formulas. It knows nothing of devices, storages or tensors. */
#ifndef NETCL_BASE_H
#define NETCL_BASE_H

#include "netcl.h"
#include <stdbool.h>
#include <stdatomic.h>

#define NC_MAX_DIMS 8
#define NC_ABI_VERSION 1
#define NC_VERSION "0.1.0"

/* ---- errors (error.c) ---------------------------------------------------
 * nc_fail records a printf-style message as the thread's last error and
 * returns the status, so `return nc_fail(NETCL_ERR_ARGUMENT, "...")`. */
netcl_status nc_fail(netcl_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prefixes the current message with "op: " context (e.g. the op name). */
void nc_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define NC_TRY(expr) do { netcl_status nc_st_ = (expr); if (nc_st_ != NETCL_OK) return nc_st_; } while (0)
/* ---- dtypes (dtype.c) ------------------------------------------------------ */
bool nc_dtype_is_float(netcl_dtype dt);
/* The dtype two operands meet at (float beats int, wider beats narrower). */
netcl_dtype nc_dtype_promote(netcl_dtype a, netcl_dtype b);
/* Comparisons and logical ops: their result is bool. */
static inline bool nc_op_is_predicate(netcl_op op)
{
    return (op >= NETCL_OP_EQ && op <= NETCL_OP_GE) || (op >= NETCL_OP_LOGICAL_AND && op <= NETCL_OP_LOGICAL_XOR);
}
/* The classes of netcl_op codes (op.c). */
static inline bool nc_op_is_unary(netcl_op op) { return op >= NETCL_OP_NEG && op < NETCL_OP_UNARY_END; }
static inline bool nc_op_is_binary(netcl_op op) { return op >= NETCL_OP_ADD && op < NETCL_OP_BINARY_END; }
static inline bool nc_op_is_reduce(netcl_op op) { return op >= NETCL_OP_SUM && op < NETCL_OP_REDUCE_END; }
/* True for ops integer tensors compute in their own dtype (op.c). */
bool nc_op_int_ok(netcl_op op);
/* What a unary op's GRAD formula reads besides g: its input a, its output y
 * (or both), so autograd saves only those (op.c, from the formula's text). */
enum { NC_GRAD_READS_INPUT = 1, NC_GRAD_READS_OUTPUT = 2 };
int nc_op_grad_reads(netcl_op op);
double nc_load_double(const void *base, netcl_dtype dt, int64_t index);
void nc_store_double(void *base, netcl_dtype dt, int64_t index, double v);
float nc_half_to_float(uint16_t h);
uint16_t nc_float_to_half(float f);
float nc_bf16_to_float(uint16_t b);
uint16_t nc_float_to_bf16(float f);   /* round to nearest even */
/* ---- growing strings (text.c) ----------------------------------------------
 * printf-style appends; oom is set (and later appends skipped) when memory
 * runs out, so a builder checks it once at the end. */
typedef struct nc_text { char *s; size_t len, cap; int oom; } nc_text;
void nc_text_put(nc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ---- strided descriptors (strided.c) -----------------------------------------
 * A kernel's view of one operand: buffer, dtype, offset, sizes, strides. */
typedef struct nc_desc {
    void *buf;                    /* backend buffer (cpu: the host pointer) */
    netcl_dtype dtype;
    int ndim;
    int64_t offset;               /* elements */
    int64_t sizes[NC_MAX_DIMS];
    int64_t strides[NC_MAX_DIMS]; /* elements; 0 for broadcast dims */
} nc_desc;

/* True when the elements are dense in row-major order (size-1 dims may
 * have any stride): the fast path every backend takes. */
static inline int nc_is_contiguous(int ndim, const int64_t *sizes, const int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (sizes[i] == 1) continue;
        if (strides[i] != s) return 0;
        s *= sizes[i];
    }
    return 1;
}
static inline int nc_desc_is_contiguous(const nc_desc *d) { return nc_is_contiguous(d->ndim, d->sizes, d->strides); }

/* ---- strided iteration (strided.c) -------------------------------------------
 * Operands share the shape of op 0; dims are collapsed where every operand
 * is contiguous across them, so the inner row is as long as possible. */
#define NC_ITER_OPS 8
typedef struct nc_iter {
    int ndim, nops;
    int64_t sizes[NC_MAX_DIMS];
    int64_t strides[NC_ITER_OPS][NC_MAX_DIMS];
    int64_t offsets[NC_ITER_OPS];
} nc_iter;

void nc_iter_init(nc_iter *it, int nops, const nc_desc *const *ops);
int64_t nc_iter_numel(const nc_iter *it);
int64_t nc_numel(int ndim, const int64_t *sizes);
/* A per-thread buffer of NC_MSG_SCRATCH bytes from a ring of 8, so one
 * message can describe several operands. */
#define NC_MSG_SCRATCH 192
char *nc_msg_scratch(void);
/* "[2,3]" into such a buffer. */
const char *nc_shape_str(int ndim, const int64_t *sizes);

/* ---- the Philox reference (philox.c) -------------------------------------- */
/* Philox4x32-10. The stream rule both backends follow exactly: element i of
 * a draw with (seed, offset) computes philox(counter = offset + i, key = seed)
 * -> words w[0..3] (counter words {lo, hi, 0, 0}, key words {lo, hi}), then
 *   uniform:  u = (w0 >> 8) * 2^-24 in [0,1);     value = p1 + (p2 - p1) * u
 *   normal:   u1 = ((w0 >> 8) + 1) * 2^-24 in (0,1], u2 = (w1 >> 8) * 2^-24,
 *             value = p1 + p2 * sqrt(-2 ln u1) * cos(2 pi u2)
 *   randint:  value = p1 + ((w1 << 32 | w0) mod (p2 - p1))
 * and the generator's offset advances by n afterwards. */
void nc_philox(uint64_t counter, uint64_t key, uint32_t out[4]);
/* Value of element i of a draw (the reference both backends follow). */
double nc_rng_value(netcl_rng_kind kind, uint64_t seed, uint64_t offset, int64_t i, double p1, double p2);

#endif /* NETCL_BASE_H */
