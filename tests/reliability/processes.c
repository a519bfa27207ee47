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
 *   exec-FN    allocate EXEC_BYTES (left live), then replace the process image
 *              with "PROG child" through the exec function FN
 *   exec-fail  allocate EXEC_BYTES, call execv on a path that does not exist,
 *              then go on and exit normally
 *   vfork-exec allocate EXEC_BYTES, then vfork a child that execs "PROG child"
 *   fork-exec  the same with fork: the child makes no CUDA call before exec
 *   _Fork-exit allocate EXEC_BYTES, then _Fork (no fork handlers run) a child
 *              that calls exit()
 *   fork-exits allocate EXEC_BYTES, then fork two children that make no CUDA
 *              call: one calls exit(), the other _exit()
 *   fork-child-allocs  fork a child that allocates CHILD_BYTES, then (after it
 *              ended) allocate EXEC_BYTES: the parent made no CUDA call at the fork
 *   fork-after-cuda    allocate EXEC_BYTES, then fork a child that allocates
 *              CHILD_BYTES (the simulated device allows it; a real one does not)
 * The program is not linked against libcudart: every mode that needs it loads it
 * itself, so "late" sees the runtime arrive for the first time. */
#include "intercept/intercept.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_BYTES 777777
#define EXEC_BYTES  555555

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

/* The program's own directory is not on PATH: the p variants get a PATH with it. */
static void path_to_self(const char *self)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    CHECK(slash != NULL);
    *slash = '\0';
    CHECK_EQ(setenv("PATH", dir, 1), 0);
}

static void exec_with(const char *fn, const char *self)
{
    char *const argv[] = {(char *)self, "child", NULL};
    const char *base = strrchr(self, '/') + 1;
    if (strcmp(fn, "execve") == 0) execve(self, argv, environ);
    if (strcmp(fn, "execv") == 0) execv(self, argv);
    if (strcmp(fn, "execl") == 0) execl(self, self, "child", (char *)NULL);
    if (strcmp(fn, "execle") == 0) execle(self, self, "child", (char *)NULL, environ);
    if (strcmp(fn, "fexecve") == 0) {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        fexecve(fd, argv, environ);
    }
    path_to_self(self);
    if (strcmp(fn, "execvp") == 0) execvp(base, argv);
    if (strcmp(fn, "execvpe") == 0) execvpe(base, argv, environ);
    if (strcmp(fn, "execlp") == 0) execlp(base, base, "child", (char *)NULL);
    fprintf(stderr, "%s failed or unknown: %s\n", fn, strerror(errno));
    exit(1);
}

static void allocate_before_exec(void)
{
    void *p;
    CHECK_CU(rt_malloc(&p, EXEC_BYTES));
}

static int exec_fails(void)
{
    allocate_before_exec();
    char *const argv[] = {"/nonexistent/cudafrag-test", NULL};
    CHECK_EQ(execv(argv[0], argv), -1);
    CHECK_EQ(errno, ENOENT);
    return 0;
}

static int exec_in_child(const char *self, bool use_vfork)
{
    allocate_before_exec();
    char *const argv[] = {(char *)self, "child", NULL};
    pid_t pid = use_vfork ? vfork() : fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(status, 0);
    return 0;
}

/* _Fork runs no fork handlers: the child is not known as a process of its own. */
static int underscore_fork_exit(void)
{
    allocate_before_exec();
    pid_t pid = _Fork();
    CHECK(pid >= 0);
    if (pid == 0) exit(0);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(status, 0);
    return 0;
}

static void wait_ok(pid_t pid)
{
    int status;
    CHECK(pid >= 0);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(status, 0);
}

static int fork_exits(void)
{
    allocate_before_exec();
    pid_t a = fork();
    if (a == 0) exit(0);
    wait_ok(a);
    pid_t b = fork();
    if (b == 0) _exit(0);
    wait_ok(b);
    return 0;
}

/* before_fork: the parent allocates before the fork (else after the child ended). */
static int fork_child_allocs(bool before_fork)
{
    if (before_fork) allocate_before_exec();
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        exit(0);
    }
    wait_ok(pid);
    if (!before_fork) allocate_before_exec();
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
    if (strncmp(mode, "exec-", 5) == 0 && strcmp(mode, "exec-fail") != 0) {
        allocate_before_exec();
        exec_with(mode + 5, argv[0]);
    }
    if (strcmp(mode, "exec-fail") == 0) return exec_fails();
    if (strcmp(mode, "vfork-exec") == 0) return exec_in_child(argv[0], true);
    if (strcmp(mode, "fork-exec") == 0) return exec_in_child(argv[0], false);
    if (strcmp(mode, "_Fork-exit") == 0) return underscore_fork_exit();
    if (strcmp(mode, "fork-exits") == 0) return fork_exits();
    if (strcmp(mode, "fork-child-allocs") == 0) return fork_child_allocs(false);
    if (strcmp(mode, "fork-after-cuda") == 0) return fork_child_allocs(true);
    if (strcmp(mode, "child") == 0) {
        child_work();
        return 0;
    }
    return 100;
}
