/* Two-level segregated fit (TLSF) allocator over a 64-bit address space whose
 * bytes the host never touches: every block record lives in host memory, so it
 * can manage device memory (which cannot hold headers). Addresses and sizes are
 * 64-bit, so blocks may exceed 4 GiB. All operations are O(1) except region
 * bookkeeping and the checker. Not thread-safe: the caller locks. */
#ifndef CF_ARENA_TLSF_H
#define CF_ARENA_TLSF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLSF_ALIGN_LOG2 8 /* 256 bytes: what cudaMalloc guarantees */
#define TLSF_ALIGN      ((uint64_t)1 << TLSF_ALIGN_LOG2)
#define TLSF_SL_LOG2    5 /* 32 linear subdivisions per power of two */
#define TLSF_SL_COUNT   (1 << TLSF_SL_LOG2)
/* Sizes below 2^(SL_LOG2 + ALIGN_LOG2) = 8 KiB share first level 0, in 256-byte steps. */
#define TLSF_FL_SHIFT (TLSF_SL_LOG2 + TLSF_ALIGN_LOG2)
#define TLSF_FL_COUNT (64 - TLSF_FL_SHIFT + 1)

enum tlsf_state { TLSF_FREE = 1, TLSF_USED = 2 };

struct tlsf_block {
    uint64_t addr, size;
    struct tlsf_block *phys_prev, *phys_next; /* neighbours in the same region */
    /* Free blocks: links of their size-class list. Used blocks: free for the
     * owner (the arena chains quarantined blocks through them). */
    struct tlsf_block *link_prev, *link_next;
    struct tlsf_block *hash_next; /* used blocks: address lookup chain */
    uintptr_t user[2];            /* owner's per-block data (stream, event) */
    uint32_t state;
};

struct tlsf_slab; /* chunk of block records */

struct tlsf_region {
    uint64_t addr, size;
    struct tlsf_block *first; /* the block at addr: merges keep the lower record */
};

struct tlsf {
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[TLSF_FL_COUNT];
    struct tlsf_block *heads[TLSF_FL_COUNT][TLSF_SL_COUNT];
    struct tlsf_block **hash; /* used blocks by address */
    uint64_t hash_mask, used_count;
    struct tlsf_block *spare; /* free-listed block records */
    struct tlsf_slab *slabs;
    uint64_t total, used_bytes, free_bytes, free_count;
    struct tlsf_region *regions;
    uint32_t nregions, region_cap;
};

int tlsf_init(struct tlsf *t);
void tlsf_destroy(struct tlsf *t);

/* Hand [addr, addr + size) to the allocator as one free block that never
 * coalesces with other regions. addr and size must be 256-aligned. 0 or -1
 * (host out of memory). */
int tlsf_add_region(struct tlsf *t, uint64_t addr, uint64_t size);
/* If the region starting at addr is one whole free block, forget it: returns
 * its size, else 0. */
uint64_t tlsf_remove_region(struct tlsf *t, uint64_t addr);

/* Round a request up to the granularity blocks are made of. */
static inline uint64_t tlsf_round(uint64_t size)
{
    if (size == 0) size = 1;
    if (size > UINT64_MAX - TLSF_ALIGN) return 0;
    return (size + TLSF_ALIGN - 1) & ~(TLSF_ALIGN - 1);
}

/* A used block of at least size bytes (block->size may be up to 255 bytes more
 * than the rounded request when the remainder is too small to split off), or
 * NULL when no free block is large enough or block records ran out. */
struct tlsf_block *tlsf_alloc(struct tlsf *t, uint64_t size);
/* The used block starting at addr, or NULL. */
struct tlsf_block *tlsf_lookup(const struct tlsf *t, uint64_t addr);
/* Return a used block; it coalesces with free physical neighbours at once.
 * Returns the resulting free block (possibly merged). */
struct tlsf_block *tlsf_free(struct tlsf *t, struct tlsf_block *b);
/* Unlink b from the address lookup without freeing it (the caller holds it
 * back, e.g. until the device stopped using it); tlsf_free still works on it. */
void tlsf_unpublish(struct tlsf *t, struct tlsf_block *b);
/* Make an unpublished used block findable by tlsf_lookup again. */
void tlsf_publish(struct tlsf *t, struct tlsf_block *b);

/* Largest free block (exact; scans only the highest non-empty size class). */
uint64_t tlsf_largest_free(const struct tlsf *t);

/* Invariant checker: number of violations (0 = consistent). Prints the first
 * few to stderr. O(blocks). */
int tlsf_check(const struct tlsf *t);

#endif
