/* An object detector serving four request streams at once: every request
 * allocates a feature pyramid (several MiB down to a few hundred KiB per scale)
 * next to tiny box and score arrays of a few hundred bytes, works on them with
 * stream-ordered memsets and copies on its own non-blocking stream, and frees
 * everything once the stream is drained. Large and tiny blocks interleave in
 * time, which is the mix that splinters a first-fit device heap.
 *
 * Only the head of each feature map is written, so the run stays fast on the
 * simulated device; the allocations keep their full size. */
#include "workload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_STREAMS   4
#define N_SCALES    4
#define TOUCH_BYTES (64 * 1024)
#define MAX_BOXES   100
#define BOX_BYTES   16 /* four floats */

struct request {
    unsigned char *maps[N_SCALES];
    size_t map_bytes[N_SCALES];
    unsigned char *boxes, *scores;
    size_t n_boxes;
};

struct lane {
    cudaStream_t stream;
    unsigned char *host_in;  /* scores uploaded from the host */
    unsigned char *host_out; /* boxes then scores, read back */
};

struct mix_stats {
    unsigned long long mallocs, frees, big_bytes, tiny_bytes;
};

/* The base map is 4-9 MiB; each scale down is a quarter of the one above. */
static void alloc_request(struct request *rq, struct wl_rng *rng, struct mix_stats *st)
{
    size_t base = (size_t)wl_rng_range(rng, 4u << 20, 9u << 20);
    base &= ~(size_t)255;
    for (int s = 0; s < N_SCALES; s++) {
        rq->map_bytes[s] = base >> (2 * s);
        WL_CUDA(cudaMalloc((void **)&rq->maps[s], rq->map_bytes[s]));
        st->big_bytes += rq->map_bytes[s];
    }
    rq->n_boxes = (size_t)wl_rng_range(rng, 5, MAX_BOXES);
    WL_CUDA(cudaMalloc((void **)&rq->boxes, rq->n_boxes * BOX_BYTES));
    WL_CUDA(cudaMalloc((void **)&rq->scores, rq->n_boxes * sizeof(float)));
    st->tiny_bytes += rq->n_boxes * (BOX_BYTES + sizeof(float));
    st->mallocs += N_SCALES + 2;
}

static void free_request(struct request *rq, struct mix_stats *st)
{
    WL_CUDA(cudaFree(rq->scores));
    for (int s = N_SCALES - 1; s >= 0; s--)
        WL_CUDA(cudaFree(rq->maps[s]));
    WL_CUDA(cudaFree(rq->boxes));
    st->frees += N_SCALES + 2;
}

/* Fill the head of every scale, fold it down the pyramid, then cut boxes out of
 * the smallest scale and overwrite the scores with the host's values. */
static void enqueue_request(const struct request *rq, const struct lane *ln, long iter, int lane)
{
    cudaStream_t s = ln->stream;
    for (int k = 0; k < N_SCALES; k++) {
        size_t n = rq->map_bytes[k] < TOUCH_BYTES ? rq->map_bytes[k] : TOUCH_BYTES;
        WL_CUDA(cudaMemsetAsync(rq->maps[k], (int)((iter * 13 + lane * 7 + k) & 0xff), n, s));
    }
    for (int k = 1; k < N_SCALES; k++)
        WL_CUDA(cudaMemcpyAsync(rq->maps[k] + (size_t)k * 1024, rq->maps[k - 1], 4096,
                                cudaMemcpyDeviceToDevice, s));
    size_t box_bytes = rq->n_boxes * BOX_BYTES;
    size_t score_bytes = rq->n_boxes * sizeof(float);
    WL_CUDA(cudaMemcpyAsync(rq->boxes, rq->maps[N_SCALES - 1] + (size_t)(iter % 512), box_bytes,
                            cudaMemcpyDeviceToDevice, s));
    WL_CUDA(cudaMemcpyAsync(rq->scores, ln->host_in, score_bytes, cudaMemcpyHostToDevice, s));
    WL_CUDA(cudaMemcpyAsync(ln->host_out, rq->boxes, box_bytes, cudaMemcpyDeviceToHost, s));
    WL_CUDA(cudaMemcpyAsync(ln->host_out + box_bytes, rq->scores, score_bytes,
                            cudaMemcpyDeviceToHost, s));
}

static void run(long iters, struct wl_hash *hash, struct mix_stats *st)
{
    struct lane lanes[N_STREAMS];
    for (int l = 0; l < N_STREAMS; l++) {
        WL_CUDA(cudaStreamCreateWithFlags(&lanes[l].stream, cudaStreamNonBlocking));
        lanes[l].host_in = malloc(MAX_BOXES * sizeof(float));
        lanes[l].host_out = malloc(MAX_BOXES * (BOX_BYTES + sizeof(float)));
        if (!lanes[l].host_in || !lanes[l].host_out) {
            fprintf(stderr, "%s: out of host memory\n", wl_name());
            exit(WL_EXIT_CUDA);
        }
    }

    struct wl_rng rng;
    wl_rng_seed(&rng, 77);
    for (long it = 0; it < iters; it++) {
        struct request rq[N_STREAMS];
        for (int l = 0; l < N_STREAMS; l++) {
            alloc_request(&rq[l], &rng, st);
            wl_rng_fill(&rng, lanes[l].host_in, rq[l].n_boxes * sizeof(float));
            enqueue_request(&rq[l], &lanes[l], it, l);
        }
        /* Drain the lanes in a rotating order so frees interleave differently. */
        for (int k = 0; k < N_STREAMS; k++) {
            int l = (int)((it + k) % N_STREAMS);
            WL_CUDA(cudaStreamSynchronize(lanes[l].stream));
            free_request(&rq[l], st);
        }
        for (int l = 0; l < N_STREAMS; l++) {
            wl_hash_u64(hash, rq[l].n_boxes);
            wl_hash_bytes(hash, lanes[l].host_out, rq[l].n_boxes * (BOX_BYTES + sizeof(float)));
        }
    }

    for (int l = 0; l < N_STREAMS; l++) {
        WL_CUDA(cudaStreamDestroy(lanes[l].stream));
        free(lanes[l].host_in);
        free(lanes[l].host_out);
    }
}

int main(int argc, char **argv)
{
    const char *usage = "[-n ITERATIONS]";
    wl_set_name("detector_mix");
    long iters = 400;
    int opt;
    while ((opt = getopt(argc, argv, "n:h")) != -1) {
        if (opt == 'n')
            iters = wl_parse_count(optarg, "-n", 1, 100000000);
        else
            wl_usage_error(usage);
    }
    if (optind != argc) wl_usage_error(usage);

    struct wl_hash hash;
    wl_hash_init(&hash);
    struct mix_stats st = {0};
    run(iters, &hash, &st);
    WL_CUDA(cudaDeviceSynchronize());

    wl_print_checksum(&hash);
    printf("detector_mix: %ld iterations x %d streams, %llu cudaMalloc, %llu cudaFree, "
           "%llu feature-map bytes, %llu box/score bytes\n",
           iters, N_STREAMS, st.mallocs, st.frees, st.big_bytes, st.tiny_bytes);
    return 0;
}
