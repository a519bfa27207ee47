/* PyTorch-like tensor streams for `cudafrag advise`, allocated one tensor per
 * cudaMalloc through a stand-in for PyTorch's libc10_cuda.so (as PyTorch does
 * with PYTORCH_NO_CUDA_MEMORY_CACHING=1, which `cudafrag run --blocks` sets),
 * or, linked with the XLA stand-in, as JAX's platform allocator would:
 *
 *   advise_workload odd-large   a training loop whose sequence length changes
 *                               every step: activations of odd sizes from 1 to
 *                               40 MiB, freed at the step's end, weights kept
 *   advise_workload fixed       the same shapes every step, each a multiple of
 *                               2 MiB from 10 MiB up (a segment of its own in
 *                               PyTorch's cache): any cache reuses them exactly
 *   advise_workload small       many tensors below 1 MiB of varied sizes and
 *                               lifetimes (optimizer state, small activations)
 *   advise_workload kv-growth   KV caches grown by reallocation (a larger copy,
 *                               then the old one freed), several sequences
 *   advise_workload streams     the odd-large loop's activations on two streams
 *   advise_workload two-devices the odd-large loop on device 0, KV caches on
 *                               device 1 (SIMCUDA_DEVICES=2): one process, two
 *                               GPUs, as JAX drives them
 *
 * Deterministic: a fixed seed. Prints "<mode> tensors N". */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_c10_cuda.h"

#define MIB      (1ull << 20)
#define MAX_LIVE 4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned tensors;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t between(uint64_t lo, uint64_t hi)
{
    return lo + next() % (hi - lo + 1);
}

static void *alloc(size_t size)
{
    void *p;
    if (fake_c10_malloc(&p, size) != cudaSuccess) {
        fprintf(stderr, "advise_workload: cudaMalloc(%zu) failed\n", size);
        exit(1);
    }
    tensors++;
    return p;
}

static void release(void *p)
{
    if (fake_c10_free(p) != cudaSuccess) {
        fprintf(stderr, "advise_workload: cudaFree failed\n");
        exit(1);
    }
}

/* Weights kept for the run, then per step activations whose size follows the
 * step's sequence length (seq x hidden x 4 B, hidden 1024..5120), freed in the
 * backward pass's order (last first). */
static void odd_large(int two_streams)
{
    void *weights[16], *acts[64];
    cudaStream_t s[2] = {0, 0};
    if (two_streams) cudaStreamCreate(&s[1]);
    for (int i = 0; i < 16; i++)
        weights[i] = alloc(between(2, 24) * MIB + between(0, 4095) * 512);
    for (int step = 0; step < 60; step++) {
        uint64_t seq = between(128, 2048);
        int n = (int)between(24, 48);
        for (int i = 0; i < n; i++) {
            uint64_t hidden = 1024 * between(1, 5);
            size_t size = seq * hidden * 4 + between(0, 63) * 512;
            if (two_streams && (i & 1)) {
                if (cudaMallocAsync(&acts[i], size, s[1]) != cudaSuccess) exit(1);
                tensors++;
            } else {
                acts[i] = alloc(size);
            }
        }
        for (int i = n - 1; i >= 0; i--) {
            if (two_streams && (i & 1))
                cudaFreeAsync(acts[i], s[1]);
            else
                release(acts[i]);
        }
    }
    for (int i = 0; i < 16; i++)
        release(weights[i]);
}

static void fixed(void)
{
    void *weights[8], *acts[32];
    for (int i = 0; i < 8; i++)
        weights[i] = alloc(64 * MIB);
    for (int step = 0; step < 50; step++) {
        for (int i = 0; i < 32; i++)
            acts[i] = alloc((size_t)(10 + 2 * (i % 8)) * MIB);
        for (int i = 31; i >= 0; i--)
            release(acts[i]);
    }
    for (int i = 0; i < 8; i++)
        release(weights[i]);
}

/* A ring of live small tensors: each step frees a random one and allocates a
 * new one of a random size, so lifetimes interleave. */
static void small(void)
{
    static void *live[MAX_LIVE];
    int n = 2000;
    for (int i = 0; i < n; i++)
        live[i] = alloc(between(1, 2048) * 512);
    for (int step = 0; step < 20000; step++) {
        int i = (int)between(0, (uint64_t)n - 1);
        release(live[i]);
        live[i] = alloc(between(1, 2048) * 512);
    }
    for (int i = 0; i < n; i++)
        release(live[i]);
}

/* Sequences whose KV cache grows by 64 tokens at a time: a copy one step
 * larger, then the old one freed (torch.cat), until each sequence ends. */
static void kv_growth(void)
{
    enum { SEQS = 8 };
    void *cache[SEQS] = {0};
    uint64_t len[SEQS] = {0}, end[SEQS];
    const uint64_t per_token = 2 * 32 * 128 * 2 * 8; /* K and V, 32 heads x 128, fp16, 8 layers */
    for (int q = 0; q < SEQS; q++)
        end[q] = between(512, 4096);
    for (int round = 0; round < 400; round++) {
        int q = round % SEQS;
        if (len[q] >= end[q]) {
            release(cache[q]);
            cache[q] = NULL;
            len[q] = 0;
            end[q] = between(512, 4096);
        }
        len[q] += 64;
        void *grown = alloc(len[q] * per_token);
        if (cache[q]) release(cache[q]);
        cache[q] = grown;
    }
    for (int q = 0; q < SEQS; q++)
        if (cache[q]) release(cache[q]);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "odd-large") == 0)
        odd_large(0);
    else if (strcmp(mode, "streams") == 0)
        odd_large(1);
    else if (strcmp(mode, "fixed") == 0)
        fixed();
    else if (strcmp(mode, "small") == 0)
        small();
    else if (strcmp(mode, "kv-growth") == 0)
        kv_growth();
    else if (strcmp(mode, "two-devices") == 0) {
        odd_large(0);
        if (cudaSetDevice(1) != cudaSuccess) {
            fprintf(stderr, "advise_workload: no device 1 (SIMCUDA_DEVICES=2)\n");
            return 1;
        }
        kv_growth();
    } else {
        fprintf(stderr,
                "usage: advise_workload odd-large|fixed|small|kv-growth|streams|two-devices\n");
        return 2;
    }
    cudaDeviceSynchronize();
    printf("%s tensors %u\n", mode, tensors);
    return 0;
}
