/* After a library is loaded with RTLD_DEEPBIND, calls could switch contexts or
 * begin captures past cudafrag's wrappers: from then on cudafrag asks the driver
 * again on every call instead of trusting what it kept. Allocations are still
 * recorded on the right device and pool, and captures are still seen. */
#include "intercept.h"

#include <cuda_runtime_api.h>

#define PAIRS 32

int main(void)
{
    CHECK_CU(cudaSetDevice(0));                       /* loads libcuda */
    CHECK(sim_calls("cuStreamIsCapturing") != ~0ull); /* SIMCUDA_COUNT_CALLS=1 */
    cudaStream_t s;
    CHECK_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *p;

    void *lib = dlopen("libm.so.6", RTLD_NOW | RTLD_DEEPBIND);
    CHECK(lib != NULL);
    unsigned long long capture_q = sim_calls("cuStreamIsCapturing");
    unsigned long long device_q = sim_calls("cuStreamGetDevice");
    for (int i = 0; i < PAIRS; i++) {
        long long before = live_bytes(0);
        CHECK_CU(cudaMallocAsync(&p, 4096, s));
        CHECK_EQ(live_bytes(0), before + 4096);
        CHECK_CU(cudaFreeAsync(p, s));
    }
    CHECK_CU(cudaStreamSynchronize(s));
    /* At least once per allocation (the record layer may sample on top). */
    CHECK_GE(sim_calls("cuStreamIsCapturing") - capture_q, PAIRS);
    CHECK_GE(sim_calls("cuStreamGetDevice") - device_q, PAIRS);

    long long before = live_bytes(0);
    cudaGraph_t g = NULL;
    CHECK_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CU(cudaMallocAsync(&p, 1 << 20, s));
    CHECK_EQ(live_bytes(0), before);
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_CU(cudaGraphDestroy(g));
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
