/* The per-thread guard every wrapper takes, so that one user call is recorded once:
 * cudaMalloc in libcudart reaches the driver through our cuMemAlloc_v2 wrapper,
 * which then sees the guard set and passes straight through. */
#ifndef CF_HOOK_GUARD_H
#define CF_HOOK_GUARD_H

#include "base/export.h"

#include "record/record.h"
#include "base/thread_state.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* Nanoseconds the last timed real call took on this thread (for the report's
 * per-API time), read by the note functions right after the call. */
extern __thread uint64_t cf_call_ns __attribute__((tls_model("initial-exec")));
/* When that call returned: the time of its event, so the record reads no clock of
 * its own (a clock read is a visible share of the per-call cost, see
 * src/base/clock.c). Taken (and cleared) by cf_call_end(). */
extern __thread uint64_t cf_call_end_ns __attribute__((tls_model("initial-exec")));

/* The end of the last timed call, once: 0 when no timed call is pending, and the
 * record then reads the clock itself. */
static inline uint64_t cf_call_end(void)
{
    uint64_t t = cf_call_end_ns;
    cf_call_end_ns = 0;
    return t;
}

/* CUDAFRAG_ENABLE (parsed once, then a load). */
bool cf_hook_enabled(void);

/* Set at the program's first recorded CUDA call, by cf_hook_first_call: what waits
 * for the program to use CUDA (the SIGUSR1 handler) starts there. */
extern bool cf_hook_call_seen;
CF_COLD void cf_hook_first_call(void);

/* True when this call must be recorded: the guard is now taken and the caller must
 * cf_hook_end(). False: pure pass-through. */
static inline bool cf_hook_begin(void)
{
    if (cf_in_hook || CF_UNLIKELY(!cf_hook_enabled())) return false;
    cf_in_hook = true;
    if (CF_UNLIKELY(!__atomic_load_n(&cf_hook_call_seen, __ATOMIC_RELAXED))) cf_hook_first_call();
    return true;
}

static inline void cf_hook_end(void)
{
    cf_in_hook = false;
}

/* rc = call, timed into cf_call_ns (at least 1: 0 means "not timed") and
 * cf_call_end_ns. */
#define CF_TIMED(rc, call)                                                                         \
    do {                                                                                           \
        uint64_t cf_t0_ = cf_now_ns();                                                             \
        rc = (call);                                                                               \
        cf_call_end_ns = cf_now_ns();                                                              \
        cf_call_ns = cf_call_end_ns - cf_t0_ + (cf_call_end_ns == cf_t0_);                         \
    } while (0)

/* A stream-ordered allocation or free only queues work: on the H200 it returns in
 * about half a microsecond, and a clock read costs 20 ns, so reading the clock on
 * both sides of each took a tenth of its time again (docs/performance.md). One in
 * cf_time_one_in of them (CUDAFRAG_TIME_ONE_IN) is timed, chosen by a per-thread
 * xorshift so that no period of the program's own lines up with it; the others
 * read the clock once, for their event's time. Set before the first recorded call
 * (1 until then: every call timed). */
extern uint32_t cf_time_one_in;
extern __thread uint32_t cf_time_rng __attribute__((tls_model("initial-exec")));
CF_COLD uint32_t cf_time_seed(void); /* a thread's first state: threads draw apart */

static inline bool cf_time_this(void)
{
    uint32_t x = cf_time_rng;
    if (CF_UNLIKELY(x == 0)) x = cf_time_seed();
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    cf_time_rng = x;
    /* x is uniform over [1, 2^32): true with probability 1/N, without a division. */
    return ((uint64_t)x * __atomic_load_n(&cf_time_one_in, __ATOMIC_RELAXED)) >> 32 == 0;
}

/* CF_TIMED for 1 in cf_time_one_in calls; otherwise cf_call_ns is 0 and the event
 * is stamped with the call's end. */
#define CF_TIMED_SAMPLED(rc, call)                                                                 \
    do {                                                                                           \
        if (cf_time_this()) {                                                                      \
            CF_TIMED(rc, call);                                                                    \
        } else {                                                                                   \
            rc = (call);                                                                           \
            cf_call_end_ns = cf_now_ns();                                                          \
            cf_call_ns = 0;                                                                        \
        }                                                                                          \
    } while (0)

/* rc = call, or plain when passing through; after a successful call, the remaining
 * argument with the guard held and the real call's errno restored. For calls that
 * are not recorded themselves but mark a moment the record reads the driver at
 * (synchronizations, graph launches): no timing, no event. */
#define CF_AFTER_SUCCESS(rc, call, plain, ...)                                                     \
    do {                                                                                           \
        if (!cf_hook_begin()) {                                                                    \
            rc = (plain);                                                                          \
            break;                                                                                 \
        }                                                                                          \
        rc = (call);                                                                               \
        int cf_saved_errno_ = errno;                                                               \
        if (rc == 0) __VA_ARGS__;                                                                  \
        errno = cf_saved_errno_;                                                                   \
        cf_hook_end();                                                                             \
    } while (0)

/* rc = call; then, unless passing through, run the remaining argument (the recording) with the
 * guard held and the errno of the real call restored afterwards. */
#define CF_WRAP(rc, call, ...)                                                                     \
    do {                                                                                           \
        if (!cf_hook_begin()) {                                                                    \
            rc = (call);                                                                           \
            break;                                                                                 \
        }                                                                                          \
        CF_TIMED(rc, call);                                                                        \
        int cf_saved_errno_ = errno;                                                               \
        __VA_ARGS__;                                                                               \
        errno = cf_saved_errno_;                                                                   \
        cf_hook_end();                                                                             \
    } while (0)

#endif
