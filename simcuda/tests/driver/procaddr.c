/* cuGetProcAddress: the newest ABI not newer than the requested version,
 * per-thread variants on request, and the documented failure statuses. */
#include "simtest.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>

static void *lib;

static void *get(const char *name, int version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult want_status, CUresult want_rc)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CHECK_EQ(cuGetProcAddress(name, &fn, version, flags, &st), want_rc);
    CHECK_EQ(st, want_status);
    return fn;
}

static void expect(const char *name, int version, cuuint64_t flags, const char *symbol)
{
    void *fn = get(name, version, flags, CU_GET_PROC_ADDRESS_SUCCESS, CUDA_SUCCESS);
    void *want = dlsym(lib, symbol);
    CHECK(want != NULL);
    if (fn != want) {
        fprintf(stderr, "%s@%d flags %llu: not %s\n", name, version, (unsigned long long)flags,
                symbol);
        exit(1);
    }
}

int main(void)
{
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    /* Works before cuInit, as the runtime relies on. */
    expect("cuInit", 13000, 0, "cuInit");
    expect("cuMemAlloc", 3000, 0, "cuMemAlloc");
    expect("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
    expect("cuMemAlloc", 13000, PT, "cuMemAlloc_v2");
    expect("cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2");
    expect("cuMemcpyHtoD", 13000, PT, "cuMemcpyHtoD_v2_ptds");
    expect("cuMemsetD8Async", 13000, 0, "cuMemsetD8Async");
    expect("cuMemsetD8Async", 13000, PT, "cuMemsetD8Async_ptsz");
    expect("cuMemAllocAsync", 12000, PT, "cuMemAllocAsync_ptsz");
    expect("cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemFreeAsync");
    expect("cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture");
    expect("cuStreamBeginCapture", 13000, PT, "cuStreamBeginCapture_v2_ptsz");
    expect("cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2");
    expect("cuStreamGetCaptureInfo", 13000, 0, "cuStreamGetCaptureInfo_v3");
    expect("cuCtxCreate", 12000, 0, "cuCtxCreate_v3");
    expect("cuCtxCreate", 13000, 0, "cuCtxCreate_v4");
    expect("cuCtxSynchronize", 12080, 0, "cuCtxSynchronize");
    expect("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect("cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2");
    expect("cuDevicePrimaryCtxRelease", 13000, 0, "cuDevicePrimaryCtxRelease_v2");
    expect("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
    expect("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
    expect("cuGraphInstantiate", 13000, 0, "cuGraphInstantiate_v2"); /* as CUDA 13 does */
    expect("cuGraphInstantiateWithFlags", 13000, 0, "cuGraphInstantiateWithFlags");

    /* Misses: the status says which; renamed exports are not lookup names. */
    CHECK(get("cuNoSuchFunction", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
              CUDA_ERROR_NOT_FOUND) == NULL);
    CHECK(get("cuMemAlloc_v2", 13000, 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
              CUDA_ERROR_NOT_FOUND) == NULL);
    CHECK(get("cuMemAllocAsync", 11000, 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
              CUDA_ERROR_NOT_FOUND) == NULL);
    void *fn;
    CHECK_EQ(cuGetProcAddress("cuInit", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);

    /* The 4-argument ABI answers the same. */
    PFN_cuGetProcAddress_v11030 v1 = (PFN_cuGetProcAddress_v11030)dlsym(lib, "cuGetProcAddress");
    CHECK(v1 != NULL);
    CHECK_CU(v1("cuMemFree", &fn, 13000, 0));
    CHECK(fn == dlsym(lib, "cuMemFree_v2"));
    CHECK_EQ(v1("cuMemFree", &fn, 1000, 0), CUDA_ERROR_NOT_FOUND);

    /* What comes back is callable. */
    PFN_cuInit_v2000 init;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemFree_v3020 release;
    CHECK_CU(cuGetProcAddress("cuInit", (void **)&init, 13000, 0, NULL));
    CHECK_CU(init(0));
    sim_setup(0);
    CHECK_CU(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 13000, 0, NULL));
    CHECK_CU(cuGetProcAddress("cuMemFree", (void **)&release, 13000, 0, NULL));
    CUdeviceptr p;
    CHECK_CU(alloc(&p, 4 * MiB));
    CHECK_EQ(sim_free_mem(), 16 * GiB - 4 * MiB);
    CHECK_CU(release(p));

    /* The 32-bit ABI handed out at 3000 cannot carry simulated addresses. */
    CUresult (*legacy)(unsigned int *, unsigned int);
    CHECK_CU(cuGetProcAddress("cuMemAlloc", (void **)&legacy, 3000, 0, NULL));
    unsigned int p32 = 0;
    CHECK_EQ(legacy(&p32, 1024), CUDA_ERROR_NOT_SUPPORTED);
    return 0;
}
