/* Physical pages of 2 MiB. Paged mode behaves like a real GPU's page tables:
 * any free pages will do, so only the count matters. Contiguous mode needs
 * one run of free pages (first fit), which fails under fragmentation even
 * when enough pages are free in total. */
#include "sim.h"

#include <string.h>

static int find_run(struct sim_device *d, uint32_t n, uint32_t *first)
{
    uint32_t run = 0;
    for (uint32_t i = 0; i < d->npages; i++) {
        if (d->page_map[i]) {
            run = 0;
            continue;
        }
        if (++run == n) {
            *first = i + 1 - n;
            return 0;
        }
    }
    return -1;
}

int sim_phys_alloc(struct sim_device *d, uint32_t n, struct sim_phys *out)
{
    if (n == 0 || n > d->npages - d->pages_used) return -1;
    out->count = n;
    out->first = SIM_NO_RUN;
    if (sim.contiguous) {
        if (find_run(d, n, &out->first) != 0) return -1;
        memset(d->page_map + out->first, 1, n);
    }
    d->pages_used += n;
    if (d->pages_used > d->pages_peak) d->pages_peak = d->pages_used;
    return 0;
}

void sim_phys_free(struct sim_device *d, struct sim_phys *p)
{
    if (p->count == 0) return;
    if (p->first != SIM_NO_RUN) memset(d->page_map + p->first, 0, p->count);
    d->pages_used -= p->count;
    p->count = 0;
    p->first = SIM_NO_RUN;
}

uint32_t sim_phys_largest_free_run(struct sim_device *d)
{
    if (!sim.contiguous) return d->npages - d->pages_used;
    uint32_t best = 0, run = 0;
    for (uint32_t i = 0; i < d->npages; i++) {
        run = d->page_map[i] ? 0 : run + 1;
        if (run > best) best = run;
    }
    return best;
}
