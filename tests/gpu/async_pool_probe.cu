/* async_pool_probe: what the driver's stream-ordered pool really reserves.
 *
 * Runs scripted sequences of cudaMallocFromPoolAsync / cudaFreeAsync /
 * synchronizations / trims / attribute changes on fresh pools and prints, after
 * every operation, one CSV row with the pool's cudaMemPoolAttrReservedMemCurrent
 * (and ReservedMemHigh, UsedMemCurrent, UsedMemHigh) and where an allocation was
 * placed, so that the `async-pool` replay model (src/replay/model_async_pool.c)
 * can be fitted to the real pool (docs/replay.md, "What the async-pool model
 * lacks"). Measurements only: it asserts nothing.
 *
 *   nvcc -arch=sm_90 -O2 -o async_pool_probe tests/gpu/async_pool_probe.cu
 *   ./async_pool_probe [--device N] [--scenario NAME]... [--list] > pool.csv
 *
 * Columns: scenario,step,op,stream,bytes,arg,result,address,offset,
 *          reserved_current,reserved_high,used_current,used_high
 * op: alloc (bytes requested; arg: the allocation's id), free (arg: id), busy (a
 * kernel spinning arg microseconds on the stream, so that work queued behind it,
 * a free for instance, has not completed), sync-stream, sync-device, sync-event,
 * record (an event on the stream), wait (the stream waits for the last event),
 * threshold (arg: bytes), reuse (arg: bit 0 follow event dependencies, bit 1
 * allow opportunistic, bit 2 allow internal dependencies), trim (arg: bytes to
 * keep), pool (a fresh pool; arg: 1 the device's default pool). address: the
 * allocation's address in hex; offset: bytes from the scenario's first
 * allocation (placement, reuse, whether chunks are contiguous). result: the
 * cudaError_t of the call (0 success). Lines starting with '#' describe the
 * device.
 *
 * Built with a plain C++ compiler (no nvcc: the simulated device of the tests),
 * `busy` launches nothing and says so in its result column (-1). */
#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_spin.h"

#define KiB    ((size_t)1 << 10)
#define MiB    ((size_t)1 << 20)
#define GiB    ((size_t)1 << 30)
#define MAX_ID 256

struct probe {
    int device;
    const char *scenario;
    int step;
    cudaMemPool_t pool;
    bool default_pool;
    cudaStream_t s[2];
    cudaEvent_t ev;
    void *ptr[MAX_ID];
    uintptr_t base;
};

static void attr(cudaMemPool_t pool, cudaMemPoolAttr a, unsigned long long *v)
{
    uint64_t x = 0;
    *v = cudaMemPoolGetAttribute(pool, a, &x) == cudaSuccess ? (unsigned long long)x : 0;
}

static void row(struct probe *p, const char *op, int stream, size_t bytes, unsigned long long arg,
                int rc, const void *addr)
{
    unsigned long long rc_, rh, uc, uh;
    attr(p->pool, cudaMemPoolAttrReservedMemCurrent, &rc_);
    attr(p->pool, cudaMemPoolAttrReservedMemHigh, &rh);
    attr(p->pool, cudaMemPoolAttrUsedMemCurrent, &uc);
    attr(p->pool, cudaMemPoolAttrUsedMemHigh, &uh);
    printf("%s,%d,%s,%d,%zu,%llu,%d,", p->scenario, p->step++, op, stream, bytes, arg, rc);
    if (addr)
        printf("0x%llx,%lld,", (unsigned long long)(uintptr_t)addr,
               (long long)((uintptr_t)addr - p->base));
    else
        printf(",,");
    printf("%llu,%llu,%llu,%llu\n", rc_, rh, uc, uh);
}

static void alloc(struct probe *p, int id, size_t bytes, int stream)
{
    void *ptr = NULL;
    int rc = (int)cudaMallocFromPoolAsync(&ptr, bytes, p->pool, p->s[stream]);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        ptr = NULL;
    }
    p->ptr[id] = ptr;
    if (ptr && p->base == 0) p->base = (uintptr_t)ptr;
    row(p, "alloc", stream, bytes, id, rc, ptr);
}

static void release(struct probe *p, int id, int stream)
{
    if (p->ptr[id] == NULL) return;
    int rc = (int)cudaFreeAsync(p->ptr[id], p->s[stream]);
    p->ptr[id] = NULL;
    row(p, "free", stream, 0, id, rc, NULL);
}

static void busy(struct probe *p, int stream, unsigned long long us)
{
#ifdef __CUDACC__
    spin<<<1, 1, 0, p->s[stream]>>>(us * 1000ull);
    row(p, "busy", stream, 0, us, (int)cudaGetLastError(), NULL);
#else
    row(p, "busy", stream, 0, us, -1, NULL);
#endif
}

static void sync_stream(struct probe *p, int stream)
{
    row(p, "sync-stream", stream, 0, 0, (int)cudaStreamSynchronize(p->s[stream]), NULL);
}

static void sync_device(struct probe *p)
{
    row(p, "sync-device", -1, 0, 0, (int)cudaDeviceSynchronize(), NULL);
}

static void record(struct probe *p, int stream)
{
    row(p, "record", stream, 0, 0, (int)cudaEventRecord(p->ev, p->s[stream]), NULL);
}

static void sync_event(struct probe *p)
{
    row(p, "sync-event", -1, 0, 0, (int)cudaEventSynchronize(p->ev), NULL);
}

static void wait_event(struct probe *p, int stream)
{
    row(p, "wait", stream, 0, 0, (int)cudaStreamWaitEvent(p->s[stream], p->ev, 0), NULL);
}

static void threshold(struct probe *p, unsigned long long bytes)
{
    uint64_t v = bytes;
    int rc = (int)cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrReleaseThreshold, &v);
    row(p, "threshold", -1, 0, bytes, rc, NULL);
}

static void reuse(struct probe *p, int mask)
{
    static const cudaMemPoolAttr attrs[3] = {cudaMemPoolReuseFollowEventDependencies,
                                             cudaMemPoolReuseAllowOpportunistic,
                                             cudaMemPoolReuseAllowInternalDependencies};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        int on = (mask >> i) & 1;
        int r = (int)cudaMemPoolSetAttribute(p->pool, attrs[i], &on);
        if (r) rc = r;
    }
    row(p, "reuse", -1, 0, mask, rc, NULL);
}

static void trim(struct probe *p, size_t keep)
{
    row(p, "trim", -1, 0, keep, (int)cudaMemPoolTrimTo(p->pool, keep), NULL);
}

/* A fresh pool (or the device's default one, trimmed), the release threshold at
 * its maximum as PyTorch's and JAX's pools have it, every reuse policy on (CUDA's
 * default). */
static void begin(struct probe *p, const char *scenario, bool default_pool)
{
    p->scenario = scenario;
    p->step = 0;
    p->base = 0;
    p->default_pool = default_pool;
    memset(p->ptr, 0, sizeof p->ptr);
    int rc;
    if (default_pool) {
        rc = (int)cudaDeviceGetDefaultMemPool(&p->pool, p->device);
        if (rc == cudaSuccess) rc = (int)cudaMemPoolTrimTo(p->pool, 0);
    } else {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = p->device;
        rc = (int)cudaMemPoolCreate(&p->pool, &props);
    }
    if (rc != cudaSuccess) {
        fprintf(stderr, "async_pool_probe: %s: no pool: error %d\n", scenario, rc);
        exit(1);
    }
    uint64_t zero = 0;
    cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrReservedMemHigh, &zero);
    cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrUsedMemHigh, &zero);
    row(p, "pool", -1, 0, default_pool, rc, NULL);
    threshold(p, UINT64_MAX);
    reuse(p, 7);
}

static void end(struct probe *p)
{
    for (int id = 0; id < MAX_ID; id++)
        if (p->ptr[id]) cudaFreeAsync(p->ptr[id], p->s[0]);
    cudaDeviceSynchronize();
    if (p->default_pool)
        cudaMemPoolTrimTo(p->pool, 0);
    else
        cudaMemPoolDestroy(p->pool);
}

/* ---- the scenarios ---- */

/* How the pool grows: 16 allocations of one size on a fresh pool, for sizes from
 * 1 KiB to 1 GiB (the model: 32 MiB for requests up to 1 MiB, the request
 * rounded up to 2 MiB above). */
static void growth(struct probe *p)
{
    static const size_t sizes[] = {
        1 * KiB,     4 * KiB,  64 * KiB, 512 * KiB, 1 * MiB,   1 * MiB + 1, 2 * MiB - 1, 2 * MiB,
        2 * MiB + 1, 3 * MiB,  4 * MiB,  8 * MiB,   10 * MiB,  16 * MiB,    20 * MiB,    30 * MiB,
        32 * MiB,    33 * MiB, 64 * MiB, 100 * MiB, 128 * MiB, 256 * MiB,   512 * MiB,   1 * GiB};
    static char names[sizeof sizes / sizeof sizes[0]][32];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(names[i], sizeof names[i], "growth-%zu", sizes[i]);
        begin(p, names[i], false);
        for (int k = 0; k < 16; k++)
            alloc(p, k, sizes[i], 0);
        end(p);
    }
}

/* Does the free space of neighbouring growths merge? Two 20 MiB allocations (two
 * growths), both freed, then one of 40 MiB; the same for 32 x 1 MiB twice then
 * 40 MiB; and five of ten 100 MiB blocks freed side by side, then 150 MiB ones.
 * The model never merges across growths. */
static void cross_chunk(struct probe *p)
{
    begin(p, "cross-chunk-20M", false);
    alloc(p, 0, 20 * MiB, 0);
    alloc(p, 1, 20 * MiB, 0);
    release(p, 0, 0);
    release(p, 1, 0);
    sync_stream(p, 0);
    alloc(p, 2, 40 * MiB, 0);
    release(p, 2, 0);
    alloc(p, 3, 30 * MiB, 0);
    alloc(p, 4, 10 * MiB, 0);
    end(p);

    begin(p, "cross-chunk-small", false);
    for (int k = 0; k < 64; k++)
        alloc(p, k, 1 * MiB, 0);
    for (int k = 0; k < 64; k++)
        release(p, k, 0);
    sync_stream(p, 0);
    alloc(p, 64, 40 * MiB, 0);
    alloc(p, 65, 20 * MiB, 0);
    end(p);

    begin(p, "cross-chunk-100M", false);
    for (int k = 0; k < 10; k++)
        alloc(p, k, 100 * MiB, 0);
    for (int k = 0; k < 5; k++)
        release(p, k, 0);
    sync_stream(p, 0);
    for (int k = 10; k < 13; k++)
        alloc(p, k, 150 * MiB, 0);
    end(p);
}

/* Placement: which hole a request takes (best fit, first fit, most recently
 * freed), and whether small requests go into the free part of a large growth. */
static void placement(struct probe *p)
{
    begin(p, "placement-holes", false);
    for (int k = 0; k < 8; k++)
        alloc(p, k, 4 * MiB, 0);
    release(p, 1, 0);
    release(p, 5, 0);
    release(p, 3, 0);
    sync_stream(p, 0);
    alloc(p, 8, 4 * MiB, 0);
    alloc(p, 9, 2 * MiB, 0);
    alloc(p, 10, 6 * MiB, 0);
    alloc(p, 11, 4 * MiB, 0);
    end(p);

    begin(p, "placement-best-fit", false);
    alloc(p, 0, 64 * MiB, 0);
    alloc(p, 1, 1 * MiB + 1, 0); /* keeps the 64 MiB growth from being one block */
    alloc(p, 2, 8 * MiB, 0);
    alloc(p, 3, 1 * MiB + 1, 0);
    release(p, 0, 0);
    release(p, 2, 0);
    sync_stream(p, 0);
    alloc(p, 4, 6 * MiB, 0); /* best fit: the 8 MiB hole; first fit: the 64 MiB one */
    end(p);

    begin(p, "small-into-large", false);
    alloc(p, 0, 64 * MiB, 0);
    release(p, 0, 0);
    sync_stream(p, 0);
    alloc(p, 1, 1 * KiB, 0);
    alloc(p, 2, 1 * MiB, 0);
    alloc(p, 3, 60 * MiB, 0);
    alloc(p, 4, 3 * MiB, 0);
    end(p);
}

/* The release threshold: when memory goes back (at the free, at which kind of
 * synchronization, at the next allocation), how much is kept, and whether part
 * of a growth can go back. */
static void release_rules(struct probe *p)
{
    begin(p, "threshold-0", false);
    threshold(p, 0);
    alloc(p, 0, 64 * MiB, 0);
    release(p, 0, 0);
    alloc(p, 1, 1 * KiB, 0); /* no synchronization yet */
    release(p, 1, 0);
    sync_stream(p, 0);
    alloc(p, 2, 64 * MiB, 0);
    release(p, 2, 0);
    sync_device(p);
    alloc(p, 3, 64 * MiB, 0);
    release(p, 3, 0);
    record(p, 0);
    sync_event(p);
    alloc(p, 4, 64 * MiB, 0);
    busy(p, 0, 100000);
    release(p, 4, 0);
    sync_stream(p, 1); /* another stream: does it trim the pool too? */
    sync_stream(p, 0);
    end(p);

    begin(p, "threshold-40M", false);
    threshold(p, 40 * MiB);
    for (int k = 0; k < 3; k++)
        alloc(p, k, 32 * MiB, 0);
    for (int k = 0; k < 3; k++)
        release(p, k, 0);
    sync_stream(p, 0);
    for (int k = 3; k < 7; k++)
        alloc(p, k, 1 * MiB, 0);
    for (int k = 3; k < 7; k++)
        release(p, k, 0);
    sync_stream(p, 0);
    end(p);

    begin(p, "trim", false);
    for (int k = 0; k < 8; k++)
        alloc(p, k, 8 * MiB, 0);
    for (int k = 1; k < 8; k += 2)
        release(p, k, 0);
    sync_stream(p, 0);
    trim(p, 0);
    for (int k = 0; k < 8; k += 2)
        release(p, k, 0);
    sync_stream(p, 0);
    trim(p, 16 * MiB);
    trim(p, 0);
    end(p);

    begin(p, "trim-partial", false);
    alloc(p, 0, 64 * MiB, 0);
    release(p, 0, 0);
    sync_stream(p, 0);
    alloc(p, 1, 1 * KiB, 0); /* a small block alive in the 64 MiB growth */
    trim(p, 0);
    alloc(p, 2, 32 * MiB, 0);
    end(p);
}

/* Reuse across streams under each policy: a free queued behind 200 ms of work on
 * stream 0, then the same size on stream 1 with no ordering, after an event
 * wait, after the free completed; and on stream 0 itself. Each with growths of
 * 64 MiB. */
static void streams(struct probe *p)
{
    static const struct {
        const char *name;
        int mask;
    } policies[] = {{"streams-all", 7},
                    {"streams-none", 0},
                    {"streams-follow-events", 1},
                    {"streams-opportunistic", 2},
                    {"streams-internal-deps", 4}};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        begin(p, policies[i].name, false);
        reuse(p, policies[i].mask);
        alloc(p, 0, 64 * MiB, 0);
        busy(p, 0, 200000);
        release(p, 0, 0);
        alloc(p, 1, 64 * MiB, 1); /* unordered with the free */
        release(p, 1, 1);
        sync_device(p);
        alloc(p, 2, 64 * MiB, 0);
        busy(p, 0, 200000);
        release(p, 2, 0);
        record(p, 0);
        wait_event(p, 1);
        alloc(p, 3, 64 * MiB, 1); /* ordered after the free by the event */
        release(p, 3, 1);
        sync_device(p);
        alloc(p, 4, 64 * MiB, 0);
        release(p, 4, 0);
        sync_stream(p, 0);
        alloc(p, 5, 64 * MiB, 1); /* the free has completed */
        release(p, 5, 1);
        sync_device(p);
        alloc(p, 6, 64 * MiB, 0);
        busy(p, 0, 200000);
        release(p, 6, 0);
        alloc(p, 7, 64 * MiB, 0); /* the same stream */
        end(p);
    }
}

/* The default pool (cudaMallocAsync) against a created one: the cross-chunk
 * sequence again. */
static void default_pool(struct probe *p)
{
    begin(p, "default-pool", true);
    alloc(p, 0, 20 * MiB, 0);
    alloc(p, 1, 20 * MiB, 0);
    release(p, 0, 0);
    release(p, 1, 0);
    sync_stream(p, 0);
    alloc(p, 2, 40 * MiB, 0);
    alloc(p, 3, 1 * KiB, 0);
    end(p);
}

/* A training-loop shape on one stream: per step, activations that grow with a
 * varying sequence length, an attention temporary, logits over a large
 * vocabulary, freed in reverse during a backward pass that allocates gradients;
 * a synchronization at the end of each step. Run under `cudafrag run --trace`,
 * the same operations replay through the model for a side-by-side figure. */
static void training(struct probe *p)
{
    begin(p, "training", false);
    int next = 0;
    for (int step = 0; step < 24; step++) {
        size_t len = 256 + (size_t)((step * 5) % 7) * 128; /* 256 .. 1024 tokens */
        int act[12], id;
        for (int l = 0; l < 12; l++) {
            act[l] = next++ % MAX_ID;
            alloc(p, act[l], len * 4096 * 2, 0); /* hidden states */
            id = next++ % MAX_ID;
            alloc(p, id, len * len * 16 * 2, 0); /* attention scores */
            release(p, id, 0);
        }
        int logits = next++ % MAX_ID;
        alloc(p, logits, len * 32000 * 2, 0);
        release(p, logits, 0);
        for (int l = 11; l >= 0; l--) {
            id = next++ % MAX_ID;
            alloc(p, id, len * 4096 * 2, 0); /* gradient */
            release(p, act[l], 0);
            release(p, id, 0);
        }
        sync_stream(p, 0);
    }
    end(p);
}

struct scenario {
    const char *name;
    void (*run)(struct probe *);
    const char *what;
};
static const struct scenario scenarios[] = {
    {"growth", growth, "16 allocations of one size, 1 KiB to 1 GiB, each on a fresh pool"},
    {"cross-chunk", cross_chunk, "whether the free space of separate growths merges"},
    {"placement", placement, "which hole a request takes; small requests in large growths"},
    {"release", release_rules, "release threshold, synchronizations, trimming"},
    {"streams", streams, "reuse across streams under each reuse policy"},
    {"default-pool", default_pool, "the device's default pool against a created one"},
    {"training", training, "a training-loop shape with varying sequence length"},
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static void describe_device(int device)
{
    struct cudaDeviceProp prop;
    int drv = 0, rt = 0, pools = 0;
    size_t free_b = 0, total = 0;
    memset(&prop, 0, sizeof prop);
    cudaGetDeviceProperties(&prop, device);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device);
    cudaMemGetInfo(&free_b, &total);
    printf("# device %d: %s, compute capability %d.%d, %zu bytes, driver %d, runtime %d, "
           "memory pools %s\n",
           device, prop.name, prop.major, prop.minor, total, drv, rt, pools ? "yes" : "no");
}

int main(int argc, char **argv)
{
    struct probe p;
    bool want[NSCENARIOS], chosen = false;
    memset(&p, 0, sizeof p);
    memset(want, 0, sizeof want);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            for (size_t k = 0; k < NSCENARIOS; k++)
                printf("%-14s %s\n", scenarios[k].name, scenarios[k].what);
            return 0;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            p.device = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--scenario") == 0 && i + 1 < argc) {
            size_t k = 0;
            while (k < NSCENARIOS && strcmp(scenarios[k].name, argv[i + 1]) != 0)
                k++;
            if (k == NSCENARIOS) {
                fprintf(stderr, "async_pool_probe: unknown scenario \"%s\" (--list)\n",
                        argv[i + 1]);
                return 2;
            }
            want[k] = chosen = true;
            i++;
        } else {
            fprintf(stderr, "usage: async_pool_probe [--device N] [--scenario NAME]... [--list]\n");
            return 2;
        }
    }
    int rc = (int)cudaSetDevice(p.device);
    if (rc == cudaSuccess) rc = (int)cudaStreamCreateWithFlags(&p.s[0], cudaStreamNonBlocking);
    if (rc == cudaSuccess) rc = (int)cudaStreamCreateWithFlags(&p.s[1], cudaStreamNonBlocking);
    if (rc == cudaSuccess) rc = (int)cudaEventCreateWithFlags(&p.ev, cudaEventDisableTiming);
    if (rc != cudaSuccess) {
        fprintf(stderr, "async_pool_probe: CUDA set-up failed: error %d\n", rc);
        return 1;
    }
    describe_device(p.device);
    printf("scenario,step,op,stream,bytes,arg,result,address,offset,reserved_current,"
           "reserved_high,used_current,used_high\n");
    for (size_t k = 0; k < NSCENARIOS; k++)
        if (!chosen || want[k]) scenarios[k].run(&p);
    fflush(stdout);
    return 0;
}
