/* cudafrag keeps each thread's current device instead of asking the driver on
 * every call. The device it records an allocation on must still follow every way a
 * program switches: cudaSetDevice, cuCtxSetCurrent, push/pop, a created and then
 * destroyed context, cudaDeviceReset, streams of another device (also a handle
 * reused by a stream of another device), and threads switching concurrently. Needs
 * SIMCUDA_DEVICES=2; built against the shared and the static runtime (there
 * cudaSetDevice reaches cudafrag only as the driver calls it makes).
 *
 * The truth is the driver's own cuCtxGetDevice (looked up in libcuda, not hooked);
 * what cudafrag recorded is the growth of cudafrag_live_bytes per device. */
#include "intercept.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <pthread.h>

#define KIB 1024ll

static PFN_cuCtxGetDevice_v2000 driver_device; /* the driver's own */
static PFN_cuDeviceGet_v2000 device_get;
static PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain;
static PFN_cuCtxSetCurrent_v4000 set_current;
static PFN_cuCtxPushCurrent_v4000 push_current;
static PFN_cuCtxPopCurrent_v4000 pop_current;
static PFN_cuCtxCreate_v12050 ctx_create;
static PFN_cuCtxDestroy_v4000 ctx_destroy;
static PFN_cuMemAllocAsync_v11020 drv_alloc_async;
static PFN_cuMemFreeAsync_v11020 drv_free_async;

/* The one device whose live bytes grew by `bytes` since `before`; -1 if none did
 * exactly that while the other stayed. */
static int grew(const long long before[2], long long bytes)
{
    long long d0 = live_bytes(0) - before[0], d1 = live_bytes(1) - before[1];
    if (d0 == bytes && d1 == 0) return 0;
    if (d1 == bytes && d0 == 0) return 1;
    fprintf(stderr, "live bytes grew by %lld on device 0 and %lld on device 1, want %lld\n", d0, d1,
            bytes);
    return -1;
}

enum how { RT_ASYNC, DRV_ASYNC, RT_MALLOC };

/* One allocation on the legacy stream (or cudaMalloc), checked against the device
 * cudafrag recorded it on, then freed. */
static void alloc_on(const char *step, enum how how, cudaStream_t stream, int want)
{
    long long before[2] = {live_bytes(0), live_bytes(1)};
    long long bytes = 96 * KIB + how * 32 * KIB;
    void *p = NULL;
    CUdeviceptr d = 0;
    if (how == RT_ASYNC) CHECK_CU(cudaMallocAsync(&p, (size_t)bytes, stream));
    if (how == DRV_ASYNC) CHECK_CU(drv_alloc_async(&d, (size_t)bytes, (CUstream)stream));
    if (how == RT_MALLOC) CHECK_CU(cudaMalloc(&p, (size_t)bytes));
    int got = grew(before, bytes);
    if (got != want) {
        fprintf(stderr, "%s (%d): recorded on device %d, expected %d\n", step, how, got, want);
        exit(1);
    }
    if (how == RT_ASYNC) CHECK_CU(cudaFreeAsync(p, stream));
    if (how == DRV_ASYNC) CHECK_CU(drv_free_async(d, (CUstream)stream));
    if (how == RT_MALLOC) CHECK_CU(cudaFree(p));
    CHECK_CU(cudaStreamSynchronize(stream));
}

/* Each way twice: the first asks, the second uses the kept answer. */
static void expect_device(const char *step, int want)
{
    CUdevice truth = -1;
    CHECK_CU(driver_device(&truth));
    if (truth != want) {
        fprintf(stderr, "%s: the driver says device %d, the test expected %d\n", step, truth, want);
        exit(1);
    }
    for (int rep = 0; rep < 2; rep++)
        for (enum how how = RT_ASYNC; how <= RT_MALLOC; how++)
            alloc_on(step, how, 0, want);
}

static CUcontext primary(int ordinal)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK_CU(device_get(&dev, ordinal));
    CHECK_CU(primary_retain(&ctx, dev));
    return ctx;
}

static void switches(void)
{
    CHECK_CU(cudaSetDevice(1));
    expect_device("cudaSetDevice(1)", 1);
    CHECK_CU(cudaSetDevice(0));
    expect_device("cudaSetDevice(0)", 0);

    CUcontext c0 = primary(0), c1 = primary(1);
    CHECK_CU(set_current(c1));
    expect_device("cuCtxSetCurrent(device 1)", 1);
    CHECK_CU(push_current(c0));
    expect_device("cuCtxPushCurrent(device 0)", 0);
    CUcontext popped = NULL;
    CHECK_CU(pop_current(&popped));
    CHECK(popped == c0);
    expect_device("cuCtxPopCurrent", 1);

    CUcontext created = NULL;
    CHECK_CU(ctx_create(&created, NULL, 0, 0));
    expect_device("cuCtxCreate(device 0)", 0);
    CHECK_CU(ctx_destroy(created));
    expect_device("cuCtxDestroy", 1);

    CHECK_CU(cudaSetDevice(1));
    CHECK_CU(cudaDeviceReset());
    expect_device("cudaDeviceReset", 1);
    CHECK_CU(cudaSetDevice(0));
    expect_device("cudaSetDevice(0) after the reset", 0);
}

/* An allocation comes from its stream's device, whatever device is current; a
 * destroyed stream's handle may come back as a stream of the other device (glibc's
 * calloc hands a freed stream's memory back after a few rounds; other allocators
 * may never, then this only checks the streams themselves). */
#define STREAM_ROUNDS 24

static void streams(void)
{
    cudaStream_t seen[STREAM_ROUNDS];
    int reused = 0;
    for (int round = 0; round < STREAM_ROUNDS; round++) {
        int dev = round % 2;
        cudaStream_t s;
        CHECK_CU(cudaSetDevice(dev));
        CHECK_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        for (int i = 0; i < round; i++)
            if (seen[i] == s && i % 2 != dev) {
                reused++;
                break;
            }
        seen[round] = s;
        CHECK_CU(cudaSetDevice(1 - dev));
        for (int rep = 0; rep < 2; rep++) {
            alloc_on("stream of another device", RT_ASYNC, s, dev);
            alloc_on("stream of another device", DRV_ASYNC, s, dev);
        }
        CHECK_CU(cudaStreamDestroy(s));
    }
    printf("rounds whose stream reused the handle of one of the other device: %d\n", reused);
}

/* Threads switching devices at the same time, each by its own means: every
 * allocation is held until the main thread has compared the totals per device.
 * Device 1's blocks are three times device 0's, so any swap shows. */
#define THREADS 4
#define ROUNDS  32
#define BLOCK   (64 * KIB)

static pthread_barrier_t allocated, checked;

static void *switching_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    void *held[ROUNDS];
    CUcontext ctx[2] = {primary(0), primary(1)};
    for (int i = 0; i < ROUNDS; i++) {
        int dev = (i + t) % 2;
        if (t % 2 == 0)
            CHECK_CU(cudaSetDevice(dev));
        else
            CHECK_CU(set_current(ctx[dev]));
        CHECK_CU(cudaMallocAsync(&held[i], (size_t)((dev ? 3 : 1) * BLOCK), 0));
    }
    CHECK_CU(cudaDeviceSynchronize());
    pthread_barrier_wait(&allocated);
    pthread_barrier_wait(&checked);
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_CU(cudaSetDevice((i + t) % 2));
        CHECK_CU(cudaFreeAsync(held[i], 0));
        CHECK_CU(cudaDeviceSynchronize());
    }
    return NULL;
}

static void threads(void)
{
    long long before[2] = {live_bytes(0), live_bytes(1)};
    pthread_t th[THREADS];
    CHECK_EQ(pthread_barrier_init(&allocated, NULL, THREADS + 1), 0);
    CHECK_EQ(pthread_barrier_init(&checked, NULL, THREADS + 1), 0);
    for (int t = 0; t < THREADS; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, switching_thread, (void *)(intptr_t)t), 0);
    pthread_barrier_wait(&allocated);
    long long per_device = THREADS * ROUNDS / 2;
    CHECK_EQ(live_bytes(0) - before[0], per_device * BLOCK);
    CHECK_EQ(live_bytes(1) - before[1], per_device * 3 * BLOCK);
    pthread_barrier_wait(&checked);
    for (int t = 0; t < THREADS; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    CHECK_EQ(live_bytes(0), before[0]);
    CHECK_EQ(live_bytes(1), before[1]);
}

int main(void)
{
    int count = 0;
    CHECK_CU(cudaGetDeviceCount(&count));
    if (count < 2) {
        fprintf(stderr, "needs SIMCUDA_DEVICES=2\n");
        return 77;
    }
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(libcuda != NULL);
    driver_device = (PFN_cuCtxGetDevice_v2000)dlsym(libcuda, "cuCtxGetDevice");
    CHECK(driver_device != NULL);
    device_get = (PFN_cuDeviceGet_v2000)driver_entry_point("cuDeviceGet", 13000);
    primary_retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)driver_entry_point("cuDevicePrimaryCtxRetain", 13000);
    set_current = (PFN_cuCtxSetCurrent_v4000)driver_entry_point("cuCtxSetCurrent", 13000);
    push_current = (PFN_cuCtxPushCurrent_v4000)driver_entry_point("cuCtxPushCurrent", 13000);
    pop_current = (PFN_cuCtxPopCurrent_v4000)driver_entry_point("cuCtxPopCurrent", 13000);
    ctx_create = (PFN_cuCtxCreate_v12050)driver_entry_point("cuCtxCreate", 13000);
    ctx_destroy = (PFN_cuCtxDestroy_v4000)driver_entry_point("cuCtxDestroy", 13000);
    drv_alloc_async = (PFN_cuMemAllocAsync_v11020)driver_entry_point("cuMemAllocAsync", 13000);
    drv_free_async = (PFN_cuMemFreeAsync_v11020)driver_entry_point("cuMemFreeAsync", 13000);
    /* Hooked: the lookups hand out cudafrag's wrappers, which see the switch. */
    CHECK(set_current == dlsym(RTLD_DEFAULT, "cuCtxSetCurrent"));

    switches();
    streams();
    threads();
    return 0;
}
