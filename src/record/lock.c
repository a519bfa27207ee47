/* The contended half of struct cf_lock (lock.h): the classic three-state futex
 * mutex. A waiter first spins for about a microsecond -- the critical sections
 * of the record are a few dozen instructions -- then marks the lock 2 and
 * sleeps; the release that sees 2 wakes one sleeper. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/lock.h"

#define SPINS 128

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

void cf_lock_wait(struct cf_lock *l)
{
    for (int i = 0; i < SPINS; i++) {
        relax();
        int free_ = 0;
        if (__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&l->v, &free_, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return;
    }
    int saved = errno; /* the application's errno is never ours to change */
    while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0)
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    errno = saved;
}

static bool passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Tries and sleeps rather than waiting on the futex: a waiter marks the lock 2,
 * and a holder that never releases it would never look. */
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

void cf_lock_wake(struct cf_lock *l)
{
    int saved = errno;
    syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
