/* The arena on the simulated device: it starts without a current context
 * (adopting device 0's primary one), hands out real VMM-mapped memory that
 * cuPointerGetAttribute and copies accept, refuses work being captured, gives
 * idle granules back past the slack, and reports what it did. */
#include "arena/arena.h"
#include "check.h"
#include "config/config.h"
#include "simcuda.h"

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((uint64_t)1 << 20)

static void fill_and_verify(CUdeviceptr p, size_t n, unsigned char v)
{
    unsigned char *buf = malloc(n);
    CHECK_CU(cuMemsetD8(p, v, n));
    memset(buf, 0, n);
    CHECK_CU(cuMemcpyDtoH(buf, p, n));
    for (size_t i = 0; i < n; i += 4093)
        CHECK_EQ(buf[i], v);
    CHECK_EQ(buf[n - 1], v);
    free(buf);
}

static void pointer_attributes(CUdeviceptr p)
{
    unsigned int type = 0;
    int ordinal = -1;
    CUdeviceptr base = 0;
    size_t range = 0;
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    CHECK_EQ(ordinal, 0);
    /* The allocation the driver knows is the mapped granule, not our block. */
    CHECK_CU(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
    CHECK_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    CHECK_LE(base, p);
    CHECK_LT(p, base + range);
}

static void basics(void)
{
    CUcontext ctx = NULL;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxGetCurrent(&ctx));
    CHECK(ctx == NULL);
    CHECK(cf_arena_enabled());
    CHECK_CU(cuCtxGetCurrent(&ctx)); /* the arena made the primary context current */
    CHECK(ctx != NULL);

    CUdeviceptr a = 0, b = 0;
    uint64_t granted = 0;
    CHECK_CU(cf_arena_alloc(&a, 1000, NULL, false, &granted));
    CHECK_EQ(granted, 1024);
    CHECK_EQ(a % 256, 0);
    CHECK(cf_arena_owns(a));
    CHECK(!cf_arena_owns(0x1000));
    fill_and_verify(a, 1000, 0x5a);
    pointer_attributes(a);

    CHECK_CU(cf_arena_alloc(&b, 100 * MiB + 7, NULL, false, &granted));
    CHECK_EQ(granted, 100 * MiB + 256);
    CHECK(b >= a + 1024 || b + granted <= a);
    fill_and_verify(b, 100 * MiB + 7, 0xc3);
    pointer_attributes(b + 99 * MiB);

    CHECK_EQ(cf_arena_alloc(&b, 0, NULL, false, &granted), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_EQ(cf_arena_free(a + 256, NULL, false), CUDA_ERROR_INVALID_VALUE); /* interior */
    /* A stream-ordered free of a synchronous allocation is refused; the block stays live. */
    CHECK_EQ(cf_arena_free(a, NULL, true), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cf_arena_refused_ptr(a), a); /* VMM: the driver holds nothing to free there */
    struct cf_arena_block blk;
    CHECK(cf_arena_find_block(b + 99 * MiB, &blk));
    CHECK_EQ(blk.base, b);
    CHECK_EQ(blk.size, 100 * MiB + 7);
    CHECK(cf_arena_find_block(a + 999, &blk));
    CHECK(!cf_arena_find_block(a + 1000, &blk)); /* past the bytes asked for */
    CHECK_CU(cf_arena_free(a, NULL, false));
    CHECK_EQ(cf_arena_free(a, NULL, false), CUDA_ERROR_INVALID_VALUE); /* double free */
    CHECK(!cf_arena_find_block(a, &blk));
    CHECK_EQ(cf_arena_free(0x1234, NULL, false), CUDA_ERROR_INVALID_VALUE);

    struct cf_arena_stats s;
    cf_arena_get_stats(&s, NULL);
    CHECK(s.active && s.vmm && !s.shadow);
    CHECK_EQ(s.allocs_served, 2);
    CHECK_EQ(s.frees_served, 1);
    CHECK_EQ(s.live_now, 100 * MiB + 256);
    CHECK_GE(s.mapped_now, s.live_now);
    CHECK_LT(s.mapped_now - s.live_now, 4 * MiB); /* granule rounding only */
    /* Each part reserves the device's memory (SIMCUDA_MEM) of address space. */
    CHECK_LT(0, s.peak_reserved);
    CHECK_EQ(s.peak_reserved % (16ull << 30), 0);
    CHECK_LT(0, s.driver_calls);
    CHECK_LT(0, s.ns_in_alloc);
    CHECK_LT(0, s.ns_in_free);
    /* The driver's view: exactly what the arena mapped is held by VMM handles. */
    struct simcuda_stats sim;
    CHECK_EQ(simcudaGetStats(0, &sim), 0);
    CHECK_EQ(sim.vmm_physical, s.mapped_now);
    CHECK_CU(cf_arena_free(b, NULL, false));
    /* The interior lookup found b before: freed, it is no allocation any more. */
    CHECK(!cf_arena_find_block(b + 99 * MiB, &blk));
}

/* With slack 0 the arena gives back every idle granule after its batch sync. */
static void trimming(void)
{
    CUdeviceptr p[8];
    for (int i = 0; i < 8; i++)
        CHECK_CU(cf_arena_alloc(&p[i], 8 * MiB, NULL, false, NULL));
    struct cf_arena_stats s;
    cf_arena_get_stats(&s, NULL);
    uint64_t mapped = s.mapped_now;
    CHECK_GE(mapped, 64 * MiB);
    /* Each 8 MiB free passes the 4 MiB quarantine bound and drains. */
    for (int i = 0; i < 8; i++)
        CHECK_CU(cf_arena_free(p[i], NULL, false));
    cf_arena_get_stats(&s, NULL);
    CHECK_EQ(s.live_now, 0);
    CHECK_EQ(s.mapped_now, 0);
    CHECK_LT(0, s.granules_unmapped);
    struct simcuda_stats sim;
    CHECK_EQ(simcudaGetStats(0, &sim), 0);
    CHECK_EQ(sim.vmm_physical, 0);
}

/* Allocations made while a stream is being captured belong to the graph:
 * the arena declines them so the hook passes them through. */
static void capture_passes_through(void)
{
    CUstream s;
    CUdeviceptr p = 0;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cf_arena_alloc(&p, MiB, s, true, NULL), CUDA_ERROR_NOT_SUPPORTED);
    CUgraph g;
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cf_arena_alloc(&p, MiB, s, true, NULL));
    CHECK_CU(cf_arena_free(p, s, true));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
}

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "0", 1);
    cf_config_reload();
    basics();
    trimming();
    capture_passes_through();
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
