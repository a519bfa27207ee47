/* owners_prog OWNER=MIB...: allocates MIB MiB (one allocation) through the
 * stand-in of each OWNER -- nccl, nccl-driver, cublas, cudnn, cufft, cache (the
 * framework cache), cache-nccl (the cache through ncclMemAlloc), graph (a
 * cudaMallocAsync while its stream is capturing), graph-freed (the same, freed
 * in the same capture) or user (this program) -- in
 * the order given. The libraries' and the cache's memory is held to the end, as
 * theirs is; the program's own is freed once everything is allocated. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *nccl_alloc(size_t n);
void *nccl_alloc_driver(size_t n);
void *cublas_alloc(size_t n);
void *cudnn_alloc(size_t n);
void *cufft_alloc(size_t n);
void *cache_alloc(size_t n);
void *cache_alloc_nccl(size_t n);

/* A graph's allocation node, and its free node when freed. Inlined: each caller
 * is a call site of its own. */
static inline __attribute__((always_inline)) void *capture(size_t n, int freed)
{
    cudaStream_t s;
    cudaGraph_t g;
    void *p = NULL;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
        return NULL;
    cudaError_t rc = cudaMallocAsync(&p, n, s);
    if (rc == cudaSuccess && freed) rc = cudaFreeAsync(p, s);
    if (cudaStreamEndCapture(s, &g) != cudaSuccess || rc != cudaSuccess) return NULL;
    return p;
}

static void *captured(size_t n)
{
    return capture(n, 0);
}

static void *captured_freed(size_t n)
{
    return capture(n, 1);
}

static void *user_alloc(size_t n)
{
    void *p = NULL;
    return cudaMalloc(&p, n) == cudaSuccess ? p : NULL;
}

typedef void *alloc_fn(size_t n);

static alloc_fn *by_owner(const char *name)
{
    static const struct {
        const char *name;
        alloc_fn *fn;
    } owners[] = {{"nccl", nccl_alloc},
                  {"nccl-driver", nccl_alloc_driver},
                  {"cublas", cublas_alloc},
                  {"cudnn", cudnn_alloc},
                  {"cufft", cufft_alloc},
                  {"cache", cache_alloc},
                  {"cache-nccl", cache_alloc_nccl},
                  {"graph", captured},
                  {"graph-freed", captured_freed},
                  {"user", user_alloc}};
    for (size_t i = 0; i < sizeof owners / sizeof owners[0]; i++)
        if (strcmp(owners[i].name, name) == 0) return owners[i].fn;
    return NULL;
}

int main(int argc, char **argv)
{
    void *mine[64];
    int nmine = 0;
    for (int i = 1; i < argc; i++) {
        char name[32];
        unsigned mib;
        alloc_fn *fn = NULL;
        if (sscanf(argv[i], "%31[^=]=%u", name, &mib) != 2 || !(fn = by_owner(name))) {
            fprintf(stderr, "owners_prog: not OWNER=MIB: %s\n", argv[i]);
            return 2;
        }
        void *p = fn((size_t)mib << 20);
        if (p == NULL) {
            fprintf(stderr, "owners_prog: %s failed\n", argv[i]);
            return 1;
        }
        if (strcmp(name, "user") == 0 && nmine < 64) mine[nmine++] = p;
    }
    for (int i = 0; i < nmine; i++)
        cudaFree(mine[i]);
    printf("ok\n");
    return 0;
}
