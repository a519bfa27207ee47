/* What cudafrag's bookkeeping costs in memory, read from its own allocator's
 * counters (every table and node of the record comes from cf_meta_alloc): bytes
 * per live allocation and per call site. The record is driven directly through
 * cf_rec_alloc with made-up addresses, so no CUDA library is involved.
 *
 *   bench_meta [ALLOCS]   ALLOCS live allocations from one site (default 100000),
 *                         then 4096 allocations from 4096 distinct call stacks */
#include <stdio.h>
#include <stdlib.h>

#include "base/meta_alloc.h"
#include "record/record.h"

/* 12 frames, each one of two functions: 4096 distinct stacks within 16 frames. */
#define SITE_LEVELS 12
#define SITE_COUNT  (1u << SITE_LEVELS)
#define FAKE_BASE   0x7a0000000000ull
#define FAKE_STRIDE 512u

static uint64_t next_addr = FAKE_BASE;

__attribute__((noinline)) static void record_one(uint64_t bytes)
{
    struct cf_alloc_info ai = {
        .api = CF_API_cudaMalloc,
        .addr = next_addr,
        .requested = bytes,
        .device = 0,
    };
    next_addr += FAKE_STRIDE;
    cf_rec_alloc(&ai);
}

static void step_a(unsigned path, int level);
static void step_b(unsigned path, int level);

/* Which function each frame belongs to spells out `path`, one bit per frame; the
 * call through a pointer keeps each return address inside the frame's own function. */
__attribute__((noinline)) static void step_a(unsigned path, int level)
{
    if (level == 0)
        record_one(256);
    else
        ((path & 1) ? step_a : step_b)(path >> 1, level - 1);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void step_b(unsigned path, int level)
{
    if (level == 0)
        record_one(256);
    else
        ((path & 1) ? step_a : step_b)(path >> 1, level - 1);
    __asm__ volatile("" ::: "memory");
}

static uint64_t meta_in_use(void)
{
    struct cf_meta_stats st;
    cf_meta_get_stats(&st);
    return st.in_use;
}

static uint64_t meta_mapped(void)
{
    struct cf_meta_stats st;
    cf_meta_get_stats(&st);
    return st.mapped;
}

static uint64_t count_sites(void)
{
    cf_rec_lock_all();
    uint64_t n = HASH_COUNT(cf_rec.sites);
    cf_rec_unlock_all();
    return n;
}

int main(int argc, char **argv)
{
    long allocs = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    if (allocs <= 0) {
        fprintf(stderr, "usage: %s [ALLOCS]\n", argv[0]);
        return 2;
    }
    cf_rec_init();
    record_one(256); /* the first site, libunwind and the lazily built tables */

    uint64_t used0 = meta_in_use(), mapped0 = meta_mapped();
    for (long i = 0; i < allocs; i++)
        record_one(256);
    uint64_t used1 = meta_in_use(), mapped1 = meta_mapped();

    uint64_t sites0 = count_sites();
    for (unsigned path = 0; path < SITE_COUNT; path++)
        ((path & 1) ? step_a : step_b)(path >> 1, SITE_LEVELS - 1);
    uint64_t used2 = meta_in_use(), mapped2 = meta_mapped();
    uint64_t new_sites = count_sites() - sites0;
    if (new_sites < SITE_COUNT) {
        fprintf(stderr, "bench_meta: only %llu distinct sites (stacks unavailable?)\n",
                (unsigned long long)new_sites);
        return 1;
    }
    /* Each site's allocation is itself a live allocation: take it out. */
    double per_alloc = (double)(used1 - used0) / (double)allocs;
    double mapped_per_alloc = (double)(mapped1 - mapped0) / (double)allocs;
    double per_site = ((double)(used2 - used1) - per_alloc * (double)new_sites) / (double)new_sites;
    printf("allocs %ld\n", allocs);
    printf("bytes_per_live_alloc %.1f\n", per_alloc);
    printf("mapped_per_live_alloc %.1f\n", mapped_per_alloc);
    printf("sites %llu\n", (unsigned long long)new_sites);
    printf("bytes_per_site %.1f\n", per_site);
    printf("mapped_per_site %.1f\n",
           ((double)(mapped2 - mapped1) - mapped_per_alloc * (double)new_sites) /
               (double)new_sites);
    printf("sizeof_cf_alloc %zu\nsizeof_cf_site %zu\n", sizeof(struct cf_alloc),
           sizeof(struct cf_site));
    return 0;
}
