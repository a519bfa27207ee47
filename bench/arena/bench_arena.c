/* Arena benchmarks: alloc+free pair cost and its growth with the number of live
 * blocks (host-only TLSF and the full arena on whatever libcuda.so.1 is
 * loaded), thread scaling, the driver's own calls for comparison, and the
 * mapped/live ratio of a synthetic workload replayed on the shadow model.
 * Prints tables; numbers are per pair unless noted. --trace, --trace-arena and
 * --trace-async replay a transformer training trace instead (see
 * replay_trace) and print peak mapped / peak live; --threads and --shadow run
 * the thread scaling table or the random shadow workload alone. */
#include "arena/arena.h"
#include "arena/shadow.h"
#include "arena/tlsf.h"
#include "config/config.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 64 /* pairs timed together: one clock read per batch */

static bool quick;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Log-uniform-ish sizes from 256 B to 64 KiB for the timed pairs. */
static uint64_t small_size(void)
{
    return (uint64_t)256 << (rnd() % 9);
}

/* Sizes of the live population: mostly small, some up to 4 MiB. */
static uint64_t live_size(void)
{
    return rnd() % 16 ? 256 + rnd() % (64 << 10) : (1 << 20) + rnd() % (3 << 20);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct dist {
    double p50, p99;
};

static struct dist summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (struct dist){v[n / 2], v[n * 99 / 100]};
}

/* ---- host-only TLSF ---- */

static struct dist tlsf_pairs(int live_blocks)
{
    struct tlsf t;
    tlsf_init(&t);
    tlsf_add_region(&t, (uint64_t)1 << 40, (uint64_t)1 << 40);
    struct tlsf_block **live = malloc(sizeof *live * (size_t)live_blocks);
    /* Populate, then free a random half and refill it, so that the free lists
     * hold many scattered holes as in a long-running program. */
    for (int i = 0; i < live_blocks; i++)
        live[i] = tlsf_alloc(&t, live_size());
    for (int i = 0; i < live_blocks; i += 2)
        tlsf_free(&t, live[i]);
    for (int i = 0; i < live_blocks; i += 2)
        live[i] = tlsf_alloc(&t, live_size());
    int batches = quick ? 500 : 4000;
    double *v = malloc(sizeof *v * (size_t)batches);
    uint64_t sizes[BATCH];
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++)
            sizes[i] = small_size();
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            tlsf_free(&t, tlsf_alloc(&t, sizes[i]));
        v[b] = (double)(now_ns() - t0) / BATCH;
    }
    struct dist d = summarize(v, batches);
    free(v);
    free(live);
    tlsf_destroy(&t);
    return d;
}

/* Steady churn: free a random live block, allocate a new one in its place. */
static struct dist tlsf_churn(int live_blocks)
{
    struct tlsf t;
    tlsf_init(&t);
    tlsf_add_region(&t, (uint64_t)1 << 40, (uint64_t)1 << 40);
    struct tlsf_block **live = malloc(sizeof *live * (size_t)live_blocks);
    for (int i = 0; i < live_blocks; i++)
        live[i] = tlsf_alloc(&t, live_size());
    int batches = quick ? 500 : 4000;
    double *v = malloc(sizeof *v * (size_t)batches);
    uint32_t idx[BATCH];
    uint64_t sizes[BATCH];
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++) {
            idx[i] = (uint32_t)(rnd() % (uint64_t)live_blocks);
            sizes[i] = live_size();
        }
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            tlsf_free(&t, live[idx[i]]);
            live[idx[i]] = tlsf_alloc(&t, sizes[i]);
        }
        v[b] = (double)(now_ns() - t0) / BATCH;
    }
    struct dist d = summarize(v, batches);
    if (tlsf_check(&t)) printf("  (tlsf_check failed)\n");
    free(v);
    free(live);
    tlsf_destroy(&t);
    return d;
}

/* ---- the arena on the loaded driver ---- */

static CUcontext ctx;

static struct dist arena_pairs(int live_blocks, bool async, CUstream s)
{
    CUdeviceptr *live = malloc(sizeof *live * (size_t)live_blocks);
    for (int i = 0; i < live_blocks; i++)
        if (cf_arena_alloc(&live[i], 256 + rnd() % 4096, s, async, NULL) != CUDA_SUCCESS)
            live[i] = 0;
    int batches = quick ? 300 : 2000;
    double *v = malloc(sizeof *v * (size_t)batches);
    uint64_t sizes[BATCH];
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++)
            sizes[i] = small_size();
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            CUdeviceptr p;
            if (cf_arena_alloc(&p, sizes[i], s, async, NULL) == CUDA_SUCCESS)
                cf_arena_free(p, s, async);
        }
        v[b] = (double)(now_ns() - t0) / BATCH;
    }
    for (int i = 0; i < live_blocks; i++)
        if (live[i]) cf_arena_free(live[i], s, async);
    cuCtxSynchronize();
    struct dist d = summarize(v, batches);
    free(v);
    free(live);
    return d;
}

/* The driver's own calls, same sizes (pairs of cuMemAlloc/cuMemFree or the
 * stream-ordered pair on the default pool). */
static struct dist driver_pairs(bool async, CUstream s)
{
    int batches = quick ? 20 : 100, per = 16;
    double *v = malloc(sizeof *v * (size_t)batches);
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < per; i++) {
            CUdeviceptr p;
            size_t n = (size_t)small_size();
            if (async) {
                if (cuMemAllocAsync(&p, n, s) == CUDA_SUCCESS) cuMemFreeAsync(p, s);
            } else if (cuMemAlloc(&p, n) == CUDA_SUCCESS) {
                cuMemFree(p);
            }
        }
        v[b] = (double)(now_ns() - t0) / per;
    }
    cuStreamSynchronize(s);
    struct dist d = summarize(v, batches);
    free(v);
    return d;
}

struct thread_job {
    int pairs;
    bool queries_only; /* just the two driver queries an allocation makes */
    double ns;
};

static void *thread_pairs(void *arg)
{
    struct thread_job *j = arg;
    cuCtxSetCurrent(ctx);
    uint64_t t0 = now_ns();
    for (int i = 0; i < j->pairs && j->queries_only; i++) {
        CUcontext c;
        CUstreamCaptureStatus st;
        cuCtxGetCurrent(&c);
        cuStreamIsCapturing(CU_STREAM_LEGACY, &st);
    }
    for (int i = 0; i < j->pairs && !j->queries_only; i++) {
        CUdeviceptr p;
        if (cf_arena_alloc(&p, (uint64_t)256 << (i % 9), NULL, false, NULL) == CUDA_SUCCESS)
            cf_arena_free(p, NULL, false);
    }
    j->ns = (double)(now_ns() - t0) / j->pairs;
    return NULL;
}

static void thread_scaling(bool queries_only)
{
    printf("\n%s from N threads (mean per pair per thread, aggregate rate)\n",
           queries_only ? "cuCtxGetCurrent + cuStreamIsCapturing(legacy) only"
                        : "Arena, synchronous pairs");
    printf("%8s %14s %16s\n", "threads", "ns/pair", "Mpairs/s total");
    int counts[] = {1, 4, 16};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        pthread_t t[16];
        struct thread_job jobs[16];
        uint64_t t0 = now_ns();
        for (int i = 0; i < n; i++) {
            jobs[i].pairs = quick ? 20000 : 200000;
            jobs[i].queries_only = queries_only;
            pthread_create(&t[i], NULL, thread_pairs, &jobs[i]);
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(t[i], NULL);
            sum += jobs[i].ns;
        }
        double wall = (double)(now_ns() - t0);
        printf("%8d %14.1f %16.2f\n", n, sum / n, (double)jobs[0].pairs * n / wall * 1e3);
    }
}

/* ---- mapped vs live on a synthetic workload (shadow model) ---- */

static void shadow_ratio(void)
{
    setenv("CUDAFRAG_SHADOW", "1", 1);
    cf_config_reload();
    cf_shadow_reset();
    int n = quick ? 20000 : 200000, cap = 4096;
    uint64_t *addr = calloc((size_t)cap, sizeof *addr);
    uint64_t next = 0x1000;
    for (int i = 0; i < n; i++) {
        int k = (int)(rnd() % (uint64_t)cap);
        if (addr[k]) {
            cf_shadow_free(addr[k]);
            addr[k] = 0;
        } else {
            /* 256 B .. 64 MiB, log-uniform */
            uint64_t size = ((uint64_t)256 << (rnd() % 19)) + rnd() % 256;
            cf_shadow_alloc(addr[k] = next++, size, 0);
        }
    }
    struct cf_arena_stats s;
    cf_arena_get_stats(NULL, &s);
    printf("\nShadow model, %d random ops, 256 B - 64 MiB, <= %d live, slack %s\n", n, cap,
           getenv("CUDAFRAG_ARENA_SLACK") ? getenv("CUDAFRAG_ARENA_SLACK") : "64M");
    printf("  peak live %.1f MiB, peak mapped %.1f MiB, ratio %.3f, ext frag at peak %.3f, "
           "modelled driver calls %llu for %llu allocations\n",
           s.peak_live / 1048576.0, s.peak_mapped / 1048576.0,
           (double)s.peak_mapped / (double)s.peak_live, s.ext_frag_at_peak,
           (unsigned long long)s.driver_calls, (unsigned long long)s.allocs_served);
    free(addr);
}

/* ---- trace replay: a transformer training loop ---- */

#define TRACE_LAYERS 12
#define TRACE_STEPS  55
#define TRACE_D      1024
#define TRACE_BATCH  8
/* Activations a layer keeps for backward, in units of seq x batch x d floats:
 * qkv, attention output, projection, MLP hidden (4 d), MLP output. */
static const int trace_acts[] = {3, 1, 1, 4, 1};
#define TRACE_ACTS (int)(sizeof trace_acts / sizeof trace_acts[0])

struct replay {
    const char *name;
    void (*alloc)(uint64_t *handle, uint64_t size);
    void (*free)(uint64_t handle);
};

static uint64_t shadow_next = 0x1000;
static void shadow_alloc_fn(uint64_t *h, uint64_t size)
{
    cf_shadow_alloc(*h = shadow_next++, size, 0);
}
static void shadow_free_fn(uint64_t h)
{
    cf_shadow_free(h);
}

static CUstream trace_stream; /* NULL: synchronous frees */
static void arena_alloc_fn(uint64_t *h, uint64_t size)
{
    CUdeviceptr p = 0;
    if (cf_arena_alloc(&p, size, trace_stream, trace_stream != NULL, NULL) != CUDA_SUCCESS) p = 0;
    *h = p;
}
static void arena_free_fn(uint64_t h)
{
    if (h) cf_arena_free(h, trace_stream, trace_stream != NULL);
}

/* Weights live throughout; per step a random sequence length (128-1024) sets
 * the activation sizes, allocated forward layer by layer and freed backward in
 * reverse order, with one gradient buffer per activation alive while its layer
 * runs backward (what a framework's autograd does). */
static void replay_trace(const struct replay *r)
{
    uint64_t dd = (uint64_t)TRACE_D * TRACE_D * 4;
    uint64_t weights[TRACE_LAYERS][4], acts[TRACE_LAYERS][TRACE_ACTS];
    for (int l = 0; l < TRACE_LAYERS; l++) {
        r->alloc(&weights[l][0], 3 * dd);
        r->alloc(&weights[l][1], dd);
        r->alloc(&weights[l][2], 4 * dd);
        r->alloc(&weights[l][3], 4 * dd);
    }
    for (int step = 0; step < TRACE_STEPS; step++) {
        uint64_t seq = 128 + rnd() % (1024 - 128 + 1);
        uint64_t unit = seq * TRACE_BATCH * TRACE_D * 4;
        for (int l = 0; l < TRACE_LAYERS; l++)
            for (int a = 0; a < TRACE_ACTS; a++)
                r->alloc(&acts[l][a], (uint64_t)trace_acts[a] * unit);
        for (int l = TRACE_LAYERS - 1; l >= 0; l--) {
            uint64_t grads[TRACE_ACTS];
            for (int a = TRACE_ACTS - 1; a >= 0; a--)
                r->alloc(&grads[a], (uint64_t)trace_acts[a] * unit);
            for (int a = TRACE_ACTS - 1; a >= 0; a--) {
                r->free(grads[a]);
                r->free(acts[l][a]);
            }
        }
    }
    for (int l = 0; l < TRACE_LAYERS; l++)
        for (int w = 0; w < 4; w++)
            r->free(weights[l][w]);
}

static void print_trace(const char *what, const struct cf_arena_stats *s)
{
    printf("%-40s peak live %8.1f MiB  peak mapped %8.1f MiB  ratio %.3f  driver calls %llu "
           "(%.4f per allocation)\n",
           what, s->peak_live / 1048576.0, s->peak_mapped / 1048576.0,
           (double)s->peak_mapped / (double)s->peak_live, (unsigned long long)s->driver_calls,
           (double)s->driver_calls / (double)s->allocs_served);
}

/* --trace: the shadow model; --trace-arena / --trace-async: the arena on the
 * loaded driver with synchronous or same-stream stream-ordered frees. One
 * replay per process, so the peaks are the trace's own. */
static int trace_main(const char *mode)
{
    struct cf_arena_stats st;
    if (strcmp(mode, "--trace") == 0) {
        setenv("CUDAFRAG_SHADOW", "1", 1);
        cf_config_reload();
        cf_shadow_reset();
        replay_trace(&(struct replay){"shadow", shadow_alloc_fn, shadow_free_fn});
        cf_arena_get_stats(NULL, &st);
        print_trace("transformer trace, shadow model", &st);
        return 0;
    }
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_ASYNC", "1", 1);
    cf_config_reload();
    CUdevice dev;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || !cf_arena_enabled()) {
        printf("no CUDA device: arena trace skipped\n");
        return 0;
    }
    bool async = strcmp(mode, "--trace-async") == 0;
    if (async && cuStreamCreate(&trace_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
    replay_trace(&(struct replay){"arena", arena_alloc_fn, arena_free_fn});
    cuCtxSynchronize();
    cf_arena_get_stats(&st, NULL);
    print_trace(async ? "transformer trace, arena, stream-ordered frees"
                      : "transformer trace, arena, synchronous frees",
                &st);
    return st.ooms != 0;
}

static void print_row(const char *what, struct dist a, struct dist b)
{
    printf("%-34s %9.1f %9.1f %9.1f %9.1f %8.2fx\n", what, a.p50, a.p99, b.p50, b.p99,
           b.p50 / a.p50);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strncmp(argv[1], "--trace", 7) == 0) return trace_main(argv[1]);
    quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    bool threads_only = argc > 1 && strcmp(argv[1], "--threads") == 0;
    if (argc > 1 && strcmp(argv[1], "--shadow") == 0) {
        shadow_ratio();
        return 0;
    }
    printf("%-34s %9s %9s %9s %9s %9s\n", "alloc+free pair (ns)", "1k p50", "1k p99", "100k p50",
           "100k p99", "growth");
    print_row("TLSF host-only, pair", tlsf_pairs(1000), tlsf_pairs(100000));
    print_row("TLSF host-only, churn", tlsf_churn(1000), tlsf_churn(100000));

    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_ASYNC", "1", 1);
    cf_config_reload();
    CUdevice dev;
    CUstream s;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS || !cf_arena_enabled()) {
        printf("no CUDA device: arena rows skipped\n");
        shadow_ratio();
        return 0;
    }
    if (threads_only) {
        thread_scaling(false);
        return 0;
    }
    print_row("arena, sync pair", arena_pairs(1000, false, NULL), arena_pairs(100000, false, NULL));
    print_row("arena, async pair (same stream)", arena_pairs(1000, true, s),
              arena_pairs(100000, true, s));
    struct dist da = driver_pairs(false, s), dm = driver_pairs(true, s);
    printf("%-34s %9.1f %9.1f\n", "cuMemAlloc+cuMemFree", da.p50, da.p99);
    printf("%-34s %9.1f %9.1f\n", "cuMemAllocAsync+cuMemFreeAsync", dm.p50, dm.p99);
    thread_scaling(false);
    thread_scaling(true);
    struct cf_arena_stats st;
    cf_arena_get_stats(&st, NULL);
    printf("\narena: vmm=%d allocs %llu, driver calls %llu (%.4f per allocation), peak mapped "
           "%.1f MiB, peak live %.1f MiB\n",
           st.vmm, (unsigned long long)st.allocs_served, (unsigned long long)st.driver_calls,
           (double)st.driver_calls / (double)st.allocs_served, st.peak_mapped / 1048576.0,
           st.peak_live / 1048576.0);
    shadow_ratio();
    return 0;
}
