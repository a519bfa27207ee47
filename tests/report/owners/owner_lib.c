/* A stand-in for a CUDA library or a framework's cache, built under the real
 * library's file name (libnccl.so.2, libcublas.so.12, libc10_cuda.so, ...) so
 * that cudafrag gives its memory to that owner. LIB names its entry points
 * (nccl_alloc, cublas_alloc_driver, ...): the stand-ins never call each other's
 * by accident. With MEM_ALLOC it also has NCCL's ncclMemAlloc, which allocates
 * for its caller; with CALLS_NCCL its cache_alloc_nccl takes memory through it,
 * as PyTorch's cache can. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#define CAT2(a, b) a##b
#define CAT(a, b)  CAT2(a, b)
#define API        __attribute__((visibility("default"), noinline))

API void *CAT(LIB, _alloc)(size_t n);
API void *CAT(LIB, _alloc_driver)(size_t n);

/* The library's own buffers, through the runtime ... */
void *CAT(LIB, _alloc)(size_t n)
{
    void *p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess ? p : NULL;
}

/* ... and through the driver (the current context is the runtime's). */
void *CAT(LIB, _alloc_driver)(size_t n)
{
    CUdeviceptr p = 0;
    return cuMemAlloc(&p, n) == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
}

#ifdef MEM_ALLOC
API int ncclMemAlloc(void **ptr, size_t size);

int ncclMemAlloc(void **ptr, size_t size)
{
    return cudaMalloc(ptr, size) == cudaSuccess ? 0 : 1;
}
#endif

#ifdef CALLS_NCCL
int ncclMemAlloc(void **ptr, size_t size);
API void *cache_alloc_nccl(size_t n);

void *cache_alloc_nccl(size_t n)
{
    void *p = NULL;
    return ncclMemAlloc(&p, n) == 0 ? p : NULL;
}
#endif
