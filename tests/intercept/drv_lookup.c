/* Direct driver use, the way frameworks do it: every entry point looked up on a
 * libcuda handle, either by its exported name with dlsym (LOOKUP_PROCADDR 0, as
 * PyTorch and JAX) or by its base name through cuGetProcAddress_v2 (1, as nvcc's
 * static runtime). Each hooked lookup must hand out our wrapper for exactly the
 * ABI asked for, each unhooked one the driver's own function, and every call must
 * be counted once. */
#include "intercept.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static void *libcuda;
static PFN_cuGetProcAddress_v12000 gpa;

/* Our export of that exact name: what a hooked lookup must return. */
static void *wrapper(const char *export)
{
    void *w = dlsym(RTLD_DEFAULT, export);
    CHECK(w != NULL);
    return w;
}

static bool from_cudafrag(void *fn)
{
    Dl_info info;
    CHECK(dladdr(fn, &info) != 0);
    return strstr(info.dli_fname, "libcudafrag") != NULL;
}

static void *lookup(const char *export, const char *base, bool hooked, bool ptsz)
{
    void *fn = NULL;
#if LOOKUP_PROCADDR
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    cuuint64_t flags =
        ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    CHECK_CU(gpa(base, &fn, 12080, flags, &st));
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
#else
    (void)base;
    (void)ptsz;
    fn = dlsym(libcuda, export);
#endif
    CHECK(fn != NULL);
    if (hooked) {
        if (fn != wrapper(export)) {
            fprintf(stderr, "lookup of %s did not return the %s wrapper\n", base, export);
            exit(1);
        }
    } else {
        CHECK(!from_cudafrag(fn));
    }
    return fn;
}

/* fn is the name in cuda.h: __typeof__ sees the renamed (_v2, ...) declaration,
 * #fn the base name cuGetProcAddress wants. */
#define GET(fn, export) __typeof__(&fn) p_##fn = (__typeof__(&fn))lookup(export, #fn, true, false)
#define GET_PTSZ(fn, export)                                                                       \
    __typeof__(&fn) p_##fn##_ptsz = (__typeof__(&fn))lookup(export, #fn, true, true)
#define GET_PLAIN(fn, export)                                                                      \
    __typeof__(&fn) p_##fn = (__typeof__(&fn))lookup(export, #fn, false, false)

static unsigned char registered[1 << 16] __attribute__((aligned(4096)));

static void device_and_host(void)
{
    GET(cuMemAlloc, "cuMemAlloc_v2");
    GET(cuMemFree, "cuMemFree_v2");
    GET(cuMemAllocPitch, "cuMemAllocPitch_v2");
    GET(cuMemAllocManaged, "cuMemAllocManaged");
    GET(cuMemAllocHost, "cuMemAllocHost_v2");
    GET(cuMemHostAlloc, "cuMemHostAlloc");
    GET(cuMemFreeHost, "cuMemFreeHost");
    GET(cuMemHostRegister, "cuMemHostRegister_v2");
    GET(cuMemHostUnregister, "cuMemHostUnregister");

    CUdeviceptr d[3];
    for (int i = 0; i < 3; i++)
        CHECK_CU(p_cuMemAlloc(&d[i], 1000 * (size_t)(i + 1)));
    for (int i = 0; i < 3; i++)
        CHECK_CU(p_cuMemFree(d[i]));
    size_t pitch = 0;
    CHECK_CU(p_cuMemAllocPitch(&d[0], &pitch, 1000, 8, 16));
    CHECK_GE(pitch, 1000);
    CHECK_CU(p_cuMemAllocManaged(&d[1], 1 << 20, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(p_cuMemFree(d[0]));
    CHECK_CU(p_cuMemFree(d[1]));
    void *h1, *h2;
    CHECK_CU(p_cuMemAllocHost(&h1, 4096));
    CHECK_CU(p_cuMemHostAlloc(&h2, 4096, 0));
    CHECK_CU(p_cuMemFreeHost(h1));
    CHECK_CU(p_cuMemFreeHost(h2));
    CHECK_CU(p_cuMemHostRegister(registered, sizeof registered, 0));
    CHECK_CU(p_cuMemHostUnregister(registered));

    CHECK_CALLS("cuMemAlloc", 3);
    CHECK_CALLS("cuMemFree", 5);
    CHECK_CALLS("cuMemAllocPitch", 1);
    CHECK_CALLS("cuMemAllocManaged", 1);
    CHECK_CALLS("cuMemAllocHost", 1);
    CHECK_CALLS("cuMemHostAlloc", 1);
    CHECK_CALLS("cuMemFreeHost", 2);
    CHECK_CALLS("cuMemHostRegister", 1);
    CHECK_CALLS("cuMemHostUnregister", 1);
}

static void stream_ordered(CUdevice dev, CUstream s)
{
    GET(cuMemAllocAsync, "cuMemAllocAsync");
    GET(cuMemFreeAsync, "cuMemFreeAsync");
    GET_PTSZ(cuMemAllocAsync, "cuMemAllocAsync_ptsz");
    GET_PTSZ(cuMemFreeAsync, "cuMemFreeAsync_ptsz");
    GET(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
    GET_PTSZ(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync_ptsz");
    GET(cuMemPoolCreate, "cuMemPoolCreate");
    GET(cuMemPoolDestroy, "cuMemPoolDestroy");
    GET(cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
    GET(cuMemPoolGetAttribute, "cuMemPoolGetAttribute");
    GET(cuMemPoolTrimTo, "cuMemPoolTrimTo");
    GET(cuDeviceSetMemPool, "cuDeviceSetMemPool");
    GET(cuDeviceGetMemPool, "cuDeviceGetMemPool");
    GET(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
    GET(cuStreamSynchronize, "cuStreamSynchronize");
    GET_PTSZ(cuStreamSynchronize, "cuStreamSynchronize_ptsz");

    CUdeviceptr d;
    CHECK_CU(p_cuMemAllocAsync(&d, 1 << 20, s));
    CHECK_CU(p_cuMemFreeAsync(d, s));
    CHECK_CU(p_cuMemAllocAsync_ptsz(&d, 4096, NULL));
    CHECK_CU(p_cuMemFreeAsync_ptsz(d, NULL));

    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CUmemoryPool pool, def, cur;
    CHECK_CU(p_cuMemPoolCreate(&pool, &props));
    CHECK_CU(p_cuMemAllocFromPoolAsync(&d, 1 << 20, pool, s));
    CHECK_CU(p_cuMemFreeAsync(d, s));
    CHECK_CU(p_cuMemAllocFromPoolAsync_ptsz(&d, 1 << 20, pool, NULL));
    CHECK_CU(p_cuMemFreeAsync_ptsz(d, NULL));
    cuuint64_t threshold = 1 << 30, got = 0;
    CHECK_CU(p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK_CU(p_cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    CHECK_EQ(got, threshold);
    CHECK_CU(p_cuStreamSynchronize(s));
    CHECK_CU(p_cuStreamSynchronize_ptsz(NULL));
    CHECK_CU(p_cuMemPoolTrimTo(pool, 0));
    CHECK_CU(p_cuDeviceGetDefaultMemPool(&def, dev));
    CHECK_CU(p_cuDeviceSetMemPool(dev, pool));
    CHECK_CU(p_cuDeviceGetMemPool(&cur, dev));
    CHECK(cur == pool);
    CHECK_CU(p_cuDeviceSetMemPool(dev, def));
    CHECK_CU(p_cuMemPoolDestroy(pool));

    CHECK_CALLS("cuMemAllocAsync", 2);
    CHECK_CALLS("cuMemFreeAsync", 4);
    CHECK_CALLS("cuMemAllocFromPoolAsync", 2);
    CHECK_CALLS("cuMemPoolCreate", 1);
    CHECK_CALLS("cuMemPoolDestroy", 1);
    CHECK_CALLS("cuMemPoolSetAttribute", 1);
    CHECK_CALLS("cuMemPoolGetAttribute", 1);
    CHECK_CALLS("cuMemPoolTrimTo", 1);
    CHECK_CALLS("cuDeviceSetMemPool", 2);
    CHECK_CALLS("cuDeviceGetMemPool", 1);
    CHECK_CALLS("cuDeviceGetDefaultMemPool", 1);
}

static void graph_nodes(CUdevice dev)
{
    GET(cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode");
    GET(cuGraphAddMemFreeNode, "cuGraphAddMemFreeNode");
    GET_PLAIN(cuGraphCreate, "cuGraphCreate");
    GET_PLAIN(cuGraphDestroy, "cuGraphDestroy");
    CUgraph g;
    CUgraphNode alloc, free_node;
    CHECK_CU(p_cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS np = {0};
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = dev;
    np.bytesize = 1 << 20;
    CHECK_CU(p_cuGraphAddMemAllocNode(&alloc, g, NULL, 0, &np));
    CHECK(np.dptr != 0);
    CHECK_CU(p_cuGraphAddMemFreeNode(&free_node, g, &alloc, 1, np.dptr));
    CHECK_CU(p_cuGraphDestroy(g));
    CHECK_CALLS("cuGraphAddMemAllocNode", 1);
    CHECK_CALLS("cuGraphAddMemFreeNode", 1);
}

/* A lookup that fails is not replaced by a wrapper. */
static void failed_lookups(void)
{
#if LOOKUP_PROCADDR
    void *fn = (void *)&fn;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CHECK_NE(gpa("cuNoSuchFunction", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_SUCCESS);
    CHECK_NE(st, CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(fn == NULL);
#else
    CHECK(dlsym(libcuda, "cuNoSuchFunction") == NULL);
    CHECK(dlsym(libcuda, "cuMemAlloc_v9") == NULL);
    /* A hooked name in a library that does not have it. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    CHECK(libc != NULL);
    CHECK(dlsym(libc, "cuMemAlloc_v2") == NULL);
    CHECK(dlsym(libc, "getpid") != NULL);
    /* RTLD_NEXT keeps the caller's meaning: after this program comes libcudafrag. */
    CHECK(dlsym(RTLD_NEXT, "cuMemAlloc_v2") == wrapper("cuMemAlloc_v2"));
#endif
}

int main(void)
{
    libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(libcuda != NULL);
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(libcuda, "cuGetProcAddress_v2");
    CHECK(gpa != NULL);
    CHECK(gpa == wrapper("cuGetProcAddress_v2"));
#if LOOKUP_PROCADDR
    /* nvcc's static runtime: ask the bootstrap pointer for cuGetProcAddress itself. */
    void *self = NULL;
    CHECK_CU(gpa("cuGetProcAddress", &self, 12080, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    CHECK(self == wrapper("cuGetProcAddress_v2"));
    gpa = (PFN_cuGetProcAddress_v12000)self;
#endif
    GET_PLAIN(cuInit, "cuInit");
    GET_PLAIN(cuDeviceGet, "cuDeviceGet");
    GET_PLAIN(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    /* Hooked (it changes the current context) but not counted. */
    GET(cuCtxSetCurrent, "cuCtxSetCurrent");
    GET_PLAIN(cuStreamCreate, "cuStreamCreate");
    CHECK_CU(p_cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CHECK_CU(p_cuDeviceGet(&dev, 0));
    CHECK_CU(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(p_cuCtxSetCurrent(ctx));
    CHECK_CU(p_cuStreamCreate(&s, 0));

    device_and_host();
    stream_ordered(dev, s);
    graph_nodes(dev);
    failed_lookups();
    return 0;
}
