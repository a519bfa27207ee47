/* The live table against a plain array: random allocations and frees over a
 * small address range (so that probe runs collide, wrap around the end of a
 * shard's array and shrink again), with failed frees, replaced addresses and the
 * tables growing. Every free must find exactly the addresses the array says are
 * live, and the report's copy must hold exactly those. */
#include "check.h"
#include "record/read.h"

#define ADDRS 6000
#define STEPS 400000

static uint64_t size_of[ADDRS]; /* 0: not live */

static uint64_t rnd(void)
{
    static uint64_t x = 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

static uint64_t addr_of(unsigned i)
{
    /* Pool-like addresses, 256 B apart, and VMM-like small handles. */
    return i % 2 ? 0x7f0000000000ull + (uint64_t)i * 256 : (uint64_t)i + 1;
}

static void alloc(unsigned i, uint64_t size)
{
    struct cf_alloc_info ai = {
        .api = CF_API_cuMemAlloc, .addr = addr_of(i), .requested = size, .device = 0};
    cf_rec_alloc(&ai);
}

int main(void)
{
    uint64_t live = 0, replaced = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        unsigned i = (unsigned)(rnd() % ADDRS);
        /* Fill up to half the addresses, then hover around that. */
        bool want_alloc = rnd() % 100 < (live < ADDRS / 2 ? 70u : 45u);
        if (want_alloc) {
            uint64_t size = 1 + rnd() % 4096;
            if (size_of[i])
                replaced++; /* its free was missed */
            else
                live++;
            alloc(i, size);
            size_of[i] = size;
        } else if (rnd() % 16 == 0) {
            /* A failed free changes nothing. */
            CHECK(!cf_rec_free(CF_API_cuMemFree, addr_of(i), 1));
        } else {
            CHECK_EQ(cf_rec_free(CF_API_cuMemFree, addr_of(i), 0), size_of[i] != 0);
            if (size_of[i]) live--;
            size_of[i] = 0;
        }
    }
    uint64_t bytes = 0;
    for (unsigned i = 0; i < ADDRS; i++) {
        struct cf_alloc a;
        bool found = cf_rec_live_at(addr_of(i), &a);
        CHECK_EQ(found, size_of[i] != 0);
        if (found) CHECK_EQ(a.requested, size_of[i]);
        bytes += size_of[i];
    }
    struct cf_rec_read r;
    CHECK_EQ(cf_rec_read(&r), 0);
    CHECK_EQ(r.live_count, live);
    CHECK_EQ(r.live_bytes, bytes);
    cf_rec_read_free(&r);
    cf_rec_lock_all();
    CHECK_EQ(cf_rec.replaced_live, replaced);
    CHECK_EQ(cf_rec.dev[0].live_bytes, bytes);
    CHECK_EQ(cf_rec.dev[0].live_count, live);
    cf_rec_unlock_all();
    return 0;
}
