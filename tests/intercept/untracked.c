/* After a library is loaded with RTLD_DEEPBIND, calls could switch contexts or
 * begin captures past cudafrag's wrappers: from then on cudafrag asks the driver
 * again on every call instead of trusting what it kept. Allocations are still
 * recorded on the right device and pool, and captures are still seen. */
#include "intercept.h"

#include <cuda_runtime_api.h>

#define PAIRS 32

typedef long long (*live_fn)(int);
typedef unsigned long long (*call_count_fn)(const char *);

int main(void)
{
    live_fn live = (live_fn)dlsym(RTLD_DEFAULT, "cudafrag_live_bytes");
    CHECK(live != NULL);
    CHECK_CU(cudaSetDevice(0)); /* loads libcuda */
    call_count_fn call_count = (call_count_fn)dlsym(RTLD_DEFAULT, "simcudaCallCount");
    if (call_count == NULL) return 77;
    CHECK(call_count("cuStreamIsCapturing") != ~0ull); /* SIMCUDA_COUNT_CALLS=1 */
    cudaStream_t s;
    CHECK_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *p;

    void *lib = dlopen("libm.so.6", RTLD_NOW | RTLD_DEEPBIND);
    CHECK(lib != NULL);
    unsigned long long capture_q = call_count("cuStreamIsCapturing");
    unsigned long long device_q = call_count("cuStreamGetDevice");
    for (int i = 0; i < PAIRS; i++) {
        long long before = live(0);
        CHECK_CU(cudaMallocAsync(&p, 4096, s));
        CHECK_EQ(live(0), before + 4096);
        CHECK_CU(cudaFreeAsync(p, s));
    }
    CHECK_CU(cudaStreamSynchronize(s));
    /* At least once per allocation (the record layer may sample on top). */
    CHECK_GE(call_count("cuStreamIsCapturing") - capture_q, PAIRS);
    CHECK_GE(call_count("cuStreamGetDevice") - device_q, PAIRS);

    long long before = live(0);
    cudaGraph_t g = NULL;
    CHECK_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_CU(cudaMallocAsync(&p, 1 << 20, s));
    CHECK_EQ(live(0), before);
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_CU(cudaGraphDestroy(g));
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
