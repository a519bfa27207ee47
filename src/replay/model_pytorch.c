/* PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
 * DeviceCachingAllocator), function by function under the same names so that
 * the source can be read beside it:
 *
 * - round_size: 512 B rounding, or roundup_power2_divisions;
 * - get_pool: requests up to kSmallSize (1 MiB) from the small pool, whose
 *   segments are kSmallBuffer (2 MiB); larger ones from the large pool, with
 *   kLargeBuffer (20 MiB) segments below kMinLargeAlloc (10 MiB) and 2 MiB
 *   rounding above (get_allocation_size);
 * - get_free_block: best fit (smallest block, then lowest address) among the
 *   free blocks of the request's stream -- the pools are per stream -- with the
 *   max_split_size and max_non_split_rounding rules for oversize blocks;
 * - should_split / alloc_found_block: a small block splits when 512 B or more
 *   remain, a large one when more than kSmallSize remains and the request is
 *   below max_split_size;
 * - free_block / try_merge_blocks: a freed block merges with free neighbours of
 *   its segment at once;
 * - malloc: when no cached block fits, garbage_collect_cached_blocks (with
 *   garbage_collection_threshold and a memory fraction), then cudaMalloc
 *   (alloc_block); on out of memory release_available_cached_blocks and retry,
 *   then release_cached_blocks (every unsplit cached segment) and retry;
 * - expandable_segments: one segment per stream and pool whose address space
 *   covers the device, mapped in 2 MiB (small pool) or 20 MiB (large pool)
 *   pages on demand at the lowest address that fits (find_expandable_block,
 *   map_block), unmapped page by page when cached memory is released
 *   (unmap_block).
 *
 * Not modelled: recordStream (the trace does not say which streams used a
 * block, so a freed block is reusable at once on its own stream), CUDA graph
 * private pools, cudaMalloc failures other than out of memory. Segment
 * addresses are fresh and increasing (only the order of equal-sized blocks
 * depends on them). PyTorch raises OutOfMemoryError where this model records
 * the out of memory and serves the request beyond the device's memory, so
 * that the replay stays in step with the traced program. */
#include "replay/model.h"

#include <stdlib.h>

#include "replay/oset.h"
#include "replay/u64map.h"

#define MiB            ((uint64_t)1 << 20)
#define kMinBlockSize  ((uint64_t)512)
#define kSmallSize     MiB
#define kSmallBuffer   (2 * MiB)
#define kLargeBuffer   (20 * MiB)
#define kMinLargeAlloc (10 * MiB)
#define kRoundLarge    (2 * MiB)
#define VA_BASE        ((uint64_t)1 << 40)
#define VA_ALIGN       (2 * MiB)

enum knob { MAX_SPLIT, MAX_NON_SPLIT, DIVISIONS, GC_THRESHOLD, FRACTION, EXPANDABLE };
enum where { NOWHERE, IN_BLOCKS, IN_UNMAPPED };

struct pool;
struct segment;

struct block {
    struct cf_onode node; /* in its pool's blocks (free, mapped) or unmapped set */
    uint64_t stream, size, requested, addr;
    struct pool *pool;
    struct block *prev, *next; /* split neighbours in the segment */
    struct segment *es;        /* expandable segment, NULL for a cudaMalloc segment */
    int64_t gc_count_base;
    bool allocated, mapped;
    uint8_t where;
};

struct pool { /* BlockPool */
    struct cf_oset blocks, unmapped;
    bool is_small;
    int64_t get_free_blocks_call_count;
};

struct segment {                                        /* ExpandableSegment */
    uint64_t base, segment_size, max_handles, nhandles; /* nhandles: handles_.size() */
    uint8_t *mapped;                                    /* by handle */
    struct segment *next;
};

struct params { /* AllocParams */
    uint64_t stream, size, alloc_size;
    struct pool *pool;
    struct block *block;
};

struct torch {
    struct cf_rp_model m;
    uint64_t capacity, va;
    uint32_t nallocs;
    /* CUDAAllocatorConfig */
    uint64_t max_split_size, max_non_split_rounding, divisions;
    double gc_threshold;
    bool expandable, set_fraction;
    uint64_t allowed_memory_maximum;
    /* DeviceCachingAllocator */
    struct pool large_blocks, small_blocks;
    uint64_t total_allocated_memory;
    struct block **active;     /* by id */
    struct cf_u64map segments; /* cudaMalloc segments: address -> size */
    struct segment *expandable_segments;
    bool force; /* serving beyond the device's memory after an out of memory */
    bool broken;
};

static int by_size(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct block *x = (const struct block *)a, *y = (const struct block *)b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_addr(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct block *x = (const struct block *)a, *y = (const struct block *)b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct block *next_in(const struct block *b)
{
    return (struct block *)cf_oset_next(&b->node);
}

static struct block *new_block(struct torch *t, uint64_t stream, uint64_t size, struct pool *pool,
                               uint64_t addr)
{
    struct block *b = calloc(1, sizeof *b);
    if (b == NULL) {
        t->broken = true;
        return NULL;
    }
    *b = (struct block){.stream = stream, .size = size, .pool = pool, .addr = addr, .mapped = true};
    return b;
}

static void insert_into_blocks(struct pool *pool, struct block *b)
{
    b->gc_count_base = pool->get_free_blocks_call_count;
    b->where = IN_BLOCKS;
    cf_oset_insert(&pool->blocks, &b->node);
}

static void insert_unmapped(struct pool *pool, struct block *b)
{
    b->where = IN_UNMAPPED;
    cf_oset_insert(&pool->unmapped, &b->node);
}

static void erase(struct block *b)
{
    if (b->where == IN_BLOCKS) cf_oset_erase(&b->pool->blocks, &b->node);
    if (b->where == IN_UNMAPPED) cf_oset_erase(&b->pool->unmapped, &b->node);
    b->where = NOWHERE;
}

static bool is_split(const struct block *b)
{
    return b->prev != NULL || b->next != NULL;
}

static uint64_t va_take(struct torch *t, uint64_t bytes)
{
    uint64_t addr = t->va;
    t->va += (bytes + VA_ALIGN - 1) / VA_ALIGN * VA_ALIGN;
    return addr;
}

/* ---- sizes ---- */

static uint64_t floor_pow2(uint64_t x)
{
    return (uint64_t)1 << (63 - __builtin_clzll(x));
}

static uint64_t roundup_power2_next_division(uint64_t size, uint64_t divisions)
{
    if ((size & (size - 1)) == 0) return size;
    uint64_t power2_floor = floor_pow2(size);
    uint64_t power2_division = power2_floor >> (63 - __builtin_clzll(divisions));
    if (power2_division == 0) return power2_floor << 1;
    uint64_t round_size_floor = size & ~(power2_division - 1);
    return round_size_floor == size ? size : round_size_floor + power2_division;
}

static uint64_t round_size(const struct torch *t, uint64_t size)
{
    if (size < kMinBlockSize) return kMinBlockSize;
    if (t->divisions > 1 && size > kMinBlockSize * t->divisions)
        return roundup_power2_next_division(size, t->divisions);
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

static uint64_t get_allocation_size(uint64_t size)
{
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

/* ---- merging, freeing, splitting ---- */

static uint64_t try_merge_blocks(struct block *dst, struct block *src)
{
    if (src == NULL || src->allocated || dst->mapped != src->mapped) return 0;
    if (dst->prev == src) { /* [src dst] */
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
    } else { /* [dst src] */
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    uint64_t subsumed = src->size;
    dst->size += subsumed;
    erase(src);
    free(src);
    return subsumed;
}

static void free_block(struct block *b)
{
    try_merge_blocks(b, b->prev);
    try_merge_blocks(b, b->next);
    insert_into_blocks(b->pool, b);
}

static bool should_split(const struct torch *t, const struct block *b, uint64_t size)
{
    uint64_t remaining = b->size - size;
    if (b->pool->is_small || t->expandable) return remaining >= kMinBlockSize;
    return size < t->max_split_size && remaining > kSmallSize;
}

static struct block *alloc_found_block(struct torch *t, struct params *p, uint64_t orig_size,
                                       bool split_remainder)
{
    struct block *b = p->block;
    if (split_remainder) {
        struct block *remaining = b;
        b = new_block(t, p->stream, p->size, p->pool, remaining->addr);
        if (b == NULL) return remaining;
        b->es = remaining->es;
        b->prev = remaining->prev;
        if (b->prev) b->prev->next = b;
        b->next = remaining;
        remaining->prev = b;
        remaining->addr += p->size;
        remaining->size -= p->size;
        insert_into_blocks(p->pool, remaining);
    }
    b->allocated = true;
    b->requested = orig_size;
    return b;
}

/* ---- expandable segments ---- */

static uint64_t seg_left(const struct segment *es, uint64_t p)
{
    return (p - es->base) / es->segment_size;
}

static uint64_t seg_right(const struct segment *es, uint64_t p)
{
    return (p - es->base + es->segment_size - 1) / es->segment_size;
}

/* ExpandableSegment::map: the handles [begin, end) covering the range, or an
 * empty range when the device runs out (the handles made are given back). */
static uint64_t es_map(struct torch *t, struct segment *es, uint64_t ptr, uint64_t size)
{
    uint64_t begin = seg_left(es, ptr), end = seg_right(es, ptr + size);
    if (end > es->max_handles) return 0;
    if (end > es->nhandles) es->nhandles = end;
    for (uint64_t i = begin; i < end; i++) {
        t->m.driver_calls++; /* cuMemCreate */
        uint64_t made = (i - begin) * es->segment_size;
        if (!t->force && t->total_allocated_memory + made + es->segment_size > t->capacity) {
            t->m.driver_calls += i - begin; /* cuMemRelease of those made */
            while (es->nhandles > 0 && !es->mapped[es->nhandles - 1])
                es->nhandles--;
            return 0;
        }
    }
    for (uint64_t i = begin; i < end; i++)
        es->mapped[i] = 1;
    t->m.driver_calls += (end - begin) + 1; /* cuMemMap per handle, cuMemSetAccess */
    return (end - begin) * es->segment_size;
}

/* ExpandableSegment::unmap: only the handles wholly inside the range. */
static uint64_t es_unmap(struct torch *t, struct segment *es, uint64_t ptr, uint64_t size,
                         uint64_t *at)
{
    uint64_t begin = seg_right(es, ptr), end = seg_left(es, ptr + size);
    *at = ptr;
    if (begin >= end) return 0;
    for (uint64_t i = begin; i < end; i++)
        es->mapped[i] = 0;
    t->m.driver_calls += 2 * (end - begin); /* cuMemUnmap + cuMemRelease */
    while (es->nhandles > 0 && !es->mapped[es->nhandles - 1])
        es->nhandles--;
    *at = es->base + begin * es->segment_size;
    return (end - begin) * es->segment_size;
}

static bool allocatable(const struct block *b)
{
    return b != NULL && !b->allocated;
}

static bool has_available_address_space(const struct block *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

static struct block *find_expandable_block(struct torch *t, uint64_t stream, struct pool *pool,
                                           uint64_t size)
{
    struct block key = {.stream = stream};
    for (struct block *it = (struct block *)cf_oset_lower_bound(&pool->unmapped, &key.node);
         it && it->stream == stream; it = next_in(it)) {
        struct block *c = it;
        /* A free block right below the unmapped range can be part of the fit. */
        if (allocatable(c->prev)) c = c->prev;
        if (has_available_address_space(c, size)) return c;
    }
    uint64_t segment_size = pool->is_small ? kSmallBuffer : kLargeBuffer;
    /* Address space for 1 1/8 of the device, as PyTorch reserves. */
    uint64_t device = t->capacity == CF_RP_UNLIMITED ? (uint64_t)256 << 30 : t->capacity;
    uint64_t max_handles = (device + device / 8 + segment_size - 1) / segment_size;
    struct segment *es = calloc(1, sizeof *es);
    uint8_t *mapped = calloc(max_handles ? max_handles : 1, 1);
    struct block *c =
        es && mapped ? new_block(t, stream, segment_size * max_handles, pool, 0) : NULL;
    if (c == NULL) {
        free(es);
        free(mapped);
        t->broken = true;
        return NULL;
    }
    *es = (struct segment){.base = va_take(t, segment_size * max_handles),
                           .segment_size = segment_size,
                           .max_handles = max_handles,
                           .mapped = mapped,
                           .next = t->expandable_segments};
    t->expandable_segments = es;
    t->m.driver_calls++; /* cuMemAddressReserve */
    c->addr = es->base;
    c->mapped = false;
    c->es = es;
    insert_unmapped(pool, c);
    return c;
}

static bool map_block(struct torch *t, struct block *to_map, uint64_t size)
{
    uint64_t mapped = es_map(t, to_map->es, to_map->addr, size);
    if (mapped == 0) return false;
    struct pool *pool = to_map->pool;
    erase(to_map);
    to_map->mapped = true;
    if (mapped < to_map->size) {
        struct block *remaining =
            new_block(t, to_map->stream, to_map->size - mapped, pool, to_map->addr + mapped);
        if (remaining == NULL) return false;
        remaining->mapped = false;
        remaining->es = to_map->es;
        remaining->prev = to_map;
        remaining->next = to_map->next;
        if (to_map->next) to_map->next->prev = remaining;
        to_map->next = remaining;
        insert_unmapped(pool, remaining);
        to_map->size = mapped;
    }
    try_merge_blocks(to_map, to_map->prev);
    try_merge_blocks(to_map, to_map->next);
    insert_into_blocks(pool, to_map);
    t->total_allocated_memory += mapped;
    return true;
}

static struct block *try_allocate_expandable_block(struct torch *t, uint64_t stream,
                                                   struct pool *pool, uint64_t size)
{
    struct block *candidate = find_expandable_block(t, stream, pool, size);
    if (candidate == NULL) return NULL;
    if (!candidate->mapped &&
        !map_block(t, candidate, candidate->size < size ? candidate->size : size))
        return NULL;
    while (candidate->size < size) {
        uint64_t remaining = size - candidate->size;
        struct block *next = candidate->next;
        if (next == NULL || next->mapped) { /* cannot happen after merging */
            t->broken = true;
            return NULL;
        }
        if (!map_block(t, next, remaining < next->size ? remaining : next->size)) return NULL;
        candidate = next;
    }
    erase(candidate);
    return candidate;
}

static void unmap_block(struct torch *t, struct block *b)
{
    uint64_t at, unmapped = es_unmap(t, b->es, b->addr, b->size, &at);
    if (unmapped == 0) return;
    struct pool *pool = b->pool;
    erase(b);
    uint64_t before_size = at - b->addr, after_size = b->size - (before_size + unmapped);
    if (before_size > 0) {
        struct block *before = new_block(t, b->stream, before_size, pool, b->addr);
        if (before == NULL) return;
        before->es = b->es;
        before->prev = b->prev;
        if (b->prev) b->prev->next = before;
        before->next = b;
        b->prev = before;
        insert_into_blocks(pool, before);
    }
    if (after_size > 0) {
        struct block *after = new_block(t, b->stream, after_size, pool, at + unmapped);
        if (after == NULL) return;
        after->es = b->es;
        after->prev = b;
        after->next = b->next;
        if (b->next) b->next->prev = after;
        b->next = after;
        insert_into_blocks(pool, after);
    }
    b->addr = at;
    b->size = unmapped;
    b->mapped = false;
    try_merge_blocks(b, b->prev);
    try_merge_blocks(b, b->next);
    insert_unmapped(pool, b);
    t->total_allocated_memory -= unmapped;
}

static void release_expandable_segment(struct torch *t, struct block *b)
{
    struct segment **link = &t->expandable_segments;
    while (*link && *link != b->es)
        link = &(*link)->next;
    if (*link) *link = b->es->next;
    erase(b);
    free(b->es->mapped);
    free(b->es);
    free(b);
    t->m.driver_calls++; /* cuMemAddressFree */
}

/* ---- giving memory back ---- */

static void release_block(struct torch *t, struct block *b)
{
    t->m.driver_calls++; /* cudaFree */
    t->total_allocated_memory -= b->size;
    cf_u64map_del(&t->segments, b->addr, NULL);
    erase(b);
    free(b);
}

static void release_blocks(struct torch *t, struct pool *pool)
{
    struct block **to_unmap = NULL;
    size_t n = 0;
    for (struct block *b = (struct block *)cf_oset_first(&pool->blocks), *next; b; b = next) {
        next = next_in(b);
        if (b->es) {
            /* Unmapping changes the set: gather first, as PyTorch does. */
            struct block **grown = realloc(to_unmap, (n + 1) * sizeof *grown);
            if (grown == NULL) {
                t->broken = true;
                break;
            }
            to_unmap = grown;
            to_unmap[n++] = b;
        } else if (!is_split(b)) {
            release_block(t, b);
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct block *b = to_unmap[i];
        unmap_block(t, b);
        if (!is_split(b) && !b->mapped) release_expandable_segment(t, b);
    }
    free(to_unmap);
}

static bool release_cached_blocks(struct torch *t)
{
    release_blocks(t, &t->large_blocks);
    release_blocks(t, &t->small_blocks);
    return true;
}

static bool release_available_cached_blocks(struct torch *t, const struct params *p)
{
    if (t->max_split_size == UINT64_MAX) return false;
    struct pool *pool = p->pool;
    struct block key = {.stream = p->stream};
    key.size = p->size < t->max_split_size ? t->max_split_size : p->size;
    struct block *it = (struct block *)cf_oset_lower_bound(&pool->blocks, &key.node);
    if (it == NULL || it->stream != p->stream) {
        /* No single block is large enough: free oversize blocks, the largest first. */
        struct block *last = it ? (struct block *)cf_oset_prev(&it->node) : NULL;
        if (it == NULL)
            for (struct block *x = (struct block *)cf_oset_first(&pool->blocks); x; x = next_in(x))
                last = x;
        if (last == NULL) return false;
        uint64_t released = 0;
        it = last;
        while (it && released < key.size && it->size >= t->max_split_size &&
               it->stream == p->stream && !it->es) {
            struct block *cur = it;
            released += cur->size;
            it = (struct block *)cf_oset_prev(&it->node);
            release_block(t, cur);
        }
        return released >= key.size;
    }
    if (it->es) return false; /* PyTorch asserts here; such blocks stay */
    release_block(t, it);
    return true;
}

static void garbage_collect_cached_blocks(struct torch *t)
{
    uint64_t gc_threshold = (uint64_t)(t->gc_threshold * (double)t->allowed_memory_maximum);
    if (t->total_allocated_memory <= gc_threshold) return;
    uint64_t target_size = t->total_allocated_memory - gc_threshold, gc_reclaimed = 0;
    struct pool *pool = &t->large_blocks;
    uint64_t total_age = 0;
    int freeable_block_count = 0;
    for (struct block *b = (struct block *)cf_oset_first(&pool->blocks); b; b = next_in(b)) {
        if (!is_split(b) && !b->es) {
            total_age += (uint64_t)(pool->get_free_blocks_call_count - b->gc_count_base);
            freeable_block_count++;
        }
    }
    if (freeable_block_count == 0) return;
    bool block_freed = true;
    while (gc_reclaimed < target_size && block_freed && freeable_block_count > 0) {
        double age_threshold = (double)total_age / freeable_block_count;
        block_freed = false;
        for (struct block *b = (struct block *)cf_oset_first(&pool->blocks), *next; b; b = next) {
            next = next_in(b);
            uint64_t age = (uint64_t)(pool->get_free_blocks_call_count - b->gc_count_base);
            if (!is_split(b) && !b->es && (double)age >= age_threshold) {
                block_freed = true;
                gc_reclaimed += b->size;
                total_age -= age;
                freeable_block_count--;
                release_block(t, b);
            }
        }
    }
}

/* ---- getting memory ---- */

static bool get_free_block(struct torch *t, struct params *p)
{
    struct pool *pool = p->pool;
    if (t->set_fraction && t->gc_threshold > 0) pool->get_free_blocks_call_count++;
    struct block key = {.stream = p->stream, .size = p->size};
    struct block *it = (struct block *)cf_oset_lower_bound(&pool->blocks, &key.node);
    if (it == NULL || it->stream != p->stream) return false;
    if (it->es) {
        /* Best fit counts what a block can grow into: the unmapped range after it. */
        struct block *next = next_in(it);
#define EXPANDABLE_SIZE(b) ((b)->size + ((b)->next && !(b)->next->mapped ? (b)->next->size : 0))
        while (it->es && next && next->stream == p->stream &&
               EXPANDABLE_SIZE(next) < EXPANDABLE_SIZE(it)) {
            it = next;
            next = next_in(next);
        }
#undef EXPANDABLE_SIZE
    }
    /* Do not return an oversized block for a large request. */
    if (p->size < t->max_split_size && it->size >= t->max_split_size) return false;
    /* Allow an oversized block to be rounded up, within a limit. */
    if (p->size >= t->max_split_size && it->size >= p->size + t->max_non_split_rounding)
        return false;
    p->block = it;
    erase(it);
    return true;
}

static bool alloc_block(struct torch *t, struct params *p)
{
    uint64_t size = p->alloc_size;
    if (!t->force && t->set_fraction &&
        t->total_allocated_memory + size > t->allowed_memory_maximum)
        return false;
    if (t->expandable) {
        p->block = try_allocate_expandable_block(t, p->stream, p->pool, p->size);
        return p->block != NULL;
    }
    t->m.driver_calls++; /* cudaMalloc, failed or not */
    if (!t->force && t->total_allocated_memory + size > t->capacity) return false;
    uint64_t addr = va_take(t, size);
    p->block = new_block(t, p->stream, size, p->pool, addr);
    if (p->block == NULL || cf_u64map_put(&t->segments, addr, size) != 0) {
        t->broken = true;
        free(p->block);
        p->block = NULL;
        return false;
    }
    t->total_allocated_memory += size;
    return true;
}

static bool torch_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct torch *t = (struct torch *)m;
    struct params p = {.stream = op->strm, .size = round_size(t, op->size)};
    p.pool = p.size <= kSmallSize ? &t->small_blocks : &t->large_blocks;
    p.alloc_size = get_allocation_size(p.size);
    bool found = get_free_block(t, &p);
    if (!found) {
        if (t->set_fraction && t->gc_threshold > 0) garbage_collect_cached_blocks(t);
        found = alloc_block(t, &p) ||
                (release_available_cached_blocks(t, &p) && alloc_block(t, &p)) ||
                (release_cached_blocks(t) && alloc_block(t, &p));
    }
    bool fits = found;
    if (!found) {
        t->force = true;
        found = alloc_block(t, &p);
        t->force = false;
    }
    if (!found) {
        t->broken = true;
        m->footprint = t->total_allocated_memory;
        return false;
    }
    struct block *b = alloc_found_block(t, &p, op->size, should_split(t, p.block, p.size));
    t->active[op->id] = b;
    m->granted += b->size;
    m->footprint = t->total_allocated_memory;
    return fits && !t->broken;
}

static void torch_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct torch *t = (struct torch *)m;
    struct block *b = t->active[op->id];
    if (b == NULL) return;
    t->active[op->id] = NULL;
    m->granted -= b->size;
    b->allocated = false;
    free_block(b);
    m->footprint = t->total_allocated_memory;
}

/* ---- fragmentation and checks ---- */

static void free_space(const struct pool *pool, uint64_t *largest, uint64_t *total)
{
    for (const struct cf_onode *x = cf_oset_first(&pool->blocks); x; x = cf_oset_next(x)) {
        const struct block *b = (const struct block *)x;
        *total += b->size;
        if (b->size > *largest) *largest = b->size;
    }
}

static double ext_frag(struct cf_rp_model *m)
{
    struct torch *t = (struct torch *)m;
    uint64_t largest = 0, total = 0;
    free_space(&t->large_blocks, &largest, &total);
    free_space(&t->small_blocks, &largest, &total);
    return total ? 1.0 - (double)largest / (double)total : 0;
}

struct census {
    uint64_t blocks, seen, free_mapped, granted, cuda_segments, es_mapped;
};

/* One segment from its first block: the blocks tile it, agree on stream, pool
 * and segment, and free neighbours of the same mapping are merged. */
static int check_segment(const struct torch *t, const struct block *head, struct census *c)
{
    int bad = 0;
    uint64_t at = head->addr, size = 0;
    for (const struct block *b = head; b; b = b->next) {
        c->seen++;
        size += b->size;
        bad += b->addr != at || b->size == 0 || b->stream != head->stream ||
               b->pool != head->pool || b->es != head->es;
        bad += b->next && b->next->prev != b;
        bad += b->next && !b->allocated && !b->next->allocated && b->mapped == b->next->mapped;
        bad +=
            b->allocated ? b->where != NOWHERE : b->where != (b->mapped ? IN_BLOCKS : IN_UNMAPPED);
        if (b->es) {
            for (uint64_t i = seg_left(b->es, b->addr); i < seg_right(b->es, b->addr + b->size);
                 i++)
                bad += i >= b->es->max_handles || b->es->mapped[i] != b->mapped;
            if (b->mapped) c->es_mapped += b->size;
        } else {
            bad += !b->mapped;
        }
        at += b->size;
    }
    if (head->es) {
        bad +=
            head->addr != head->es->base || size != head->es->segment_size * head->es->max_handles;
    } else {
        const uint64_t *want = cf_u64map_get(&t->segments, head->addr);
        bad += want == NULL || *want != size;
        c->cuda_segments += size;
    }
    return bad;
}

static int check_set(const struct torch *t, const struct cf_oset *s, struct census *c, bool blocks)
{
    int bad = cf_oset_check(s);
    for (const struct cf_onode *x = cf_oset_first(s); x; x = cf_oset_next(x)) {
        const struct block *b = (const struct block *)x;
        c->blocks++;
        bad += b->allocated || b->mapped != blocks;
        if (blocks) c->free_mapped += b->size;
        if (b->prev == NULL) bad += check_segment(t, b, c);
    }
    return bad;
}

static int check(struct cf_rp_model *m)
{
    struct torch *t = (struct torch *)m;
    struct census c = {0};
    int bad = 0;
    for (uint32_t i = 0; i < t->nallocs; i++) {
        const struct block *b = t->active[i];
        if (b == NULL) continue;
        c.blocks++;
        c.granted += b->size;
        bad += !b->allocated || b->size < b->requested || b->requested == 0;
        if (b->prev == NULL) bad += check_segment(t, b, &c);
    }
    bad += check_set(t, &t->large_blocks.blocks, &c, true);
    bad += check_set(t, &t->small_blocks.blocks, &c, true);
    bad += check_set(t, &t->large_blocks.unmapped, &c, false);
    bad += check_set(t, &t->small_blocks.unmapped, &c, false);
    /* Every block is reachable from a segment head, and no byte is counted twice. */
    bad += c.seen != c.blocks || c.granted != m->granted;
    bad += c.cuda_segments + c.es_mapped != t->total_allocated_memory;
    bad += m->footprint != t->total_allocated_memory || m->footprint != m->granted + c.free_mapped;
    return bad + t->broken;
}

static void free_set(struct cf_oset *s)
{
    /* Out of the tree before freeing: a walk climbs through freed parents. */
    for (struct cf_onode *x; (x = cf_oset_first(s)) != NULL;) {
        cf_oset_erase(s, x);
        free(x);
    }
}

static void destroy(struct cf_rp_model *m)
{
    struct torch *t = (struct torch *)m;
    for (uint32_t i = 0; i < t->nallocs; i++)
        free(t->active[i]);
    free_set(&t->large_blocks.blocks);
    free_set(&t->small_blocks.blocks);
    free_set(&t->large_blocks.unmapped);
    free_set(&t->small_blocks.unmapped);
    for (struct segment *es = t->expandable_segments, *next; es; es = next) {
        next = es->next;
        free(es->mapped);
        free(es);
    }
    cf_u64map_free(&t->segments);
    free(t->active);
    free(t);
}

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    double fraction = st->knob[FRACTION].d;
    if (fraction > 0 && st->device_memory == CF_RP_UNLIMITED) {
        *why = "memory_fraction needs the device's memory (--device-memory)";
        return NULL;
    }
    struct torch *t = calloc(1, sizeof *t);
    if (t) t->active = calloc(st->nallocs ? st->nallocs : 1, sizeof *t->active);
    if (t == NULL || t->active == NULL) {
        free(t);
        *why = "out of memory";
        return NULL;
    }
    t->m.def = &cf_rp_model_pytorch;
    t->capacity = st->device_memory;
    t->nallocs = st->nallocs;
    t->va = VA_BASE;
    uint64_t split_mb = st->knob[MAX_SPLIT].u, rounding_mb = st->knob[MAX_NON_SPLIT].u;
    t->max_split_size = split_mb == UINT64_MAX ? UINT64_MAX : split_mb * MiB;
    t->max_non_split_rounding = rounding_mb == UINT64_MAX ? UINT64_MAX / 2 : rounding_mb * MiB;
    t->divisions = st->knob[DIVISIONS].u;
    t->gc_threshold = st->knob[GC_THRESHOLD].d;
    t->set_fraction = fraction > 0;
    t->allowed_memory_maximum = (uint64_t)(fraction * (double)st->device_memory);
    t->expandable = st->knob[EXPANDABLE].u != 0;
    t->large_blocks.is_small = false;
    t->small_blocks.is_small = true;
    cf_oset_init(&t->large_blocks.blocks, by_size, 1);
    cf_oset_init(&t->small_blocks.blocks, by_size, 2);
    cf_oset_init(&t->large_blocks.unmapped, by_addr, 3);
    cf_oset_init(&t->small_blocks.unmapped, by_addr, 4);
    return &t->m;
}

static const struct cf_rp_knob_def knobs[] = {
    [MAX_SPLIT] = {"max_split_size_mb", CF_RP_KNOB_MIB, "max", 20, 1u << 30, NULL,
                   "blocks this large (MiB) are never split; cached ones serve requests "
                   "within max_non_split_rounding_mb of their size"},
    [MAX_NON_SPLIT] = {"max_non_split_rounding_mb", CF_RP_KNOB_MIB, "20", 20, 1u << 30, NULL,
                       "how much larger than the request an unsplit oversize block may be"},
    [DIVISIONS] = {"roundup_power2_divisions", CF_RP_KNOB_POW2, "0", 0, 1u << 20, NULL,
                   "round requests up to this many steps per power of two (0: 512 B rounding)"},
    [GC_THRESHOLD] = {"garbage_collection_threshold", CF_RP_KNOB_REAL, "0", 0, 0.999999, NULL,
                      "with memory_fraction: free the oldest unused cached segments once more "
                      "than this fraction of the allowed memory is reserved (0: off)"},
    [FRACTION] = {"memory_fraction", CF_RP_KNOB_REAL, "0", 0, 1, NULL,
                  "torch.cuda.set_per_process_memory_fraction (0: not set)"},
    [EXPANDABLE] = {"expandable_segments", CF_RP_KNOB_BOOL, "False", 0, 0, NULL,
                    "segments that grow by mapping 2 MiB / 20 MiB pages (VMM)"},
};

const struct cf_rp_model_def cf_rp_model_pytorch = {
    .name = "pytorch",
    .summary = "PyTorch's CUDA caching allocator (CUDACachingAllocator.cpp): 2 MiB small and "
               "20 MiB large segments, best fit per stream, splitting rules, free-and-retry",
    .knobs = knobs,
    .nknobs = sizeof knobs / sizeof knobs[0],
    .create = create,
    .alloc = torch_alloc,
    .free = torch_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
