/* Timestamps and thread ids for every record, cheap enough for the hook path.
 *
 * A wrapper reads the clock around the real call (the record takes its event
 * time from one of the reads; a stream-ordered call that is not timed reads it
 * once, guard.h), so the clock is a visible share of the per-call
 * overhead: the vDSO's clock_gettime measured 35 ns here, a bare rdtsc 14 ns.
 * Where the CPU has an invariant TSC, timestamps are the TSC scaled to
 * nanoseconds, calibrated against CLOCK_MONOTONIC over the first 20 ms; until
 * then, and elsewhere, they are CLOCK_MONOTONIC itself. The calibrated read is
 * inline (clock.h); this file calibrates. */
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "base/clock.h"
#include "base/export.h"

#include <stdbool.h>

#define CALIBRATION_NS 20000000u

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
enum { CAL_NONE, CAL_MEASURING, CAL_COMPUTING, CAL_READY = CF_CLOCK_READY, CAL_UNUSABLE };
struct cf_clock_cal cf_clock_cal;

static bool invariant_tsc(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
}

CF_COLD static uint64_t calibrate(void)
{
    uint64_t now = monotonic_ns(), tsc = cf_rdtsc();
    int st = __atomic_load_n(&cf_clock_cal.state, __ATOMIC_ACQUIRE);
    if (st == CAL_NONE) {
        if (__atomic_compare_exchange_n(&cf_clock_cal.state, &st, CAL_COMPUTING, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            cf_clock_cal.tsc0 = tsc;
            cf_clock_cal.ns0 = now;
            __atomic_store_n(&cf_clock_cal.state, invariant_tsc() ? CAL_MEASURING : CAL_UNUSABLE,
                             __ATOMIC_RELEASE);
        }
    } else if (st == CAL_MEASURING && now - cf_clock_cal.ns0 >= CALIBRATION_NS &&
               tsc > cf_clock_cal.tsc0) {
        if (__atomic_compare_exchange_n(&cf_clock_cal.state, &st, CAL_COMPUTING, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            cf_clock_cal.mult = (uint64_t)((((unsigned __int128)(now - cf_clock_cal.ns0)) << 32) /
                                           (tsc - cf_clock_cal.tsc0));
            __atomic_store_n(&cf_clock_cal.state, CAL_READY, __ATOMIC_RELEASE);
        }
    }
    return now;
}

uint64_t cf_now_ns_slow(void)
{
    if (__atomic_load_n(&cf_clock_cal.state, __ATOMIC_ACQUIRE) == CAL_READY) return cf_now_ns();
    if (__atomic_load_n(&cf_clock_cal.state, __ATOMIC_RELAXED) == CAL_UNUSABLE)
        return monotonic_ns();
    return calibrate();
}
#else
uint64_t cf_now_ns(void)
{
    return monotonic_ns();
}
#endif

/* initial-exec: libcudafrag is preloaded, so its TLS is static and reading it never
 * goes through __tls_get_addr (which may allocate). */
static __thread uint32_t cached_tid __attribute__((tls_model("initial-exec")));

uint32_t cf_tid(void)
{
    if (CF_UNLIKELY(cached_tid == 0)) cached_tid = (uint32_t)syscall(SYS_gettid);
    return cached_tid;
}

void cf_tid_forget(void)
{
    /* The child of fork() runs on a copy of the parent's thread with a new id. */
    cached_tid = 0;
}

static uint64_t wall_base_realtime, wall_base_event;
static pthread_once_t wall_base_once = PTHREAD_ONCE_INIT;

/* The wall clock read between two reads of the event clock, taken at their middle. */
static void take_wall_base(void)
{
    struct timespec wall;
    uint64_t before = cf_now_ns();
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t after = cf_now_ns();
    wall_base_realtime = (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec;
    wall_base_event = before + (after - before) / 2;
}

void cf_clock_wall_base(uint64_t *realtime_ns, uint64_t *event_ns)
{
    pthread_once(&wall_base_once, take_wall_base);
    *realtime_ns = wall_base_realtime;
    *event_ns = wall_base_event;
}
