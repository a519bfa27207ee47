/* Internal interface of the simulated CUDA runtime (libcudart.so.13 and
 * libcudart_static.a). Like NVIDIA's runtime it never links the driver: the
 * driver is dlopen'ed on first use and every entry point comes from the
 * driver's own cuGetProcAddress, so that a profiler interposing dlsym and
 * cuGetProcAddress sees exactly the lookups a real program makes. */
#ifndef SIMRT_RUNTIME_H
#define SIMRT_RUNTIME_H

#include <stdbool.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

/* The runtime's exported API; everything else stays hidden (-fvisibility=hidden). */
#define RT_API __attribute__((visibility("default")))

/* The CUDA version this runtime asks the driver for (CUDART_VERSION of the headers). */
#define RT_CUDA_VERSION 13000

/* Driver entry points. Members ending in _pt are the per-thread default stream
 * variants (requested with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), used
 * by the runtime's _ptsz/_ptds exports. A member is NULL when the driver lacks it. */
struct rt_driver {
    PFN_cuGetProcAddress_v12000 cuGetProcAddress;
    PFN_cuInit_v2000 cuInit;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGetName_v2000 cuDeviceGetName;
    PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuDeviceCanAccessPeer_v4000 cuDeviceCanAccessPeer;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease;
    PFN_cuDevicePrimaryCtxReset_v11000 cuDevicePrimaryCtxReset;
    PFN_cuDevicePrimaryCtxSetFlags_v11000 cuDevicePrimaryCtxSetFlags;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    /* At 13000 the driver may answer cuCtxSynchronize_v2(ctx); the runtime always
     * passes the current context, which the older form ignores. */
    PFN_cuCtxSynchronize_v13000 cuCtxSynchronize;
    PFN_cuCtxEnablePeerAccess_v4000 cuCtxEnablePeerAccess;
    PFN_cuCtxDisablePeerAccess_v4000 cuCtxDisablePeerAccess;
    PFN_cuCtxGetStreamPriorityRange_v5050 cuCtxGetStreamPriorityRange;
    PFN_cuDevicePrimaryCtxGetState_v7000 cuDevicePrimaryCtxGetState;

    PFN_cuMemGetInfo_v3020 cuMemGetInfo;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemAllocPitch_v3020 cuMemAllocPitch;
    PFN_cuMemAllocManaged_v6000 cuMemAllocManaged;
    PFN_cuMemAllocHost_v3020 cuMemAllocHost;
    PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
    PFN_cuMemFreeHost_v2000 cuMemFreeHost;
    PFN_cuMemHostRegister_v6050 cuMemHostRegister;
    PFN_cuMemHostUnregister_v4000 cuMemHostUnregister;
    PFN_cuMemHostGetDevicePointer_v3020 cuMemHostGetDevicePointer;
    PFN_cuArrayCreate_v3020 cuArrayCreate;
    PFN_cuArray3DCreate_v3020 cuArray3DCreate;
    PFN_cuArrayDestroy_v2000 cuArrayDestroy;
    PFN_cuPointerGetAttributes_v7000 cuPointerGetAttributes;

    PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
    PFN_cuMemAllocAsync_v11020_ptsz cuMemAllocAsync_pt;
    PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
    PFN_cuMemFreeAsync_v11020_ptsz cuMemFreeAsync_pt;
    PFN_cuMemAllocFromPoolAsync_v11020 cuMemAllocFromPoolAsync;
    PFN_cuMemAllocFromPoolAsync_v11020_ptsz cuMemAllocFromPoolAsync_pt;
    PFN_cuMemPoolCreate_v11020 cuMemPoolCreate;
    PFN_cuMemPoolDestroy_v11020 cuMemPoolDestroy;
    PFN_cuMemPoolSetAttribute_v11020 cuMemPoolSetAttribute;
    PFN_cuMemPoolGetAttribute_v11020 cuMemPoolGetAttribute;
    PFN_cuMemPoolTrimTo_v11020 cuMemPoolTrimTo;
    PFN_cuMemPoolSetAccess_v11020 cuMemPoolSetAccess;
    PFN_cuMemPoolGetAccess_v11020 cuMemPoolGetAccess;
    PFN_cuDeviceSetMemPool_v11020 cuDeviceSetMemPool;
    PFN_cuDeviceGetMemPool_v11020 cuDeviceGetMemPool;
    PFN_cuDeviceGetDefaultMemPool_v11020 cuDeviceGetDefaultMemPool;
    PFN_cuMemGetDefaultMemPool_v13000 cuMemGetDefaultMemPool;
    PFN_cuMemGetMemPool_v13000 cuMemGetMemPool;
    PFN_cuMemSetMemPool_v13000 cuMemSetMemPool;

    PFN_cuMemsetD8_v3020 cuMemsetD8;
    PFN_cuMemsetD8_v7000_ptds cuMemsetD8_pt;
    PFN_cuMemsetD8Async_v3020 cuMemsetD8Async;
    PFN_cuMemsetD8Async_v7000_ptsz cuMemsetD8Async_pt;
    PFN_cuMemsetD2D8_v3020 cuMemsetD2D8;
    PFN_cuMemsetD2D8_v7000_ptds cuMemsetD2D8_pt;
    PFN_cuMemsetD2D8Async_v3020 cuMemsetD2D8Async;
    PFN_cuMemsetD2D8Async_v7000_ptsz cuMemsetD2D8Async_pt;
    PFN_cuMemcpy_v4000 cuMemcpy;
    PFN_cuMemcpy_v7000_ptds cuMemcpy_pt;
    PFN_cuMemcpyAsync_v4000 cuMemcpyAsync;
    PFN_cuMemcpyAsync_v7000_ptsz cuMemcpyAsync_pt;
    PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
    PFN_cuMemcpyHtoD_v7000_ptds cuMemcpyHtoD_pt;
    PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH;
    PFN_cuMemcpyDtoH_v7000_ptds cuMemcpyDtoH_pt;
    PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD;
    PFN_cuMemcpyDtoD_v7000_ptds cuMemcpyDtoD_pt;
    PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync;
    PFN_cuMemcpyHtoDAsync_v7000_ptsz cuMemcpyHtoDAsync_pt;
    PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync;
    PFN_cuMemcpyDtoHAsync_v7000_ptsz cuMemcpyDtoHAsync_pt;
    PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync;
    PFN_cuMemcpyDtoDAsync_v7000_ptsz cuMemcpyDtoDAsync_pt;
    PFN_cuMemcpy2D_v3020 cuMemcpy2D;
    PFN_cuMemcpy2D_v7000_ptds cuMemcpy2D_pt;
    PFN_cuMemcpy2DAsync_v3020 cuMemcpy2DAsync;
    PFN_cuMemcpy2DAsync_v7000_ptsz cuMemcpy2DAsync_pt;
    PFN_cuMemcpyPeer_v4000 cuMemcpyPeer;
    PFN_cuMemcpyPeerAsync_v4000 cuMemcpyPeerAsync;

    PFN_cuStreamCreate_v2000 cuStreamCreate;
    PFN_cuStreamCreateWithPriority_v5050 cuStreamCreateWithPriority;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuStreamSynchronize_v7000_ptsz cuStreamSynchronize_pt;
    PFN_cuStreamQuery_v2000 cuStreamQuery;
    PFN_cuStreamQuery_v7000_ptsz cuStreamQuery_pt;
    PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent;
    PFN_cuStreamWaitEvent_v7000_ptsz cuStreamWaitEvent_pt;
    PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture;
    PFN_cuStreamBeginCapture_v10010_ptsz cuStreamBeginCapture_pt;
    PFN_cuStreamEndCapture_v10000 cuStreamEndCapture;
    PFN_cuStreamEndCapture_v10000_ptsz cuStreamEndCapture_pt;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuStreamIsCapturing_v10000_ptsz cuStreamIsCapturing_pt;
    PFN_cuStreamGetCaptureInfo_v12030 cuStreamGetCaptureInfo;
    PFN_cuStreamGetCaptureInfo_v12030_ptsz cuStreamGetCaptureInfo_pt;
    PFN_cuStreamGetFlags_v5050 cuStreamGetFlags;
    PFN_cuStreamGetFlags_v7000_ptsz cuStreamGetFlags_pt;
    PFN_cuStreamGetPriority_v5050 cuStreamGetPriority;
    PFN_cuStreamGetPriority_v7000_ptsz cuStreamGetPriority_pt;
    PFN_cuStreamGetDevice_v12080 cuStreamGetDevice;
    PFN_cuStreamGetDevice_v12080_ptsz cuStreamGetDevice_pt;
    PFN_cuLaunchHostFunc_v10000 cuLaunchHostFunc;
    PFN_cuLaunchHostFunc_v10000_ptsz cuLaunchHostFunc_pt;
    PFN_cuEventCreate_v2000 cuEventCreate;
    PFN_cuEventRecord_v2000 cuEventRecord;
    PFN_cuEventRecord_v7000_ptsz cuEventRecord_pt;
    PFN_cuEventRecordWithFlags_v11010 cuEventRecordWithFlags;
    PFN_cuEventRecordWithFlags_v11010_ptsz cuEventRecordWithFlags_pt;
    PFN_cuEventQuery_v2000 cuEventQuery;
    PFN_cuEventSynchronize_v2000 cuEventSynchronize;
    PFN_cuEventDestroy_v4000 cuEventDestroy;
    PFN_cuEventElapsedTime_v12080 cuEventElapsedTime;

    PFN_cuGraphCreate_v10000 cuGraphCreate;
    PFN_cuGraphAddMemAllocNode_v11040 cuGraphAddMemAllocNode;
    PFN_cuGraphAddMemFreeNode_v11040 cuGraphAddMemFreeNode;
    PFN_cuGraphAddEmptyNode_v10000 cuGraphAddEmptyNode;
    PFN_cuGraphAddHostNode_v10000 cuGraphAddHostNode;
    PFN_cuGraphAddMemsetNode_v10000 cuGraphAddMemsetNode;
    PFN_cuGraphNodeGetType_v10000 cuGraphNodeGetType;
    PFN_cuGraphMemAllocNodeGetParams_v11040 cuGraphMemAllocNodeGetParams;
    PFN_cuGraphMemFreeNodeGetParams_v11040 cuGraphMemFreeNodeGetParams;
    PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags;
    PFN_cuGraphInstantiateWithParams_v12000 cuGraphInstantiateWithParams;
    PFN_cuGraphInstantiateWithParams_v12000_ptsz cuGraphInstantiateWithParams_pt;
    PFN_cuGraphLaunch_v10000 cuGraphLaunch;
    PFN_cuGraphLaunch_v10000_ptsz cuGraphLaunch_pt;
    PFN_cuGraphUpload_v11010 cuGraphUpload;
    PFN_cuGraphUpload_v11010_ptsz cuGraphUpload_pt;
    PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy;
    PFN_cuGraphDestroy_v10000 cuGraphDestroy;
    PFN_cuDeviceGetGraphMemAttribute_v11040 cuDeviceGetGraphMemAttribute;
    PFN_cuDeviceSetGraphMemAttribute_v11040 cuDeviceSetGraphMemAttribute;
    PFN_cuDeviceGraphMemTrim_v11040 cuDeviceGraphMemTrim;
};

/* The table, filled once by rt_init(); read-only afterwards. */
extern struct rt_driver rt_drv;

/* Calls a driver entry point the driver may lack (an older or partial driver).
 * cuda.h renames many entry points (cuMemAlloc -> cuMemAlloc_v2); the members
 * are renamed alike, so the table reads as the API does. */
#define RT_CALL(fn, ...) (rt_drv.fn ? rt_drv.fn(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED)
/* Same, choosing the per-thread default stream variant for _ptsz/_ptds callers.
 * A driver without that variant gets the legacy entry point with the stream
 * made explicit by rt_stream(). fn is pasted before cuda.h's renames apply, so
 * this must not go through another macro. */
/* clang-format off */
#define RT_CALL_PT(pt, fn, ...)                                                                    \
    (((pt) && rt_drv.fn##_pt) ? rt_drv.fn##_pt(__VA_ARGS__)                                        \
     : rt_drv.fn ? rt_drv.fn(__VA_ARGS__)                                                          \
     : CUDA_ERROR_NOT_SUPPORTED)
/* clang-format on */

/* Loads the driver and fills rt_drv on the first call (thread safe); returns the
 * same answer on every later call. */
cudaError_t rt_init(void);
/* rt_init(), then makes sure the calling thread has a current context: the
 * primary context of its current device, retained on first use. */
cudaError_t rt_ctx(void);
/* The calling thread's current device (cudaSetDevice; 0 by default). */
int rt_device(void);
/* Resolves a runtime device ordinal to the driver's device (initializing). */
cudaError_t rt_cudevice(int device, CUdevice *dev);
/* The primary context of a device, retained on first use; NULL on failure (*err set). */
CUcontext rt_primary_ctx(int device, cudaError_t *err);
/* Forgets the primary context of a device (cudaDeviceReset); true when the
 * runtime held a reference to release. */
bool rt_forget_primary_ctx(int device);

/* The stream a call runs on: the per-thread default stream replaces the legacy
 * one (handle 0) for the _ptsz/_ptds entry points. */
static inline CUstream rt_stream(cudaStream_t stream, bool pt)
{
    return (pt && stream == NULL) ? CU_STREAM_PER_THREAD : (CUstream)stream;
}

/* Error handling: every failing call records its error as the thread's last
 * error (cudaGetLastError), as NVIDIA's runtime does. */
cudaError_t rt_error_from_driver(CUresult r);
cudaError_t rt_fail(cudaError_t e);
static inline cudaError_t rt_cu(CUresult r)
{
    return r == CUDA_SUCCESS ? cudaSuccess : rt_fail(rt_error_from_driver(r));
}
/* Enters a call that needs a context; returns its error from the enclosing function. */
#define RT_ENTER()                                                                                 \
    do {                                                                                           \
        cudaError_t rt_enter_err_ = rt_ctx();                                                      \
        if (rt_enter_err_ != cudaSuccess) return rt_fail(rt_enter_err_);                           \
    } while (0)

#endif
