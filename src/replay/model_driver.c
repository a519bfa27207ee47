/* The driver: every allocation a raw cudaMalloc, as measured on an H200.
 * Memory is mapped in 2 MiB pages, and the footprint is 2 MiB times the number
 * of distinct pages that live [addr, addr + size) ranges touch -- the rule the
 * profiler itself uses (record/footprint.c), exact against cuMemGetInfo.
 *
 * Where the traced program got the memory from the driver (placement=trace,
 * the default), the trace's addresses are the driver's own placement and are
 * replayed as they are: the model then reproduces the profiler's footprint
 * exactly. Every other allocation (pool, VMM, arena-served; or all of them
 * with placement=model) is placed the way the H200 was measured to place
 * cudaMalloc: requests up to 1 MiB in 512-byte slots packed into shared 2 MiB
 * pages, first fit over the pages that have room; larger requests in pages of
 * their own, whose last, partly used page takes later small requests. */
#include "replay/model.h"

#include <stdlib.h>
#include <string.h>

#include "replay/u64map.h"

#define PAGE_SHIFT 21
#define PAGE       ((uint64_t)1 << PAGE_SHIFT)
#define SLOT       512u
#define SLOTS      (uint32_t)(PAGE / SLOT)
#define WORDS      (SLOTS / 64)
#define SMALL_MAX  ((uint64_t)1 << 20)
#define NO_PAGE    UINT32_MAX

enum how { NOT_LIVE, RECORDED, PLACED };
enum { PLACEMENT_TRACE, PLACEMENT_MODEL };

struct dpage {
    uint64_t bits[WORDS]; /* slots in use */
    uint32_t used, maxrun;
};

struct alloc_state {
    uint64_t addr, size; /* RECORDED: the trace's range */
    uint64_t full;       /* PLACED: pages of its own */
    uint32_t page, slot, nslots;
    uint8_t how;
};

struct driver {
    struct cf_rp_model m;
    uint64_t capacity;
    uint32_t nallocs;
    bool model_all;
    struct alloc_state *a;
    /* Recorded ranges: only a range's first and last pages can be shared. */
    struct cf_u64map edges;
    uint64_t interior;
    /* Placed allocations. */
    struct dpage *pages;
    uint32_t npages, page_cap, in_use;
    uint32_t *spare; /* page ids not in use, reused last-freed first */
    uint32_t nspare;
    uint32_t *tree; /* max segment tree over pages: maxrun of pages in use, else 0 */
    uint32_t leaves;
    uint64_t full;
    uint64_t ops;
    bool broken;
};

static uint64_t round_slot(uint64_t n)
{
    return (n + SLOT - 1) / SLOT * SLOT;
}

/* ---- pages of placed allocations ---- */

static bool slot_used(const struct dpage *p, uint32_t i)
{
    return (p->bits[i / 64] >> (i % 64)) & 1;
}

static uint32_t longest_free_run(const struct dpage *p)
{
    uint32_t best = 0, run = 0;
    for (uint32_t w = 0; w < WORDS; w++) {
        if (p->bits[w] == 0) {
            run += 64;
        } else if (p->bits[w] == UINT64_MAX) {
            run = 0;
        } else {
            for (uint32_t b = 0; b < 64; b++) {
                if ((p->bits[w] >> b) & 1) {
                    if (run > best) best = run;
                    run = 0;
                } else {
                    run++;
                }
            }
            continue;
        }
        if (run > best) best = run;
    }
    return run > best ? run : best;
}

/* First run of n free slots, or SLOTS. */
static uint32_t first_fit(const struct dpage *p, uint32_t n)
{
    uint32_t run = 0;
    for (uint32_t i = 0; i < SLOTS; i++) {
        if (i % 64 == 0 && p->bits[i / 64] == UINT64_MAX) {
            run = 0;
            i += 63;
            continue;
        }
        run = slot_used(p, i) ? 0 : run + 1;
        if (run == n) return i + 1 - n;
    }
    return SLOTS;
}

/* The bits of slots [i, end) that lie in slot i's word; *count of them. */
static uint64_t word_mask(uint32_t i, uint32_t end, uint32_t *count)
{
    uint32_t bit = i % 64;
    *count = 64 - bit < end - i ? 64 - bit : end - i;
    return (*count == 64 ? UINT64_MAX : (((uint64_t)1 << *count) - 1)) << bit;
}

static void mark(struct dpage *p, uint32_t first, uint32_t n, bool used)
{
    for (uint32_t i = first, count; i < first + n; i += count) {
        uint64_t mask = word_mask(i, first + n, &count);
        if (used)
            p->bits[i / 64] |= mask;
        else
            p->bits[i / 64] &= ~mask;
    }
    p->used = used ? p->used + n : p->used - n;
}

static void tree_set(struct driver *d, uint32_t page)
{
    const struct dpage *p = &d->pages[page];
    uint32_t i = d->leaves + page;
    d->tree[i] = p->used ? p->maxrun : 0;
    for (i /= 2; i >= 1; i /= 2)
        d->tree[i] = d->tree[2 * i] > d->tree[2 * i + 1] ? d->tree[2 * i] : d->tree[2 * i + 1];
}

/* The lowest page in use with a free run of n slots, or NO_PAGE. */
static uint32_t tree_find(const struct driver *d, uint32_t n)
{
    if (d->leaves == 0 || d->tree[1] < n) return NO_PAGE;
    uint32_t i = 1;
    while (i < d->leaves)
        i = d->tree[2 * i] >= n ? 2 * i : 2 * i + 1;
    return i - d->leaves;
}

static bool grow_pages(struct driver *d)
{
    uint32_t cap = d->page_cap ? d->page_cap * 2 : 64;
    struct dpage *pages = realloc(d->pages, (size_t)cap * sizeof *pages);
    if (pages == NULL) return false;
    d->pages = pages;
    uint32_t *spare = realloc(d->spare, (size_t)cap * sizeof *spare);
    if (spare == NULL) return false;
    d->spare = spare;
    uint32_t *tree = calloc(2 * (size_t)cap, sizeof *tree);
    if (tree == NULL) return false;
    free(d->tree);
    d->tree = tree;
    d->leaves = d->page_cap = cap;
    for (uint32_t i = 0; i < d->npages; i++)
        tree_set(d, i);
    return true;
}

static uint32_t new_page(struct driver *d)
{
    uint32_t id;
    if (d->nspare) {
        id = d->spare[--d->nspare];
    } else {
        if (d->npages == d->page_cap && !grow_pages(d)) return NO_PAGE;
        id = d->npages++;
    }
    memset(&d->pages[id], 0, sizeof d->pages[id]);
    d->in_use++;
    return id;
}

static void page_changed(struct driver *d, uint32_t page)
{
    struct dpage *p = &d->pages[page];
    p->maxrun = longest_free_run(p);
    if (p->used == 0) {
        d->in_use--;
        d->spare[d->nspare++] = page;
    }
    tree_set(d, page);
}

static bool place(struct driver *d, struct alloc_state *a, uint64_t size)
{
    uint64_t tail = size;
    a->full = 0;
    if (size > SMALL_MAX) {
        a->full = size / PAGE;
        tail = size % PAGE;
    }
    a->page = NO_PAGE;
    a->nslots = (uint32_t)(round_slot(tail) / SLOT);
    if (a->nslots == 0) return true;
    /* A large request's pages start at a fresh page: its tail never joins
     * another page; small requests go to the lowest page with room. */
    uint32_t page = size > SMALL_MAX ? NO_PAGE : tree_find(d, a->nslots);
    uint32_t slot = 0;
    if (page == NO_PAGE) {
        page = new_page(d);
        if (page == NO_PAGE) return false;
    } else {
        slot = first_fit(&d->pages[page], a->nslots);
    }
    a->page = page;
    a->slot = slot;
    mark(&d->pages[page], slot, a->nslots, true);
    page_changed(d, page);
    return true;
}

static void unplace(struct driver *d, const struct alloc_state *a)
{
    if (a->page == NO_PAGE) return;
    mark(&d->pages[a->page], a->slot, a->nslots, false);
    page_changed(d, a->page);
}

/* ---- recorded ranges (as record/footprint.c counts them) ---- */

static void edge_ref(struct driver *d, uint64_t page, int sign)
{
    uint64_t *refs = cf_u64map_get(&d->edges, page);
    if (sign > 0) {
        if (refs)
            (*refs)++;
        else if (cf_u64map_put(&d->edges, page, 1) != 0)
            d->broken = true;
    } else if (refs && --*refs == 0) {
        cf_u64map_del(&d->edges, page, NULL);
    }
}

static void recorded_range(struct driver *d, uint64_t addr, uint64_t size, int sign)
{
    uint64_t first = addr >> PAGE_SHIFT, last = (addr + size - 1) >> PAGE_SHIFT;
    edge_ref(d, first, sign);
    if (last != first) edge_ref(d, last, sign);
    if (last > first + 1) d->interior += (uint64_t)sign * (last - first - 1);
}

static uint64_t recorded_granted(uint64_t addr, uint64_t size)
{
    return round_slot(addr + size) - addr;
}

/* ---- the model ---- */

static void update(struct driver *d)
{
    d->m.footprint = (d->interior + d->edges.n + d->full + d->in_use) << PAGE_SHIFT;
}

static bool use_trace(const struct driver *d, const struct cf_rp_op *op)
{
    return !d->model_all && op->src == CF_RP_RAW;
}

static bool drv_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct driver *d = (struct driver *)m;
    struct alloc_state *a = &d->a[op->id];
    memset(a, 0, sizeof *a);
    if (use_trace(d, op)) {
        a->how = RECORDED;
        a->addr = op->addr;
        a->size = op->size;
        recorded_range(d, op->addr, op->size, +1);
        m->granted += recorded_granted(op->addr, op->size);
    } else {
        a->how = PLACED;
        if (!place(d, a, op->size)) d->broken = true;
        d->full += a->full;
        m->granted += round_slot(op->size);
    }
    d->ops++;
    m->driver_calls++;
    update(d);
    return m->footprint <= d->capacity && !d->broken;
}

static void drv_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct driver *d = (struct driver *)m;
    struct alloc_state *a = &d->a[op->id];
    if (a->how == RECORDED) {
        recorded_range(d, a->addr, a->size, -1);
        m->granted -= recorded_granted(a->addr, a->size);
    } else if (a->how == PLACED) {
        unplace(d, a);
        d->full -= a->full;
        m->granted -= round_slot(op->size);
    }
    a->how = NOT_LIVE;
    d->ops++;
    m->driver_calls++;
    update(d);
}

/* ---- fragmentation and checks ---- */

struct range {
    uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Live recorded ranges sorted by address (granted ends when rounded); NULL
 * when there are none or memory ran out (*n = 0). */
static struct range *recorded_ranges(const struct driver *d, bool rounded, uint64_t *n)
{
    struct range *r = malloc(((size_t)d->nallocs + 1) * sizeof *r);
    *n = 0;
    if (r == NULL) return NULL;
    for (uint32_t i = 0; i < d->nallocs; i++) {
        const struct alloc_state *a = &d->a[i];
        if (a->how != RECORDED) continue;
        uint64_t hi = rounded ? a->addr + recorded_granted(a->addr, a->size) : a->addr + a->size;
        r[(*n)++] = (struct range){a->addr, hi};
    }
    qsort(r, *n, sizeof *r, by_lo);
    return r;
}

static void note_run(uint64_t run, uint64_t *largest, uint64_t *total)
{
    if (run > *largest) *largest = run;
    *total += run;
}

static double ext_frag(struct cf_rp_model *m)
{
    struct driver *d = (struct driver *)m;
    uint64_t largest = 0, total = 0, n;
    for (uint32_t i = 0; i < d->npages; i++) {
        const struct dpage *p = &d->pages[i];
        if (p->used == 0) continue;
        total += (uint64_t)(SLOTS - p->used) * SLOT;
        if ((uint64_t)p->maxrun * SLOT > largest) largest = (uint64_t)p->maxrun * SLOT;
    }
    /* Recorded ranges: the free bytes of the pages they touch; a free run goes
     * on across a page boundary when the next page is touched too. */
    struct range *r = recorded_ranges(d, true, &n);
    uint64_t cursor = 0, stretch_end = 0; /* touched pages reach up to stretch_end */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t page_lo = r[i].lo & ~(PAGE - 1), page_hi = ((r[i].hi - 1) | (PAGE - 1)) + 1;
        if (i == 0 || page_lo > stretch_end) {
            if (i) note_run(stretch_end - cursor, &largest, &total);
            cursor = page_lo;
        }
        if (r[i].lo > cursor) note_run(r[i].lo - cursor, &largest, &total);
        if (r[i].hi > cursor) cursor = r[i].hi;
        if (page_hi > stretch_end) stretch_end = page_hi;
    }
    if (n) note_run(stretch_end - cursor, &largest, &total);
    free(r);
    return total ? 1.0 - (double)largest / (double)total : 0;
}

static int check_recorded(const struct driver *d, uint64_t *granted)
{
    int bad = 0;
    uint64_t n, pages = 0, last = 0; /* pages counted up to and including last */
    struct range *r = recorded_ranges(d, false, &n);
    for (uint64_t i = 0; i < n; i++) {
        bad += i > 0 && r[i].lo < r[i - 1].hi; /* overlapping live ranges */
        uint64_t first = r[i].lo >> PAGE_SHIFT, end = (r[i].hi - 1) >> PAGE_SHIFT;
        /* Sorted by address: only the previous range can share a page. */
        if (i > 0 && first <= last) first = last + 1;
        if (end >= first) pages += end - first + 1;
        if (i == 0 || end > last) last = end;
        *granted += recorded_granted(r[i].lo, r[i].hi - r[i].lo);
    }
    bad += pages != d->interior + d->edges.n;
    free(r);
    return bad;
}

/* Sets n slots from first; how many words already had one of them set (two
 * allocations in one slot). */
static int set_slots(struct dpage *p, uint32_t first, uint32_t n)
{
    int overlaps = 0;
    for (uint32_t i = first, count; i < first + n; i += count) {
        uint64_t mask = word_mask(i, first + n, &count);
        overlaps += (p->bits[i / 64] & mask) != 0;
        p->bits[i / 64] |= mask;
    }
    return overlaps;
}

static int check_placed(const struct driver *d, uint64_t *granted)
{
    int bad = 0;
    uint64_t full = 0, in_use = 0;
    struct dpage *want = calloc(d->npages + 1u, sizeof *want);
    if (want == NULL) return 0;
    for (uint32_t i = 0; i < d->nallocs; i++) {
        const struct alloc_state *a = &d->a[i];
        if (a->how != PLACED) continue;
        full += a->full;
        *granted += a->full * PAGE + (uint64_t)a->nslots * SLOT;
        if (a->page == NO_PAGE) continue;
        if (a->page >= d->npages || a->slot + a->nslots > SLOTS) {
            bad++;
            continue;
        }
        bad += set_slots(&want[a->page], a->slot, a->nslots);
        want[a->page].used += a->nslots;
    }
    for (uint32_t i = 0; i < d->npages; i++) {
        const struct dpage *p = &d->pages[i];
        if (want[i].used == 0) { /* a spare page: its bits are stale */
            bad += p->used != 0 || d->tree[d->leaves + i] != 0;
            continue;
        }
        in_use++;
        bad += memcmp(want[i].bits, p->bits, sizeof p->bits) != 0 || want[i].used != p->used;
        bad += p->maxrun != longest_free_run(&want[i]) || d->tree[d->leaves + i] != p->maxrun;
    }
    for (uint32_t i = 1; i < d->leaves; i++) {
        uint32_t hi = d->tree[2 * i] > d->tree[2 * i + 1] ? d->tree[2 * i] : d->tree[2 * i + 1];
        bad += d->tree[i] != hi;
    }
    bad += in_use != d->in_use || d->in_use + d->nspare != d->npages || full != d->full;
    free(want);
    return bad;
}

static int check(struct cf_rp_model *m)
{
    struct driver *d = (struct driver *)m;
    uint64_t granted = 0;
    int bad = check_recorded(d, &granted) + check_placed(d, &granted);
    bad += granted != m->granted || m->driver_calls != d->ops || d->broken;
    bad += m->footprint != (d->interior + d->edges.n + d->full + d->in_use) << PAGE_SHIFT;
    return bad + (m->footprint < m->granted);
}

static void destroy(struct cf_rp_model *m)
{
    struct driver *d = (struct driver *)m;
    cf_u64map_free(&d->edges);
    free(d->a);
    free(d->pages);
    free(d->spare);
    free(d->tree);
    free(d);
}

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    struct driver *d = calloc(1, sizeof *d);
    if (d) d->a = calloc(st->nallocs ? st->nallocs : 1, sizeof *d->a);
    if (d == NULL || d->a == NULL) {
        free(d);
        *why = "out of memory";
        return NULL;
    }
    d->m.def = &cf_rp_model_driver;
    d->capacity = st->device_memory;
    d->nallocs = st->nallocs;
    d->model_all = st->knob[0].u == PLACEMENT_MODEL;
    return &d->m;
}

static const struct cf_rp_knob_def knobs[] = {
    {"placement", CF_RP_KNOB_CHOICE, "trace", 0, 0, "trace|model",
     "trace: raw cudaMalloc/cuMemAlloc allocations keep the addresses the driver gave them in the "
     "trace (exact); model: every allocation placed by the measured packing rules"},
};

const struct cf_rp_model_def cf_rp_model_driver = {
    .name = "driver",
    .summary = "raw cudaMalloc as measured on an H200: 512 B slots packed in 2 MiB pages, "
               "larger requests in pages of their own; footprint = 2 MiB pages touched",
    .knobs = knobs,
    .nknobs = sizeof knobs / sizeof knobs[0],
    .create = create,
    .alloc = drv_alloc,
    .free = drv_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
