/* A stand-in for a framework's library (built as libtorch_cfstub.so): one entry
 * point that allocates on the caller's thread, one that allocates on a thread of
 * its own, as PyTorch's autograd engine does in backward. */
#include <cuda_runtime.h>
#include <pthread.h>

#define STUB_API __attribute__((visibility("default")))
STUB_API void *stub_alloc(size_t n);
STUB_API void *stub_alloc_on_own_thread(size_t n);

__attribute__((noinline)) void *stub_alloc(size_t n)
{
    void *p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess ? p : NULL;
}

__attribute__((noinline)) static void *engine_thread(void *arg)
{
    return stub_alloc(*(size_t *)arg);
}

void *stub_alloc_on_own_thread(size_t n)
{
    pthread_t t;
    void *p = NULL;
    if (pthread_create(&t, NULL, engine_thread, &n) != 0) return NULL;
    pthread_join(t, &p);
    return p;
}
