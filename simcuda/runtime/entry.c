/* Reaching the driver, exactly as NVIDIA's runtime does: dlopen libcuda.so.1,
 * look up cuGetProcAddress_v2 with the only dlsym the runtime ever makes, ask it
 * for cuGetProcAddress, and obtain every other entry point through that. */
#include "runtime.h"
#include "per_thread.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

struct rt_driver rt_drv;

/* One table member: the driver's name for it, whether the per-thread default
 * stream variant is asked for, and whether the runtime cannot work without it. */
struct rt_entry {
    const char *name;
    size_t offset;
    bool per_thread;
    bool required;
};

/* #fn is the name before cuda.h's renames (cuMemAlloc, not cuMemAlloc_v2): the
 * name cuGetProcAddress expects. Each macro uses its argument directly, never
 * through another macro, which would expand it first. */
/* clang-format off */
#define RT_REQUIRED(fn) {#fn, offsetof(struct rt_driver, fn), false, true}
#define RT_OPTIONAL(fn) {#fn, offsetof(struct rt_driver, fn), false, false}
#define RT_BOTH(fn)                                                                                \
    {#fn, offsetof(struct rt_driver, fn), false, false},                                           \
    {#fn, offsetof(struct rt_driver, fn##_pt), true, false}
/* clang-format on */

static const struct rt_entry rt_entries[] = {
    RT_REQUIRED(cuInit),
    RT_REQUIRED(cuDriverGetVersion),
    RT_REQUIRED(cuDeviceGet),
    RT_REQUIRED(cuDeviceGetCount),
    RT_OPTIONAL(cuDeviceGetName),
    RT_OPTIONAL(cuDeviceTotalMem),
    RT_OPTIONAL(cuDeviceGetAttribute),
    RT_OPTIONAL(cuDeviceCanAccessPeer),
    RT_REQUIRED(cuDevicePrimaryCtxRetain),
    RT_OPTIONAL(cuDevicePrimaryCtxRelease),
    RT_OPTIONAL(cuDevicePrimaryCtxReset),
    RT_OPTIONAL(cuDevicePrimaryCtxSetFlags),
    RT_REQUIRED(cuCtxGetCurrent),
    RT_REQUIRED(cuCtxSetCurrent),
    RT_OPTIONAL(cuCtxSynchronize),
    RT_OPTIONAL(cuCtxEnablePeerAccess),
    RT_OPTIONAL(cuCtxDisablePeerAccess),
    RT_OPTIONAL(cuCtxGetStreamPriorityRange),
    RT_OPTIONAL(cuDevicePrimaryCtxGetState),
    RT_OPTIONAL(cuMemGetInfo),
    RT_OPTIONAL(cuMemAlloc),
    RT_OPTIONAL(cuMemFree),
    RT_OPTIONAL(cuMemAllocPitch),
    RT_OPTIONAL(cuMemAllocManaged),
    RT_OPTIONAL(cuMemAllocHost),
    RT_OPTIONAL(cuMemHostAlloc),
    RT_OPTIONAL(cuMemFreeHost),
    RT_OPTIONAL(cuMemHostRegister),
    RT_OPTIONAL(cuMemHostUnregister),
    RT_OPTIONAL(cuMemHostGetDevicePointer),
    RT_OPTIONAL(cuArrayCreate),
    RT_OPTIONAL(cuArray3DCreate),
    RT_OPTIONAL(cuArrayDestroy),
    RT_OPTIONAL(cuPointerGetAttributes),
    RT_BOTH(cuMemAllocAsync),
    RT_BOTH(cuMemFreeAsync),
    RT_BOTH(cuMemAllocFromPoolAsync),
    RT_OPTIONAL(cuMemPoolCreate),
    RT_OPTIONAL(cuMemPoolDestroy),
    RT_OPTIONAL(cuMemPoolSetAttribute),
    RT_OPTIONAL(cuMemPoolGetAttribute),
    RT_OPTIONAL(cuMemPoolTrimTo),
    RT_OPTIONAL(cuMemPoolSetAccess),
    RT_OPTIONAL(cuMemPoolGetAccess),
    RT_OPTIONAL(cuDeviceSetMemPool),
    RT_OPTIONAL(cuDeviceGetMemPool),
    RT_OPTIONAL(cuDeviceGetDefaultMemPool),
    RT_OPTIONAL(cuMemGetDefaultMemPool),
    RT_OPTIONAL(cuMemGetMemPool),
    RT_OPTIONAL(cuMemSetMemPool),
    RT_BOTH(cuMemsetD8),
    RT_BOTH(cuMemsetD8Async),
    RT_BOTH(cuMemsetD2D8),
    RT_BOTH(cuMemsetD2D8Async),
    RT_BOTH(cuMemcpy),
    RT_BOTH(cuMemcpyAsync),
    RT_BOTH(cuMemcpyHtoD),
    RT_BOTH(cuMemcpyDtoH),
    RT_BOTH(cuMemcpyDtoD),
    RT_BOTH(cuMemcpyHtoDAsync),
    RT_BOTH(cuMemcpyDtoHAsync),
    RT_BOTH(cuMemcpyDtoDAsync),
    RT_BOTH(cuMemcpy2D),
    RT_BOTH(cuMemcpy2DAsync),
    RT_OPTIONAL(cuMemcpyPeer),
    RT_OPTIONAL(cuMemcpyPeerAsync),
    RT_OPTIONAL(cuStreamCreate),
    RT_OPTIONAL(cuStreamCreateWithPriority),
    RT_OPTIONAL(cuStreamDestroy),
    RT_BOTH(cuStreamSynchronize),
    RT_BOTH(cuStreamQuery),
    RT_BOTH(cuStreamWaitEvent),
    RT_BOTH(cuStreamBeginCapture),
    RT_BOTH(cuStreamEndCapture),
    RT_BOTH(cuStreamIsCapturing),
    RT_BOTH(cuStreamGetCaptureInfo),
    RT_BOTH(cuStreamGetFlags),
    RT_BOTH(cuStreamGetPriority),
    RT_BOTH(cuStreamGetDevice),
    RT_BOTH(cuLaunchHostFunc),
    RT_OPTIONAL(cuEventCreate),
    RT_BOTH(cuEventRecord),
    RT_BOTH(cuEventRecordWithFlags),
    RT_OPTIONAL(cuEventQuery),
    RT_OPTIONAL(cuEventSynchronize),
    RT_OPTIONAL(cuEventDestroy),
    RT_OPTIONAL(cuEventElapsedTime),
    RT_OPTIONAL(cuGraphCreate),
    RT_OPTIONAL(cuGraphAddMemAllocNode),
    RT_OPTIONAL(cuGraphAddMemFreeNode),
    RT_OPTIONAL(cuGraphAddEmptyNode),
    RT_OPTIONAL(cuGraphAddHostNode),
    RT_OPTIONAL(cuGraphAddMemsetNode),
    RT_OPTIONAL(cuGraphNodeGetType),
    RT_OPTIONAL(cuGraphMemAllocNodeGetParams),
    RT_OPTIONAL(cuGraphMemFreeNodeGetParams),
    RT_OPTIONAL(cuGraphInstantiateWithFlags),
    RT_BOTH(cuGraphInstantiateWithParams),
    RT_BOTH(cuGraphLaunch),
    RT_BOTH(cuGraphUpload),
    RT_OPTIONAL(cuGraphExecDestroy),
    RT_OPTIONAL(cuGraphDestroy),
    RT_OPTIONAL(cuDeviceGetGraphMemAttribute),
    RT_OPTIONAL(cuDeviceSetGraphMemAttribute),
    RT_OPTIONAL(cuDeviceGraphMemTrim),
};

static pthread_once_t rt_init_once = PTHREAD_ONCE_INIT;
static cudaError_t rt_init_status = cudaErrorInitializationError;

/* Asks the driver for one member; false when a required one is missing. */
static bool rt_resolve(const struct rt_entry *entry)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    cuuint64_t flags = entry->per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                         : CU_GET_PROC_ADDRESS_DEFAULT;
    CUresult r = rt_drv.cuGetProcAddress(entry->name, &fn, RT_CUDA_VERSION, flags, &found);
    if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS) fn = NULL;
    *(void **)((char *)&rt_drv + entry->offset) = fn;
    return fn != NULL || !entry->required;
}

static cudaError_t rt_load_driver(void)
{
    /* RTLD_GLOBAL as NVIDIA's runtime: libraries loaded later (cuBLAS, NCCL)
     * find the same driver. The handle is never closed. */
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) return cudaErrorInsufficientDriver;
    PFN_cuGetProcAddress_v12000 bootstrap =
        (PFN_cuGetProcAddress_v12000)dlsym(handle, "cuGetProcAddress_v2");
    if (bootstrap == NULL) return cudaErrorInsufficientDriver;
    void *fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (bootstrap("cuGetProcAddress", &fn, RT_CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
            CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || fn == NULL)
        return cudaErrorInsufficientDriver;
    rt_drv.cuGetProcAddress = (PFN_cuGetProcAddress_v12000)fn;
    for (size_t i = 0; i < sizeof(rt_entries) / sizeof(rt_entries[0]); i++)
        if (!rt_resolve(&rt_entries[i])) return cudaErrorInsufficientDriver;
    return cudaSuccess;
}

static void rt_init_once_fn(void)
{
    cudaError_t e = rt_load_driver();
    if (e == cudaSuccess) e = rt_error_from_driver(rt_drv.cuInit(0));
    int version = 0;
    if (e == cudaSuccess && rt_drv.cuDriverGetVersion(&version) == CUDA_SUCCESS &&
        version < RT_CUDA_VERSION)
        e = cudaErrorInsufficientDriver;
    rt_init_status = e;
}

cudaError_t rt_init(void)
{
    pthread_once(&rt_init_once, rt_init_once_fn);
    return rt_init_status;
}

/* cudaEnableDefault follows the stream mode of the caller: the _ptsz export
 * asks for the per-thread default stream variants. The other flag values
 * equal the driver's. */
static cudaError_t rt_entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                  unsigned long long flags, bool pt,
                                  enum cudaDriverEntryPointQueryResult *driverStatus)
{
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return rt_fail(e);
    if (symbol == NULL || funcPtr == NULL) return rt_fail(cudaErrorInvalidValue);
    cuuint64_t cuflags = flags;
    if (flags == cudaEnableDefault)
        cuflags = pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *funcPtr = NULL;
    CUresult r = rt_drv.cuGetProcAddress(symbol, funcPtr, (int)cudaVersion, cuflags, &found);
    if (driverStatus != NULL) *driverStatus = (enum cudaDriverEntryPointQueryResult)found;
    return rt_cu(r);
}

RT_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                           unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return rt_entry_point(symbol, funcPtr, RT_CUDA_VERSION, flags, false, driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                unsigned long long flags,
                                                enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return rt_entry_point(symbol, funcPtr, RT_CUDA_VERSION, flags, true, driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return rt_entry_point(symbol, funcPtr, cudaVersion, flags, false, driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return rt_entry_point(symbol, funcPtr, cudaVersion, flags, true, driverStatus);
}
