/* A lock in two 32-bit words (the lock and its sleeper count), for the locks the
 * hot path takes. A call site's, a pool's, a live-table shard's and a device's
 * lock sit in the same cache line as the figures they guard: an intercepted call
 * that takes the lock has already fetched the data. pthread_mutex_t is 40 bytes
 * (a line of its own beside a node's fields) and is taken through a call into
 * libc.
 *
 * Uncontended, taking is one compare-and-swap and releasing a plain store and a
 * load: no second locked instruction, which glibc's mutex spends on an exchange
 * to learn whether a sleeper needs waking (a locked instruction costs about 9 ns
 * on the H200's host, docs/performance.md). Contended, a waiter spins briefly,
 * then counts itself in `sleepers` and sleeps on a futex (never a pure
 * spinlock: a holder preempted on a busy machine would keep the waiters spinning
 * for a whole time slice); a release that sees a sleeper wakes one. Without a
 * fence between the release's store and its load of `sleepers`, a waiter that
 * counts itself in that instant is not woken: it sleeps with a timeout of 100 us
 * and tries again. No allocation, no errno change. */
#ifndef CF_RECORD_LOCK_H
#define CF_RECORD_LOCK_H

#include <stdbool.h>

#include "base/export.h"

/* v: 0 free, 1 held. sleepers: the waiters asleep on v, or about to be. */
struct cf_lock {
    int v;
    int sleepers;
};
#define CF_LOCK_INIT                                                                               \
    {                                                                                              \
        0, 0                                                                                       \
    }

void cf_lock_wait(struct cf_lock *l); /* the contended path of cf_lock */
void cf_lock_wake(struct cf_lock *l); /* wake one sleeper */
struct timespec;
/* Takes l unless deadline (CLOCK_REALTIME) passes first, even when the caller
 * holds it: for the report at exit (report/partial.c), never the hot path. */
bool cf_lock_until(struct cf_lock *l, const struct timespec *deadline);

static inline void cf_lock(struct cf_lock *l)
{
    int free_ = 0;
    if (CF_LIKELY(__atomic_compare_exchange_n(&l->v, &free_, 1, false, __ATOMIC_ACQUIRE,
                                              __ATOMIC_RELAXED)))
        return;
    cf_lock_wait(l);
}

/* True when taken; never waits. */
static inline bool cf_lock_try(struct cf_lock *l)
{
    int free_ = 0;
    return __atomic_compare_exchange_n(&l->v, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void cf_unlock(struct cf_lock *l)
{
    __atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
    if (CF_UNLIKELY(__atomic_load_n(&l->sleepers, __ATOMIC_RELAXED) != 0)) cf_lock_wake(l);
}

#endif
