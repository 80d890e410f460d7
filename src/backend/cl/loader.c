/* loader.c — dlopen of the OpenCL ICD loader, the function table, and
 * OpenCL error names for messages. */
#include "loader.h"
#include <dlfcn.h>

nc_cl_api nc_cl;

int nc_cl_load(void)
{
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
#define NC_CL_RESOLVE(ret, name, args)                        \
    *(void **)&nc_cl.name = dlsym(lib, #name);                \
    if (!nc_cl.name) return 0;
    NC_CL_FUNCTIONS(NC_CL_RESOLVE)
#undef NC_CL_RESOLVE
    return 1;
}

const char *nc_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER)
    E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE)
    E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION)
    E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
    E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT)
    E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE)
#undef E
    default: return "CL_UNKNOWN_ERROR";
    }
}

netcl_status nc_cl_fail(cl_int err, const char *expr, const char *file, int line)
{
    netcl_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                       err == CL_OUT_OF_HOST_MEMORY) ? NETCL_ERR_OOM : NETCL_ERR_BACKEND;
    /* a driver that allocates lazily runs out at a launch: say so in the words every OOM uses */
    return nc_fail(st, "%sOpenCL call %s failed: %s (%d) at %s:%d", st == NETCL_ERR_OOM ? "out of memory: " : "", expr,
                   nc_cl_error_name(err), (int)err, file, line);
}
