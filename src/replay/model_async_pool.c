/* The driver's stream-ordered pool (cudaMallocAsync on one pool per device), as
 * the H200 shows it in traces of PyTorch's cudaMallocAsync backend, where every
 * tensor's address and the pool's reserved bytes after every allocation are
 * recorded (docs/replay.md):
 *
 * - the pool is one range of addresses; blocks are 512-byte aligned and tile it,
 *   and free neighbours coalesce anywhere in it: a 196.5 MiB request is placed
 *   right after the last block and runs past the end of what was reserved;
 * - physical memory backs the range in 32 MiB granules, mapped when a block first
 *   touches them: reserved is a multiple of 32 MiB (16 x 3 MiB reserve 64 MiB,
 *   16 x 30 MiB exactly 480 MiB, 196.5 MiB alone 224 MiB);
 * - a request takes the smallest free block that fits, lowest address among
 *   equals (the driver does not document its placement, and this is not it:
 *   on the traces it is the driver's choice for a fifth to a half of the
 *   requests, docs/replay.md; the peak depends on the granules touched, which
 *   it predicts within 3 %); when none fits, the
 *   range grows at its end, starting in the free block there if there is one;
 * - granules no live block touches go back to the driver after a free while the
 *   pool reserves more than release_threshold, highest address first (the driver
 *   trims at synchronization points, which the trace does not show: a free stands
 *   for the earliest one), and all of them before the pool would grow past the
 *   device's memory.
 *
 * Frees are taken as complete, so any stream may reuse a block at once. */
#include "replay/model.h"

#include <stdlib.h>

#include "replay/oset.h"

#define MiB     ((uint64_t)1 << 20)
#define ALIGN   512u
#define GRANULE (32 * MiB)
#define VA_BASE ((uint64_t)1 << 40)

struct pblock {
    struct cf_onode node; /* in the free set while free */
    uint64_t addr, size;
    struct pblock *prev, *next; /* neighbours in the range */
    bool free;
};

struct pool {
    struct cf_rp_model m;
    uint64_t capacity, threshold, grows, releases;
    struct pblock *first, *last; /* the blocks tile [VA_BASE, last's end) */
    uint64_t *used;              /* per granule: bytes of live blocks in it */
    bool *mapped;
    uint32_t ngran, idle; /* granules the range spans; mapped ones with no live byte */
    uint32_t nallocs;
    struct cf_oset free; /* by size, then address */
    struct pblock **blk; /* by id */
    bool broken;
};

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

static int by_size(const struct cf_onode *a, const struct cf_onode *b)
{
    const struct pblock *x = (const struct pblock *)a, *y = (const struct pblock *)b;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void set_free(struct pool *p, struct pblock *b)
{
    b->free = true;
    cf_oset_insert(&p->free, &b->node);
}

static void set_used(struct pool *p, struct pblock *b)
{
    b->free = false;
    cf_oset_erase(&p->free, &b->node);
}

/* Granules [*g0, *g1) that [addr, addr + size) touches. */
static void granules(uint64_t addr, uint64_t size, uint32_t *g0, uint32_t *g1)
{
    *g0 = (uint32_t)((addr - VA_BASE) / GRANULE);
    *g1 = (uint32_t)((addr + size - VA_BASE + GRANULE - 1) / GRANULE);
}

static uint64_t overlap(uint64_t addr, uint64_t size, uint32_t g)
{
    uint64_t lo = VA_BASE + (uint64_t)g * GRANULE, hi = lo + GRANULE;
    if (addr > lo) lo = addr;
    if (addr + size < hi) hi = addr + size;
    return hi - lo;
}

static bool span_to(struct pool *p, uint32_t n)
{
    if (n <= p->ngran) return true;
    uint64_t *u = realloc(p->used, n * sizeof *u);
    if (u) p->used = u;
    bool *m = u ? realloc(p->mapped, n * sizeof *m) : NULL;
    if (m == NULL) return false;
    p->mapped = m;
    for (uint32_t g = p->ngran; g < n; g++) {
        u[g] = 0;
        m[g] = false;
    }
    p->ngran = n;
    return true;
}

/* Granules the block would map anew. */
static uint64_t unmapped_in(const struct pool *p, uint64_t addr, uint64_t size)
{
    uint32_t g0, g1;
    granules(addr, size, &g0, &g1);
    uint64_t n = 0;
    for (uint32_t g = g0; g < g1; g++)
        n += g >= p->ngran || !p->mapped[g];
    return n * GRANULE;
}

static void unmap(struct pool *p, uint32_t g)
{
    p->mapped[g] = false;
    p->idle--;
    p->m.footprint -= GRANULE;
}

/* Idle granules from the highest address down while the pool reserves more than
 * keep; one driver call per pass. */
static void release_idle(struct pool *p, uint64_t keep)
{
    bool any = false;
    for (uint32_t g = p->ngran; g-- > 0 && p->idle && p->m.footprint > keep;) {
        if (!p->mapped[g] || p->used[g]) continue;
        unmap(p, g);
        any = true;
    }
    if (any) {
        p->releases++;
        p->m.driver_calls++;
    }
}

static void occupy(struct pool *p, const struct pblock *b)
{
    uint32_t g0, g1;
    granules(b->addr, b->size, &g0, &g1);
    bool grew = false;
    for (uint32_t g = g0; g < g1; g++) {
        if (!p->mapped[g]) {
            p->mapped[g] = grew = true;
            p->m.footprint += GRANULE;
        } else if (p->used[g] == 0) {
            p->idle--;
        }
        p->used[g] += overlap(b->addr, b->size, g);
    }
    if (grew) {
        p->grows++;
        p->m.driver_calls++;
    }
}

static void vacate(struct pool *p, const struct pblock *b)
{
    uint32_t g0, g1;
    granules(b->addr, b->size, &g0, &g1);
    for (uint32_t g = g0; g < g1; g++) {
        p->used[g] -= overlap(b->addr, b->size, g);
        if (p->used[g] == 0) p->idle++;
    }
}

static struct pblock *split(struct pool *p, struct pblock *b, uint64_t size)
{
    if (b->size == size) return b;
    struct pblock *rest = calloc(1, sizeof *rest);
    if (rest == NULL) {
        p->broken = true;
        return b;
    }
    *rest =
        (struct pblock){.addr = b->addr + size, .size = b->size - size, .prev = b, .next = b->next};
    if (b->next)
        b->next->prev = rest;
    else
        p->last = rest;
    b->next = rest;
    b->size = size;
    set_free(p, rest);
    return b;
}

/* A block of size at the end of the range: the free block there grows, or a new
 * one follows the last. */
static struct pblock *extend(struct pool *p, uint64_t size)
{
    struct pblock *b = p->last;
    if (b && b->free) {
        set_used(p, b);
        b->size = size;
        return b;
    }
    struct pblock *n = calloc(1, sizeof *n);
    if (n == NULL) return NULL;
    *n = (struct pblock){.addr = b ? b->addr + b->size : VA_BASE, .size = size, .prev = b};
    if (b)
        b->next = n;
    else
        p->first = n;
    p->last = n;
    return n;
}

/* The block a request of size gets; its granules are not yet occupied. */
static struct pblock *place(struct pool *p, uint64_t size)
{
    struct pblock key = {.size = size};
    struct pblock *b = (struct pblock *)cf_oset_lower_bound(&p->free, &key.node);
    if (b) {
        set_used(p, b);
        return split(p, b, size);
    }
    return extend(p, size);
}

/* Bytes of granules a request of size would map anew where it would be placed. */
static uint64_t would_need(struct pool *p, uint64_t size)
{
    struct pblock key = {.size = size};
    struct pblock *b = (struct pblock *)cf_oset_lower_bound(&p->free, &key.node);
    if (b) return unmapped_in(p, b->addr, size);
    uint64_t at = p->last ? p->last->addr + (p->last->free ? 0 : p->last->size) : VA_BASE;
    return unmapped_in(p, at, size);
}

static bool pool_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct pool *p = (struct pool *)m;
    uint64_t size = round_up(op->size ? op->size : 1, ALIGN);
    /* Larger than the device: the driver refuses it, and no granule is mapped (a
     * damaged trace's 79 TiB request would otherwise walk 2.5 M granules). */
    if (p->capacity && size > p->capacity) return false;
    if (p->m.footprint + would_need(p, size) > p->capacity) release_idle(p, 0);
    bool fits = p->m.footprint + would_need(p, size) <= p->capacity;
    struct pblock *b = place(p, size);
    uint32_t g0, g1;
    if (b) granules(b->addr, b->size, &g0, &g1);
    if (b == NULL || !span_to(p, g1)) {
        p->broken = true;
        return false;
    }
    occupy(p, b);
    p->blk[op->id] = b;
    m->granted += b->size;
    return fits && !p->broken;
}

/* b absorbs its next neighbour, which is free or the block being freed. */
static struct pblock *merge_next(struct pool *p, struct pblock *b)
{
    struct pblock *n = b->next;
    if (n->free) set_used(p, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    else
        p->last = b;
    free(n);
    return b;
}

static void pool_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct pool *p = (struct pool *)m;
    struct pblock *b = p->blk[op->id];
    if (b == NULL) return;
    p->blk[op->id] = NULL;
    m->granted -= b->size;
    vacate(p, b);
    if (b->next && b->next->free) merge_next(p, b);
    if (b->prev && b->prev->free) {
        b = b->prev;
        set_used(p, b);
        merge_next(p, b);
    }
    set_free(p, b);
    if (m->footprint > p->threshold && p->idle) release_idle(p, p->threshold);
}

static uint64_t mapped_in(const struct pool *p, const struct pblock *b)
{
    uint32_t g0, g1;
    granules(b->addr, b->size, &g0, &g1);
    uint64_t n = 0;
    for (uint32_t g = g0; g < g1 && g < p->ngran; g++)
        if (p->mapped[g]) n += overlap(b->addr, b->size, g);
    return n;
}

/* Mapped bytes past the last block: the rest of its granule, in no block. */
static uint64_t mapped_tail(const struct pool *p)
{
    if (p->ngran == 0 || !p->mapped[p->ngran - 1]) return 0;
    uint64_t end = p->last ? p->last->addr + p->last->size : VA_BASE;
    return VA_BASE + (uint64_t)p->ngran * GRANULE - end;
}

/* Over the free memory that is backed: free blocks count by their mapped part. */
static double ext_frag(struct cf_rp_model *m)
{
    struct pool *p = (struct pool *)m;
    uint64_t total = m->footprint - m->granted, largest = mapped_tail(p);
    for (struct cf_onode *x = cf_oset_first(&p->free); x; x = cf_oset_next(x)) {
        uint64_t b = mapped_in(p, (struct pblock *)x);
        if ((struct pblock *)x == p->last) b += mapped_tail(p);
        if (b > largest) largest = b;
    }
    return total ? 1.0 - (double)largest / (double)total : 0;
}

static int check_granules(const struct pool *p, uint64_t *used)
{
    int bad = 0;
    uint32_t idle = 0;
    uint64_t mapped = 0;
    for (uint32_t g = 0; g < p->ngran; g++) {
        bad += used[g] != p->used[g] || (used[g] && !p->mapped[g]);
        idle += p->mapped[g] && used[g] == 0;
        mapped += p->mapped[g] ? GRANULE : 0;
    }
    return bad + (idle != p->idle) + (mapped != p->m.footprint);
}

static int check(struct cf_rp_model *m)
{
    struct pool *p = (struct pool *)m;
    int bad = cf_oset_check(&p->free);
    uint64_t *used = calloc(p->ngran ? p->ngran : 1, sizeof *used);
    if (used == NULL) return 1;
    uint64_t at = VA_BASE, granted = 0, nfree = 0, nused = 0;
    for (const struct pblock *b = p->first; b; b = b->next) {
        bad += b->addr != at || b->size == 0 || b->size % ALIGN != 0;
        bad += b->next ? (b->next->prev != b || (b->free && b->next->free)) : b != p->last;
        at += b->size;
        if (b->free) {
            nfree++;
            continue;
        }
        nused++;
        granted += b->size;
        uint32_t g0, g1;
        granules(b->addr, b->size, &g0, &g1);
        bad += g1 > p->ngran;
        for (uint32_t g = g0; g < g1 && g < p->ngran; g++)
            used[g] += overlap(b->addr, b->size, g);
    }
    bad += check_granules(p, used);
    free(used);
    uint64_t live = 0;
    for (uint32_t i = 0; i < p->nallocs; i++) {
        if (p->blk[i] == NULL) continue;
        live++;
        bad += p->blk[i]->free;
    }
    bad += nfree != p->free.n || nused != live || granted != m->granted;
    bad += m->driver_calls != p->grows + p->releases;
    return bad + p->broken;
}

static void destroy(struct cf_rp_model *m)
{
    struct pool *p = (struct pool *)m;
    for (struct pblock *b = p->first, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(p->used);
    free(p->mapped);
    free(p->blk);
    free(p);
}

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    struct pool *p = calloc(1, sizeof *p);
    if (p) p->blk = calloc(st->nallocs ? st->nallocs : 1, sizeof *p->blk);
    if (p == NULL || p->blk == NULL) {
        free(p);
        *why = "out of memory";
        return NULL;
    }
    p->m.def = &cf_rp_model_async_pool;
    p->capacity = st->device_memory;
    p->threshold = st->knob[0].u;
    p->nallocs = st->nallocs;
    cf_oset_init(&p->free, by_size, 0x9e3779b97f4a7c15ull);
    return &p->m;
}

static const struct cf_rp_knob_def knobs[] = {
    {"release_threshold", CF_RP_KNOB_SIZE, "max", 0, 0, NULL,
     "idle 32 MiB granules go back to the driver after a free while the pool reserves "
     "more (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; CUDA's default is 0, PyTorch's and most "
     "frameworks' max)"},
};

const struct cf_rp_model_def cf_rp_model_async_pool = {
    .name = "async-pool",
    .summary = "the driver's stream-ordered pool (cudaMallocAsync): one range of 512-byte "
               "blocks backed in 32 MiB granules, release threshold",
    .knobs = knobs,
    .nknobs = sizeof knobs / sizeof knobs[0],
    .create = create,
    .alloc = pool_alloc,
    .free = pool_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
