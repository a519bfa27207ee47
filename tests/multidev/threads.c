/* One thread per device, allocating at the same time: the current device is a
 * property of the thread, so each allocation must land on its thread's device.
 * Each thread makes ROUNDS cudaMalloc and ROUNDS cudaMallocAsync allocations on
 * its own stream (sizes differ per device), then frees every other one of each.
 *
 *   multidev_threads threads DEVICE   the threads use device 0 and DEVICE
 *
 * Prints the pid for check_report.py, which reads the JSON report. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define KIB    1024u
#define ROUNDS 64

struct worker {
    int device;
    size_t malloc_bytes, async_bytes;
    pthread_barrier_t *start;
};

static void *work(void *arg)
{
    const struct worker *w = arg;
    static __thread void *blocks[ROUNDS], *async_blocks[ROUNDS];
    CHECK_CU(cudaSetDevice(w->device));
    cudaStream_t stream;
    CHECK_CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    pthread_barrier_wait(w->start);
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_CU(cudaMalloc(&blocks[i], w->malloc_bytes));
        CHECK_CU(cudaMallocAsync(&async_blocks[i], w->async_bytes, stream));
        struct cudaPointerAttributes attr;
        memset(&attr, 0, sizeof attr);
        CHECK_CU(cudaPointerGetAttributes(&attr, async_blocks[i]));
        CHECK_EQ(attr.device, w->device);
    }
    for (int i = 0; i < ROUNDS; i += 2) {
        CHECK_CU(cudaFree(blocks[i]));
        CHECK_CU(cudaFreeAsync(async_blocks[i], stream));
    }
    CHECK_CU(cudaStreamSynchronize(stream));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "threads") != 0) {
        fprintf(stderr, "usage: %s threads DEVICE\n", argv[0]);
        return 2;
    }
    int count = 0;
    CHECK_CU(cudaGetDeviceCount(&count));
    int other = atoi(argv[2]);
    CHECK_LT(0, other);
    CHECK_LT(other, count);

    pthread_barrier_t start;
    CHECK_EQ(pthread_barrier_init(&start, NULL, 2), 0);
    struct worker w[2] = {
        {.device = 0, .malloc_bytes = 256 * KIB, .async_bytes = 128 * KIB, .start = &start},
        {.device = other, .malloc_bytes = 192 * KIB, .async_bytes = 64 * KIB, .start = &start},
    };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&start);
    printf("pid %ld\n", (long)getpid());
    return 0;
}
