/* Call counters of the query entry points a profiler might make on every
 * intercepted call (which device is current, is this stream capturing, which
 * pool). Tests compare the counts of a program run with and without a preloaded
 * profiler to see how many driver calls the profiler adds per call.
 *
 * Counting only with SIMCUDA_COUNT_CALLS=1: an atomic add per query would be part
 * of what the interception benchmarks measure (the runtime queries the current
 * context on every call). */
#include "sim.h"
#include "simcuda.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long counts[SIM_COUNTED_N];
static int counting = -1; /* -1: SIMCUDA_COUNT_CALLS not read yet */

static int count_calls(void)
{
    int on = __atomic_load_n(&counting, __ATOMIC_RELAXED);
    if (on < 0) {
        const char *v = getenv("SIMCUDA_COUNT_CALLS");
        on = v != NULL && strcmp(v, "1") == 0;
        __atomic_store_n(&counting, on, __ATOMIC_RELAXED);
    }
    return on;
}

static const char *const names[SIM_COUNTED_N] = {
#define SIM_COUNTED_NAME(name) [SIM_COUNT_##name] = #name,
    SIM_COUNTED_CALLS(SIM_COUNTED_NAME)
#undef SIM_COUNTED_NAME
};

void sim_count_call(enum sim_counted which)
{
    if (count_calls()) __atomic_add_fetch(&counts[which], 1, __ATOMIC_RELAXED);
}

SIM_API unsigned long long simcudaCallCount(const char *name)
{
    if (!count_calls()) return ~0ull;
    for (int i = 0; name != NULL && i < SIM_COUNTED_N; i++)
        if (strcmp(names[i], name) == 0) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return ~0ull;
}
