/* When the address range cannot be reserved (here: a reserve far beyond the
 * simulated device's address space), the arena falls back to cuMemAlloc chunks,
 * says so in its statistics, and still serves, frees and trims correctly. */
#include "arena/arena.h"
#include "check.h"
#include "config/config.h"
#include "simcuda.h"

#include <cuda.h>
#include <stdlib.h>

#define MiB ((uint64_t)1 << 20)

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_RESERVE", "64T", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "0", 1);
    cf_config_reload();
    CHECK_CU(cuInit(0));
    CHECK(cf_arena_enabled());

    CUdeviceptr small[64], big;
    for (int i = 0; i < 64; i++)
        CHECK_CU(cf_arena_alloc(&small[i], 100 << 10, NULL, false, NULL));
    CHECK_CU(cf_arena_alloc(&big, 100 * MiB, NULL, false, NULL)); /* larger than a chunk */
    for (int i = 0; i < 64; i++) {
        CHECK(cf_arena_owns(small[i]));
        CHECK_CU(cuMemsetD8(small[i], (unsigned char)i, 100 << 10));
    }
    CHECK_CU(cuMemsetD8(big, 0xee, 100 * MiB));
    unsigned char v = 0;
    CHECK_CU(cuMemcpyDtoH(&v, small[17] + 1000, 1));
    CHECK_EQ(v, 17);
    unsigned int type = 0;
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, big + 5 * MiB));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);

    struct cf_arena_stats s;
    cf_arena_get_stats(&s, NULL);
    CHECK(s.active);
    CHECK(!s.vmm);
    CHECK_EQ(s.allocs_served, 65);
    CHECK_GE(s.mapped_now, 100 * MiB + 64 * (100 << 10));
    CHECK_EQ(cf_arena_check(), 0);

    /* A stale pointer into a chunk stays the arena's: handed to the driver's
     * cuMemFree, the chunk's first block would free the whole chunk. A refused
     * free is answered through an address that is no device memory. */
    CHECK_CU(cf_arena_free(small[0], NULL, false));
    CHECK(cf_arena_owns(small[0]));
    CHECK_EQ(cf_arena_free(small[0], NULL, false), CUDA_ERROR_INVALID_VALUE);
    CHECK(cf_arena_refused_ptr(small[0]) != small[0]);
    CHECK_EQ(cuMemFree(cf_arena_refused_ptr(small[0])), CUDA_ERROR_INVALID_VALUE);
    /* A stream-ordered free of a synchronous allocation is refused; it stays live. */
    CHECK_EQ(cf_arena_free(small[1], NULL, true), CUDA_ERROR_INVALID_VALUE);
    struct cf_arena_block blk;
    CHECK(cf_arena_find_block(small[1] + 1000, &blk));
    CHECK_EQ(blk.base, small[1]);
    CHECK_EQ(blk.size, 100 << 10);
    CHECK(!cf_arena_find_block(small[0], &blk));
    for (int i = 1; i < 64; i++)
        CHECK_CU(cf_arena_free(small[i], NULL, false));
    CHECK_CU(cf_arena_free(big, NULL, false));
    CHECK_EQ(cf_arena_free(big, NULL, false), CUDA_ERROR_INVALID_VALUE);
    CHECK(!cf_arena_owns(big));
    /* Slack 0: wholly free chunks go back to the driver. */
    cf_arena_get_stats(&s, NULL);
    CHECK_EQ(s.live_now, 0);
    CHECK_EQ(s.mapped_now, 0);
    CHECK_EQ(cf_arena_check(), 0);
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
