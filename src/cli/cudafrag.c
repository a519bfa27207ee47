/* The cudafrag command: runs a program with libcudafrag.so preloaded and the
 * CUDAFRAG_* variables set from its options, then gets out of the way (exec), so
 * the program's exit status is the command's. No shell is involved at any point.
 * It also names trace frames (module, offset) offline: cudafrag symbolize. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/advise.h"
#include "cli/blocks.h"
#include "cli/cmdline.h"
#include "cli/options_doc.h"
#include "cli/replay.h"
#include "cli/snapshot_import.h"
#include "cli/symbolize_dw.h"
#include "cli/views.h"
#include "cli/whatif.h"
#include "config/config.h"

#include "cudafrag_build.h"

#define EXIT_USAGE     CF_EXIT_USAGE
#define EXIT_NOT_FOUND 127 /* as a shell reports a command it cannot find */
#define EXIT_NOT_EXEC  126 /* ... and one it found but cannot execute */

static void die(int status, const char *fmt, const char *arg)
{
    fputs("cudafrag: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(status);
}

/* The directory holding this executable, from /proc/self/exe (argv[0] may be a
 * bare name found through PATH). */
static void exe_dir(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0) die(EXIT_USAGE, "cannot find my own executable: %s", strerror(errno));
    out[len] = '\0';
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0';
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The path buffers of `cudafrag run` (here and below) are static: it runs, once,
 * before the program it execs, and must run wherever that program does, on a
 * stack as small as `ulimit -s 16` leaves (a few of them on the stack took 28 KiB).
 *
 * beside_exe: an installed file or folder at rel from this executable's folder (a
 * relocated install: a Python wheel, a moved prefix), made absolute. */
static bool beside_exe(const char *dir, const char *rel, char *out, size_t n)
{
    static char cand[PATH_MAX * 2], real[PATH_MAX];
    snprintf(cand, sizeof cand, "%s/%s", dir, rel);
    if (realpath(cand, real) == NULL || strlen(real) >= n) return false;
    strcpy(out, real);
    return true;
}

/* Build tree first (the library sits one level above src/cli/), then the
 * installed location relative to this executable, then the configured one. */
static void find_library(char *out, size_t n)
{
    static char dir[PATH_MAX], cand[PATH_MAX + 32], up[PATH_MAX];
    exe_dir(dir, sizeof dir);
    /* The directory is made absolute, the file keeps its development name. */
    snprintf(cand, sizeof cand, "%s/..", dir);
    if (realpath(cand, up) && snprintf(out, n, "%s/libcudafrag.so", up) < (int)n && exists(out))
        return;
    if (beside_exe(dir, CUDAFRAG_LIBDIR_FROM_BIN "/libcudafrag.so", out, n)) return;
    snprintf(cand, sizeof cand, "%s/libcudafrag.so", CUDAFRAG_LIBDIR);
    if (exists(cand) && strlen(cand) < n) {
        strcpy(out, cand);
        return;
    }
    fprintf(stderr, "cudafrag: cannot find libcudafrag.so (looked in %s/.., %s/%s and %s)\n", dir,
            dir, CUDAFRAG_LIBDIR_FROM_BIN, CUDAFRAG_LIBDIR);
    exit(EXIT_NOT_FOUND);
}

/* ld.so splits LD_PRELOAD at spaces and colons, LD_LIBRARY_PATH at colons and
 * semicolons, with no way to quote: an install path holding one of these would
 * silently leave the program unprofiled. */
#define PRELOAD_SEPARATORS " :"
#define LIBPATH_SEPARATORS ":;"

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* A directory only we can write to: anyone else could otherwise swap the link
 * that the program (and every child it starts) preloads. */
static int private_dir(const char *path, char *why, size_t n)
{
    struct stat st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    if (lstat(path, &st) != 0) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        snprintf(why, n, "it is not a directory private to this user");
        return -1;
    }
    return 0;
}

/* The same name for the same target on every run (nested runs recognise it and
 * nothing piles up): <tmp>/cudafrag-<uid>/<hash of the target>/<its base name>.
 * The links stay: programs started by the profiled one preload them too. */
static int private_link(const char *target, char *out, size_t n, char *why, size_t wn)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/' || strpbrk(tmp, PRELOAD_SEPARATORS LIBPATH_SEPARATORS))
        tmp = "/tmp";
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    static char dir[PATH_MAX], sub[PATH_MAX + 24], cur[PATH_MAX], fresh[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/cudafrag-%u", tmp, (unsigned)geteuid());
    snprintf(sub, sizeof sub, "%s/%016" PRIx64, dir, fnv1a(target));
    if (snprintf(out, n, "%s/%s", sub, base) >= (int)n || strpbrk(base, PRELOAD_SEPARATORS)) {
        snprintf(why, wn, "the name is too long or odd");
        return -1;
    }
    if (private_dir(dir, why, wn) != 0 || private_dir(sub, why, wn) != 0) return -1;
    ssize_t len = readlink(out, cur, sizeof cur - 1);
    if (len > 0 && (size_t)len == strlen(target) && memcmp(cur, target, (size_t)len) == 0) return 0;
    /* Replaced in one step, so a concurrent run never sees the name missing. */
    snprintf(fresh, sizeof fresh, "%s.%ld", out, (long)getpid());
    unlink(fresh);
    if (symlink(target, fresh) != 0 || rename(fresh, out) != 0) {
        snprintf(why, wn, "%s", strerror(errno));
        unlink(fresh);
        return -1;
    }
    return 0;
}

/* path itself when the list variable can carry it, else a private link to it. */
static void listable(const char *path, const char *separators, const char *var, char *out, size_t n)
{
    char why[256];
    if (strpbrk(path, separators) == NULL) {
        snprintf(out, n, "%s", path);
        return;
    }
    if (private_link(path, out, n, why, sizeof why) == 0) return;
    fprintf(stderr,
            "cudafrag: %s cannot hold \"%s\" (it has a space, colon or semicolon), and no "
            "private link to it could be made under $TMPDIR or /tmp: %s. Install cudafrag "
            "under a path without those characters.\n",
            var, path, why);
    exit(EXIT_NOT_FOUND);
}

/* Build tree first (simcuda/ sits two levels above src/cli/), then the
 * installed location relative to this executable, then the configured one. */
static void sim_dirs(char *out, size_t n)
{
    static char dir[PATH_MAX], drv[PATH_MAX + 32], rt[PATH_MAX + 32], a[PATH_MAX], b[PATH_MAX];
    static char la[PATH_MAX], lb[PATH_MAX];
    exe_dir(dir, sizeof dir);
    snprintf(drv, sizeof drv, "%s/../../simcuda/driver", dir);
    snprintf(rt, sizeof rt, "%s/../../simcuda/runtime", dir);
    if (exists(drv) && exists(rt) && realpath(drv, a) && realpath(rt, b)) {
        listable(a, LIBPATH_SEPARATORS, "LD_LIBRARY_PATH", la, sizeof la);
        listable(b, LIBPATH_SEPARATORS, "LD_LIBRARY_PATH", lb, sizeof lb);
        snprintf(out, n, "%s:%s", la, lb);
        return;
    }
    if (beside_exe(dir, CUDAFRAG_SIMDIR_FROM_BIN, a, sizeof a)) {
        listable(a, LIBPATH_SEPARATORS, "LD_LIBRARY_PATH", out, n);
        return;
    }
    if (!exists(CUDAFRAG_SIMDIR))
        die(EXIT_NOT_FOUND, "the simulated device is not installed (looked in %s)",
            CUDAFRAG_SIMDIR);
    listable(CUDAFRAG_SIMDIR, LIBPATH_SEPARATORS, "LD_LIBRARY_PATH", out, n);
}

/* Puts value in front of a ':'-separated list variable. */
static void prepend(const char *var, const char *value)
{
    const char *old = getenv(var);
    if (old == NULL || *old == '\0') {
        setenv(var, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *joined = malloc(n);
    if (joined == NULL) die(EXIT_USAGE, "%s", "out of memory");
    snprintf(joined, n, "%s:%s", value, old);
    setenv(var, joined, 1);
    free(joined);
}

/* The folder of the CuPy hook (sitecustomize.py) of --blocks, as PYTHONPATH can
 * carry it: build tree first (src/cli/python/), then the installed location
 * (relative to this executable, then the configured one). NULL when none
 * has it. */
static const char *cupy_hook_dir(char *out, size_t n)
{
    static char dir[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
    exe_dir(dir, sizeof dir);
    snprintf(cand, sizeof cand, "%s/python/sitecustomize.py", dir);
    if (!exists(cand) &&
        !beside_exe(dir, CUDAFRAG_PYDIR_FROM_BIN "/sitecustomize.py", cand, sizeof cand))
        snprintf(cand, sizeof cand, "%s/sitecustomize.py", CUDAFRAG_PYDIR);
    if (!exists(cand) || realpath(cand, real) == NULL) return NULL;
    *strrchr(real, '/') = '\0';
    listable(real, ":", "PYTHONPATH", out, n); /* Python splits it at colons only */
    return out;
}

/* A ':'-separated list variable holds entry. */
static bool list_has(const char *var, const char *entry)
{
    const char *list = getenv(var);
    size_t n = strlen(entry);
    for (const char *p = list; p && *p; p += strcspn(p, ":"), p += *p == ':')
        if (strncmp(p, entry, n) == 0 && (p[n] == ':' || p[n] == '\0')) return true;
    return false;
}

/* --blocks: the frameworks' switches, said in one line (and a note per setting of
 * the user's that a switch makes moot). */
static void blocks(void)
{
    static struct cf_blocks b;
    static char pydir[PATH_MAX];
    const char *hook = cupy_hook_dir(pydir, sizeof pydir);
    cf_blocks_setup(hook, &b);
    if (hook && !list_has("PYTHONPATH", hook)) prepend("PYTHONPATH", hook);
    fprintf(stderr, "cudafrag: %s\n", b.line);
    for (const char *p = b.notes; *p;) {
        size_t len = strcspn(p, "\n");
        fprintf(stderr, "cudafrag: note: %.*s\n", (int)len, p);
        p += len;
        p += *p == '\n';
    }
}

enum {
    OPT_SIM = CF_OPT_LONG,
    OPT_ARENA,
    OPT_BLOCKS,
    OPT_TRACE,
    OPT_STACK_DEPTH,
    OPT_ON_OOM,
    OPT_OUTPUT,
    OPT_CHECK,
    OPT_BUILD_ID,
    OPT_JSON,
    OPT_HTML
};

static int stack_depth(const char *v)
{
    const struct cf_option *o = &cf_options[CF_OPT_STACK_DEPTH];
    int64_t depth;
    if (cf_parse_int(v, (int64_t)o->lo, (int64_t)o->hi, &depth) != 0)
        return cf_usage_error("run", "--stack-depth \"%s\": expected an integer from %llu to %llu",
                              v, (unsigned long long)o->lo, (unsigned long long)o->hi);
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)depth);
    setenv("CUDAFRAG_STACK_DEPTH", num, 1);
    return 0;
}

static int on_oom(const char *v)
{
    int64_t mode;
    if (cf_parse_choice(v, cf_opt_choices(CF_OPT_ON_OOM), &mode) != 0)
        return cf_usage_error("run", "--on-oom \"%s\": expected off, report or trace", v);
    setenv("CUDAFRAG_ON_OOM", v, 1);
    return 0;
}

/* One option of run: 0, or the usage status. */
static int run_option(int opt, const char *v, bool *sim, bool *check, bool *block_level,
                      struct cf_limits *limits)
{
    int lim = cf_limits_option(limits, opt, v, "run");
    if (lim) return lim == 1 ? 0 : EXIT_USAGE;
    switch (opt) {
    case OPT_SIM:
        *sim = true;
        return 0;
    case OPT_ARENA:
        setenv("CUDAFRAG_ARENA", "1", 1);
        return 0;
    case OPT_BLOCKS:
        *block_level = true;
        return 0;
    case OPT_TRACE:
        setenv("CUDAFRAG_TRACE", "1", 1);
        return 0;
    case OPT_STACK_DEPTH:
        return stack_depth(v);
    case OPT_ON_OOM:
        return on_oom(v);
    case OPT_OUTPUT:
        setenv("CUDAFRAG_OUTPUT", v, 1);
        return 0;
    case OPT_CHECK:
        *check = true;
        return 0;
    default:
        return EXIT_USAGE;
    }
}

static int cmd_run(int argc, char **argv)
{
    /* '+': the options end at the program, whose own options are its. */
    static const struct option longopts[] = {
        {"sim", no_argument, NULL, OPT_SIM},
        {"arena", no_argument, NULL, OPT_ARENA},
        {"blocks", no_argument, NULL, OPT_BLOCKS},
        {"trace", no_argument, NULL, OPT_TRACE},
        {"stack-depth", required_argument, NULL, OPT_STACK_DEPTH},
        {"on-oom", required_argument, NULL, OPT_ON_OOM},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"check", no_argument, NULL, OPT_CHECK},
        CF_LIMIT_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool sim = false, check = false, block_level = false, started = false;
    struct cf_limits limits;
    cf_limits_init(&limits);
    for (int opt; (opt = cf_getopt(argc, argv, "+:h", longopts, &started)) != -1;) {
        if (opt == 'h') {
            cf_help_print(stdout, "run");
            return 0;
        }
        if (run_option(opt, optarg, &sim, &check, &block_level, &limits) != 0) return EXIT_USAGE;
    }
    int i = optind;
    if (i >= argc) return cf_usage_error("run", "needs a program to run");
    if (check != limits.any) return cf_usage_error("run", "--check goes with at least one limit");
    if (block_level) blocks();
    static char found[PATH_MAX], lib[PATH_MAX], dirs[2 * PATH_MAX + 2];
    find_library(found, sizeof found);
    listable(found, PRELOAD_SEPARATORS, "LD_PRELOAD", lib, sizeof lib);
    if (sim) {
        sim_dirs(dirs, sizeof dirs);
        prepend("LD_LIBRARY_PATH", dirs);
    }
    /* cudafrag run inside cudafrag run: the library is already there once. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload == NULL || strstr(preload, lib) == NULL) prepend("LD_PRELOAD", lib);
    if (check) return cf_run_checked(argv + i, &limits);
    execvp(argv[i], argv + i);
    int e = errno;
    /* Formatted into a static buffer and written whole: fprintf to the
     * unbuffered stderr formats through 8 KiB of stack, more than a program
     * run under `ulimit -s 20` may leave it. */
    static char msg[PATH_MAX + 256];
    int len = snprintf(msg, sizeof msg, "cudafrag: cannot run %s: %s\n", argv[i], strerror(e));
    if (len > 0) {
        size_t n = (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1;
        ssize_t written = write(STDERR_FILENO, msg, n);
        (void)written; /* nothing more can be said when stderr fails */
    }
    return e == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXEC;
}

static bool parse_offset(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 16);
    if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno != 0) return false;
    *v = x;
    return true;
}

static void print_frames(uint64_t off, const struct cf_dw_frame *f, int n)
{
    if (n == 0) printf("0x%" PRIx64 " ??\n", off);
    for (int i = 0; i < n; i++, f++) {
        if (f->stale) {
            printf("0x%" PRIx64 " ?? (build-id mismatch)\n", off);
            continue;
        }
        printf("0x%" PRIx64 " %s %s:%u%s\n", off, *f->function ? f->function : "??",
               *f->file ? f->file : "??", f->line, f->inlined ? " (inlined)" : "");
    }
}

static int symbolize_offsets(const char *module, const char *build_id, char **offsets, int n)
{
    uint64_t off;
    for (int i = 0; i < n; i++) {
        if (parse_offset(offsets[i], &off)) continue;
        return cf_usage_error("symbolize", "offset \"%s\": expected a hexadecimal number",
                              offsets[i]);
    }
    struct cf_dw *dw = cf_dw_open();
    if (dw == NULL) die(EXIT_FAILURE, "%s", "out of memory");
    enum { MAX_FRAMES = 64 };
    static struct cf_dw_frame frames[MAX_FRAMES];
    int status = 0;
    for (int i = 0; i < n && status == 0 && parse_offset(offsets[i], &off); i++) {
        int k = cf_dw_lookup(dw, module, build_id, off, frames, MAX_FRAMES);
        if (k < 0)
            status = EXIT_FAILURE;
        else
            print_frames(off, frames, k);
    }
    cf_dw_close(dw);
    return status;
}

/* A build-id as ELF notes hold it: whole bytes, at most the 64 the symbolizer keeps. */
static bool build_id_ok(const char *hex)
{
    size_t n = strlen(hex);
    return n > 0 && n % 2 == 0 && n <= 128 && strspn(hex, "0123456789abcdefABCDEF") == n;
}

static int cmd_symbolize(int argc, char **argv)
{
    static const struct option longopts[] = {{"build-id", required_argument, NULL, OPT_BUILD_ID},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *build_id = NULL;
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        if (opt == 'h') {
            cf_help_print(stdout, "symbolize");
            return 0;
        }
        if (opt != OPT_BUILD_ID) return EXIT_USAGE;
        build_id = optarg;
        if (!build_id_ok(build_id))
            return cf_usage_error("symbolize",
                                  "--build-id \"%s\": expected an even number of hex digits, "
                                  "at most 128",
                                  build_id);
    }
    if (argc - optind < 2) return cf_usage_error("symbolize", "needs a module and an offset");
    return symbolize_offsets(argv[optind], build_id, argv + optind + 1, argc - optind - 1);
}

struct report_args {
    bool json, models;
    const char *trace, *html;
};

/* 0, -1 after --help, or the usage status. */
static int report_parse(int argc, char **argv, struct cf_whatif *w, struct report_args *a)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, OPT_JSON},
                                             {"html", required_argument, NULL, OPT_HTML},
                                             CF_WHATIF_LONGOPTS,
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool started = false;
    for (int opt; (opt = cf_getopt(argc, argv, ":h", longopts, &started)) != -1;) {
        int taken = cf_whatif_option(w, opt, optarg, "report");
        if (taken == EXIT_USAGE) return EXIT_USAGE;
        a->models |= taken == 1;
        if (opt == OPT_JSON) {
            a->json = true;
        } else if (opt == OPT_HTML) {
            a->html = optarg;
        } else if (opt == 'h') {
            cf_help_print(stdout, "report");
            return -1;
        } else if (!taken) {
            return EXIT_USAGE;
        }
    }
    if (optind == argc) return cf_usage_error("report", "needs a trace file");
    if (argc - optind > 1) return cf_usage_error("report", "unexpected \"%s\"", argv[optind + 1]);
    a->trace = argv[optind];
    /* One replay per process, and a pipe is read once: one report per run. */
    if (a->json && a->html)
        return cf_usage_error("report", "--json and --html go separately: one report per run");
    if (a->html == NULL && a->models)
        return cf_usage_error("report", "--device-memory, --model and --sweep go with --html "
                                        "(the page's what-if section)");
    return cf_out_not_input("report", a->html, (char *const *)&a->trace, 1);
}

static int cmd_report(int argc, char **argv)
{
    struct report_args a = {0};
    struct cf_whatif *w = cf_whatif_new();
    if (w == NULL) die(1, "out of memory%s", "");
    int rc = report_parse(argc, argv, w, &a);
    if (rc == 0 && a.html) {
        /* The what-if section's options are cudafrag replay's, read by its parser. */
        rc = cf_whatif_plan(w, "report");
        if (rc == 0) rc = cf_html_write(a.trace, a.html, w);
    } else if (rc == 0) {
        rc = cf_replay_report(a.trace, a.json, stdout);
    }
    cf_whatif_free(w);
    return rc < 0 ? 0 : rc;
}

static int (*const commands[])(int, char **) = {
    cmd_run,      cmd_symbolize, cmd_report,    cf_cmd_export, cf_cmd_diff,
    cf_cmd_merge, cf_cmd_check,  cf_cmd_replay, cf_cmd_import, cf_cmd_advise};
static const char *const command_names[] = {"run",   "symbolize", "report", "export", "diff",
                                            "merge", "check",     "replay", "import", "advise"};

int main(int argc, char **argv)
{
    if (argc < 2) return cf_usage_error(NULL, "no subcommand given");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cf_help_all(stdout);
        cf_print_options_text(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--help-markdown") == 0) {
        cf_print_options_markdown(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("cudafrag %s\n", CUDAFRAG_VERSION);
        return 0;
    }
    /* Each subcommand parses its argv with argv[0] its own name (getopt_long). */
    for (unsigned i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], command_names[i]) == 0) return commands[i](argc - 1, argv + 1);
    return cf_usage_error(NULL, "unknown command \"%s\"", argv[1]);
}
