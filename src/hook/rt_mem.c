/* Runtime API: device, pitched, array, managed and page-locked host memory. These
 * are reached only when the program uses the shared libcudart; with nvcc's static
 * runtime the same calls arrive at the driver wrappers instead. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/route.h"
#include "hook/symbols.h"

#define OOM(rc) ((rc) == cudaErrorMemoryAllocation)
#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_RT(sym);                                                       \
    if (real == NULL) return cf_missing_runtime(#sym)
#define PTR(rc, pp) ((rc) == cudaSuccess ? (uint64_t)(uintptr_t) * (pp) : 0)
#define ADDR(p)     ((uint64_t)(uintptr_t)(p))

/* ---- device memory (arena-capable) ---- */

CF_HOT CF_EXPORT cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
    REAL_OR_FAIL(cudaMalloc);
    if (!cf_hook_begin()) return real(devPtr, size);
    uint64_t p;
    cudaError_t rc;
    if (devPtr != NULL && cf_route_alloc(CF_API_cudaMalloc, &p, size)) {
        *devPtr = (void *)(uintptr_t)p;
        rc = cudaSuccess;
    } else {
        CF_TIMED(rc, real(devPtr, size));
        int saved = errno;
        cf_note_device_alloc(CF_API_cudaMalloc, PTR(rc, devPtr), size, rc, OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
    REAL_OR_FAIL(cudaFree);
    if (!cf_hook_begin()) return real(devPtr);
    cudaError_t rc = cudaSuccess;
    struct cf_free_note f;
    uint64_t ptr;
    if (!cf_route_free(&f, CF_API_cudaFree, ADDR(devPtr), NULL, false, &ptr)) {
        CF_TIMED_FREE(rc, f, real((void *)(uintptr_t)ptr));
        int saved = errno;
        cf_note_free_end(&f, rc);
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
                                                size_t height)
{
    REAL_OR_FAIL(cudaMallocPitch);
    if (!cf_hook_begin()) return real(devPtr, pitch, width, height);
    size_t row = (width + CF_ARENA_PITCH - 1) / CF_ARENA_PITCH * CF_ARENA_PITCH;
    uint64_t p;
    cudaError_t rc;
    if (devPtr != NULL && pitch != NULL && width != 0 && height != 0 &&
        cf_route_alloc(CF_API_cudaMallocPitch, &p, (uint64_t)row * height)) {
        *devPtr = (void *)(uintptr_t)p;
        *pitch = row;
        rc = cudaSuccess;
    } else {
        CF_TIMED(rc, real(devPtr, pitch, width, height));
        int saved = errno;
        uint64_t bytes = (uint64_t)(rc == cudaSuccess ? *pitch : width) * height;
        cf_note_device_alloc(CF_API_cudaMallocPitch, PTR(rc, devPtr), bytes, rc, OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr,
                                             struct cudaExtent extent)
{
    REAL_OR_FAIL(cudaMalloc3D);
    cudaError_t rc;
    CF_WRAP(rc, real(pitchedDevPtr, extent), {
        bool ok = rc == cudaSuccess;
        uint64_t rows = (uint64_t)extent.height * extent.depth;
        cf_note_device_alloc(CF_API_cudaMalloc3D, ok ? ADDR(pitchedDevPtr->ptr) : 0,
                             (ok ? pitchedDevPtr->pitch : extent.width) * rows, rc, OOM(rc));
    });
    return rc;
}

/* ---- arrays: recorded by their handle ---- */

static uint64_t element_bytes(const struct cudaChannelFormatDesc *desc)
{
    if (desc == NULL) return 0;
    return ((uint64_t)desc->x + (uint64_t)desc->y + (uint64_t)desc->z + (uint64_t)desc->w) / 8;
}

static uint64_t at_least_one(size_t n)
{
    return n ? n : 1;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t *array,
                                                const struct cudaChannelFormatDesc *desc,
                                                size_t width, size_t height, unsigned int flags)
{
    REAL_OR_FAIL(cudaMallocArray);
    cudaError_t rc;
    CF_WRAP(rc, real(array, desc, width, height, flags),
            cf_note_alloc(CF_API_cudaMallocArray, PTR(rc, array),
                          element_bytes(desc) * width * at_least_one(height), 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t *array,
                                                  const struct cudaChannelFormatDesc *desc,
                                                  struct cudaExtent extent, unsigned int flags)
{
    REAL_OR_FAIL(cudaMalloc3DArray);
    cudaError_t rc;
    CF_WRAP(rc, real(array, desc, extent, flags), {
        uint64_t bytes = element_bytes(desc) * extent.width * at_least_one(extent.height) *
                         at_least_one(extent.depth);
        cf_note_alloc(CF_API_cudaMalloc3DArray, PTR(rc, array), bytes, 0, -1, rc, OOM(rc));
    });
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array)
{
    REAL_OR_FAIL(cudaFreeArray);
    cudaError_t rc;
    CF_WRAP_FREE(rc, CF_API_cudaFreeArray, ADDR(array), real(array));
    return rc;
}

/* ---- managed and host memory ---- */

CF_EXPORT cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    REAL_OR_FAIL(cudaMallocManaged);
    cudaError_t rc;
    CF_WRAP(rc, real(devPtr, size, flags),
            cf_note_alloc(CF_API_cudaMallocManaged, PTR(rc, devPtr), size, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
    REAL_OR_FAIL(cudaMallocHost);
    cudaError_t rc;
    CF_WRAP(rc, real(ptr, size),
            cf_note_alloc(CF_API_cudaMallocHost, PTR(rc, ptr), size, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    REAL_OR_FAIL(cudaHostAlloc);
    cudaError_t rc;
    CF_WRAP(rc, real(pHost, size, flags),
            cf_note_alloc(CF_API_cudaHostAlloc, PTR(rc, pHost), size, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
    REAL_OR_FAIL(cudaFreeHost);
    cudaError_t rc;
    CF_WRAP_FREE(rc, CF_API_cudaFreeHost, ADDR(ptr), real(ptr));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    REAL_OR_FAIL(cudaHostRegister);
    cudaError_t rc;
    CF_WRAP(rc, real(ptr, size, flags),
            cf_note_alloc(CF_API_cudaHostRegister, rc == cudaSuccess ? ADDR(ptr) : 0, size, 0, -1,
                          rc, OOM(rc)));
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
    REAL_OR_FAIL(cudaHostUnregister);
    cudaError_t rc;
    CF_WRAP_FREE(rc, CF_API_cudaHostUnregister, ADDR(ptr), real(ptr));
    return rc;
}
