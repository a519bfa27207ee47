#include "arena/shadow.h"
#include "arena/hostmem.h"

#include "arena/backing.h"
#include "arena/gmap.h"
#include "arena/tlsf.h"
#include "config/config.h"
#include "base/export.h"
#include "base/lockwait.h"

#include <pthread.h>
#include <string.h>

#define SHADOW_MAX_DEVICES 16
#define SHADOW_BASE        ((uint64_t)1 << 44) /* any granule-aligned address will do */

struct shadow_dev {
    bool used, broken; /* broken: the model's tables could not be allocated */
    struct tlsf tlsf;
    struct cf_gmap gmap;
    uint64_t reserve, live, peak_live, peak_mapped, frag_sampled_at, trim_floor;
    double frag_at_peak;
    uint64_t granules_mapped, granules_unmapped, chunks_mapped, chunks_unmapped;
    uint64_t allocs, frees, ooms;
};

/* Native address -> the model's block. Entries are recycled, not freed. */
struct shadow_entry {
    uint64_t addr;
    struct tlsf_block *block;
    int device;
    UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shadow_dev devs[SHADOW_MAX_DEVICES];
static struct shadow_entry *by_addr, *spare_entries;

/* Beyond CF_SHADOW_MAX_RESERVE the model does not even try: its tables grow with
 * the range, and failing to map them would read as cudafrag running out of memory. */
static struct shadow_dev *device(int device)
{
    if (device < 0 || device >= SHADOW_MAX_DEVICES) return NULL;
    struct shadow_dev *s = &devs[device];
    if (s->broken) return NULL;
    if (s->used) return s;
    uint64_t reserve = cf_opt_size(CF_OPT_ARENA_RESERVE);
    if (reserve == 0) reserve = CF_SHADOW_DEFAULT_RESERVE;
    s->reserve = reserve;
    if (reserve > CF_SHADOW_MAX_RESERVE) {
        s->broken = true;
        return NULL;
    }
    reserve = (reserve + CF_BACKING_GRANULE - 1) & ~(CF_BACKING_GRANULE - 1);
    if (tlsf_init(&s->tlsf) != 0 || tlsf_add_region(&s->tlsf, SHADOW_BASE, reserve) != 0 ||
        cf_gmap_init(&s->gmap, SHADOW_BASE, reserve, CF_BACKING_GRANULE) != 0) {
        tlsf_destroy(&s->tlsf);
        s->broken = true;
        return NULL;
    }
    s->reserve = reserve;
    s->used = true;
    return s;
}

/* An allocation the model could not replay makes every figure it gives wrong. */
static void note_failure(int device)
{
    if (device >= 0 && device < SHADOW_MAX_DEVICES) devs[device].ooms++;
}

static void note_mapped(struct shadow_dev *s)
{
    if (s->gmap.mapped_bytes <= s->peak_mapped) return;
    s->peak_mapped = s->gmap.mapped_bytes;
    if (s->peak_mapped < s->frag_sampled_at + s->frag_sampled_at / 64) return;
    s->frag_sampled_at = s->peak_mapped;
    s->frag_at_peak = cf_gmap_ext_frag(&s->gmap, s->tlsf.regions[0].first);
}

static void unmap_chunk(struct shadow_dev *s, uint64_t addr, uint64_t bytes)
{
    cf_gmap_set_unmapped(&s->gmap, addr);
    s->granules_unmapped += bytes / CF_BACKING_GRANULE;
    s->chunks_unmapped++;
}

/* The arena's policy before growing: the mapped peak does not rise while idle
 * chunks could make room (b itself is already held, so it stays). */
static void trim_for_peak(struct shadow_dev *s, const struct tlsf_block *b)
{
    uint64_t need = cf_gmap_unmapped_bytes(&s->gmap, b->addr, b->size);
    uint64_t cursor = UINT64_MAX, addr, bytes;
    while (s->gmap.mapped_bytes + need > s->peak_mapped &&
           cf_gmap_next_idle_chunk(&s->gmap, &cursor, &addr, &bytes))
        unmap_chunk(s, addr, bytes);
}

static void map_block(struct shadow_dev *s, const struct tlsf_block *b)
{
    uint64_t run, bytes, at = b->addr, end = b->addr + b->size;
    trim_for_peak(s, b);
    /* From where the last run ended: a block of many chunks is scanned once. */
    while (at < end && cf_gmap_next_unmapped(&s->gmap, at, end - at, &run, &bytes)) {
        cf_gmap_set_mapped(&s->gmap, run, bytes);
        s->granules_mapped += bytes / CF_BACKING_GRANULE;
        s->chunks_mapped++;
        at = run + bytes;
    }
    note_mapped(s);
}

static uint64_t excess(const struct shadow_dev *s)
{
    return s->gmap.mapped_bytes - s->tlsf.used_bytes;
}

/* The arena's policy: past the slack, unmap idle chunks from the top down to
 * 7/8 of the slack; what stays pinned raises the next trigger. */
static void maybe_trim(struct shadow_dev *s)
{
    uint64_t slack = cf_opt_size(CF_OPT_ARENA_SLACK);
    if (slack != 0 && s->peak_live > slack) slack = s->peak_live; /* as the arena */
    if (s->gmap.mapped_bytes < s->tlsf.used_bytes || excess(s) <= slack + s->trim_floor) return;
    uint64_t cursor = UINT64_MAX, addr, bytes;
    while (excess(s) > slack / 8 * 7 && cf_gmap_next_idle_chunk(&s->gmap, &cursor, &addr, &bytes))
        unmap_chunk(s, addr, bytes);
    s->trim_floor = excess(s) > slack ? excess(s) : 0;
}

CF_HOT static void drop(struct shadow_entry *e)
{
    struct shadow_dev *s = &devs[e->device];
    s->live -= e->block->size;
    s->frees++;
    cf_gmap_hold(&s->gmap, e->block->addr, e->block->size, -1);
    tlsf_free(&s->tlsf, e->block);
    HASH_DEL(by_addr, e);
    e->hh.next = spare_entries;
    spare_entries = e;
    maybe_trim(s);
}

static struct shadow_entry *new_entry(void)
{
    struct shadow_entry *e = spare_entries;
    if (e)
        spare_entries = e->hh.next;
    else
        e = cf_host_zalloc(sizeof *e);
    if (e) memset(e, 0, sizeof *e);
    return e;
}

bool cf_shadow_enabled(void)
{
    return cf_opt_bool(CF_OPT_SHADOW) && !cf_arena_enabled();
}

CF_HOT void cf_shadow_alloc(uint64_t addr, uint64_t size, int dev)
{
    if (!cf_opt_bool(CF_OPT_SHADOW) || size == 0) return;
    pthread_mutex_lock(&lock);
    struct shadow_entry *e = NULL;
    HASH_FIND(hh, by_addr, &addr, sizeof addr, e);
    if (e) drop(e); /* freed behind our back: the address is live again */
    struct shadow_dev *s = device(dev);
    struct tlsf_block *b = s ? tlsf_alloc(&s->tlsf, size) : NULL;
    if (b == NULL || (e = new_entry()) == NULL) {
        if (b) tlsf_free(&s->tlsf, b);
        note_failure(dev);
        pthread_mutex_unlock(&lock);
        return;
    }
    cf_gmap_hold(&s->gmap, b->addr, b->size, +1);
    map_block(s, b);
    s->live += b->size;
    if (s->live > s->peak_live) s->peak_live = s->live;
    s->allocs++;
    e->addr = addr;
    e->block = b;
    e->device = dev;
    HASH_ADD(hh, by_addr, addr, sizeof e->addr, e);
    pthread_mutex_unlock(&lock);
}

CF_HOT void cf_shadow_free(uint64_t addr)
{
    pthread_mutex_lock(&lock);
    struct shadow_entry *e = NULL;
    HASH_FIND(hh, by_addr, &addr, sizeof addr, e);
    if (e) drop(e);
    pthread_mutex_unlock(&lock);
}

/* A device where the model could not start: only why, and what it missed. */
static void add_broken(struct cf_arena_stats *out, const struct shadow_dev *s)
{
    out->active = true;
    out->broken = true;
    out->ooms += s->ooms;
    if (s->reserve > out->peak_reserved) out->peak_reserved = s->reserve;
}

void cf_shadow_stats(struct cf_arena_stats *out)
{
    cf_shadow_stats_until(out, NULL);
}

void cf_shadow_stats_until(struct cf_arena_stats *out, const struct timespec *deadline)
{
    memset(out, 0, sizeof *out);
    out->shadow = true;
    out->vmm = true;
    double frag_peak = -1;
    if (!cf_mutex_lock_until(&lock, deadline)) {
        out->locked_out = true;
        return;
    }
    for (int i = 0; i < SHADOW_MAX_DEVICES; i++) {
        const struct shadow_dev *s = &devs[i];
        if (s->broken) add_broken(out, s);
        if (!s->used) continue;
        out->active = true;
        out->peak_live += s->peak_live;
        out->peak_mapped += s->peak_mapped;
        out->peak_reserved += s->reserve;
        out->reserved_now += s->reserve;
        out->mapped_now += s->gmap.mapped_bytes;
        out->live_now += s->live;
        out->granules_mapped += s->granules_mapped;
        out->granules_unmapped += s->granules_unmapped;
        /* What the arena would have called: reserve once, create+map+access per
         * chunk mapped, unmap+release per chunk given back. */
        out->driver_calls += 1 + 3 * s->chunks_mapped + 2 * s->chunks_unmapped;
        out->allocs_served += s->allocs;
        out->frees_served += s->frees;
        out->ooms += s->ooms;
        if ((double)s->peak_mapped > frag_peak) {
            frag_peak = (double)s->peak_mapped;
            out->ext_frag_at_peak = s->frag_at_peak;
        }
    }
    pthread_mutex_unlock(&lock);
}

void cf_shadow_reset(void)
{
    pthread_mutex_lock(&lock);
    struct shadow_entry *e, *tmp;
    HASH_ITER(hh, by_addr, e, tmp)
    {
        HASH_DEL(by_addr, e);
        cf_host_free(e, sizeof *e);
    }
    while ((e = spare_entries) != NULL) {
        spare_entries = e->hh.next;
        cf_host_free(e, sizeof *e);
    }
    for (int i = 0; i < SHADOW_MAX_DEVICES; i++) {
        if (devs[i].used) {
            tlsf_destroy(&devs[i].tlsf);
            cf_gmap_destroy(&devs[i].gmap);
        }
        memset(&devs[i], 0, sizeof devs[i]);
    }
    pthread_mutex_unlock(&lock);
}

double cf_shadow_ext_frag_now(int device)
{
    double frag = 0;
    pthread_mutex_lock(&lock);
    if (device >= 0 && device < SHADOW_MAX_DEVICES && devs[device].used)
        frag = cf_gmap_ext_frag(&devs[device].gmap, devs[device].tlsf.regions[0].first);
    pthread_mutex_unlock(&lock);
    return frag;
}

/* Held blocks are mapped and each granule's hold count is the number of held
 * blocks touching it (as cf_arena_check verifies for the real arena). */
static int check_device(const struct shadow_dev *s)
{
    const struct cf_gmap *g = &s->gmap;
    uint32_t *expect = cf_host_zalloc(g->count * sizeof *expect);
    int fails = tlsf_check(&s->tlsf) + (s->live != s->tlsf.used_bytes);
    if (expect == NULL) return fails;
    for (const struct tlsf_block *b = s->tlsf.regions[0].first; b; b = b->phys_next) {
        if (b->state != TLSF_USED) continue;
        fails += !cf_gmap_is_mapped(g, b->addr, b->size);
        for (uint64_t i = (b->addr - g->base) >> g->shift;
             i <= (b->addr - g->base + b->size - 1) >> g->shift; i++)
            expect[i]++;
    }
    for (uint64_t i = 0; i < g->count; i++)
        fails += expect[i] != g->refs[i];
    cf_host_free(expect, g->count * sizeof *expect);
    return fails;
}

int cf_shadow_check(void)
{
    int fails = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SHADOW_MAX_DEVICES; i++)
        if (devs[i].used) fails += check_device(&devs[i]);
    pthread_mutex_unlock(&lock);
    return fails;
}
