/* The documented sampling calls against the simulated driver (linked, so cudafrag
 * finds a loaded libcuda): the computed footprint checked by cuMemGetInfo at its
 * new peaks only, pool attributes read when the pool may have grown and after a
 * trim (with shrinks and regrows) and after a synchronization, no sample on a
 * capturing stream, OOM events with the device's free/total, and the final
 * sample, and the pool read an allocation can do without. CUDAFRAG_SAMPLE_MS=0,
 * SIMCUDA_COUNT_CALLS=1. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "base/ctx_state.h"
#include "base/real.h"
#include "cuda_setup.h"
#include "record/internal.h"

#define MiB (1ull << 20)

static CUstream stream, capturing;
static CUcontext ctx;

static void note_alloc(enum cf_api api, CUdeviceptr p, uint64_t size, CUmemoryPool pool, CUstream s)
{
    struct cf_alloc_info ai = {.api = api,
                               .addr = p,
                               .requested = size,
                               .device = 0,
                               .pool = (uint64_t)(uintptr_t)pool,
                               .stream = (uint64_t)(uintptr_t)s};
    cf_rec_alloc(&ai);
}

static uint64_t used_now(size_t *total)
{
    size_t free_b;
    CHECK_CU(cuMemGetInfo(&free_b, total));
    return *total - free_b;
}

static void check_footprint(void)
{
    CUdeviceptr a, b;
    size_t total;
    CHECK_CU(cuMemAlloc(&a, 64 * MiB));
    note_alloc(CF_API_cuMemAlloc, a, 64 * MiB, NULL, NULL);
    uint64_t used = used_now(&total);
    struct cf_device_stats *d = &cf_rec.dev[0];
    CHECK_EQ(d->footprint_samples, 1);
    CHECK_EQ(d->total_bytes, total);
    CHECK_EQ(d->peak_footprint, 64 * MiB);
    CHECK_EQ(d->baseline_used, used - 64 * MiB);
    CHECK_EQ(d->live_at_peak_footprint, 64 * MiB);

    CHECK_CU(cuMemAlloc(&b, 32 * MiB));
    note_alloc(CF_API_cuMemAlloc, b, 32 * MiB, NULL, NULL);
    CHECK_EQ(d->footprint_samples, 2);
    CHECK_EQ(d->peak_footprint, used_now(&total) - d->baseline_used);
    CHECK_EQ(d->measured_peak, d->peak_footprint);
    CHECK_EQ(d->max_deviation, 0);
    CHECK_EQ(d->live_at_peak_footprint, 96 * MiB);

    /* Below the peak: no sample. */
    CHECK_CU(cuMemFree(b));
    CHECK(cf_rec_free(CF_API_cuMemFree, b, 0));
    CHECK_CU(cuMemAlloc(&b, 16 * MiB));
    note_alloc(CF_API_cuMemAlloc, b, 16 * MiB, NULL, NULL);
    CHECK_EQ(d->footprint_samples, 2);
    CHECK_EQ(d->footprint, 80 * MiB);
}

static void check_pool(void)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool;
    CUdeviceptr p;
    size_t total;
    struct cf_device_stats *d = &cf_rec.dev[0];
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    cf_rec_pool_seen((uint64_t)(uintptr_t)pool, 0, false, true);
    struct cf_pool *rp;
    HASH_FIND(hh, cf_rec.pools, &(uint64_t){(uint64_t)(uintptr_t)pool}, sizeof(uint64_t), rp);
    CHECK(rp != NULL);

    CHECK_CU(cuMemAllocFromPoolAsync(&p, 256 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, p, 256 * MiB, pool, stream);
    CHECK_EQ(rp->samples, 1);
    CHECK_GE(rp->reserved_cur, 256 * MiB);
    CHECK_GE(rp->used_cur, 256 * MiB);
    CHECK_GE(rp->reserved_high, rp->reserved_cur);
    uint64_t reserved = rp->reserved_cur;
    /* The pool's reserved bytes are part of the device's footprint, exactly. */
    CHECK_EQ(d->pool_reserved, reserved);
    CHECK_EQ(d->footprint + d->baseline_used, used_now(&total));

    CHECK_CU(cuMemFreeAsync(p, stream));
    CHECK(cf_rec_free(CF_API_cuMemFreeAsync, p, 0));
    CHECK_CU(cuStreamSynchronize(stream));
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    cf_rec_pool_trim((uint64_t)(uintptr_t)pool);
    /* A trim gives memory back: read at once. */
    CHECK_EQ(rp->samples, 2);
    CHECK_LT(rp->reserved_cur, reserved);
    CHECK_EQ(rp->shrinks, 1);
    CHECK_EQ(d->footprint + d->baseline_used, used_now(&total));
    CHECK_CU(cuMemAllocFromPoolAsync(&p, 1 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, p, 1 * MiB, pool, stream);
    CHECK_EQ(rp->samples, 3);
    CHECK_EQ(rp->regrows, 1);

    CUdeviceptr q;
    CHECK_CU(cuMemAllocFromPoolAsync(&q, 512 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, q, 512 * MiB, pool, stream);
    CHECK_EQ(rp->samples, 4);
    CHECK_EQ(rp->regrows, 1);
    CHECK_EQ(rp->trims, 1);
    CHECK_EQ(d->footprint + d->baseline_used, used_now(&total));
    /* No growth: the pool is not read again (once the interval is long). */
    cf_sample_configure(60ull * 1000000000u);
    CHECK_CU(cuMemFreeAsync(q, stream));
    CHECK(cf_rec_free(CF_API_cuMemFreeAsync, q, 0));
    CHECK_CU(cuMemAllocFromPoolAsync(&q, 256 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, q, 256 * MiB, pool, stream);
    CHECK_EQ(rp->samples, 4);
}

/* cuMemPoolGetAttribute calls the simulated driver answered so far. */
static unsigned long long pool_reads(void)
{
    unsigned long long (*count)(const char *) =
        (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, "simcudaCallCount");
    CHECK(count != NULL);
    unsigned long long n = count("cuMemPoolGetAttribute");
    CHECK(n != ~0ull);
    return n;
}

static uint64_t reserved_now(CUmemoryPool pool)
{
    cuuint64_t v;
    CHECK_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

/* After a synchronization the pools above their release threshold are read: the
 * memory a pool handed back there leaves the footprint at once. A pool at or
 * below its threshold gives nothing back and is not read. */
static void check_sync_read(void)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool;
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    uint64_t h = (uint64_t)(uintptr_t)pool;
    cf_rec_pool_seen(h, 0, false, true);
    struct cf_pool *rp = cf_pool_get(h, 0);
    struct cf_device_stats *d = &cf_rec.dev[0];
    CUdeviceptr b;
    CHECK_CU(cuMemAllocFromPoolAsync(&b, 96 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, b, 96 * MiB, pool, stream);
    CHECK_GE(rp->reserved_cur, 96 * MiB);
    uint64_t pool_part = d->pool_reserved;
    CHECK_CU(cuMemFreeAsync(b, stream));
    CHECK(cf_rec_free(CF_API_cuMemFreeAsync, b, 0));

    unsigned long long reads = pool_reads();
    CHECK_CU(cuStreamSynchronize(stream)); /* threshold 0: the pool is emptied */
    cf_rec_synchronized();
    /* This pool and check_pool's, which still holds a live block above its threshold. */
    CHECK_EQ(pool_reads(), reads + 2);
    CHECK_EQ(rp->reserved_cur, 0);
    CHECK_EQ(d->pool_reserved, pool_part - rp->reserved_high);

    cuuint64_t keep = 1ull << 40;
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    cf_rec_pool_threshold(h, keep);
    CHECK_CU(cuMemAllocFromPoolAsync(&b, 96 * MiB, pool, stream));
    note_alloc(CF_API_cuMemAllocFromPoolAsync, b, 96 * MiB, pool, stream);
    CHECK_CU(cuMemFreeAsync(b, stream));
    CHECK(cf_rec_free(CF_API_cuMemFreeAsync, b, 0));
    reads = pool_reads();
    CHECK_CU(cuStreamSynchronize(stream));
    cf_rec_synchronized();
    CHECK_EQ(pool_reads(),
             reads + 1); /* check_pool's only: this one kept it, below its threshold */
    CHECK_EQ(rp->reserved_cur, reserved_now(pool));
    CHECK_GE(rp->reserved_cur, 96 * MiB);
}

/* ---- the read an allocation can do without (sample.c) ---- */

/* What the stream-ordered hooks do around the real calls; ptsz: the call came
 * through a _ptsz entry point, so that stream 0 is the thread's own. */
static void pool_alloc_ptsz(CUmemoryPool pool, CUstream s, bool ptsz, uint64_t size, CUdeviceptr *p)
{
    cf_rec_pool_alloc_begin();
    CHECK_CU(cuMemAllocFromPoolAsync(p, size, pool, s));
    struct cf_alloc_info ai = {.api = CF_API_cuMemAllocFromPoolAsync,
                               .addr = *p,
                               .requested = size,
                               .device = 0,
                               .pool = (uint64_t)(uintptr_t)pool,
                               .stream = (uint64_t)(uintptr_t)s,
                               .stream_key = cf_stream_key((uint64_t)(uintptr_t)s, ptsz)};
    cf_rec_alloc(&ai);
}

static void pool_alloc(CUmemoryPool pool, CUstream s, uint64_t size, CUdeviceptr *p)
{
    pool_alloc_ptsz(pool, s, false, size, p);
}

static void pool_free(CUdeviceptr p, CUstream s)
{
    uint64_t t0;
    struct cf_alloc *a = cf_rec_free_begin(p, &t0);
    CHECK(a != NULL);
    CHECK_CU(cuMemFreeAsync(p, s));
    cf_rec_pool_freed(a, cf_stream_key((uint64_t)(uintptr_t)s, false));
    CHECK(cf_rec_free_end(CF_API_cuMemFreeAsync, p, a, 0, 0, t0));
}

static CUmemoryPool new_pool(struct cf_pool **rp)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemoryPool pool;
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    cuuint64_t keep = 1ull << 40; /* synchronizations give nothing back */
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    cf_rec_pool_seen((uint64_t)(uintptr_t)pool, 0, false, true);
    cf_rec_pool_threshold((uint64_t)(uintptr_t)pool, keep);
    *rp = cf_pool_get((uint64_t)(uintptr_t)pool, 0);
    return pool;
}

/* The footprint's pool part is the driver's figure for every pool it holds. */
static void check_pools_exact(CUmemoryPool a, CUmemoryPool b)
{
    size_t total;
    struct cf_device_stats *d = &cf_rec.dev[0];
    CHECK_EQ(d->footprint + d->baseline_used, used_now(&total));
    CHECK_EQ(cf_pool_get((uint64_t)(uintptr_t)a, 0)->reserved_cur, reserved_now(a));
    CHECK_EQ(cf_pool_get((uint64_t)(uintptr_t)b, 0)->reserved_cur, reserved_now(b));
}

static void sync_free(CUdeviceptr p)
{
    uint64_t t0;
    struct cf_alloc *a = cf_rec_free_begin(p, &t0);
    CHECK(a != NULL);
    CHECK_CU(cuMemFree(p));
    cf_rec_pool_freed(a, 0);
    CHECK(cf_rec_free_end(CF_API_cuMemFree, p, a, 0, 0, t0));
}

/* Frees p on free_s, lets between() run, allocates size on alloc_s from pool into
 * *p: was the pool read for it? The footprint is exact either way. */
static bool read_after(CUdeviceptr *p, CUstream free_s, void (*between)(CUmemoryPool),
                       CUmemoryPool pool, CUstream alloc_s, uint64_t size, CUmemoryPool other)
{
    pool_free(*p, free_s);
    if (between) between(pool);
    unsigned long long reads = pool_reads();
    pool_alloc(pool, alloc_s, size, p);
    bool read = pool_reads() > reads;
    check_pools_exact(pool, other);
    return read;
}

static void synchronize(CUmemoryPool pool)
{
    CHECK_CU(cuStreamSynchronize(stream));
    cf_rec_synchronized();
}

static void trim(CUmemoryPool pool)
{
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    cf_rec_pool_trim((uint64_t)(uintptr_t)pool);
}

static void synchronous_free(CUmemoryPool pool)
{
    CUdeviceptr q;
    CHECK_CU(cuMemAlloc(&q, 1 * MiB));
    note_alloc(CF_API_cuMemAlloc, q, 1 * MiB, NULL, NULL);
    /* The allocation alone makes the next one read: free first, then allocate. */
    sync_free(q);
}

/* One thread's same-stream pairs read the pool once per 16 allocations; every
 * allocation the rule does not cover reads it. */
static void check_reuse_skip(void)
{
    cf_ctx_track();
    cf_sample_configure(60ull * 1000000000u);
    struct cf_pool *rp, *rq;
    CUmemoryPool pool = new_pool(&rp), other = new_pool(&rq);
    CUstream s2;
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    pool_alloc(pool, stream, 3 * MiB, &p);
    unsigned long long reads = pool_reads();
    for (int i = 0; i < 64; i++) {
        pool_free(p, stream);
        pool_alloc(pool, stream, 3 * MiB, &p);
    }
    CHECK_EQ(pool_reads(), reads + 64 / 16);
    check_pools_exact(pool, other);
    /* From here on, each case starts right after a verified read: 15 skips ahead. */
    CHECK(!read_after(&p, stream, NULL, pool, stream, 2 * MiB, other)); /* smaller, > half */
    CHECK(read_after(&p, stream, NULL, pool, s2, 2 * MiB, other));      /* another stream */
    CHECK(read_after(&p, s2, NULL, pool, s2, 3 * MiB, other));          /* more bytes */
    CHECK(read_after(&p, s2, NULL, pool, s2, 1 * MiB, other));          /* less than half */
    CHECK(read_after(&p, s2, NULL, other, s2, 1 * MiB, other));         /* another pool */
    CHECK(read_after(&p, s2, NULL, other, stream, 1 * MiB, other));     /* another stream */
    CHECK(read_after(&p, stream, NULL, pool, stream, 1 * MiB, other));  /* another pool */
    CHECK(!read_after(&p, stream, NULL, pool, stream, 1 * MiB, other)); /* the same again */
    CHECK(read_after(&p, stream, synchronize, pool, stream, 1 * MiB, other));
    CHECK(read_after(&p, stream, trim, pool, stream, 1 * MiB, other));
    CHECK(read_after(&p, stream, synchronous_free, pool, stream, 1 * MiB, other));
    /* The legacy default stream, named 0 or by its handle, is one stream; the
     * thread's per-thread default stream is another. */
    CHECK(read_after(&p, stream, NULL, pool, NULL, 1 * MiB, other));
    CHECK(!read_after(&p, NULL, NULL, pool, NULL, 1 * MiB, other));
    CHECK(!read_after(&p, NULL, NULL, pool, CU_STREAM_LEGACY, 1 * MiB, other));
    pool_free(p, CU_STREAM_LEGACY);
    reads = pool_reads();
    pool_alloc_ptsz(pool, NULL, true, 1 * MiB, &p);
    CHECK_EQ(pool_reads(), reads + 1);
    check_pools_exact(pool, other);
    pool_free(p, CU_STREAM_PER_THREAD);
    reads = pool_reads();
    pool_alloc_ptsz(pool, NULL, true, 1 * MiB, &p);
    CHECK_EQ(pool_reads(), reads); /* the same stream, named two ways */
    pool_free(p, NULL);
}

/* A pool that grows where the rule said it could not (here the driver hands the
 * freed block to an allocation cudafrag does not see) is caught by the verified
 * read: the footprint is exact again there, and every later allocation reads. */
static void check_reuse_verified(void)
{
    struct cf_pool *rp, *rq;
    CUmemoryPool pool = new_pool(&rp), other = new_pool(&rq);
    CUdeviceptr p, hidden[16];
    pool_alloc(pool, stream, 4 * MiB, &p);
    int n = 0;
    uint64_t before = rp->reserved_cur;
    while (rp->reserved_cur == before) {
        CHECK_LT(n, 16);
        pool_free(p, stream);
        CHECK_CU(cuMemAllocFromPoolAsync(&hidden[n++], 4 * MiB, pool, stream));
        pool_alloc(pool, stream, 4 * MiB, &p);
    }
    check_pools_exact(pool, other);
    unsigned long long reads = pool_reads();
    pool_free(p, stream);
    pool_alloc(pool, stream, 4 * MiB, &p);
    CHECK_EQ(pool_reads(), reads + 1);
    check_pools_exact(pool, other);
    pool_free(p, stream);
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFreeAsync(hidden[i], stream));
}

static void *second_thread_alloc(void *pool)
{
    CUdeviceptr p;
    CHECK_CU(cuCtxSetCurrent(ctx));
    pool_alloc(pool, stream, 3 * MiB, &p);
    pool_free(p, stream);
    return NULL;
}

/* A second thread allocating from pools could take the freed block: the rule is
 * off from its first allocation on (a fresh process: before any verified miss). */
static void check_reuse_two_threads(void)
{
    struct cf_pool *rp, *rq;
    CUmemoryPool pool = new_pool(&rp), other = new_pool(&rq);
    CUdeviceptr p;
    pool_alloc(pool, stream, 3 * MiB, &p);
    pool_free(p, stream);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, second_thread_alloc, pool), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    unsigned long long reads = pool_reads();
    pool_alloc(pool, stream, 3 * MiB, &p);
    CHECK_EQ(pool_reads(), reads + 1);
    check_pools_exact(pool, other);
    pool_free(p, stream);
}

static void check_capture_and_oom(void)
{
    uint64_t samples = cf_rec.dev[0].footprint_samples;
    CUmemoryPool pool;
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_RELAXED));
    /* A pool never read, but on a capturing stream: no driver call. */
    note_alloc(CF_API_cuMemAllocAsync, 0x7000000000, 4096 * MiB, pool, capturing);
    CUgraph graph;
    CHECK_CU(cuStreamEndCapture(capturing, &graph));
    CHECK_CU(cuGraphDestroy(graph));
    CHECK_EQ(cf_rec.capture_skips, 1);
    CHECK_EQ(cf_rec.dev[0].footprint_samples, samples);
    CHECK(cf_rec_free(CF_API_cuMemFreeAsync, 0x7000000000, 0));

    size_t total;
    struct cf_alloc_info oom = {.api = CF_API_cuMemAlloc,
                                .requested = 1ull << 50,
                                .device = 0,
                                .result = CUDA_ERROR_OUT_OF_MEMORY,
                                .oom = true};
    cf_rec_alloc(&oom);
    CHECK_EQ(cf_rec.nooms, 1);
    CHECK_EQ(cf_rec.ooms[0].total_bytes, cf_rec.dev[0].total_bytes);
    CHECK_EQ(cf_rec.ooms[0].total_bytes - cf_rec.ooms[0].free_bytes, used_now(&total));
}

static void check_final_sample(void)
{
    uint64_t samples = cf_rec.dev[0].footprint_samples;
    struct cf_pool *p = cf_rec.pools;
    uint64_t pool_samples = p->samples;
    cf_rec_sample_final();
    CHECK_EQ(cf_rec.dev[0].footprint_samples, samples + 1);
    CHECK_EQ(p->samples, pool_samples + 1);
}

/* A driver without cuStreamIsCapturing predates stream capture: base/ctx_state's
 * one policy says a stream captures there only while a capture the wrappers saw
 * begin is in progress, and sampling follows it (it used to sample nothing). */
static void check_without_capture_query(void)
{
    struct cf_driver *drv = (struct cf_driver *)cf_driver();
    PFN_cuStreamIsCapturing_v10000 saved = drv->cuStreamIsCapturing;
    drv->cuStreamIsCapturing = NULL;
    cf_sample_configure(0);
    uint64_t samples = cf_rec.dev[0].footprint_samples, skips = cf_rec.capture_skips;
    CUdeviceptr a, b;
    CHECK_CU(cuMemAlloc(&a, 5120 * MiB)); /* above every earlier peak */
    note_alloc(CF_API_cuMemAlloc, a, 5120 * MiB, NULL, NULL);
    CHECK_EQ(cf_rec.dev[0].footprint_samples, samples + 1);
    CHECK_EQ(cf_rec.capture_skips, skips);

    cf_capture_begin();
    CHECK_CU(cuMemAlloc(&b, 5120 * MiB));
    note_alloc(CF_API_cuMemAlloc, b, 5120 * MiB, NULL, NULL);
    cf_capture_end();
    CHECK_EQ(cf_rec.dev[0].footprint_samples, samples + 1);
    CHECK_EQ(cf_rec.capture_skips, skips + 1);
    drv->cuStreamIsCapturing = saved;
}

/* No argument: every check but two, named by the argument, whose outcome turns the
 * skipped read off for the rest of the process: each has a process of its own. */
int main(int argc, char **argv)
{
    ctx = cf_test_primary_context(0);
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING));
    if (argc > 1) {
        cf_rec_init_once(); /* which reads CUDAFRAG_SAMPLE_MS */
        cf_ctx_track();
        cf_sample_configure(60ull * 1000000000u);
        if (strcmp(argv[1], "reuse-verified") == 0)
            check_reuse_verified();
        else if (strcmp(argv[1], "reuse-two-threads") == 0)
            check_reuse_two_threads();
        else
            CHECK(!"unknown check");
        return 0;
    }
    check_footprint();
    check_pool();
    check_sync_read();
    check_capture_and_oom();
    check_final_sample();
    check_without_capture_query();
    check_reuse_skip(); /* last: it trusts the kept answers (cf_ctx_track) from then on */
    return 0;
}
