/* linalg_tune.c — GEMM tuning and inspection (netcl_tune_gemm,
 * netcl_gemm_config, forced configurations, the tuning cache): argument
 * checks, then the device's backend through its runtime entries. The
 * product a problem runs as (its K slices and operand copies) is worked out
 * here by the rules matmul itself follows (linalg.c). */
#include "ops/ops.h"

static netcl_status problem(const char *op, nc_gemm_problem *p, netcl_device *dev, netcl_dtype dtype, int64_t m,
                            int64_t n, int64_t k, int trans_a, int trans_b)
{
    if (!dev) return nc_fail(NETCL_ERR_ARGUMENT, "%s: no device", op);
    if (!nc_dtype_is_float(dtype) || m < 1 || n < 1 || k < 1 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return nc_fail(NETCL_ERR_ARGUMENT, "%s: needs a float dtype and sizes >= 1, got %s %lldx%lldx%lld", op,
                       netcl_dtype_name(dtype), (long long)m, (long long)n, (long long)k);
    *p = (nc_gemm_problem){dtype, m, n, k, trans_a, trans_b, nc_fp32_mode(), 1, 0};
    nc_desc a, w;
    nc_matrix_desc(&a, NULL, dtype, m, k, trans_a);
    nc_matrix_desc(&w, NULL, dtype, k, n, trans_b);
    p->split = nc_gemm_split_count(dev, &a, &w, 0, p->fp32);
    if (p->split <= 1 && dev->backend->linalg.gemm_copies) p->copies = dev->backend->linalg.gemm_copies(dev, &a, &w, p->fp32);
    return NETCL_OK;
}

netcl_status netcl_tune_gemm(netcl_device *dev, netcl_dtype dtype, int64_t m, int64_t n, int64_t k, int trans_a,
                             int trans_b, int max_candidates, char *report, int64_t report_len)
{
    if (report && report_len > 0) report[0] = 0;
    nc_gemm_problem p;
    NC_TRY(problem("tune", &p, dev, dtype, m, n, k, trans_a, trans_b));
    return dev->backend->runtime.tune_gemm ? dev->backend->runtime.tune_gemm(dev, &p, max_candidates, report, report_len)
                                           : NETCL_OK;
}

netcl_status netcl_gemm_config(netcl_device *dev, netcl_dtype dtype, int64_t m, int64_t n, int64_t k, int trans_a,
                               int trans_b, char *buf, int64_t len)
{
    if (!dev || !buf || len <= 0) return nc_fail(NETCL_ERR_ARGUMENT, "gemm_config: no device or buffer");
    buf[0] = 0;
    nc_gemm_problem p;
    NC_TRY(problem("gemm_config", &p, dev, dtype, m, n, k, trans_a, trans_b));
    return dev->backend->runtime.gemm_config ? dev->backend->runtime.gemm_config(dev, &p, buf, len) : NETCL_OK;
}

netcl_status netcl_gemm_set_config(netcl_device *dev, const char *config)
{
    if (!dev) return nc_fail(NETCL_ERR_ARGUMENT, "gemm_set_config: no device");
    /* a backend without configurations (the cpu: one kernel or BLAS) takes none */
    return dev->backend->runtime.gemm_set_config ? dev->backend->runtime.gemm_set_config(dev, config) : NETCL_OK;
}

const char *netcl_tune_cache_path(netcl_device *dev)
{
    return dev && dev->backend->runtime.tune_cache_path ? dev->backend->runtime.tune_cache_path(dev) : "";
}

const char *netcl_tune_cache_reload(netcl_device *dev)
{
    return dev && dev->backend->runtime.tune_cache_reload ? dev->backend->runtime.tune_cache_reload(dev) : "";
}
