/* Timestamps and thread ids cheap enough for the hook path (clock.c). */
#ifndef CF_BASE_CLOCK_H
#define CF_BASE_CLOCK_H

#include <stdint.h>

#include "base/export.h"

#if defined(__x86_64__)
/* The compiler's builtin, not <x86intrin.h>'s __rdtsc: that header brings every
 * vector intrinsic (1.8 MB of declarations) into each file that reads the clock,
 * most of the core's, and tripled their compile time. */
#define cf_rdtsc() __builtin_ia32_rdtsc()

/* The TSC's scale once calibrated (clock.c). Read inline: the hook path reads the
 * clock once or twice per call, and a call into clock.c for each cost
 * instructions and a code line of its own. */
struct cf_clock_cal {
    int state; /* CF_CLOCK_READY once tsc0, ns0 and mult are set */
    uint64_t tsc0, ns0;
    uint64_t mult; /* ns per tick, as a 32.32 fixed-point number */
};
#define CF_CLOCK_READY 3
extern struct cf_clock_cal cf_clock_cal;
uint64_t cf_now_ns_slow(void); /* before calibration, or without an invariant TSC */

/* Nanoseconds on CLOCK_MONOTONIC's scale (the invariant TSC where there is one). */
static inline uint64_t cf_now_ns(void)
{
    if (CF_LIKELY(__atomic_load_n(&cf_clock_cal.state, __ATOMIC_ACQUIRE) == CF_CLOCK_READY)) {
        uint64_t ticks = cf_rdtsc() - cf_clock_cal.tsc0;
        return cf_clock_cal.ns0 + (uint64_t)(((unsigned __int128)ticks * cf_clock_cal.mult) >> 32);
    }
    return cf_now_ns_slow();
}
#else
/* Nanoseconds on CLOCK_MONOTONIC's scale. */
uint64_t cf_now_ns(void);
#endif
/* One instant on both clocks (CLOCK_REALTIME and the event clock above), taken
 * at the first call: the trace's header and every report put events on the wall
 * clock with the same pair, so a report and its trace's replay agree. */
void cf_clock_wall_base(uint64_t *realtime_ns, uint64_t *event_ns);
/* The kernel thread id, cached per thread. */
uint32_t cf_tid(void);
/* In the child after fork: the cached id is the parent thread's. */
void cf_tid_forget(void);

#endif
