/* For pyframes.py: a cudaMalloc on a thread that never ran Python code, and a
 * callback. */
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

/* For pyframes.py: native code between two runs of Python code, calling back
 * into the Python function cb (a ctypes callback). */
__attribute__((visibility("default"))) int call_back(int (*cb)(void));
__attribute__((visibility("default"), noinline)) int call_back(int (*cb)(void))
{
    int r = cb();
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return r;
}
