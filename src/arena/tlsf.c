#include "arena/tlsf.h"
#include "arena/hostmem.h"
#include "base/export.h"

#include <stdio.h>
#include <string.h>

/* Block records come from slabs so that an allocation never asks for host
 * memory: only a slab refill (every SLAB_BLOCKS records) or a hash-table
 * doubling does, and then from cudafrag's mmap-backed allocator. */
#define SLAB_BLOCKS 1024
struct tlsf_slab {
    struct tlsf_slab *next;
    struct tlsf_block blocks[SLAB_BLOCKS];
};

/* ---- size classes ---- */

static inline int msb64(uint64_t x)
{
    return 63 - __builtin_clzll(x);
}

static void mapping(uint64_t size, int *fl, int *sl)
{
    if (size < ((uint64_t)1 << TLSF_FL_SHIFT)) {
        *fl = 0;
        *sl = (int)(size >> TLSF_ALIGN_LOG2);
        return;
    }
    int m = msb64(size);
    *fl = m - TLSF_FL_SHIFT + 1;
    *sl = (int)((size >> (m - TLSF_SL_LOG2)) ^ TLSF_SL_COUNT);
}

/* Round a request up to the next class boundary so that any block in the
 * class found is large enough (good fit without searching a list). */
static uint64_t search_round(uint64_t size)
{
    if (size < ((uint64_t)1 << TLSF_FL_SHIFT)) return size;
    uint64_t step = ((uint64_t)1 << (msb64(size) - TLSF_SL_LOG2)) - 1;
    if (size > UINT64_MAX - step) return 0;
    return size + step;
}

/* ---- free lists and bitmaps ---- */

CF_HOT static void list_insert(struct tlsf *t, struct tlsf_block *b)
{
    int fl, sl;
    mapping(b->size, &fl, &sl);
    struct tlsf_block *head = t->heads[fl][sl];
    b->link_prev = NULL;
    b->link_next = head;
    if (head) head->link_prev = b;
    t->heads[fl][sl] = b;
    t->fl_bitmap |= (uint64_t)1 << fl;
    t->sl_bitmap[fl] |= (uint32_t)1 << sl;
    b->state = TLSF_FREE;
    t->free_bytes += b->size;
    t->free_count++;
}

CF_HOT static void list_remove(struct tlsf *t, struct tlsf_block *b)
{
    int fl, sl;
    mapping(b->size, &fl, &sl);
    if (b->link_prev)
        b->link_prev->link_next = b->link_next;
    else
        t->heads[fl][sl] = b->link_next;
    if (b->link_next) b->link_next->link_prev = b->link_prev;
    if (t->heads[fl][sl] == NULL) {
        t->sl_bitmap[fl] &= ~((uint32_t)1 << sl);
        if (t->sl_bitmap[fl] == 0) t->fl_bitmap &= ~((uint64_t)1 << fl);
    }
    b->link_prev = b->link_next = NULL;
    t->free_bytes -= b->size;
    t->free_count--;
}

static struct tlsf_block *find_suitable(const struct tlsf *t, uint64_t size)
{
    int fl, sl;
    mapping(size, &fl, &sl);
    uint32_t sl_map = t->sl_bitmap[fl] & (~(uint32_t)0 << sl);
    if (sl_map == 0) {
        uint64_t fl_map = fl + 1 < 64 ? t->fl_bitmap & (~(uint64_t)0 << (fl + 1)) : 0;
        if (fl_map == 0) return NULL;
        fl = __builtin_ctzll(fl_map);
        sl_map = t->sl_bitmap[fl];
    }
    return t->heads[fl][__builtin_ctz(sl_map)];
}

/* ---- block records ---- */

CF_HOT static struct tlsf_block *record_get(struct tlsf *t)
{
    if (t->spare == NULL) {
        struct tlsf_slab *s = cf_host_zalloc(sizeof *s);
        if (s == NULL) return NULL;
        s->next = t->slabs;
        t->slabs = s;
        for (int i = SLAB_BLOCKS - 1; i >= 0; i--) {
            s->blocks[i].link_next = t->spare;
            t->spare = &s->blocks[i];
        }
    }
    struct tlsf_block *b = t->spare;
    t->spare = b->link_next;
    memset(b, 0, sizeof *b);
    return b;
}

static void record_put(struct tlsf *t, struct tlsf_block *b)
{
    b->state = 0;
    b->link_next = t->spare;
    t->spare = b;
}

/* ---- address lookup: chained hash on the block address ---- */

static inline uint64_t hash_slot(const struct tlsf *t, uint64_t addr)
{
    return ((addr >> TLSF_ALIGN_LOG2) * 0x9E3779B97F4A7C15ull >> 20) & t->hash_mask;
}

static int hash_grow(struct tlsf *t)
{
    uint64_t n = (t->hash_mask + 1) * 2;
    struct tlsf_block **h = cf_host_zalloc(n * sizeof *h);
    if (h == NULL) return -1;
    struct tlsf_block **old = t->hash;
    uint64_t old_n = t->hash_mask + 1;
    t->hash = h;
    t->hash_mask = n - 1;
    for (uint64_t i = 0; i < old_n; i++) {
        for (struct tlsf_block *b = old[i], *next; b; b = next) {
            next = b->hash_next;
            uint64_t s = hash_slot(t, b->addr);
            b->hash_next = h[s];
            h[s] = b;
        }
    }
    cf_host_free(old, old_n * sizeof *old);
    return 0;
}

CF_HOT static void hash_add(struct tlsf *t, struct tlsf_block *b)
{
    /* Load factor 1: chains stay short; a failed doubling only lengthens them. */
    if (t->used_count > t->hash_mask) hash_grow(t);
    uint64_t s = hash_slot(t, b->addr);
    b->hash_next = t->hash[s];
    t->hash[s] = b;
    t->used_count++;
}

static bool hash_del(struct tlsf *t, struct tlsf_block *b)
{
    struct tlsf_block **pp = &t->hash[hash_slot(t, b->addr)];
    for (; *pp; pp = &(*pp)->hash_next) {
        if (*pp == b) {
            *pp = b->hash_next;
            b->hash_next = NULL;
            t->used_count--;
            return true;
        }
    }
    return false;
}

struct tlsf_block *tlsf_lookup(const struct tlsf *t, uint64_t addr)
{
    for (struct tlsf_block *b = t->hash[hash_slot(t, addr)]; b; b = b->hash_next)
        if (b->addr == addr) return b;
    return NULL;
}

void tlsf_unpublish(struct tlsf *t, struct tlsf_block *b)
{
    hash_del(t, b);
}

void tlsf_publish(struct tlsf *t, struct tlsf_block *b)
{
    hash_add(t, b);
}

/* ---- setup ---- */

int tlsf_init(struct tlsf *t)
{
    memset(t, 0, sizeof *t);
    t->hash_mask = 1023;
    t->hash = cf_host_zalloc((t->hash_mask + 1) * sizeof *t->hash);
    return t->hash ? 0 : -1;
}

void tlsf_destroy(struct tlsf *t)
{
    while (t->slabs) {
        struct tlsf_slab *next = t->slabs->next;
        cf_host_free(t->slabs, sizeof *t->slabs);
        t->slabs = next;
    }
    if (t->hash) cf_host_free(t->hash, (t->hash_mask + 1) * sizeof *t->hash);
    if (t->regions) cf_host_free(t->regions, t->region_cap * sizeof *t->regions);
    memset(t, 0, sizeof *t);
}

int tlsf_add_region(struct tlsf *t, uint64_t addr, uint64_t size)
{
    if (size < TLSF_ALIGN || (addr | size) & (TLSF_ALIGN - 1)) return -1;
    if (t->nregions == t->region_cap) {
        uint32_t cap = t->region_cap ? t->region_cap * 2 : 8;
        struct tlsf_region *r = cf_host_zalloc(cap * sizeof *r);
        if (r == NULL) return -1;
        if (t->regions) {
            memcpy(r, t->regions, t->nregions * sizeof *r);
            cf_host_free(t->regions, t->region_cap * sizeof *r);
        }
        t->regions = r;
        t->region_cap = cap;
    }
    struct tlsf_block *b = record_get(t);
    if (b == NULL) return -1;
    b->addr = addr;
    b->size = size;
    list_insert(t, b);
    t->regions[t->nregions++] = (struct tlsf_region){addr, size, b};
    t->total += size;
    return 0;
}

uint64_t tlsf_remove_region(struct tlsf *t, uint64_t addr)
{
    for (uint32_t i = 0; i < t->nregions; i++) {
        struct tlsf_region *r = &t->regions[i];
        if (r->addr != addr) continue;
        struct tlsf_block *b = r->first;
        if (b->state != TLSF_FREE || b->size != r->size) return 0;
        uint64_t size = r->size;
        list_remove(t, b);
        record_put(t, b);
        t->total -= size;
        *r = t->regions[--t->nregions];
        return size;
    }
    return 0;
}

/* ---- allocate and free ---- */

CF_HOT struct tlsf_block *tlsf_alloc(struct tlsf *t, uint64_t size)
{
    size = tlsf_round(size);
    uint64_t want = size ? search_round(size) : 0;
    if (want == 0) return NULL;
    struct tlsf_block *b = find_suitable(t, want);
    if (b == NULL) return NULL;
    if (b->size - size >= TLSF_ALIGN) {
        struct tlsf_block *rest = record_get(t);
        if (rest == NULL) return NULL;
        list_remove(t, b);
        rest->addr = b->addr + size;
        rest->size = b->size - size;
        rest->phys_prev = b;
        rest->phys_next = b->phys_next;
        if (b->phys_next) b->phys_next->phys_prev = rest;
        b->phys_next = rest;
        b->size = size;
        list_insert(t, rest);
    } else {
        list_remove(t, b);
    }
    b->state = TLSF_USED;
    b->user[0] = b->user[1] = 0;
    t->used_bytes += b->size;
    hash_add(t, b);
    return b;
}

/* Fold next (free, physically after b) into b and drop next's record. */
static void absorb_next(struct tlsf *t, struct tlsf_block *b, struct tlsf_block *next)
{
    b->size += next->size;
    b->phys_next = next->phys_next;
    if (next->phys_next) next->phys_next->phys_prev = b;
    record_put(t, next);
}

CF_HOT struct tlsf_block *tlsf_free(struct tlsf *t, struct tlsf_block *b)
{
    hash_del(t, b);
    t->used_bytes -= b->size;
    struct tlsf_block *next = b->phys_next, *prev = b->phys_prev;
    if (next && next->state == TLSF_FREE) {
        list_remove(t, next);
        absorb_next(t, b, next);
    }
    if (prev && prev->state == TLSF_FREE) {
        list_remove(t, prev);
        absorb_next(t, prev, b);
        b = prev;
    }
    list_insert(t, b);
    return b;
}

uint64_t tlsf_largest_free(const struct tlsf *t)
{
    if (t->fl_bitmap == 0) return 0;
    int fl = msb64(t->fl_bitmap);
    int sl = 31 - __builtin_clz(t->sl_bitmap[fl]);
    uint64_t best = 0;
    for (const struct tlsf_block *b = t->heads[fl][sl]; b; b = b->link_next)
        if (b->size > best) best = b->size;
    return best;
}

/* ---- invariant checker ---- */

#define CHECK_FAIL(...)                                                                            \
    do {                                                                                           \
        if (fails++ < 8) fprintf(stderr, "tlsf_check: " __VA_ARGS__);                              \
    } while (0)

static int check_lists(const struct tlsf *t, uint64_t *listed_bytes, uint64_t *listed_count)
{
    int fails = 0;
    for (int fl = 0; fl < TLSF_FL_COUNT; fl++) {
        bool fl_bit = t->fl_bitmap >> fl & 1;
        if (fl_bit != (t->sl_bitmap[fl] != 0)) CHECK_FAIL("fl bit %d disagrees\n", fl);
        for (int sl = 0; sl < TLSF_SL_COUNT; sl++) {
            const struct tlsf_block *head = t->heads[fl][sl];
            if ((head != NULL) != (bool)(t->sl_bitmap[fl] >> sl & 1))
                CHECK_FAIL("sl bit %d/%d disagrees with its list\n", fl, sl);
            for (const struct tlsf_block *b = head; b; b = b->link_next) {
                int bfl, bsl;
                mapping(b->size, &bfl, &bsl);
                if (bfl != fl || bsl != sl)
                    CHECK_FAIL("block %#llx in wrong list\n", (unsigned long long)b->addr);
                if (b->state != TLSF_FREE) CHECK_FAIL("non-free block in a free list\n");
                if (b->link_next && b->link_next->link_prev != b) CHECK_FAIL("broken links\n");
                *listed_bytes += b->size;
                ++*listed_count;
            }
        }
    }
    return fails;
}

static int check_region(const struct tlsf *t, const struct tlsf_region *r, uint64_t *sums)
{
    int fails = 0;
    uint64_t at = r->addr;
    const struct tlsf_block *prev = NULL;
    for (const struct tlsf_block *b = r->first; b; prev = b, b = b->phys_next) {
        if (b->addr != at) CHECK_FAIL("gap or overlap at %#llx\n", (unsigned long long)at);
        if ((b->addr | b->size) & (TLSF_ALIGN - 1) || b->size == 0)
            CHECK_FAIL("misaligned block %#llx\n", (unsigned long long)b->addr);
        if (b->phys_prev != prev) CHECK_FAIL("broken physical links\n");
        if (prev && prev->state == TLSF_FREE && b->state == TLSF_FREE)
            CHECK_FAIL("adjacent free blocks at %#llx\n", (unsigned long long)b->addr);
        if (b->state == TLSF_FREE)
            sums[0] += b->size;
        else if (b->state == TLSF_USED)
            sums[1] += b->size;
        else
            CHECK_FAIL("block record in a bad state\n");
        at = b->addr + b->size;
    }
    if (at != r->addr + r->size)
        CHECK_FAIL("region %#llx not covered\n", (unsigned long long)r->addr);
    return fails;
}

int tlsf_check(const struct tlsf *t)
{
    int fails = 0;
    uint64_t listed = 0, nlisted = 0, sums[2] = {0, 0}, total = 0;
    fails += check_lists(t, &listed, &nlisted);
    for (uint32_t i = 0; i < t->nregions; i++) {
        fails += check_region(t, &t->regions[i], sums);
        total += t->regions[i].size;
    }
    if (listed != sums[0] || listed != t->free_bytes || nlisted != t->free_count)
        CHECK_FAIL("free bytes: lists %llu, regions %llu, counter %llu\n",
                   (unsigned long long)listed, (unsigned long long)sums[0],
                   (unsigned long long)t->free_bytes);
    if (sums[0] + sums[1] != total || total != t->total)
        CHECK_FAIL("sizes sum to %llu, total %llu\n", (unsigned long long)(sums[0] + sums[1]),
                   (unsigned long long)t->total);
    if (sums[1] != t->used_bytes) CHECK_FAIL("used bytes disagree\n");
    return fails;
}
