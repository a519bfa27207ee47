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

/* rc = call, timed into cf_call_ns and cf_call_end_ns. */
#define CF_TIMED(rc, call)                                                                         \
    do {                                                                                           \
        uint64_t cf_t0_ = cf_now_ns();                                                             \
        rc = (call);                                                                               \
        cf_call_end_ns = cf_now_ns();                                                              \
        cf_call_ns = cf_call_end_ns - cf_t0_;                                                      \
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
