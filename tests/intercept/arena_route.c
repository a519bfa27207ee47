/* CUDAFRAG_ARENA=1 reroutes cudaMalloc, the driver's cuMemAlloc and default-pool
 * async allocations to cudafrag's arena: the simulated driver sees far fewer
 * allocations than the program makes, frees of arena pointers never reach it, and
 * every call is still counted once under the API the program called. Without the
 * arena ("native") the driver sees each one. */
#include "intercept.h"

#include "simcuda.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

typedef int (*stats_fn)(int, struct simcuda_stats *);

static unsigned long long driver_allocs(stats_fn stats)
{
    struct simcuda_stats st;
    CHECK_EQ(stats(0, &st), 0);
    return st.alloc_calls;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    bool arena = strcmp(argv[1], "arena") == 0;
    CHECK_CU(cudaSetDevice(0));
    void *warm;
    CHECK_CU(cudaMalloc(&warm, 4096)); /* the arena reserves its backing here */
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "simcudaGetStats");
    CHECK(stats != NULL);
    unsigned long long before = driver_allocs(stats);

    void *p[50];
    for (int i = 0; i < 50; i++)
        CHECK_CU(cudaMalloc(&p[i], 4096 * (size_t)(i + 1)));
    for (int i = 0; i < 50; i++)
        CHECK_CU(cudaFree(p[i]));
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK_CU(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &st));
    CUdeviceptr d;
    CHECK_CU(((PFN_cuMemAlloc_v3020)fn)(&d, 1 << 20));
    /* A driver-allocated arena pointer freed through the runtime, and vice versa. */
    CHECK_CU(cudaFree((void *)d));
    CHECK_CU(cudaGetDriverEntryPoint("cuMemFree", &fn, cudaEnableDefault, &st));
    CHECK_CU(((PFN_cuMemFree_v3020)fn)((CUdeviceptr)warm));
    cudaStream_t s;
    CHECK_CU(cudaStreamCreate(&s));
    for (int i = 0; i < 10; i++) {
        void *a;
        CHECK_CU(cudaMallocAsync(&a, 8192, s));
        CHECK_CU(cudaFreeAsync(a, s));
    }
    CHECK_CU(cudaStreamSynchronize(s));
    unsigned long long made = driver_allocs(stats) - before;
    if (arena)
        CHECK_LT(made, 10);
    else
        CHECK_GE(made, 51); /* pool allocations may be served from reserved memory */

    /* More than the device has: the arena fails, the real call fails the same way. */
    void *huge = (void *)&huge;
    CHECK_EQ(cudaMalloc(&huge, (size_t)1 << 40), cudaErrorMemoryAllocation);

    CHECK_CALLS("cudaMalloc", 52);
    CHECK_CALLS("cudaFree", 51);
    CHECK_CALLS("cuMemAlloc", 1);
    CHECK_CALLS("cuMemFree", 1);
    CHECK_CALLS("cudaMallocAsync", 10);
    CHECK_CALLS("cudaFreeAsync", 10);
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
