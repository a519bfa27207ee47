/* The record's tables and counters, fed with fake addresses (no CUDA is loaded, so
 * nothing is sampled): live table and leaks, peaks, per-site statistics, unknown
 * frees, the rounding estimate, histograms, pools, graph nodes and OOM events. */
#include "check.h"
#include "record/read.h"

#define MiB (1ull << 20)

/* One call site for every allocation made through it; the barrier keeps the
 * call to cf_rec_alloc from becoming a tail call (the site is our caller's frame). */
__attribute__((noinline)) static void rec(enum cf_api api, uint64_t addr, uint64_t size,
                                          uint64_t granted, int device)
{
    struct cf_alloc_info ai = {
        .api = api, .addr = addr, .requested = size, .granted = granted, .device = device};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rec_loop_site(uint64_t addr, uint64_t size)
{
    rec(CF_API_cuMemAlloc, addr, size, 0, 0);
    __asm__ volatile("" ::: "memory");
}

/* A copy of the allocation live at addr, good until the next call; NULL: not live. */
static struct cf_alloc *live_at(uint64_t addr)
{
    static struct cf_alloc copy;
    return cf_rec_live_at(addr, &copy) ? &copy : NULL;
}

static void check_rounding_estimate(void)
{
    CHECK_EQ(cf_rec_estimate_granted(0), 0);
    CHECK_EQ(cf_rec_estimate_granted(1), 512);
    CHECK_EQ(cf_rec_estimate_granted(512), 512);
    CHECK_EQ(cf_rec_estimate_granted(513), 1024);
    CHECK_EQ(cf_rec_estimate_granted(MiB), MiB);
    CHECK_EQ(cf_rec_estimate_granted(MiB + 1), 2 * MiB);
    CHECK_EQ(cf_rec_estimate_granted(3 * MiB), 4 * MiB);
}

static void check_peaks_and_granted(void)
{
    rec(CF_API_cudaMalloc, 0x10000, 1000, 0, 0);     /* live 1000 */
    rec(CF_API_cudaMalloc, 0x20000, 3000, 4096, 0);  /* live 4000 */
    CHECK(cf_rec_free(CF_API_cudaFree, 0x10000, 0)); /* live 3000 */
    rec(CF_API_cudaMalloc, 0x30000, 500, 0, 0);      /* live 3500: no new peak */
    CHECK_EQ(cf_rec.dev[0].live_bytes, 3500);
    CHECK_EQ(cf_rec.dev[0].peak_live_bytes, 4000);
    rec(CF_API_cudaMalloc, 0x40000, 2 * MiB + 1, 0, 0); /* new peak */
    CHECK_EQ(cf_rec.dev[0].peak_live_bytes, 3500 + 2 * MiB + 1);
    CHECK(cf_rec.dev[0].peak_t_ns >= cf_rec.start_ns);
    /* granted: 4096 given, 512 estimated for 500, 4 MiB estimated for 2 MiB + 1. */
    CHECK_EQ(cf_rec.dev[0].granted_live, 4096 + 512 + 4 * MiB);
    CHECK_EQ(cf_rec.dev[0].requested_live, 3500 + 2 * MiB + 1);
    CHECK_EQ(cf_rec.dev[0].live_count, 3);

    rec(CF_API_cudaMalloc, 0x50000, 7000, 0, 1); /* another device */
    CHECK_EQ(cf_rec.dev[1].live_bytes, 7000);
    CHECK_EQ(cf_rec.dev[1].peak_live_bytes, 7000);
    CHECK(cf_rec.dev[1].seen);
    CHECK(!cf_rec.dev[2].seen);

    rec(CF_API_cudaMallocHost, 0x60000, 300, 0, 0); /* host memory is not device memory */
    CHECK_EQ(cf_rec.host.live_bytes, 300);
    CHECK_EQ(cf_rec.dev[0].live_bytes, 3500 + 2 * MiB + 1);

    struct cf_alloc *a = live_at(0x30000);
    CHECK(a != NULL);
    CHECK_EQ(a->addr, 0x30000);
    CHECK_EQ(a->granted, 512);
    CHECK(a->granted_estimated);
    CHECK_EQ(a->kind, CF_KIND_DEVICE);
    CHECK(!live_at(0x20000)->granted_estimated);
    CHECK_EQ(live_at(0x60000)->granted, 0); /* host: no rounding estimate */
    CHECK(live_at(0x10000) == NULL);
}

static void check_frees(void)
{
    cf_rec_collect(); /* the per-API counters are summed over the threads on demand */
    uint64_t calls = cf_rec.api[CF_API_cudaFree].calls;
    CHECK(!cf_rec_free(CF_API_cudaFree, 0xdead0000, 0)); /* allocated before we loaded */
    CHECK_EQ(cf_rec.unknown_frees, 1);
    CHECK(!cf_rec_free(CF_API_cudaFree, 0, 0)); /* cudaFree(NULL) is a valid no-op */
    CHECK_EQ(cf_rec.unknown_frees, 1);
    CHECK(!cf_rec_free(CF_API_cudaFree, 0x30000, 1)); /* failed free: still live */
    cf_rec_collect();
    CHECK_EQ(cf_rec.api[CF_API_cudaFree].failures, 1);
    CHECK_EQ(cf_rec.api[CF_API_cudaFree].calls, calls + 3);
    CHECK_EQ(cf_rec.dev[0].live_count, 3);
}

static void check_site_stats(void)
{
    for (uint64_t i = 1; i <= 10; i++)
        rec_loop_site(0x40000000 + 0x1000 * i, i * 100);
    for (uint64_t i = 1; i <= 4; i++)
        CHECK(cf_rec_free(CF_API_cuMemFree, 0x40000000 + 0x1000 * i, 0));
    struct cf_site *s = live_at(0x40000000 + 0x1000 * 5)->site;
    CHECK(s != NULL);
    CHECK(live_at(0x40000000 + 0x1000 * 10)->site == s);
    CHECK(live_at(0x30000)->site != s); /* another call site */
    cf_rec_lock_all();
    CHECK_EQ(s->api, CF_API_cuMemAlloc);
    CHECK_EQ(s->calls, 10);
    CHECK_EQ(s->bytes, 5500);
    CHECK_EQ(s->frees, 4);
    CHECK_EQ(s->live_count, 6);
    CHECK_EQ(s->live_bytes, 5500 - 1000);
    CHECK_EQ(s->peak_live_bytes, 5500);
    CHECK_EQ(s->min_size, 100);
    CHECK_EQ(s->max_size, 1000);
    CHECK_EQ(s->distinct_sizes, CF_SITE_SIZES + 1); /* 10 sizes: "more than 8" */
    CHECK_EQ(s->size_seen[0], 100);
    CHECK_EQ(s->lifetime_count, 4);
    CHECK(s->first_ns <= s->last_ns);
    cf_rec_unlock_all();
}

static void check_histograms(void)
{
    /* Sizes so far: 1000, 3000, 500, 2 MiB + 1, 7000, 300, 100..1000 step 100. */
    cf_rec_collect();
    CHECK_EQ(cf_rec.sizes.count[9], 1 + 5); /* 1000; 600..1000 */
    CHECK_EQ(cf_rec.sizes.count[8], 2 + 3); /* 500, 300; 300..500 */
    CHECK_EQ(cf_rec.sizes.count[11], 1);    /* 3000 */
    CHECK_EQ(cf_rec.sizes.count[21], 1);    /* 2 MiB + 1 */
    CHECK_EQ(cf_rec.sizes.count[12], 1);    /* 7000 */
    CHECK_EQ(cf_rec.sizes.count[10], 0);
    CHECK_EQ(cf_rec.sizes.count[6], 1); /* 100 */
    CHECK_EQ(cf_rec.sizes.count[7], 1); /* 200 */
    CHECK_EQ(cf_rec.sizes.bytes[11], 3000);
    /* Distinct: 1000 500 3000 2M+1 7000 300 100 200 400 600 700 800 900. */
    CHECK_EQ(cf_rec.distinct_sizes, 13);
    CHECK(!cf_rec.distinct_sizes_capped);
    uint64_t lifetimes = 0, bytes = 0;
    for (unsigned i = 0; i < CF_HIST_BINS; i++) {
        lifetimes += cf_rec.lifetimes.count[i];
        bytes += cf_rec.lifetimes.bytes[i];
    }
    CHECK_EQ(lifetimes, 5); /* 0x10000 and four loop allocations */
    CHECK_EQ(bytes, 1000 + 100 + 200 + 300 + 400);
}

static void check_failures_pools_graph(void)
{
    struct cf_alloc_info oom = {
        .api = CF_API_cudaMalloc, .requested = 64 * MiB, .device = 0, .result = 2, .oom = true};
    cf_rec_alloc(&oom);
    CHECK_EQ(cf_rec.nooms, 1);
    CHECK_EQ(cf_rec.ooms[0].request, 64 * MiB);
    CHECK_EQ(cf_rec.ooms[0].free_bytes, 0); /* no driver: unknown */
    CHECK(cf_rec.ooms[0].site != NULL);
    CHECK_EQ(cf_rec.ooms[0].site->failures, 1);
    cf_rec_collect();
    CHECK_EQ(cf_rec.api[CF_API_cudaMalloc].failures, 1);

    cf_rec_pool_seen(0x77, 0, false, true);
    struct cf_alloc_info async = {.api = CF_API_cudaMallocAsync,
                                  .addr = 0x700000,
                                  .requested = 4096,
                                  .pool = 0x77,
                                  .stream = 5,
                                  .device = 0};
    cf_rec_alloc(&async);
    async.addr = 0x710000;
    cf_rec_alloc(&async);
    CHECK(cf_rec_free(CF_API_cudaFreeAsync, 0x700000, 0));
    cf_rec_pool_threshold(0x77, 123);
    cf_rec_pool_trim(0x77);
    struct cf_pool *p;
    HASH_FIND(hh, cf_rec.pools, &(uint64_t){0x77}, sizeof(uint64_t), p);
    CHECK(p != NULL);
    CHECK(p->created_by_app);
    CHECK_EQ(p->allocs, 2);
    CHECK_EQ(p->frees, 1);
    CHECK_EQ(p->live_bytes, 4096);
    CHECK_EQ(p->peak_live_bytes, 8192);
    CHECK_EQ(p->release_threshold, 123);
    CHECK_EQ(p->trims, 1);
    CHECK_EQ(p->samples, 0); /* no driver, no sample */
    cf_rec_pool_destroyed(0x77);
    CHECK(p->destroyed);

    uint64_t dev0 = cf_rec.dev[0].live_bytes;
    struct cf_alloc_info g = {.api = CF_API_cudaMallocAsync,
                              .addr = 0x8000000,
                              .requested = 1 * MiB,
                              .device = 0,
                              .graph = true};
    cf_rec_alloc(&g);
    CHECK_EQ(cf_rec.graph.alloc_nodes, 1);
    CHECK_EQ(cf_rec.graph.node_bytes, MiB);
    CHECK_EQ(cf_rec.dev[0].live_bytes, dev0); /* graph memory lives in the graph pool */

    /* The same address again without a free in between. */
    cf_rec_collect();
    uint64_t allocs = cf_rec.total_allocs;
    rec(CF_API_cudaMalloc, 0x30000, 600, 0, 0);
    cf_rec_collect();
    CHECK_EQ(cf_rec.replaced_live, 1);
    CHECK_EQ(cf_rec.total_allocs, allocs + 1);
    CHECK_EQ(cf_rec.dev[0].live_bytes, dev0 - 500 + 600);
}

static void check_leaks(void)
{
    /* Live now: 0x20000 0x30000 0x40000 (dev 0), 0x50000 (dev 1), 0x60000 (host),
     * six loop allocations, 0x710000 (pool), 0x8000000 (graph). */
    struct cf_rec_read r;
    CHECK_EQ(cf_rec_read(&r), 0);
    CHECK_EQ(r.live_count, 13);
    CHECK_EQ(r.live_bytes, 3000 + 600 + 2 * MiB + 1 + 7000 + 300 + 4500 + 4096 + MiB);
    uint64_t grouped = 0;
    for (unsigned i = 0; i < r.nlive; i++)
        grouped += r.live[i].count;
    CHECK_EQ(grouped, 13);
    CHECK_EQ(r.rec.total_allocs, 13 + r.rec.total_frees + r.rec.replaced_live);
    CHECK_EQ(r.rec.total_frees, 6);
    cf_rec_read_free(&r);
    CHECK(cf_rec_any_activity());
}

int main(void)
{
    CHECK(!cf_rec_any_activity());
    check_rounding_estimate();
    check_peaks_and_granted();
    check_frees();
    check_site_stats();
    check_histograms();
    check_failures_pools_graph();
    check_leaks();
    return 0;
}
