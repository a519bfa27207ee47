/* cudafrag asks the driver whether a stream is capturing only while a capture it saw
 * begin has not ended. Every capture must still be seen, whichever way it began:
 * the runtime or the driver API, a non-blocking or the per-thread default stream
 * (also reached through a _ptsz entry point with stream 0), global or relaxed mode,
 * on this thread or another. A captured allocation is a graph allocation: it does
 * not count in the device's live bytes. Failed begins, invalidated captures and
 * unmatched ends must leave no capture counted: afterwards a steady loop makes no
 * cuStreamIsCapturing call at all. */
#include "intercept.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <pthread.h>

#define MIB (1 << 20)

typedef cudaError_t (*malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*free_async_fn)(void *, cudaStream_t);

static malloc_async_fn malloc_async_ptsz;
static free_async_fn free_async_ptsz;
static PFN_cuStreamBeginCapture_v10010 drv_begin;
static PFN_cuStreamEndCapture_v10000 drv_end;
static PFN_cuMemAllocAsync_v11020 drv_alloc_async;
static PFN_cuMemFreeAsync_v11020 drv_free_async;
static cudaStream_t s, other;

static unsigned long long capture_queries(void)
{
    return sim_calls("cuStreamIsCapturing");
}

static void pair_on_s(void)
{
    void *p;
    CHECK_CU(cudaMallocAsync(&p, 4096, s));
    CHECK_CU(cudaFreeAsync(p, s));
}

/* No capture counted: allocations on a stream make no capture query. The first
 * pair is not counted: it may take the record layer's first samples of the device
 * and the pool, which ask for the capture state themselves (CUDAFRAG_SAMPLE_MS
 * keeps later ones out). */
static void expect_none_counted(const char *after)
{
    pair_on_s();
    unsigned long long q = capture_queries();
    for (int i = 0; i < 16; i++)
        pair_on_s();
    CHECK_CU(cudaStreamSynchronize(s));
    if (capture_queries() != q) {
        fprintf(stderr, "after %s a capture is still counted: %llu capture queries\n", after,
                capture_queries() - q);
        exit(1);
    }
}

static void end_ok(cudaStream_t stream)
{
    cudaGraph_t g = NULL;
    CHECK_CU(cudaStreamEndCapture(stream, &g));
    CHECK(g != NULL);
    CHECK_CU(cudaGraphDestroy(g));
}

/* The allocation made inside a capture is recorded as a graph allocation. */
static void runtime_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    long long before = live_bytes(0);
    void *p;
    CHECK_CU(cudaStreamBeginCapture(stream, mode));
    CHECK_CU(cudaMallocAsync(&p, MIB, stream));
    CHECK_EQ(live_bytes(0), before);
    CHECK_CU(cudaFreeAsync(p, stream));
    end_ok(stream);
}

/* Stream 0 through the _ptsz entry points is the per-thread default stream. */
static void ptsz_capture(void)
{
    long long before = live_bytes(0);
    void *p;
    CHECK_CU(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
    CHECK_CU(malloc_async_ptsz(&p, MIB, 0));
    CHECK_EQ(live_bytes(0), before);
    CHECK_CU(free_async_ptsz(p, 0));
    end_ok(cudaStreamPerThread);
}

static void driver_capture(void)
{
    long long before = live_bytes(0);
    CUdeviceptr d;
    CUgraph g = NULL;
    CHECK_CU(drv_begin((CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(drv_alloc_async(&d, MIB, (CUstream)s));
    CHECK_EQ(live_bytes(0), before);
    CHECK_CU(drv_free_async(d, (CUstream)s));
    CHECK_CU(drv_end((CUstream)s, &g));
    CHECK(g != NULL);
    CHECK_CU(cudaGraphDestroy((cudaGraph_t)g));
}

/* Another thread captures in global mode meanwhile: this thread's allocations on a
 * stream that is not capturing are ordinary pool allocations (and cudafrag asks
 * the driver to tell them apart); the other thread's capture survives. */
static pthread_barrier_t begun, allocated;

static void *capturing_thread(void *arg)
{
    (void)arg;
    void *p;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaStreamBeginCapture(other, cudaStreamCaptureModeGlobal));
    CHECK_CU(cudaMallocAsync(&p, MIB, other));
    pthread_barrier_wait(&begun);
    pthread_barrier_wait(&allocated);
    CHECK_CU(cudaFreeAsync(p, other));
    end_ok(other);
    return NULL;
}

static void capture_on_another_thread(void)
{
    pthread_t th;
    CHECK_EQ(pthread_barrier_init(&begun, NULL, 2), 0);
    CHECK_EQ(pthread_barrier_init(&allocated, NULL, 2), 0);
    CHECK_EQ(pthread_create(&th, NULL, capturing_thread, NULL), 0);
    pthread_barrier_wait(&begun);
    long long before = live_bytes(0);
    unsigned long long q = capture_queries();
    void *p;
    CHECK_CU(cudaMallocAsync(&p, MIB, s));
    CHECK_EQ(live_bytes(0), before + MIB);
    CHECK(capture_queries() > q);
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cudaStreamSynchronize(s));
    pthread_barrier_wait(&allocated);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

int main(void)
{
    CHECK_CU(cudaSetDevice(0));
    CHECK(capture_queries() != ~0ull); /* SIMCUDA_COUNT_CALLS=1 */
    malloc_async_ptsz = (malloc_async_fn)dlsym(RTLD_DEFAULT, "cudaMallocAsync_ptsz");
    free_async_ptsz = (free_async_fn)dlsym(RTLD_DEFAULT, "cudaFreeAsync_ptsz");
    CHECK(malloc_async_ptsz != NULL && free_async_ptsz != NULL);
    drv_begin = (PFN_cuStreamBeginCapture_v10010)driver_entry_point("cuStreamBeginCapture", 13000);
    drv_end = (PFN_cuStreamEndCapture_v10000)driver_entry_point("cuStreamEndCapture", 13000);
    drv_alloc_async = (PFN_cuMemAllocAsync_v11020)driver_entry_point("cuMemAllocAsync", 13000);
    drv_free_async = (PFN_cuMemFreeAsync_v11020)driver_entry_point("cuMemFreeAsync", 13000);
    CHECK_CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CU(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));

    /* The process's first stream-ordered allocation is a captured one: cudafrag
     * knows no pool yet and must not ask (capture_global tests the same). */
    runtime_capture(s, cudaStreamCaptureModeGlobal);
    expect_none_counted("a runtime capture");
    runtime_capture(s, cudaStreamCaptureModeRelaxed);
    expect_none_counted("a relaxed capture");
    runtime_capture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal);
    expect_none_counted("a capture of the per-thread stream");
    ptsz_capture();
    expect_none_counted("a capture through the _ptsz entry points");
    driver_capture();
    expect_none_counted("a driver capture");
    capture_on_another_thread();
    expect_none_counted("another thread's capture");

    /* The legacy stream cannot capture: the failed begin counts nothing. */
    CHECK_NE(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal), cudaSuccess);
    (void)cudaGetLastError();
    expect_none_counted("a failed begin");
    /* Beginning twice: the second fails, the first still ends the capture. */
    CHECK_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_NE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    end_ok(s);
    expect_none_counted("a second begin on a capturing stream");
    /* An unsafe call invalidates the capture; its end still ends it. */
    void *p;
    cudaGraph_t g = NULL;
    CHECK_CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_NE(cudaMalloc(&p, 4096), cudaSuccess);
    CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    CHECK(g == NULL);
    (void)cudaGetLastError();
    expect_none_counted("an invalidated capture");
    /* An end without a capture does not count one down below zero: the next
     * capture is still seen. */
    CHECK_NE(cudaStreamEndCapture(s, &g), cudaSuccess);
    (void)cudaGetLastError();
    runtime_capture(s, cudaStreamCaptureModeGlobal);
    expect_none_counted("an unmatched end");

    CHECK_CU(cudaStreamDestroy(other));
    CHECK_CU(cudaStreamDestroy(s));
    return 0;
}
