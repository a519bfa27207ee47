/* With SIMCUDA_MEM=64M exactly 32 pages of 2 MiB exist: the 33rd fails. */
#include "simtest.h"

int main(void)
{
    sim_setup(0);
    size_t free0, total;
    CHECK_CU(cuMemGetInfo(&free0, &total));
    CHECK_EQ(total, 64 * MiB);
    CUdeviceptr p[32], extra;
    for (int i = 0; i < 32; i++)
        CHECK_CU(cuMemAlloc(&p[i], 2 * MiB));
    CHECK_EQ(sim_free_mem(), 0);
    CHECK_EQ(cuMemAlloc(&extra, 2 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(cuMemAlloc(&extra, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(cuMemAlloc(&extra, 128 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemFree(p[7]));
    CHECK_CU(cuMemAlloc(&extra, 1));
    CHECK_EQ(cuMemAlloc(&p[7], 1 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemFree(extra));
    CHECK_CU(cuMemAlloc(&p[7], 2 * MiB));
    for (int i = 0; i < 32; i++)
        CHECK_CU(cuMemFree(p[i]));
    CHECK_EQ(sim_free_mem(), 64 * MiB);
    return 0;
}
