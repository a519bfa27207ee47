/* The entry points libcudafrag.so exports, with where their real versions live.
 * The same table answers the three ways a program can reach a driver function:
 * the exported symbol itself, dlsym on a libcuda handle, and cuGetProcAddress. */
#ifndef CF_HOOK_SYMBOLS_H
#define CF_HOOK_SYMBOLS_H

/* X(exported symbol, name cuGetProcAddress knows it by). One row per ABI: the
 * legacy and _v2 exports take different argument types, _ptsz ones a different
 * default stream. */
// clang-format off
#define CF_DRIVER_HOOKS(X) \
    X(cuMemAlloc, cuMemAlloc) \
    X(cuMemAlloc_v2, cuMemAlloc) \
    X(cuMemFree, cuMemFree) \
    X(cuMemFree_v2, cuMemFree) \
    X(cuMemAllocPitch, cuMemAllocPitch) \
    X(cuMemAllocPitch_v2, cuMemAllocPitch) \
    X(cuMemAllocManaged, cuMemAllocManaged) \
    X(cuMemGetAddressRange, cuMemGetAddressRange) \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange) \
    X(cuPointerGetAttribute, cuPointerGetAttribute) \
    X(cuPointerGetAttributes, cuPointerGetAttributes) \
    X(cuMemAllocHost, cuMemAllocHost) \
    X(cuMemAllocHost_v2, cuMemAllocHost) \
    X(cuMemHostAlloc, cuMemHostAlloc) \
    X(cuMemFreeHost, cuMemFreeHost) \
    X(cuMemHostRegister, cuMemHostRegister) \
    X(cuMemHostRegister_v2, cuMemHostRegister) \
    X(cuMemHostUnregister, cuMemHostUnregister) \
    X(cuMemAllocAsync, cuMemAllocAsync) \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync) \
    X(cuMemFreeAsync, cuMemFreeAsync) \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync) \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync) \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync) \
    X(cuMemPoolCreate, cuMemPoolCreate) \
    X(cuMemPoolDestroy, cuMemPoolDestroy) \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute) \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute) \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo) \
    X(cuDeviceSetMemPool, cuDeviceSetMemPool) \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool) \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool) \
    X(cuMemCreate, cuMemCreate) \
    X(cuMemRelease, cuMemRelease) \
    X(cuMemMap, cuMemMap) \
    X(cuMemUnmap, cuMemUnmap) \
    X(cuMemAddressReserve, cuMemAddressReserve) \
    X(cuMemAddressFree, cuMemAddressFree) \
    X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode) \
    X(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode) \
    X(cuGraphLaunch, cuGraphLaunch) \
    X(cuGraphLaunch_ptsz, cuGraphLaunch) \
    X(cuStreamDestroy, cuStreamDestroy) \
    X(cuStreamDestroy_v2, cuStreamDestroy) \
    X(cuStreamSynchronize, cuStreamSynchronize) \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize) \
    X(cuCtxSetCurrent, cuCtxSetCurrent) \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess) \
    X(cuCtxPushCurrent, cuCtxPushCurrent) \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent) \
    X(cuCtxPopCurrent, cuCtxPopCurrent) \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent) \
    X(cuCtxCreate, cuCtxCreate) \
    X(cuCtxCreate_v2, cuCtxCreate) \
    X(cuCtxCreate_v3, cuCtxCreate) \
    X(cuCtxCreate_v4, cuCtxCreate) \
    X(cuCtxDestroy, cuCtxDestroy) \
    X(cuCtxDestroy_v2, cuCtxDestroy) \
    X(cuCtxDetach, cuCtxDetach) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease) \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease) \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset) \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset) \
    X(cuGreenCtxDestroy, cuGreenCtxDestroy) \
    X(cuStreamBeginCapture, cuStreamBeginCapture) \
    X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture) \
    X(cuStreamBeginCapture_v2, cuStreamBeginCapture) \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture) \
    X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph) \
    X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph) \
    X(cuStreamEndCapture, cuStreamEndCapture) \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture) \
    X(cuGetProcAddress, cuGetProcAddress) \
    X(cuGetProcAddress_v2, cuGetProcAddress)

#define CF_RUNTIME_HOOKS(X) \
    X(cudaMalloc) \
    X(cudaFree) \
    X(cudaMallocPitch) \
    X(cudaMalloc3D) \
    X(cudaMallocArray) \
    X(cudaMalloc3DArray) \
    X(cudaFreeArray) \
    X(cudaMallocManaged) \
    X(cudaMallocHost) \
    X(cudaHostAlloc) \
    X(cudaFreeHost) \
    X(cudaHostRegister) \
    X(cudaHostUnregister) \
    X(cudaMallocAsync) \
    X(cudaMallocAsync_ptsz) \
    X(cudaFreeAsync) \
    X(cudaFreeAsync_ptsz) \
    X(cudaMallocFromPoolAsync) \
    X(cudaMallocFromPoolAsync_ptsz) \
    X(cudaMemPoolCreate) \
    X(cudaMemPoolDestroy) \
    X(cudaMemPoolSetAttribute) \
    X(cudaMemPoolGetAttribute) \
    X(cudaMemPoolTrimTo) \
    X(cudaDeviceSetMemPool) \
    X(cudaDeviceGetMemPool) \
    X(cudaDeviceGetDefaultMemPool) \
    X(cudaGraphAddMemAllocNode) \
    X(cudaGraphAddMemFreeNode) \
    X(cudaGetDriverEntryPoint) \
    X(cudaGetDriverEntryPoint_ptsz) \
    X(cudaGetDriverEntryPointByVersion) \
    X(cudaGetDriverEntryPointByVersion_ptsz) \
    X(cudaStreamDestroy) \
    X(cudaSetDevice) \
    X(cudaDeviceReset) \
    X(cudaThreadExit) \
    X(cudaStreamBeginCapture) \
    X(cudaStreamBeginCapture_ptsz) \
    X(cudaStreamBeginCaptureToGraph) \
    X(cudaStreamBeginCaptureToGraph_ptsz) \
    X(cudaStreamEndCapture) \
    X(cudaStreamEndCapture_ptsz) \
    X(cudaGraphLaunch) \
    X(cudaGraphLaunch_ptsz)
// clang-format on

enum cf_dhook {
#define CF_DHOOK_ENUM(sym, base) CF_DHOOK_##sym,
    CF_DRIVER_HOOKS(CF_DHOOK_ENUM)
#undef CF_DHOOK_ENUM
        CF_DHOOK_COUNT
};

enum cf_rhook {
#define CF_RHOOK_ENUM(sym) CF_RHOOK_##sym,
    CF_RUNTIME_HOOKS(CF_RHOOK_ENUM)
#undef CF_RHOOK_ENUM
        CF_RHOOK_COUNT
};

/* The real function behind one of our exports, resolved on first use (and retried
 * while not found). NULL when the process has no such function. The lookup of a
 * resolved one is inline: every wrapper asks, the runtime's calls into the driver
 * included (they pass through our driver wrappers). */
extern void *cf_dhook_resolved[CF_DHOOK_COUNT], *cf_rhook_resolved[CF_RHOOK_COUNT];
void *cf_dhook_resolve(enum cf_dhook id);
void *cf_rhook_resolve(enum cf_rhook id);
static inline void *cf_dhook_real(enum cf_dhook id)
{
    void *p = __atomic_load_n(&cf_dhook_resolved[id], __ATOMIC_ACQUIRE);
    return __builtin_expect(p != NULL, 1) ? p : cf_dhook_resolve(id);
}
static inline void *cf_rhook_real(enum cf_rhook id)
{
    void *p = __atomic_load_n(&cf_rhook_resolved[id], __ATOMIC_ACQUIRE);
    return __builtin_expect(p != NULL, 1) ? p : cf_rhook_resolve(id);
}

#define CF_REAL_DRV(sym) ((__typeof__(&sym))cf_dhook_real(CF_DHOOK_##sym))
#define CF_REAL_RT(sym)  ((__typeof__(&sym))cf_rhook_real(CF_RHOOK_##sym))

/* A function pointer a driver lookup (cuGetProcAddress, cudaGetDriverEntryPoint) for
 * `symbol` returned: our wrapper when it is the real function of one of our rows
 * for that name (so the ABI is the one the caller was given), else `found` itself. */
void *cf_hook_for_lookup(const char *symbol, void *found);
/* Same for dlsym(handle, name) on any handle: `name` is an exact export name. */
void *cf_hook_for_export(const char *name, void *found);

#endif
