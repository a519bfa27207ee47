/* External fragmentation made visible: fill the device with equal blocks, free
 * every other one, then ask for a block a few times larger. Half the memory is
 * free, yet on an allocator that needs physically contiguous memory no hole is
 * big enough and cudaMalloc fails -- the "out of memory with plenty free" that
 * users report. An allocator that maps physical granules into fresh virtual
 * ranges (the real driver, cudafrag's arena) satisfies the same request.
 *
 * Exit status: 0 the large request succeeded, 3 it failed although the free
 * memory reported by cudaMemGetInfo covered it, 1 any other CUDA error. */
#include "workload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_FRAGMENTED 3
#define GRANULE         (2u << 20)
#define MAX_BLOCKS      256
#define HEAD_BYTES      4096
/* Blocks whose data goes into the checksum: enough to check the copies, few enough
 * that every device size and allocator keeps them all. */
#define CHECKED_LIVE 4

struct plan {
    size_t block, request;
    int max_blocks;
};

static size_t round_down(size_t v, size_t to)
{
    return v / to * to;
}

/* Fill memory with blocks until the allocator refuses, tagging each block's head. */
static int fill_device(void **blocks, const struct plan *p)
{
    int n = 0;
    while (n < p->max_blocks) {
        cudaError_t err = cudaMalloc(&blocks[n], p->block);
        if (err == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError(); /* an allocation failure is expected here */
            break;
        }
        WL_CUDA(err);
        WL_CUDA(cudaMemset(blocks[n], n & 0xff, HEAD_BYTES));
        n++;
    }
    return n;
}

/* Copy the heads of the first surviving blocks into the large block and read them
 * back: the large block must be usable, not merely handed out. */
static void use_large_block(unsigned char *large, void **blocks, int n, struct wl_hash *hash)
{
    unsigned char *host = malloc(HEAD_BYTES);
    if (!host) {
        fprintf(stderr, "%s: out of host memory\n", wl_name());
        exit(WL_EXIT_CUDA);
    }
    WL_CUDA(cudaMemset(large, 0xa5, HEAD_BYTES * CHECKED_LIVE));
    for (int i = 0, k = 0; i < n && k < CHECKED_LIVE; i += 2, k++)
        WL_CUDA(cudaMemcpy(large + (size_t)k * HEAD_BYTES + (size_t)k * 64, blocks[i],
                           HEAD_BYTES - 64 * CHECKED_LIVE, cudaMemcpyDeviceToDevice));
    for (int k = 0; k < CHECKED_LIVE; k++) {
        WL_CUDA(
            cudaMemcpy(host, large + (size_t)k * HEAD_BYTES, HEAD_BYTES, cudaMemcpyDeviceToHost));
        wl_hash_bytes(hash, host, HEAD_BYTES);
    }
    free(host);
}

static void make_plan(struct plan *p, size_t total)
{
    if (!p->block) p->block = round_down(total / 40, GRANULE);
    if (p->block < GRANULE) p->block = GRANULE;
    if (!p->request) p->request = 4 * p->block;
}

int main(int argc, char **argv)
{
    const char *usage = "[-b BLOCK_SIZE] [-r REQUEST_SIZE] [-m MAX_BLOCKS]";
    wl_set_name("oom_fragment");
    struct plan p = {0, 0, MAX_BLOCKS};
    int opt;
    while ((opt = getopt(argc, argv, "b:r:m:h")) != -1) {
        if (opt == 'b')
            p.block = wl_parse_size(optarg, "-b");
        else if (opt == 'r')
            p.request = wl_parse_size(optarg, "-r");
        else if (opt == 'm')
            p.max_blocks = (int)wl_parse_count(optarg, "-m", 2, MAX_BLOCKS);
        else
            wl_usage_error(usage);
    }
    if (optind != argc) wl_usage_error(usage);

    size_t free_b, total_b;
    WL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    make_plan(&p, total_b);

    void *blocks[MAX_BLOCKS];
    int n = fill_device(blocks, &p);
    if (n < 2 * CHECKED_LIVE) {
        fprintf(stderr, "%s: only %d blocks of %zu bytes fit; use a smaller -b\n", wl_name(), n,
                p.block);
        return 2;
    }
    for (int i = 1; i < n; i += 2)
        WL_CUDA(cudaFree(blocks[i]));
    WL_CUDA(cudaMemGetInfo(&free_b, &total_b));

    void *large = NULL;
    cudaError_t err = cudaMalloc(&large, p.request);
    /* Free memory as the failure left it: a caching allocator in between may have
     * held freed blocks before and released them while handling the failure. */
    if (err == cudaErrorMemoryAllocation) WL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (err == cudaErrorMemoryAllocation && free_b >= p.request) {
        printf("OOM with enough free memory: free=%zu request=%zu block=%zu blocks=%d\n", free_b,
               p.request, p.block, n);
        return EXIT_FRAGMENTED;
    }
    if (err == cudaErrorMemoryAllocation)
        fprintf(stderr, "%s: the device really is full: free=%zu request=%zu\n", wl_name(), free_b,
                p.request);
    WL_CUDA(err);

    struct wl_hash hash;
    wl_hash_init(&hash);
    use_large_block(large, blocks, n, &hash);
    WL_CUDA(cudaFree(large));
    for (int i = 0; i < n; i += 2)
        WL_CUDA(cudaFree(blocks[i]));
    WL_CUDA(cudaDeviceSynchronize());

    wl_print_checksum(&hash);
    printf("oom_fragment: %d blocks of %zu bytes, every other freed, free=%zu, request=%zu "
           "succeeded\n",
           n, p.block, free_b, p.request);
    return 0;
}
