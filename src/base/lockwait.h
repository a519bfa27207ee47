/* Lock waits with an end, for code that runs at exit: exit() may be called by a
 * signal handler that interrupted a thread while it held one of cudafrag's
 * locks, and that thread -- often the very one now writing the report -- will
 * never release it. */
#ifndef CF_BASE_LOCKWAIT_H
#define CF_BASE_LOCKWAIT_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* An absolute CLOCK_REALTIME time, as pthread_mutex_timedlock takes it. */
static inline struct timespec cf_deadline_after_ms(unsigned ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Locks m unless deadline passes first (NULL: no deadline). A lock already held
 * by the calling thread is waited for until the deadline, then given up: the
 * default mutex type does not know its owner. Past the deadline this is a
 * trylock, so one deadline shared by many locks bounds the whole wait. */
static inline bool cf_mutex_lock_until(pthread_mutex_t *m, const struct timespec *deadline)
{
    if (deadline == NULL) return pthread_mutex_lock(m) == 0;
    return pthread_mutex_timedlock(m, deadline) == 0;
}

#endif
