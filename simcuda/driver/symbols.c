/* cuGetProcAddress: the table of every entry point with the CUDA version
 * that introduced each ABI, so that a caller built against an older toolkit
 * gets the ABI it was compiled for (cuMemAlloc at 3000 is the 32-bit one,
 * at 3020 and later cuMemAlloc_v2), and per-thread-default-stream callers
 * get the _ptsz/_ptds variants. */
#include "sim.h"

#include <stdio.h>
#include <string.h>

struct proc {
    const char *name;
    int version;
    int per_thread;
    void *fn;
};

#define S(n, v, f)                                                                                 \
    {                                                                                              \
        n, v, 0, (void *)(f)                                                                       \
    }
#define P(n, v, f)                                                                                 \
    {                                                                                              \
        n, v, 1, (void *)(f)                                                                       \
    }
/* name introduced at v1 with the plain symbol, at v2 with the _v2 symbol */
#define S2(n, v1, v2) S(#n, v1, n), S(#n, v2, n##_v2)

static const struct proc procs[] = {
    S("cuInit", 2000, cuInit),
    S("cuDriverGetVersion", 2020, cuDriverGetVersion),
    S("cuGetErrorString", 6000, cuGetErrorString),
    S("cuGetErrorName", 6000, cuGetErrorName),
    S("cuGetProcAddress", 11030, cuGetProcAddress),
    S("cuGetProcAddress", 12000, cuGetProcAddress_v2),

    S("cuDeviceGet", 2000, cuDeviceGet),
    S("cuDeviceGetCount", 2000, cuDeviceGetCount),
    S("cuDeviceGetName", 2000, cuDeviceGetName),
    S2(cuDeviceGetUuid, 9020, 11040),
    S2(cuDeviceTotalMem, 2000, 3020),
    S("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    S("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    S("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    S2(cuDevicePrimaryCtxRelease, 7000, 11000),
    S2(cuDevicePrimaryCtxReset, 7000, 11000),
    S2(cuDevicePrimaryCtxSetFlags, 7000, 11000),
    S("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    S("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    S("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    S("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    S("cuDeviceGetGraphMemAttribute", 11040, cuDeviceGetGraphMemAttribute),
    S("cuDeviceSetGraphMemAttribute", 11040, cuDeviceSetGraphMemAttribute),
    S("cuDeviceGraphMemTrim", 11040, cuDeviceGraphMemTrim),

    S2(cuCtxCreate, 2000, 3020),
    S("cuCtxCreate", 11040, cuCtxCreate_v3),
    S("cuCtxCreate", 12050, cuCtxCreate_v4),
    S2(cuCtxDestroy, 2000, 4000),
    S2(cuCtxPushCurrent, 2000, 4000),
    S2(cuCtxPopCurrent, 2000, 4000),
    S("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    S("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    S2(cuCtxGetDevice, 2000, 13000),
    S2(cuCtxSynchronize, 2000, 13000),
    S("cuCtxGetFlags", 7000, cuCtxGetFlags),
    S("cuCtxGetId", 12000, cuCtxGetId),
    S("cuCtxGetApiVersion", 3020, cuCtxGetApiVersion),
    S("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange),
    S("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    S("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),

    S2(cuMemGetInfo, 2000, 3020),
    S2(cuMemAlloc, 2000, 3020),
    S2(cuMemAllocPitch, 2000, 3020),
    S2(cuMemFree, 2000, 3020),
    S2(cuMemGetAddressRange, 2000, 3020),
    S2(cuMemAllocHost, 2000, 3020),
    S("cuMemHostAlloc", 2020, cuMemHostAlloc),
    S("cuMemFreeHost", 2000, cuMemFreeHost),
    S("cuMemHostGetFlags", 2030, cuMemHostGetFlags),
    S2(cuMemHostRegister, 4000, 6050),
    S("cuMemHostUnregister", 4000, cuMemHostUnregister),
    S2(cuMemHostGetDevicePointer, 2020, 3020),
    S("cuMemAllocManaged", 6000, cuMemAllocManaged),
    S("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    S("cuPointerGetAttributes", 7000, cuPointerGetAttributes),

    S2(cuMemsetD8, 2000, 3020),
    P("cuMemsetD8", 7000, cuMemsetD8_v2_ptds),
    S2(cuMemsetD16, 2000, 3020),
    P("cuMemsetD16", 7000, cuMemsetD16_v2_ptds),
    S2(cuMemsetD32, 2000, 3020),
    P("cuMemsetD32", 7000, cuMemsetD32_v2_ptds),
    S2(cuMemsetD2D8, 2000, 3020),
    P("cuMemsetD2D8", 7000, cuMemsetD2D8_v2_ptds),
    S2(cuMemsetD2D16, 2000, 3020),
    P("cuMemsetD2D16", 7000, cuMemsetD2D16_v2_ptds),
    S2(cuMemsetD2D32, 2000, 3020),
    P("cuMemsetD2D32", 7000, cuMemsetD2D32_v2_ptds),
    S("cuMemsetD8Async", 3020, cuMemsetD8Async),
    P("cuMemsetD8Async", 7000, cuMemsetD8Async_ptsz),
    S("cuMemsetD16Async", 3020, cuMemsetD16Async),
    P("cuMemsetD16Async", 7000, cuMemsetD16Async_ptsz),
    S("cuMemsetD32Async", 3020, cuMemsetD32Async),
    P("cuMemsetD32Async", 7000, cuMemsetD32Async_ptsz),
    S("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async),
    P("cuMemsetD2D8Async", 7000, cuMemsetD2D8Async_ptsz),
    S("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async),
    P("cuMemsetD2D16Async", 7000, cuMemsetD2D16Async_ptsz),
    S("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async),
    P("cuMemsetD2D32Async", 7000, cuMemsetD2D32Async_ptsz),

    S("cuMemcpy", 4000, cuMemcpy),
    P("cuMemcpy", 7000, cuMemcpy_ptds),
    S("cuMemcpyAsync", 4000, cuMemcpyAsync),
    P("cuMemcpyAsync", 7000, cuMemcpyAsync_ptsz),
    S("cuMemcpyPeer", 4000, cuMemcpyPeer),
    P("cuMemcpyPeer", 7000, cuMemcpyPeer_ptds),
    S("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    P("cuMemcpyPeerAsync", 7000, cuMemcpyPeerAsync_ptsz),
    S2(cuMemcpyHtoD, 2000, 3020),
    P("cuMemcpyHtoD", 7000, cuMemcpyHtoD_v2_ptds),
    S2(cuMemcpyDtoH, 2000, 3020),
    P("cuMemcpyDtoH", 7000, cuMemcpyDtoH_v2_ptds),
    S2(cuMemcpyDtoD, 2000, 3020),
    P("cuMemcpyDtoD", 7000, cuMemcpyDtoD_v2_ptds),
    S2(cuMemcpyHtoDAsync, 2000, 3020),
    P("cuMemcpyHtoDAsync", 7000, cuMemcpyHtoDAsync_v2_ptsz),
    S2(cuMemcpyDtoHAsync, 2000, 3020),
    P("cuMemcpyDtoHAsync", 7000, cuMemcpyDtoHAsync_v2_ptsz),
    S2(cuMemcpyDtoDAsync, 3000, 3020),
    P("cuMemcpyDtoDAsync", 7000, cuMemcpyDtoDAsync_v2_ptsz),
    S("cuMemcpy2D", 3020, cuMemcpy2D_v2),
    P("cuMemcpy2D", 7000, cuMemcpy2D_v2_ptds),
    S("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2),
    P("cuMemcpy2DUnaligned", 7000, cuMemcpy2DUnaligned_v2_ptds),
    S("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2),
    P("cuMemcpy2DAsync", 7000, cuMemcpy2DAsync_v2_ptsz),

    S("cuStreamCreate", 2000, cuStreamCreate),
    S("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
    S2(cuStreamDestroy, 2000, 4000),
    S("cuStreamSynchronize", 2000, cuStreamSynchronize),
    P("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    S("cuStreamQuery", 2000, cuStreamQuery),
    P("cuStreamQuery", 7000, cuStreamQuery_ptsz),
    S("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    P("cuStreamWaitEvent", 7000, cuStreamWaitEvent_ptsz),
    S("cuStreamGetFlags", 5050, cuStreamGetFlags),
    P("cuStreamGetFlags", 7000, cuStreamGetFlags_ptsz),
    S("cuStreamGetPriority", 5050, cuStreamGetPriority),
    P("cuStreamGetPriority", 7000, cuStreamGetPriority_ptsz),
    S("cuStreamGetCtx", 9020, cuStreamGetCtx),
    P("cuStreamGetCtx", 9020, cuStreamGetCtx_ptsz),
    S("cuStreamGetId", 12000, cuStreamGetId),
    P("cuStreamGetId", 12000, cuStreamGetId_ptsz),
    S("cuStreamGetDevice", 12080, cuStreamGetDevice),
    P("cuStreamGetDevice", 12080, cuStreamGetDevice_ptsz),
    S("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
    P("cuLaunchHostFunc", 10000, cuLaunchHostFunc_ptsz),

    S("cuEventCreate", 2000, cuEventCreate),
    S("cuEventRecord", 2000, cuEventRecord),
    P("cuEventRecord", 7000, cuEventRecord_ptsz),
    S("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags),
    P("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags_ptsz),
    S("cuEventQuery", 2000, cuEventQuery),
    S("cuEventSynchronize", 2000, cuEventSynchronize),
    S2(cuEventDestroy, 2000, 4000),
    S2(cuEventElapsedTime, 2000, 12080),

    S("cuMemAllocAsync", 11020, cuMemAllocAsync),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    S("cuMemFreeAsync", 11020, cuMemFreeAsync),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    S("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
    S("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    S("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    S("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    S("cuMemPoolSetAccess", 11020, cuMemPoolSetAccess),
    S("cuMemPoolGetAccess", 11020, cuMemPoolGetAccess),
    S("cuMemPoolCreate", 11020, cuMemPoolCreate),
    S("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    S("cuMemGetDefaultMemPool", 13000, cuMemGetDefaultMemPool),
    S("cuMemGetMemPool", 13000, cuMemGetMemPool),
    S("cuMemSetMemPool", 13000, cuMemSetMemPool),

    S("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    S("cuMemCreate", 10020, cuMemCreate),
    S("cuMemRelease", 10020, cuMemRelease),
    S("cuMemAddressReserve", 10020, cuMemAddressReserve),
    S("cuMemAddressFree", 10020, cuMemAddressFree),
    S("cuMemMap", 10020, cuMemMap),
    S("cuMemUnmap", 10020, cuMemUnmap),
    S("cuMemSetAccess", 10020, cuMemSetAccess),
    S("cuMemGetAccess", 10020, cuMemGetAccess),
    S("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle),
    S("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),

    S2(cuArrayCreate, 2000, 3020),
    S2(cuArray3DCreate, 2000, 3020),
    S("cuArrayDestroy", 2000, cuArrayDestroy),
    S("cuArrayGetDescriptor", 3020, cuArrayGetDescriptor_v2),
    S("cuArray3DGetDescriptor", 3020, cuArray3DGetDescriptor_v2),

    S("cuGraphCreate", 10000, cuGraphCreate),
    S("cuGraphDestroy", 10000, cuGraphDestroy),
    S("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode),
    S("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode),
    S("cuGraphMemAllocNodeGetParams", 11040, cuGraphMemAllocNodeGetParams),
    S("cuGraphMemFreeNodeGetParams", 11040, cuGraphMemFreeNodeGetParams),
    S("cuGraphAddMemsetNode", 10000, cuGraphAddMemsetNode),
    S("cuGraphAddHostNode", 10000, cuGraphAddHostNode),
    S("cuGraphAddEmptyNode", 10000, cuGraphAddEmptyNode),
    S("cuGraphNodeGetType", 10000, cuGraphNodeGetType),
    S2(cuGraphInstantiate, 10000, 11000),
    S("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    S("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams),
    P("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams_ptsz),
    S("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    S("cuGraphLaunch", 10000, cuGraphLaunch),
    P("cuGraphLaunch", 10000, cuGraphLaunch_ptsz),
    S("cuGraphUpload", 11010, cuGraphUpload),
    P("cuGraphUpload", 11010, cuGraphUpload_ptsz),
    S("cuStreamBeginCapture", 10000, cuStreamBeginCapture),
    P("cuStreamBeginCapture", 10000, cuStreamBeginCapture_ptsz),
    S("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
    S("cuStreamEndCapture", 10000, cuStreamEndCapture),
    P("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    S("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    P("cuStreamIsCapturing", 10000, cuStreamIsCapturing_ptsz),
    S("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo),
    P("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo_ptsz),
    S("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2),
    P("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2_ptsz),
    S("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3),
    P("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3_ptsz),
};

/* NVIDIA's runtime reaches its driver's private interfaces through
 * cuGetExportTable, whose tables are undocumented; the simulated runtime never
 * asks for it. So this lookup identifies a program that brought NVIDIA's runtime
 * (linked statically, or found through an RPATH before the simulated one): every
 * CUDA call it makes will fail, and only here can the reason be told. */
static void warn_nvidia_runtime(void)
{
    static int warned;
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
    fprintf(stderr,
            "simcuda: this program uses NVIDIA's CUDA runtime (libcudart linked statically, or "
            "loaded through an RPATH), which needs the real driver's private interfaces "
            "(cuGetExportTable): the simulated device cannot run it, and its CUDA calls will "
            "fail (cudaErrorCallRequiresNewerDriver). Link the program with the simulated "
            "runtime (libcudart.so.13 or libcudart_static.a of simcuda), or run it on a GPU.\n");
}

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    if (symbol && strcmp(symbol, "cuGetExportTable") == 0) warn_nvidia_runtime();
    if (!symbol || !pfn ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct proc *best = NULL, *best_pt = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const struct proc *p = &procs[i];
        if (strcmp(p->name, symbol) != 0) continue;
        known = 1;
        if (p->version > version) continue;
        if (p->per_thread) {
            if (!best_pt || p->version > best_pt->version) best_pt = p;
        } else if (!best || p->version > best->version) {
            best = p;
        }
    }
    const struct proc *pick = best;
    if (want_pt && best_pt && (!best || best_pt->version >= best->version)) pick = best_pt;
    *pfn = pick ? pick->fn : NULL;
    if (status)
        *status = pick    ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    /* A miss is also an error here, so that callers which only look at the
     * result see it (a CUDA 13 driver returns CUDA_SUCCESS when a status is
     * asked for; callers that check the status behave the same on both). */
    return pick ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    SIM_ENTRY();
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

SIM_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    SIM_ENTRY();
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
