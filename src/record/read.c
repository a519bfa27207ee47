/* The record's read API: a consistent copy of everything the record knows, taken
 * under every record lock in one go and owned by the caller afterwards. The report
 * (in the process and in `cudafrag report TRACE`) works on the copy, so its slow
 * parts (symbols, findings, formatting, files) never hold a record lock. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "record/internal.h"
#include "record/read.h"

static int desc(uint64_t x, uint64_t y)
{
    return (x < y) - (x > y);
}

static int by_hash(const void *a, const void *b)
{
    uint64_t x = ((const struct cf_site *)a)->hash, y = ((const struct cf_site *)b)->hash;
    return x < y ? -1 : x > y;
}

static int live_desc(const void *a, const void *b)
{
    const struct cf_live_group *x = a, *y = b;
    if (x->bytes != y->bytes) return desc(x->bytes, y->bytes);
    return desc(x->count, y->count);
}

/* Threads bump most counters of the record with atomics, outside the locks the
 * copy holds: those are read with atomic loads, never as a plain copy. */
static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void load_words(uint64_t *dst, const uint64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = load(&src[i]);
}

static void load_api(struct cf_api_stats *dst, const struct cf_api_stats *src)
{
    _Static_assert(sizeof *src == (5 + 2 * CF_API_ERRORS) * sizeof(uint64_t),
                   "copy every field of cf_api_stats");
    dst->calls = load(&src->calls);
    dst->bytes = load(&src->bytes);
    dst->failures = load(&src->failures);
    dst->ns_total = load(&src->ns_total);
    dst->timed = load(&src->timed);
    for (int i = 0; i < CF_API_ERRORS; i++) {
        dst->errors[i].code = load(&src->errors[i].code);
        dst->errors[i].count = load(&src->errors[i].count);
    }
}

/* Every device figure changes under its footprint lock, held here. */
static void load_device(struct cf_device_stats *dst, const struct cf_device_stats *src)
{
    *dst = *src;
}

static void load_hist(struct cf_hist *dst, const struct cf_hist *src)
{
    load_words(dst->count, src->count, CF_HIST_BINS);
    load_words(dst->bytes, src->bytes, CF_HIST_BINS);
}

/* Call with every record lock held. The hash heads stay NULL: the tables are
 * copied separately. */
static void copy_record(struct cf_record *dst, const struct cf_record *src)
{
    _Static_assert(sizeof *src ==
                       (offsetof(struct cf_record, allocs_without_stack) + 8 + 7) / 8 * 8,
                   "a field added to cf_record must be copied here");
    dst->start_ns = src->start_ns;
    for (int i = 0; i < CF_API_COUNT; i++)
        load_api(&dst->api[i], &src->api[i]);
    for (int d = 0; d < CF_MAX_DEVICES; d++)
        load_device(&dst->dev[d], &src->dev[d]);
    load_device(&dst->host, &src->host);
    load_device(&dst->managed, &src->managed);
    load_hist(&dst->sizes, &src->sizes);
    load_hist(&dst->lifetimes, &src->lifetimes);
    memcpy(dst->ooms, src->ooms, sizeof dst->ooms);
    dst->nooms = src->nooms;
    dst->ooms_dropped = src->ooms_dropped;
    memcpy(dst->marks, src->marks, sizeof dst->marks);
    dst->nmarks = src->nmarks;
    dst->marks_dropped = src->marks_dropped;
    memcpy(dst->regions, src->regions, sizeof dst->regions);
    dst->nregions = src->nregions;
    dst->regions_dropped = src->regions_dropped;
    dst->graph.alloc_nodes = load(&src->graph.alloc_nodes);
    dst->graph.free_nodes = load(&src->graph.free_nodes);
    dst->graph.node_bytes = load(&src->graph.node_bytes);
    memcpy(dst->graph.reserved_high, src->graph.reserved_high, sizeof dst->graph.reserved_high);
    memcpy(dst->graph.used_high, src->graph.used_high, sizeof dst->graph.used_high);
    dst->distinct_sizes = load(&src->distinct_sizes);
    dst->distinct_sizes_capped = __atomic_load_n(&src->distinct_sizes_capped, __ATOMIC_RELAXED);
    dst->total_allocs = load(&src->total_allocs);
    dst->total_frees = load(&src->total_frees);
    dst->unknown_frees = load(&src->unknown_frees);
    dst->capture_skips = load(&src->capture_skips);
    dst->allocs_without_stack = load(&src->allocs_without_stack);
    dst->replaced_live = load(&src->replaced_live);
    dst->stacks_unavailable = __atomic_load_n(&src->stacks_unavailable, __ATOMIC_RELAXED);
}

static bool held(const struct cf_rec_read *r, unsigned locks)
{
    return (r->held & locks) == locks;
}

/* With the locks in r->held held: only copies, and only what they guard (a
 * site's or pool's figures change under its home slot's lock). */
static int copy_tables(struct cf_rec_read *r)
{
    struct cf_site *sites = held(r, CF_REC_HELD_SITES | CF_REC_HELD_SLOTS) ? cf_rec.sites : NULL;
    unsigned n = HASH_COUNT(sites), k = 0;
    r->sites = calloc(n ? n : 1, sizeof *r->sites);
    if (r->sites == NULL) return -1;
    for (struct cf_site *it = sites; it; it = it->hh.next)
        r->sites[k++] = *it;
    r->nsites = k;

    struct cf_pool *pools = held(r, CF_REC_HELD_POOLS | CF_REC_HELD_SLOTS) ? cf_rec.pools : NULL;
    n = HASH_COUNT(pools), k = 0;
    r->pools = calloc(n ? n : 1, sizeof *r->pools);
    if (r->pools == NULL) return -1;
    for (struct cf_pool *p = pools; p; p = p->hh.next)
        r->pools[k++] = *p;
    r->npools = k;
    return 0;
}

static int site_index(const struct cf_rec_read *r, uint64_t hash)
{
    struct cf_site key;
    key.hash = hash;
    if (r->nsites == 0) return -1;
    const struct cf_site *hit = bsearch(&key, r->sites, r->nsites, sizeof key, by_hash);
    return hit ? (int)(hit - r->sites) : -1;
}

static void add_live(struct cf_rec_read *r, const struct cf_alloc *a)
{
    int idx = a->site ? site_index(r, a->site->hash) : -1;
    struct cf_live_group *l = &r->live[idx >= 0 ? (unsigned)idx : r->nsites];
    l->kind = (enum cf_kind)a->kind;
    l->bytes += a->requested;
    l->count++;
    if (a->granted) {
        l->requested += a->requested;
        l->granted += a->granted;
    }
    r->live_bytes += a->requested;
    r->live_count++;
}

/* Live allocations grouped by site (sites sorted by hash first), largest first,
 * read from every slot's table (live.c) under the slot locks held. Without the
 * sites every group would read "no call site": then none is made. */
static int group_live(struct cf_rec_read *r)
{
    r->live = calloc(r->nsites + 1, sizeof *r->live);
    if (r->live == NULL) return -1;
    for (unsigned i = 0; i <= r->nsites; i++)
        r->live[i].site = i < r->nsites ? (int)i : -1;
    bool all = held(r, CF_REC_HELD_SITES | CF_REC_HELD_SLOTS);
    for (int slot = 0; all && slot < CF_SLOTS; slot++) {
        const struct cf_live_table *tb = &cf_slots[slot].live;
        for (uint64_t k = 0; tb->pairs && k <= tb->mask; k++)
            if (tb->pairs[k].a) add_live(r, tb->pairs[k].a);
    }
    unsigned k = 0;
    for (unsigned i = 0; i <= r->nsites; i++)
        if (r->live[i].count) r->live[k++] = r->live[i];
    r->nlive = k;
    qsort(r->live, k, sizeof *r->live, live_desc);
    return 0;
}

static int copy_held(struct cf_rec_read *r)
{
    r->now_ns = cf_now_ns();
    copy_record(&r->rec, &cf_rec);
    int rc = copy_tables(r);
    if (rc == 0) {
        qsort(r->sites, r->nsites, sizeof *r->sites, by_hash);
        rc = group_live(r);
    }
    return rc;
}

int cf_read_copy(struct cf_rec_read *r, unsigned locks)
{
    memset(r, 0, sizeof *r);
    r->held = locks;
    int rc = copy_held(r);
    if (rc != 0) cf_read_free(r);
    return rc;
}

static int by_id(const void *a, const void *b)
{
    uint32_t x = ((const struct cf_rec_pyname *)a)->id, y = ((const struct cf_rec_pyname *)b)->id;
    return x < y ? -1 : x > y;
}

/* Every distinct Python frame of the copied sites, named; those the record does
 * not know (markers, a damaged trace) left out. */
int cf_read_pynames(struct cf_rec_read *r)
{
    unsigned n = 0;
    for (unsigned i = 0; i < r->nsites; i++)
        for (uint32_t f = 0; f < r->sites[i].nframes; f++)
            n += CF_FRAME_MODULE(r->sites[i].frames[f]) == CF_PY_MODULE;
    r->pynames = calloc(n ? n : 1, sizeof *r->pynames);
    if (r->pynames == NULL) return -1;
    unsigned k = 0;
    for (unsigned i = 0; i < r->nsites; i++)
        for (uint32_t f = 0; f < r->sites[i].nframes; f++) {
            uint64_t frame = r->sites[i].frames[f];
            if (CF_FRAME_MODULE(frame) != CF_PY_MODULE) continue;
            r->pynames[k].id = (uint32_t)CF_FRAME_OFFSET(frame);
            k += cf_pyframe_get(r->pynames[k].id, &r->pynames[k].frame);
        }
    qsort(r->pynames, k, sizeof *r->pynames, by_id);
    unsigned u = 0;
    for (unsigned i = 0; i < k; i++)
        if (u == 0 || r->pynames[u - 1].id != r->pynames[i].id) r->pynames[u++] = r->pynames[i];
    r->npynames = u;
    return 0;
}

void cf_read_free(struct cf_rec_read *r)
{
    free(r->sites);
    free(r->pools);
    free(r->live);
    free(r->pynames);
    r->sites = NULL;
    r->pools = NULL;
    r->live = NULL;
    r->pynames = NULL;
}
