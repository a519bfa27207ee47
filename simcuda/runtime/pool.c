/* Stream-ordered allocations and memory pools. */
#include "runtime.h"
#include "per_thread.h"

#include <string.h>

static cudaError_t rt_malloc_async(void **devPtr, size_t size, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    if (devPtr == NULL) return rt_fail(cudaErrorInvalidValue);
    *devPtr = NULL;
    CUdeviceptr dptr = 0;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuMemAllocAsync, &dptr, size, rt_stream(stream, pt)));
    if (e == cudaSuccess) *devPtr = (void *)dptr;
    return e;
}

static cudaError_t rt_free_async(void *devPtr, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuMemFreeAsync, (CUdeviceptr)devPtr, rt_stream(stream, pt)));
}

static cudaError_t rt_malloc_from_pool_async(void **ptr, size_t size, cudaMemPool_t pool,
                                             cudaStream_t stream, bool pt)
{
    RT_ENTER();
    if (ptr == NULL || pool == NULL) return rt_fail(cudaErrorInvalidValue);
    *ptr = NULL;
    CUdeviceptr dptr = 0;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuMemAllocFromPoolAsync, &dptr, size, (CUmemoryPool)pool,
                                     rt_stream(stream, pt)));
    if (e == cudaSuccess) *ptr = (void *)dptr;
    return e;
}

RT_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return rt_malloc_async(devPtr, size, hStream, false);
}

RT_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return rt_malloc_async(devPtr, size, hStream, true);
}

RT_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return rt_free_async(devPtr, hStream, false);
}

RT_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    return rt_free_async(devPtr, hStream, true);
}

RT_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                           cudaStream_t stream)
{
    return rt_malloc_from_pool_async(ptr, size, memPool, stream, false);
}

RT_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                cudaStream_t stream)
{
    return rt_malloc_from_pool_async(ptr, size, memPool, stream, true);
}

/* cudaMemPoolProps and CUmemPoolProps describe the same thing member by member. */
static void rt_pool_props(const struct cudaMemPoolProps *in, CUmemPoolProps *out)
{
    memset(out, 0, sizeof(*out));
    out->allocType = (CUmemAllocationType)in->allocType;
    out->handleTypes = (CUmemAllocationHandleType)in->handleTypes;
    out->location.type = (CUmemLocationType)in->location.type;
    out->location.id = in->location.id;
    out->win32SecurityAttributes = in->win32SecurityAttributes;
    out->maxSize = in->maxSize;
    out->usage = in->usage;
}

RT_API cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool,
                                     const struct cudaMemPoolProps *poolProps)
{
    RT_ENTER();
    if (memPool == NULL || poolProps == NULL) return rt_fail(cudaErrorInvalidValue);
    CUmemPoolProps props;
    rt_pool_props(poolProps, &props);
    CUmemoryPool pool = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuMemPoolCreate, &pool, &props));
    *memPool = e == cudaSuccess ? (cudaMemPool_t)pool : NULL;
    return e;
}

RT_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemPoolDestroy, (CUmemoryPool)memPool));
}

/* cudaMemPoolAttr values equal CUmemPool_attribute values. */
RT_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                           void *value)
{
    RT_ENTER();
    return rt_cu(
        RT_CALL(cuMemPoolSetAttribute, (CUmemoryPool)memPool, (CUmemPool_attribute)attr, value));
}

RT_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                           void *value)
{
    RT_ENTER();
    return rt_cu(
        RT_CALL(cuMemPoolGetAttribute, (CUmemoryPool)memPool, (CUmemPool_attribute)attr, value));
}

RT_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemPoolTrimTo, (CUmemoryPool)memPool, minBytesToKeep));
}

RT_API cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceSetMemPool, dev, (CUmemoryPool)memPool));
}

RT_API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceGetMemPool, (CUmemoryPool *)memPool, dev));
}

RT_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    RT_ENTER();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceGetDefaultMemPool, (CUmemoryPool *)memPool, dev));
}

/* cudaMemAccessDesc/cudaMemLocation/cudaMemAccessFlags share the driver's
 * layouts and values. */
RT_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                        const struct cudaMemAccessDesc *descList, size_t count)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemPoolSetAccess, (CUmemoryPool)memPool,
                         (const CUmemAccessDesc *)descList, count));
}

RT_API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool,
                                        struct cudaMemLocation *location)
{
    RT_ENTER();
    if (flags == NULL || location == NULL) return rt_fail(cudaErrorInvalidValue);
    CUmemAccess_flags cu_flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    cudaError_t e = rt_cu(
        RT_CALL(cuMemPoolGetAccess, &cu_flags, (CUmemoryPool)memPool, (CUmemLocation *)location));
    *flags = (enum cudaMemAccessFlags)cu_flags;
    return e;
}

/* The CUDA 13 pool queries by location; cudaMemLocation and
 * cudaMemAllocationType match the driver's CUmemLocation and
 * CUmemAllocationType. */
RT_API cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *memPool,
                                            struct cudaMemLocation *location,
                                            enum cudaMemAllocationType type)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemGetDefaultMemPool, (CUmemoryPool *)memPool, (CUmemLocation *)location,
                         (CUmemAllocationType)type));
}

RT_API cudaError_t cudaMemGetMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location,
                                     enum cudaMemAllocationType type)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemGetMemPool, (CUmemoryPool *)memPool, (CUmemLocation *)location,
                         (CUmemAllocationType)type));
}

RT_API cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location,
                                     enum cudaMemAllocationType type, cudaMemPool_t memPool)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuMemSetMemPool, (CUmemLocation *)location, (CUmemAllocationType)type,
                         (CUmemoryPool)memPool));
}
