/* One stream-ordered allocation of 1 MiB from the default pool, whose growth
 * serves it, then freed: the footprint at the live peak is that growth. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    cudaStream_t s;
    void *p;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaMallocAsync(&p, 1 << 20, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess || cudaFreeAsync(p, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        fprintf(stderr, "live_peak_pool: a CUDA call failed\n");
        return 1;
    }
    return 0;
}
