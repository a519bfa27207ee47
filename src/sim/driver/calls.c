/* Call counters of the query entry points a profiler might make on every
 * intercepted call (which device is current, is this stream capturing, which
 * pool). Tests compare the counts of a program run with and without a preloaded
 * profiler to see how many driver calls the profiler adds per call. */
#include "sim.h"
#include "simcuda.h"

#include <string.h>

static unsigned long long counts[SIM_COUNTED_N];

static const char *const names[SIM_COUNTED_N] = {
#define SIM_COUNTED_NAME(name) [SIM_COUNT_##name] = #name,
    SIM_COUNTED_CALLS(SIM_COUNTED_NAME)
#undef SIM_COUNTED_NAME
};

void sim_count_call(enum sim_counted which)
{
    __atomic_add_fetch(&counts[which], 1, __ATOMIC_RELAXED);
}

SIM_API unsigned long long simcudaCallCount(const char *name)
{
    for (int i = 0; name != NULL && i < SIM_COUNTED_N; i++)
        if (strcmp(names[i], name) == 0) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return ~0ull;
}
