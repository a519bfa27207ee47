/* A synchronisation of a stream by the application hands the blocks freed on
 * that stream back to every stream at once (cf_arena_stream_synchronize), so an
 * allocation on another stream is placed in their room instead of above them.
 * Without that, a block placed above memory that only waits for an event splits
 * the space once that memory comes back, and a later large block needs granules
 * the program's live memory never needed (stream_async: 44 MiB mapped for
 * 41.9 MiB live instead of 42). */
#include "arena/arena.h"
#include "arena_test.h"
#include "check.h"
#include "config/config.h"
#include "cuda_setup.h"

#include <cuda.h>
#include <stdlib.h>

static CUdeviceptr alloc_on(uint64_t size, CUstream s)
{
    CUdeviceptr p = 0;
    CHECK_CU(cf_arena_alloc(&p, size, s, true, NULL));
    return p;
}

/* 1 MiB freed on stream a, a synchronised; then 0.5 MiB and 3.5 MiB on stream
 * b: 4 MiB live fit the two granules from the arena's start. Without the rule
 * the 0.5 MiB block lands behind the pending 1 MiB one (its granule is mapped)
 * and the 3.5 MiB block after it needs a third granule: peak 6 MiB. */
static void sync_returns_stream_frees(CUstream a, CUstream b)
{
    CUdeviceptr p = alloc_on(1 * MiB, a);
    CHECK_CU(cf_arena_free(p, a, true));
    uint64_t sync_calls = arena_stats().driver_calls;
    CHECK_CU(cf_arena_stream_synchronize(a, cuStreamSynchronize));
    CHECK_EQ(arena_stats().driver_calls, sync_calls); /* no event was needed */
    CUdeviceptr s = alloc_on(MiB / 2, b);
    CHECK_EQ(s, p); /* the freed block's room, on another stream */
    CUdeviceptr l = alloc_on(7 * MiB / 2, b);
    CHECK_EQ(l, p + MiB / 2);
    struct cf_arena_stats st = arena_stats();
    CHECK_EQ(st.peak_live, 4 * MiB);
    CHECK_EQ(st.peak_mapped, 4 * MiB);
    CHECK_CU(cf_arena_free(s, b, true));
    CHECK_CU(cf_arena_free(l, b, true));
}

/* Only the synchronised stream's frees: a block freed on b stays pending
 * while a is synchronised. The allocation on a finds mapped room elsewhere (no
 * poll, which could prove the block done by an event), so it gets the block's
 * room only if the synchronisation of a wrongly took it. */
static void sync_takes_only_its_stream(CUstream a, CUstream b)
{
    CHECK_CU(cf_arena_stream_synchronize(b, cuStreamSynchronize)); /* the test above */
    CHECK_EQ(arena_stats().mapped_now, 4 * MiB);
    CUdeviceptr x = alloc_on(1 * MiB, b);
    CUdeviceptr keep = alloc_on(1 * MiB, b);
    CHECK_CU(cf_arena_free(x, b, true));
    CHECK_CU(cf_arena_stream_synchronize(a, cuStreamSynchronize));
    CUdeviceptr y = alloc_on(1 * MiB, a);
    CHECK_EQ(y, keep + 1 * MiB);
    CHECK_CU(cf_arena_stream_synchronize(b, cuStreamSynchronize));
    CUdeviceptr z = alloc_on(1 * MiB, a);
    CHECK_EQ(z, x);
    CHECK_EQ(arena_stats().peak_mapped, 4 * MiB);
    CHECK_CU(cf_arena_free(y, a, true));
    CHECK_CU(cf_arena_free(z, a, true));
    CHECK_CU(cf_arena_free(keep, b, true));
}

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_ASYNC", "1", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "64M", 1);
    setenv("CUDAFRAG_ARENA_RESERVE", "1G", 1);
    cf_config_reload();
    cf_test_primary_context(0);
    CHECK(cf_arena_enabled());
    CUstream a, b;
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    sync_returns_stream_frees(a, b);
    sync_takes_only_its_stream(a, b);
    CHECK_CU(cuCtxSynchronize());
    CHECK_EQ(cf_arena_check(), 0);
    CHECK_CU(cuStreamDestroy(a));
    CHECK_CU(cuStreamDestroy(b));
    return 0;
}
