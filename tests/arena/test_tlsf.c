/* Host-only TLSF: invariants under randomized alloc/free with fixed seeds,
 * coalescing, address lookup, blocks beyond 4 GiB, and a checker that does
 * notice corruption. */
#include "arena/tlsf.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

#define GiB  ((uint64_t)1 << 30)
#define BASE ((uint64_t)1 << 40)

struct live {
    struct tlsf_block *b;
    uint64_t addr, asked;
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Mostly small sizes, some medium, a few huge (up to 16 GiB). */
static uint64_t random_size(void)
{
    uint64_t r = rnd() % 1000;
    if (r < 700) return 1 + rnd() % (64 << 10);
    if (r < 990) return 1 + rnd() % (64 << 20);
    return 1 + rnd() % (16 * GiB);
}

static int cmp_addr(const void *a, const void *b)
{
    const struct live *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* No two live blocks overlap, each is aligned, big enough and inside the region. */
static void check_live(struct live *l, size_t n, uint64_t region)
{
    qsort(l, n, sizeof *l, cmp_addr);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(l[i].addr % TLSF_ALIGN, 0);
        CHECK_EQ(l[i].b->addr, l[i].addr);
        CHECK_GE(l[i].b->size, l[i].asked);
        CHECK_LT(l[i].b->size - l[i].asked, 2 * TLSF_ALIGN);
        CHECK_GE(l[i].addr, BASE);
        CHECK_LE(l[i].addr + l[i].b->size, BASE + region);
        if (i) CHECK_LE(l[i - 1].addr + l[i - 1].b->size, l[i].addr);
    }
}

static void random_run(uint64_t seed, int ops)
{
    const uint64_t region = 64 * GiB;
    struct tlsf t;
    CHECK_EQ(tlsf_init(&t), 0);
    CHECK_EQ(tlsf_add_region(&t, BASE, region), 0);
    rng_state = seed;
    struct live *l = calloc((size_t)ops, sizeof *l);
    size_t n = 0;
    int failures = 0;
    for (int op = 0; op < ops; op++) {
        if (n && rnd() % 100 < 45) {
            size_t k = rnd() % n;
            CHECK(tlsf_lookup(&t, l[k].addr) == l[k].b);
            tlsf_free(&t, l[k].b);
            CHECK(tlsf_lookup(&t, l[k].addr) == NULL);
            l[k] = l[--n];
        } else {
            uint64_t size = random_size();
            struct tlsf_block *b = tlsf_alloc(&t, size);
            if (b == NULL) {
                /* Only when no free block is large enough, give or take the
                 * one size class good fit skips (1/32 of the size). */
                uint64_t r = tlsf_round(size);
                CHECK_LT(tlsf_largest_free(&t), r + r / 16);
                failures++;
                continue;
            }
            l[n++] = (struct live){b, b->addr, size};
        }
        /* Every byte is either in a used block or a free one. */
        CHECK_EQ(t.used_bytes + t.free_bytes, region);
        if (op % 997 == 0) {
            CHECK_EQ(tlsf_check(&t), 0);
            check_live(l, n, region);
        }
    }
    CHECK_EQ(tlsf_check(&t), 0);
    check_live(l, n, region);
    while (n)
        tlsf_free(&t, l[--n].b);
    /* Everything coalesced back into one block. */
    CHECK_EQ(tlsf_check(&t), 0);
    CHECK_EQ(t.free_count, 1);
    CHECK_EQ(t.free_bytes, region);
    CHECK_EQ(tlsf_largest_free(&t), region);
    CHECK_EQ(t.used_count, 0);
    printf("seed %llu: %d ops, %d refused\n", (unsigned long long)seed, ops, failures);
    free(l);
    tlsf_destroy(&t);
}

static void coalescing_and_regions(void)
{
    struct tlsf t;
    CHECK_EQ(tlsf_init(&t), 0);
    CHECK_EQ(tlsf_add_region(&t, BASE, 1 << 20), 0);
    CHECK_EQ(tlsf_add_region(&t, BASE + (1 << 20), 1 << 20), 0); /* adjacent, separate */
    struct tlsf_block *a = tlsf_alloc(&t, 1000), *b = tlsf_alloc(&t, 1000), *c;
    CHECK(a && b);
    CHECK_EQ(a->size, 1024);
    CHECK_EQ(b->addr, a->addr + 1024); /* both split from the same free block */
    c = tlsf_alloc(&t, 256);
    CHECK(c != NULL);
    CHECK_EQ(c->addr, b->addr + 1024);
    uint64_t free_before = t.free_count;
    tlsf_free(&t, b); /* between two used blocks: a new free block */
    CHECK_EQ(t.free_count, free_before + 1);
    tlsf_free(&t, a); /* merges with b's hole */
    CHECK_EQ(t.free_count, free_before + 1);
    tlsf_free(&t, c); /* merges both sides */
    CHECK_EQ(t.free_count, 2);
    CHECK_EQ(tlsf_check(&t), 0);
    /* Regions never merge, even when adjacent: no block spans both. */
    CHECK(tlsf_alloc(&t, (1 << 20) + 256) == NULL);
    CHECK_EQ(tlsf_remove_region(&t, BASE + (1 << 20)), 1 << 20);
    CHECK_EQ(t.total, 1 << 20);
    struct tlsf_block *d = tlsf_alloc(&t, 4096);
    CHECK(d != NULL);
    CHECK_EQ(tlsf_remove_region(&t, BASE), 0); /* not wholly free */
    CHECK_EQ(tlsf_check(&t), 0);
    tlsf_destroy(&t);
}

static void huge_blocks(void)
{
    struct tlsf t;
    CHECK_EQ(tlsf_init(&t), 0);
    CHECK_EQ(tlsf_add_region(&t, BASE, 200 * GiB), 0);
    struct tlsf_block *a = tlsf_alloc(&t, 64 * GiB), *b = tlsf_alloc(&t, 64 * GiB + 1);
    CHECK(a && b);
    CHECK_EQ(a->size, 64 * GiB);
    CHECK_EQ(b->size, 64 * GiB + TLSF_ALIGN);
    CHECK(tlsf_alloc(&t, 80 * GiB) == NULL); /* 72 GiB - 256 left */
    struct tlsf_block *c = tlsf_alloc(&t, 60 * GiB);
    CHECK(c != NULL);
    CHECK_EQ(tlsf_check(&t), 0);
    tlsf_free(&t, b);
    tlsf_free(&t, a);
    tlsf_free(&t, c);
    CHECK_EQ(t.free_count, 1);
    CHECK_EQ(tlsf_largest_free(&t), 200 * GiB);
    CHECK(tlsf_alloc(&t, UINT64_MAX - 10) == NULL);
    tlsf_destroy(&t);
}

/* The checker must report damage, or the randomized runs prove nothing. */
static void checker_detects_damage(void)
{
    struct tlsf t;
    CHECK_EQ(tlsf_init(&t), 0);
    CHECK_EQ(tlsf_add_region(&t, BASE, 1 << 30), 0);
    struct tlsf_block *a = tlsf_alloc(&t, 1 << 20), *b = tlsf_alloc(&t, 1 << 20);
    CHECK(a && b && tlsf_alloc(&t, 1 << 20));
    tlsf_free(&t, a);
    CHECK_EQ(tlsf_check(&t), 0);
    uint64_t saved = t.fl_bitmap;
    t.fl_bitmap ^= 1; /* a class claimed non-empty with an empty list */
    CHECK_LT(0, tlsf_check(&t));
    t.fl_bitmap = saved;
    b->state = TLSF_FREE; /* free but in no list, next to another free block */
    CHECK_LT(0, tlsf_check(&t));
    b->state = TLSF_USED;
    a->size += TLSF_ALIGN; /* overlaps its neighbour */
    CHECK_LT(0, tlsf_check(&t));
    a->size -= TLSF_ALIGN;
    CHECK_EQ(tlsf_check(&t), 0);
    tlsf_destroy(&t);
}

int main(void)
{
    coalescing_and_regions();
    huge_blocks();
    checker_detects_damage();
    random_run(1, 20000);
    random_run(42, 20000);
    random_run(0x5eed, 50000);
    return 0;
}
