#include "arena/gmap.h"
#include "arena/hostmem.h"
#include "base/export.h"

#include <string.h>

int cf_gmap_init(struct cf_gmap *g, uint64_t base, uint64_t size, uint64_t granule)
{
    memset(g, 0, sizeof *g);
    if (granule == 0 || (granule & (granule - 1)) || size < granule) return -1;
    g->base = base;
    g->shift = (uint32_t)__builtin_ctzll(granule);
    g->count = size >> g->shift;
    g->refs = cf_host_zalloc(g->count * sizeof *g->refs);
    g->head = cf_host_zalloc(g->count * sizeof *g->head);
    g->len = cf_host_zalloc(g->count * sizeof *g->len);
    if (g->refs && g->head && g->len) return 0;
    cf_gmap_destroy(g);
    return -1;
}

void cf_gmap_destroy(struct cf_gmap *g)
{
    cf_host_free(g->refs, g->count * sizeof *g->refs);
    cf_host_free(g->head, g->count * sizeof *g->head);
    cf_host_free(g->len, g->count * sizeof *g->len);
    memset(g, 0, sizeof *g);
}

/* Granule index range [*lo, *hi) touched by [addr, addr+size). */
static void span(const struct cf_gmap *g, uint64_t addr, uint64_t size, uint64_t *lo, uint64_t *hi)
{
    *lo = (addr - g->base) >> g->shift;
    *hi = (addr - g->base + size + cf_gmap_granule(g) - 1) >> g->shift;
    if (*hi > g->count) *hi = g->count;
}

static bool granule_mapped(const struct cf_gmap *g, uint64_t i)
{
    return g->len[g->head[i]] != 0 && g->head[i] <= i && i < g->head[i] + g->len[g->head[i]];
}

CF_HOT void cf_gmap_hold(struct cf_gmap *g, uint64_t addr, uint64_t size, int delta)
{
    uint64_t lo, hi;
    span(g, addr, size, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++)
        g->refs[i] += (uint32_t)delta;
}

bool cf_gmap_is_mapped(const struct cf_gmap *g, uint64_t addr, uint64_t size)
{
    uint64_t lo, hi;
    span(g, addr, size, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++)
        if (!granule_mapped(g, i)) return false;
    return true;
}

CF_HOT bool cf_gmap_next_unmapped(const struct cf_gmap *g, uint64_t addr, uint64_t size,
                                  uint64_t *run_addr, uint64_t *run_bytes)
{
    uint64_t lo, hi;
    span(g, addr, size, &lo, &hi);
    while (lo < hi && granule_mapped(g, lo))
        lo++;
    if (lo == hi) return false;
    uint64_t n = 1, max = cf_gmap_chunk_granules(g);
    while (lo + n < hi && n < max && !granule_mapped(g, lo + n))
        n++;
    *run_addr = g->base + (lo << g->shift);
    *run_bytes = n << g->shift;
    return true;
}

CF_HOT uint64_t cf_gmap_unmapped_bytes(const struct cf_gmap *g, uint64_t addr, uint64_t size)
{
    uint64_t lo, hi, n = 0;
    span(g, addr, size, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++)
        n += !granule_mapped(g, i);
    return n << g->shift;
}

uint64_t cf_gmap_chunk_granules(const struct cf_gmap *g)
{
    uint64_t n = (g->peak_bytes >> g->shift) / 16;
    return n < 1 ? 1 : n > CF_GMAP_CHUNK_MAX ? CF_GMAP_CHUNK_MAX : n;
}

void cf_gmap_set_mapped(struct cf_gmap *g, uint64_t run_addr, uint64_t run_bytes)
{
    uint64_t lo = (run_addr - g->base) >> g->shift, n = run_bytes >> g->shift;
    for (uint64_t i = lo; i < lo + n; i++)
        g->head[i] = (uint32_t)lo;
    g->len[lo] = (uint8_t)n;
    g->mapped_bytes += run_bytes;
    if (g->mapped_bytes > g->peak_bytes) g->peak_bytes = g->mapped_bytes;
    if (lo + n > g->hi) g->hi = lo + n;
}

bool cf_gmap_next_idle_chunk(const struct cf_gmap *g, uint64_t *cursor, uint64_t *chunk_addr,
                             uint64_t *chunk_bytes)
{
    uint64_t i = *cursor == UINT64_MAX ? g->hi : (*cursor - g->base) >> g->shift;
    while (i > 0) {
        i--;
        if (!granule_mapped(g, i)) continue;
        uint64_t h = g->head[i], n = g->len[h];
        bool idle = true;
        for (uint64_t k = h; k < h + n && idle; k++)
            idle = g->refs[k] == 0;
        i = h;
        if (!idle) continue;
        *cursor = g->base + (h << g->shift);
        *chunk_addr = *cursor;
        *chunk_bytes = n << g->shift;
        return true;
    }
    *cursor = g->base;
    return false;
}

void cf_gmap_set_unmapped(struct cf_gmap *g, uint64_t chunk_addr)
{
    uint64_t h = (chunk_addr - g->base) >> g->shift;
    g->mapped_bytes -= (uint64_t)g->len[h] << g->shift;
    g->len[h] = 0;
}

/* Mapped free bytes of one free block: adds each maximal mapped run to *total
 * and raises *largest. */
static void free_block_runs(const struct cf_gmap *g, uint64_t addr, uint64_t end, uint64_t *total,
                            uint64_t *largest)
{
    uint64_t run = 0;
    while (addr < end) {
        uint64_t i = (addr - g->base) >> g->shift;
        uint64_t next = g->base + ((i + 1) << g->shift);
        if (next > end) next = end;
        if (i < g->count && granule_mapped(g, i)) {
            run += next - addr;
            *total += next - addr;
            if (run > *largest) *largest = run;
        } else {
            run = 0;
        }
        addr = next;
    }
}

double cf_gmap_ext_frag(const struct cf_gmap *g, const struct tlsf_block *first)
{
    uint64_t limit = g->base + (g->hi << g->shift), total = 0, largest = 0;
    for (const struct tlsf_block *b = first; b && b->addr < limit; b = b->phys_next) {
        if (b->state != TLSF_FREE) continue;
        uint64_t end = b->addr + b->size < limit ? b->addr + b->size : limit;
        free_block_runs(g, b->addr, end, &total, &largest);
    }
    return total ? 1.0 - (double)largest / (double)total : 0.0;
}
