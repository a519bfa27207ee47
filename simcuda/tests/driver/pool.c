/* Stream-ordered allocator: chunk growth measured on an H200, release
 * threshold at synchronization points, trimming, attributes, and the rule
 * that a block freed on one stream is not handed to another stream before
 * the free has completed. */
#include "simtest.h"

static cuuint64_t attr(CUmemoryPool pool, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    CHECK_CU(cuMemPoolGetAttribute(pool, a, &v));
    return v;
}

static void set_attr(CUmemoryPool pool, CUmemPool_attribute a, cuuint64_t v)
{
    CHECK_CU(cuMemPoolSetAttribute(pool, a, &v));
}

/* n allocations of size on s, then all freed on s and synchronized. */
static void cycle(CUmemoryPool pool, CUstream s, int n, size_t size, cuuint64_t reserved)
{
    CUdeviceptr p[16];
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemAllocAsync(&p[i], size, s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), reserved);
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFreeAsync(p[i], s));
    CHECK_CU(cuStreamSynchronize(s));
}

int main(void)
{
    sim_setup(0);
    size_t free0 = sim_free_mem();
    CUmemoryPool pool, cur;
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuDeviceGetMemPool(&cur, 0));
    CHECK(pool == cur);
    CUstream s, t;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));

    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX);

    /* Small requests share one 32 MiB chunk. */
    cycle(pool, s, 16, 1, 32 * MiB);
    cycle(pool, s, 16, 1 * MiB, 32 * MiB);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
    CHECK_EQ(sim_free_mem(), free0 - 32 * MiB);
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_EQ(sim_free_mem(), free0);

    /* Larger ones get chunks of exactly round_up(size, 2 MiB). */
    cycle(pool, s, 16, 3 * MiB, 64 * MiB);
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    cycle(pool, s, 16, 30 * MiB, 480 * MiB);
    CHECK_EQ(sim_free_mem(), free0 - 480 * MiB);
    CHECK_EQ(sim_stats(0).pool_reserved, 480 * MiB);

    /* Trim keeps at least the asked bytes, in whole idle chunks. */
    CHECK_CU(cuMemPoolTrimTo(pool, 100 * MiB));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 90 * MiB);
    CHECK_CU(cuMemPoolTrimTo(pool, 0));

    /* Used counts the bytes asked for (as an H200 reports); a large request
     * that fits in an existing chunk takes no new memory. HIGH marks are
     * reset to the current value by writing 0. */
    CUdeviceptr a, b, c;
    set_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0);
    CHECK_CU(cuMemAllocAsync(&a, 1000, s));
    CHECK_CU(cuMemAllocAsync(&b, 5 * MiB, s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1000 + 5 * MiB);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
    CHECK_EQ(b - a, 1024);
    CHECK_CU(cuMemAllocAsync(&c, 27 * MiB, s)); /* 32 MiB - 1024 - 5 MiB left */
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 60 * MiB);
    CHECK_CU(cuMemFreeAsync(c, s));
    CHECK_CU(cuMemFreeAsync(b, s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1000);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1000 + 5 * MiB + 27 * MiB);
    set_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1000);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 480 * MiB);
    set_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 60 * MiB);
    cuuint64_t one = 1;
    CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFreeAsync(a, s));
    CHECK_CU(cuStreamSynchronize(s));

    /* Release threshold 0: idle chunks go back at the synchronization. */
    set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 60 * MiB);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_CU(cuMemAllocAsync(&a, 1 * MiB, s));
    CHECK_CU(cuMemFreeAsync(a, s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);

    /* Threshold 64 MiB: released one chunk at a time until at most 64 MiB. */
    set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 64 * MiB);
    cycle(pool, s, 16, 30 * MiB, 480 * MiB);
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 60 * MiB);
    set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0);
    CHECK_CU(cuCtxSynchronize());
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);

    /* Cross-stream reuse waits for the free to complete. */
    set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX);
    CUevent first;
    CHECK_CU(cuEventCreate(&first, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr x, y, z, v;
    CHECK_CU(cuMemAllocAsync(&x, 1 * MiB, s));
    CHECK_CU(cuMemFreeAsync(x, s));
    CHECK_CU(cuEventRecord(first, s));
    CHECK_CU(cuMemAllocAsync(&y, 1 * MiB, t));
    CHECK_NE(y, x);
    CHECK_CU(cuMemAllocAsync(&z, 1 * MiB, s)); /* same stream: at once */
    CHECK_EQ(z, x);
    /* Used and freed again on s: completing only the first free (s runs up
     * to the event) must not hand the block to t. */
    CHECK_CU(cuMemsetD8Async(z, 7, 1 * MiB, s));
    CHECK_CU(cuMemFreeAsync(z, s));
    CHECK_CU(cuEventSynchronize(first));
    CHECK_CU(cuMemAllocAsync(&v, 1 * MiB, t));
    CHECK_NE(v, x);
    CHECK_CU(cuMemFreeAsync(v, t));
    CHECK_CU(cuEventDestroy(first));
    CHECK_CU(cuStreamSynchronize(s));
    CUdeviceptr w;
    CHECK_CU(cuMemAllocAsync(&w, 1 * MiB, t)); /* completed: any stream */
    CHECK_EQ(w, x);
    CHECK_CU(cuMemFreeAsync(w, t));
    CHECK_CU(cuMemFreeAsync(y, t));
    CHECK_CU(cuStreamSynchronize(t));

    /* Following event dependencies (the default): a stream that waits for
     * the free may reuse the block before the free has run. */
    CUevent ev;
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemAllocAsync(&x, 1 * MiB, s));
    CHECK_CU(cuMemFreeAsync(x, s));
    CHECK_CU(cuEventRecord(ev, s));
    CHECK_CU(cuStreamWaitEvent(t, ev, 0));
    CHECK_CU(cuMemAllocAsync(&y, 1 * MiB, t));
    CHECK_EQ(y, x);
    CHECK_CU(cuMemsetD8Async(y, 1, 1 * MiB, t));
    CHECK_CU(cuMemFreeAsync(y, t));
    CHECK_CU(cuCtxSynchronize());
    int follow = 0;
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &follow));
    CHECK_CU(cuMemAllocAsync(&x, 1 * MiB, s));
    CHECK_CU(cuMemFreeAsync(x, s));
    CHECK_CU(cuEventRecord(ev, s));
    CHECK_CU(cuStreamWaitEvent(t, ev, 0));
    CHECK_CU(cuMemAllocAsync(&y, 1 * MiB, t));
    CHECK_NE(y, x);
    CHECK_CU(cuMemFreeAsync(y, t));
    CHECK_CU(cuCtxSynchronize());
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES), 0);
    CHECK_CU(cuEventDestroy(ev));
    CHECK_EQ(simcudaHazardCount(), 0);

    /* Pointer attributes name the pool; cuMemFree works on pool blocks. */
    CHECK_CU(cuMemAllocAsync(&x, 4096, s));
    CUmemoryPool owner = NULL;
    CHECK_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, x + 10));
    CHECK(owner == pool);
    CUdeviceptr base;
    size_t size;
    CHECK_CU(cuMemGetAddressRange(&base, &size, x + 10));
    CHECK_EQ(base, x);
    CHECK_EQ(size, 4096);
    CHECK_CU(cuMemFree(x));
    CHECK_EQ(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(cuMemFreeAsync(x, s), CUDA_ERROR_INVALID_VALUE);

    /* Explicit pools, cuMemAllocFromPoolAsync, current pool. */
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool mine;
    CHECK_CU(cuMemPoolCreate(&mine, &props));
    CHECK_CU(cuMemAllocFromPoolAsync(&x, 3 * MiB, mine, s));
    CHECK_EQ(attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * MiB);
    CHECK_CU(cuDeviceSetMemPool(0, mine));
    CHECK_CU(cuMemAllocAsync(&y, 3 * MiB, s));
    CHECK_EQ(attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 8 * MiB);
    CHECK_CU(cuMemFreeAsync(x, s));
    CHECK_CU(cuMemFreeAsync(y, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_EQ(attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CHECK_CU(cuMemPoolDestroy(mine));
    CHECK_CU(cuDeviceGetMemPool(&cur, 0));
    CHECK(cur == pool);
    CHECK_EQ(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);

    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(sim_free_mem(), free0);
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuStreamDestroy(t));
    return 0;
}
