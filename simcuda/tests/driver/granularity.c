/* cuMemAlloc rounding and packing as measured on an H200, seen through
 * cuMemGetInfo: small blocks share 2 MiB pages at 512 B steps, large ones
 * take whole pages, and everything comes back at cuMemFree. */
#include "simtest.h"

int main(void)
{
    sim_setup(0);
    size_t free0, total;
    CHECK_CU(cuMemGetInfo(&free0, &total));
    CHECK_EQ(total, 16 * GiB);
    CHECK_EQ(free0, 16 * GiB);
    size_t dtotal;
    CHECK_CU(cuDeviceTotalMem(&dtotal, 0));
    CHECK_EQ(dtotal, 16 * GiB);

    /* 64 x 1 B: one page, consecutive blocks 512 B apart. */
    CUdeviceptr p[64];
    for (int i = 0; i < 64; i++)
        CHECK_CU(cuMemAlloc(&p[i], 1));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    for (int i = 1; i < 64; i++)
        CHECK_EQ(p[i] - p[i - 1], 512);
    CHECK_EQ(sim_stats(0).pages_used, 1);
    for (int i = 0; i < 64; i++)
        CHECK_CU(cuMemFree(p[i]));
    CHECK_EQ(sim_free_mem(), free0);

    /* Two 1 MiB blocks share a page; a third needs another. */
    CUdeviceptr a, b, c;
    CHECK_CU(cuMemAlloc(&a, 1 * MiB));
    CHECK_CU(cuMemAlloc(&b, 1 * MiB));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    CHECK_EQ(b - a, 1 * MiB);
    CHECK_CU(cuMemAlloc(&c, 1 * MiB));
    CHECK_EQ(sim_free_mem(), free0 - 4 * MiB);
    CHECK_CU(cuMemFree(a));
    CHECK_EQ(sim_free_mem(), free0 - 4 * MiB); /* b still holds the page */
    CHECK_CU(cuMemFree(b));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    CHECK_CU(cuMemFree(c));
    CHECK_EQ(sim_free_mem(), free0);

    /* Past 1 MiB: whole 2 MiB pages, 2 MiB-aligned addresses. */
    CHECK_CU(cuMemAlloc(&a, 1 * MiB + 1));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    CHECK_EQ(a % (2 * MiB), 0);
    CHECK_CU(cuMemAlloc(&b, 3 * MiB));
    CHECK_EQ(sim_free_mem(), free0 - 6 * MiB);
    CHECK_EQ(b % (2 * MiB), 0);

    /* Ranges are the requested sizes, found from interior pointers. */
    CUdeviceptr base;
    size_t size;
    CHECK_CU(cuMemGetAddressRange(&base, &size, b + 12345));
    CHECK_EQ(base, b);
    CHECK_EQ(size, 3 * MiB);
    CHECK_EQ(cuMemGetAddressRange(&base, &size, b + 3 * MiB), CUDA_ERROR_NOT_FOUND);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_EQ(sim_free_mem(), free0);

    /* A block freed and asked for again gets its address back (as on an
     * H200), small or large. */
    CHECK_CU(cuMemAlloc(&a, 4 * MiB));
    CHECK_CU(cuMemAlloc(&b, 1));
    CUdeviceptr a0 = a, b0 = b;
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemAlloc(&a, 4 * MiB));
    CHECK_CU(cuMemAlloc(&b, 1));
    CHECK_EQ(a, a0);
    CHECK_EQ(b, b0);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));

    /* Zero bytes is an error, as on real drivers; so is a double free. */
    CHECK_EQ(cuMemAlloc(&a, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAlloc(&a, 100));
    CHECK_CU(cuMemFree(a));
    CHECK_EQ(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);

    /* Pitch: width rounded up to 512 B. */
    size_t pitch;
    CHECK_CU(cuMemAllocPitch(&a, &pitch, 1000, 10, 4));
    CHECK_EQ(pitch, 1024);
    CHECK_CU(cuMemGetAddressRange(&base, &size, a));
    CHECK_EQ(size, 10240);
    CHECK_EQ(cuMemAllocPitch(&b, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFree(a));

    struct simcuda_stats st = sim_stats(0);
    CHECK_EQ(st.pages_total, 8192);
    CHECK_EQ(st.pages_used, 0);
    CHECK_EQ(st.alloc_calls, 64 + 3 + 2 + 4 + 1 + 1);
    CHECK_EQ(st.free_calls, st.alloc_calls);
    return 0;
}
