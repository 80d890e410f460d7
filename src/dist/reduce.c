/* dist/reduce.c — the elementwise reductions collectives apply to host
 * buffers. bool sums and maxima are "or", products and minima "and", as
 * in PyTorch; integer sums and products wrap. */
#include "dist/dist.h"
#include <stdbool.h>

#define NC_ACCUMULATE(T, U)                                                       \
    do {                                                                         \
        T *a = acc;                                                              \
        const T *s = src;                                                        \
        switch (op) {                                                            \
        case NETCL_DIST_MAX: for (int64_t i = 0; i < n; i++) a[i] = s[i] > a[i] ? s[i] : a[i]; break; \
        case NETCL_DIST_MIN: for (int64_t i = 0; i < n; i++) a[i] = s[i] < a[i] ? s[i] : a[i]; break; \
        case NETCL_DIST_PRODUCT: for (int64_t i = 0; i < n; i++) a[i] = (T)((U)a[i] * (U)s[i]); break; \
        default: for (int64_t i = 0; i < n; i++) a[i] = (T)((U)a[i] + (U)s[i]); break; \
        }                                                                        \
    } while (0)

/* max/min keep NaN, as torch.max does: a NaN on any rank gives NaN */
#define NC_ACCUMULATE_FLOAT(T)                                                                   \
    do {                                                                                         \
        T *a = acc;                                                                              \
        const T *s = src;                                                                        \
        if (op == NETCL_DIST_MAX)                                                                \
            for (int64_t i = 0; i < n; i++) a[i] = (s[i] > a[i] || s[i] != s[i]) ? s[i] : a[i];  \
        else if (op == NETCL_DIST_MIN)                                                           \
            for (int64_t i = 0; i < n; i++) a[i] = (s[i] < a[i] || s[i] != s[i]) ? s[i] : a[i];  \
        else if (op == NETCL_DIST_PRODUCT)                                                       \
            for (int64_t i = 0; i < n; i++) a[i] *= s[i];                                        \
        else                                                                                     \
            for (int64_t i = 0; i < n; i++) a[i] += s[i];                                        \
    } while (0)

void nc_dist_accumulate(void *acc, const void *src, int64_t n, netcl_dtype dt, netcl_dist_op op)
{
    switch (dt) {
    case NETCL_DTYPE_FLOAT32: NC_ACCUMULATE_FLOAT(float); break;
    case NETCL_DTYPE_FLOAT64: NC_ACCUMULATE_FLOAT(double); break;
    case NETCL_DTYPE_INT32: NC_ACCUMULATE(int32_t, uint32_t); break;
    case NETCL_DTYPE_INT64: NC_ACCUMULATE(int64_t, uint64_t); break;
    case NETCL_DTYPE_UINT8: NC_ACCUMULATE(uint8_t, unsigned); break;
    case NETCL_DTYPE_BOOL: {
        uint8_t *a = acc;
        const uint8_t *s = src;
        int any = op == NETCL_DIST_SUM || op == NETCL_DIST_MAX;
        for (int64_t i = 0; i < n; i++) a[i] = any ? (a[i] || s[i]) : (a[i] && s[i]);
        break;
    }
    default: break;   /* comm.c widens the 16-bit floats first */
    }
}

const char *nc_dist_op_name(netcl_dist_op op)
{
    static const char *const names[] = { "sum", "avg", "max", "min", "product" };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}
