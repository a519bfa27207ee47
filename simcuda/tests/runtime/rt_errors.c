/* Driver errors become runtime errors, and every failure is kept as the
 * thread's last error until cudaGetLastError reads it. Runs with a small
 * simulated device (SIMCUDA_MEM) so that allocations run out. */
#include "rt_test.h"

#include <pthread.h>

static void check_oom_is_sticky(void)
{
    size_t free_b = 0, total_b = 0;
    CHECK_RT(cudaMemGetInfo(&free_b, &total_b));
    CHECK_LE(total_b, 1024 * MIB);

    void *p = (void *)1;
    CHECK_EQ(cudaMalloc(&p, total_b + 64 * MIB), cudaErrorMemoryAllocation);
    CHECK(p == NULL);
    CHECK_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    /* A success in between does not clear it. */
    void *ok = NULL;
    CHECK_RT(cudaMalloc(&ok, 1 * MIB));
    CHECK_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_RT(cudaFree(ok));

    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_EQ(cudaMallocAsync(&p, total_b + 64 * MIB, s), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaStreamDestroy(s));
}

static void check_mapping(void)
{
    int on_stack = 0;
    CHECK_EQ(cudaFree(&on_stack), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(&on_stack, &on_stack, 4, (enum cudaMemcpyKind)42),
             cudaErrorInvalidMemcpyDirection);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
    CHECK_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);

    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaStreamDestroy(s));
    enum cudaStreamCaptureStatus status;
    CHECK_RT(cudaStreamIsCapturing(NULL, &status));
    CHECK_EQ(status, cudaStreamCaptureStatusNone);
    cudaGraph_t graph = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_EQ(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
    CHECK_EQ(cudaGetLastError(), cudaErrorIllegalState);
    CHECK_RT(cudaStreamDestroy(s));
}

/* A query that finds pending work answers cudaErrorNotReady without making it
 * the last error; capture errors keep their own codes. */
static void check_queries(void)
{
    cudaStream_t s = NULL;
    void *d = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaMalloc(&d, 1 * MIB));
    CHECK_RT(cudaMemsetAsync(d, 1, 1 * MIB, s));
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaPeekAtLastError(), cudaSuccess);
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaStreamQuery(s));

    CHECK_RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_EQ(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    cudaGraph_t graph = NULL;
    cudaStreamEndCapture(s, &graph);
    if (graph != NULL) CHECK_RT(cudaGraphDestroy(graph));
    cudaGetLastError();
    CHECK_RT(cudaFree(d));
    CHECK_RT(cudaStreamDestroy(s));
}

static void check_texts(void)
{
    CHECK_STR(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    CHECK_STR(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    CHECK_STR(cudaGetErrorName(cudaSuccess), "cudaSuccess");
    CHECK_STR(cudaGetErrorName(cudaErrorStreamCaptureInvalidated),
              "cudaErrorStreamCaptureInvalidated");
    CHECK_STR(cudaGetErrorString((cudaError_t)123456), "unrecognized error code");
}

/* The last error belongs to the thread that failed. */
static void *fail_on_other_thread(void *arg)
{
    void *p = NULL;
    *(cudaError_t *)arg = cudaMalloc(&p, (size_t)1 << 50);
    return NULL;
}

static void check_per_thread(void)
{
    pthread_t t;
    cudaError_t seen = cudaSuccess;
    CHECK_EQ(pthread_create(&t, NULL, fail_on_other_thread, &seen), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(seen, cudaErrorMemoryAllocation);
    CHECK_EQ(cudaPeekAtLastError(), cudaSuccess);
}

int main(void)
{
    check_oom_is_sticky();
    check_mapping();
    check_queries();
    check_texts();
    check_per_thread();
    return 0;
}
