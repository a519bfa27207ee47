/* A profiler preloads wrappers with the driver's own names. The driver must
 * still hand out, and call, its own functions: this program exports
 * cuMemFree_v2 and cuDeviceGetUuid of its own (as a preloaded library
 * would) and checks that neither cuGetProcAddress nor the driver's internal
 * forwarding (cuDeviceGetUuid_v2 to cuDeviceGetUuid) reaches them. */
#include "simtest.h"

#include <dlfcn.h>

static int wrapper_calls;

__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    wrapper_calls++;
    return CUDA_ERROR_UNKNOWN;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    wrapper_calls++;
    return CUDA_ERROR_UNKNOWN;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    void *own = dlsym(lib, "cuMemFree_v2");
    CHECK(own != NULL);
    CHECK(own != (void *)cuMemFree_v2);
    void *fn = NULL;
    CHECK_CU(cuGetProcAddress("cuMemFree", &fn, 13000, 0, NULL));
    CHECK(fn == own);
    void *uuid_v1 = NULL;
    CHECK_CU(cuGetProcAddress("cuDeviceGetUuid", &uuid_v1, 10000, 0, NULL));
    CHECK(uuid_v1 == dlsym(lib, "cuDeviceGetUuid"));
    CHECK(uuid_v1 != (void *)cuDeviceGetUuid);

    sim_setup(0);
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4 * MiB));
    CHECK_EQ(sim_free_mem(), 16 * GiB - 4 * MiB);
    CHECK_CU(((CUresult(*)(CUdeviceptr))fn)(p));
    CHECK_EQ(sim_free_mem(), 16 * GiB);
    CUuuid u;
    CUresult (*uuid_v2)(CUuuid *, CUdevice) =
        (CUresult(*)(CUuuid *, CUdevice))dlsym(lib, "cuDeviceGetUuid_v2");
    CHECK(uuid_v2 != NULL);
    CHECK_CU(uuid_v2(&u, 0));
    CHECK_EQ(wrapper_calls, 0);
    return 0;
}
