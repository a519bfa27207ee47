/* Error codes: names and messages, the driver-to-runtime mapping, and the
 * per-thread last error. */
#include "runtime.h"

/* Every cudaError_t of the headers, with its message. Messages of the codes a
 * program meets in practice follow NVIDIA's wording so that logs read the same. */
#define RT_ERRORS(X)                                                                               \
    X(cudaSuccess, "no error")                                                                     \
    X(cudaErrorInvalidValue, "invalid argument")                                                   \
    X(cudaErrorMemoryAllocation, "out of memory")                                                  \
    X(cudaErrorInitializationError, "initialization error")                                        \
    X(cudaErrorCudartUnloading, "driver shutting down")                                            \
    X(cudaErrorProfilerDisabled, "profiler disabled")                                              \
    X(cudaErrorProfilerNotInitialized, "profiler not initialized")                                 \
    X(cudaErrorProfilerAlreadyStarted, "profiler already started")                                 \
    X(cudaErrorProfilerAlreadyStopped, "profiler already stopped")                                 \
    X(cudaErrorInvalidConfiguration, "invalid configuration")                                      \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                        \
    X(cudaErrorInvalidSymbol, "invalid symbol")                                                    \
    X(cudaErrorInvalidHostPointer, "invalid host pointer")                                         \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                     \
    X(cudaErrorInvalidTexture, "invalid texture")                                                  \
    X(cudaErrorInvalidTextureBinding, "invalid texture binding")                                   \
    X(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor")                             \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                        \
    X(cudaErrorAddressOfConstant, "address of constant")                                           \
    X(cudaErrorTextureFetchFailed, "texture fetch failed")                                         \
    X(cudaErrorTextureNotBound, "texture not bound")                                               \
    X(cudaErrorSynchronizationError, "synchronization error")                                      \
    X(cudaErrorInvalidFilterSetting, "invalid filter setting")                                     \
    X(cudaErrorInvalidNormSetting, "invalid norm setting")                                         \
    X(cudaErrorMixedDeviceExecution, "mixed device execution")                                     \
    X(cudaErrorNotYetImplemented, "not yet implemented")                                           \
    X(cudaErrorMemoryValueTooLarge, "memory value too large")                                      \
    X(cudaErrorStubLibrary, "CUDA driver is a stub library")                                       \
    X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version") \
    X(cudaErrorCallRequiresNewerDriver, "call requires newer driver")                              \
    X(cudaErrorInvalidSurface, "invalid surface")                                                  \
    X(cudaErrorDuplicateVariableName, "duplicate variable name")                                   \
    X(cudaErrorDuplicateTextureName, "duplicate texture name")                                     \
    X(cudaErrorDuplicateSurfaceName, "duplicate surface name")                                     \
    X(cudaErrorDevicesUnavailable, "devices unavailable")                                          \
    X(cudaErrorIncompatibleDriverContext, "incompatible driver context")                           \
    X(cudaErrorMissingConfiguration, "missing configuration")                                      \
    X(cudaErrorPriorLaunchFailure, "prior launch failure")                                         \
    X(cudaErrorLaunchMaxDepthExceeded, "launch max depth exceeded")                                \
    X(cudaErrorLaunchFileScopedTex, "launch file scoped tex")                                      \
    X(cudaErrorLaunchFileScopedSurf, "launch file scoped surf")                                    \
    X(cudaErrorSyncDepthExceeded, "sync depth exceeded")                                           \
    X(cudaErrorLaunchPendingCountExceeded, "launch pending count exceeded")                        \
    X(cudaErrorInvalidDeviceFunction, "invalid device function")                                   \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                     \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                                            \
    X(cudaErrorDeviceNotLicensed, "device not licensed")                                           \
    X(cudaErrorSoftwareValidityNotEstablished, "software validity not established")                \
    X(cudaErrorStartupFailure, "startup failure")                                                  \
    X(cudaErrorInvalidKernelImage, "invalid kernel image")                                         \
    X(cudaErrorDeviceUninitialized, "invalid device context")                                      \
    X(cudaErrorMapBufferObjectFailed, "map buffer object failed")                                  \
    X(cudaErrorUnmapBufferObjectFailed, "unmap buffer object failed")                              \
    X(cudaErrorArrayIsMapped, "array is mapped")                                                   \
    X(cudaErrorAlreadyMapped, "already mapped")                                                    \
    X(cudaErrorNoKernelImageForDevice, "no kernel image for device")                               \
    X(cudaErrorAlreadyAcquired, "already acquired")                                                \
    X(cudaErrorNotMapped, "not mapped")                                                            \
    X(cudaErrorNotMappedAsArray, "not mapped as array")                                            \
    X(cudaErrorNotMappedAsPointer, "not mapped as pointer")                                        \
    X(cudaErrorECCUncorrectable, "ECC uncorrectable")                                              \
    X(cudaErrorUnsupportedLimit, "unsupported limit")                                              \
    X(cudaErrorDeviceAlreadyInUse, "device already in use")                                        \
    X(cudaErrorPeerAccessUnsupported, "peer access unsupported")                                   \
    X(cudaErrorInvalidPtx, "invalid ptx")                                                          \
    X(cudaErrorInvalidGraphicsContext, "invalid graphics context")                                 \
    X(cudaErrorNvlinkUncorrectable, "nvlink uncorrectable")                                        \
    X(cudaErrorJitCompilerNotFound, "jit compiler not found")                                      \
    X(cudaErrorUnsupportedPtxVersion, "unsupported ptx version")                                   \
    X(cudaErrorJitCompilationDisabled, "jit compilation disabled")                                 \
    X(cudaErrorUnsupportedExecAffinity, "unsupported exec affinity")                               \
    X(cudaErrorUnsupportedDevSideSync, "unsupported dev side sync")                                \
    X(cudaErrorContained, "contained")                                                             \
    X(cudaErrorInvalidSource, "invalid source")                                                    \
    X(cudaErrorFileNotFound, "file not found")                                                     \
    X(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found")                       \
    X(cudaErrorSharedObjectInitFailed, "shared object init failed")                                \
    X(cudaErrorOperatingSystem, "operating system")                                                \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                   \
    X(cudaErrorIllegalState, "illegal state")                                                      \
    X(cudaErrorLossyQuery, "lossy query")                                                          \
    X(cudaErrorSymbolNotFound, "named symbol not found")                                           \
    X(cudaErrorNotReady, "device not ready")                                                       \
    X(cudaErrorIllegalAddress, "illegal address")                                                  \
    X(cudaErrorLaunchOutOfResources, "launch out of resources")                                    \
    X(cudaErrorLaunchTimeout, "launch timeout")                                                    \
    X(cudaErrorLaunchIncompatibleTexturing, "launch incompatible texturing")                       \
    X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled")                         \
    X(cudaErrorPeerAccessNotEnabled, "peer access not enabled")                                    \
    X(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process")            \
    X(cudaErrorContextIsDestroyed, "context is destroyed")                                         \
    X(cudaErrorAssert, "assert")                                                                   \
    X(cudaErrorTooManyPeers, "too many peers")                                                     \
    X(cudaErrorHostMemoryAlreadyRegistered,                                                        \
      "part or all of the requested memory range is already mapped")                               \
    X(cudaErrorHostMemoryNotRegistered,                                                            \
      "pointer does not correspond to a registered memory region")                                 \
    X(cudaErrorHardwareStackError, "hardware stack error")                                         \
    X(cudaErrorIllegalInstruction, "illegal instruction")                                          \
    X(cudaErrorMisalignedAddress, "misaligned address")                                            \
    X(cudaErrorInvalidAddressSpace, "invalid address space")                                       \
    X(cudaErrorInvalidPc, "invalid pc")                                                            \
    X(cudaErrorLaunchFailure, "launch failure")                                                    \
    X(cudaErrorCooperativeLaunchTooLarge, "cooperative launch too large")                          \
    X(cudaErrorTensorMemoryLeak, "tensor memory leak")                                             \
    X(cudaErrorNotPermitted, "not permitted")                                                      \
    X(cudaErrorNotSupported, "operation not supported")                                            \
    X(cudaErrorSystemNotReady, "system not ready")                                                 \
    X(cudaErrorSystemDriverMismatch, "system driver mismatch")                                     \
    X(cudaErrorCompatNotSupportedOnDevice, "compat not supported on device")                       \
    X(cudaErrorMpsConnectionFailed, "mps connection failed")                                       \
    X(cudaErrorMpsRpcFailure, "mps rpc failure")                                                   \
    X(cudaErrorMpsServerNotReady, "mps server not ready")                                          \
    X(cudaErrorMpsMaxClientsReached, "mps max clients reached")                                    \
    X(cudaErrorMpsMaxConnectionsReached, "mps max connections reached")                            \
    X(cudaErrorMpsClientTerminated, "mps client terminated")                                       \
    X(cudaErrorCdpNotSupported, "cdp not supported")                                               \
    X(cudaErrorCdpVersionMismatch, "cdp version mismatch")                                         \
    X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")       \
    X(cudaErrorStreamCaptureInvalidated,                                                           \
      "operation failed due to a previous error during capture")                                   \
    X(cudaErrorStreamCaptureMerge, "stream capture merge")                                         \
    X(cudaErrorStreamCaptureUnmatched, "capture was not initiated in this stream")                 \
    X(cudaErrorStreamCaptureUnjoined, "stream capture unjoined")                                   \
    X(cudaErrorStreamCaptureIsolation, "stream capture isolation")                                 \
    X(cudaErrorStreamCaptureImplicit,                                                              \
      "operation would make the legacy stream depend on a capturing blocking stream")              \
    X(cudaErrorCapturedEvent, "captured event")                                                    \
    X(cudaErrorStreamCaptureWrongThread, "stream capture wrong thread")                            \
    X(cudaErrorTimeout, "timeout")                                                                 \
    X(cudaErrorGraphExecUpdateFailure, "graph exec update failure")                                \
    X(cudaErrorExternalDevice, "external device")                                                  \
    X(cudaErrorInvalidClusterSize, "invalid cluster size")                                         \
    X(cudaErrorFunctionNotLoaded, "function not loaded")                                           \
    X(cudaErrorInvalidResourceType, "invalid resource type")                                       \
    X(cudaErrorInvalidResourceConfiguration, "invalid resource configuration")                     \
    X(cudaErrorUnknown, "unknown error")                                                           \
    X(cudaErrorApiFailureBase, "API failure base")

struct rt_error_text {
    cudaError_t code;
    const char *name;
    const char *text;
};

#define RT_ERROR_ROW(code, text) {code, #code, text},
static const struct rt_error_text rt_error_texts[] = {RT_ERRORS(RT_ERROR_ROW)};
#undef RT_ERROR_ROW

static const struct rt_error_text *rt_error_find(int code)
{
    for (size_t i = 0; i < sizeof(rt_error_texts) / sizeof(rt_error_texts[0]); i++)
        if ((int)rt_error_texts[i].code == code) return &rt_error_texts[i];
    return NULL;
}

/* The runtime's codes were renumbered to match the driver's (CUDA 10.1), so a
 * driver code maps to the runtime code of the same value; the few driver codes
 * with no runtime twin get the closest meaning. */
cudaError_t rt_error_from_driver(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS:
        return cudaSuccess;
    case CUDA_ERROR_CONTEXT_ALREADY_CURRENT:
        return cudaErrorIncompatibleDriverContext;
    default:
        break;
    }
    const struct rt_error_text *row = rt_error_find((int)r);
    if (row == NULL || row->code == cudaErrorApiFailureBase) return cudaErrorUnknown;
    return row->code;
}

static __thread cudaError_t rt_last_error = cudaSuccess;

/* cudaErrorNotReady is an answer, not a failure: like NVIDIA's runtime, a query
 * that returns it leaves the last error alone. */
cudaError_t rt_fail(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady) rt_last_error = e;
    return e;
}

RT_API cudaError_t cudaGetLastError(void)
{
    cudaError_t e = rt_last_error;
    rt_last_error = cudaSuccess;
    return e;
}

RT_API cudaError_t cudaPeekAtLastError(void)
{
    return rt_last_error;
}

RT_API const char *cudaGetErrorName(cudaError_t error)
{
    const struct rt_error_text *row = rt_error_find((int)error);
    return row ? row->name : "unrecognized error code";
}

RT_API const char *cudaGetErrorString(cudaError_t error)
{
    const struct rt_error_text *row = rt_error_find((int)error);
    return row ? row->text : "unrecognized error code";
}
