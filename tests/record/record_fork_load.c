/* fork() while another thread is inside cudafrag's one-time dlopen of libunwind
 * (a program's first allocations and a fork racing in two threads). The child
 * must not use the library that load left half-initialized, nor load it again on
 * a dynamic linker left in the middle of that dlopen (an ld.so assertion in the
 * child): the fork waits for the load to end. The stand-in libunwind
 * (fake_unwind/) makes the timing deterministic: its constructor holds the
 * loading thread until this test's fork handler releases it. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "record/record.h"

static int go_w = -1;

static void release_loader(void)
{
    if (go_w < 0) return;
    char c = 'g';
    CHECK_EQ(write(go_w, &c, 1), 1);
    go_w = -1;
}

static void *init_record(void *arg)
{
    cf_rec_init();
    return NULL;
}

static void *first_alloc(void *arg)
{
    struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = 0x1000, .requested = 512};
    cf_rec_alloc(&ai); /* loads libunwind for its stack */
    return NULL;
}

int main(void)
{
    int in[2], go[2];
    CHECK_EQ(pipe(in), 0);
    CHECK_EQ(pipe(go), 0);
    char num[16];
    snprintf(num, sizeof num, "%d", in[1]);
    setenv("FAKE_UNWIND_IN_FD", num, 1);
    snprintf(num, sizeof num, "%d", go[0]);
    setenv("FAKE_UNWIND_GO_FD", num, 1);
    go_w = go[1];

    /* libunwind is loaded at init, unless the initializing thread has too little
     * stack for a dlopen: then on the first capture that has enough, which is the
     * load a fork can race. */
    pthread_attr_t small;
    pthread_t init;
    CHECK_EQ(pthread_attr_init(&small), 0);
    CHECK_EQ(pthread_attr_setstacksize(&small, 48 << 10), 0);
    CHECK_EQ(pthread_create(&init, &small, init_record, NULL), 0);
    /* Under ThreadSanitizer 48 KiB leaves room enough for the load at init (its
     * runtime's frames differ): no load is left for a fork to race, nothing to
     * check. */
    struct pollfd loading = {.fd = in[0], .events = POLLIN};
    if (getenv("TSAN_OPTIONS") && poll(&loading, 1, 10000) == 1) {
        release_loader();
        CHECK_EQ(pthread_join(init, NULL), 0);
        fprintf(stderr, "libunwind was loaded at init under ThreadSanitizer: skipped\n");
        return 77;
    }
    CHECK_EQ(pthread_join(init, NULL), 0);
    /* Registered after cudafrag's handlers, so it runs before them: the load is
     * certainly under way when cudafrag's prepare handler sees the fork. */
    CHECK_EQ(pthread_atfork(release_loader, NULL, NULL), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, first_alloc, NULL), 0);
    char c;
    CHECK_EQ(read(in[0], &c, 1), 1); /* the loading thread is inside dlopen */

    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20);
        struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = 0x2000, .requested = 64};
        cf_rec_alloc(&ai);
        cf_rec_lock_all(); /* collects the threads' counters into cf_rec */
        uint64_t allocs = cf_rec.total_allocs;
        cf_rec_unlock_all();
        _exit(allocs >= 1 ? 0 : 4);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        fprintf(stderr, "the child used libunwind before its constructor finished\n");
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return 0;
}
