/* The guard is per thread: many threads allocating through the shared runtime at
 * once are each counted once under the runtime API, never again under the driver
 * API the runtime calls underneath. */
#include "intercept.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

#define THREADS 8
#define ROUNDS  200

static void *worker(void *arg)
{
    (void)arg;
    CHECK_CU(cudaSetDevice(0));
    for (int i = 0; i < ROUNDS; i++) {
        void *p;
        CHECK_CU(cudaMalloc(&p, 512 * (size_t)(i + 1)));
        CHECK_CU(cudaFree(p));
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_CALLS("cudaMalloc", THREADS * ROUNDS);
    CHECK_CALLS("cudaFree", THREADS * ROUNDS);
    CHECK_CALLS("cuMemAlloc", 0);
    CHECK_CALLS("cuMemFree", 0);
    return 0;
}
