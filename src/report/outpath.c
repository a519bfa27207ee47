#include "report/outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* A long executable name (up to NAME_MAX) would push every file name made from
 * the default pattern past NAME_MAX, and the trace and both reports would be
 * lost: %e gives its first bytes (cut on a UTF-8 character boundary), '~' and a
 * hash of the whole name, which keeps runs of two long names apart. The longest
 * suffix (".4294967295.json", 16 bytes), the temporary file's 8 and the default
 * pattern's text around %e then leave room to spare. */
#define EXE_KEEP (CF_OUTPUT_EXE_MAX - 9)

const char *cf_output_exe_name(const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    if (len <= CF_OUTPUT_EXE_MAX || n < CF_OUTPUT_EXE_MAX + 1) return name;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    size_t keep = EXE_KEEP;
    while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
        keep--;
    snprintf(out, n, "%.*s~%08x", (int)keep, name, h);
    return out;
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
    char num[32], host[256], exe[CF_OUTPUT_EXE_MAX + 1];
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
            put_name(out, n, &pos, cf_output_exe_name(exe_name(), exe, sizeof exe), &overflow);
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

const char *cf_output_shown(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    if (len < CF_OUTPUT_SHOWN_MAX || n < CF_OUTPUT_SHOWN_MAX) return path;
    const size_t half = (CF_OUTPUT_SHOWN_MAX - 4) / 2;
    snprintf(out, n, "%.*s...%s", (int)half, path, path + len - half);
    return out;
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

static const char *kind_of(mode_t mode)
{
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* What is at the path now; a path that cannot be looked at is left to the
 * creation of the temporary file to explain. */
static int refuse(const char *path, char *err, size_t errn)
{
    struct stat st;
    char shown[CF_OUTPUT_SHOWN_MAX];
    if (lstat(path, &st) != 0) return 0;
    const char *p = cf_output_shown(path, shown, sizeof shown);
    if (S_ISLNK(st.st_mode))
        snprintf(err, errn, "refusing to write %s: it is a symbolic link", p);
    else if (!S_ISREG(st.st_mode))
        snprintf(err, errn, "refusing to write %s: it is %s, not a regular file", p,
                 kind_of(st.st_mode));
    else if (st.st_nlink > 1)
        snprintf(err, errn, "refusing to write %s: it has %lu other hard link%s", p,
                 (unsigned long)st.st_nlink - 1, st.st_nlink > 2 ? "s" : "");
    else
        return 0;
    return -1;
}

/* "DIR/.NAME.XXXXXX": hidden, and in the same file system as the path, so the
 * rename is atomic. */
static int temp_name(const struct cf_outfile *f, char *out, size_t n, unsigned attempt)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t r =
        ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)getpid() << 32) ^ attempt;
    char rnd[7];
    for (int i = 0; i < 6; i++, r /= 36)
        rnd[i] = digits[r % 36];
    rnd[6] = '\0';
    const char *slash = strrchr(f->path, '/');
    int dirlen = slash ? (int)(slash - f->path + 1) : 0;
    int w = snprintf(out, n, "%.*s.%s.%s", dirlen, f->path, f->path + dirlen, rnd);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

/* The temporary file being written, if any: reports are written one at a time. */
static char pending[PATH_MAX];
static int pending_set;

void cf_output_remove_pending(void)
{
    if (__atomic_load_n(&pending_set, __ATOMIC_ACQUIRE)) unlink(pending);
}

static void set_pending(const char *tmp)
{
    __atomic_store_n(&pending_set, 0, __ATOMIC_RELEASE);
    if (tmp == NULL) return;
    snprintf(pending, sizeof pending, "%s", tmp);
    __atomic_store_n(&pending_set, 1, __ATOMIC_RELEASE);
}

static int open_temp(struct cf_outfile *f)
{
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        if (temp_name(f, f->tmp, sizeof f->tmp, attempt) != 0) return -ENAMETOOLONG;
        /* O_NONBLOCK: should anything but a new regular file ever be opened, it
         * must not wait. */
        f->fd =
            open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (f->fd >= 0) {
            set_pending(f->tmp);
            return 0;
        }
        if (errno != EEXIST) return -errno;
    }
    return -EEXIST;
}

int cf_output_begin(struct cf_outfile *f, const char *path, char *err, size_t errn)
{
    f->fd = -1;
    f->tmp[0] = '\0';
    char shown[CF_OUTPUT_SHOWN_MAX];
    const char *p = cf_output_shown(path, shown, sizeof shown);
    if (strlen(path) >= sizeof f->path) {
        snprintf(err, errn, "cannot create %s: %s", p, strerror(ENAMETOOLONG));
        return -1;
    }
    strcpy(f->path, path);
    if (refuse(path, err, errn) != 0) return -1;
    int rc = open_temp(f);
    if (rc == 0) return 0;
    if (rc == -ENOENT && parent_dir_missing(path))
        snprintf(err, errn, "cannot create %s: the directory does not exist", p);
    else
        snprintf(err, errn, "cannot create %s: %s", p, strerror(-rc));
    return -1;
}

int cf_output_commit(struct cf_outfile *f)
{
    int rc = close(f->fd) == 0 ? 0 : -errno;
    f->fd = -1;
    if (rc == 0 && rename(f->tmp, f->path) != 0) rc = -errno;
    if (rc != 0) unlink(f->tmp);
    set_pending(NULL);
    return rc;
}

void cf_output_abort(struct cf_outfile *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    unlink(f->tmp);
    set_pending(NULL);
}
