/* Stream-ordered allocation across four streams on the device's default memory
 * pool. Each round every stream allocates and fills a buffer of a random size
 * (4 KiB to 16 MiB) and records an event; the next stream waits on that event,
 * copies the data into its own fresh buffer and frees the producer's buffer --
 * a free on a different stream than the allocation, ordered by the event. The
 * pool's release threshold comes from -t, so runs can compare a pool that hands
 * memory back at every synchronisation with one that keeps it. */
#include "workload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_STREAMS   4
#define TOUCH_BYTES (64 * 1024)
#define READ_BYTES  256

struct lanes {
    cudaStream_t stream[N_STREAMS];
    cudaEvent_t produced[N_STREAMS];
    unsigned char host_out[N_STREAMS][READ_BYTES];
    size_t read_len[N_STREAMS];
};

struct async_stats {
    unsigned long long allocs, frees, bytes;
};

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Mostly mid-sized buffers with a tail of large ones, like activations. */
static size_t pick_size(struct wl_rng *rng)
{
    uint64_t r = wl_rng_range(rng, 0, 99);
    if (r < 20) return (size_t)wl_rng_range(rng, 4096, 65536);
    if (r < 85) return (size_t)wl_rng_range(rng, 65536, 2u << 20);
    return (size_t)wl_rng_range(rng, 2u << 20, 16u << 20);
}

static void run_round(struct lanes *ln, struct wl_rng *rng, long round, struct async_stats *st)
{
    unsigned char *prod[N_STREAMS];
    size_t touched[N_STREAMS];
    for (int s = 0; s < N_STREAMS; s++) {
        size_t size = pick_size(rng);
        WL_CUDA(cudaMallocAsync((void **)&prod[s], size, ln->stream[s]));
        touched[s] = min_size(size, TOUCH_BYTES);
        WL_CUDA(cudaMemsetAsync(prod[s], (int)((round * 5 + s) & 0xff), touched[s], ln->stream[s]));
        /* A second value over the middle, so the data is not one flat byte. */
        WL_CUDA(cudaMemsetAsync(prod[s] + touched[s] / 3, (int)((round ^ (s * 41)) & 0xff),
                                touched[s] / 3, ln->stream[s]));
        WL_CUDA(cudaEventRecord(ln->produced[s], ln->stream[s]));
        st->allocs++;
        st->bytes += size;
    }
    for (int s = 0; s < N_STREAMS; s++) {
        int t = (s + 1) % N_STREAMS;
        cudaStream_t cs = ln->stream[t];
        size_t csize = pick_size(rng);
        size_t n = min_size(touched[s], csize);
        size_t off = n > READ_BYTES ? (size_t)wl_rng_range(rng, 0, n - READ_BYTES) : 0;
        unsigned char *cons;
        WL_CUDA(cudaStreamWaitEvent(cs, ln->produced[s], 0));
        WL_CUDA(cudaMallocAsync((void **)&cons, csize, cs));
        WL_CUDA(cudaMemcpyAsync(cons, prod[s], n, cudaMemcpyDeviceToDevice, cs));
        WL_CUDA(cudaFreeAsync(prod[s], cs));
        ln->read_len[t] = min_size(n, READ_BYTES);
        WL_CUDA(cudaMemcpyAsync(ln->host_out[t], cons + off, ln->read_len[t],
                                cudaMemcpyDeviceToHost, cs));
        WL_CUDA(cudaFreeAsync(cons, cs));
        st->allocs++;
        st->frees += 2;
        st->bytes += csize;
    }
}

static void run(long rounds, struct wl_hash *hash, struct async_stats *st)
{
    struct lanes ln;
    memset(&ln, 0, sizeof ln);
    for (int s = 0; s < N_STREAMS; s++) {
        WL_CUDA(cudaStreamCreateWithFlags(&ln.stream[s], cudaStreamNonBlocking));
        WL_CUDA(cudaEventCreateWithFlags(&ln.produced[s], cudaEventDisableTiming));
    }
    struct wl_rng rng;
    wl_rng_seed(&rng, 4242);
    for (long r = 0; r < rounds; r++) {
        run_round(&ln, &rng, r, st);
        for (int s = 0; s < N_STREAMS; s++)
            WL_CUDA(cudaStreamSynchronize(ln.stream[s]));
        for (int s = 0; s < N_STREAMS; s++)
            wl_hash_bytes(hash, ln.host_out[s], ln.read_len[s]);
    }
    for (int s = 0; s < N_STREAMS; s++) {
        WL_CUDA(cudaEventDestroy(ln.produced[s]));
        WL_CUDA(cudaStreamDestroy(ln.stream[s]));
    }
}

int main(int argc, char **argv)
{
    const char *usage = "[-n ROUNDS] [-t RELEASE_THRESHOLD]";
    wl_set_name("stream_async");
    long rounds = 500;
    uint64_t threshold = 0;
    int opt;
    while ((opt = getopt(argc, argv, "n:t:h")) != -1) {
        if (opt == 'n')
            rounds = wl_parse_count(optarg, "-n", 1, 100000000);
        else if (opt == 't')
            threshold = wl_parse_size(optarg, "-t");
        else
            wl_usage_error(usage);
    }
    if (optind != argc) wl_usage_error(usage);

    int dev;
    cudaMemPool_t pool;
    WL_CUDA(cudaGetDevice(&dev));
    WL_CUDA(cudaDeviceGetDefaultMemPool(&pool, dev));
    WL_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));

    struct wl_hash hash;
    wl_hash_init(&hash);
    struct async_stats st = {0};
    run(rounds, &hash, &st);
    WL_CUDA(cudaDeviceSynchronize());

    uint64_t reserved_high = 0, used_high = 0;
    WL_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &reserved_high));
    WL_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high));

    wl_print_checksum(&hash);
    printf("stream_async: %ld rounds x %d streams, %llu cudaMallocAsync, %llu cudaFreeAsync, "
           "%llu bytes, release threshold %llu, pool used high %llu, reserved high %llu\n",
           rounds, N_STREAMS, st.allocs, st.frees, st.bytes, (unsigned long long)threshold,
           (unsigned long long)used_high, (unsigned long long)reserved_high);
    return 0;
}
