/* Threads racing on the runtime's first call all get a working runtime and
 * the same primary context; their allocations add up on the device. */
#include "rt_test.h"

#include <pthread.h>

#define THREADS 8

static pthread_barrier_t start_line;

static void *first_call(void *arg)
{
    pthread_barrier_wait(&start_line);
    void **out = arg;
    CHECK_RT(cudaMalloc(out, 2 * MIB));
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    void *async = NULL;
    CHECK_RT(cudaMallocAsync(&async, 1 * MIB, s));
    CHECK_RT(cudaFreeAsync(async, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaStreamDestroy(s));
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    void *ptrs[THREADS] = {0};
    CHECK_EQ(pthread_barrier_init(&start_line, NULL, THREADS), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&threads[i], NULL, first_call, &ptrs[i]), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(threads[i], NULL), 0);

    size_t base = rt_used_bytes();
    CHECK_GE(base, THREADS * 2 * MIB);
    for (int i = 0; i < THREADS; i++) {
        CHECK(ptrs[i] != NULL);
        for (int j = 0; j < i; j++)
            CHECK(ptrs[i] != ptrs[j]);
        /* Freed from another thread than the one that allocated: one context. */
        CHECK_RT(cudaFree(ptrs[i]));
    }
    CHECK_LE(rt_used_bytes(), base - THREADS * 2 * MIB);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
