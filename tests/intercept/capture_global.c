/* cudafrag must not invalidate a capture in global mode: the hooks of a captured
 * cudaMallocAsync (the process's first, so cudafrag knows no pool yet) may ask
 * nothing the driver counts as unsafe. The negative control shows the simulated
 * driver does invalidate a capture on such a call (here the program's own). */
#include "check.h"

#include <cuda_runtime_api.h>

static cudaError_t capture_with(cudaStream_t s, int unsafe_call)
{
    cudaGraph_t g = NULL;
    void *p = NULL;
    CHECK_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    if (unsafe_call) {
        cudaMemPool_t pool;
        (void)cudaDeviceGetDefaultMemPool(&pool, 0);
    }
    cudaError_t rc = cudaMallocAsync(&p, 1 << 20, s);
    if (rc == cudaSuccess) rc = cudaFreeAsync(p, s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    if (g) CHECK_CU(cudaGraphDestroy(g));
    (void)cudaGetLastError();
    return rc != cudaSuccess ? rc : end;
}

int main(void)
{
    cudaStream_t s;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_EQ(capture_with(s, 0), cudaSuccess);
    CHECK_NE(capture_with(s, 1), cudaSuccess);
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
