/* Allocations on two simulated devices (SIMCUDA_DEVICES=2): two on device 0,
 * three on device 1, one of each freed; the exit status is how many calls failed.
 * The exports' --device must keep each device's apart. */
#include <cuda_runtime_api.h>

int main(void)
{
    int failed = 0;
    for (int d = 0; d < 2; d++) {
        void *p[3];
        failed += cudaSetDevice(d) != cudaSuccess;
        for (int i = 0; i < 2 + d; i++)
            failed += cudaMalloc(&p[i], (size_t)(d + 1) << 20) != cudaSuccess;
        failed += cudaFree(p[0]) != cudaSuccess;
    }
    return failed;
}
