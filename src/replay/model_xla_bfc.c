/* XLA's GPU allocator as JAX sets it up (XLA_PYTHON_CLIENT_ALLOCATOR unset or
 * bfc): the best-fit-with-coalescing allocator of XLA's tsl framework
 * (bfc_allocator.cc) over regions from cuMemAlloc, limited to mem_fraction of
 * the device's memory. With preallocate (JAX's default) the first request
 * takes the whole limit as one region; without, regions start at 2 MiB and
 * double. The rules followed, from that source:
 *   - requests round up to 256 B; the free chunk taken is the smallest that
 *     fits, the lowest address among equals (bins ordered by size, then address);
 *   - a chunk is split when it is at least twice the request or would waste
 *     128 MiB or more; otherwise the whole chunk is granted;
 *   - a freed chunk merges with free neighbours of its own region (device
 *     regions are never merged with each other);
 *   - with nothing free that fits, a region of max(the doubling size, the
 *     request) is added, capped by what the limit has left; when the driver
 *     refuses, 90 % of the size is tried until it would not hold the request;
 *   - regions are never given back (JAX does not turn garbage collection on).
 * The footprint is the regions' total: what memory_stats() calls pool_bytes. */
#include "replay/model.h"

#include <stdlib.h>

#include "replay/oset.h"

#define ROUND       ((uint64_t)256)
#define FIRST       ((uint64_t)2 << 20)
#define WASTE_SPLIT ((uint64_t)128 << 20)
#define VA_BASE     ((uint64_t)1 << 40)
#define SLAB        4096

enum { PREALLOCATE, FRACTION };

struct chunk {
    struct cf_onode node;      /* in the free set while free */
    struct chunk *prev, *next; /* address neighbours in the region */
    uint64_t addr, size;
    bool used;
};

struct slab {
    struct slab *next;
    struct chunk c[SLAB];
};

struct bfc {
    struct cf_rp_model m;
    uint64_t limit, device, region, va;
    uint64_t overflow; /* bytes served past the limit after out of memory */
    struct cf_oset free_set;
    struct chunk **held; /* by allocation id */
    struct chunk *spare; /* chunk structs to reuse */
    struct slab *slabs;
    unsigned slab_used;
    uint64_t nregions, nchunks;
    struct chunk **region_first; /* every region's lowest chunk, for check() */
    uint64_t region_cap;
    bool broken; /* host memory ran out: the figures stop meaning anything */
};

static uint64_t rounded(uint64_t n)
{
    return (n + ROUND - 1) / ROUND * ROUND;
}

static int by_size(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct chunk *x = (const struct chunk *)a, *y = (const struct chunk *)b;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct chunk *new_chunk(struct bfc *b)
{
    struct chunk *c = b->spare;
    if (c) {
        b->spare = c->next;
    } else {
        if (b->slabs == NULL || b->slab_used == SLAB) {
            struct slab *s = malloc(sizeof *s);
            if (s == NULL) return NULL;
            s->next = b->slabs;
            b->slabs = s;
            b->slab_used = 0;
        }
        c = &b->slabs->c[b->slab_used++];
    }
    *c = (struct chunk){0};
    b->nchunks++;
    return c;
}

static void drop_chunk(struct bfc *b, struct chunk *c)
{
    c->next = b->spare;
    b->spare = c;
    b->nchunks--;
}

/* A region of bytes from the driver (the device's memory bounds it); NULL when
 * the driver would refuse or host memory ran out. */
static struct chunk *add_region(struct bfc *b, uint64_t bytes)
{
    b->m.driver_calls++; /* cuMemAlloc, failed or not */
    if (b->device != CF_RP_UNLIMITED && b->m.footprint + bytes > b->device) return NULL;
    if (b->nregions == b->region_cap) {
        uint64_t cap = b->region_cap ? 2 * b->region_cap : 16;
        struct chunk **grown = realloc(b->region_first, cap * sizeof *grown);
        if (grown == NULL) return (b->broken = true), NULL;
        b->region_first = grown;
        b->region_cap = cap;
    }
    struct chunk *c = new_chunk(b);
    if (c == NULL) return (b->broken = true), NULL;
    c->addr = b->va;
    c->size = bytes;
    /* cuMemAlloc places regions 2 MiB apart at least. */
    b->va += (bytes + FIRST - 1) / FIRST * FIRST + FIRST;
    b->region_first[b->nregions++] = c;
    b->m.footprint += bytes;
    cf_oset_insert(&b->free_set, &c->node);
    return c;
}

/* BFCAllocator::Extend: false when the limit or the driver leaves no room. */
static bool extend(struct bfc *b, uint64_t need)
{
    uint64_t pool = b->m.footprint - b->overflow;
    uint64_t avail = (b->limit - pool) / ROUND * ROUND;
    if (need > avail) return false;
    bool grew = false;
    while (need > b->region) {
        b->region *= 2;
        grew = true;
    }
    uint64_t bytes = b->region < avail ? b->region : avail;
    while (add_region(b, bytes) == NULL) {
        if (b->broken) return false;
        uint64_t less = rounded((uint64_t)((double)bytes * 0.9));
        bytes = less >= bytes ? bytes - ROUND : less;
        if (bytes < need) return false;
    }
    if (!grew) b->region *= 2;
    return true;
}

static struct chunk *best_fit(struct bfc *b, uint64_t need)
{
    struct chunk key = {.size = need, .addr = 0};
    return (struct chunk *)cf_oset_lower_bound(&b->free_set, &key.node);
}

/* Takes free chunk c for need bytes, splitting off the rest when worth it. */
static struct chunk *take(struct bfc *b, struct chunk *c, uint64_t need)
{
    cf_oset_erase(&b->free_set, &c->node);
    if (c->size >= 2 * need || c->size - need >= WASTE_SPLIT) {
        struct chunk *rest = new_chunk(b);
        if (rest == NULL) {
            b->broken = true;
        } else {
            rest->addr = c->addr + need;
            rest->size = c->size - need;
            rest->prev = c;
            rest->next = c->next;
            if (c->next) c->next->prev = rest;
            c->next = rest;
            c->size = need;
            cf_oset_insert(&b->free_set, &rest->node);
        }
    }
    c->used = true;
    return c;
}

static bool bfc_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct bfc *b = (struct bfc *)m;
    if (op->size == 0) return true; /* XLA asks for nothing: no chunk */
    uint64_t need = rounded(op->size);
    struct chunk *c = best_fit(b, need);
    if (c == NULL && extend(b, need)) c = best_fit(b, need);
    bool fits = c != NULL;
    if (c == NULL) {
        /* Out of memory: serve it past the limit so the replay stays in step. */
        b->overflow += need;
        uint64_t device = b->device;
        b->device = CF_RP_UNLIMITED;
        c = add_region(b, need);
        b->device = device;
        if (c == NULL) return false;
    }
    c = take(b, c, need);
    b->held[op->id] = c;
    m->granted += c->size;
    return fits && !b->broken;
}

/* c takes in its next chunk, which the caller has taken out of the free set. */
static void absorb_next(struct bfc *b, struct chunk *c)
{
    struct chunk *n = c->next;
    c->size += n->size;
    c->next = n->next;
    if (n->next) n->next->prev = c;
    drop_chunk(b, n);
}

static void bfc_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct bfc *b = (struct bfc *)m;
    struct chunk *c = b->held[op->id];
    if (c == NULL) return;
    b->held[op->id] = NULL;
    m->granted -= c->size;
    c->used = false;
    if (c->next && !c->next->used) {
        cf_oset_erase(&b->free_set, &c->next->node);
        absorb_next(b, c);
    }
    if (c->prev && !c->prev->used) {
        c = c->prev;
        cf_oset_erase(&b->free_set, &c->node);
        absorb_next(b, c);
    }
    cf_oset_insert(&b->free_set, &c->node);
}

static double ext_frag(struct cf_rp_model *m)
{
    struct bfc *b = (struct bfc *)m;
    uint64_t total = m->footprint - m->granted;
    const struct cf_onode *last = NULL;
    for (const struct cf_onode *n = cf_oset_first(&b->free_set); n; n = cf_oset_next(n))
        last = n;
    if (total == 0 || last == NULL) return 0;
    return 1.0 - (double)((const struct chunk *)last)->size / (double)total;
}

/* Chunks tile their regions, no two free neighbours, the free set and the
 * counters agree with a walk of every region. */
static int check(struct cf_rp_model *m)
{
    struct bfc *b = (struct bfc *)m;
    int bad = cf_oset_check(&b->free_set);
    uint64_t regions = 0, used = 0, nfree = 0, chunks = 0;
    for (uint64_t r = 0; r < b->nregions; r++) {
        const struct chunk *c = b->region_first[r];
        bad += c->prev != NULL;
        for (; c; c = c->next) {
            chunks++;
            regions += c->size;
            bad += c->size == 0 || c->size % ROUND != 0;
            if (c->used) used += c->size;
            nfree += !c->used;
            if (c->next)
                bad += c->next->addr != c->addr + c->size || c->next->prev != c ||
                       (!c->used && !c->next->used);
        }
    }
    bad += regions != m->footprint;
    bad += used != m->granted;
    bad += nfree != b->free_set.n;
    bad += chunks != b->nchunks;
    bad += m->footprint - b->overflow > b->limit;
    return bad;
}

static void destroy(struct cf_rp_model *m)
{
    struct bfc *b = (struct bfc *)m;
    while (b->slabs) {
        struct slab *s = b->slabs;
        b->slabs = s->next;
        free(s);
    }
    free(b->region_first);
    free(b->held);
    free(b);
}

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    bool preallocate = st->knob[PREALLOCATE].u != 0;
    double fraction = st->knob[FRACTION].d;
    if (preallocate && st->device_memory == CF_RP_UNLIMITED) {
        *why = "preallocate takes mem_fraction of the device's memory, which is not known "
               "(--device-memory)";
        return NULL;
    }
    struct bfc *b = calloc(1, sizeof *b);
    if (b) b->held = calloc(st->nallocs ? st->nallocs : 1, sizeof *b->held);
    if (b == NULL || b->held == NULL) {
        free(b);
        *why = "out of memory";
        return NULL;
    }
    b->m.def = &cf_rp_model_xla_bfc;
    b->device = st->device_memory;
    b->limit = st->device_memory == CF_RP_UNLIMITED
                   ? CF_RP_UNLIMITED
                   : (uint64_t)((double)st->device_memory * fraction);
    /* The doubling starts at 2 MiB; with preallocate, at the whole limit. */
    b->region = rounded(preallocate || b->limit < FIRST ? b->limit : FIRST);
    b->va = VA_BASE;
    cf_oset_init(&b->free_set, by_size, 5);
    return &b->m;
}

static const struct cf_rp_knob_def knobs[] = {
    [PREALLOCATE] = {"preallocate", CF_RP_KNOB_BOOL, "True", 0, 0, NULL,
                     "take the whole limit at the first request (XLA_PYTHON_CLIENT_PREALLOCATE); "
                     "else grow by regions that double from 2 MiB"},
    [FRACTION] = {"mem_fraction", CF_RP_KNOB_REAL, "0.75", 1e-6, 1, NULL,
                  "the limit, as a fraction of the device's memory "
                  "(XLA_PYTHON_CLIENT_MEM_FRACTION)"},
};

const struct cf_rp_model_def cf_rp_model_xla_bfc = {
    .name = "xla-bfc",
    .summary = "XLA's GPU allocator under JAX (bfc_allocator.cc): best fit with coalescing in "
               "regions from the driver, limited to mem_fraction of the device, preallocated "
               "or grown by doubling regions",
    .knobs = knobs,
    .nknobs = sizeof knobs / sizeof knobs[0],
    .on_request = true,
    .create = create,
    .alloc = bfc_alloc,
    .free = bfc_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
