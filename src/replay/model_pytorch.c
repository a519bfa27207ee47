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
 *   (unmap_block), in model_pytorch_expandable.c.
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

#include "replay/model_pytorch.h"

#define VA_BASE  ((uint64_t)1 << 40)
#define VA_ALIGN (2 * MiB)

enum knob { MAX_SPLIT, MAX_NON_SPLIT, DIVISIONS, GC_THRESHOLD, FRACTION, EXPANDABLE };

static int by_size(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct pt_block *x = (const struct pt_block *)a, *y = (const struct pt_block *)b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_addr(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct pt_block *x = (const struct pt_block *)a, *y = (const struct pt_block *)b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct pt_block *pt_next_in(const struct pt_block *b)
{
    return (struct pt_block *)cf_oset_next(&b->node);
}

struct pt_block *pt_new_block(struct pt_torch *t, uint64_t stream, uint64_t size,
                              struct pt_pool *pool, uint64_t addr)
{
    struct pt_block *b = calloc(1, sizeof *b);
    if (b == NULL) {
        t->broken = true;
        return NULL;
    }
    *b = (struct pt_block){
        .stream = stream, .size = size, .pool = pool, .addr = addr, .mapped = true};
    return b;
}

void pt_insert_into_blocks(struct pt_pool *pool, struct pt_block *b)
{
    b->gc_count_base = pool->get_free_blocks_call_count;
    b->where = PT_IN_BLOCKS;
    cf_oset_insert(&pool->blocks, &b->node);
}

void pt_insert_unmapped(struct pt_pool *pool, struct pt_block *b)
{
    b->where = PT_IN_UNMAPPED;
    cf_oset_insert(&pool->unmapped, &b->node);
}

void pt_erase(struct pt_block *b)
{
    if (b->where == PT_IN_BLOCKS) cf_oset_erase(&b->pool->blocks, &b->node);
    if (b->where == PT_IN_UNMAPPED) cf_oset_erase(&b->pool->unmapped, &b->node);
    b->where = PT_NOWHERE;
}

static bool is_split(const struct pt_block *b)
{
    return b->prev != NULL || b->next != NULL;
}

uint64_t pt_va_take(struct pt_torch *t, uint64_t bytes)
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

static uint64_t round_size(const struct pt_torch *t, uint64_t size)
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

uint64_t pt_try_merge_blocks(struct pt_block *dst, struct pt_block *src)
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
    pt_erase(src);
    free(src);
    return subsumed;
}

static void free_block(struct pt_block *b)
{
    pt_try_merge_blocks(b, b->prev);
    pt_try_merge_blocks(b, b->next);
    pt_insert_into_blocks(b->pool, b);
}

static bool should_split(const struct pt_torch *t, const struct pt_block *b, uint64_t size)
{
    uint64_t remaining = b->size - size;
    if (b->pool->is_small || t->expandable) return remaining >= kMinBlockSize;
    return size < t->max_split_size && remaining > kSmallSize;
}

static struct pt_block *alloc_found_block(struct pt_torch *t, struct pt_params *p,
                                          uint64_t orig_size, bool split_remainder)
{
    struct pt_block *b = p->block;
    if (split_remainder) {
        struct pt_block *remaining = b;
        b = pt_new_block(t, p->stream, p->size, p->pool, remaining->addr);
        if (b == NULL) return remaining;
        b->es = remaining->es;
        pt_link_before(remaining, b);
        remaining->addr += p->size;
        remaining->size -= p->size;
        pt_insert_into_blocks(p->pool, remaining);
    }
    b->allocated = true;
    b->requested = orig_size;
    return b;
}

/* ---- giving memory back ---- */

static void release_block(struct pt_torch *t, struct pt_block *b)
{
    t->m.driver_calls++; /* cudaFree */
    t->total_allocated_memory -= b->size;
    cf_u64map_del(&t->segments, b->addr, NULL);
    pt_erase(b);
    free(b);
}

static void release_blocks(struct pt_torch *t, struct pt_pool *pool)
{
    struct pt_block **to_unmap = NULL;
    size_t n = 0;
    for (struct pt_block *b = (struct pt_block *)cf_oset_first(&pool->blocks), *next; b; b = next) {
        next = pt_next_in(b);
        if (b->es) {
            /* Unmapping changes the set: gather first, as PyTorch does. */
            struct pt_block **grown = realloc(to_unmap, (n + 1) * sizeof *grown);
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
        struct pt_block *b = to_unmap[i];
        pt_unmap_block(t, b);
        if (!is_split(b) && !b->mapped) pt_release_expandable_segment(t, b);
    }
    free(to_unmap);
}

static bool release_cached_blocks(struct pt_torch *t)
{
    release_blocks(t, &t->large_blocks);
    release_blocks(t, &t->small_blocks);
    return true;
}

static bool release_available_cached_blocks(struct pt_torch *t, const struct pt_params *p)
{
    if (t->max_split_size == UINT64_MAX) return false;
    struct pt_pool *pool = p->pool;
    struct pt_block key = {.stream = p->stream};
    key.size = p->size < t->max_split_size ? t->max_split_size : p->size;
    struct pt_block *it = (struct pt_block *)cf_oset_lower_bound(&pool->blocks, &key.node);
    if (it == NULL || it->stream != p->stream) {
        /* No single block is large enough: free oversize blocks, the largest first. */
        struct pt_block *last = it ? (struct pt_block *)cf_oset_prev(&it->node) : NULL;
        if (it == NULL)
            for (struct pt_block *x = (struct pt_block *)cf_oset_first(&pool->blocks); x;
                 x = pt_next_in(x))
                last = x;
        if (last == NULL) return false;
        uint64_t released = 0;
        it = last;
        while (it && released < key.size && it->size >= t->max_split_size &&
               it->stream == p->stream && !it->es) {
            struct pt_block *cur = it;
            released += cur->size;
            it = (struct pt_block *)cf_oset_prev(&it->node);
            release_block(t, cur);
        }
        return released >= key.size;
    }
    if (it->es) return false; /* PyTorch asserts here; such blocks stay */
    release_block(t, it);
    return true;
}

static void garbage_collect_cached_blocks(struct pt_torch *t)
{
    uint64_t gc_threshold = (uint64_t)(t->gc_threshold * (double)t->allowed_memory_maximum);
    if (t->total_allocated_memory <= gc_threshold) return;
    uint64_t target_size = t->total_allocated_memory - gc_threshold, gc_reclaimed = 0;
    struct pt_pool *pool = &t->large_blocks;
    uint64_t total_age = 0;
    int freeable_block_count = 0;
    for (struct pt_block *b = (struct pt_block *)cf_oset_first(&pool->blocks); b;
         b = pt_next_in(b)) {
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
        for (struct pt_block *b = (struct pt_block *)cf_oset_first(&pool->blocks), *next; b;
             b = next) {
            next = pt_next_in(b);
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

static bool get_free_block(struct pt_torch *t, struct pt_params *p)
{
    struct pt_pool *pool = p->pool;
    if (t->set_fraction && t->gc_threshold > 0) pool->get_free_blocks_call_count++;
    struct pt_block key = {.stream = p->stream, .size = p->size};
    struct pt_block *it = (struct pt_block *)cf_oset_lower_bound(&pool->blocks, &key.node);
    if (it == NULL || it->stream != p->stream) return false;
    if (it->es) {
        /* Best fit counts what a block can grow into: the unmapped range after it. */
        struct pt_block *next = pt_next_in(it);
#define EXPANDABLE_SIZE(b) ((b)->size + ((b)->next && !(b)->next->mapped ? (b)->next->size : 0))
        while (it->es && next && next->stream == p->stream &&
               EXPANDABLE_SIZE(next) < EXPANDABLE_SIZE(it)) {
            it = next;
            next = pt_next_in(next);
        }
#undef EXPANDABLE_SIZE
    }
    /* Do not return an oversized block for a large request. */
    if (p->size < t->max_split_size && it->size >= t->max_split_size) return false;
    /* Allow an oversized block to be rounded up, within a limit. */
    if (p->size >= t->max_split_size && it->size >= p->size + t->max_non_split_rounding)
        return false;
    p->block = it;
    pt_erase(it);
    return true;
}

static bool alloc_block(struct pt_torch *t, struct pt_params *p)
{
    uint64_t size = p->alloc_size;
    if (!t->force && t->set_fraction &&
        t->total_allocated_memory + size > t->allowed_memory_maximum)
        return false;
    if (t->expandable) {
        p->block = pt_try_allocate_expandable_block(t, p->stream, p->pool, p->size);
        return p->block != NULL;
    }
    t->m.driver_calls++; /* cudaMalloc, failed or not */
    if (!t->force && t->total_allocated_memory + size > t->capacity) return false;
    uint64_t addr = pt_va_take(t, size);
    p->block = pt_new_block(t, p->stream, size, p->pool, addr);
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
    struct pt_torch *t = (struct pt_torch *)m;
    struct pt_params p = {.stream = op->strm, .size = round_size(t, op->size)};
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
    struct pt_block *b = alloc_found_block(t, &p, op->size, should_split(t, p.block, p.size));
    t->active[op->id] = b;
    m->granted += b->size;
    m->footprint = t->total_allocated_memory;
    return fits && !t->broken;
}

static void torch_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct pt_torch *t = (struct pt_torch *)m;
    struct pt_block *b = t->active[op->id];
    if (b == NULL) return;
    t->active[op->id] = NULL;
    m->granted -= b->size;
    b->allocated = false;
    free_block(b);
    m->footprint = t->total_allocated_memory;
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
    struct pt_torch *t = (struct pt_torch *)m;
    for (uint32_t i = 0; i < t->nallocs; i++)
        free(t->active[i]);
    free_set(&t->large_blocks.blocks);
    free_set(&t->small_blocks.blocks);
    free_set(&t->large_blocks.unmapped);
    free_set(&t->small_blocks.unmapped);
    for (struct pt_segment *es = t->expandable_segments, *next; es; es = next) {
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
    struct pt_torch *t = calloc(1, sizeof *t);
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
    .ext_frag = pt_ext_frag,
    .check = pt_check,
    .destroy = destroy,
};
