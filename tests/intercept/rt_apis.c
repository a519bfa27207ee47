/* Every runtime allocation API, called once (cudaMalloc a hundred times), counted
 * exactly once: under its own name with the shared libcudart (whose driver calls
 * pass through uncounted), under the driver name it turns into with nvcc's static
 * runtime (RT_STATIC), whose runtime symbols are invisible. */
#include "intercept.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>

/* cudaGetDriverEntryPoint is deprecated but still called by programs: it is tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* The per-thread default stream entry points, as CUDA_API_PER_THREAD_DEFAULT_STREAM
 * builds call them. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

#if RT_STATIC
#define EXPECT(rt, drv, n)                                                                         \
    do {                                                                                           \
        CHECK_CALLS(rt, 0);                                                                        \
        if ((drv)[0]) CHECK_CALLS(drv, n);                                                         \
    } while (0)
#else
#define EXPECT(rt, drv, n)                                                                         \
    do {                                                                                           \
        CHECK_CALLS(rt, n);                                                                        \
        if ((drv)[0]) CHECK_CALLS(drv, 0);                                                         \
    } while (0)
#endif

static unsigned char registered[1 << 16] __attribute__((aligned(4096)));

static void device_memory(void)
{
    static void *p[100];
    for (int i = 0; i < 100; i++)
        CHECK_CU(cudaMalloc(&p[i], 4096 * (size_t)(i + 1)));
    for (int i = 0; i < 100; i++)
        CHECK_CU(cudaFree(p[i]));

    void *q;
    size_t pitch = 0;
    CHECK_CU(cudaMallocPitch(&q, &pitch, 1000, 10));
    CHECK_GE(pitch, 1000);
    CHECK_CU(cudaFree(q));
    struct cudaPitchedPtr pp;
    CHECK_CU(cudaMalloc3D(&pp, (struct cudaExtent){1000, 10, 2}));
    CHECK_CU(cudaFree(pp.ptr));

    CHECK_CU(cudaMallocManaged(&q, 1 << 20, cudaMemAttachGlobal));
    CHECK_CU(cudaFree(q));
}

static void arrays(void)
{
    struct cudaChannelFormatDesc desc = {32, 0, 0, 0, cudaChannelFormatKindFloat};
    cudaArray_t a, b;
    CHECK_CU(cudaMallocArray(&a, &desc, 64, 64, 0));
    CHECK_CU(cudaMalloc3DArray(&b, &desc, (struct cudaExtent){16, 16, 16}, 0));
    CHECK_CU(cudaFreeArray(a));
    CHECK_CU(cudaFreeArray(b));
}

static void host_memory(void)
{
    void *h1, *h2;
    CHECK_CU(cudaMallocHost(&h1, 4096));
    CHECK_CU(cudaHostAlloc(&h2, 4096, cudaHostAllocDefault));
    CHECK_CU(cudaFreeHost(h1));
    CHECK_CU(cudaFreeHost(h2));
    CHECK_CU(cudaHostRegister(registered, sizeof registered, cudaHostRegisterDefault));
    CHECK_CU(cudaHostUnregister(registered));
}

static void pools(cudaStream_t s)
{
    void *p;
    CHECK_CU(cudaMallocAsync(&p, 1 << 20, s));
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cudaMallocAsync_ptsz(&p, 4096, 0));
    CHECK_CU(cudaFreeAsync_ptsz(p, 0));

    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool, def, cur;
    CHECK_CU(cudaMemPoolCreate(&pool, &props));
    CHECK_CU(cudaMallocFromPoolAsync(&p, 1 << 20, pool, s));
    CHECK_CU(cudaFreeAsync(p, s));
    uint64_t threshold = 1 << 30, got = 0;
    CHECK_CU(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK_CU(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got));
    CHECK_EQ(got, threshold);
    CHECK_CU(cudaStreamSynchronize(s));
    CHECK_CU(cudaMemPoolTrimTo(pool, 0));
    CHECK_CU(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK_CU(cudaDeviceSetMemPool(0, pool));
    CHECK_CU(cudaDeviceGetMemPool(&cur, 0));
    CHECK(cur == pool);
    CHECK_CU(cudaDeviceSetMemPool(0, def));
    CHECK_CU(cudaMemPoolDestroy(pool));
}

static void graph_nodes(void)
{
    cudaGraph_t g;
    cudaGraphNode_t alloc, free_node;
    CHECK_CU(cudaGraphCreate(&g, 0));
    struct cudaMemAllocNodeParams np = {0};
    np.poolProps.allocType = cudaMemAllocationTypePinned;
    np.poolProps.location.type = cudaMemLocationTypeDevice;
    np.poolProps.location.id = 0;
    np.bytesize = 1 << 20;
    CHECK_CU(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &np));
    CHECK(np.dptr != NULL);
    CHECK_CU(cudaGraphAddMemFreeNode(&free_node, g, &alloc, 1, np.dptr));
    CHECK_CU(cudaGraphDestroy(g));
}

static void check_counts(void)
{
    EXPECT("cudaMalloc", "cuMemAlloc", 100);
    EXPECT("cudaFree", "cuMemFree", 103);
    EXPECT("cudaMallocPitch", "", 1);
    EXPECT("cudaMalloc3D", "", 1);
    EXPECT("cudaMallocManaged", "cuMemAllocManaged", 1);
    EXPECT("cudaMallocHost", "cuMemAllocHost", 1);
    EXPECT("cudaHostAlloc", "cuMemHostAlloc", 1);
    EXPECT("cudaFreeHost", "cuMemFreeHost", 2);
    EXPECT("cudaHostRegister", "cuMemHostRegister", 1);
    EXPECT("cudaHostUnregister", "cuMemHostUnregister", 1);
    EXPECT("cudaMallocAsync", "cuMemAllocAsync", 2);
    EXPECT("cudaFreeAsync", "cuMemFreeAsync", 3);
    EXPECT("cudaMallocFromPoolAsync", "cuMemAllocFromPoolAsync", 1);
    EXPECT("cudaMemPoolCreate", "cuMemPoolCreate", 1);
    EXPECT("cudaMemPoolDestroy", "cuMemPoolDestroy", 1);
    EXPECT("cudaMemPoolSetAttribute", "cuMemPoolSetAttribute", 1);
    EXPECT("cudaMemPoolGetAttribute", "cuMemPoolGetAttribute", 1);
    EXPECT("cudaMemPoolTrimTo", "cuMemPoolTrimTo", 1);
    EXPECT("cudaDeviceSetMemPool", "cuDeviceSetMemPool", 2);
    EXPECT("cudaDeviceGetMemPool", "cuDeviceGetMemPool", 1);
    EXPECT("cudaDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 1);
    EXPECT("cudaGraphAddMemAllocNode", "cuGraphAddMemAllocNode", 1);
    EXPECT("cudaGraphAddMemFreeNode", "cuGraphAddMemFreeNode", 1);
    /* Arrays come from cuArrayCreate, which is not an allocation API we count. */
    EXPECT("cudaMallocArray", "", RT_STATIC ? 0 : 1);
    EXPECT("cudaMalloc3DArray", "", RT_STATIC ? 0 : 1);
    EXPECT("cudaFreeArray", "", RT_STATIC ? 0 : 2);
    CHECK_CALLS("cuMemAllocPitch", RT_STATIC ? 2 : 0);
}

/* Driver functions a program gets from the runtime are our wrappers for the ABI
 * it asked for, and a failed lookup stays failed. */
static void entry_points(void)
{
    long long allocs = api_calls("cuMemAlloc"), frees = api_calls("cuMemFree");
    enum cudaDriverEntryPointQueryResult st;
    void *fn = NULL, *ffn = NULL;
    CHECK_CU(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &st));
    CHECK_EQ(st, cudaDriverEntryPointSuccess);
    CHECK(fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    CHECK_CU(cudaGetDriverEntryPointByVersion("cuMemFree", &ffn, 12000, cudaEnableDefault, &st));
    CHECK_EQ(st, cudaDriverEntryPointSuccess);
    CUdeviceptr d = 0;
    CHECK_CU(((PFN_cuMemAlloc_v3020)fn)(&d, 12345));
    CHECK_CU(((PFN_cuMemFree_v3020)ffn)(d));
    CHECK_CALLS("cuMemAlloc", allocs + 1);
    CHECK_CALLS("cuMemFree", frees + 1);

    void *missing = (void *)&st;
    cudaGetDriverEntryPoint("cuNoSuchFunction", &missing, cudaEnableDefault, &st);
    CHECK_NE(st, cudaDriverEntryPointSuccess);
    CHECK(missing == NULL);
}

int main(void)
{
    CHECK_CU(cudaSetDevice(0));
    cudaStream_t s;
    CHECK_CU(cudaStreamCreate(&s));
    device_memory();
    arrays();
    host_memory();
    pools(s);
    graph_nodes();
    check_counts();

    /* errno is what the real call left (the simulated runtime leaves it alone). */
    void *p;
    errno = EXDEV;
    CHECK_CU(cudaMalloc(&p, 1 << 20));
    CHECK_EQ(errno, EXDEV);
    CHECK_CU(cudaFree(p));

    entry_points();
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
