/* pool_reuse_check: does a stream-ordered pool ever grow for a request that the
 * block freed just before could serve?
 *
 * cudafrag skips its read of a pool's reserved bytes after an allocation when the
 * same thread's previous allocation or free was a cudaFreeAsync of a block of the
 * same pool, on the same stream (the legacy default stream included), of at least
 * the requested size and at most twice it, with no synchronization or trim since
 * (src/record/sample.c,
 * "the read an allocation can do without"). This program checks that premise
 * against the driver: random single-threaded sequences of allocations, frees,
 * synchronizations, trims and busy kernels (which keep frees pending) on several
 * pools and streams; around every allocation it reads RESERVED_MEM_CURRENT and
 * counts the allocations the rule covers ("covered") and those of them after which
 * the pool had grown ("grew": each one a footprint cudafrag would have missed
 * until its next read). Exit status 1 when any covered allocation grew.
 *
 *   nvcc -arch=sm_90 -O2 -o pool_reuse_check tests/gpu/pool_reuse_check.cu
 *   ./pool_reuse_check [OPS_PER_SCENARIO] [SEED]
 *
 * Built as C++ against the simulated runtime (no nvcc), `busy` launches nothing. */
#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_spin.h"

#define KiB      ((size_t)1 << 10)
#define MiB      ((size_t)1 << 20)
#define MAX_LIVE 256
#define STREAMS  4

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
                    cudaGetErrorString(rc_));                                                      \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

struct scenario {
    const char *name;
    bool default_pool;
    uint64_t threshold;
    int streams;        /* non-default streams in use; the legacy stream is used too */
    size_t min, max;    /* log-uniform request sizes */
    int live_max;       /* allocations kept live at most */
    unsigned sync_per_k, trim_per_k, busy_per_k; /* per 1000 operations */
};

struct block {
    void *p;
    size_t size;
    int stream;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t log_uniform(size_t lo, size_t hi)
{
    double u = (double)(next() >> 11) / 9007199254740992.0;
    double v = (double)lo * pow((double)hi / (double)lo, u);
    return (size_t)v < lo ? lo : (size_t)v;
}

static uint64_t reserved(cudaMemPool_t pool)
{
    uint64_t v = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v));
    return v;
}

struct tally {
    unsigned long allocs, covered, grew, grew_uncovered;
};

static void run(const struct scenario *sc, long ops, cudaStream_t *streams, struct tally *t)
{
    cudaMemPool_t pool;
    if (sc->default_pool) {
        CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    } else {
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = 0;
        CHECK(cudaMemPoolCreate(&pool, &props));
    }
    uint64_t threshold = sc->threshold;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    struct block live[MAX_LIVE];
    int nlive = 0;
    /* The thread's last call, when it was a free the rule can lean on. */
    bool freed = false;
    size_t freed_size = 0;
    int freed_stream = -1;
    for (long i = 0; i < ops; i++) {
        unsigned r = (unsigned)(next() % 1000);
        int s = (int)(next() % (unsigned)(sc->streams + 1)); /* 0: the legacy stream */
        /* Half of the time after a free, a request that the freed block just fits. */
        bool fit = freed && next() % 2;
        if (fit) s = freed_stream;
        if (r < sc->sync_per_k) {
            CHECK(cudaStreamSynchronize(streams[s]));
            freed = false;
        } else if (r < sc->sync_per_k + sc->trim_per_k) {
            CHECK(cudaMemPoolTrimTo(pool, (size_t)(next() % 2) * 64 * MiB));
            freed = false;
        } else if (r < sc->sync_per_k + sc->trim_per_k + sc->busy_per_k) {
#ifdef __CUDACC__
            spin<<<1, 1, 0, streams[s]>>>(20000);
            CHECK(cudaGetLastError());
#endif
        } else if (!fit && nlive > 0 && (nlive == sc->live_max || next() % 2 == 0)) {
            /* On the stream it was allocated on, which is the only one to use it. */
            int k = (int)(next() % (unsigned)nlive);
            CHECK(cudaFreeAsync(live[k].p, streams[live[k].stream]));
            freed = true;
            freed_size = live[k].size;
            freed_stream = live[k].stream;
            live[k] = live[--nlive];
        } else {
            size_t size = fit ? freed_size - next() % (freed_size / 2 + 1)
                              : log_uniform(sc->min, sc->max);
            if (size == 0) size = 1;
            bool covered = freed && s == freed_stream && size <= freed_size &&
                           size >= freed_size / 2;
            uint64_t before = reserved(pool);
            void *p;
            cudaError_t rc = cudaMallocFromPoolAsync(&p, size, pool, streams[s]);
            freed = false;
            if (rc != cudaSuccess) {
                fprintf(stderr, "%s: allocation of %zu bytes failed: %s\n", sc->name, size,
                        cudaGetErrorString(rc));
                exit(2);
            }
            bool grew = reserved(pool) > before;
            t->allocs++;
            t->covered += covered;
            t->grew += covered && grew;
            t->grew_uncovered += !covered && grew;
            live[nlive++] = (struct block){p, size, s};
        }
    }
    for (int k = 0; k < nlive; k++)
        CHECK(cudaFreeAsync(live[k].p, streams[live[k].stream]));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemPoolTrimTo(pool, 0));
    if (!sc->default_pool) CHECK(cudaMemPoolDestroy(pool));
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    if (argc > 2) rng ^= (uint64_t)strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull;
    CHECK(cudaSetDevice(0));
    cudaStream_t streams[STREAMS + 1] = {0};
    for (int s = 1; s <= STREAMS; s++)
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    static const struct scenario scenarios[] = {
        {"default-small", true, 0, 1, 256, 64 * KiB, 64, 5, 0, 20},
        {"default-mixed", true, 0, 2, 256, 64 * MiB, 32, 5, 1, 20},
        {"kept-mixed", false, UINT64_MAX, 3, 256, 64 * MiB, 128, 2, 2, 50},
        {"kept-around-1MiB", false, UINT64_MAX, 2, 256 * KiB, 4 * MiB, 64, 2, 1, 50},
        {"released-often", false, 0, 2, 4 * KiB, 32 * MiB, 16, 50, 0, 20},
        {"large", false, 64 * MiB, 4, 1 * MiB, 128 * MiB, 16, 5, 1, 50},
    };
    printf("%-18s %8s %8s %6s %14s\n", "scenario", "allocs", "covered", "grew", "grew-uncovered");
    unsigned long bad = 0;
    for (unsigned i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        struct tally t = {0, 0, 0, 0};
        run(&scenarios[i], ops, streams, &t);
        printf("%-18s %8lu %8lu %6lu %14lu\n", scenarios[i].name, t.allocs, t.covered, t.grew,
               t.grew_uncovered);
        bad += t.grew;
    }
    printf("result %s\n", bad ? "FAILED: a covered allocation grew its pool" : "ok");
    return bad ? 1 : 0;
}
