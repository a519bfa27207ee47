/* cuGetProcAddress hands out the ABI the requested version selects, and our
 * wrapper for exactly that ABI: "cuMemAlloc" at 3000 is the legacy 32-bit entry
 * point, at 3020 and later cuMemAlloc_v2; "cuGetProcAddress" before 12000 is the
 * four-argument version. */
#include "intercept.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

typedef CUresult (*legacy_alloc_fn)(uint32_t *dptr, unsigned int bytesize);

static void *wrapper(const char *export)
{
    void *w = dlsym(RTLD_DEFAULT, export);
    CHECK(w != NULL);
    return w;
}

int main(void)
{
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(libcuda != NULL);
    PFN_cuGetProcAddress_v12000 gpa =
        (PFN_cuGetProcAddress_v12000)dlsym(libcuda, "cuGetProcAddress_v2");
    CHECK(gpa == wrapper("cuGetProcAddress_v2"));
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(libcuda, "cuInit");
    CHECK_CU(init(0));
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)dlsym(libcuda, "cuDevicePrimaryCtxRetain");
    PFN_cuCtxSetCurrent_v4000 set_current =
        (PFN_cuCtxSetCurrent_v4000)dlsym(libcuda, "cuCtxSetCurrent");
    CUcontext ctx;
    CHECK_CU(retain(&ctx, 0));
    CHECK_CU(set_current(ctx));

    /* Legacy ABI: 32-bit pointer and size. The word after the pointer must stay
     * untouched, which a 64-bit entry point would overwrite. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK_CU(gpa("cuMemAlloc", &fn, 3000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(fn == wrapper("cuMemAlloc"));
    CHECK(fn != wrapper("cuMemAlloc_v2"));
    struct {
        uint32_t ptr, canary;
    } box = {0, 0xC0FFEEu};
    /* The simulated driver's legacy entry point refuses (its addresses do not fit in
     * 32 bits); the _v2 one would succeed and write 8 bytes. */
    CHECK_EQ(((legacy_alloc_fn)fn)(&box.ptr, 1u << 20), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_EQ(box.canary, 0xC0FFEEu);
    void *real_legacy = dlsym(libcuda, "cuMemAlloc");
    CHECK(real_legacy == fn); /* dlsym on the handle gives the same wrapper */
    CHECK_CALLS("cuMemAlloc", 1);

    /* Current ABI. */
    CHECK_CU(gpa("cuMemAlloc", &fn, 3020, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK(fn == wrapper("cuMemAlloc_v2"));
    CHECK_CU(gpa("cuMemAlloc", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK(fn == wrapper("cuMemAlloc_v2"));
    CUdeviceptr d = 0;
    CHECK_CU(((PFN_cuMemAlloc_v3020)fn)(&d, 1 << 20));
    CHECK_NE(d, 0);
    CHECK_CALLS("cuMemAlloc", 2);

    /* The four-argument cuGetProcAddress, asked for by an older program. */
    CHECK_CU(gpa("cuGetProcAddress", &fn, 11030, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK(fn == wrapper("cuGetProcAddress"));
    PFN_cuGetProcAddress_v11030 gpa_v1 = (PFN_cuGetProcAddress_v11030)fn;
    void *free_fn = NULL;
    CHECK_CU(gpa_v1("cuMemFree", &free_fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT));
    CHECK(free_fn == wrapper("cuMemFree_v2"));
    CHECK_CU(((PFN_cuMemFree_v3020)free_fn)(d));
    CHECK_CALLS("cuMemFree", 1);

    /* A lookup the driver fails is returned as it failed. */
    fn = (void *)&fn;
    CHECK_NE(gpa_v1("cuNoSuchFunction", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT), CUDA_SUCCESS);
    CHECK(fn == NULL);
    return 0;
}
