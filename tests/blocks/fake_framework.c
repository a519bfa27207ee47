/* A stand-in for a framework with a caching allocator, honouring the framework
 * switches `cudafrag run --blocks` sets, as the real ones document them:
 *
 *   fake_framework torch   tensors from one cudaMalloc'd 256 MiB segment, carved and
 *                          cached; one cudaMalloc per tensor when
 *                          PYTORCH_NO_CUDA_MEMORY_CACHING=1 (PyTorch's check_env:
 *                          "1" is on, "0" off)
 *   fake_framework jax     buffers from one preallocated cuMemAlloc pool; one
 *                          cuMemAlloc per buffer when XLA_PYTHON_CLIENT_ALLOCATOR
 *                          is "platform"
 *
 * Either way it runs the same tensor stream (TENSORS allocations, sizes 1 KiB to
 * 3 MiB, half of them freed as it goes, the rest at the end) and prints
 * "<mode> <cached|blocks> tensors N driver-allocations M". The torch mode calls
 * the driver from libc10_cuda.so (fake_c10_cuda.c), as PyTorch does. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_c10_cuda.h"

#define TENSORS 240
#define SEGMENT (256ull << 20)

static bool blocks, jax;
static unsigned driver_allocs;
static char *segment_base; /* the cache: one segment, carved from its start */
static uint64_t segment_used;

static void die(const char *what, int rc)
{
    fprintf(stderr, "fake_framework: %s failed: %d\n", what, rc);
    exit(1);
}

static void *driver_alloc(size_t size)
{
    driver_allocs++;
    if (jax) {
        CUdeviceptr p;
        CUresult rc = cuMemAlloc(&p, size);
        if (rc != CUDA_SUCCESS) die("cuMemAlloc", rc);
        return (void *)(uintptr_t)p;
    }
    void *p;
    cudaError_t rc = fake_c10_malloc(&p, size);
    if (rc != cudaSuccess) die("cudaMalloc", rc);
    return p;
}

static void driver_free(void *p)
{
    int rc = jax ? (int)cuMemFree((CUdeviceptr)(uintptr_t)p) : (int)fake_c10_free(p);
    if (rc != 0) die("free", rc);
}

/* The cache hands out 512-byte-aligned pieces of its segment and never gives
 * memory back to the driver (enough for this stream: it fits in one segment). */
static void *tensor_alloc(size_t size)
{
    if (blocks) return driver_alloc(size);
    if (segment_base == NULL) segment_base = driver_alloc(SEGMENT);
    size = (size + 511) & ~(size_t)511;
    if (segment_used + size > SEGMENT) die("the fake cache", 0);
    void *p = segment_base + segment_used;
    segment_used += size;
    return p;
}

static void tensor_free(void *p)
{
    if (blocks) driver_free(p);
}

static bool switch_on(void)
{
    const char *v = getenv(jax ? "XLA_PYTHON_CLIENT_ALLOCATOR" : "PYTORCH_NO_CUDA_MEMORY_CACHING");
    if (v == NULL) return false;
    return jax ? strcasecmp(v, "platform") == 0 : strcmp(v, "1") == 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "torch") != 0 && strcmp(argv[1], "jax") != 0)) {
        fprintf(stderr, "usage: fake_framework torch|jax\n");
        return 2;
    }
    jax = strcmp(argv[1], "jax") == 0;
    blocks = switch_on();
    /* Frameworks set CUDA up (device count, context) before their first
     * allocation; the arena can serve a runtime allocation once the runtime
     * has loaded the driver. */
    int ndev = 0;
    if (!jax && cudaGetDeviceCount(&ndev) != cudaSuccess) die("cudaGetDeviceCount", 0);
    if (jax && cuInit(0) != CUDA_SUCCESS) die("cuInit", 0);
    if (jax) {
        CUdevice dev;
        CUcontext ctx;
        if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
            cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
            die("context", 0);
    }
    static void *live[TENSORS];
    for (unsigned i = 0; i < TENSORS; i++) {
        size_t size = (size_t)1024 << (i % 12); /* 1 KiB .. 2 MiB */
        if (i % 5 == 0) size += (size_t)1 << 20;
        live[i] = tensor_alloc(size);
        if (i % 2 == 1) { /* the previous tensor dies as this one is made */
            tensor_free(live[i - 1]);
            live[i - 1] = NULL;
        }
    }
    for (unsigned i = 0; i < TENSORS; i++)
        if (live[i]) tensor_free(live[i]);
    if (segment_base) driver_free(segment_base);
    printf("%s %s tensors %u driver-allocations %u\n", argv[1], blocks ? "blocks" : "cached",
           TENSORS, driver_allocs);
    return 0;
}
