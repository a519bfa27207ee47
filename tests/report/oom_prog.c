/* A program that runs out of device memory (run it with SIMCUDA_MEM=64M): 40 MiB
 * of weights, then 4 MiB activations until an allocation fails, a second failure,
 * then as the mode says:
 *   recover     frees the activations and allocates again (the program goes on)
 *   no-recover  frees everything and allocates nothing more
 *   kill        ends itself with SIGKILL right after the first failure, having
 *               first taken HOST_HELD small pinned host buffers: their report
 *               takes longer than the way from the failing call to the kill, so
 *               a report the call did not wait for is cut short every time
 * API rt (cudaMalloc, the default) or async (cudaMallocAsync) as the second
 * argument. Prints the status and errno the program saw at the first failure,
 * which must be the same with and without cudafrag. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MiB        (1024u * 1024u)
#define MAX_BUFS   64
#define ERRNO_MARK 4242 /* errno before the failing call: what it leaves is compared */
#define HOST_HELD  20000

static int async;
static cudaStream_t stream;

/* Always inlined, also at -O0 (the sanitizer build): the call sites the tests
 * name are its callers. */
static inline __attribute__((always_inline)) cudaError_t alloc(void **p, size_t n)
{
    return async ? cudaMallocAsync(p, n, stream) : cudaMalloc(p, n);
}

static void release(void *p)
{
    if (async)
        cudaFreeAsync(p, stream);
    else
        cudaFree(p);
}

__attribute__((noipa)) static void *alloc_weights(void)
{
    void *p = NULL;
    return alloc(&p, 40 * MiB) == cudaSuccess ? p : NULL;
}

__attribute__((noipa)) static int hold_host(void)
{
    for (int i = 0; i < HOST_HELD; i++) {
        void *p;
        if (cudaMallocHost(&p, 64) != cudaSuccess) return -1;
    }
    return 0;
}

/* Activations until one fails: returns how many were had, *rc the failure. */
__attribute__((noipa)) static int grow_activations(void **bufs, cudaError_t *rc)
{
    int n = 0;
    for (; n < MAX_BUFS; n++) {
        errno = ERRNO_MARK;
        if ((*rc = alloc(&bufs[n], 4 * MiB)) != cudaSuccess) break;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "recover";
    async = argc > 2 && strcmp(argv[2], "async") == 0;
    void *bufs[MAX_BUFS];
    cudaError_t rc = cudaSuccess;
    if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) return 2;
    if (strcmp(mode, "kill") == 0 && hold_host() != 0) return 2;
    void *weights = alloc_weights();
    if (weights == NULL) return 3;
    int n = grow_activations(bufs, &rc);
    int seen = errno;
    if (strcmp(mode, "kill") == 0) printf("held %d host buffers\n", HOST_HELD);
    printf("first failure: status %d errno %d after %d activations\n", (int)rc, seen, n);
    fflush(stdout);
    if (rc != cudaErrorMemoryAllocation) return 4;
    if (strcmp(mode, "kill") == 0) raise(SIGKILL);
    void *more = NULL;
    if (alloc(&more, 4 * MiB) != cudaErrorMemoryAllocation) return 5; /* the second failure */
    cudaGetLastError();
    for (int i = 0; i < n; i++)
        release(bufs[i]);
    if (strcmp(mode, "recover") == 0) {
        if (alloc(&more, 4 * MiB) != cudaSuccess) return 6;
        release(more);
    }
    release(weights);
    cudaStreamSynchronize(stream);
    return 0;
}
