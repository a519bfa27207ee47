/* VMM: 2 MiB granularity, physical handles counted at cuMemCreate, memory
 * usable only after cuMemSetAccess, pages returned only when the handle is
 * both released and unmapped. */
#include "simtest.h"

int main(void)
{
    sim_setup(0);
    size_t free0 = sim_free_mem();
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gmin, grec;
    CHECK_CU(cuMemGetAllocationGranularity(&gmin, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_CU(cuMemGetAllocationGranularity(&grec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK_EQ(gmin, 2 * MiB);
    CHECK_EQ(grec, 2 * MiB);

    CUmemGenericAllocationHandle h, h2;
    CHECK_EQ(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemCreate(&h, 4 * MiB, &prop, 0));
    CHECK_EQ(sim_free_mem(), free0 - 4 * MiB);
    CHECK_EQ(sim_stats(0).vmm_physical, 4 * MiB);

    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0));
    CHECK_EQ(va % (2 * MiB), 0);
    CHECK_EQ(sim_free_mem(), free0 - 4 * MiB); /* VA costs no memory */
    CHECK_CU(cuMemMap(va, 4 * MiB, 0, h, 0));
    CHECK_EQ(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* overlap */

    /* Mapped but not accessible yet. */
    CHECK_EQ(cuMemsetD8(va, 1, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, 4 * MiB, &acc, 1));
    CHECK_CU(cuMemsetD8(va, 0x5a, 4 * MiB));
    unsigned char host[8];
    CHECK_CU(cuMemcpyDtoH(host, va + 4 * MiB - 8, 8));
    CHECK_EQ(host[7], 0x5a);
    CHECK_EQ(cuMemsetD8(va, 1, 4 * MiB + 1), CUDA_ERROR_INVALID_VALUE); /* past the mapping */
    CHECK_EQ(cuMemSetAccess(va, 6 * MiB, &acc, 1), CUDA_ERROR_INVALID_VALUE);

    /* A second handle mapped right after: accesses may span both. */
    CHECK_CU(cuMemCreate(&h2, 2 * MiB, &prop, 0));
    CHECK_CU(cuMemMap(va + 4 * MiB, 2 * MiB, 0, h2, 0));
    CHECK_CU(cuMemSetAccess(va + 4 * MiB, 2 * MiB, &acc, 1));
    CHECK_CU(cuMemsetD8(va + 3 * MiB, 2, 2 * MiB));

    CUdeviceptr start = 0;
    size_t size = 0;
    int ordinal = -1;
    CHECK_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 100));
    CHECK_CU(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + 100));
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 100));
    CHECK_EQ(start, va);
    CHECK_EQ(size, 4 * MiB);
    CHECK_EQ(ordinal, 0);
    CHECK_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 7 * MiB),
             CUDA_ERROR_INVALID_VALUE);

    CUmemGenericAllocationHandle back;
    CHECK_CU(cuMemRetainAllocationHandle(&back, (void *)(uintptr_t)(va + 5 * MiB)));
    CHECK(back == h2);
    CHECK_CU(cuMemRelease(back));
    CUmemAllocationProp got;
    CHECK_CU(cuMemGetAllocationPropertiesFromHandle(&got, h));
    CHECK_EQ(got.location.id, 0);

    /* Released while mapped: the pages stay until the unmap. */
    CHECK_CU(cuMemRelease(h));
    CHECK_EQ(sim_free_mem(), free0 - 6 * MiB);
    CHECK_CU(cuMemUnmap(va, 4 * MiB));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    /* Unmapped while not released: the pages stay until the release. */
    CHECK_CU(cuMemUnmap(va + 4 * MiB, 2 * MiB));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    CHECK_CU(cuMemRelease(h2));
    CHECK_EQ(sim_free_mem(), free0);
    CHECK_EQ(sim_stats(0).vmm_physical, 0);
    CHECK_CU(cuMemAddressFree(va, 8 * MiB));

    /* Allocators reserve far more VA than the device has memory, as real
     * GPUs allow; other allocations still find room. */
    CUdeviceptr huge, small;
    CHECK_CU(cuMemAddressReserve(&huge, 256 * GiB, 2 * MiB, 0, 0));
    CHECK_CU(cuMemAlloc(&small, 64 * MiB));
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemAddressFree(huge, 256 * GiB));
    CHECK_EQ(sim_free_mem(), free0);

    /* Handles hold pages like any allocation: OOM at capacity. */
    CHECK_EQ(cuMemCreate(&h, 32 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    return 0;
}
