/* Report outputs: configured paths, interim suffixes, the final report written
 * once, and what is said when a file cannot be written. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config/config.h"
#include "report/report.h"
#include "report_fill.h"

/* Runs fn with stderr sent to a pipe and returns what it printed. A pipe, not a
 * file, so a file size limit set by the test does not cut the capture short; it
 * is made large enough to hold a whole report without a reader. */
static char *capture_stderr(int (*fn)(const char *), const char *arg, int *rc)
{
    int fds[2], saved = dup(2);
    CHECK(pipe(fds) == 0 && saved >= 0);
    CHECK(fcntl(fds[1], F_SETPIPE_SZ, 1 << 20) >= (1 << 16));
    dup2(fds[1], 2);
    close(fds[1]);
    *rc = fn(arg);
    dup2(saved, 2);
    close(saved);
    static char buf[1 << 20];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    close(fds[0]);
    buf[len] = '\0';
    return strdup(buf);
}

static int write_text_only(const char *pattern)
{
    return cf_report_write(pattern, false, false, 0, "test");
}

static int write_text_and_stderr(const char *pattern)
{
    return cf_report_write(pattern, true, false, 0, "test");
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int main(void)
{
    const char *dir = temp_dir();
    char pattern[PATH_MAX], path[PATH_MAX];
    int rc;
    fill_hot_loop();

    /* Symbolic link: refused, nothing written through it, one message. */
    snprintf(path, sizeof path, "%s/link.txt", dir);
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/victim", dir);
    CHECK_EQ(symlink(target, path), 0);
    snprintf(pattern, sizeof pattern, "%s/link", dir);
    char *err = capture_stderr(write_text_only, pattern, &rc);
    CHECK_EQ(rc, -1);
    CHECK_STR(err, "cudafrag: refusing to write");
    CHECK_STR(err, "symbolic link; the text report lost");
    CHECK(!exists(target));
    free(err);

    /* Missing directory with the stderr report on: the report still comes out and
     * notes what was lost. */
    snprintf(pattern, sizeof pattern, "%s/missing/out", dir);
    err = capture_stderr(write_text_and_stderr, pattern, &rc);
    CHECK_EQ(rc, 0);
    CHECK_STR(err, "==== cudafrag");
    CHECK_STR(err, "the directory does not exist; the text report lost");
    free(err);

    /* A write that fails half-way (a file size limit stands in for a full disk):
     * the file is reported lost, nothing half-written is left, and the stderr
     * report still comes out. */
    struct rlimit old_limit, small = {.rlim_cur = 512, .rlim_max = RLIM_INFINITY};
    CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    small.rlim_max = old_limit.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    snprintf(pattern, sizeof pattern, "%s/full", dir);
    err = capture_stderr(write_text_and_stderr, pattern, &rc);
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
    CHECK_EQ(rc, 0);
    CHECK_STR(err, "==== end of cudafrag report ====");
    CHECK_STR(err, "/full.txt failed (File too large); the text report lost");
    free(err);
    snprintf(path, sizeof path, "%s/full.txt", dir);
    CHECK(!exists(path));

    /* Configured outputs: the interim reports get .1 and .2, the final one none,
     * and the final one is written only once. */
    snprintf(pattern, sizeof pattern, "%s/cfg-%%p", dir);
    setenv("CUDAFRAG_OUTPUT", pattern, 1);
    setenv("CUDAFRAG_STDERR", "0", 1);
    setenv("CUDAFRAG_JSON", "1", 1);
    cf_config_reload();
    CHECK_EQ(cf_report_interim("one"), 0);
    CHECK_EQ(cf_report_interim("two"), 0);
    cf_report_final("test");
    long pid = (long)getpid();
    const char *names[] = {"%s/cfg-%ld.1.txt", "%s/cfg-%ld.1.json", "%s/cfg-%ld.2.txt",
                           "%s/cfg-%ld.txt", "%s/cfg-%ld.json"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, names[i], dir, pid);
        if (!exists(path)) {
            fprintf(stderr, "missing %s\n", path);
            return 1;
        }
    }
    snprintf(path, sizeof path, "%s/cfg-%ld.2.txt", dir, pid);
    char *t = slurp(path);
    CHECK_STR(t, "interim report (two)");
    CHECK_STR(t, "-- live allocations");
    free(t);
    snprintf(path, sizeof path, "%s/cfg-%ld.txt", dir, pid);
    CHECK_EQ(unlink(path), 0);
    cf_report_final("again");
    CHECK(!exists(path));

    /* Disabled: no interim report either. */
    setenv("CUDAFRAG_ENABLE", "0", 1);
    cf_config_reload();
    CHECK_EQ(cf_report_interim("off"), -1);
    return 0;
}
