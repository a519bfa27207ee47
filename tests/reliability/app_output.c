/* A CUDA program with known output and exit status, run under bad settings: its
 * stdout, its own stderr line and its status must be what they are without
 * cudafrag. */
#include "check.h"

#include <cuda_runtime_api.h>

int main(void)
{
    void *p;
    CHECK_CU(cudaMalloc(&p, 1 << 20));
    CHECK_CU(cudaFree(p));
    CHECK_CU(cudaMalloc(&p, 4096));
    printf("app output 42\n");
    fprintf(stderr, "app stderr line\n");
    return 3;
}
