/* exit() called from a SIGTERM handler while threads are inside cudafrag's hooks.
 * Not async-signal-safe, but common: the final report then runs in a thread that
 * may have been interrupted while it held one of cudafrag's locks. Modes:
 *   stress   8 threads and the main thread allocate and free through the hooks;
 *            a ninth sends SIGTERM to the process after a random delay (the
 *            kernel gives it to the main thread, which is busy in the hooks).
 *   in-hook  the signal is raised by the main thread itself, from inside
 *            cudafrag's code: the program's own mmap, which the library calls
 *            (instead of libc's) when its bookkeeping allocator needs memory,
 *            with its locks held. Deterministic.
 * Either way the handler exits with status 9. */
#include "check.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHURN_THREADS 8

static void exit_on_term(int sig)
{
    (void)sig;
    exit(9);
}

static void churn_forever(void)
{
    for (unsigned i = 0;; i++) {
        void *p;
        CHECK_CU(cudaMalloc(&p, 4096 + 512 * (i % 16)));
        CHECK_CU(cudaFree(p));
    }
}

static void *churn(void *arg)
{
    (void)arg;
    CHECK_CU(cudaSetDevice(0));
    churn_forever();
    return NULL;
}

static void *kill_later(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 20000000 + (long)(random() % 80000000)};
    nanosleep(&ts, NULL);
    kill(getpid(), SIGTERM);
    return NULL;
}

static void stress(void)
{
    pthread_t th;
    srandom((unsigned)getpid() ^ (unsigned)time(NULL));
    for (int i = 0; i < CHURN_THREADS; i++)
        CHECK_EQ(pthread_create(&th, NULL, churn, NULL), 0);
    CHECK_EQ(pthread_create(&th, NULL, kill_later, NULL), 0);
    churn_forever();
}

static bool armed; /* the next mmap by libcudafrag raises SIGTERM */
static pid_t main_tid;

static bool called_from_cudafrag(void *ret)
{
    Dl_info di;
    return dladdr(ret, &di) && di.dli_fname && strstr(di.dli_fname, "libcudafrag");
}

/* Overrides libc's mmap (mmap64 under _FILE_OFFSET_BITS=64, as the library is
 * built) for every library that calls it through the PLT. */
__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot, int flags,
                                                  int fd, off_t off)
{
    if (__atomic_load_n(&armed, __ATOMIC_RELAXED) && syscall(SYS_gettid) == main_tid &&
        called_from_cudafrag(__builtin_return_address(0))) {
        __atomic_store_n(&armed, false, __ATOMIC_RELAXED);
        raise(SIGTERM);
    }
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return (void *)r;
}

/* A first recorded call makes the process worth a report; the first device
 * allocation then starts the arena model, whose tables the library maps with
 * the model's lock held. */
static void in_hook(void)
{
    void *p;
    CHECK_CU(cudaMallocHost(&p, 4096));
    main_tid = (pid_t)syscall(SYS_gettid);
    __atomic_store_n(&armed, true, __ATOMIC_RELAXED);
    CHECK_CU(cudaMalloc(&p, 1 << 20));
    fprintf(stderr, "cudafrag never called mmap: the signal was not raised inside it\n");
    exit(1);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_on_term;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGTERM, &sa, NULL), 0);
    CHECK_CU(cudaSetDevice(0));
    if (strcmp(argv[1], "stress") == 0) stress();
    if (strcmp(argv[1], "in-hook") == 0) in_hook();
    return 100;
}
