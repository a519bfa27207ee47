/* The arena's footprint rules on the simulated device: memory freed but not
 * yet synchronised, or mapped and idle, never makes the mapped peak rise;
 * threads that do not allocate at the same time share one part; the peak of
 * live memory is the device's concurrent one. */
#include "arena/arena.h"
#include "arena_test.h"
#include "check.h"
#include "config/config.h"
#include "cuda_setup.h"

#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>

static CUdeviceptr alloc(uint64_t size)
{
    CUdeviceptr p = 0;
    CHECK_CU(cf_arena_alloc(&p, size, NULL, false, NULL));
    return p;
}

/* A 3 MiB block freed synchronously waits for a device synchronisation; a
 * second 3 MiB block would otherwise be placed behind it and need a third
 * granule. */
static void drain_before_raising_peak(void)
{
    CUdeviceptr x = alloc(3 * MiB);
    CHECK_CU(cf_arena_free(x, NULL, false));
    CUdeviceptr y = alloc(3 * MiB);
    CHECK_EQ(y, x); /* the quarantine was drained and the block reused */
    struct cf_arena_stats s = arena_stats();
    CHECK_EQ(s.peak_mapped, 4 * MiB);
    CHECK_EQ(s.peak_live, 3 * MiB);
    CHECK_CU(cf_arena_free(y, NULL, false));
}

/* Granules freed below the slack stay mapped, but before the arena grows past
 * its peak it gives them back. */
static void trim_before_raising_peak(void)
{
    CUdeviceptr b[4];
    for (int i = 0; i < 4; i++)
        b[i] = alloc(2 * MiB); /* 8 MiB: the 4 MiB mapped so far and 2 granules more */
    CHECK_EQ(arena_stats().peak_mapped, 8 * MiB);
    CHECK_CU(cf_arena_free(b[0], NULL, false));
    CHECK_CU(cf_arena_free(b[1], NULL, false));
    uint64_t unmapped = arena_stats().granules_unmapped;
    CUdeviceptr e = alloc(6 * MiB); /* the 4 MiB hole is too small */
    struct cf_arena_stats s = arena_stats();
    CHECK_EQ(s.granules_unmapped, unmapped + 2);
    CHECK_EQ(s.mapped_now, 10 * MiB);
    CHECK_EQ(s.peak_mapped, 10 * MiB); /* 14 MiB if the hole stayed mapped */
    CHECK_EQ(s.peak_live, 10 * MiB);
    CHECK_EQ(cf_arena_check(), 0);
    CHECK_CU(cf_arena_free(e, NULL, false));
    CHECK_CU(cf_arena_free(b[2], NULL, false));
    CHECK_CU(cf_arena_free(b[3], NULL, false));
}

struct job {
    CUcontext ctx;
    CUdeviceptr p;
};

static void *one_block(void *arg)
{
    struct job *j = arg;
    CHECK_CU(cuCtxSetCurrent(j->ctx));
    j->p = alloc(16 * MiB);
    CHECK_CU(cf_arena_free(j->p, NULL, false));
    return NULL;
}

/* Two threads one after the other: both allocate from part 0 (each part has
 * its own range of CUDAFRAG_ARENA_RESERVE = 1 GiB), and the live peak is one
 * block's, not the sum of two. */
static void sequential_threads_share_a_part(CUcontext ctx)
{
    struct job j[2] = {{ctx, 0}, {ctx, 0}};
    for (int i = 0; i < 2; i++) {
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, one_block, &j[i]), 0);
        CHECK_EQ(pthread_join(t, NULL), 0);
    }
    uint64_t d = j[0].p > j[1].p ? j[0].p - j[1].p : j[1].p - j[0].p;
    CHECK_LT(d, 1024 * MiB);
    CHECK_EQ(arena_stats().peak_live, 16 * MiB);
}

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "64M", 1);
    setenv("CUDAFRAG_ARENA_RESERVE", "1G", 1);
    cf_config_reload();
    CUcontext ctx = cf_test_primary_context(0);
    CHECK(cf_arena_enabled());
    drain_before_raising_peak();
    trim_before_raising_peak();
    sequential_threads_share_a_part(ctx);
    CHECK_EQ(cf_arena_check(), 0);
    return 0;
}
