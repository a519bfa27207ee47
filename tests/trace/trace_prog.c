/* A program for the trace tests. Modes:
 *   killed N   N cudaMalloc of 1 MiB (every other one freed), prints "ready", then
 *              waits to be killed: the trace must hold what was flushed before.
 *   threads N  8 threads, N cudaMalloc/cudaFree pairs each, then exits: one merged
 *              event order out of many thread buffers. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1u << 20)

static long count;

static void *churn(void *arg)
{
    size_t size = (size_t)(uintptr_t)arg;
    for (long i = 0; i < count; i++) {
        void *p;
        if (cudaMalloc(&p, size + (size_t)(i % 7) * 4096) != cudaSuccess) exit(1);
        if (cudaFree(p) != cudaSuccess) exit(1);
    }
    return NULL;
}

/* cudafrag's public marker, found at run time so the program runs without it too. */
static void mark(const char *label)
{
    int (*fn)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "cudafrag_mark");
    if (fn) fn(label);
}

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    count = atol(argv[2]);
    if (strcmp(argv[1], "killed") == 0) {
        void *p;
        for (long i = 0; i < count; i++) {
            if (cudaMalloc(&p, MiB) != cudaSuccess) return 1;
            if (i % 2 && cudaFree(p) != cudaSuccess) return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    pthread_t th[8];
    mark("threads start");
    for (uintptr_t t = 0; t < 8; t++)
        pthread_create(&th[t], NULL, churn, (void *)((t + 1) * 300 * 1024));
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    mark("threads joined");
    return 0;
}
