/* Usage: small_stack KIB ROUNDS [exit]
 * One thread with a stack of KIB KiB (pthread_attr_setstacksize) makes ROUNDS
 * pairs of cudaMalloc/cudaFree and leaves one allocation of 4096 bytes live, as
 * a program with small worker stacks does; natively this needs little stack, and
 * cudafrag must not need more. With "exit", that thread ends the process with
 * exit(0) (the exit handlers, cudafrag's report among them, run on its stack). */
#include "check.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>

static long rounds;
static bool exit_here;

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        void *p = NULL;
        CHECK_CU(cudaMalloc(&p, (size_t)(i % 7 + 1) << 16));
        CHECK_CU(cudaFree(p));
    }
    void *kept = NULL;
    CHECK_CU(cudaMalloc(&kept, 4096));
    if (exit_here) {
        printf("ok\n");
        fflush(stdout);
        exit(0);
    }
    return kept;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3 || (argc == 4 && strcmp(argv[3], "exit") == 0));
    exit_here = argc == 4;
    size_t kib = strtoul(argv[1], NULL, 10);
    rounds = strtol(argv[2], NULL, 10);
    pthread_attr_t attr;
    CHECK_EQ(pthread_attr_init(&attr), 0);
    CHECK_EQ(pthread_attr_setstacksize(&attr, kib << 10), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, &attr, worker, NULL), 0);
    void *kept = NULL;
    CHECK_EQ(pthread_join(t, &kept), 0);
    CHECK(kept != NULL);
    printf("ok\n");
    return 0;
}
