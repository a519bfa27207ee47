/* Initialisation, devices, attributes, contexts and error strings. */
#include "simtest.h"

#include <pthread.h>

static void *other_thread(void *arg)
{
    CUcontext c = (CUcontext)1;
    CHECK_CU(cuCtxGetCurrent(&c));
    CHECK(c == NULL); /* current contexts are per thread */
    CUdeviceptr p;
    CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxSetCurrent((CUcontext)arg));
    CHECK_CU(cuMemAlloc(&p, 16));
    CHECK_CU(cuMemFree(p));
    return NULL;
}

int main(void)
{
    CUdeviceptr p;
    int n = -1;
    CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuInit(0));
    CHECK_CU(cuInit(0));
    int version = 0;
    CHECK_CU(cuDriverGetVersion(&version));
    CHECK_EQ(version, 13000);
    CHECK_CU(cuDeviceGetCount(&n));
    CHECK_EQ(n, 1);
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_EQ(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    CHECK_CU(cuDeviceGetName(name, sizeof name, 0));
    CHECK_STR(name, "Simulated CUDA Device");
    int v;
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK_EQ(v, 9);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    CHECK_EQ(v, 0);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    CHECK_EQ(v, 1);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    CHECK_EQ(v, 1);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0));
    CHECK_EQ(v, 0);
    CUuuid u0;
    CHECK_CU(cuDeviceGetUuid(&u0, 0));

    /* No context current: allocation calls refuse. */
    CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    size_t f, t;
    CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);

    CUcontext primary, again, cur;
    unsigned flags;
    int active;
    CHECK_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 0);
    CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK(primary == again);
    CHECK_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_EQ(active, 1);
    CHECK_CU(cuCtxPushCurrent(primary));
    CHECK_CU(cuCtxGetCurrent(&cur));
    CHECK(cur == primary);
    CHECK_CU(cuCtxGetDevice(&dev));
    CHECK_EQ(dev, 0);
    CHECK_CU(cuMemAlloc(&p, 16));

    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, other_thread, primary), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);

    /* A created context stacks on top and pops off. */
    CUcontext created, popped;
    CHECK_CU(cuCtxCreate(&created, NULL, 0, 0));
    CHECK_CU(cuCtxGetCurrent(&cur));
    CHECK(cur == created);
    CHECK_CU(cuCtxPopCurrent(&popped));
    CHECK(popped == created);
    CHECK_CU(cuCtxGetCurrent(&cur));
    CHECK(cur == primary);
    CHECK_CU(cuCtxDestroy(created));
    CHECK_CU(cuCtxSynchronize());

    CHECK_CU(cuMemFree(p));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);

    const char *s = NULL;
    CHECK_CU(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    CHECK_STR(s, "CUDA_ERROR_OUT_OF_MEMORY");
    CHECK_CU(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    CHECK_STR(s, "invalid argument");
    CHECK_EQ(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    return 0;
}
