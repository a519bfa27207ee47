/* cudafrag run --check: unlike a plain run, the command cannot exec the
 * program and vanish, because it must read the report afterwards: it runs the
 * program as a child, waits, then checks the JSON report the child wrote. Like
 * system(), it ignores SIGINT and SIGQUIT meanwhile (the terminal sends them
 * to the child too) and passes SIGTERM and SIGHUP on to the child. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/names.h"
#include "cli/views.h"
#include "report/outpath.h"

static volatile pid_t child;

static void forward(int sig)
{
    if (child > 0) kill(child, sig);
}

/* What the child's library made of CUDAFRAG_OUTPUT: %p and %e are the child's,
 * so they are put in here; the rest (%h, %r, %%) expands alike in both. */
static int report_path(const char *pattern, pid_t pid, const char *prog, char *out, size_t n)
{
    char pre[PATH_MAX], err[256];
    size_t o = 0;
    char shortened[CF_OUTPUT_EXE_MAX + 1];
    const char *exe = cf_output_exe_name(cf_names_base(prog), shortened, sizeof shortened);
    for (const char *p = pattern; *p && o + 40 < sizeof pre; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(pre + o, sizeof pre - o, "%ld", (long)pid);
        } else if (p[0] == '%' && p[1] == 'e') {
            for (const char *e = exe; *e && o + 3 < sizeof pre; e++)
                o += (size_t)snprintf(pre + o, sizeof pre - o, *e == '%' ? "%%%%" : "%c", *e);
        } else {
            pre[o++] = *p;
            if (p[0] != '%' || p[1] == '\0') continue;
            pre[o++] = p[1];
        }
        p++;
    }
    pre[o] = '\0';
    return cf_output_expand(pre, ".json", out, n, err, sizeof err);
}

static int wait_child(void)
{
    int status;
    struct sigaction fwd = {.sa_handler = forward}, ign = {.sa_handler = SIG_IGN};
    sigaction(SIGTERM, &fwd, NULL);
    sigaction(SIGHUP, &fwd, NULL);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGQUIT, &ign, NULL);
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return 1;
    /* A shell reports a program killed by a signal as 128 + the signal. */
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cf_run_checked(char **argv, const struct cf_limits *l)
{
    const char *pattern = getenv("CUDAFRAG_OUTPUT");
    if (pattern == NULL) pattern = "cudafrag-%e-%p";
    if (*pattern == '\0') {
        fprintf(stderr, "cudafrag: run --check needs the JSON report: CUDAFRAG_OUTPUT is empty\n");
        return CF_EXIT_USAGE;
    }
    setenv("CUDAFRAG_OUTPUT", pattern, 1);
    setenv("CUDAFRAG_JSON", "1", 1);
    setenv("CUDAFRAG_ALWAYS_REPORT", "1", 1); /* a program without CUDA work passes */
    fflush(NULL);
    if ((child = fork()) == 0) {
        execvp(argv[0], argv);
        int e = errno;
        fprintf(stderr, "cudafrag: cannot run %s: %s\n", argv[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    if (child < 0) {
        fprintf(stderr, "cudafrag: cannot start %s: %s\n", argv[0], strerror(errno));
        return 1;
    }
    pid_t pid = child;
    int status = wait_child();
    char path[PATH_MAX];
    struct stat st;
    int rc = 1;
    if (report_path(pattern, pid, argv[0], path, sizeof path) != 0)
        fprintf(stderr, "cudafrag: check: the report's path is too long\n");
    else if (stat(path, &st) != 0)
        fprintf(stderr, "cudafrag: check: no JSON report at %s\n", path);
    else
        rc = cf_check_file(path, l) == 0 ? 0 : 1;
    return status ? status : rc;
}
