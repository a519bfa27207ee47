/* Many threads allocating, filling, checking and freeing at once, each on
 * its own stream and through both allocators: the data each thread reads
 * back is its own, and all memory returns. */
#include "simtest.h"

#include <pthread.h>

#define THREADS 8
#define ROUNDS  200

static CUcontext ctx;
static CUdeviceptr exit_buf[THREADS + 1];

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CUstream s;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned char value = (unsigned char)(uintptr_t)arg;
    unsigned char back[64];
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t size = 64 + (seed >> 8) % (3 * MiB);
        CUdeviceptr p;
        int pooled = i % 2;
        if (pooled)
            CHECK_CU(cuMemAllocAsync(&p, size, s));
        else
            CHECK_CU(cuMemAlloc(&p, size));
        CHECK_CU(cuMemsetD8Async(p, value, size, s));
        CHECK_CU(cuMemcpyDtoHAsync(back, p + size - sizeof back, sizeof back, s));
        CHECK_CU(cuStreamSynchronize(s));
        for (size_t k = 0; k < sizeof back; k++)
            CHECK_EQ(back[k], value);
        if (pooled)
            CHECK_CU(cuMemFreeAsync(p, s));
        else
            CHECK_CU(cuMemFree(p));
    }
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    /* Left queued on the per-thread default stream: runs at thread exit
     * (or earlier, when another thread's cuMemFree synchronizes the device). */
    CHECK_CU(cuMemsetD8Async(exit_buf[value], value, 4096, CU_STREAM_PER_THREAD));
    return NULL;
}

int main(void)
{
    ctx = sim_setup(0);
    size_t free0 = sim_free_mem();
    for (int i = 1; i <= THREADS; i++) {
        CHECK_CU(cuMemAlloc(&exit_buf[i], 4096));
        CHECK_CU(cuMemsetD8(exit_buf[i], 0, 4096));
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    /* Read through a non-blocking stream, which orders after nothing: the
     * data is there (and no hazard is seen) only if the exiting threads ran
     * their per-thread streams. */
    CUstream reader;
    CHECK_CU(cuStreamCreate(&reader, CU_STREAM_NON_BLOCKING));
    unsigned char seen[THREADS + 1];
    for (int i = 1; i <= THREADS; i++)
        CHECK_CU(cuMemcpyDtoHAsync(&seen[i], exit_buf[i] + 4095, 1, reader));
    CHECK_CU(cuStreamSynchronize(reader));
    for (int i = 1; i <= THREADS; i++)
        CHECK_EQ(seen[i], i);
    CHECK_EQ(simcudaHazardCount(), 0);
    CHECK_CU(cuStreamDestroy(reader));
    for (int i = 1; i <= THREADS; i++)
        CHECK_CU(cuMemFree(exit_buf[i]));
    CHECK_CU(cuCtxSynchronize());
    CUmemoryPool pool;
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(sim_free_mem(), free0);
    struct simcuda_stats st = sim_stats(0);
    CHECK_EQ(st.alloc_calls, THREADS * ROUNDS + THREADS);
    CHECK_EQ(st.free_calls, THREADS * ROUNDS + THREADS);
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
