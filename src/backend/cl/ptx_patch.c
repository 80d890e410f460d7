/* ptx_patch.c — Hopper-only PTX through NVIDIA's OpenCL. The OpenCL
 * compiler targets sm_90, where ptxas refuses wgmma (it needs sm_90a), and
 * OpenCL C cannot ask for another target. NVIDIA's program binaries are
 * PTX text, taken back by clCreateProgramWithBinary: so a kernel writes
 * such instructions as PTX comments marked "//@" in its inline assembly
 * (the source builds for sm_90 with their operands' registers allocated),
 * and after the build the marked lines of the driver's PTX are uncommented,
 * the target is raised to sm_90a and the program is built again from that
 * PTX. The disk cache keeps the patched PTX. */
#include "cl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARK "//@"

/* The PTX with its marked lines uncommented and `.target sm_90` raised to
 * sm_90a; *marked: how many lines were marked, *target_ok 0 when the PTX
 * targets anything else. */
static char *unmark(const char *ptx, int *marked, int *target_ok)
{
    char *out = malloc(strlen(ptx) + 16), *w = out;
    if (!out) return NULL;
    *marked = *target_ok = 0;
    for (const char *p = ptx; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e + 1 - p) : strlen(p);
        const char *s = p;
        while (s < p + len && (*s == ' ' || *s == '\t')) s++;
        size_t lead = (size_t)(s - p);
        if (strncmp(s, MARK, 3) == 0) {
            ++*marked;
            memcpy(w, p, lead);
            memcpy(w + lead, s + 3, len - lead - 3);
            w += len - 3;
        } else if (!*target_ok && strncmp(s, ".target sm_90", 13) == 0 && (s[13] == '\n' || s[13] == ',' || s[13] == ' ' || s[13] == '\r')) {
            memcpy(w, p, lead + 13);
            w[lead + 13] = 'a';
            memcpy(w + lead + 14, s + 13, len - lead - 13);
            w += len + 1;
            *target_ok = 1;
        } else {
            memcpy(w, p, len);
            w += len;
        }
        p += len;
    }
    *w = 0;
    return out;
}

static char *program_ptx(cl_program prog)
{
    size_t len = 0;
    if (nc_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || !len) return NULL;
    char *bin = calloc(1, len + 1);
    unsigned char *bins[1] = {(unsigned char *)bin};
    if (bin && nc_cl.clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    return bin;
}

netcl_status nc_cl_ptx_finish(nc_cl_device *cd, cl_program *prog, const char *family, const char *opts)
{
    if (!strstr(cd->dev->vendor, "NVIDIA")) return NETCL_OK;
    char *ptx = program_ptx(*prog);
    if (!ptx) return nc_fail(NETCL_ERR_BACKEND, "OpenCL: reading the PTX of program %s failed", family);
    int marked, target_ok;
    char *patched = unmark(ptx, &marked, &target_ok);
    free(ptx);
    if (!patched) return nc_fail(NETCL_ERR_OOM, "OpenCL: out of host memory");
    if (!marked) {   /* nothing of sm_90a's: the program stands as built */
        free(patched);
        return NETCL_OK;
    }
    if (!target_ok) {
        free(patched);
        return nc_fail(NETCL_ERR_UNSUPPORTED, "OpenCL: program %s needs sm_90a instructions, but %s's PTX does not target sm_90",
                       family, cd->dev->name);
    }
    size_t len = strlen(patched) + 1;
    const unsigned char *bins[1] = {(const unsigned char *)patched};
    cl_int err, status;
    cl_program p = nc_cl.clCreateProgramWithBinary(cd->ctx, 1, &cd->id, &len, bins, &status, &err);
    if (p && err == CL_SUCCESS && status == CL_SUCCESS) err = nc_cl.clBuildProgram(p, 1, &cd->id, opts, NULL, NULL);
    else if (err == CL_SUCCESS) err = status;
    free(patched);
    if (err != CL_SUCCESS) {
        char log[2048] = "";
        if (p) nc_cl.clGetProgramBuildInfo(p, cd->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        if (p) nc_cl.clReleaseProgram(p);
        return nc_fail(NETCL_ERR_BACKEND, "OpenCL: building program %s from its sm_90a PTX on %s failed (%s):\n%.1500s", family,
                       cd->dev->name, nc_cl_error_name(err), log);
    }
    if (nc_cl_debug_level() >= 2) {   /* ptxas's report of the sm_90a build (-cl-nv-verbose) */
        char log[4096] = "";
        nc_cl.clGetProgramBuildInfo(p, cd->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "netcl: build log of %s (sm_90a):\n%s\n", family, log);
    }
    nc_cl.clReleaseProgram(*prog);
    *prog = p;
    return NETCL_OK;
}
