/* For pyframes.py: a cudaMalloc on a thread that never ran Python code. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

__attribute__((noinline)) static void *alloc_thread(void *arg)
{
    void *p = NULL;
    if (cudaMalloc(&p, *(size_t *)arg) != cudaSuccess) return NULL;
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return p;
}

__attribute__((visibility("default"))) void *alloc_on_native_thread(size_t n);
__attribute__((visibility("default"))) void *alloc_on_native_thread(size_t n)
{
    pthread_t t;
    void *p = NULL;
    if (pthread_create(&t, NULL, alloc_thread, &n) != 0) return NULL;
    pthread_join(t, &p);
    return p;
}
