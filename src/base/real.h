/* The real CUDA entry points, resolved at run time (libcudafrag never links
 * libcuda or libcudart). cudafrag's own calls -- the documented sampling calls and
 * the arena's backing calls -- go straight to these, never through our wrappers,
 * so they are never recorded as the application's. */
#ifndef CF_HOOK_REAL_H
#define CF_HOOK_REAL_H

#include <cuda.h>
#include <cudaTypedefs.h>

/* The dlsym of libc (found with dlvsym), for lookups that must bypass our override. */
void *cf_real_dlsym(void *handle, const char *name);
/* libc's dlsym itself (NULL if it cannot be found), for the RTLD_NEXT/RTLD_DEFAULT
 * path of the dlsym override, which must reach it with the caller's return address. */
void *cf_real_dlsym_fn(void);

/* The process's libcuda (dlopen "libcuda.so.1" with RTLD_NOLOAD), NULL while it is
 * not loaded; asked again on every call until it is. */
void *cf_libcuda(void);
/* An exported libcuda symbol by exact name (cuMemAlloc_v2, cuMemAllocAsync_ptsz, ...),
 * found in libcuda itself, else after libcudafrag in the search order. */
void *cf_real_driver_sym(const char *name);
/* A libcudart symbol: after libcudafrag in the search order, else in a libcudart the
 * program loaded with RTLD_LOCAL (dlopen RTLD_NOLOAD of its usual names). */
void *cf_real_runtime_sym(const char *name);

/* Driver functions cudafrag itself calls. A member is NULL when libcuda is not
 * loaded (yet) or lacks it; callers check. Resolution happens on first use
 * and again after libcuda appears (dlopen hook). Never returns NULL. */
struct cf_driver {
    PFN_cuGetProcAddress_v12000 cuGetProcAddress;
    PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuMemGetInfo_v3020 cuMemGetInfo;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemPoolGetAttribute_v11020 cuMemPoolGetAttribute;
    PFN_cuDeviceGetGraphMemAttribute_v11040 cuDeviceGetGraphMemAttribute;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuStreamGetDevice_v12080 cuStreamGetDevice;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuCtxSynchronize_v2000 cuCtxSynchronize;
    PFN_cuEventCreate_v2000 cuEventCreate;
    PFN_cuEventRecord_v2000 cuEventRecord;
    PFN_cuEventQuery_v2000 cuEventQuery;
    PFN_cuEventSynchronize_v2000 cuEventSynchronize;
    PFN_cuEventDestroy_v4000 cuEventDestroy;
    PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent;
    PFN_cuMemAddressReserve_v10020 cuMemAddressReserve;
    PFN_cuMemAddressFree_v10020 cuMemAddressFree;
    PFN_cuMemCreate_v10020 cuMemCreate;
    PFN_cuMemRelease_v10020 cuMemRelease;
    PFN_cuMemMap_v10020 cuMemMap;
    PFN_cuMemUnmap_v10020 cuMemUnmap;
    PFN_cuMemSetAccess_v10020 cuMemSetAccess;
    PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity;
    PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute;
    PFN_cuDeviceGetMemPool_v11020 cuDeviceGetMemPool;
    PFN_cuDeviceGetDefaultMemPool_v11020 cuDeviceGetDefaultMemPool;
};
const struct cf_driver *cf_driver(void);
/* Bumped by the dlopen entry point before each dlopen: cf_driver() retries a
 * failed resolution only after one. */
extern unsigned cf_dlopen_generation;

#endif
