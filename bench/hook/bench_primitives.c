/* What the hook path's primitive operations cost on this machine: a TSC read (two
 * per intercepted call), clock_gettime, an uncontended mutex pair and a locked
 * increment (three locked operations per intercepted call). Each is timed over
 * 2 M repetitions, the fastest of 5 passes, three rounds printed. Compare machines
 * with it before comparing hook costs measured on them (docs/performance.md). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

#define N      2000000
#define PASSES 5

static volatile uint64_t sink;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counter;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void op_rdtsc(void)
{
    sink += __rdtsc();
}

static void op_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sink += (uint64_t)ts.tv_nsec;
}

static void op_mutex(void)
{
    pthread_mutex_lock(&mutex);
    sink++;
    pthread_mutex_unlock(&mutex);
}

static void op_locked_add(void)
{
    __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
}

static double fastest(void (*op)(void))
{
    double best = 1e300;
    for (int p = 0; p < PASSES; p++) {
        double t0 = now_ns();
        for (int i = 0; i < N; i++)
            op();
        double t = (now_ns() - t0) / N;
        if (t < best) best = t;
    }
    return best;
}

int main(void)
{
    for (int round = 0; round < 3; round++)
        printf("rdtsc %.1f ns  clock_gettime %.1f ns  mutex pair %.1f ns  locked add %.1f ns\n",
               fastest(op_rdtsc), fastest(op_clock), fastest(op_mutex), fastest(op_locked_add));
    return 0;
}
