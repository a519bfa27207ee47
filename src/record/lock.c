/* The contended half of struct cf_lock (lock.h). A waiter first spins for about
 * a microsecond -- a critical section of the record is a few hundred
 * instructions -- then sleeps on the futex until a release wakes it, or for
 * 100 us at most: the release does not fence its store from its look at the
 * sleepers, so a waiter that arrives in between may be missed, and then finds
 * the lock free at its timeout. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/lock.h"

#define SPINS        128
#define SLEEP_MAX_NS (100 * 1000)

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
    const struct timespec most = {0, SLEEP_MAX_NS};
    __atomic_add_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
    while (!take(l))
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 1, &most, NULL, 0);
    __atomic_sub_fetch(&l->sleepers, 1, __ATOMIC_RELAXED);
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

void cf_lock_wake(struct cf_lock *l)
{
    int saved = errno;
    syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
