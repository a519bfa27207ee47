/* Process-level events around a profiled program, one per mode:
 *   fork-hook  fork while another thread is inside cudafrag's cudaFree hook,
 *              stopped there (in a host function the free runs) until the child
 *              is done; the child writes an interim report and exits normally
 *              (final report). Neither may hang: the thread that holds whatever
 *              the driver locks does not exist in the child.
 *   system     allocate, then run "PROG child" through sh -c
 *   spawn      allocate, then posix_spawn "PROG child" directly
 *   child      allocate CHILD_BYTES and leave them live
 *   late       load libcudart with dlopen from a thread, after main started and
 *              other threads ran, and allocate through it
 * The program is not linked against libcudart: every mode that needs it loads it
 * itself, so "late" sees the runtime arrive for the first time. */
#include "intercept/intercept.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_BYTES 777777

extern char **environ;

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
static malloc_fn rt_malloc;
static free_fn rt_free;

typedef cudaError_t (*stream_create_fn)(cudaStream_t *);
typedef cudaError_t (*host_fn_fn)(cudaStream_t, cudaHostFn_t, void *);
static stream_create_fn rt_stream_create;
static host_fn_fn rt_launch_host_fn;

static void load_runtime(int flags)
{
    void *rt = dlopen("libcudart.so.13", flags);
    CHECK(rt != NULL);
    rt_malloc = (malloc_fn)dlsym(rt, "cudaMalloc");
    rt_free = (free_fn)dlsym(rt, "cudaFree");
    rt_stream_create = (stream_create_fn)dlsym(rt, "cudaStreamCreate");
    rt_launch_host_fn = (host_fn_fn)dlsym(rt, "cudaLaunchHostFunc");
    CHECK(rt_malloc && rt_free && rt_stream_create && rt_launch_host_fn);
}

static void child_work(void)
{
    void *p;
    CHECK_CU(rt_malloc(&p, CHILD_BYTES));
}

static int gate[2], inside[2];

/* Runs inside the driver's cudaFree, itself inside cudafrag's hook. */
static void CUDART_CB hold_in_free(void *arg)
{
    char c = 1;
    (void)arg;
    CHECK_EQ(write(inside[1], &c, 1), 1);
    CHECK_EQ(read(gate[0], &c, 1), 1);
}

static void *free_with_host_fn(void *arg)
{
    cudaStream_t s;
    void *p;
    (void)arg;
    CHECK_CU(rt_stream_create(&s));
    CHECK_CU(rt_malloc(&p, 4096));
    CHECK_CU(rt_launch_host_fn(s, hold_in_free, NULL));
    CHECK_CU(rt_free(p));
    return NULL;
}

static void child_reports(void)
{
    typedef int (*report_fn)(void);
    alarm(20); /* a hang fails the test instead of holding it */
    report_fn report_now = (report_fn)dlsym(RTLD_DEFAULT, "cudafrag_report_now");
    CHECK(report_now != NULL);
    CHECK_EQ(report_now(), 0);
    CHECK_CALLS("cudaMalloc", 1);
    exit(0);
}

static int fork_hook(void)
{
    pthread_t th;
    char c;
    CHECK_EQ(pipe(gate), 0);
    CHECK_EQ(pipe(inside), 0);
    CHECK_EQ(pthread_create(&th, NULL, free_with_host_fn, NULL), 0);
    CHECK_EQ(read(inside[0], &c, 1), 1);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) child_reports();
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    /* Let the free finish before anything can fail: our own exit report
     * must not wait for the held thread. */
    CHECK_EQ(write(gate[1], &c, 1), 1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    if (WIFSIGNALED(status))
        fprintf(stderr, "child killed by signal %d%s\n", WTERMSIG(status),
                WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
    CHECK_EQ(status, 0);
    CHECK_CALLS("cudaFree", 1);
    return 0;
}

static int run_child(const char *self, int through_shell)
{
    void *p;
    CHECK_CU(rt_malloc(&p, 1 << 20));
    CHECK_CU(rt_free(p));
    if (through_shell) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' child", self);
        int status = system(cmd);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return 0;
    }
    char *argv[] = {(char *)self, "child", NULL};
    pid_t pid;
    CHECK_EQ(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(status, 0);
    return 0;
}

static void *late_loader(void *arg)
{
    (void)arg;
    load_runtime(RTLD_NOW | RTLD_GLOBAL);
    void *p[3];
    for (int i = 0; i < 3; i++)
        CHECK_CU(rt_malloc(&p[i], 1000 * (size_t)(i + 1)));
    CHECK_CU(rt_free(p[1]));
    return NULL;
}

static void *idle(void *arg)
{
    return arg;
}

static int late(void)
{
    pthread_t th;
    CHECK_CALLS("cudaMalloc", 0);
    CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD) == NULL);
    CHECK_EQ(pthread_create(&th, NULL, idle, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(pthread_create(&th, NULL, late_loader, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_CALLS("cudaMalloc", 3);
    CHECK_CALLS("cudaFree", 1);
    CHECK_CALLS("cuMemAlloc", 0);
    typedef long long (*live_fn)(int);
    live_fn live = (live_fn)dlsym(RTLD_DEFAULT, "cudafrag_live_bytes");
    CHECK(live != NULL);
    CHECK_EQ(live(0), 4000);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    const char *mode = argv[1];
    if (strcmp(mode, "late") == 0) return late();
    load_runtime(RTLD_NOW | RTLD_LOCAL);
    if (strcmp(mode, "fork-hook") == 0) return fork_hook();
    if (strcmp(mode, "system") == 0) return run_child(argv[0], 1);
    if (strcmp(mode, "spawn") == 0) return run_child(argv[0], 0);
    if (strcmp(mode, "child") == 0) {
        child_work();
        return 0;
    }
    return 100;
}
