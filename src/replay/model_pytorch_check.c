/* The PyTorch model's external fragmentation, and the check that its blocks,
 * segments and counts agree. */
#include "replay/model_pytorch.h"

static void free_space(const struct pt_pool *pool, uint64_t *largest, uint64_t *total)
{
    for (const struct cf_onode *x = cf_oset_first(&pool->blocks); x; x = cf_oset_next(x)) {
        const struct pt_block *b = (const struct pt_block *)x;
        *total += b->size;
        if (b->size > *largest) *largest = b->size;
    }
}

double pt_ext_frag(struct cf_rp_model *m)
{
    struct pt_torch *t = (struct pt_torch *)m;
    uint64_t largest = 0, total = 0;
    free_space(&t->large_blocks, &largest, &total);
    free_space(&t->small_blocks, &largest, &total);
    return total ? 1.0 - (double)largest / (double)total : 0;
}

struct pt_census {
    uint64_t blocks, seen, free_mapped, granted, cuda_segments, es_mapped;
};

/* One segment from its first block: the blocks tile it, agree on stream, pool
 * and segment, and free neighbours of the same mapping are merged. */
static int check_segment(const struct pt_torch *t, const struct pt_block *head, struct pt_census *c)
{
    int bad = 0;
    uint64_t at = head->addr, size = 0;
    for (const struct pt_block *b = head; b; b = b->next) {
        c->seen++;
        size += b->size;
        bad += b->addr != at || b->size == 0 || b->stream != head->stream ||
               b->pool != head->pool || b->es != head->es;
        bad += b->next && b->next->prev != b;
        bad += b->next && !b->allocated && !b->next->allocated && b->mapped == b->next->mapped;
        bad += b->allocated ? b->where != PT_NOWHERE
                            : b->where != (b->mapped ? PT_IN_BLOCKS : PT_IN_UNMAPPED);
        if (b->es) {
            for (uint64_t i = pt_seg_left(b->es, b->addr);
                 i < pt_seg_right(b->es, b->addr + b->size); i++)
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

static int check_set(const struct pt_torch *t, const struct cf_oset *s, struct pt_census *c,
                     bool blocks)
{
    int bad = cf_oset_check(s);
    for (const struct cf_onode *x = cf_oset_first(s); x; x = cf_oset_next(x)) {
        const struct pt_block *b = (const struct pt_block *)x;
        c->blocks++;
        bad += b->allocated || b->mapped != blocks;
        if (blocks) c->free_mapped += b->size;
        if (b->prev == NULL) bad += check_segment(t, b, c);
    }
    return bad;
}

int pt_check(struct cf_rp_model *m)
{
    struct pt_torch *t = (struct pt_torch *)m;
    struct pt_census c = {0};
    int bad = 0;
    for (uint32_t i = 0; i < t->nallocs; i++) {
        const struct pt_block *b = t->active[i];
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
