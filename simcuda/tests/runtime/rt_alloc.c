/* Device enumeration, properties and synchronous allocations through the
 * runtime, with the device's accounting checked by cudaMemGetInfo. */
#include "rt_test.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

/* The static program carries the runtime inside itself; the dynamic one
 * reaches it in libcudart.so.13. */
static void check_linkage(void)
{
    Dl_info info;
    CHECK(dladdr((void *)&cudaMalloc, &info) != 0);
    CHECK(info.dli_fname != NULL);
    void *shared = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
#if RT_TEST_STATIC
    CHECK(strstr(info.dli_fname, "libcudart") == NULL);
    CHECK(shared == NULL);
#else
    CHECK_STR(info.dli_fname, "libcudart.so.13");
    CHECK(shared != NULL);
#endif
}

static void check_device(void)
{
    int count = 0, device = -1, version = 0;
    CHECK_RT(cudaGetDeviceCount(&count));
    CHECK_GE(count, 1);
    CHECK_RT(cudaGetDevice(&device));
    CHECK_EQ(device, 0);
    CHECK_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
    CHECK_RT(cudaSetDevice(0));
    CHECK_RT(cudaRuntimeGetVersion(&version));
    CHECK_EQ(version, 13000);
    CHECK_RT(cudaDriverGetVersion(&version));
    CHECK_GE(version, 13000);

    struct cudaDeviceProp prop;
    CHECK_RT(cudaGetDeviceProperties(&prop, 0));
    CHECK(prop.name[0] != '\0');
    CHECK_GE(prop.major, 1);
    int major = 0;
    CHECK_RT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CHECK_EQ(major, prop.major);
    size_t free_b = 0, total_b = 0;
    CHECK_RT(cudaMemGetInfo(&free_b, &total_b));
    CHECK_EQ(total_b, prop.totalGlobalMem);
}

static void check_flags(void)
{
    unsigned int flags = 0;
    CHECK_RT(cudaSetDeviceFlags(cudaDeviceScheduleYield));
    CHECK_RT(cudaGetDeviceFlags(&flags));
    CHECK_EQ(flags & cudaDeviceScheduleMask, cudaDeviceScheduleYield);
}

static void check_malloc_free(void)
{
    CHECK_RT(cudaFree(NULL));
    size_t base = rt_used_bytes();
    void *a = NULL, *b = NULL;
    CHECK_RT(cudaMalloc(&a, 64 * MIB));
    CHECK(a != NULL);
    CHECK_GE(rt_used_bytes(), base + 64 * MIB);
    CHECK_RT(cudaMalloc(&b, 3 * MIB));
    CHECK(b != NULL && b != a);
    CHECK_GE(rt_used_bytes(), base + 67 * MIB);

    struct cudaPointerAttributes attr;
    CHECK_RT(cudaPointerGetAttributes(&attr, (char *)a + 100));
    CHECK_EQ(attr.type, cudaMemoryTypeDevice);
    CHECK_EQ(attr.device, 0);
    int on_stack = 0;
    CHECK_RT(cudaPointerGetAttributes(&attr, &on_stack));
    CHECK_EQ(attr.type, cudaMemoryTypeUnregistered);

    CHECK_RT(cudaFree(a));
    CHECK_RT(cudaFree(b));
    CHECK_EQ(rt_used_bytes(), base);

    void *none = (void *)1;
    CHECK_RT(cudaMalloc(&none, 0));
    CHECK(none == NULL);
}

static void check_other_kinds(void)
{
    size_t base = rt_used_bytes();
    void *pitched = NULL;
    size_t pitch = 0;
    CHECK_RT(cudaMallocPitch(&pitched, &pitch, 1000, 64));
    CHECK(pitched != NULL);
    CHECK_GE(pitch, 1000);
    struct cudaPitchedPtr p3;
    CHECK_RT(cudaMalloc3D(&p3, rt_extent(300, 20, 10)));
    CHECK(p3.ptr != NULL);
    CHECK_GE(p3.pitch, 300);
    CHECK_EQ(p3.ysize, 20);
    CHECK_LT(base, rt_used_bytes());
    CHECK_RT(cudaFree(pitched));
    CHECK_RT(cudaFree(p3.ptr));

    void *managed = NULL;
    CHECK_RT(cudaMallocManaged(&managed, 2 * MIB, cudaMemAttachGlobal));
    struct cudaPointerAttributes attr;
    CHECK_RT(cudaPointerGetAttributes(&attr, managed));
    CHECK_EQ(attr.type, cudaMemoryTypeManaged);
    CHECK_RT(cudaFree(managed));

    void *host = NULL, *mapped = NULL;
    CHECK_RT(cudaHostAlloc(&host, 1 * MIB, cudaHostAllocMapped));
    CHECK_RT(cudaPointerGetAttributes(&attr, host));
    CHECK_EQ(attr.type, cudaMemoryTypeHost);
    CHECK_RT(cudaHostGetDevicePointer(&mapped, host, 0));
    CHECK(mapped != NULL);
    CHECK_RT(cudaFreeHost(host));
    CHECK_RT(cudaMallocHost(&host, 4096));
    ((char *)host)[4095] = 1;
    CHECK_RT(cudaFreeHost(host));

    static char buffer[1 << 16];
    CHECK_RT(cudaHostRegister(buffer, sizeof(buffer), cudaHostRegisterDefault));
    CHECK_RT(cudaPointerGetAttributes(&attr, buffer));
    CHECK_EQ(attr.type, cudaMemoryTypeHost);
    CHECK_RT(cudaHostUnregister(buffer));

    cudaArray_t arr = NULL, arr3 = NULL;
    struct cudaChannelFormatDesc desc =
        cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    CHECK_RT(cudaMallocArray(&arr, &desc, 512, 512, 0));
    CHECK(arr != NULL);
    CHECK_RT(cudaMalloc3DArray(&arr3, &desc, rt_extent(64, 64, 64), 0));
    CHECK(arr3 != NULL);
    CHECK_GE(rt_used_bytes(), base + 512 * 512 * 4);
    CHECK_RT(cudaFreeArray(arr));
    CHECK_RT(cudaFreeArray(arr3));
    CHECK_EQ(rt_used_bytes(), base);
}

static void check_streams_events(void)
{
    cudaStream_t s = NULL, prio = NULL;
    CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int least = 1, greatest = 1;
    CHECK_RT(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_LE(greatest, least);
    CHECK_RT(cudaStreamCreateWithPriority(&prio, cudaStreamDefault, least));
    cudaEvent_t start = NULL, stop = NULL;
    CHECK_RT(cudaEventCreate(&start));
    CHECK_RT(cudaEventCreateWithFlags(&stop, cudaEventDefault));
    unsigned int flags = 0;
    int priority = -1, device = -1;
    CHECK_RT(cudaStreamGetFlags(s, &flags));
    CHECK_EQ(flags, cudaStreamNonBlocking);
    CHECK_RT(cudaStreamGetPriority(prio, &priority));
    CHECK_EQ(priority, least);
    CHECK_RT(cudaStreamGetDevice(s, &device));
    CHECK_EQ(device, 0);
    CHECK_RT(cudaEventRecordWithFlags(start, s, cudaEventRecordDefault));
    CHECK_RT(cudaStreamWaitEvent(prio, start, 0));
    CHECK_RT(cudaEventRecord(stop, prio));
    CHECK_RT(cudaEventSynchronize(stop));
    CHECK_RT(cudaEventQuery(stop));
    float ms = -1.0f;
    CHECK_RT(cudaEventElapsedTime(&ms, start, stop));
    CHECK(ms >= 0.0f);
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaStreamQuery(s));
    CHECK_RT(cudaDeviceSynchronize());
    CHECK_RT(cudaEventDestroy(start));
    CHECK_RT(cudaEventDestroy(stop));
    CHECK_RT(cudaStreamDestroy(s));
    CHECK_RT(cudaStreamDestroy(prio));
}

/* A reset drops the runtime's primary context (inactive in the driver); the
 * next call that needs a context retains it again. */
static int primary_active(void)
{
    PFN_cuDevicePrimaryCtxGetState_v7000 get_state = NULL;
    enum cudaDriverEntryPointQueryResult found;
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", (void **)&get_state,
                                              13000, cudaEnableDefault, &found));
    unsigned int flags = 0;
    int active = -1;
    CHECK_EQ(get_state(0, &flags, &active), CUDA_SUCCESS);
    return active;
}

static void check_reset(void)
{
    void *p = NULL;
    CHECK_RT(cudaMalloc(&p, 32 * MIB));
    CHECK_EQ(primary_active(), 1);
    CHECK_RT(cudaDeviceReset());
    CHECK_EQ(primary_active(), 0);
    CHECK_RT(cudaMalloc(&p, 1 * MIB));
    CHECK_EQ(primary_active(), 1);
    CHECK_RT(cudaFree(p));
}

int main(void)
{
    check_linkage();
    check_device();
    check_flags();
    check_malloc_free();
    check_other_kinds();
    check_streams_events();
    check_reset();
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
