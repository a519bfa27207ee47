/* Fragmentation: fill 64 MiB with 2 MiB blocks and free every other one.
 * Half the memory is free, yet a 2-page request fails in contiguous mode
 * (no run of two free pages) and succeeds in paged mode.
 * argv[1] names the mode the test was started in. */
#include "simtest.h"

int main(int argc, char **argv)
{
    CHECK_EQ(argc, 2);
    int contiguous = strcmp(argv[1], "contiguous") == 0;
    sim_setup(0);
    CUdeviceptr p[32], big;
    for (int i = 0; i < 32; i++)
        CHECK_CU(cuMemAlloc(&p[i], 2 * MiB));
    for (int i = 0; i < 32; i += 2)
        CHECK_CU(cuMemFree(p[i]));
    CHECK_EQ(sim_free_mem(), 32 * MiB);
    struct simcuda_stats st = sim_stats(0);
    CHECK_EQ(st.pages_used, 16);
    CHECK_EQ(st.largest_free_run_pages, contiguous ? 1 : 16);
    CUresult rc = cuMemAlloc(&big, 4 * MiB);
    if (contiguous) {
        CHECK_EQ(rc, CUDA_ERROR_OUT_OF_MEMORY);
        /* Freeing a neighbour makes a run of three. */
        CHECK_CU(cuMemFree(p[1]));
        CHECK_EQ(sim_stats(0).largest_free_run_pages, 3);
        CHECK_CU(cuMemAlloc(&big, 4 * MiB));
        CHECK_CU(cuMemAlloc(&p[1], 2 * MiB));
    } else {
        CHECK_CU(rc);
    }
    CHECK_CU(cuMemFree(big));
    for (int i = 1; i < 32; i += 2)
        CHECK_CU(cuMemFree(p[i]));
    CHECK_EQ(sim_free_mem(), 64 * MiB);
    return 0;
}
