/* What only the simulator can tell: the statistics of simcuda.h, and
 * SIMCUDA_STATS_OUT for tests that compare a profiler with the true footprint. */
#include "sim.h"
#include "simcuda.h"

#include <stdio.h>
#include <stdlib.h>

SIM_API int simcudaGetStats(int device, struct simcuda_stats *out)
{
    if (!sim_ready() || device < 0 || device >= sim.ndevices || !out) return -1;
    sim_lock();
    struct sim_device *d = &sim.dev[device];
    out->pages_total = d->npages;
    out->pages_used = d->pages_used;
    out->largest_free_run_pages = sim_phys_largest_free_run(d);
    out->pool_reserved = sim_pools_reserved(d);
    out->vmm_physical = d->vmm_physical;
    out->graph_reserved = d->graph_reserved;
    out->alloc_calls = d->alloc_calls;
    out->free_calls = d->free_calls;
    out->pages_peak = d->pages_peak;
    sim_unlock();
    return 0;
}

SIM_API unsigned long long simcudaHazardCount(void)
{
    sim_lock();
    unsigned long long n = sim.hazards;
    sim_unlock();
    return n;
}

/* SIMCUDA_STATS_OUT=FILE: at exit, one line per device with its true peak and its
 * successful allocations and frees, so a test can hold a profiler's figures
 * against what the device really did ("device D pages_peak N pages_used M
 * page_bytes P alloc_calls A free_calls F"; new fields go at the end). */
__attribute__((destructor)) static void write_stats_out(void)
{
    const char *path = getenv("SIMCUDA_STATS_OUT");
    if (!path || !*path || !sim_ready()) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    sim_lock();
    for (int i = 0; i < sim.ndevices; i++)
        fprintf(f,
                "device %d pages_peak %u pages_used %u page_bytes %llu alloc_calls %llu "
                "free_calls %llu\n",
                i, sim.dev[i].pages_peak, sim.dev[i].pages_used, (unsigned long long)SIM_PAGE,
                sim.dev[i].alloc_calls, sim.dev[i].free_calls);
    sim_unlock();
    fclose(f);
}
