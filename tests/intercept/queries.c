/* How many driver queries (current device and context, capture state, a stream's
 * device, the device's pools) the simulated driver answered during steady loops of
 * allocations and frees. queries.sh runs this with and without cudafrag and
 * compares: cudafrag must add none once it has seen a stream and a device once,
 * but the pool reads it documents (one per 16 same-size stream-ordered pairs).
 * Needs SIMCUDA_COUNT_CALLS=1 (the simulated driver counts only then).
 *
 *   queries [PAIRS]   prints "LOOP QUERY COUNT" for each loop and counted query
 *
 * Runtime loops (the runtime makes queries of its own, the same with and without
 * cudafrag) and driver loops through the entry points cudafrag hands out (no
 * runtime in between: every query counted there is cudafrag's). */
#include "intercept.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>

#define WARMUP 64

static const char *const queries[] = {
    "cuCtxGetDevice",        "cuCtxGetCurrent",           "cuStreamIsCapturing",
    "cuStreamGetDevice",     "cuDeviceGetDefaultMemPool", "cuDeviceGetMemPool",
    "cuMemPoolGetAttribute",
};
#define NQUERIES (sizeof queries / sizeof queries[0])

static void snapshot(unsigned long long *out)
{
    for (size_t i = 0; i < NQUERIES; i++) {
        out[i] = sim_calls(queries[i]);
        CHECK(out[i] != ~0ull);
    }
}

enum loop { RT_ASYNC, RT_ASYNC_LEGACY, RT_ASYNC_PTSZ, RT_POOL, RT_MALLOC, DRV_ASYNC, DRV_MALLOC };
static const char *const loop_names[] = {"rt_async",  "rt_async_legacy", "rt_async_per_thread",
                                         "rt_pool",   "rt_malloc",       "drv_async",
                                         "drv_malloc"};

static cudaStream_t stream;
static cudaMemPool_t pool;
static PFN_cuMemAllocAsync_v11020 drv_alloc_async;
static PFN_cuMemFreeAsync_v11020 drv_free_async;
static PFN_cuMemAlloc_v3020 drv_alloc;
static PFN_cuMemFree_v3020 drv_free;

static void pairs(enum loop l, long n)
{
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        CUdeviceptr d = 0;
        switch (l) {
        case RT_ASYNC:
            CHECK_CU(cudaMallocAsync(&p, 256, stream));
            CHECK_CU(cudaFreeAsync(p, stream));
            break;
        case RT_ASYNC_LEGACY:
            CHECK_CU(cudaMallocAsync(&p, 256, 0));
            CHECK_CU(cudaFreeAsync(p, 0));
            break;
        case RT_ASYNC_PTSZ:
            CHECK_CU(cudaMallocAsync(&p, 256, cudaStreamPerThread));
            CHECK_CU(cudaFreeAsync(p, cudaStreamPerThread));
            break;
        case RT_POOL:
            CHECK_CU(cudaMallocFromPoolAsync(&p, 256, pool, stream));
            CHECK_CU(cudaFreeAsync(p, stream));
            break;
        case RT_MALLOC:
            CHECK_CU(cudaMalloc(&p, 256));
            CHECK_CU(cudaFree(p));
            break;
        case DRV_ASYNC:
            CHECK_CU(drv_alloc_async(&d, 256, (CUstream)stream));
            CHECK_CU(drv_free_async(d, (CUstream)stream));
            break;
        case DRV_MALLOC:
            CHECK_CU(drv_alloc(&d, 256));
            CHECK_CU(drv_free(d));
            break;
        }
    }
    CHECK_CU(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CU(cudaDeviceGetDefaultMemPool(&pool, 0));
    drv_alloc_async = (PFN_cuMemAllocAsync_v11020)driver_entry_point("cuMemAllocAsync", 13000);
    drv_free_async = (PFN_cuMemFreeAsync_v11020)driver_entry_point("cuMemFreeAsync", 13000);
    drv_alloc = (PFN_cuMemAlloc_v3020)driver_entry_point("cuMemAlloc", 13000);
    drv_free = (PFN_cuMemFree_v3020)driver_entry_point("cuMemFree", 13000);
    for (enum loop l = RT_ASYNC; l <= DRV_MALLOC; l++) {
        unsigned long long before[NQUERIES], after[NQUERIES];
        pairs(l, WARMUP); /* first sight of the stream, the device, the call site */
        snapshot(before);
        pairs(l, n);
        snapshot(after);
        for (size_t i = 0; i < NQUERIES; i++)
            printf("%s %s %llu\n", loop_names[l], queries[i], after[i] - before[i]);
    }
    CHECK_CU(cudaStreamDestroy(stream));
    return 0;
}
