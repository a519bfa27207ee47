#include "report/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

extern char **environ;

/* Per module; addr2line on a binary with gigabytes of debug information can take
 * minutes, and the program's exit waits for the report. */
#define ADDR2LINE_DEADLINE_MS 20000

static int cmp_sym(const void *a, const void *b)
{
    uintptr_t x = ((const struct cf_sym *)a)->addr, y = ((const struct cf_sym *)b)->addr;
    return x < y ? -1 : x > y;
}

void cf_symtab_add(struct cf_symtab *t, uintptr_t addr)
{
    if (addr == 0) return;
    for (unsigned i = 0; i < t->n; i++)
        if (t->syms[i].addr == addr) return;
    if (t->n == t->cap) {
        unsigned cap = t->cap ? t->cap * 2 : 64;
        struct cf_sym *s = realloc(t->syms, cap * sizeof *s);
        if (s == NULL) return;
        t->syms = s;
        t->cap = cap;
    }
    memset(&t->syms[t->n], 0, sizeof t->syms[0]);
    t->syms[t->n++].addr = addr;
}

const struct cf_sym *cf_symtab_find(const struct cf_symtab *t, uintptr_t addr)
{
    struct cf_sym key = {.addr = addr};
    if (t->n == 0) return NULL;
    return bsearch(&key, t->syms, t->n, sizeof key, cmp_sym);
}

void cf_symtab_free(struct cf_symtab *t)
{
    free(t->syms);
    t->syms = NULL;
    t->n = t->cap = 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The main program's link_map has an empty name; dladdr then reports argv[0],
 * which may be relative. /proc/self/exe is the file addr2line must read. */
static void module_path(const Dl_info *di, struct link_map *lm, char *out, size_t n)
{
    if (lm && lm->l_name && lm->l_name[0]) {
        snprintf(out, n, "%s", lm->l_name);
        return;
    }
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len > 0) {
        out[len] = '\0';
        return;
    }
    snprintf(out, n, "%s", di->dli_fname ? di->dli_fname : "");
}

/* C++ names as people read them. The demangler of libstdc++ is used when the
 * program has loaded it (every C++ program has; C programs have no mangled
 * names): looked up at report time, never linked. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static void demangle(const char *name, char *out, size_t n)
{
    static demangle_fn fn;
    static bool looked;
    if (strncmp(name, "_Z", 2) == 0 && !looked) {
        fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked = true;
    }
    int status = -1;
    char *plain = strncmp(name, "_Z", 2) == 0 && fn ? fn(name, NULL, NULL, &status) : NULL;
    snprintf(out, n, "%s", plain && status == 0 ? plain : name);
    if (plain && strlen(plain) >= n && n > 4) memcpy(out + n - 4, "...", 4);
    free(plain);
}

/* Fixed-position executables (ET_EXEC) are looked up by absolute address; PIE
 * executables and shared objects by offset from their load base. */
static bool is_fixed_position(const void *base)
{
    const ElfW(Ehdr) *eh = base;
    return base && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_type == ET_EXEC;
}

static void resolve_dladdr(struct cf_sym *s)
{
    Dl_info di;
    struct link_map *lm = NULL;
    /* addr - 1: a return address may already belong to the next function. */
    if (dladdr1((void *)(s->addr - 1), &di, (void **)&lm, RTLD_DL_LINKMAP) == 0) return;
    module_path(&di, lm, s->path, sizeof s->path);
    const char *base = base_name(s->path);
    size_t blen = strlen(base);
    if (blen >= sizeof s->module) blen = sizeof s->module - 1;
    memcpy(s->module, base, blen);
    s->module[blen] = '\0';
    s->offset = (uint64_t)(s->addr - (uintptr_t)di.dli_fbase);
    s->lookup = is_fixed_position(di.dli_fbase) ? (uint64_t)s->addr : s->offset;
    if (di.dli_sname) demangle(di.dli_sname, s->function, sizeof s->function);
}

/* posix_spawnp searches PATH itself, but a missing addr2line must be silent and
 * cost nothing, so look first. */
static bool find_in_path(const char *prog, char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (path == NULL) path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len > 0 && snprintf(out, n, "%.*s/%s", (int)len, path, prog) < (int)n &&
            access(out, X_OK) == 0)
            return true;
        path += len + (end ? 1 : 0);
    }
    return false;
}

/* The environment without LD_PRELOAD, so addr2line is not profiled itself. */
static char **env_without_preload(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

/* Reads until EOF, or returns NULL once deadline_ms passed: a report must not
 * hold up the program's exit for long on one huge binary. */
static char *read_all(int fd, int deadline_ms)
{
    size_t len = 0, cap = 8192;
    char *buf = malloc(cap);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (buf) {
        if (len + 1 >= cap) {
            char *b = realloc(buf, cap *= 2);
            if (b == NULL) break;
            buf = b;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = spent < deadline_ms ? poll(&pfd, 1, (int)(deadline_ms - spent)) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            buf[len] = '\0';
            return buf;
        }
        len += (size_t)r;
    }
    free(buf);
    return NULL;
}

/* addr2line's name replaces dladdr's when dladdr found none, or only a mangled one
 * (no demangler in the process: a C++ program that does not use libstdc++). */
static bool needs_function(const struct cf_sym *s)
{
    return s->function[0] == '\0' || strncmp(s->function, "_Z", 2) == 0;
}

/* Output of `addr2line -a -f -i`: per address a "0x..." line, then function and
 * file:line pairs, innermost inline frame first. file:line comes from the first
 * pair (where the call really is); the function from the last pair, the function
 * the code was inlined into, which is the one the frame belongs to. */
static void parse_addr2line(char *text, struct cf_sym **list, unsigned count)
{
    int idx = -1;
    bool want_function = true, first_pair = true;
    char outer[sizeof list[0]->function] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "0x", 2) == 0 && want_function) {
            if (idx >= 0 && (unsigned)idx < count && needs_function(list[idx]))
                snprintf(list[idx]->function, sizeof list[idx]->function, "%s", outer);
            idx++;
            first_pair = true;
            outer[0] = '\0';
            continue;
        }
        if (idx < 0 || (unsigned)idx >= count) continue;
        struct cf_sym *s = list[idx];
        if (want_function) {
            if (strcmp(line, "??") != 0) snprintf(outer, sizeof outer, "%s", line);
        } else if (first_pair) {
            first_pair = false;
            char *colon = strrchr(line, ':');
            unsigned ln = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
            if (ln > 0 && line[0] != '?') {
                *colon = '\0';
                snprintf(s->file, sizeof s->file, "%s", line);
                s->line = ln;
            }
        }
        want_function = !want_function;
    }
    if (idx >= 0 && (unsigned)idx < count && needs_function(list[idx]))
        snprintf(list[idx]->function, sizeof list[idx]->function, "%s", outer);
}

static void run_addr2line(const char *tool, const char *module, struct cf_sym **list,
                          unsigned count)
{
    char **argv = calloc(count + 8, sizeof *argv);
    char *addrs = malloc((size_t)count * 24);
    char **env = env_without_preload();
    int pipefd[2] = {-1, -1};
    if (!argv || !addrs || !env || pipe2(pipefd, O_CLOEXEC) != 0) goto out;

    unsigned a = 0;
    argv[a++] = (char *)"addr2line";
    argv[a++] = (char *)"-a";
    argv[a++] = (char *)"-f";
    argv[a++] = (char *)"-C";
    argv[a++] = (char *)"-i";
    argv[a++] = (char *)"-e";
    argv[a++] = (char *)module;
    for (unsigned i = 0; i < count; i++) {
        char *slot = addrs + (size_t)i * 24;
        snprintf(slot, 24, "0x%" PRIx64, list[i]->lookup - 1);
        argv[a++] = slot;
    }
    argv[a] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    pipefd[1] = -1;
    if (rc == 0) {
        char *text = read_all(pipefd[0], ADDR2LINE_DEADLINE_MS);
        if (text == NULL) {
            cf_log("addr2line took longer than %d s on %s; file:line left out (set "
                   "CUDAFRAG_ADDR2LINE=0 to skip it)",
                   ADDR2LINE_DEADLINE_MS / 1000, module);
            kill(pid, SIGKILL);
        }
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        if (text) parse_addr2line(text, list, count);
        free(text);
    }
out:
    if (pipefd[0] >= 0) close(pipefd[0]);
    if (pipefd[1] >= 0) close(pipefd[1]);
    free(env);
    free(addrs);
    free(argv);
}

void cf_symtab_resolve(struct cf_symtab *t, bool use_addr2line)
{
    if (t->n == 0) return;
    qsort(t->syms, t->n, sizeof t->syms[0], cmp_sym);
    for (unsigned i = 0; i < t->n; i++)
        resolve_dladdr(&t->syms[i]);

    char tool[PATH_MAX];
    if (!use_addr2line || !find_in_path("addr2line", tool, sizeof tool)) return;
    struct cf_sym **list = malloc(t->n * sizeof *list);
    bool *done = calloc(t->n, sizeof *done);
    if (list && done) {
        for (unsigned i = 0; i < t->n; i++) {
            if (done[i] || t->syms[i].path[0] == '\0') continue;
            unsigned count = 0;
            for (unsigned j = i; j < t->n; j++) {
                if (done[j] || strcmp(t->syms[j].path, t->syms[i].path) != 0) continue;
                done[j] = true;
                list[count++] = &t->syms[j];
            }
            run_addr2line(tool, t->syms[i].path, list, count);
        }
    }
    free(done);
    free(list);
}
