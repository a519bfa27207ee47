#include "report/outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cf_output_rank(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (unsigned i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return v;
    }
    return "0";
}

/* program_invocation_short_name is argv[0]'s basename; /proc/self/exe is the
 * truth for programs started through a symlink or an interpreter wrapper, but
 * users name their runs by what they typed, so argv[0] wins when present. */
static const char *exe_name(void)
{
    extern char *program_invocation_short_name;
    if (program_invocation_short_name && *program_invocation_short_name)
        return program_invocation_short_name;
    return "unknown";
}

/* A file name must not gain directories from a substituted value. */
static void put_name(char *out, size_t n, size_t *pos, const char *s, int *overflow)
{
    for (; *s; s++) {
        if (*pos + 1 >= n) {
            *overflow = 1;
            return;
        }
        out[(*pos)++] = *s == '/' ? '_' : *s;
    }
}

int cf_output_expand(const char *pattern, const char *suffix, char *out, size_t n, char *err,
                     size_t errn)
{
    char num[32], host[256];
    size_t pos = 0;
    int overflow = 0;
    for (const char *p = pattern; *p && !overflow; p++) {
        if (*p != '%') {
            if (pos + 1 >= n)
                overflow = 1;
            else
                out[pos++] = *p;
            continue;
        }
        switch (*++p) {
        case 'p':
            snprintf(num, sizeof num, "%ld", (long)getpid());
            put_name(out, n, &pos, num, &overflow);
            break;
        case 'e':
            put_name(out, n, &pos, exe_name(), &overflow);
            break;
        case 'h':
            if (gethostname(host, sizeof host) != 0) strcpy(host, "localhost");
            host[sizeof host - 1] = '\0';
            put_name(out, n, &pos, host, &overflow);
            break;
        case 'r':
            put_name(out, n, &pos, cf_output_rank(), &overflow);
            break;
        case '%':
            put_name(out, n, &pos, "%", &overflow);
            break;
        default: {
            /* Unknown sequences stay as written: losing the report over a typo in
             * the pattern would be worse than an odd file name. */
            char lit[3] = {'%', *p, 0};
            put_name(out, n, &pos, lit, &overflow);
            if (*p == '\0') p--;
        }
        }
    }
    if (!overflow && pos + strlen(suffix) < n) {
        memcpy(out + pos, suffix, strlen(suffix) + 1);
        return 0;
    }
    snprintf(err, errn,
             "CUDAFRAG_OUTPUT=\"%.120s...\" expands to a path longer than %zu bytes; report "
             "file not written",
             pattern, n - 1);
    return -1;
}

/* ENOENT from open also comes from file systems that refuse new names in a
 * directory that exists (procfs): blame the directory only when it is missing. */
static bool parent_dir_missing(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return false; /* the current directory exists */
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir) return false;
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat st;
    return stat(dir, &st) != 0;
}

int cf_output_open(const char *path, char *err, size_t errn)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    int e = errno;
    struct stat st;
    if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        snprintf(err, errn, "refusing to write %s: it is a symbolic link", path);
    else if (e == ENOENT && parent_dir_missing(path))
        snprintf(err, errn, "cannot create %s: the directory does not exist", path);
    else
        snprintf(err, errn, "cannot create %s: %s", path, strerror(e));
    return -1;
}
