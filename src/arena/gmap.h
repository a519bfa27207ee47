/* Granule map: which granules (2 MiB) of a reserved virtual range are backed by
 * physical memory, and how many held blocks touch each one. Pure bookkeeping,
 * shared by the real arena (which makes the CUDA calls) and the shadow model
 * (which only counts), so both follow one mapping and trimming policy.
 *
 * Granules are mapped in chunks of up to CF_GMAP_CHUNK_MAX granules, one
 * physical allocation per chunk: a large block costs a few driver calls rather
 * than one per 2 MiB, yet a chunk stays small enough that trimming can give
 * memory back at a fine grain. A chunk is unmapped only when no held block
 * touches any of its granules. Not thread-safe: the caller locks. */
#ifndef CF_ARENA_GMAP_H
#define CF_ARENA_GMAP_H

#include "arena/tlsf.h"

#include <stdbool.h>
#include <stdint.h>

#define CF_GMAP_CHUNK_MAX 16u

struct cf_gmap {
    uint64_t base, count; /* first address, granules */
    uint32_t shift;       /* log2 of the granule size */
    uint32_t *refs;       /* held blocks touching each granule */
    uint32_t *head;       /* mapped granule: index of its chunk's first granule */
    uint8_t *len;         /* at a chunk head: granules in the chunk; 0 = unmapped */
    uint64_t mapped_bytes;
    uint64_t hi; /* one past the highest granule ever mapped: bounds scans */
};

int cf_gmap_init(struct cf_gmap *g, uint64_t base, uint64_t size, uint64_t granule);
void cf_gmap_destroy(struct cf_gmap *g);

static inline uint64_t cf_gmap_granule(const struct cf_gmap *g)
{
    return (uint64_t)1 << g->shift;
}

/* Add delta (+1 or -1) to the hold count of every granule [addr, addr+size) touches. */
void cf_gmap_hold(struct cf_gmap *g, uint64_t addr, uint64_t size, int delta);
bool cf_gmap_is_mapped(const struct cf_gmap *g, uint64_t addr, uint64_t size);
/* First run of unmapped granules touched by [addr, addr+size), at most
 * CF_GMAP_CHUNK_MAX long: its address and length in bytes. False if none. */
bool cf_gmap_next_unmapped(const struct cf_gmap *g, uint64_t addr, uint64_t size,
                           uint64_t *run_addr, uint64_t *run_bytes);
void cf_gmap_set_mapped(struct cf_gmap *g, uint64_t run_addr, uint64_t run_bytes);
/* Next mapped chunk below *cursor (an address; start with UINT64_MAX) that no
 * held block touches, scanning downwards so the top of the arena empties first. */
bool cf_gmap_next_idle_chunk(const struct cf_gmap *g, uint64_t *cursor, uint64_t *chunk_addr,
                             uint64_t *chunk_bytes);
void cf_gmap_set_unmapped(struct cf_gmap *g, uint64_t chunk_addr);

/* External fragmentation of the free space inside mapped memory:
 * 1 - largest free mapped run / total free mapped bytes (0 when none is free).
 * Walks the region's blocks up to the highest mapped granule. */
double cf_gmap_ext_frag(const struct cf_gmap *g, const struct tlsf_block *first);

#endif
