/* Between the files of the PyTorch caching allocator's model (model_pytorch.c,
 * model_pytorch_expandable.c, model_pytorch_check.c); nothing else includes it.
 * The structures keep PyTorch's names, the functions too behind a pt_ prefix. */
#ifndef CF_REPLAY_MODEL_PYTORCH_H
#define CF_REPLAY_MODEL_PYTORCH_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/model.h"
#include "replay/oset.h"
#include "replay/u64map.h"

#define MiB            ((uint64_t)1 << 20)
#define kMinBlockSize  ((uint64_t)512)
#define kSmallSize     MiB
#define kSmallBuffer   (2 * MiB)
#define kLargeBuffer   (20 * MiB)
#define kMinLargeAlloc (10 * MiB)
#define kRoundLarge    (2 * MiB)

enum pt_where { PT_NOWHERE, PT_IN_BLOCKS, PT_IN_UNMAPPED };

struct pt_pool;
struct pt_segment;

struct pt_block {
    struct cf_onode node; /* in its pool's blocks (free, mapped) or unmapped set */
    uint64_t stream, size, requested, addr;
    struct pt_pool *pool;
    struct pt_block *prev, *next; /* split neighbours in the segment */
    struct pt_segment *es;        /* expandable segment, NULL for a cudaMalloc segment */
    int64_t gc_count_base;
    bool allocated, mapped;
    uint8_t where;
};

struct pt_pool { /* BlockPool */
    struct cf_oset blocks, unmapped;
    bool is_small;
    int64_t get_free_blocks_call_count;
};

struct pt_segment {                                     /* ExpandableSegment */
    uint64_t base, segment_size, max_handles, nhandles; /* nhandles: handles_.size() */
    uint8_t *mapped;                                    /* by handle */
    struct pt_segment *next;
};

struct pt_params { /* AllocParams */
    uint64_t stream, size, alloc_size;
    struct pt_pool *pool;
    struct pt_block *block;
};

struct pt_torch {
    struct cf_rp_model m;
    uint64_t capacity, va;
    uint32_t nallocs;
    /* CUDAAllocatorConfig */
    uint64_t max_split_size, max_non_split_rounding, divisions;
    double gc_threshold;
    bool expandable, set_fraction;
    uint64_t allowed_memory_maximum;
    /* DeviceCachingAllocator */
    struct pt_pool large_blocks, small_blocks;
    uint64_t total_allocated_memory;
    struct pt_block **active;  /* by id */
    struct cf_u64map segments; /* cudaMalloc segments: address -> size */
    struct pt_segment *expandable_segments;
    bool force; /* serving beyond the device's memory after an out of memory */
    bool broken;
};
/* ---- model_pytorch.c: blocks and their sets ---- */
struct pt_block *pt_next_in(const struct pt_block *b);
/* NULL when out of memory, and the model is then broken. */
struct pt_block *pt_new_block(struct pt_torch *t, uint64_t stream, uint64_t size,
                              struct pt_pool *pool, uint64_t addr);
void pt_insert_into_blocks(struct pt_pool *pool, struct pt_block *b);
void pt_insert_unmapped(struct pt_pool *pool, struct pt_block *b);
void pt_erase(struct pt_block *b);

/* Split neighbours: n goes in just before / just after b in b's segment. */
static inline void pt_link_before(struct pt_block *b, struct pt_block *n)
{
    n->prev = b->prev;
    if (n->prev) n->prev->next = n;
    n->next = b;
    b->prev = n;
}

static inline void pt_link_after(struct pt_block *b, struct pt_block *n)
{
    n->next = b->next;
    if (n->next) n->next->prev = n;
    n->prev = b;
    b->next = n;
}
uint64_t pt_va_take(struct pt_torch *t, uint64_t bytes);
/* Merges a free neighbour src into dst and frees it: the bytes it added (0: none). */
uint64_t pt_try_merge_blocks(struct pt_block *dst, struct pt_block *src);

/* ---- model_pytorch_expandable.c ---- */
/* The handles of an expandable segment a range starts in, and ends before. */
static inline uint64_t pt_seg_left(const struct pt_segment *es, uint64_t p)
{
    return (p - es->base) / es->segment_size;
}

static inline uint64_t pt_seg_right(const struct pt_segment *es, uint64_t p)
{
    return (p - es->base + es->segment_size - 1) / es->segment_size;
}

struct pt_block *pt_try_allocate_expandable_block(struct pt_torch *t, uint64_t stream,
                                                  struct pt_pool *pool, uint64_t size);
void pt_unmap_block(struct pt_torch *t, struct pt_block *b);
void pt_release_expandable_segment(struct pt_torch *t, struct pt_block *b);

/* ---- model_pytorch_check.c ---- */
double pt_ext_frag(struct cf_rp_model *m);
int pt_check(struct cf_rp_model *m);

#endif
