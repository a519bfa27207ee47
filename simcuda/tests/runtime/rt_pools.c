/* Stream-ordered allocations and memory pools through the runtime, including
 * the per-thread default stream (_ptsz) entry points. */
#include "rt_test.h"

#include <stdint.h>

/* The _ptsz entry points are declared only for programs built with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, which would rename every call here. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

static uint64_t pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
    uint64_t value = 0;
    CHECK_RT(cudaMemPoolGetAttribute(pool, attr, &value));
    return value;
}

static void check_default_pool(void)
{
    cudaMemPool_t pool = NULL, current = NULL;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(pool != NULL);
    CHECK_RT(cudaDeviceGetMemPool(&current, 0));
    CHECK(current == pool);
    struct cudaMemLocation dev0 = {.type = cudaMemLocationTypeDevice, .id = 0};
    cudaMemPool_t by_location = NULL;
    CHECK_RT(cudaMemGetDefaultMemPool(&by_location, &dev0, cudaMemAllocationTypePinned));
    CHECK(by_location == pool);
    CHECK_RT(cudaMemGetMemPool(&by_location, &dev0, cudaMemAllocationTypePinned));
    CHECK(by_location == pool);
    uint64_t keep = UINT64_MAX;
    CHECK_RT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    CHECK_EQ(pool_attr(pool, cudaMemPoolAttrReleaseThreshold), UINT64_MAX);

    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    size_t base = rt_used_bytes();
    void *a = NULL, *b = NULL;
    CHECK_RT(cudaMallocAsync(&a, 8 * MIB, s));
    CHECK_RT(cudaMallocAsync(&b, 4 * MIB, s));
    CHECK(a != NULL && b != NULL && a != b);
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 12 * MIB);
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 12 * MIB);
    CHECK_GE(rt_used_bytes(), base + 12 * MIB);

    CHECK_RT(cudaFreeAsync(a, s));
    CHECK_RT(cudaFreeAsync(b, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_EQ(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 0);
    /* The release threshold keeps the memory in the pool... */
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 12 * MIB);
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrUsedMemHigh), 12 * MIB);
    /* ...until trimmed. */
    CHECK_RT(cudaMemPoolTrimTo(pool, 0));
    CHECK_EQ(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent), 0);
    CHECK_EQ(rt_used_bytes(), base);
    CHECK_RT(cudaStreamDestroy(s));
}

static void check_per_thread_stream(void)
{
    cudaMemPool_t pool = NULL;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0));
    void *p = NULL;
    CHECK_RT(cudaMallocAsync_ptsz(&p, 2 * MIB, NULL));
    CHECK(p != NULL);
    CHECK_RT(cudaStreamSynchronize_ptsz(NULL));
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 2 * MIB);
    CHECK_RT(cudaFreeAsync_ptsz(p, NULL));
    CHECK_RT(cudaStreamSynchronize(cudaStreamPerThread));
    CHECK_EQ(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 0);
    CHECK_RT(cudaMemPoolTrimTo(pool, 0));
}

static void check_own_pool(void)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = NULL, def = NULL, current = NULL;
    CHECK_RT(cudaMemPoolCreate(&pool, &props));
    CHECK_RT(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK(pool != NULL && pool != def);

    struct cudaMemAccessDesc access = {.location = {.type = cudaMemLocationTypeDevice, .id = 0},
                                       .flags = cudaMemAccessFlagsProtReadWrite};
    CHECK_RT(cudaMemPoolSetAccess(pool, &access, 1));
    enum cudaMemAccessFlags granted = cudaMemAccessFlagsProtNone;
    struct cudaMemLocation where = {.type = cudaMemLocationTypeDevice, .id = 0};
    CHECK_RT(cudaMemPoolGetAccess(&granted, pool, &where));
    CHECK_EQ(granted, cudaMemAccessFlagsProtReadWrite);

    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    void *p = NULL;
    CHECK_RT(cudaMallocFromPoolAsync(&p, 6 * MIB, pool, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 6 * MIB);
    CHECK_EQ(pool_attr(def, cudaMemPoolAttrUsedMemCurrent), 0);
    CHECK_RT(cudaFreeAsync(p, s));

    /* cudaMallocAsync follows the device's current pool. */
    CHECK_RT(cudaDeviceSetMemPool(0, pool));
    CHECK_RT(cudaDeviceGetMemPool(&current, 0));
    CHECK(current == pool);
    CHECK_RT(cudaMallocAsync(&p, 1 * MIB, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_GE(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent), 1 * MIB);
    CHECK_RT(cudaFreeAsync(p, s));
    CHECK_RT(cudaStreamSynchronize(s));
    struct cudaMemLocation dev0 = {.type = cudaMemLocationTypeDevice, .id = 0};
    CHECK_RT(cudaMemSetMemPool(&dev0, cudaMemAllocationTypePinned, def));
    CHECK_RT(cudaMemGetMemPool(&current, &dev0, cudaMemAllocationTypePinned));
    CHECK(current == def);
    CHECK_RT(cudaMemPoolDestroy(pool));
    CHECK_RT(cudaStreamDestroy(s));
}

int main(void)
{
    check_default_pool();
    check_per_thread_stream();
    check_own_pool();
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
