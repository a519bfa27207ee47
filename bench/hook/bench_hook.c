/* The cost of interception, seen from the application: a tight loop of
 * cudaMallocAsync/cudaFreeAsync and one of cudaMalloc/cudaFree, timed in one
 * process. run.sh runs it with and without libcudafrag.so preloaded and takes the
 * difference; this program only reports what it measured.
 *
 *   bench_hook loop ITERS NEST [EVICT_KIB]   time both loops (ITERS pairs per pass,
 *                                the fastest of 50 passes), NEST frames deep
 *   bench_hook async|sync ITERS NEST [EVICT_KIB]   one loop only (for a profiler)
 *   bench_hook live COUNT        hold COUNT allocations and print the VmRSS growth
 *
 * The loops run below NEST non-inlined frames so that stack capture walks as many
 * frames as it would in a real program, not just main's two.
 *
 * EVICT_KIB > 0: before every call the loop touches that many KiB of a private
 * buffer, and only the calls are timed. A real driver's call path touches megabytes
 * of its own state (measured on an H200, cudafrag's overhead there was three times
 * the simulated device's for the same bookkeeping), which pushes cudafrag's tables
 * out of the L1 and L2 caches between calls; the simulated device touches almost
 * nothing. 2048 KiB reproduces that here: every call starts with cold caches, and
 * the overhead is what its cache misses cost. A pass's figure is then the mean of
 * its pairs without the slowest 5 % (see EVICT_DROP_PERCENT). */
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Small requests: the device-side cost stays constant, so the loop mostly measures
 * the call path. 256 B is served by the pool's first chunk and by a shared page. */
#define REQUEST_BYTES 256
/* Stream-ordered frees run only when someone waits (as queued work does on a GPU);
 * synchronizing this often keeps the pending queue short in every run. */
#define SYNC_EVERY   256
#define WARMUP_ITERS 2000
#define PASSES       50
/* With eviction a call costs ~30 us of sweeping: fewer passes keep a run short,
 * and each pass already averages over the same cold-cache conditions. A pass then
 * lasts tens of milliseconds, longer than a time slice on a busy machine: the pairs
 * during which another process took the core (and left the caches in a state of
 * its own) are the slowest ones, and the slowest EVICT_DROP_PERCENT of a pass's
 * pairs are left out of its mean. */
#define EVICT_PASSES       10
#define EVICT_DROP_PERCENT 5

static void die(const char *what, cudaError_t rc)
{
    fprintf(stderr, "bench_hook: %s failed: %s\n", what, cudaGetErrorName(rc));
    exit(2);
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) die(#call, rc_);                                                   \
    } while (0)

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct loop_args {
    long iters;
    bool async, sync; /* which loops run */
    cudaStream_t stream;
    double async_ns, sync_ns; /* per call (an allocation and a free are two calls) */
};

/* The eviction buffer (EVICT_KIB); empty when the caches are left alone. pair_ns:
 * each pair's time in the current pass. */
static unsigned char *evict_buf;
static size_t evict_bytes;
static double *pair_ns;

/* One write per cache line: the lines become this buffer's, modified, so whatever
 * they held before (cudafrag's tables, the runtime's state) has to come back from
 * L3 or memory on its next use. */
static void evict(void)
{
    for (size_t i = 0; i < evict_bytes; i += 64)
        evict_buf[i]++;
    __asm__ volatile("" ::: "memory");
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* ns per call of a pass: the mean pair time without the slowest pairs, halved. */
static double pass_ns_per_call(long iters)
{
    qsort(pair_ns, (size_t)iters, sizeof *pair_ns, by_value);
    long kept = iters - iters * EVICT_DROP_PERCENT / 100;
    double ns = 0;
    for (long i = 0; i < kept; i++)
        ns += pair_ns[i];
    return ns / (2.0 * (double)kept);
}

/* The calls of a pass with eviction before each; returns ns per call. */
static double async_pairs_evicted(long iters, cudaStream_t stream)
{
    for (long i = 0; i < iters; i++) {
        void *p;
        cudaError_t rc;
        evict();
        double t0 = now_ns();
        rc = cudaMallocAsync(&p, REQUEST_BYTES, stream);
        double t1 = now_ns();
        if (rc != cudaSuccess) die("cudaMallocAsync", rc);
        evict();
        double t2 = now_ns();
        rc = cudaFreeAsync(p, stream);
        double t3 = now_ns();
        if (rc != cudaSuccess) die("cudaFreeAsync", rc);
        pair_ns[i] = (t1 - t0) + (t3 - t2);
        if (i % SYNC_EVERY == SYNC_EVERY - 1) CUDA_OK(cudaStreamSynchronize(stream));
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    return pass_ns_per_call(iters);
}

static double sync_pairs_evicted(long iters)
{
    for (long i = 0; i < iters; i++) {
        void *p;
        cudaError_t rc;
        evict();
        double t0 = now_ns();
        rc = cudaMalloc(&p, REQUEST_BYTES);
        double t1 = now_ns();
        if (rc != cudaSuccess) die("cudaMalloc", rc);
        evict();
        double t2 = now_ns();
        rc = cudaFree(p);
        double t3 = now_ns();
        if (rc != cudaSuccess) die("cudaFree", rc);
        pair_ns[i] = (t1 - t0) + (t3 - t2);
    }
    return pass_ns_per_call(iters);
}

static void async_pairs(long iters, cudaStream_t stream)
{
    for (long i = 0; i < iters; i++) {
        void *p;
        CUDA_OK(cudaMallocAsync(&p, REQUEST_BYTES, stream));
        CUDA_OK(cudaFreeAsync(p, stream));
        if (i % SYNC_EVERY == SYNC_EVERY - 1) CUDA_OK(cudaStreamSynchronize(stream));
    }
    CUDA_OK(cudaStreamSynchronize(stream));
}

static void sync_pairs(long iters)
{
    for (long i = 0; i < iters; i++) {
        void *p;
        CUDA_OK(cudaMalloc(&p, REQUEST_BYTES));
        CUDA_OK(cudaFree(p));
    }
}

/* The innermost frame: warm up (first-call initialisation, the first site), then
 * time PASSES short passes of each loop and keep the fastest. A pass lasts a
 * millisecond or two, so on a busy machine many passes are undisturbed; the fastest
 * one is the cost of the calls, not of the other processes. */
__attribute__((noinline)) static void timed_loops(struct loop_args *a)
{
    if (a->async) async_pairs(WARMUP_ITERS, a->stream);
    if (a->sync) sync_pairs(WARMUP_ITERS);
    a->async_ns = a->sync_ns = 1e300;
    double calls = 2.0 * (double)a->iters;
    if (evict_bytes) {
        for (int pass = 0; pass < EVICT_PASSES; pass++) {
            double async_ns = a->async ? async_pairs_evicted(a->iters, a->stream) : 0;
            double sync_ns = a->sync ? sync_pairs_evicted(a->iters) : 0;
            if (async_ns < a->async_ns) a->async_ns = async_ns;
            if (sync_ns < a->sync_ns) a->sync_ns = sync_ns;
        }
        return;
    }
    for (int pass = 0; pass < PASSES; pass++) {
        double t0 = now_ns();
        if (a->async) async_pairs(a->iters, a->stream);
        double t1 = now_ns();
        if (a->sync) sync_pairs(a->iters);
        double t2 = now_ns();
        if ((t1 - t0) / calls < a->async_ns) a->async_ns = (t1 - t0) / calls;
        if ((t2 - t1) / calls < a->sync_ns) a->sync_ns = (t2 - t1) / calls;
    }
}

/* The barrier after the call keeps the compiler from turning it into a tail
 * call, which would leave one frame instead of `levels`. */
__attribute__((noinline)) static void nest(int levels, struct loop_args *a)
{
    if (levels <= 0) {
        timed_loops(a);
        return;
    }
    nest(levels - 1, a);
    __asm__ volatile("" ::: "memory");
}

static int run_loops(const char *which, long iters, int levels, long evict_kib)
{
    if (evict_kib > 0) {
        evict_bytes = (size_t)evict_kib * 1024u;
        evict_buf = malloc(evict_bytes);
        pair_ns = calloc((size_t)(iters > 0 ? iters : 1), sizeof *pair_ns);
        if (evict_buf == NULL || pair_ns == NULL) return 2;
        memset(evict_buf, 0, evict_bytes);
    }
    struct loop_args a = {
        .iters = iters,
        .async = strcmp(which, "sync") != 0,
        .sync = strcmp(which, "async") != 0,
    };
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&a.stream, cudaStreamNonBlocking));
    nest(levels, &a);
    CUDA_OK(cudaStreamDestroy(a.stream));
    if (a.async) printf("async_ns_per_call %.2f\n", a.async_ns);
    if (a.sync) printf("sync_ns_per_call %.2f\n", a.sync_ns);
    free(evict_buf);
    free(pair_ns);
    return 0;
}

/* Resident set size in KiB, from /proc/self/status. */
static long vm_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

/* The growth of the process while COUNT allocations are live. The simulated device
 * keeps host-side bookkeeping of its own, so run.sh subtracts a run without cudafrag. */
static int run_live(long count)
{
    void **ptrs = calloc((size_t)count, sizeof *ptrs);
    if (ptrs == NULL) return 2;
    CUDA_OK(cudaSetDevice(0));
    void *first;
    CUDA_OK(cudaMalloc(&first, REQUEST_BYTES)); /* runtime and first-site set-up */
    long before = vm_rss_kib();
    for (long i = 0; i < count; i++)
        CUDA_OK(cudaMalloc(&ptrs[i], REQUEST_BYTES));
    long after = vm_rss_kib();
    for (long i = 0; i < count; i++)
        CUDA_OK(cudaFree(ptrs[i]));
    CUDA_OK(cudaFree(first));
    free(ptrs);
    printf("live_rss_kib %ld\n", after - before);
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 4 || argc == 5) && (strcmp(argv[1], "loop") == 0 ||
                                     strcmp(argv[1], "async") == 0 || strcmp(argv[1], "sync") == 0))
        return run_loops(argv[1], strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10),
                         argc == 5 ? strtol(argv[4], NULL, 10) : 0);
    if (argc == 3 && strcmp(argv[1], "live") == 0) return run_live(strtol(argv[2], NULL, 10));
    fprintf(stderr, "usage: %s loop|async|sync ITERS NEST [EVICT_KIB] | live COUNT\n", argv[0]);
    return 2;
}
