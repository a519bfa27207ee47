/* The contended half of struct cf_lock (lock.h). A waiter first spins for about
 * a microsecond -- a critical section of the record is a few hundred
 * instructions -- then yields its processor to whoever may hold the lock, and
 * after that many yields naps between tries, so that a holder descheduled for a
 * long time costs its waiters little processor time. */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "record/lock.h"

#define SPINS  128
#define YIELDS 64
#define NAP_NS (20 * 1000)

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static bool take(struct cf_lock *l)
{
    int free_ = 0;
    return __atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(&l->v, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void cf_lock_wait(struct cf_lock *l)
{
    for (int i = 0; i < SPINS; i++) {
        relax();
        if (take(l)) return;
    }
    int saved = errno; /* the application's errno is never ours to change */
    const struct timespec nap = {0, NAP_NS};
    for (unsigned tries = 0; !take(l); tries++) {
        if (tries < YIELDS)
            sched_yield();
        else
            nanosleep(&nap, NULL);
    }
    errno = saved;
}

static bool passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Tries and naps until the deadline: the holder may be a thread that will never
 * run again (exit() from a signal handler). */
bool cf_lock_until(struct cf_lock *l, const struct timespec *deadline)
{
    const struct timespec pause = {0, 100 * 1000};
    for (;;) {
        int free_ = 0;
        if (__atomic_compare_exchange_n(&l->v, &free_, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return true;
        if (passed(deadline)) return false;
        nanosleep(&pause, NULL);
    }
}
