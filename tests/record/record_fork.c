/* fork() while another thread is inside the record: the child must find every
 * record lock released (the pthread_atfork handlers) and be able to record. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "record/record.h"

#define FORKS 50

static int stop;

static void *hammer(void *arg)
{
    uint64_t addr = 0x10000000;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = addr, .requested = 512};
        cf_rec_alloc(&ai);
        cf_rec_free(CF_API_cudaFree, addr, 0);
        addr += 0x200;
    }
    return NULL;
}

static void child(void)
{
    /* A deadlock must fail the test rather than hang it. */
    alarm(20);
    struct cf_alloc_info ai = {.api = CF_API_cudaMalloc, .addr = 0x1, .requested = 64};
    cf_rec_alloc(&ai);
    bool freed = cf_rec_free(CF_API_cudaFree, 0x1, 0);
    cf_rec_lock_all();
    cf_rec_unlock_all();
    _exit(freed ? 0 : 3);
}

int main(void)
{
    cf_rec_init();
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, hammer, NULL), 0);
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) child();
        int status;
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
            fprintf(stderr, "child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
        CHECK(WIFEXITED(status));
        CHECK_EQ(WEXITSTATUS(status), 0);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    CHECK_EQ(pthread_join(t, NULL), 0);
    cf_rec_collect();
    CHECK(cf_rec.total_allocs > 0);
    CHECK_EQ(cf_rec.unknown_frees, 0);
    CHECK_EQ(cf_rec.total_allocs, cf_rec.total_frees);
    return 0;
}
