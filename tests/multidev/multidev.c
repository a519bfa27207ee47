/* Two simulated devices used the way multi-GPU programs use them: cudaSetDevice
 * back and forth, cudaMalloc and cudaMallocAsync (each device's default pool) on
 * both, peer access, and a known subset freed -- one of them while the other
 * device is current. Device 0 and device 1 get different numbers on purpose, so
 * that a report mixing them up cannot pass check_report.py. "Device 1" below is
 * the second device used: 1, or the number given after the mode (with a device
 * left unused in between, which the report must not list).
 *
 *   multidev mixed [DEVICE]  the stream used for each async allocation belongs
 *                            to the current device
 *   multidev cross [DEVICE]  the allocation from device 1's own pool, and one
 *                            more cudaMallocAsync on device 1's stream, are made
 *                            while device 0 is current (CUDA allocates on the
 *                            stream's device, and from a pool on the pool's device)
 *
 * The program checks where the simulated device put every block, then prints its
 * pid for the checker, which reads the JSON report written at exit. */
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define MIB (1024ull * 1024ull)

static int other = 1; /* the second device used */

static void use_device(int device)
{
    CHECK_CU(cudaSetDevice(device));
    int now = -1;
    CHECK_CU(cudaGetDevice(&now));
    CHECK_EQ(now, device);
}

/* The simulated device's own answer: which device holds ptr. */
static int device_of(const void *ptr)
{
    struct cudaPointerAttributes attr;
    memset(&attr, 0, sizeof attr);
    CHECK_CU(cudaPointerGetAttributes(&attr, ptr));
    CHECK_EQ(attr.type, cudaMemoryTypeDevice);
    return attr.device;
}

static void *dev_malloc(int device, size_t bytes)
{
    use_device(device);
    void *p = NULL;
    CHECK_CU(cudaMalloc(&p, bytes));
    CHECK_EQ(device_of(p), device);
    return p;
}

static void *pool_malloc(size_t bytes, cudaStream_t stream, int expect_device)
{
    void *p = NULL;
    CHECK_CU(cudaMallocAsync(&p, bytes, stream));
    CHECK_EQ(device_of(p), expect_device);
    return p;
}

static cudaMemPool_t create_pool(int device)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool;
    CHECK_CU(cudaMemPoolCreate(&pool, &props));
    return pool;
}

static void enable_peers(void)
{
    int can = 0;
    CHECK_CU(cudaDeviceCanAccessPeer(&can, 0, other));
    CHECK_EQ(can, 1);
    use_device(0);
    CHECK_CU(cudaDeviceEnablePeerAccess(other, 0));
    use_device(other);
    CHECK_CU(cudaDeviceEnablePeerAccess(0, 0));
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (strcmp(argv[1], "mixed") != 0 && strcmp(argv[1], "cross") != 0)) {
        fprintf(stderr, "usage: %s mixed|cross [DEVICE]\n", argv[0]);
        return 2;
    }
    if (argc == 3) other = atoi(argv[2]);
    bool cross = strcmp(argv[1], "cross") == 0;
    int count = 0;
    CHECK_CU(cudaGetDeviceCount(&count));
    CHECK_LT(0, other);
    CHECK_LT(other, count);

    cudaStream_t s0, s1;
    use_device(0);
    CHECK_CU(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    use_device(other);
    CHECK_CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));

    /* Device 0: 3 x 4 MiB; device 1: 2 x 5 MiB; the device changes at every call. */
    void *a0 = dev_malloc(0, 4 * MIB);
    void *b0 = dev_malloc(other, 5 * MIB);
    void *a1 = dev_malloc(0, 4 * MIB);
    void *b1 = dev_malloc(other, 5 * MIB);
    void *a2 = dev_malloc(0, 4 * MIB);
    enable_peers();

    /* Default pools: 3 MiB on device 1, then 2 x 1 MiB on device 0; 2 MiB from an
     * application pool of device 1. Peaks: device 0 at 14 MiB, device 1 at 15 MiB
     * (22 MiB with the cross allocation). */
    cudaMemPool_t pool1 = create_pool(other);
    use_device(other);
    void *c0 = pool_malloc(3 * MIB, s1, other);
    void *g0 = NULL;
    if (!cross) CHECK_CU(cudaMallocFromPoolAsync(&g0, 2 * MIB, pool1, s1));
    use_device(0);
    void *d0 = pool_malloc(1 * MIB, s0, 0);
    void *d1 = pool_malloc(1 * MIB, s0, 0);
    void *e0 = NULL;
    if (cross) {
        CHECK_CU(cudaMallocFromPoolAsync(&g0, 2 * MIB, pool1, s1));
        e0 = pool_malloc(7 * MIB, s1, other);
    }
    CHECK_EQ(device_of(g0), other);

    /* The known subset: one block of each kind on device 0, and device 1's b0
     * freed while device 0 is current (UVA: any device pointer may be freed). */
    CHECK_CU(cudaFree(a1));
    CHECK_CU(cudaFreeAsync(d0, s0));
    CHECK_CU(cudaFree(b0));
    CHECK_CU(cudaStreamSynchronize(s0));
    use_device(other);
    CHECK_CU(cudaStreamSynchronize(s1));

    /* Live at exit (the leaks the report must list): a0, a2, d1 on device 0;
     * b1, c0, g0 (and e0) on device 1. */
    (void)a0, (void)a2, (void)b1, (void)c0, (void)d1, (void)e0, (void)g0;
    printf("pid %ld\n", (long)getpid());
    return 0;
}
