/* A program whose memory is mostly a stream-ordered pool, with one cudaMalloc
 * beside it: the shadow arena model replays only the cudaMalloc, so the report
 * must hold it against that allocation's pages, not against the pool's.
 * "raw-only" leaves the pool out. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#define MiB (1024u * 1024u)

static int ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    fprintf(stderr, "arena_scope: %s failed: %s\n", what, cudaGetErrorName(e));
    return 0;
}

int main(int argc, char **argv)
{
    int with_pool = !(argc > 1 && strcmp(argv[1], "raw-only") == 0);
    void *raw = NULL, *pooled = NULL;
    cudaStream_t s;
    if (!ok(cudaSetDevice(0), "cudaSetDevice") || !ok(cudaStreamCreate(&s), "cudaStreamCreate") ||
        !ok(cudaMalloc(&raw, 64 * MiB), "cudaMalloc"))
        return 1;
    if (with_pool) {
        if (!ok(cudaMallocAsync(&pooled, 512 * MiB, s), "cudaMallocAsync") ||
            !ok(cudaFreeAsync(pooled, s), "cudaFreeAsync"))
            return 1;
    }
    if (!ok(cudaStreamSynchronize(s), "cudaStreamSynchronize") || !ok(cudaFree(raw), "cudaFree"))
        return 1;
    return 0;
}
