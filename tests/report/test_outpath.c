/* CUDAFRAG_OUTPUT expansion and the safety rules for creating report files. */
#include <dirent.h>
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

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
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
    char path[PATH_MAX], target[PATH_MAX];
    struct cf_outfile f;
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(path, sizeof path, "%s/report.txt", dir);
    CHECK_EQ(symlink(target, path), 0);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), -1);
    CHECK_STR(err, "is a symbolic link");
    struct stat st;
    CHECK(lstat(target, &st) != 0 && errno == ENOENT);

    /* A missing directory says so. */
    snprintf(path, sizeof path, "%s/no/such/dir.txt", dir);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), -1);
    CHECK_STR(err, "the directory does not exist");

    /* A new file appears only when complete, created 0644 (before umask). */
    snprintf(path, sizeof path, "%s/plain.txt", dir);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), 0);
    CHECK(fcntl(f.fd, F_GETFD) & FD_CLOEXEC);
    CHECK_EQ(write(f.fd, "hello", 5), 5);
    CHECK(lstat(path, &st) != 0 && errno == ENOENT);
    CHECK_EQ(cf_output_commit(&f), 0);
    char *t = slurp(path);
    CHECK(t && strcmp(t, "hello") == 0);
    free(t);
    CHECK_EQ(count_entries(dir), 2); /* report.txt (the path), plain.txt */

    /* An old report is replaced whole; an abandoned write leaves it alone and
     * nothing else behind. */
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), 0);
    CHECK_EQ(write(f.fd, "new", 3), 3);
    CHECK_EQ(cf_output_commit(&f), 0);
    t = slurp(path);
    CHECK(t && strcmp(t, "new") == 0);
    free(t);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), 0);
    CHECK_EQ(write(f.fd, "half", 4), 4);
    cf_output_abort(&f);
    t = slurp(path);
    CHECK(t && strcmp(t, "new") == 0);
    free(t);
    CHECK_EQ(count_entries(dir), 2);

    /* A second hard link: refused, both names keep their content. */
    snprintf(target, sizeof target, "%s/other-name", dir);
    CHECK_EQ(link(path, target), 0);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), -1);
    CHECK_STR(err, "it has 1 other hard link");
    CHECK_EQ(unlink(target), 0);

    /* A FIFO nobody reads, and a directory: refused at once. */
    snprintf(path, sizeof path, "%s/fifo.txt", dir);
    CHECK_EQ(mkfifo(path, 0644), 0);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), -1);
    CHECK_STR(err, "it is a FIFO, not a regular file");
    snprintf(path, sizeof path, "%s/sub.txt", dir);
    CHECK_EQ(mkdir(path, 0755), 0);
    CHECK_EQ(cf_output_begin(&f, path, err, sizeof err), -1);
    CHECK_STR(err, "it is a directory, not a regular file");
    return 0;
}
