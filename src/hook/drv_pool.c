/* Driver API: stream-ordered allocations, memory pools and graph memory nodes. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/route.h"
#include "hook/symbols.h"

#define OOM(rc) ((rc) == CUDA_ERROR_OUT_OF_MEMORY)
#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_DRV(sym);                                                      \
    if (real == NULL) return cf_missing_driver(#sym)
#define POOL(p) ((uint64_t)(uintptr_t)(p))

/* ---- stream-ordered allocation ---- */

CF_HOT static CUresult alloc_async(__typeof__(&cuMemAllocAsync) real, bool ptsz, CUdeviceptr *dptr,
                                   size_t size, CUstream stream)
{
    if (!cf_hook_begin()) return real(dptr, size, stream);
    struct cf_async_target t;
    cf_async_target(stream, ptsz, 0, &t);
    uint64_t p;
    CUresult rc;
    if (dptr != NULL && cf_route_alloc_async(CF_API_cuMemAllocAsync, &p, size, stream, &t)) {
        *dptr = p;
        rc = CUDA_SUCCESS;
    } else {
        CF_TIMED_SAMPLED(rc, real(dptr, size, stream));
        int saved = errno;
        cf_note_async_alloc(CF_API_cuMemAllocAsync, rc == CUDA_SUCCESS ? *dptr : 0, size, stream,
                            &t, rc, OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                                  CUstream hStream)
{
    REAL_OR_FAIL(cuMemAllocAsync);
    return alloc_async(real, false, dptr, bytesize, hStream);
}

CF_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUstream hStream)
{
    REAL_OR_FAIL(cuMemAllocAsync_ptsz);
    return alloc_async(real, true, dptr, bytesize, hStream);
}

static CUresult alloc_from_pool(__typeof__(&cuMemAllocFromPoolAsync) real, bool ptsz,
                                CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
    if (!cf_hook_begin()) return real(dptr, size, pool, stream);
    CUresult rc;
    cf_rec_pool_alloc_begin();
    CF_TIMED_SAMPLED(rc, real(dptr, size, pool, stream));
    int saved = errno;
    struct cf_async_target t;
    cf_async_target(stream, ptsz, POOL(pool), &t);
    cf_note_async_alloc(CF_API_cuMemAllocFromPoolAsync, rc == CUDA_SUCCESS ? *dptr : 0, size,
                        stream, &t, rc, OOM(rc));
    errno = saved;
    cf_hook_end();
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                   CUmemoryPool pool, CUstream hStream)
{
    REAL_OR_FAIL(cuMemAllocFromPoolAsync);
    return alloc_from_pool(real, false, dptr, bytesize, pool, hStream);
}

CF_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                        CUmemoryPool pool, CUstream hStream)
{
    REAL_OR_FAIL(cuMemAllocFromPoolAsync_ptsz);
    return alloc_from_pool(real, true, dptr, bytesize, pool, hStream);
}

CF_HOT static CUresult free_async(__typeof__(&cuMemFreeAsync) real, bool ptsz, CUdeviceptr dptr,
                                  CUstream stream)
{
    if (!cf_hook_begin()) return real(dptr, stream);
    CUresult rc = CUDA_SUCCESS;
    struct cf_free_note f;
    uint64_t ptr;
    if (!cf_route_free_async(&f, CF_API_cuMemFreeAsync, dptr, stream, ptsz, &ptr)) {
        CF_TIMED_FREE_SAMPLED(rc, f, real(ptr, stream));
        int saved = errno;
        cf_note_free_end(&f, rc);
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    REAL_OR_FAIL(cuMemFreeAsync);
    return free_async(real, false, dptr, hStream);
}

CF_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    REAL_OR_FAIL(cuMemFreeAsync_ptsz);
    return free_async(real, true, dptr, hStream);
}

/* ---- pools ---- */

CF_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    REAL_OR_FAIL(cuMemPoolCreate);
    CUresult rc;
    CF_WRAP(rc, real(pool, poolProps), {
        cf_note_call(CF_API_cuMemPoolCreate, rc);
        if (rc == CUDA_SUCCESS) cf_note_pool_created(POOL(*pool), poolProps->location.id);
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    REAL_OR_FAIL(cuMemPoolDestroy);
    CUresult rc;
    CF_WRAP(rc, real(pool), {
        cf_note_call(CF_API_cuMemPoolDestroy, rc);
        if (rc == CUDA_SUCCESS) cf_rec_pool_destroyed(POOL(pool));
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                 void *value)
{
    REAL_OR_FAIL(cuMemPoolSetAttribute);
    CUresult rc;
    CF_WRAP(rc, real(pool, attr, value), {
        cf_note_call(CF_API_cuMemPoolSetAttribute, rc);
        if (rc == CUDA_SUCCESS && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
            cf_rec_pool_threshold(POOL(pool), *(const cuuint64_t *)value);
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                 void *value)
{
    REAL_OR_FAIL(cuMemPoolGetAttribute);
    CUresult rc;
    CF_WRAP(rc, real(pool, attr, value), cf_note_call(CF_API_cuMemPoolGetAttribute, rc));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    REAL_OR_FAIL(cuMemPoolTrimTo);
    CUresult rc;
    CF_WRAP(rc, real(pool, minBytesToKeep), {
        cf_note_call(CF_API_cuMemPoolTrimTo, rc);
        if (rc == CUDA_SUCCESS) cf_rec_pool_trim(POOL(pool));
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    REAL_OR_FAIL(cuDeviceSetMemPool);
    CUresult rc;
    CF_WRAP(rc, real(dev, pool), {
        cf_note_call(CF_API_cuDeviceSetMemPool, rc);
        if (rc == CUDA_SUCCESS) cf_note_device_pool_set(dev, POOL(pool));
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    REAL_OR_FAIL(cuDeviceGetMemPool);
    CUresult rc;
    CF_WRAP(rc, real(pool, dev), {
        cf_note_call(CF_API_cuDeviceGetMemPool, rc);
        if (rc == CUDA_SUCCESS) cf_note_device_pool_got(dev, POOL(*pool), false);
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    REAL_OR_FAIL(cuDeviceGetDefaultMemPool);
    CUresult rc;
    CF_WRAP(rc, real(pool_out, dev), {
        cf_note_call(CF_API_cuDeviceGetDefaultMemPool, rc);
        if (rc == CUDA_SUCCESS) cf_note_device_pool_got(dev, POOL(*pool_out), true);
    });
    return rc;
}

/* ---- graph memory nodes: the driver fills nodeParams->dptr ---- */

CF_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  size_t numDependencies,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    REAL_OR_FAIL(cuGraphAddMemAllocNode);
    CUresult rc;
    CF_WRAP(rc, real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams), {
        struct cf_async_target t = {.device = nodeParams ? nodeParams->poolProps.location.id : -1,
                                    .capturing = true};
        cf_note_async_alloc(CF_API_cuGraphAddMemAllocNode,
                            rc == CUDA_SUCCESS ? nodeParams->dptr : 0,
                            nodeParams ? nodeParams->bytesize : 0, NULL, &t, rc, OOM(rc));
    });
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                 const CUgraphNode *dependencies,
                                                 size_t numDependencies, CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuGraphAddMemFreeNode);
    CUresult rc;
    CF_WRAP_FREE(rc, CF_API_cuGraphAddMemFreeNode, dptr,
                 real(phGraphNode, hGraph, dependencies, numDependencies, dptr));
    return rc;
}
