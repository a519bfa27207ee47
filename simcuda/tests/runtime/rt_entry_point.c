/* cudaGetDriverEntryPoint hands out working driver functions, as PyTorch
 * uses it to reach the driver. */
#include "rt_test.h"

/* CUDA 13 deprecates cudaGetDriverEntryPoint, yet PyTorch and others still
 * reach the driver through it: it must keep working. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <cuda.h>
#include <cudaTypedefs.h>

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);

int main(void)
{
    CHECK_RT(cudaFree(NULL));
    enum cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    PFN_cuMemAlloc_v3020 mem_alloc = NULL;
    PFN_cuMemFree_v3020 mem_free = NULL;
    CHECK_RT(
        cudaGetDriverEntryPoint("cuMemAlloc", (void **)&mem_alloc, cudaEnableDefault, &status));
    CHECK_EQ(status, cudaDriverEntryPointSuccess);
    CHECK(mem_alloc != NULL);
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuMemFree", (void **)&mem_free, 12000,
                                              cudaEnableDefault, &status));
    CHECK_EQ(status, cudaDriverEntryPointSuccess);

    size_t base = rt_used_bytes();
    CUdeviceptr dptr = 0;
    CHECK_EQ(mem_alloc(&dptr, 16 * MIB), CUDA_SUCCESS);
    CHECK(dptr != 0);
    CHECK_GE(rt_used_bytes(), base + 16 * MIB);
    /* The runtime sees what the driver allocated. */
    struct cudaPointerAttributes attr;
    CHECK_RT(cudaPointerGetAttributes(&attr, (void *)dptr));
    CHECK_EQ(attr.type, cudaMemoryTypeDevice);
    CHECK_EQ(mem_free(dptr), CUDA_SUCCESS);
    CHECK_EQ(rt_used_bytes(), base);

    PFN_cuMemAllocAsync_v11020_ptsz alloc_async = NULL;
    CHECK_RT(cudaGetDriverEntryPoint_ptsz("cuMemAllocAsync", (void **)&alloc_async,
                                          cudaEnableDefault, &status));
    CHECK_EQ(status, cudaDriverEntryPointSuccess);
    CHECK(alloc_async != NULL);

    void *missing = (void *)1;
    CHECK_NE(cudaGetDriverEntryPoint("cuNoSuchFunction", &missing, cudaEnableDefault, &status),
             cudaSuccess);
    CHECK_EQ(status, cudaDriverEntryPointSymbolNotFound);
    CHECK(missing == NULL);
    CHECK_EQ(cudaGetDriverEntryPoint(NULL, &missing, cudaEnableDefault, &status),
             cudaErrorInvalidValue);
    return 0;
}
