/* With CUDAFRAG_ARENA=1 the arena serves cudaMalloc from address space it
 * reserves; the program's stream-ordered allocations, which it does not serve,
 * must still find room: reserving must never make the program's own calls fail. */
#include "check.h"

#include <cuda_runtime_api.h>

int main(void)
{
    void *dev, *async, *pooled;
    cudaStream_t s;
    cudaMemPool_t pool;
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaStreamCreate(&s));
    CHECK_CU(cudaMemPoolCreate(&pool, &props));
    CHECK_CU(cudaMalloc(&dev, 1 << 20));
    CHECK_CU(cudaMallocAsync(&async, 1 << 20, s));
    CHECK_CU(cudaMallocFromPoolAsync(&pooled, 1 << 20, pool, s));
    CHECK_CU(cudaFreeAsync(pooled, s));
    CHECK_CU(cudaFreeAsync(async, s));
    CHECK_CU(cudaStreamSynchronize(s));
    CHECK_CU(cudaFree(dev));
    CHECK_CU(cudaMemPoolDestroy(pool));
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
