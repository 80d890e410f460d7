/* loader.h — the OpenCL entry points netcl uses, resolved at run time from
 * the ICD loader (dlopen), so the library has no link-time OpenCL
 * dependency. `nc_cl` is filled once; nc_cl_load() says whether it worked. */
#ifndef NETCL_CL_LOADER_H
#define NETCL_CL_LOADER_H

#include "backend/backend.h"
#include <CL/cl.h>

#define NC_CL_FUNCTIONS(X)                                                                                 \
    X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                                    \
    X(cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *))            \
    X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *))       \
    X(cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))                  \
    X(cl_context, clCreateContext, (const cl_context_properties *, cl_uint, const cl_device_id *,          \
                                    void (*)(const char *, const void *, size_t, void *), void *, cl_int *)) \
    X(cl_int, clReleaseContext, (cl_context))                                                              \
    X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *)) \
    X(cl_int, clReleaseCommandQueue, (cl_command_queue))                                                   \
    X(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))                        \
    X(cl_int, clReleaseMemObject, (cl_mem))                                                                \
    X(cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,     \
                                     cl_uint, const cl_event *, cl_event *))                               \
    X(cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint,   \
                                    const cl_event *, cl_event *))                                         \
    X(cl_int, clFinish, (cl_command_queue))                                                                \
    X(cl_int, clFlush, (cl_command_queue))                                                                 \
    X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char **, const size_t *, cl_int *)) \
    X(cl_program, clCreateProgramWithBinary, (cl_context, cl_uint, const cl_device_id *, const size_t *,   \
                                              const unsigned char **, cl_int *, cl_int *))                 \
    X(cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id *, const char *,                   \
                               void (*)(cl_program, void *), void *))                                      \
    X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *)) \
    X(cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void *, size_t *))                  \
    X(cl_int, clReleaseProgram, (cl_program))                                                              \
    X(cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *))                                     \
    X(cl_int, clReleaseKernel, (cl_kernel))                                                                \
    X(cl_int, clGetKernelInfo, (cl_kernel, cl_kernel_info, size_t, void *, size_t *))                     \
    X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                                 \
    X(cl_int, clGetKernelWorkGroupInfo, (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *)) \
    X(cl_int, clEnqueueNDRangeKernel, (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, \
                                       const size_t *, cl_uint, const cl_event *, cl_event *))             \
    X(cl_int, clGetEventInfo, (cl_event, cl_event_info, size_t, void *, size_t *))                        \
    X(cl_int, clGetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void *, size_t *))           \
    X(cl_int, clReleaseEvent, (cl_event))                                                                  \
    X(cl_int, clRetainEvent, (cl_event))                                                                   \
    X(cl_int, clWaitForEvents, (cl_uint, const cl_event *))                                                \
    X(cl_int, clEnqueueBarrierWithWaitList, (cl_command_queue, cl_uint, const cl_event *, cl_event *))    \
    X(cl_int, clEnqueueMarkerWithWaitList, (cl_command_queue, cl_uint, const cl_event *, cl_event *))     \
    X(void *, clEnqueueMapBuffer, (cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint, \
                                   const cl_event *, cl_event *, cl_int *))                                \
    X(cl_int, clEnqueueUnmapMemObject, (cl_command_queue, cl_mem, void *, cl_uint, const cl_event *, cl_event *))

typedef struct nc_cl_api {
#define NC_CL_FIELD(ret, name, args) ret(*name) args;
    NC_CL_FUNCTIONS(NC_CL_FIELD)
#undef NC_CL_FIELD
} nc_cl_api;

extern nc_cl_api nc_cl;

/* 1 when the ICD loader and every function were found. */
int nc_cl_load(void);
const char *nc_cl_error_name(cl_int err);

/* Records "expr failed: CL_ERROR_NAME at file:line" and returns from the
 * enclosing function with NETCL_ERR_BACKEND (NETCL_ERR_OOM for allocation
 * failures). */
netcl_status nc_cl_fail(cl_int err, const char *expr, const char *file, int line);
#define NETCL_CL_CHECK(expr)                                                            \
    do {                                                                                \
        cl_int nc_err_ = (expr);                                                        \
        if (nc_err_ != CL_SUCCESS) return nc_cl_fail(nc_err_, #expr, __FILE__, __LINE__); \
    } while (0)

#endif
