/* Runs one workload and checks what it did: its exit status, the checksum line it
 * printed and, optionally, text it must print on stdout or on stderr (where
 * cudafrag's report goes). Extra environment variables
 * (LD_PRELOAD of cudafrag, CUDAFRAG_ARENA, SIMCUDA_PHYS, ...) are set for the
 * child only, on top of the test environment.
 *
 * usage: expect_run [--exit N] [--checksum HEX] [--contains TEXT] [--stderr-contains TEXT]
 *                   [--env NAME=VALUE]... -- PROGRAM [ARGS...] */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ENV    16
#define OUTPUT_CAP (1 << 20)

struct expectation {
    int exit_status;
    const char *checksum;
    const char *contains;
    const char *stderr_contains;
    char *env[MAX_ENV];
    int n_env;
    char **argv;
};

static void usage(void)
{
    fprintf(stderr, "usage: expect_run [--exit N] [--checksum HEX] [--contains TEXT] "
                    "[--stderr-contains TEXT] [--env NAME=VALUE]... -- PROGRAM [ARGS...]\n");
    exit(2);
}

static void parse_args(int argc, char **argv, struct expectation *ex)
{
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (i + 1 >= argc) usage();
        const char *val = argv[i + 1];
        if (!strcmp(argv[i], "--exit"))
            ex->exit_status = atoi(val);
        else if (!strcmp(argv[i], "--checksum"))
            ex->checksum = val;
        else if (!strcmp(argv[i], "--contains"))
            ex->contains = val;
        else if (!strcmp(argv[i], "--stderr-contains"))
            ex->stderr_contains = val;
        else if (!strcmp(argv[i], "--env") && ex->n_env < MAX_ENV && strchr(val, '='))
            ex->env[ex->n_env++] = argv[i + 1];
        else
            usage();
    }
    if (i + 1 >= argc) usage();
    ex->argv = argv + i + 1;
}

/* Start the program with stdout on a pipe and stderr in err_fd, a temporary file
 * read once the program has ended (two pipes would need polling). */
static pid_t spawn(const struct expectation *ex, int *out_fd, int err_fd)
{
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(err_fd, 2);
        close(fds[0]);
        close(fds[1]);
        for (int k = 0; k < ex->n_env; k++)
            putenv(ex->env[k]);
        execv(ex->argv[0], ex->argv);
        fprintf(stderr, "expect_run: cannot run %s: %s\n", ex->argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    *out_fd = fds[0];
    return pid;
}

/* Reads the child's whole stdout; output past the cap is drained and dropped so
 * the child never blocks on a full pipe. */
static char *read_all(int fd)
{
    char *buf = malloc(OUTPUT_CAP + 1);
    char scratch[4096];
    CHECK(buf != NULL);
    size_t len = 0;
    for (;;) {
        char *dst = len < OUTPUT_CAP ? buf + len : scratch;
        size_t room = len < OUTPUT_CAP ? OUTPUT_CAP - len : sizeof scratch;
        ssize_t n = read(fd, dst, room);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n >= 0);
        if (n == 0) break;
        if (len < OUTPUT_CAP) len += (size_t)n;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

int main(int argc, char **argv)
{
    struct expectation ex = {.exit_status = 0};
    parse_args(argc, argv, &ex);

    FILE *err_file = tmpfile();
    CHECK(err_file != NULL);
    int fd;
    pid_t pid = spawn(&ex, &fd, fileno(err_file));
    char *out = read_all(fd);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(lseek(fileno(err_file), 0, SEEK_SET), 0);
    char *err = read_all(dup(fileno(err_file)));
    fclose(err_file);
    fputs(out, stdout);
    fputs(err, stderr);

    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), ex.exit_status);
    if (ex.checksum) {
        char line[64];
        snprintf(line, sizeof line, "checksum %s\n", ex.checksum);
        CHECK_STR(out, line);
    }
    if (ex.contains) CHECK_STR(out, ex.contains);
    if (ex.stderr_contains) CHECK_STR(err, ex.stderr_contains);
    free(out);
    free(err);
    return 0;
}
