/* Four cudaMalloc calls through whichever CUDA runtime the program was linked
 * with; the exit status is how many failed. Built against NVIDIA's own runtime
 * (static, and shared through an RPATH) where the toolkit has it. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        void *p;
        cudaError_t e = cudaMalloc(&p, 1 << 20);
        if (e != cudaSuccess) {
            printf("cudaMalloc: %s\n", cudaGetErrorName(e));
            failed++;
        }
    }
    return failed;
}
