/* A video decode/preprocess pipeline that reallocates its buffers for every frame
 * because the resolution keeps changing: the allocation churn cudafrag is built to
 * show. Per frame: an NV12 input, a downscaled RGBA buffer, a planar float
 * conversion buffer and a pitched edge map are allocated, a band of rows flows
 * through them with memset/memcpy/2D copies, a slice comes back to the host and
 * everything is freed. One small statistics buffer lives for the whole run.
 *
 * Only a band of rows is touched per frame so thousands of frames run in well
 * under two seconds on the simulated device; the allocations keep their full
 * size. Every byte read back was written in the same frame, so the checksum is
 * the same whatever memory the allocator hands out. */
#include "workload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAND_ROWS  16
#define HALF_BAND  (BAND_ROWS / 2)
#define STATS_SIZE 4096
#define STATS_REC  16

struct resolution {
    size_t w, h;
};

/* Common, odd and 4K sizes, in the order a mixed camera fleet would deliver them. */
static const struct resolution resolutions[] = {
    {1920, 1080}, {1280, 720}, {3840, 2160}, {640, 480},  {1366, 768},
    {2560, 1440}, {854, 480},  {1023, 577},  {1279, 719},
};
#define N_RES (sizeof resolutions / sizeof resolutions[0])

struct frame_buffers {
    unsigned char *input;   /* NV12: luma plane then interleaved chroma */
    unsigned char *resize;  /* RGBA at two thirds of the size */
    unsigned char *convert; /* three float planes at the resized size */
    unsigned char *edge;    /* one byte per pixel, pitched */
    size_t edge_pitch, rw, rh;
};

struct pipeline_stats {
    unsigned long long mallocs, pitch_mallocs, frees, bytes_requested, peak_frame_bytes;
};

static size_t nv12_bytes(size_t w, size_t h)
{
    return w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2);
}

static void alloc_frame(struct frame_buffers *fb, struct resolution r, struct pipeline_stats *st)
{
    fb->rw = r.w * 2 / 3;
    fb->rh = r.h * 2 / 3;
    size_t in_bytes = nv12_bytes(r.w, r.h);
    size_t rs_bytes = fb->rw * fb->rh * 4;
    size_t cv_bytes = fb->rw * fb->rh * 3 * sizeof(float);
    WL_CUDA(cudaMalloc((void **)&fb->input, in_bytes)); /* SYM_ALLOC_FRAME */
    WL_CUDA(cudaMalloc((void **)&fb->resize, rs_bytes));
    WL_CUDA(cudaMalloc((void **)&fb->convert, cv_bytes));
    WL_CUDA(cudaMallocPitch((void **)&fb->edge, &fb->edge_pitch, r.w, r.h));
    size_t total = in_bytes + rs_bytes + cv_bytes + fb->edge_pitch * r.h;
    st->mallocs += 3;
    st->pitch_mallocs += 1;
    st->bytes_requested += in_bytes + rs_bytes + cv_bytes + r.w * r.h;
    if (total > st->peak_frame_bytes) st->peak_frame_bytes = total;
}

static void free_frame(struct frame_buffers *fb, struct pipeline_stats *st)
{
    /* Freed in a different order than allocated, as real pipelines tear down. */
    WL_CUDA(cudaFree(fb->convert));
    WL_CUDA(cudaFree(fb->input));
    WL_CUDA(cudaFree(fb->edge));
    WL_CUDA(cudaFree(fb->resize));
    st->frees += 4;
}

/* Upload a band of luma rows, overwrite part of it, "resize" by taking every other
 * row, convert into one float plane and lay it into the pitched edge map. */
static void process_band(const struct frame_buffers *fb, struct resolution r, long frame,
                         const unsigned char *host_band)
{
    size_t w = r.w;
    size_t y0 = (size_t)(frame * 7919) % (r.h - BAND_ROWS + 1);
    unsigned char *band = fb->input + y0 * w;
    WL_CUDA(cudaMemcpy(band, host_band, w * BAND_ROWS, cudaMemcpyHostToDevice));
    WL_CUDA(cudaMemset(band + w / 4, (int)((frame * 31) & 0xff), w / 2));

    size_t rs_pitch = fb->rw * 4;
    WL_CUDA(
        cudaMemcpy2D(fb->resize, rs_pitch, band, 2 * w, w, HALF_BAND, cudaMemcpyDeviceToDevice));

    size_t plane = (size_t)(frame % 3) * fb->rw * fb->rh * sizeof(float);
    unsigned char *cv = fb->convert + plane;
    WL_CUDA(
        cudaMemcpy2D(cv, rs_pitch, fb->resize, rs_pitch, w, HALF_BAND, cudaMemcpyDeviceToDevice));

    size_t shift = (size_t)(frame % 5);
    WL_CUDA(cudaMemset(fb->edge, 0x80, fb->edge_pitch * HALF_BAND));
    WL_CUDA(cudaMemcpy2D(fb->edge + shift, fb->edge_pitch, cv, rs_pitch, w - shift, HALF_BAND,
                         cudaMemcpyDeviceToDevice));
}

static void record_stats(unsigned char *stats_dev, const struct frame_buffers *fb, long frame)
{
    size_t slot = (size_t)(frame % (STATS_SIZE / STATS_REC)) * STATS_REC;
    WL_CUDA(cudaMemcpy(stats_dev + slot, fb->edge + (size_t)(frame % 64), STATS_REC,
                       cudaMemcpyDeviceToDevice));
}

static void run(long frames, struct wl_hash *hash, struct pipeline_stats *st)
{
    size_t max_w = 0;
    for (size_t i = 0; i < N_RES; i++)
        if (resolutions[i].w > max_w) max_w = resolutions[i].w;
    unsigned char *host_band = malloc(max_w * BAND_ROWS);
    unsigned char *host_out = malloc(max_w * HALF_BAND);
    unsigned char *host_stats = malloc(STATS_SIZE);
    if (!host_band || !host_out || !host_stats) {
        fprintf(stderr, "%s: out of host memory\n", wl_name());
        exit(WL_EXIT_CUDA);
    }

    unsigned char *stats_dev;
    WL_CUDA(cudaMalloc((void **)&stats_dev, STATS_SIZE));
    st->mallocs++;
    WL_CUDA(cudaMemset(stats_dev, 0, STATS_SIZE));

    struct wl_rng rng;
    wl_rng_seed(&rng, 2024);
    for (long f = 0; f < frames; f++) {
        struct resolution r = resolutions[(size_t)f % N_RES];
        struct frame_buffers fb;
        alloc_frame(&fb, r, st); /* SYM_RUN */
        wl_rng_fill(&rng, host_band, r.w * BAND_ROWS);
        process_band(&fb, r, f, host_band);
        record_stats(stats_dev, &fb, f);
        WL_CUDA(cudaMemcpy2D(host_out, r.w, fb.edge, fb.edge_pitch, r.w, HALF_BAND,
                             cudaMemcpyDeviceToHost));
        wl_hash_u64(hash, r.w * 65536 + r.h);
        wl_hash_bytes(hash, host_out, r.w * HALF_BAND);
        free_frame(&fb, st);
    }

    WL_CUDA(cudaMemcpy(host_stats, stats_dev, STATS_SIZE, cudaMemcpyDeviceToHost));
    wl_hash_bytes(hash, host_stats, STATS_SIZE);
    WL_CUDA(cudaFree(stats_dev));
    st->frees++;
    free(host_band);
    free(host_out);
    free(host_stats);
}

int main(int argc, char **argv)
{
    const char *usage = "[-n FRAMES]";
    wl_set_name("video_pipeline");
    long frames = 3000;
    int opt;
    while ((opt = getopt(argc, argv, "n:h")) != -1) {
        if (opt == 'n')
            frames = wl_parse_count(optarg, "-n", 1, 100000000);
        else
            wl_usage_error(usage);
    }
    if (optind != argc) wl_usage_error(usage);

    struct wl_hash hash;
    wl_hash_init(&hash);
    struct pipeline_stats st = {0};
    run(frames, &hash, &st); /* SYM_MAIN */
    WL_CUDA(cudaDeviceSynchronize());

    wl_print_checksum(&hash);
    printf("video_pipeline: %ld frames, %zu resolutions, %llu cudaMalloc, %llu cudaMallocPitch, "
           "%llu cudaFree, %llu bytes requested, largest frame %llu bytes\n",
           frames, N_RES, st.mallocs, st.pitch_mallocs, st.frees, st.bytes_requested,
           st.peak_frame_bytes);
    return 0;
}
