/* Findings that need pool samples and footprint samples: the record gets those
 * from driver calls, so here they are set in the record as sampling would. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/config.h"
#include "record/record.h"
#include "report/report.h"
#include "report_fill.h"

#define POOL 0xabc000ull

static char *render(const char *dir, const char *name, unsigned seq)
{
    char pattern[PATH_MAX], path[PATH_MAX + 16];
    snprintf(pattern, sizeof pattern, "%s/%s", dir, name);
    CHECK_EQ(cf_report_write(pattern, false, false, seq, "test"), 0);
    if (seq)
        snprintf(path, sizeof path, "%s.%u.txt", pattern, seq);
    else
        snprintf(path, sizeof path, "%s.txt", pattern);
    char *t = slurp(path);
    CHECK(t != NULL);
    return t;
}

__attribute__((noinline)) static void async_allocs(void)
{
    for (uint64_t i = 0; i < 4; i++) {
        struct cf_alloc_info ai;
        memset(&ai, 0, sizeof ai);
        ai.api = CF_API_cudaMallocAsync;
        ai.addr = 0x7d0000000000ull + i * (4ull << 20);
        ai.requested = 4ull << 20;
        ai.pool = POOL;
        ai.device = 0;
        cf_rec_alloc(&ai);
        CHECK(cf_rec_free(CF_API_cudaFreeAsync, ai.addr, 0));
    }
}

__attribute__((noinline)) static void second_leak(void)
{
    struct cf_alloc_info ai;
    memset(&ai, 0, sizeof ai);
    ai.api = CF_API_cuMemAlloc;
    ai.addr = 0x7b0000000000ull;
    ai.requested = 16ull << 20;
    ai.device = 0;
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

/* Device 0's footprint peak, as the record computes it from the events. */
static void set_peak(struct cf_fp_parts parts, uint64_t live, uint64_t total)
{
    struct cf_device_stats *d = &cf_rec.dev[0];
    d->at_peak = parts;
    d->peak_footprint = parts.raw + parts.pool + parts.graph + parts.arena + parts.vmm;
    d->live_at_peak_footprint = live;
    d->total_bytes = total;
}

/* The same 60 MiB held beyond live bytes rates by the share of the device's memory
 * it is; without the device's size it is never high. 1 MiB is no finding at all,
 * even on a device of 8 MiB. */
static void footprint_severity_by_share(const char *dir)
{
    static const struct {
        uint64_t total;
        const char *want;
    } cases[] = {
        {16ull << 30, "[low] footprint-over-live: device 0: at its footprint peak 64.0 MiB, "
                      "60.0 MiB (94%) was not live, 0.4% of 16.0 GiB device memory\n"},
        {1ull << 30, "[medium] footprint-over-live: device 0: at its footprint peak 64.0 MiB, "
                     "60.0 MiB (94%) was not live, 5.9% of 1.00 GiB device memory\n"},
        {256ull << 20, "[high] footprint-over-live: device 0: at its footprint peak 64.0 MiB, "
                       "60.0 MiB (94%) was not live, 23.4% of 256 MiB device memory\n"},
        {0, "[medium] footprint-over-live: device 0: at its footprint peak 64.0 MiB, "
            "60.0 MiB (94%) was not live\n"},
    };
    struct cf_fp_parts pool = {.pool = 64ull << 20, .pool_live = 4ull << 20};
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_peak(pool, 4ull << 20, cases[i].total);
        char *t = render(dir, "share", 0);
        CHECK_STR(t, cases[i].want);
        free(t);
    }
    set_peak((struct cf_fp_parts){.raw = 6ull << 20, .raw_live = 5ull << 20}, 5ull << 20,
             8ull << 20);
    char *t = render(dir, "one-mib", 0);
    CHECK(strstr(t, "footprint-over-live") == NULL);
    free(t);
    set_peak(pool, 4ull << 20, 16ull << 30);
}

/* Pages, a pool and VMM handles rounded up: the parts are those of the same
 * instant and add up to what was held beyond live bytes, in the text and in the
 * numbers of the JSON report. */
static void footprint_parts_add_up(const char *dir)
{
    /* 3 MiB live in 10 MiB of pages, 4 of 64 MiB of pool, 18 MiB of VMM handles
     * rounded up to 20 MiB: 94 MiB held, 25 MiB live, 69 MiB beyond. */
    set_peak((struct cf_fp_parts){.raw = 10ull << 20,
                                  .raw_live = 3ull << 20,
                                  .pool = 64ull << 20,
                                  .pool_live = 4ull << 20,
                                  .vmm = 20ull << 20},
             25ull << 20, 16ull << 30);
    char *t = render(dir, "parts", 0);
    CHECK_STR(t, "footprint-over-live: device 0: at its footprint peak 94.0 MiB, 69.0 MiB (73%) "
                 "was not live");
    CHECK_STR(t, "Held beyond live bytes (69.0 MiB): page waste 7.00 MiB, pool reserve 60.0 MiB, "
                 "graph pool 0 B, arena 0 B, VMM/array rounding 2.00 MiB. Largest part: the "
                 "reserve of stream-ordered pools");
    free(t);
    char pattern[PATH_MAX], path[PATH_MAX + 16];
    snprintf(pattern, sizeof pattern, "%s/parts-json", dir);
    CHECK_EQ(cf_report_write(pattern, false, true, 0, "test"), 0);
    snprintf(path, sizeof path, "%s.json", pattern);
    t = slurp(path);
    CHECK(t != NULL);
    const char *f = strstr(t, "\"id\":\"footprint-over-live\"");
    CHECK(f != NULL);
    static const char *const parts[] = {"page_waste_bytes", "pool_reserve_bytes",
                                        "graph_reserve_bytes", "arena_slack_bytes",
                                        "vmm_array_rounding_bytes"};
    unsigned long long sum = 0;
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", parts[i]);
        const char *v = strstr(f, key);
        CHECK(v != NULL);
        sum += strtoull(v + strlen(key), NULL, 10);
    }
    CHECK_EQ(sum, 69ull << 20);
    CHECK_STR(f, "\"device_total_bytes\":17179869184");
    free(t);
}

static void set_threshold(uint64_t pool, uint64_t threshold)
{
    cf_rec_lock_all();
    for (struct cf_pool *p = cf_rec.pools; p; p = p->hh.next)
        if (p->handle == pool) p->release_threshold = threshold;
    cf_rec_unlock_all();
}

int main(void)
{
    const char *dir = temp_dir();
    cf_config_reload();

    /* Nothing recorded: no findings at all. */
    char *t = render(dir, "empty", 0);
    CHECK_STR(t, "-- findings (0) --");
    free(t);

    /* A default pool that returned its memory and grew back five times. */
    cf_rec_pool_seen(POOL, 0, true, false);
    async_allocs();
    cf_rec_lock_all();
    for (struct cf_pool *p = cf_rec.pools; p; p = p->hh.next) {
        if (p->handle != POOL) continue;
        p->shrinks = 5;
        p->regrows = 5;
        p->reserved_cur = 0;
        p->reserved_high = 64ull << 20;
        p->used_high = 4ull << 20;
    }
    cf_rec_unlock_all();

    /* The footprint peaked at 64 MiB (the pool's reserve), against 4 MiB live at
     * the peak; three cross-check samples, 10 MiB in use before the first
     * allocation. */
    cf_rec.dev[0].footprint_samples = 3;
    cf_rec.dev[0].baseline_used = 10ull << 20;
    cf_rec.dev[0].peak_footprint = 64ull << 20;
    cf_rec.dev[0].live_at_peak_footprint = 4ull << 20;
    cf_rec.dev[0].at_peak = (struct cf_fp_parts){.pool = 64ull << 20, .pool_live = 4ull << 20};
    cf_rec.dev[0].total_bytes = 16ull << 30;

    /* An OOM with too little free memory. */
    struct cf_alloc_info ai;
    memset(&ai, 0, sizeof ai);
    ai.api = CF_API_cudaMalloc;
    ai.requested = 20ull << 30;
    ai.device = 0;
    ai.result = 2;
    ai.oom = true;
    cf_rec_alloc(&ai);
    CHECK_GE(cf_rec.nooms, 1);
    cf_rec.ooms[cf_rec.nooms - 1].free_bytes = 1ull << 30;
    cf_rec.ooms[cf_rec.nooms - 1].total_bytes = 16ull << 30;

    t = render(dir, "pools", 0);
    CHECK_STR(t, "-- memory pools --");
    CHECK_STR(t, "pool 0xabc000 device 0 default: reserved 0 B (high 64.0 MiB)");
    CHECK_STR(t, "release threshold 0 B, shrinks 5, regrows 5");
    /* A threshold of UINT64_MAX (PyTorch's) says the pool keeps everything, not
     * "16384 PiB". */
    set_threshold(POOL, UINT64_MAX);
    char *keep = render(dir, "keep-all", 0);
    CHECK_STR(keep, "release threshold none (keeps all it reserves), shrinks 5");
    CHECK(strstr(keep, "PiB") == NULL);
    free(keep);
    set_threshold(POOL, 0);
    CHECK_STR(t, "pool reserved / used (high water) = 64.0 MiB / 4.00 MiB = 16.00");
    CHECK_STR(t, "device 0: peak live 4.00 MiB");
    CHECK_STR(t, "peak footprint 64.0 MiB at +");
    CHECK_STR(t, "cuMemGetInfo cross-check: 3 samples");
    CHECK_STR(t, "fragmentation 1 - peak live / peak footprint = 93.8%");
    /* 60 MiB of a 16 GiB device: low. */
    CHECK_STR(t, "[low] footprint-over-live: device 0: at its footprint peak 64.0 MiB, "
                 "60.0 MiB (94%) was not live, 0.4% of 16.0 GiB device memory");
    CHECK_STR(t, "Held beyond live bytes (60.0 MiB): page waste 0 B, pool reserve 60.0 MiB, "
                 "graph pool 0 B, arena 0 B. ");
    CHECK_STR(t, "Largest part: the reserve of stream-ordered pools");
    CHECK_STR(t, "[medium] pool-regrow: default pool 0xabc000 on device 0 returned memory 5 "
                 "times and grew back 5 times at async_allocs (");
    CHECK_STR(t, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD");
    /* Larger than the whole device: no word of a full device or of batch sizes. */
    CHECK_STR(t, "[high] oom: cudaMalloc of 20.0 GiB failed");
    CHECK_STR(t, "The request alone (20.0 GiB) is larger than the whole device (16.0 GiB): it "
                 "cannot succeed however much is freed.");
    CHECK(strstr(t, "The device was full") == NULL);
    CHECK(strstr(t, "batch size") == NULL);
    CHECK(strstr(t, "oom-with-free-memory") == NULL);
    /* Every cudaMalloc of the run failed: high, and the oom findings tell the rest. */
    CHECK_STR(t, "[high] allocation-failures: 1 of 1 cudaMalloc calls failed with "
                 "cudaErrorMemoryAllocation at main (");
    CHECK_STR(t, "the oom findings say what held the memory");
    CHECK(strstr(t, "leak:") == NULL); /* everything was freed */
    CHECK(strstr(t, "alloc-rate") == NULL);
    free(t);

    footprint_severity_by_share(dir);
    footprint_parts_add_up(dir);

    /* One more that would have fit an empty device: both causes, in one finding. */
    ai.requested = 2ull << 30;
    cf_rec_alloc(&ai);
    cf_rec.ooms[cf_rec.nooms - 1].free_bytes = 1ull << 30;
    cf_rec.ooms[cf_rec.nooms - 1].total_bytes = 16ull << 30;
    t = render(dir, "two-ooms", 0);
    CHECK_STR(t, "[high] oom: 2 allocations failed; the largest: cudaMalloc of 20.0 GiB");
    CHECK_STR(t, "The largest request (20.0 GiB) alone is larger than the whole device "
                 "(16.0 GiB): split it");
    CHECK_STR(t, "For the other 1 the device was full.");
    free(t);

    /* Leaks are findings of the final report only. */
    memset(&ai, 0, sizeof ai);
    ai.api = CF_API_cuMemAlloc;
    ai.addr = 0x7c0000000000ull;
    ai.requested = 8ull << 20;
    ai.device = 0;
    cf_rec_alloc(&ai);
    t = render(dir, "interim", 1);
    CHECK_STR(t, "interim report");
    CHECK_STR(t, "-- live allocations (1 allocations, 8.00 MiB) --");
    CHECK(strstr(t, "leak:") == NULL);
    free(t);
    t = render(dir, "final", 0);
    CHECK_STR(t, "[medium] leak: 1 device allocation (8.00 MiB) still live at exit from main (");
    /* Nothing was ever freed at that site: held (a cache, a long-lived buffer), said so. */
    CHECK_STR(t, "Nothing allocated here was freed during the whole run");
    free(t);

    /* Leaks of a second site are the same finding (one per kind and cause), which
     * lists its sites with their share of the bytes. */
    /* A runtime that cannot use its driver (NVIDIA's runtime on the simulated device)
     * fails every call: which error, how often, and why. Mixed codes are listed. */
    memset(&ai, 0, sizeof ai);
    ai.api = CF_API_cudaMallocManaged;
    ai.requested = 4096;
    ai.result = 36; /* cudaErrorCallRequiresNewerDriver */
    cf_rec_alloc(&ai);
    cf_rec_alloc(&ai);
    ai.result = 1; /* cudaErrorInvalidValue */
    cf_rec_alloc(&ai);
    ai.api = CF_API_cuMemAllocManaged;
    ai.result = 3; /* CUDA_ERROR_NOT_INITIALIZED */
    cf_rec_alloc(&ai);
    ai.result = 0;
    ai.addr = 0x7a0000000000ull;
    cf_rec_alloc(&ai);
    CHECK(cf_rec_free(CF_API_cuMemFree, ai.addr, 0)); /* the leaks below stay as they are */
    t = render(dir, "failures", 0);
    CHECK_STR(t, "[high] allocation-failures: 3 of 3 cudaMallocManaged calls failed: 2 with "
                 "cudaErrorCallRequiresNewerDriver, 1 with cudaErrorInvalidValue at 3 call sites\n"
                 "       33%  main (");
    CHECK_STR(t, "(1 failed)\n");
    CHECK_STR(t, "carries NVIDIA's own runtime");
    CHECK_STR(t, "[medium] allocation-failures: 1 of 2 cuMemAllocManaged calls failed with "
                 "CUDA_ERROR_NOT_INITIALIZED at main (");
    /* Some calls succeeded: the driver was usable, no word of set-up problems. */
    CHECK_STR(strstr(t, "cuMemAllocManaged calls failed"), "cudafrag passed these errors");
    free(t);

    second_leak();
    t = render(dir, "two", 0);
    CHECK_STR(t, "[medium] leak: 2 device allocations (24.0 MiB) still live at exit from 2 "
                 "call sites\n"
                 "       67%  second_leak (");
    CHECK_STR(t, "(16.0 MiB in 1 allocation)\n"
                 "       33%  main (");
    CHECK_STR(t, "(8.00 MiB in 1 allocation)\n"
                 "      -> Nothing allocated here was freed");
    CHECK(strstr(t, "still live at exit from main") == NULL);
    free(t);

    /* CUDAFRAG_TOP caps the sites a finding lists, never the findings. */
    setenv("CUDAFRAG_TOP", "1", 1);
    cf_config_reload();
    t = render(dir, "capped", 0);
    CHECK_STR(t, "-- findings (7) --"); /* three of them allocation-failures */
    CHECK_STR(t, "       67%  second_leak (");
    CHECK_STR(t, "       33%  1 more call site (CUDAFRAG_TOP shows 1)\n");
    CHECK(strstr(t, "33%  main (") == NULL);
    free(t);
    return 0;
}
