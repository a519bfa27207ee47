/* Shared by the runtime tests: each program is built twice, against
 * libcudart.so.13 and against libcudart_static.a (RT_TEST_STATIC=1). */
#ifndef SIMRT_TEST_H
#define SIMRT_TEST_H

#include <cuda_runtime_api.h>

#include "check.h"

#define CHECK_RT(call) CHECK_EQ((call), cudaSuccess)

#define MIB (1024ull * 1024ull)

static inline struct cudaExtent rt_extent(size_t w, size_t h, size_t d)
{
    struct cudaExtent e = {.width = w, .height = h, .depth = d};
    return e;
}

/* Bytes in use on the current device, as the runtime reports them. */
static inline size_t rt_used_bytes(void)
{
    size_t free_b = 0, total_b = 0;
    CHECK_RT(cudaMemGetInfo(&free_b, &total_b));
    CHECK_LE(free_b, total_b);
    return total_b - free_b;
}

#endif
