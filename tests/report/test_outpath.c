/* CUDAFRAG_OUTPUT expansion and the safety rules for creating report files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "report/outpath.h"
#include "report_fill.h"

static void expand_ok(const char *pattern, const char *suffix, const char *want)
{
    char out[PATH_MAX], err[256] = "";
    CHECK_EQ(cf_output_expand(pattern, suffix, out, sizeof out, err, sizeof err), 0);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "expand(\"%s\") = \"%s\", want \"%s\"\n", pattern, out, want);
        exit(1);
    }
}

int main(void)
{
    extern char *program_invocation_short_name;
    char want[PATH_MAX], host[256];
    CHECK_EQ(gethostname(host, sizeof host), 0);

    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    snprintf(want, sizeof want, "/tmp/r-%ld-%s-%s-0-100%%.txt", (long)getpid(),
             program_invocation_short_name, host);
    expand_ok("/tmp/r-%p-%e-%h-%r-100%%", ".txt", want);
    setenv("SLURM_PROCID", "5", 1);
    expand_ok("x%r", ".json", "x5.json");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    expand_ok("x%r", "", "x3");
    setenv("RANK", "7", 1);
    expand_ok("x%r", "", "x7");
    setenv("RANK", "", 1); /* empty counts as unset */
    expand_ok("x%r", "", "x3");
    setenv("RANK", "a/b", 1); /* values never add directories */
    expand_ok("x%r", "", "xa_b");
    expand_ok("keep%q%", ".1.txt", "keep%q%.1.txt");

    /* Too long for PATH_MAX: a clear message and no path. */
    char *huge = malloc(PATH_MAX + 100), out[PATH_MAX], err[PATH_MAX + 256];
    memset(huge, 'a', PATH_MAX + 99);
    huge[PATH_MAX + 99] = '\0';
    CHECK_EQ(cf_output_expand(huge, ".txt", out, sizeof out, err, sizeof err), -1);
    CHECK_STR(err, "expands to a path longer than");
    /* Fits the pattern but not the suffix. */
    huge[PATH_MAX - 3] = '\0';
    CHECK_EQ(cf_output_expand(huge, ".json", out, sizeof out, err, sizeof err), -1);
    free(huge);

    /* A symbolic link at the path is refused and its target left alone. */
    const char *dir = temp_dir();
    char link[PATH_MAX], target[PATH_MAX];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link, sizeof link, "%s/report.txt", dir);
    CHECK_EQ(symlink(target, link), 0);
    CHECK_EQ(cf_output_open(link, err, sizeof err), -1);
    CHECK_STR(err, "is a symbolic link");
    struct stat st;
    CHECK(lstat(target, &st) != 0 && errno == ENOENT);

    /* A missing directory says so. */
    snprintf(link, sizeof link, "%s/no/such/dir.txt", dir);
    CHECK_EQ(cf_output_open(link, err, sizeof err), -1);
    CHECK_STR(err, "the directory does not exist");

    /* A regular file is created 0644 (before umask) and truncated. */
    snprintf(link, sizeof link, "%s/plain.txt", dir);
    int fd = cf_output_open(link, err, sizeof err);
    CHECK_GE(fd, 0);
    CHECK_EQ(write(fd, "hello", 5), 5);
    close(fd);
    fd = cf_output_open(link, err, sizeof err);
    CHECK_GE(fd, 0);
    CHECK_EQ(fstat(fd, &st), 0);
    CHECK_EQ(st.st_size, 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    return 0;
}
