/* Out of device memory (64 MiB simulated device, 1 GiB reserve): the arena
 * first gives back idle granules and retries, and only then reports
 * CUDA_ERROR_OUT_OF_MEMORY -- without crashing and still consistent. */
#include "arena/arena.h"
#include "check.h"
#include "config/config.h"
#include "simcuda.h"

#include <cuda.h>
#include <stdlib.h>

#define MiB ((uint64_t)1 << 20)

int main(void)
{
    setenv("SIMCUDA_MEM", "64M", 1);
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_RESERVE", "1G", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "64M", 1); /* idle granules stay mapped until needed */
    cf_config_reload();
    CHECK_CU(cuInit(0));
    CHECK(cf_arena_enabled());

    CUdeviceptr a, s, b, c;
    CHECK_CU(cf_arena_alloc(&a, 40 * MiB, NULL, false, NULL));
    CHECK_CU(cf_arena_alloc(&s, MiB, NULL, false, NULL));
    CHECK_CU(cf_arena_free(a, NULL, false)); /* its granules stay mapped (slack) */

    /* 50 MiB does not fit beside a's 40 MiB of mapped granules: only after
     * unmapping them does the device have room. */
    CHECK_CU(cf_arena_alloc(&b, 50 * MiB, NULL, false, NULL));
    struct cf_arena_stats st;
    cf_arena_get_stats(&st, NULL);
    CHECK_EQ(st.ooms, 0);
    CHECK_GE(st.granules_unmapped, 20);
    CHECK_LE(st.mapped_now, 64 * MiB);

    /* More than the device has: out of memory, after trimming. */
    CHECK_EQ(cf_arena_alloc(&c, 100 * MiB, NULL, false, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(cf_arena_alloc(&c, 20 * MiB, NULL, false, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    cf_arena_get_stats(&st, NULL);
    CHECK_EQ(st.ooms, 2);
    CHECK_EQ(cf_arena_check(), 0);

    /* The failures left nothing behind: after freeing b the space is usable. */
    CHECK_CU(cf_arena_free(b, NULL, false));
    CHECK_CU(cf_arena_alloc(&c, 60 * MiB, NULL, false, NULL));
    CHECK_CU(cuMemsetD8(c, 1, 60 * MiB));
    CHECK_CU(cf_arena_free(c, NULL, false));
    CHECK_CU(cf_arena_free(s, NULL, false));
    cf_arena_get_stats(&st, NULL);
    CHECK_EQ(st.live_now, 0);
    CHECK_EQ(cf_arena_check(), 0);
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
