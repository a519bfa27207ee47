/* Leaves the process one way per mode, after making CUDA allocations of known
 * size (two of three left live). A second thread keeps allocating and freeing
 * through the hooks so that exits and signals can land while it is inside one.
 * Modes ending in "-busy" leave it running at the exit; the others stop it first,
 * so the report's numbers are exact. */
#include "check.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define LIVE_BYTES (2u << 20)

static bool stop;    /* atomic: read by the churn thread */
static bool churned; /* atomic: the churn thread went through the hooks once */

static void *churn(void *arg)
{
    (void)arg;
    CHECK_CU(cudaSetDevice(0));
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        void *p;
        CHECK_CU(cudaMalloc(&p, 4096));
        CHECK_CU(cudaFree(p));
        __atomic_store_n(&churned, true, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* Mode "teardown": blocks the program frees on its way out, after main --
 * from an atexit handler and from an ELF destructor. Both run before
 * cudafrag's report, so neither may be listed as live. */
static void *freed_at_exit, *freed_in_destructor;

static void free_at_exit(void)
{
    if (freed_at_exit) CHECK_CU(cudaFree(freed_at_exit));
}

__attribute__((constructor)) static void register_teardown(void)
{
    atexit(free_at_exit);
}

__attribute__((destructor)) static void free_in_destructor(void)
{
    if (freed_in_destructor) CHECK_CU(cudaFree(freed_in_destructor));
}

/* A real segmentation fault: a write to a page with no access (not a null
 * pointer, which the undefined-behaviour sanitizer would stop first). */
static void segv(void)
{
    volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    *page = 1;
}

/* A real bus error: touching a mapped page past the end of its file. */
static void bus_error(void)
{
    char path[] = "/tmp/cudafrag-busXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    volatile char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    m[0] = 1;
}

static void wait_here(const char *ready)
{
    int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "1", 1), 1);
    close(fd);
    for (;;)
        pause();
}

/* Mode "usr1": a burst of interim-report requests, then exit() once the first
 * interim report is complete (its name is the output pattern's, with %p
 * expanded, and ".1.txt"). The final report must still be written once. */
static void usr1_burst(void)
{
    const char *pattern = getenv("CUDAFRAG_OUTPUT");
    char first[4096];
    CHECK(pattern != NULL && strstr(pattern, "%p") != NULL);
    int head = (int)(strstr(pattern, "%p") - pattern);
    snprintf(first, sizeof first, "%.*s%ld%s.1.txt", head, pattern, (long)getpid(),
             pattern + head + 2);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(kill(getpid(), SIGUSR1), 0);
    /* The interim report ends with its own trailer: wait for all of it. */
    for (;;) {
        char buf[65536];
        FILE *f = fopen(first, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = '\0';
        if (strstr(buf, "end of cudafrag report")) break;
        usleep(10000);
    }
    exit(3);
}

static int leave(const char *how, const char *arg)
{
    if (strcmp(how, "usr1") == 0) usr1_burst();
    if (strcmp(how, "exit") == 0) exit(3);
    if (strcmp(how, "_exit") == 0) _exit(4);
    if (strcmp(how, "_Exit") == 0) _Exit(5);
    if (strcmp(how, "abort") == 0) abort();
    if (strcmp(how, "segv") == 0) segv();
    if (strcmp(how, "bus") == 0) bus_error();
    if (strcmp(how, "term") == 0) kill(getpid(), SIGTERM);
    if (strcmp(how, "int") == 0) kill(getpid(), SIGINT);
    if (strcmp(how, "wait") == 0 && arg) wait_here(arg);
    return 100;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    char how[32];
    snprintf(how, sizeof how, "%s", argv[1]);
    char *busy = strstr(how, "-busy");
    if (busy) *busy = '\0';

    void *keep[2], *gone;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaMalloc(&keep[0], LIVE_BYTES / 2));
    CHECK_CU(cudaMalloc(&keep[1], LIVE_BYTES / 2));
    CHECK_CU(cudaMalloc(&gone, 12345));
    CHECK_CU(cudaFree(gone));

    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, churn, NULL), 0);
    /* Its first round through the hooks, waited for rather than slept for. */
    while (!__atomic_load_n(&churned, __ATOMIC_ACQUIRE))
        usleep(1000);
    if (!busy) {
        __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
        CHECK_EQ(pthread_join(th, NULL), 0);
    }
    if (strcmp(how, "return") == 0) return 7;
    if (strcmp(how, "teardown") == 0) {
        CHECK_CU(cudaMalloc(&freed_at_exit, 3000));
        CHECK_CU(cudaMalloc(&freed_in_destructor, 5000));
        return 7;
    }
    int rc = leave(how, argc > 2 ? argv[2] : NULL);
    /* Signals are delivered before kill returns; getting here is a failure. */
    fprintf(stderr, "still running after '%s'\n", argv[1]);
    __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
    return rc;
}
