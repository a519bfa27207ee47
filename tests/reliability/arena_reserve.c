/* Sixteen live allocations of 1 MiB (a 16 MiB peak), then all freed: more than
 * a small CUDAFRAG_ARENA_RESERVE holds. */
#include "check.h"

#include <cuda_runtime_api.h>

#define N 16

int main(void)
{
    void *p[N];
    for (int i = 0; i < N; i++)
        CHECK_CU(cudaMalloc(&p[i], 1 << 20));
    for (int i = 0; i < N; i++)
        CHECK_CU(cudaFree(p[i]));
    return 0;
}
