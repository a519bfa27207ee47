/* Frees are taken out of the live table before the real free
 * (cf_rec_free_begin) and settled after it (cf_rec_free_end), so that an
 * address the driver hands to another thread in between is never lost: a failed
 * free puts its entry back, a successful one retires it, and an allocation
 * recorded at the same address meanwhile stays live. */
#include "check.h"
#include "record/record.h"

#define MiB (1ull << 20)

static void alloc_at(uint64_t addr, uint64_t size)
{
    struct cf_alloc_info ai = {
        .api = CF_API_cudaMalloc, .addr = addr, .requested = size, .device = 0};
    cf_rec_alloc(&ai);
}

static uint64_t live_count(void)
{
    return __atomic_load_n(&cf_rec.dev[0].live_count, __ATOMIC_RELAXED);
}

static uint64_t live_bytes(void)
{
    return __atomic_load_n(&cf_rec.dev[0].live_bytes, __ATOMIC_RELAXED);
}

int main(void)
{
    /* A failed free: everything as before it. */
    alloc_at(0x1000, 4 * MiB);
    cf_rec_collect();
    uint64_t frees = cf_rec.total_frees;
    uint64_t t0;
    struct cf_alloc *a = cf_rec_free_begin(0x1000, &t0);
    CHECK(a != NULL);
    CHECK_EQ(live_bytes(), 0); /* out of the table while the real free runs */
    CHECK(!cf_rec_free_end(CF_API_cudaFree, 0x1000, a, 1 /* the free failed */, 0, 0));
    CHECK_EQ(live_bytes(), 4 * MiB);
    CHECK_EQ(live_count(), 1);
    cf_rec_collect();
    CHECK_EQ(cf_rec.total_frees, frees);

    /* A successful free while another thread is handed the same address. */
    a = cf_rec_free_begin(0x1000, &t0);
    CHECK(a != NULL);
    alloc_at(0x1000, 1 * MiB); /* the driver reused the address at once */
    CHECK(cf_rec_free_end(CF_API_cudaFree, 0x1000, a, 0, 0, 0));
    CHECK_EQ(live_bytes(), 1 * MiB); /* the newcomer is live, the old block is gone */
    CHECK_EQ(live_count(), 1);
    CHECK_EQ(cf_rec.unknown_frees, 0);

    /* A failed free overlapping a newcomer at the same address: the newcomer wins,
     * since the address must really have been given back. */
    a = cf_rec_free_begin(0x1000, &t0);
    alloc_at(0x1000, 2 * MiB);
    cf_rec_free_end(CF_API_cudaFree, 0x1000, a, 1, 0, 0);
    CHECK_EQ(live_bytes(), 2 * MiB);
    CHECK_EQ(live_count(), 1);
    CHECK(cf_rec_free(CF_API_cudaFree, 0x1000, 0));
    CHECK_EQ(live_bytes(), 0);
    CHECK_EQ(live_count(), 0);
    return 0;
}
