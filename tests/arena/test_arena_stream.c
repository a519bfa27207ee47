/* Stream-order safety on the simulated device, which counts a hazard whenever
 * work queued on one stream touches memory that pending work of another stream
 * uses without a dependency. The arena must never cause one; the raw TLSF
 * without the arena's protection does (negative control), so the check bites. */
#include "arena/arena.h"
#include "arena/tlsf.h"
#include "check.h"
#include "config/config.h"
#include "cuda_setup.h"
#include "simcuda.h"

#include <cuda.h>
#include <stdlib.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

static CUstream sa, sb;

static CUdeviceptr arena_alloc(uint64_t size, CUstream s, bool async)
{
    CUdeviceptr p = 0;
    CHECK_CU(cf_arena_alloc(&p, size, s, async, NULL));
    return p;
}

/* Only one large enough block is left and it was freed on A with A's work
 * still pending: B may have it only once A passed the free (event) or behind
 * a wait on A. The 64 small holes are examined first (one polling pass), so
 * the big block is left to the wait path. */
static void reuse_behind_a_wait(void)
{
    CUdeviceptr keep[64], hole[64];
    for (int i = 0; i < 64; i++) {
        keep[i] = arena_alloc(64 * KiB, sa, true);
        hole[i] = arena_alloc(64 * KiB, sa, true);
    }
    CUdeviceptr big = arena_alloc(8 * MiB, sa, true); /* the reserve (16 MiB) is full now */
    for (int i = 0; i < 64; i++) {
        CHECK_CU(cuMemsetD8Async(hole[i], 1, 64 * KiB, sa));
        CHECK_CU(cf_arena_free(hole[i], sa, true));
    }
    CHECK_CU(cuMemsetD8Async(big, 1, 8 * MiB, sa));
    CHECK_CU(cf_arena_free(big, sa, true));
    /* Small holes cannot hold 8 MiB: the arena must hand out big, safely. */
    CUdeviceptr q = arena_alloc(8 * MiB, sb, true);
    CHECK_EQ(q, big);
    CHECK_CU(cuMemsetD8Async(q, 2, 8 * MiB, sb));
    CHECK_EQ(simcudaHazardCount(), 0);
    CHECK_CU(cf_arena_free(q, sb, true));
    for (int i = 0; i < 64; i++)
        CHECK_CU(cf_arena_free(keep[i], sa, true));
    CHECK_CU(cuCtxSynchronize());
}

/* A stream-ordered free followed by an allocation on another stream. */
static void cross_stream(void)
{
    for (int round = 0; round < 64; round++) {
        CUdeviceptr p = arena_alloc(MiB, sa, true);
        CHECK_CU(cuMemsetD8Async(p, 3, MiB, sa));
        CHECK_CU(cf_arena_free(p, sa, true));
        CUdeviceptr q = arena_alloc(MiB, sb, true);
        CHECK_CU(cuMemsetD8Async(q, 4, MiB, sb));
        CHECK_CU(cf_arena_free(q, sb, true));
    }
    CHECK_EQ(simcudaHazardCount(), 0);
}

/* cudaFree semantics: after a synchronous free the memory may go to any
 * stream, so it must wait for the arena's batched synchronisation. */
static void synchronous_free(void)
{
    for (int round = 0; round < 64; round++) {
        CUdeviceptr p = arena_alloc(64 * KiB, NULL, false);
        CHECK_CU(cuMemsetD8Async(p, 5, 64 * KiB, sa));
        CHECK_CU(cf_arena_free(p, NULL, false));
        CUdeviceptr q = arena_alloc(64 * KiB, NULL, false);
        CHECK_CU(cuMemsetD8Async(q, 6, 64 * KiB, sb));
        CHECK_CU(cf_arena_free(q, NULL, false));
    }
    CHECK_EQ(simcudaHazardCount(), 0);
    CHECK_CU(cuCtxSynchronize());
}

/* Negative control: the same pattern on a bare TLSF over driver memory hands
 * the block straight to stream B and the simulator reports it. */
static void bare_tlsf_is_unsafe(void)
{
    CUdeviceptr base;
    CHECK_CU(cuMemAlloc(&base, 4 * MiB));
    struct tlsf t;
    CHECK_EQ(tlsf_init(&t), 0);
    CHECK_EQ(tlsf_add_region(&t, base, 4 * MiB), 0);
    struct tlsf_block *x = tlsf_alloc(&t, MiB);
    uint64_t xaddr = x->addr;
    CHECK_CU(cuMemsetD8Async(xaddr, 7, MiB, sa));
    tlsf_free(&t, x);
    struct tlsf_block *y = tlsf_alloc(&t, MiB);
    CHECK_EQ(y->addr, xaddr);
    CHECK_CU(cuMemsetD8Async(y->addr, 8, MiB, sb));
    CHECK_LT(0, simcudaHazardCount());
    CHECK_CU(cuCtxSynchronize());
    tlsf_destroy(&t);
    CHECK_CU(cuMemFree(base));
}

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_ASYNC", "1", 1);
    setenv("CUDAFRAG_ARENA_RESERVE", "16M", 1);
    cf_config_reload();
    cf_test_primary_context(0);
    CHECK_CU(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
    CHECK(cf_arena_async_enabled());
    reuse_behind_a_wait();
    cross_stream();
    synchronous_free();
    CHECK_EQ(cf_arena_check(), 0);
    bare_tlsf_is_unsafe();
    return 0;
}
