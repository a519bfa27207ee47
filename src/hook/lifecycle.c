/* Interposers for the ways a process image ends without exit(): _exit/_Exit and
 * the exec family. Each writes the final report (see report/lifecycle.c, which
 * decides whether one is due) before the real call; exit() has its atexit
 * handler instead. posix_spawn and system() need nothing: the calling image goes
 * on, and glibc execs the child's program internally, past these functions. Nor
 * does fork(): the fork handlers (record.c, report/lifecycle.c) run in its child,
 * and a child they never see (_Fork, vfork, clone) writes no report. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/export.h"
#include "base/real.h"
#include "report/lifecycle.h"

typedef void (*exit_fn)(int);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static _Noreturn void real_exit(const char *name, int status)
{
    exit_fn fn = (exit_fn)cf_real_dlsym(RTLD_NEXT, name);
    if (fn) fn(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

CF_EXPORT void _exit(int status)
{
    cf_lifecycle_before_exit("_exit");
    real_exit("_exit", status);
}

CF_EXPORT void _Exit(int status)
{
    cf_lifecycle_before_exit("_Exit");
    real_exit("_Exit", status);
}

/* Exec is rare: the real function is looked up at each call. */
static void *real(const char *name)
{
    return cf_real_dlsym(RTLD_NEXT, name);
}

/* The report, then the real exec, which returns only when it failed: then the
 * program goes on with exec's errno, and its exit writes the final report. */
#define EXEC_WITH_REPORT(fn, ...)                                                                  \
    do {                                                                                           \
        if ((fn) == NULL) {                                                                        \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
        bool reported_ = cf_lifecycle_before_exec();                                               \
        int rc_ = (fn)(__VA_ARGS__);                                                               \
        int errno_ = errno;                                                                        \
        cf_lifecycle_exec_failed(reported_);                                                       \
        errno = errno_;                                                                            \
        return rc_;                                                                                \
    } while (0)

static int exec_env(const char *name, const char *path, char *const argv[], char *const envp[])
{
    EXEC_WITH_REPORT((execve_fn)real(name), path, argv, envp);
}

static int exec_plain(const char *name, const char *path, char *const argv[])
{
    EXEC_WITH_REPORT((execv_fn)real(name), path, argv);
}

CF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_env("execve", path, argv, envp);
}

CF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_env("execvpe", file, argv, envp);
}

CF_EXPORT int execv(const char *path, char *const argv[])
{
    return exec_plain("execv", path, argv);
}

CF_EXPORT int execvp(const char *file, char *const argv[])
{
    return exec_plain("execvp", file, argv);
}

CF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_WITH_REPORT((fexecve_fn)real("fexecve"), fd, argv, envp);
}

/* The execl variants take their arguments as a list ending in NULL (execle: then
 * the environment); they are passed on to the matching array variant. */
static size_t count_args(va_list ap)
{
    size_t n = 1; /* the first argument, before the list */
    while (va_arg(ap, const char *) != NULL)
        n++;
    return n;
}

static char *const *fill_args(char **argv, size_t n, const char *arg, va_list ap)
{
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *); /* ends with the NULL */
    return argv;
}

#define EXECL_ARGS(argv, arg)                                                                      \
    va_list ap;                                                                                    \
    va_start(ap, arg);                                                                             \
    size_t n_ = count_args(ap);                                                                    \
    va_end(ap);                                                                                    \
    char *argv[n_ + 1];                                                                            \
    va_start(ap, arg);                                                                             \
    fill_args(argv, n_, arg, ap)

CF_EXPORT int execl(const char *path, const char *arg, ...)
{
    EXECL_ARGS(argv, arg);
    va_end(ap);
    return exec_plain("execv", path, argv);
}

CF_EXPORT int execlp(const char *file, const char *arg, ...)
{
    EXECL_ARGS(argv, arg);
    va_end(ap);
    return exec_plain("execvp", file, argv);
}

CF_EXPORT int execle(const char *path, const char *arg, ...)
{
    EXECL_ARGS(argv, arg);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_env("execve", path, argv, envp);
}
