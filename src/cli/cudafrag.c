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

#include "cli/blocks.h"
#include "cli/options_doc.h"
#include "cli/replay.h"
#include "cli/snapshot_import.h"
#include "cli/symbolize_dw.h"
#include "cli/views.h"
#include "cli/whatif.h"
#include "config/config.h"

#include "cudafrag_build.h"

#define EXIT_USAGE     2
#define EXIT_NOT_FOUND 127 /* as a shell reports a command it cannot find */
#define EXIT_NOT_EXEC  126 /* ... and one it found but cannot execute */

static const char usage[] =
    "usage: cudafrag run [--sim] [--arena] [--blocks] [--trace] [--stack-depth N]\n"
    "                    [--output PATTERN] [--check LIMITS...] [--] PROG [ARGS...]\n"
    "       cudafrag report [--json | --html OUT.html [--device-memory SIZE]\n"
    "                       [--model NAME[:KNOB=VALUE,...]]... [--sweep ...]...] TRACE\n"
    "       cudafrag replay [--device-memory SIZE] [--model NAME[:KNOB=VALUE,...]]...\n"
    "                       [--sweep [MODEL:]KNOB=V1,V2,...]... [--json] [--check[=N]] TRACE\n"
    "       cudafrag import [--output TRACE] SNAPSHOT.pickle\n"
    "       cudafrag symbolize [--build-id HEX] MODULE OFFSET...\n"
    "       cudafrag export TRACE --format torch-snapshot|chrome-trace|folded|rmm-csv [-o OUT]\n"
    "                       [--weight peak|footprint-peak|leaked|allocated|calls] [--device N]\n"
    "       cudafrag diff [--json] [--top N] A B\n"
    "       cudafrag merge [--json] [-o OUT] REPORT...\n"
    "       cudafrag check REPORT [LIMITS...]\n"
    "       cudafrag --help | --help-markdown | --version\n"
    "\n"
    "Runs PROG with libcudafrag.so preloaded; a report of its CUDA memory allocations is\n"
    "written when it exits. PROG's exit status is passed through unchanged.\n"
    "\n"
    "  --sim              use cudafrag's simulated CUDA device (no GPU needed)\n"
    "  --arena            serve cudaMalloc/cuMemAlloc from cudafrag's pooled arena\n"
    "                     (CUDAFRAG_ARENA=1)\n"
    "  --blocks           the frameworks' caches off, each tensor an allocation of its\n"
    "                     own, served by the arena: PYTORCH_NO_CUDA_MEMORY_CACHING=1,\n"
    "                     XLA_PYTHON_CLIENT_ALLOCATOR=platform, CuPy's pools off at\n"
    "                     import, CUDAFRAG_ARENA=1; a variable you set is kept (one line\n"
    "                     says what was set; recorded in CUDAFRAG_BLOCKS)\n"
    "  --trace            also write every event to <output>.cftrace (CUDAFRAG_TRACE=1)\n"
    "  --stack-depth N    call-stack frames per allocation, 0 to 64 (CUDAFRAG_STACK_DEPTH)\n"
    "  --output PATTERN   report path without extension (CUDAFRAG_OUTPUT; %p pid,\n"
    "                     %e executable, %h host, %r rank, %% percent sign)\n"
    "  --check            run PROG as a child, then hold its JSON report against LIMITS\n"
    "                     (as cudafrag check); PROG's own non-zero status comes first\n"
    "\n"
    "report prints the report the traced process printed at exit, computed again from\n"
    "TRACE alone, with call sites named from DWARF (file:line, inlined frames).\n"
    "\n"
    "  --json             the JSON report instead of the text one\n"
    "  --html OUT.html    a self-contained HTML page: memory over time, flame graphs,\n"
    "                     the what-if table of replay (its --device-memory, --model\n"
    "                     and --sweep choose the models; default all)\n"
    "\n"
    "replay runs TRACE's device-memory allocations through allocator models (lower-bound,\n"
    "driver, pytorch, async-pool, arena; default all) and prints each one's peak footprint,\n"
    "fragmentation, driver calls and out-of-memory point (docs/replay.md).\n"
    "\n"
    "  --device-memory SIZE  memory of the device (default: from the trace)\n"
    "  --model SPEC          a model and its knobs, e.g. pytorch:max_split_size_mb=128\n"
    "  --sweep KNOB=V1,...   one row per value; the best is named\n"
    "  --models              list the models and their knobs\n"
    "  --check[=N]           verify each model's invariants after every (N-th) operation\n"
    "\n"
    "import turns a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) into a\n"
    "trace: the tensors' allocations and frees, PyTorch's reserved memory as the footprint.\n"
    "\n"
    "symbolize prints the function, file:line and inlined callers of each hex OFFSET (an\n"
    "ELF virtual address; a return address minus 1 names its call) in MODULE, one line\n"
    "per frame, innermost first.\n"
    "\n"
    "  --build-id HEX     MODULE's build-id when traced: a replaced file is not read\n"
    "\n"
    "export writes TRACE for other tools: PyTorch's memory viewer (torch-snapshot, a\n"
    "pickle), Perfetto (chrome-trace), flame graph tools (folded, weighed by --weight)\n"
    "and RMM's replay benchmark (rmm-csv). diff compares two reports or traces by call\n"
    "site (module, function, file:line); merge puts the reports of a job's ranks side by\n"
    "side; check exits 1 when a report exceeds a limit. A REPORT is a JSON report or a\n"
    "trace.\n"
    "\n"
    "LIMITS: --max-peak-live SIZE, --max-footprint SIZE (per device), --max-leak SIZE,\n"
    "        --max-fragmentation F (0.25 or 25%), --fail-on high|medium|low (findings)\n"
    "\n";

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

/* The path buffers of `cudafrag run` are static: it runs, once, before the
 * program it execs, and must run wherever that program does, on a stack as small
 * as `ulimit -s 16` leaves (a few of them on the stack took 28 KiB). */

/* Build tree first (the library sits one level above src/cli/), then the
 * installed location. */
static void find_library(char *out, size_t n)
{
    static char dir[PATH_MAX], cand[PATH_MAX + 32], up[PATH_MAX];
    exe_dir(dir, sizeof dir);
    /* The directory is made absolute, the file keeps its development name. */
    snprintf(cand, sizeof cand, "%s/..", dir);
    if (realpath(cand, up) && snprintf(out, n, "%s/libcudafrag.so", up) < (int)n && exists(out))
        return;
    snprintf(cand, sizeof cand, "%s/libcudafrag.so", CUDAFRAG_LIBDIR);
    if (exists(cand) && strlen(cand) < n) {
        strcpy(out, cand);
        return;
    }
    fprintf(stderr, "cudafrag: cannot find libcudafrag.so (looked in %s/.. and %s)\n", dir,
            CUDAFRAG_LIBDIR);
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
 * installed location. */
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
 * carry it: build tree first (src/cli/python/), then the installed location. NULL
 * when neither has it. */
static const char *cupy_hook_dir(char *out, size_t n)
{
    static char dir[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
    exe_dir(dir, sizeof dir);
    snprintf(cand, sizeof cand, "%s/python/sitecustomize.py", dir);
    if (!exists(cand)) snprintf(cand, sizeof cand, "%s/sitecustomize.py", CUDAFRAG_PYDIR);
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

/* "--name VALUE" or "--name=VALUE"; returns the value or NULL if arg is not name. */
static const char *option_value(const char *name, char **argv, int *i, int argc)
{
    size_t len = strlen(name);
    if (strncmp(argv[*i], name, len) != 0) return NULL;
    if (argv[*i][len] == '=') return argv[*i] + len + 1;
    if (argv[*i][len] != '\0') return NULL;
    if (*i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", name);
    return argv[++*i];
}

static int cmd_run(int argc, char **argv)
{
    bool sim = false, check = false, block_level = false;
    struct cf_limits limits;
    int i = 0, lim;
    cf_limits_init(&limits);
    for (; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--sim") == 0) {
            sim = true;
        } else if (strcmp(argv[i], "--arena") == 0) {
            setenv("CUDAFRAG_ARENA", "1", 1);
        } else if (strcmp(argv[i], "--blocks") == 0) {
            block_level = true;
        } else if (strcmp(argv[i], "--trace") == 0) {
            setenv("CUDAFRAG_TRACE", "1", 1);
        } else if ((v = option_value("--stack-depth", argv, &i, argc))) {
            const struct cf_option *o = &cf_options[CF_OPT_STACK_DEPTH];
            int64_t depth;
            if (cf_parse_int(v, (int64_t)o->lo, (int64_t)o->hi, &depth) != 0) {
                fprintf(stderr,
                        "cudafrag: --stack-depth \"%s\": expected an integer from %llu to %llu\n",
                        v, (unsigned long long)o->lo, (unsigned long long)o->hi);
                return EXIT_USAGE;
            }
            char num[24];
            snprintf(num, sizeof num, "%lld", (long long)depth);
            setenv("CUDAFRAG_STACK_DEPTH", num, 1);
        } else if ((v = option_value("--output", argv, &i, argc))) {
            setenv("CUDAFRAG_OUTPUT", v, 1);
        } else if (strcmp(argv[i], "--check") == 0) {
            check = true;
        } else if ((lim = cf_limits_option(&limits, argv, &i, argc)) != 0) {
            if (lim < 0) return EXIT_USAGE;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "cudafrag: unknown option \"%s\"\n%s", argv[i], usage);
            return EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "cudafrag: run needs a program to run\n%s", usage);
        return EXIT_USAGE;
    }
    if (check != limits.any) {
        fprintf(stderr, "cudafrag: --check goes with at least one limit\n%s", usage);
        return EXIT_USAGE;
    }
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
    fprintf(stderr, "cudafrag: cannot run %s: %s\n", argv[i], strerror(e));
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
        fprintf(stderr, "cudafrag: offset \"%s\": expected a hexadecimal number\n%s", offsets[i],
                usage);
        return EXIT_USAGE;
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

static int cmd_symbolize(int argc, char **argv)
{
    const char *build_id = NULL;
    int i = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if ((build_id = option_value("--build-id", argv, &i, argc)) == NULL) {
            fprintf(stderr, "cudafrag: unknown option \"%s\"\n%s", argv[i], usage);
            return EXIT_USAGE;
        }
    }
    if (argc - i < 2) {
        fprintf(stderr, "cudafrag: symbolize needs a module and an offset\n%s", usage);
        return EXIT_USAGE;
    }
    return symbolize_offsets(argv[i], build_id, argv + i + 1, argc - i - 1);
}

/* The what-if section's options are cudafrag replay's, read by its parser. */
static int report_html(const char *path, const char *html, struct cf_whatif *w, bool models)
{
    if (html == NULL && models) {
        fprintf(stderr,
                "cudafrag: report: --device-memory, --model and --sweep go with --html (the "
                "page's what-if section)\n%s",
                usage);
        return EXIT_USAGE;
    }
    if (html == NULL) return -1;
    int rc = cf_whatif_plan(w, usage);
    return rc ? rc : cf_html_write(path, html, w);
}

static int cmd_report(int argc, char **argv)
{
    bool json = false, models = false;
    const char *path = NULL, *html = NULL, *v;
    struct cf_whatif *w = cf_whatif_new();
    if (w == NULL) die(1, "out of memory%s", "");
    for (int i = 0; i < argc; i++) {
        int taken = cf_whatif_option(w, argc, argv, &i, usage);
        if (taken == EXIT_USAGE) {
            cf_whatif_free(w);
            return EXIT_USAGE;
        }
        if (taken) {
            models = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if ((v = option_value("--html", argv, &i, argc)) != NULL) {
            html = v;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "cudafrag: report: unexpected \"%s\"\n%s", argv[i], usage);
            cf_whatif_free(w);
            return EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    int rc = EXIT_USAGE;
    if (path == NULL)
        fprintf(stderr, "cudafrag: report needs a trace file\n%s", usage);
    else if ((rc = report_html(path, html, w, models)) < 0)
        rc = cf_replay_report(path, json, stdout);
    cf_whatif_free(w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, stdout);
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
    if (strcmp(argv[1], "run") == 0) return cmd_run(argc - 2, argv + 2);
    if (strcmp(argv[1], "symbolize") == 0) return cmd_symbolize(argc - 2, argv + 2);
    if (strcmp(argv[1], "report") == 0) return cmd_report(argc - 2, argv + 2);
    if (strcmp(argv[1], "export") == 0) return cf_cmd_export(argc - 2, argv + 2);
    if (strcmp(argv[1], "diff") == 0) return cf_cmd_diff(argc - 2, argv + 2);
    if (strcmp(argv[1], "merge") == 0) return cf_cmd_merge(argc - 2, argv + 2);
    if (strcmp(argv[1], "check") == 0) return cf_cmd_check(argc - 2, argv + 2);
    if (strcmp(argv[1], "replay") == 0) return cf_cmd_replay(argc - 2, argv + 2, usage);
    if (strcmp(argv[1], "import") == 0) return cf_cmd_import(argc - 2, argv + 2, usage);
    fprintf(stderr, "cudafrag: unknown command \"%s\"\n%s", argv[1], usage);
    return EXIT_USAGE;
}
