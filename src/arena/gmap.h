/* Granule map: which granules (2 MiB) of a reserved virtual range are backed by
 * physical memory, and how many held blocks touch each one. Pure bookkeeping,
 * shared by the real arena (which makes the CUDA calls) and the shadow model
 * (which only counts), so both follow one mapping and trimming policy.
 *
 * Granules are mapped in chunks of up to CF_GMAP_CHUNK_MAX granules, one
 * physical allocation per chunk, sized in proportion to what is already mapped
 * (cf_gmap_chunk_granules): a large block costs a few driver calls rather than
 * one per 2 MiB, yet a chunk stays small next to the arena so that trimming can
 * give memory back at a fine grain. A chunk is unmapped only when no held block
 * touches any of its granules. Not thread-safe: the caller locks. */
#ifndef CF_ARENA_GMAP_H
#define CF_ARENA_GMAP_H

#include "arena/tlsf.h"

#include <stdbool.h>
#include <stdint.h>

/* 8 MiB: on a transformer-like trace (bench_arena --trace-arena), chunks of at
 * most 32 / 8 / 4 / 2 MiB gave peak mapped / peak live 1.011 / 1.003 / 1.002 /
 * 1.002 for 0.14 / 0.32 / 0.59 / 1.13 driver calls per allocation; on PyTorch
 * itself, 32 MiB chunks pinned by a few live bytes left 1.12 (H200). */
#define CF_GMAP_CHUNK_MAX 4u

struct cf_gmap {
    uint64_t base, count;              /* first address, granules */
    uint32_t shift;                    /* log2 of the granule size */
    uint32_t *refs;                    /* held blocks touching each granule */
    uint32_t *head;                    /* mapped granule: index of its chunk's first granule */
    uint8_t *len;                      /* at a chunk head: granules in the chunk; 0 = unmapped */
    uint64_t mapped_bytes, peak_bytes; /* peak: sets the chunk size */
    uint64_t hi;                       /* one past the highest granule ever mapped: bounds scans */
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
 * cf_gmap_chunk_granules() long: its address and length in bytes. False if none. */
bool cf_gmap_next_unmapped(const struct cf_gmap *g, uint64_t addr, uint64_t size,
                           uint64_t *run_addr, uint64_t *run_bytes);
/* Bytes of the granules touched by [addr, addr+size) that are not mapped. */
uint64_t cf_gmap_unmapped_bytes(const struct cf_gmap *g, uint64_t addr, uint64_t size);
/* Granules per chunk: a sixteenth of the most ever mapped, between 1 and
 * CF_GMAP_CHUNK_MAX. Small arenas grow (and can give back) in single
 * granules, so idle memory between live blocks is never pinned by a large
 * chunk; large ones in big steps, where a sixteenth is still a small fraction
 * and the driver calls per allocation stay few. The peak rather than the
 * current size: an arena trimmed down between bursts maps the next burst in
 * the steps its size calls for (measured: 27 k instead of 37 k driver calls on
 * the video workload, same footprint). */
uint64_t cf_gmap_chunk_granules(const struct cf_gmap *g);
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
