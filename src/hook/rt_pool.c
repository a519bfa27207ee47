/* Runtime API: stream-ordered allocations, memory pools and graph memory nodes. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/route.h"
#include "hook/symbols.h"

#define OOM(rc) ((rc) == cudaErrorMemoryAllocation)
#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_RT(sym);                                                       \
    if (real == NULL) return cf_missing_runtime(#sym)
#define ADDR(p) ((uint64_t)(uintptr_t)(p))

/* ---- stream-ordered allocation ---- */

CF_HOT static cudaError_t malloc_async(__typeof__(&cudaMallocAsync) real, bool ptsz, void **devPtr,
                                       size_t size, cudaStream_t stream)
{
    if (!cf_hook_begin()) return real(devPtr, size, stream);
    struct cf_async_target t;
    cf_async_target(stream, ptsz, 0, &t);
    uint64_t p;
    cudaError_t rc;
    if (devPtr != NULL && cf_route_alloc_async(CF_API_cudaMallocAsync, &p, size, stream, &t)) {
        *devPtr = (void *)(uintptr_t)p;
        rc = cudaSuccess;
    } else {
        CF_TIMED_SAMPLED(rc, real(devPtr, size, stream));
        int saved = errno;
        cf_note_async_alloc(CF_API_cudaMallocAsync, rc == cudaSuccess ? ADDR(*devPtr) : 0, size,
                            stream, &t, rc, OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size,
                                                       cudaStream_t hStream)
{
    REAL_OR_FAIL(cudaMallocAsync);
    return malloc_async(real, false, devPtr, size, hStream);
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size,
                                                     cudaStream_t hStream)
{
    REAL_OR_FAIL(cudaMallocAsync_ptsz);
    return malloc_async(real, true, devPtr, size, hStream);
}

static cudaError_t malloc_from_pool(__typeof__(&cudaMallocFromPoolAsync) real, bool ptsz,
                                    void **ptr, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream)
{
    if (!cf_hook_begin()) return real(ptr, size, pool, stream);
    cudaError_t rc;
    cf_rec_pool_alloc_begin();
    CF_TIMED_SAMPLED(rc, real(ptr, size, pool, stream));
    int saved = errno;
    struct cf_async_target t;
    cf_async_target(stream, ptsz, ADDR(pool), &t);
    cf_note_async_alloc(CF_API_cudaMallocFromPoolAsync, rc == cudaSuccess ? ADDR(*ptr) : 0, size,
                        stream, &t, rc, OOM(rc));
    errno = saved;
    cf_hook_end();
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size,
                                                        cudaMemPool_t memPool, cudaStream_t stream)
{
    REAL_OR_FAIL(cudaMallocFromPoolAsync);
    return malloc_from_pool(real, false, ptr, size, memPool, stream);
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
                                                             cudaMemPool_t memPool,
                                                             cudaStream_t stream)
{
    REAL_OR_FAIL(cudaMallocFromPoolAsync_ptsz);
    return malloc_from_pool(real, true, ptr, size, memPool, stream);
}

CF_HOT static cudaError_t free_async(__typeof__(&cudaFreeAsync) real, bool ptsz, void *devPtr,
                                     cudaStream_t stream)
{
    if (!cf_hook_begin()) return real(devPtr, stream);
    cudaError_t rc = cudaSuccess;
    struct cf_free_note f;
    uint64_t ptr;
    if (!cf_route_free_async(&f, CF_API_cudaFreeAsync, ADDR(devPtr), stream, ptsz, &ptr)) {
        CF_TIMED_FREE_SAMPLED(rc, f, real((void *)(uintptr_t)ptr, stream));
        int saved = errno;
        cf_note_free_end(&f, rc);
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    REAL_OR_FAIL(cudaFreeAsync);
    return free_async(real, false, devPtr, hStream);
}

CF_EXPORT cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    REAL_OR_FAIL(cudaFreeAsync_ptsz);
    return free_async(real, true, devPtr, hStream);
}

/* ---- pools ---- */

CF_EXPORT cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t *memPool,
                                                  const struct cudaMemPoolProps *poolProps)
{
    REAL_OR_FAIL(cudaMemPoolCreate);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, poolProps), {
        cf_note_call(CF_API_cudaMemPoolCreate, rc);
        if (rc == cudaSuccess) cf_note_pool_created(ADDR(*memPool), poolProps->location.id);
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    REAL_OR_FAIL(cudaMemPoolDestroy);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool), {
        cf_note_call(CF_API_cudaMemPoolDestroy, rc);
        if (rc == cudaSuccess) cf_rec_pool_destroyed(ADDR(memPool));
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool,
                                                        enum cudaMemPoolAttr attr, void *value)
{
    REAL_OR_FAIL(cudaMemPoolSetAttribute);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, attr, value), {
        cf_note_call(CF_API_cudaMemPoolSetAttribute, rc);
        if (rc == cudaSuccess && attr == cudaMemPoolAttrReleaseThreshold)
            cf_rec_pool_threshold(ADDR(memPool), *(const uint64_t *)value);
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool,
                                                        enum cudaMemPoolAttr attr, void *value)
{
    REAL_OR_FAIL(cudaMemPoolGetAttribute);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, attr, value), cf_note_call(CF_API_cudaMemPoolGetAttribute, rc));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    REAL_OR_FAIL(cudaMemPoolTrimTo);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, minBytesToKeep), {
        cf_note_call(CF_API_cudaMemPoolTrimTo, rc);
        if (rc == cudaSuccess) cf_rec_pool_trim(ADDR(memPool));
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    REAL_OR_FAIL(cudaDeviceSetMemPool);
    cudaError_t rc;
    CF_WRAP(rc, real(device, memPool), {
        cf_note_call(CF_API_cudaDeviceSetMemPool, rc);
        if (rc == cudaSuccess) cf_note_device_pool_set(device, ADDR(memPool));
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    REAL_OR_FAIL(cudaDeviceGetMemPool);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, device), {
        cf_note_call(CF_API_cudaDeviceGetMemPool, rc);
        if (rc == cudaSuccess) cf_note_device_pool_got(device, ADDR(*memPool), false);
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    REAL_OR_FAIL(cudaDeviceGetDefaultMemPool);
    cudaError_t rc;
    CF_WRAP(rc, real(memPool, device), {
        cf_note_call(CF_API_cudaDeviceGetDefaultMemPool, rc);
        if (rc == cudaSuccess) cf_note_device_pool_got(device, ADDR(*memPool), true);
    });
    return rc;
}

/* ---- graph memory nodes: the runtime fills nodeParams->dptr ---- */

CF_EXPORT cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode,
                                                         cudaGraph_t graph,
                                                         const cudaGraphNode_t *pDependencies,
                                                         size_t numDependencies,
                                                         struct cudaMemAllocNodeParams *nodeParams)
{
    REAL_OR_FAIL(cudaGraphAddMemAllocNode);
    cudaError_t rc;
    CF_WRAP(rc, real(pGraphNode, graph, pDependencies, numDependencies, nodeParams), {
        struct cf_async_target t = {.device = nodeParams ? nodeParams->poolProps.location.id : -1,
                                    .capturing = true};
        cf_note_async_alloc(CF_API_cudaGraphAddMemAllocNode,
                            rc == cudaSuccess ? ADDR(nodeParams->dptr) : 0,
                            nodeParams ? nodeParams->bytesize : 0, NULL, &t, rc, OOM(rc));
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode,
                                                        cudaGraph_t graph,
                                                        const cudaGraphNode_t *pDependencies,
                                                        size_t numDependencies, void *dptr)
{
    REAL_OR_FAIL(cudaGraphAddMemFreeNode);
    cudaError_t rc;
    CF_WRAP_FREE(rc, CF_API_cudaGraphAddMemFreeNode, ADDR(dptr),
                 real(pGraphNode, graph, pDependencies, numDependencies, dptr));
    return rc;
}
