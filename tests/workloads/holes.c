/* Holes in 2 MiB pages: one large buffer is freed, then many small blocks are
 * allocated and every other one freed, then mid-size blocks that fit none of the
 * holes. The driver backs every 2 MiB page a live block touches, so the device
 * holds far more than the live bytes although nothing leaks. The program reads
 * its own footprint (total - free) after every step and prints the peak, so a
 * profiler's figure can be held against it on any device.
 *
 * Usage: cudafrag-demo-holes [--scale N]   (N multiplies every count, default 1)
 * Output: "peak used above start <bytes>" and the checksum of the data. */
#include "workload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static size_t start_used, peak_above;

static void note_used(void)
{
    size_t free_b, total_b;
    WL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    size_t used = total_b - free_b;
    if (used > start_used && used - start_used > peak_above) peak_above = used - start_used;
}

static void tag(struct wl_hash *h, void *p, size_t size, uint64_t seed)
{
    unsigned char buf[256];
    struct wl_rng r;
    wl_rng_seed(&r, seed);
    wl_rng_fill(&r, buf, sizeof buf);
    WL_CUDA(cudaMemcpy(p, buf, sizeof buf < size ? sizeof buf : size, cudaMemcpyHostToDevice));
    unsigned char back[256];
    WL_CUDA(cudaMemcpy(back, p, sizeof back < size ? sizeof back : size, cudaMemcpyDeviceToHost));
    wl_hash_bytes(h, back, sizeof back < size ? sizeof back : size);
}

static void run(long scale, struct wl_hash *h)
{
    long nsmall = 400 * scale, nmid = 100 * scale;
    void *big, **small = calloc((size_t)nsmall, sizeof *small),
               **mid = calloc((size_t)nmid, sizeof *mid);
    if (!small || !mid) exit(WL_EXIT_CUDA);
    WL_CUDA(cudaMalloc(&big, 300 * MiB * (size_t)scale));
    tag(h, big, 300 * MiB, 1);
    note_used();
    WL_CUDA(cudaFree(big));
    for (long i = 0; i < nsmall; i++) {
        WL_CUDA(cudaMalloc(&small[i], 600 * KiB));
        tag(h, small[i], 600 * KiB, (uint64_t)i + 2);
    }
    note_used();
    for (long i = 0; i < nsmall; i += 2)
        WL_CUDA(cudaFree(small[i]));
    note_used();
    for (long i = 0; i < nmid; i++) {
        WL_CUDA(cudaMalloc(&mid[i], 1536 * KiB));
        tag(h, mid[i], 1536 * KiB, (uint64_t)i + 100000);
        note_used();
    }
    for (long i = 1; i < nsmall; i += 2)
        WL_CUDA(cudaFree(small[i]));
    for (long i = 0; i < nmid; i++)
        WL_CUDA(cudaFree(mid[i]));
    free(small);
    free(mid);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"scale", required_argument, NULL, 's'}, {0}};
    long scale = 1;
    int c;
    wl_set_name("holes");
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 's')
            scale = wl_parse_count(optarg, "--scale", 1, 64);
        else
            wl_usage_error("cudafrag-demo-holes [--scale N]");
    }
    size_t free_b, total_b;
    WL_CUDA(cudaFree(NULL)); /* create the context before the baseline */
    WL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    start_used = total_b - free_b;
    struct wl_hash h;
    wl_hash_init(&h);
    run(scale, &h);
    printf("peak used above start %zu\n", peak_above);
    wl_print_checksum(&h);
    return 0;
}
