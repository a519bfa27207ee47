/* CUDAFRAG_ENABLE=0: every hook is a pass-through. Allocations work, nothing is
 * counted, and dlsym on libcuda hands out the driver's own functions. */
#include "intercept.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

int main(void)
{
    void *p;
    for (int i = 0; i < 10; i++) {
        CHECK_CU(cudaMalloc(&p, 4096));
        CHECK_CU(cudaFree(p));
    }
    cudaStream_t s;
    CHECK_CU(cudaStreamCreate(&s));
    CHECK_CU(cudaMallocAsync(&p, 4096, s));
    CHECK_CU(cudaFreeAsync(p, s));

    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(libcuda != NULL);
    void *alloc = dlsym(libcuda, "cuMemAlloc_v2");
    CHECK(alloc != NULL);
    CHECK(alloc != dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));

    CHECK_CALLS("cudaMalloc", 0);
    CHECK_CALLS("cudaFree", 0);
    CHECK_CALLS("cudaMallocAsync", 0);
    CHECK_CALLS("cuMemAlloc", 0);
    CHECK_CALLS("cuMemAllocAsync", 0);
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
