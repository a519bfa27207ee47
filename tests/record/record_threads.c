/* 16 threads allocate and free nrounds times each (argv[1], default 100000) while
 * keeping a few allocations: every count must come out exact. The sanitizer builds
 * pass fewer rounds: they see a race on any round, and each costs them ten times. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "record/read.h"

#define THREADS 16
#define KEPT    10
#define SIZE    4096

static uint64_t nrounds = 100000;

__attribute__((noinline)) static void alloc_one(uint64_t addr)
{
    struct cf_alloc_info ai = {.api = CF_API_cuMemAlloc, .addr = addr, .requested = SIZE};
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
    uint64_t base = ((uint64_t)(uintptr_t)arg + 1) << 36;
    for (uint64_t i = 0; i < nrounds; i++) {
        alloc_one(base + (i % 64) * 0x200);
        if (!cf_rec_free(CF_API_cuMemFree, base + (i % 64) * 0x200, 0)) return (void *)1;
    }
    for (uint64_t i = 0; i < KEPT; i++)
        alloc_one(base + (1ull << 30) + i * 0x200);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) nrounds = strtoull(argv[1], NULL, 10);
    CHECK(nrounds > 0);
    /* Threads that allocate while libunwind is still being loaded record no frames;
     * load it first so that every allocation below has its stack. */
    struct cf_alloc_info warm = {.api = CF_API_cuMemAllocHost, .addr = 0x1, .requested = 1};
    cf_rec_alloc(&warm);
    CHECK(cf_rec_free(CF_API_cuMemFreeHost, 0x1, 0));

    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *failed;
        CHECK_EQ(pthread_join(t[i], &failed), 0);
        CHECK(failed == NULL);
    }
    const uint64_t allocs = (uint64_t)THREADS * (nrounds + KEPT);
    cf_rec_collect(); /* the threads counted on their own */
    CHECK_EQ(cf_rec.total_allocs, allocs + 1);
    CHECK_EQ(cf_rec.total_frees, (uint64_t)THREADS * nrounds + 1);
    CHECK_EQ(cf_rec.unknown_frees, 0);
    CHECK_EQ(cf_rec.replaced_live, 0);
    CHECK_EQ(cf_rec.api[CF_API_cuMemAlloc].calls, allocs);
    CHECK_EQ(cf_rec.api[CF_API_cuMemAlloc].bytes, allocs * SIZE);
    CHECK_EQ(cf_rec.api[CF_API_cuMemFree].calls, (uint64_t)THREADS * nrounds);
    CHECK_EQ(cf_rec.dev[0].live_count, THREADS * KEPT);
    CHECK_EQ(cf_rec.dev[0].live_bytes, THREADS * KEPT * SIZE);
    /* At most every thread had one more allocation in flight than it kept. */
    CHECK_GE(cf_rec.dev[0].peak_live_bytes, THREADS * KEPT * SIZE);
    CHECK_LE(cf_rec.dev[0].peak_live_bytes, THREADS * (KEPT + 1) * SIZE);
    CHECK_EQ(cf_rec.sizes.count[12], allocs);

    struct cf_rec_read r;
    CHECK_EQ(cf_rec_read(&r), 0);
    CHECK_EQ(r.live_count, THREADS * KEPT);
    cf_rec_read_free(&r);
    cf_rec_lock_all();
    /* Without stacks (CUDAFRAG_STACK_DEPTH=0, as in the ThreadSanitizer build) a
     * site is an API: one for all the threads' allocations. */
    const char *depth = getenv("CUDAFRAG_STACK_DEPTH");
    if (depth && strcmp(depth, "0") == 0) {
        CHECK_EQ(HASH_COUNT(cf_rec.sites), 2);
        for (struct cf_site *s = cf_rec.sites; s; s = s->hh.next) {
            if (s->api != CF_API_cuMemAlloc) continue;
            CHECK_EQ(s->calls, allocs);
            CHECK_EQ(s->frees, (uint64_t)THREADS * nrounds);
            CHECK_EQ(s->live_count, THREADS * KEPT);
            CHECK_EQ(s->live_bytes, THREADS * KEPT * SIZE);
        }
        cf_rec_unlock_all();
        return 0;
    }
    /* Every thread runs the same code from the same thread entry: two sites, the
     * round loop and the kept allocations (and main's warm-up site). */
    CHECK_EQ(HASH_COUNT(cf_rec.sites), 3);
    struct cf_site *kept = NULL, *rounds = NULL;
    for (struct cf_site *s = cf_rec.sites; s; s = s->hh.next)
        if (s->api == CF_API_cuMemAlloc) *(s->live_count ? &kept : &rounds) = s;
    CHECK(kept != NULL && rounds != NULL);
    CHECK_EQ(rounds->calls, (uint64_t)THREADS * nrounds);
    CHECK_EQ(rounds->frees, (uint64_t)THREADS * nrounds);
    CHECK_EQ(rounds->lifetime_count, (uint64_t)THREADS * nrounds);
    CHECK_EQ(rounds->live_bytes, 0);
    CHECK_GE(rounds->peak_live_bytes, SIZE);
    CHECK_LE(rounds->peak_live_bytes, THREADS * SIZE);
    CHECK_EQ(kept->calls, THREADS * KEPT);
    CHECK_EQ(kept->frees, 0);
    CHECK_EQ(kept->live_count, THREADS * KEPT);
    CHECK_EQ(kept->live_bytes, THREADS * KEPT * SIZE);
    CHECK_EQ(kept->peak_live_bytes, THREADS * KEPT * SIZE);
    cf_rec_unlock_all();
    return 0;
}
