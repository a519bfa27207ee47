/* The completion model: queued work runs only at synchronization points,
 * in stream order, with cross-stream dependencies from events and the
 * implicit ordering of the legacy default stream. */
#include "simtest.h"

static int order[16];
static int norder;

static void CUDA_CB note(void *arg)
{
    order[norder++] = (int)(intptr_t)arg;
}

int main(void)
{
    sim_setup(0);
    CUstream a, b, blocking;
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&blocking, 0));
    unsigned flags;
    CHECK_CU(cuStreamGetFlags(a, &flags));
    CHECK_EQ(flags, CU_STREAM_NON_BLOCKING);

    /* Nothing runs until someone waits; each stream runs in its order. */
    CHECK_CU(cuLaunchHostFunc(a, note, (void *)1));
    CHECK_CU(cuLaunchHostFunc(b, note, (void *)2));
    CHECK_CU(cuLaunchHostFunc(a, note, (void *)3));
    CHECK_EQ(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
    CHECK_EQ(norder, 0); /* a query does not run work */
    CHECK_CU(cuStreamSynchronize(b));
    CHECK_EQ(norder, 1);
    CHECK_EQ(order[0], 2);
    CHECK_CU(cuStreamSynchronize(a));
    CHECK_EQ(norder, 3);
    CHECK_EQ(order[1], 1);
    CHECK_EQ(order[2], 3);
    CHECK_CU(cuStreamQuery(a));

    /* An event wait makes b's work run after a's work before the record. */
    CUevent ev;
    CHECK_CU(cuEventCreate(&ev, 0));
    norder = 0;
    CHECK_CU(cuLaunchHostFunc(a, note, (void *)10));
    CHECK_CU(cuEventRecord(ev, a));
    CHECK_CU(cuLaunchHostFunc(a, note, (void *)11));
    CHECK_CU(cuStreamWaitEvent(b, ev, 0));
    CHECK_CU(cuLaunchHostFunc(b, note, (void *)20));
    CHECK_CU(cuStreamSynchronize(b));
    CHECK_EQ(norder, 2);
    CHECK_EQ(order[0], 10);
    CHECK_EQ(order[1], 20);
    CHECK_EQ(cuStreamQuery(a), CUDA_ERROR_NOT_READY); /* 11 is still queued */
    CHECK_CU(cuEventQuery(ev));                       /* already complete */
    CHECK_CU(cuCtxSynchronize());
    CHECK_EQ(norder, 3);
    CHECK_EQ(order[2], 11);

    /* Data moves only when the work runs; an event query runs it. */
    CUdeviceptr buf;
    CHECK_CU(cuMemAlloc(&buf, 4096));
    CHECK_CU(cuMemsetD8(buf, 0, 4096));
    unsigned char host[64];
    memset(host, 0xee, sizeof host);
    CHECK_CU(cuMemsetD8Async(buf, 7, 4096, a));
    CHECK_CU(cuMemcpyDtoHAsync(host, buf, sizeof host, a));
    CHECK_CU(cuEventRecord(ev, a));
    CHECK_EQ(host[0], 0xee);
    CHECK_CU(cuEventQuery(ev));
    CHECK_EQ(host[0], 7);
    CHECK_EQ(host[63], 7);
    float ms = -1;
    CHECK_CU(cuEventElapsedTime(&ms, ev, ev));
    CHECK(ms == 0.0f);

    /* A synchronous call on the legacy stream drains blocking streams
     * first, but not non-blocking ones. */
    CHECK_CU(cuMemsetD8Async(buf, 9, 4096, blocking));
    CUdeviceptr side;
    CHECK_CU(cuMemAlloc(&side, 16));
    CHECK_CU(cuMemsetD8Async(side, 5, 16, b));
    CHECK_CU(cuMemcpyDtoH(host, buf, sizeof host));
    CHECK_EQ(host[0], 9);
    CHECK_CU(cuStreamQuery(blocking));
    CHECK_EQ(cuStreamQuery(b), CUDA_ERROR_NOT_READY);

    /* cuMemFree synchronizes the device before freeing. */
    CUdeviceptr other;
    CHECK_CU(cuMemAlloc(&other, 64));
    CHECK_CU(cuMemFree(other));
    CHECK_CU(cuStreamQuery(b));

    /* Async work on the legacy stream waits for earlier blocking work. */
    norder = 0;
    CHECK_CU(cuLaunchHostFunc(blocking, note, (void *)30));
    CHECK_CU(cuLaunchHostFunc(NULL, note, (void *)31));
    CHECK_CU(cuStreamSynchronize(NULL));
    CHECK_EQ(norder, 2);
    CHECK_EQ(order[0], 30);
    CHECK_EQ(order[1], 31);

    /* The per-thread default stream is its own stream. */
    CHECK_CU(cuLaunchHostFunc(CU_STREAM_PER_THREAD, note, (void *)40));
    CHECK_EQ(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
    CHECK_CU(cuStreamQuery(a));
    CHECK_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CHECK_EQ(norder, 3);
    CHECK_EQ(order[2], 40);

    /* Handles are checked. */
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuStreamDestroy(a));
    CHECK_EQ(cuStreamDestroy(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuStreamDestroy(b));
    CHECK_CU(cuStreamDestroy(blocking));
    CHECK_CU(cuMemFree(buf));
    CHECK_CU(cuMemFree(side));
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
