/* Driver API: device, pitched, managed and page-locked host memory. Both ABIs are
 * exported where libcuda has two: the legacy 32-bit ones (cuMemAlloc,
 * cuMemAllocPitch, cuMemFree, cuMemAllocHost) for programs built against CUDA 3.1
 * headers or asking cuGetProcAddress for version 3000, and the _v2 ones. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/route.h"
#include "hook/symbols.h"

#define OOM(rc) ((rc) == CUDA_ERROR_OUT_OF_MEMORY)
#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_DRV(sym);                                                      \
    if (real == NULL) return cf_missing_driver(#sym)

/* ---- cuMemAlloc ---- */

static CUresult mem_alloc(__typeof__(&cuMemAlloc_v2) real, CUdeviceptr *dptr, size_t size)
{
    if (!cf_hook_begin()) return real(dptr, size);
    uint64_t p;
    CUresult rc;
    if (dptr != NULL && cf_route_alloc(CF_API_cuMemAlloc, &p, size)) {
        *dptr = p;
        rc = CUDA_SUCCESS;
    } else {
        CF_TIMED(rc, real(dptr, size));
        int saved = errno;
        cf_note_device_alloc(CF_API_cuMemAlloc, rc == CUDA_SUCCESS ? *dptr : 0, size, rc, OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_HOT CF_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAlloc_v2);
    return mem_alloc(real, dptr, bytesize);
}

/* A 32-bit pointer cannot hold an arena address: the legacy ABI is only recorded. */
CF_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    REAL_OR_FAIL(cuMemAlloc);
    CUresult rc;
    CF_WRAP(rc, real(dptr, bytesize),
            cf_note_device_alloc(CF_API_cuMemAlloc, rc == CUDA_SUCCESS ? *dptr : 0, bytesize, rc,
                                 OOM(rc)));
    return rc;
}

CF_HOT CF_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuMemFree_v2);
    if (!cf_hook_begin()) return real(dptr);
    CUresult rc = CUDA_SUCCESS;
    struct cf_free_note f;
    uint64_t ptr;
    if (!cf_route_free(&f, CF_API_cuMemFree, dptr, NULL, false, &ptr)) {
        CF_TIMED_FREE(rc, f, real(ptr));
        int saved = errno;
        cf_note_free_end(&f, rc);
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr)
{
    REAL_OR_FAIL(cuMemFree);
    CUresult rc;
    CF_WRAP_FREE(rc, CF_API_cuMemFree, dptr, real(dptr));
    return rc;
}

/* ---- cuMemAllocPitch ---- */

static bool pitch_from_arena(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                             unsigned int elem)
{
    /* The driver rejects other element sizes; let it say so. */
    if (dptr == NULL || pitch == NULL || (elem != 4 && elem != 8 && elem != 16)) return false;
    size_t row = (width + CF_ARENA_PITCH - 1) / CF_ARENA_PITCH * CF_ARENA_PITCH;
    uint64_t p;
    if (width == 0 || height == 0 || !cf_route_alloc(CF_API_cuMemAllocPitch, &p, row * height))
        return false;
    *dptr = p;
    *pitch = row;
    return true;
}

CF_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                              size_t WidthInBytes, size_t Height,
                                              unsigned int ElementSizeBytes)
{
    REAL_OR_FAIL(cuMemAllocPitch_v2);
    if (!cf_hook_begin()) return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    CUresult rc = CUDA_SUCCESS;
    if (!pitch_from_arena(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes)) {
        CF_TIMED(rc, real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
        int saved = errno;
        bool ok = rc == CUDA_SUCCESS;
        cf_note_device_alloc(CF_API_cuMemAllocPitch, ok ? *dptr : 0,
                             ok ? (uint64_t)*pPitch * Height : (uint64_t)WidthInBytes * Height, rc,
                             OOM(rc));
        errno = saved;
    }
    cf_hook_end();
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                           unsigned int WidthInBytes, unsigned int Height,
                                           unsigned int ElementSizeBytes)
{
    REAL_OR_FAIL(cuMemAllocPitch);
    CUresult rc;
    CF_WRAP(rc, real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes),
            cf_note_device_alloc(CF_API_cuMemAllocPitch, rc == CUDA_SUCCESS ? *dptr : 0,
                                 (uint64_t)(rc == CUDA_SUCCESS ? *pPitch : WidthInBytes) * Height,
                                 rc, OOM(rc)));
    return rc;
}

/* ---- managed ---- */

CF_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    REAL_OR_FAIL(cuMemAllocManaged);
    CUresult rc;
    CF_WRAP(rc, real(dptr, bytesize, flags),
            cf_note_alloc(CF_API_cuMemAllocManaged, rc == CUDA_SUCCESS ? *dptr : 0, bytesize, 0, -1,
                          rc, OOM(rc)));
    return rc;
}

/* ---- page-locked host memory ---- */

#define HOST_ADDR(rc, pp) ((rc) == CUDA_SUCCESS ? (uint64_t)(uintptr_t) * (pp) : 0)

CF_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAllocHost_v2);
    CUresult rc;
    CF_WRAP(rc, real(pp, bytesize),
            cf_note_alloc(CF_API_cuMemAllocHost, HOST_ADDR(rc, pp), bytesize, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize)
{
    REAL_OR_FAIL(cuMemAllocHost);
    CUresult rc;
    CF_WRAP(rc, real(pp, bytesize),
            cf_note_alloc(CF_API_cuMemAllocHost, HOST_ADDR(rc, pp), bytesize, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostAlloc);
    CUresult rc;
    CF_WRAP(rc, real(pp, bytesize, Flags),
            cf_note_alloc(CF_API_cuMemHostAlloc, HOST_ADDR(rc, pp), bytesize, 0, -1, rc, OOM(rc)));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
    REAL_OR_FAIL(cuMemFreeHost);
    CUresult rc;
    CF_WRAP_FREE(rc, CF_API_cuMemFreeHost, (uint64_t)(uintptr_t)p, real(p));
    return rc;
}

#define REGISTER_NOTE(rc, p, size)                                                                 \
    cf_note_alloc(CF_API_cuMemHostRegister, (rc) == CUDA_SUCCESS ? (uint64_t)(uintptr_t)(p) : 0,   \
                  size, 0, -1, rc, OOM(rc))

CF_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostRegister_v2);
    CUresult rc;
    CF_WRAP(rc, real(p, bytesize, Flags), REGISTER_NOTE(rc, p, bytesize));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostRegister);
    CUresult rc;
    CF_WRAP(rc, real(p, bytesize, Flags), REGISTER_NOTE(rc, p, bytesize));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    REAL_OR_FAIL(cuMemHostUnregister);
    CUresult rc;
    CF_WRAP_FREE(rc, CF_API_cuMemHostUnregister, (uint64_t)(uintptr_t)p, real(p));
    return rc;
}
