/* Device virtual address space: one lazily backed host mapping per device,
 * carved into 2 MiB units. Each unit records the region that owns it, so
 * any address inside a device range is resolved in constant time. */
#include "sim.h"

#include <stdlib.h>
#include <sys/mman.h>

static int units_free(struct sim_device *d, uint32_t first, uint32_t n)
{
    if (first + (uint64_t)n > d->va_units) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (d->unit_owner[first + i]) return 0;
    return 1;
}

/* First fit, as an H200 does: a block freed and asked for again gets its
 * old address back. va_hint is the lowest unit that may be free. */
static int find_units(struct sim_device *d, uint32_t n, uint32_t align, uint32_t *out)
{
    while (d->va_hint < d->va_units && d->unit_owner[d->va_hint])
        d->va_hint++;
    for (uint32_t i = SIM_ROUND_UP(d->va_hint, align); i + (uint64_t)n <= d->va_units; i += align) {
        if (!units_free(d, i, n)) continue;
        *out = i;
        return 0;
    }
    return -1;
}

struct sim_region *sim_region_new(struct sim_device *d, enum sim_region_kind kind, size_t size,
                                  size_t align, uintptr_t hint)
{
    uint32_t n = (uint32_t)(SIM_ROUND_UP(size, SIM_PAGE) / SIM_PAGE);
    uint32_t au = align > SIM_PAGE ? (uint32_t)(SIM_ROUND_UP(align, SIM_PAGE) / SIM_PAGE) : 1;
    uint32_t first;
    if (n == 0 || n > d->va_units) return NULL;
    if (hint >= d->va_base && hint < d->va_base + d->va_size &&
        (hint - d->va_base) % SIM_PAGE == 0 && ((hint - d->va_base) / SIM_PAGE) % au == 0 &&
        units_free(d, (uint32_t)((hint - d->va_base) / SIM_PAGE), n))
        first = (uint32_t)((hint - d->va_base) / SIM_PAGE);
    else if (find_units(d, n, au, &first) != 0)
        return NULL;
    struct sim_region *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->kind = kind;
    r->dev = d;
    r->base = d->va_base + (uintptr_t)first * SIM_PAGE;
    r->size = (size_t)n * SIM_PAGE;
    r->phys.first = SIM_NO_RUN;
    for (uint32_t i = 0; i < n; i++)
        d->unit_owner[first + i] = r;
    return r;
}

void sim_discard(uintptr_t base, size_t size)
{
    madvise((void *)base, size, MADV_DONTNEED);
}

void sim_region_free(struct sim_region *r)
{
    struct sim_device *d = r->dev;
    uint32_t first = (uint32_t)((r->base - d->va_base) / SIM_PAGE);
    uint32_t n = (uint32_t)(r->size / SIM_PAGE);
    for (uint32_t i = 0; i < n; i++)
        d->unit_owner[first + i] = NULL;
    if (first < d->va_hint) d->va_hint = first;
    if (r->has_phys) sim_phys_free(d, &r->phys);
    sim_discard(r->base, r->size);
    free(r->slot_start);
    free(r->slot_bytes);
    free(r);
}

struct sim_device *sim_device_of_addr(uintptr_t addr)
{
    for (int i = 0; i < sim.ndevices; i++) {
        struct sim_device *d = &sim.dev[i];
        if (addr >= d->va_base && addr < d->va_base + d->va_size) return d;
    }
    return NULL;
}

struct sim_region *sim_region_find(uintptr_t addr)
{
    struct sim_device *d = sim_device_of_addr(addr);
    if (!d) return NULL;
    return d->unit_owner[(addr - d->va_base) / SIM_PAGE];
}
