/* PyTorch's expandable segments (ExpandableSegment): one address range per
 * stream and pool, mapped and unmapped page by page as blocks need it. */
#include "replay/model_pytorch.h"

#include <stdlib.h>

/* ExpandableSegment::map: the handles [begin, end) covering the range, or an
 * empty range when the device runs out (the handles made are given back). */
static uint64_t es_map(struct pt_torch *t, struct pt_segment *es, uint64_t ptr, uint64_t size)
{
    uint64_t begin = pt_seg_left(es, ptr), end = pt_seg_right(es, ptr + size);
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
static uint64_t es_unmap(struct pt_torch *t, struct pt_segment *es, uint64_t ptr, uint64_t size,
                         uint64_t *at)
{
    uint64_t begin = pt_seg_right(es, ptr), end = pt_seg_left(es, ptr + size);
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

static bool allocatable(const struct pt_block *b)
{
    return b != NULL && !b->allocated;
}

static bool has_available_address_space(const struct pt_block *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

static struct pt_block *find_expandable_block(struct pt_torch *t, uint64_t stream,
                                              struct pt_pool *pool, uint64_t size)
{
    struct pt_block key = {.stream = stream};
    for (struct pt_block *it = (struct pt_block *)cf_oset_lower_bound(&pool->unmapped, &key.node);
         it && it->stream == stream; it = pt_next_in(it)) {
        struct pt_block *c = it;
        /* A free block right below the unmapped range can be part of the fit. */
        if (allocatable(c->prev)) c = c->prev;
        if (has_available_address_space(c, size)) return c;
    }
    uint64_t segment_size = pool->is_small ? kSmallBuffer : kLargeBuffer;
    /* Address space for 1 1/8 of the device, as PyTorch reserves. */
    uint64_t device = t->capacity == CF_RP_UNLIMITED ? (uint64_t)256 << 30 : t->capacity;
    uint64_t max_handles = (device + device / 8 + segment_size - 1) / segment_size;
    struct pt_segment *es = calloc(1, sizeof *es);
    uint8_t *mapped = calloc(max_handles ? max_handles : 1, 1);
    struct pt_block *c =
        es && mapped ? pt_new_block(t, stream, segment_size * max_handles, pool, 0) : NULL;
    if (c == NULL) {
        free(es);
        free(mapped);
        t->broken = true;
        return NULL;
    }
    *es = (struct pt_segment){.base = pt_va_take(t, segment_size * max_handles),
                              .segment_size = segment_size,
                              .max_handles = max_handles,
                              .mapped = mapped,
                              .next = t->expandable_segments};
    t->expandable_segments = es;
    t->m.driver_calls++; /* cuMemAddressReserve */
    c->addr = es->base;
    c->mapped = false;
    c->es = es;
    pt_insert_unmapped(pool, c);
    return c;
}

static bool map_block(struct pt_torch *t, struct pt_block *to_map, uint64_t size)
{
    uint64_t mapped = es_map(t, to_map->es, to_map->addr, size);
    if (mapped == 0) return false;
    struct pt_pool *pool = to_map->pool;
    pt_erase(to_map);
    to_map->mapped = true;
    if (mapped < to_map->size) {
        struct pt_block *remaining =
            pt_new_block(t, to_map->stream, to_map->size - mapped, pool, to_map->addr + mapped);
        if (remaining == NULL) return false;
        remaining->mapped = false;
        remaining->es = to_map->es;
        pt_link_after(to_map, remaining);
        pt_insert_unmapped(pool, remaining);
        to_map->size = mapped;
    }
    pt_try_merge_blocks(to_map, to_map->prev);
    pt_try_merge_blocks(to_map, to_map->next);
    pt_insert_into_blocks(pool, to_map);
    t->total_allocated_memory += mapped;
    return true;
}

struct pt_block *pt_try_allocate_expandable_block(struct pt_torch *t, uint64_t stream,
                                                  struct pt_pool *pool, uint64_t size)
{
    struct pt_block *candidate = find_expandable_block(t, stream, pool, size);
    if (candidate == NULL) return NULL;
    if (!candidate->mapped &&
        !map_block(t, candidate, candidate->size < size ? candidate->size : size))
        return NULL;
    while (candidate->size < size) {
        uint64_t remaining = size - candidate->size;
        struct pt_block *next = candidate->next;
        if (next == NULL || next->mapped) { /* cannot happen after merging */
            t->broken = true;
            return NULL;
        }
        if (!map_block(t, next, remaining < next->size ? remaining : next->size)) return NULL;
        candidate = next;
    }
    pt_erase(candidate);
    return candidate;
}

void pt_unmap_block(struct pt_torch *t, struct pt_block *b)
{
    uint64_t at, unmapped = es_unmap(t, b->es, b->addr, b->size, &at);
    if (unmapped == 0) return;
    struct pt_pool *pool = b->pool;
    pt_erase(b);
    uint64_t before_size = at - b->addr, after_size = b->size - (before_size + unmapped);
    if (before_size > 0) {
        struct pt_block *before = pt_new_block(t, b->stream, before_size, pool, b->addr);
        if (before == NULL) return;
        before->es = b->es;
        pt_link_before(b, before);
        pt_insert_into_blocks(pool, before);
    }
    if (after_size > 0) {
        struct pt_block *after = pt_new_block(t, b->stream, after_size, pool, at + unmapped);
        if (after == NULL) return;
        after->es = b->es;
        pt_link_after(b, after);
        pt_insert_into_blocks(pool, after);
    }
    b->addr = at;
    b->size = unmapped;
    b->mapped = false;
    pt_try_merge_blocks(b, b->prev);
    pt_try_merge_blocks(b, b->next);
    pt_insert_unmapped(pool, b);
    t->total_allocated_memory -= unmapped;
}

void pt_release_expandable_segment(struct pt_torch *t, struct pt_block *b)
{
    struct pt_segment **link = &t->expandable_segments;
    while (*link && *link != b->es)
        link = &(*link)->next;
    if (*link) *link = b->es->next;
    pt_erase(b);
    free(b->es->mapped);
    free(b->es);
    free(b);
    t->m.driver_calls++; /* cuMemAddressFree */
}
