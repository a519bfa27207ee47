#include "report/cuda_errors.h"

#include <cuda.h>
#include <driver_types.h>
#include <stdio.h>
#include <string.h>

struct err_name {
    int code;
    const char *name;
};

#define E(x)                                                                                       \
    {                                                                                              \
        (int)(x), #x                                                                               \
    }

/* What allocation, free and pool calls can return; other codes print as numbers. */
static const struct err_name runtime_errors[] = {
    E(cudaErrorInvalidValue),
    E(cudaErrorMemoryAllocation),
    E(cudaErrorInitializationError),
    E(cudaErrorCudartUnloading),
    E(cudaErrorInvalidPitchValue),
    E(cudaErrorInvalidDevicePointer),
    E(cudaErrorMemoryValueTooLarge),
    E(cudaErrorStubLibrary),
    E(cudaErrorInsufficientDriver),
    E(cudaErrorCallRequiresNewerDriver),
    E(cudaErrorDevicesUnavailable),
    E(cudaErrorNoDevice),
    E(cudaErrorInvalidDevice),
    E(cudaErrorDeviceUninitialized),
    E(cudaErrorOperatingSystem),
    E(cudaErrorInvalidResourceHandle),
    E(cudaErrorSymbolNotFound),
    E(cudaErrorNotReady),
    E(cudaErrorIllegalAddress),
    E(cudaErrorHostMemoryAlreadyRegistered),
    E(cudaErrorHostMemoryNotRegistered),
    E(cudaErrorLaunchFailure),
    E(cudaErrorNotPermitted),
    E(cudaErrorNotSupported),
    E(cudaErrorSystemNotReady),
    E(cudaErrorSystemDriverMismatch),
    E(cudaErrorCompatNotSupportedOnDevice),
    E(cudaErrorStreamCaptureUnsupported),
    E(cudaErrorStreamCaptureInvalidated),
    E(cudaErrorStreamCaptureImplicit),
    E(cudaErrorUnknown),
};

static const struct err_name driver_errors[] = {
    E(CUDA_ERROR_INVALID_VALUE),
    E(CUDA_ERROR_OUT_OF_MEMORY),
    E(CUDA_ERROR_NOT_INITIALIZED),
    E(CUDA_ERROR_DEINITIALIZED),
    E(CUDA_ERROR_STUB_LIBRARY),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE),
    E(CUDA_ERROR_NO_DEVICE),
    E(CUDA_ERROR_INVALID_DEVICE),
    E(CUDA_ERROR_INVALID_CONTEXT),
    E(CUDA_ERROR_ALREADY_MAPPED),
    E(CUDA_ERROR_NOT_MAPPED),
    E(CUDA_ERROR_OPERATING_SYSTEM),
    E(CUDA_ERROR_INVALID_HANDLE),
    E(CUDA_ERROR_NOT_FOUND),
    E(CUDA_ERROR_NOT_READY),
    E(CUDA_ERROR_ILLEGAL_ADDRESS),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE),
    E(CUDA_ERROR_LAUNCH_FAILED),
    E(CUDA_ERROR_NOT_PERMITTED),
    E(CUDA_ERROR_NOT_SUPPORTED),
    E(CUDA_ERROR_SYSTEM_NOT_READY),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT),
    E(CUDA_ERROR_UNKNOWN),
};

bool cf_api_is_runtime(enum cf_api api)
{
    return strncmp(cf_api_info[api].name, "cuda", 4) == 0;
}

const char *cf_cuda_error_name(enum cf_api api, int code, char *buf, size_t n)
{
    const struct err_name *t = cf_api_is_runtime(api) ? runtime_errors : driver_errors;
    size_t count = cf_api_is_runtime(api) ? sizeof runtime_errors / sizeof runtime_errors[0]
                                          : sizeof driver_errors / sizeof driver_errors[0];
    for (size_t i = 0; i < count; i++)
        if (t[i].code == code) return t[i].name;
    snprintf(buf, n, "error %d", code);
    return buf;
}

bool cf_cuda_error_is_setup(enum cf_api api, int code)
{
    if (cf_api_is_runtime(api))
        return code == cudaErrorInsufficientDriver || code == cudaErrorCallRequiresNewerDriver ||
               code == cudaErrorNoDevice || code == cudaErrorStubLibrary ||
               code == cudaErrorInitializationError || code == cudaErrorSystemDriverMismatch;
    return code == CUDA_ERROR_NOT_INITIALIZED || code == CUDA_ERROR_NO_DEVICE ||
           code == CUDA_ERROR_STUB_LIBRARY || code == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
}

bool cf_cuda_error_is_oom(enum cf_api api, int code)
{
    return code == (cf_api_is_runtime(api) ? (int)cudaErrorMemoryAllocation
                                           : (int)CUDA_ERROR_OUT_OF_MEMORY);
}
