/* A program run with libcudafrag.so preloaded by lifecycle.sh: each mode leaves
 * the process a different way. It makes no CUDA call; the script sets
 * CUDAFRAG_ALWAYS_REPORT=1 where a report is expected. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The interim report is written by another thread: wait for its file (the
 * script's own time limit bounds this). */
static void wait_for(const char *path)
{
    struct stat st;
    while (stat(path, &st) != 0 || st.st_size == 0)
        usleep(10000);
}

static void exit_from_handler(int sig)
{
    _exit(6);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 100;
    const char *mode = argv[1];
    if (strcmp(mode, "exit") == 0) exit(3);
    if (strcmp(mode, "_exit") == 0) _exit(4);
    if (strcmp(mode, "_Exit") == 0) _Exit(5);
    if (strcmp(mode, "segv") == 0) raise(SIGSEGV);
    if (strcmp(mode, "handler-exit") == 0) {
        signal(SIGTERM, exit_from_handler);
        raise(SIGTERM);
    }
    if (strcmp(mode, "blocked-exit") == 0) {
        /* A thread that blocks signals it has no handler for is not in a handler. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        _exit(4);
    }
    if (strcmp(mode, "usr1") == 0 && argc == 3) {
        raise(SIGUSR1);
        wait_for(argv[2]);
        return 0;
    }
    if (strcmp(mode, "preload") == 0) {
        const char *p = getenv("LD_PRELOAD");
        printf("%s\n", p ? p : "(unset)");
        return 0;
    }
    if (strcmp(mode, "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) return 101;
        return 0;
    }
    if (strcmp(mode, "report-now") == 0) {
        int (*report_now)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cudafrag_report_now");
        const char *(*version)(void) =
            (const char *(*)(void))dlsym(RTLD_DEFAULT, "cudafrag_version");
        if (!report_now || !version) return 102;
        printf("%s %d\n", version(), report_now());
        return 0;
    }
    return 100;
}
