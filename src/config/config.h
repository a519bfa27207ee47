/* Every CUDAFRAG_* knob, in one table. Read once (cf_config_load), validated in
 * one place: a bad value prints one warning naming the variable and what it
 * accepts, and the default is kept. */
#ifndef CF_CONFIG_H
#define CF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cf_opt_type { CF_BOOL, CF_INT, CF_SIZE, CF_STRING, CF_CHOICE };

/* X(id, NAME, type, default, min, max, doc) -- min/max bound CF_INT and CF_SIZE; a
 * CF_CHOICE knob's words are in CF_CHOICES below. */
// clang-format off
#define CF_OPTIONS(X)                                                                              \
    X(ENABLE, "CUDAFRAG_ENABLE", CF_BOOL, "1", 0, 1,                                               \
      "Master switch; 0 makes every hook a plain pass-through and writes no report.")              \
    X(STACK_DEPTH, "CUDAFRAG_STACK_DEPTH", CF_INT, "16", 0, 64,                                    \
      "Call-stack frames recorded per allocation, native and Python each (0 = stacks off, sites " \
      "keyed by API).")                                                                            \
    X(SKIP_FRAMES, "CUDAFRAG_SKIP_FRAMES", CF_STRING, "", 0, 0,                                    \
      "The program's own allocator frames, as comma-separated patterns ('*' matches any text) "    \
      "of a function, module or Python file: a call site is named by its first frame matching "    \
      "none of them nor the built-in list (docs/report.md). Full stacks stay in JSON and traces.") \
    X(PYTHON_MEMORY, "CUDAFRAG_PYTHON_MEMORY", CF_BOOL, "1", 0, 1,                                 \
      "Read Python frames from the interpreter's memory (CPython 3.10-3.13), also on threads "    \
      "that released the GIL (docs/python-frames.md); 0: only through CPython's C API, on "       \
      "threads holding the GIL.")                                                                  \
    X(OUTPUT, "CUDAFRAG_OUTPUT", CF_STRING, "cudafrag-%e-%p", 0, 0,                                \
      "Report path pattern without extension (.txt and .json are added); %p pid, %e executable, " \
      "%h host, %r rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID), %% a percent sign. "           \
      "Empty: no files.")                                                                          \
    X(STDERR, "CUDAFRAG_STDERR", CF_BOOL, "1", 0, 1,                                               \
      "Also print the text report to stderr.")                                                     \
    X(JSON, "CUDAFRAG_JSON", CF_BOOL, "1", 0, 1, "Write the JSON report next to the text one.")    \
    X(TOP, "CUDAFRAG_TOP", CF_INT, "10", 1, 1000,                                                 \
      "Call sites listed per table and per finding in the report.")                                \
    X(SAMPLE_MS, "CUDAFRAG_SAMPLE_MS", CF_INT, "10", 0, 60000,                                     \
      "Minimum milliseconds between footprint samples (cuMemGetInfo, pool attributes) taken "      \
      "when live bytes reach a new peak; 0 samples every new peak.")                               \
    X(TIME_ONE_IN, "CUDAFRAG_TIME_ONE_IN", CF_INT, "8", 1, 1000000,                              \
      "Stream-ordered allocations and frees (cudaMallocAsync, cudaFreeAsync and their driver "     \
      "and pool forms) timed: 1 in N, chosen at random, and the report's time for those APIs "      \
      "estimated from them; 1 times every call. Every other call is always timed.")                \
    X(SIGNAL, "CUDAFRAG_SIGNAL", CF_BOOL, "1", 0, 1,                                               \
      "Write an interim report on SIGUSR1 once the program made a CUDA call (before that, or "     \
      "when the program has its own handler, SIGUSR1 keeps its action).")                          \
    X(CHILDREN, "CUDAFRAG_CHILDREN", CF_BOOL, "1", 0, 1,                                           \
      "Profile child processes started with exec/posix_spawn (each writes its own report).")       \
    X(ALWAYS_REPORT, "CUDAFRAG_ALWAYS_REPORT", CF_BOOL, "0", 0, 1,                                 \
      "Write a report even when the process made no CUDA allocation call.")                        \
    X(ARENA, "CUDAFRAG_ARENA", CF_BOOL, "0", 0, 1,                                                 \
      "Serve cudaMalloc/cuMemAlloc (and pitch variants) from cudafrag's pooled arena.")            \
    X(ARENA_ASYNC, "CUDAFRAG_ARENA_ASYNC", CF_BOOL, "0", 0, 1,                                     \
      "With CUDAFRAG_ARENA, also serve cudaMallocAsync/cuMemAllocAsync on default pools.")         \
    X(ARENA_RESERVE, "CUDAFRAG_ARENA_RESERVE", CF_SIZE, "0", 0, UINT64_MAX,                        \
      "Virtual address range of each arena part (K/M/G/T suffixes): a device's arena reserves "    \
      "one per part, up to 16 parts; 0 = twice the device's memory. Native runs model one "        \
      "part of this size (0 = 256 GiB; at most 16 TiB).")                                          \
    X(ARENA_SLACK, "CUDAFRAG_ARENA_SLACK", CF_SIZE, "64M", 0, UINT64_MAX,                          \
      "Mapped-but-free memory the arena keeps before unmapping whole free granules: at least "     \
      "this much, up to the device's peak live bytes; 0 = unmap at once.")                         \
    X(SHADOW, "CUDAFRAG_SHADOW", CF_BOOL, "1", 0, 1,                                               \
      "In native runs, replay allocations on a host-only arena model and report what the arena "   \
      "would have reserved.")                                                                      \
    X(TRACE, "CUDAFRAG_TRACE", CF_BOOL, "0", 0, 1,                                                 \
      "Write every event to <output>.cftrace (compressed binary, see docs/trace-format.md); "      \
      "`cudafrag report FILE` prints the report from it.")                                          \
    X(TRACE_FLUSH_MS, "CUDAFRAG_TRACE_FLUSH_MS", CF_INT, "200", 1, 60000,                          \
      "Milliseconds between flushes of the threads' trace buffers: what a killed process can "    \
      "lose at most.")                                                                             \
    X(BLOCKS, "CUDAFRAG_BLOCKS", CF_STRING, "", 0, 0,                                              \
      "Set by `cudafrag run --blocks`: the framework allocator switches in effect for "           \
      "block-level capture, separated by '; ' (docs/replay.md). Shown in the report's header "    \
      "and kept in the trace; it changes nothing itself.")                                       \
    X(ON_OOM, "CUDAFRAG_ON_OOM", CF_CHOICE, "off", 0, 0,                                           \
      "At the first allocation that fails for memory: 'report' writes an interim report to "      \
      "<output>.oom.txt and .oom.json (who held the memory, the failed request) before the "      \
      "call returns; 'trace' also flushes the trace to disk; later failures are only counted.")
// clang-format on

/* The words a CF_CHOICE knob accepts, '|'-separated, in the order of its enum: its
 * value is the index of the word given (cf_opt_choice). */
#define CF_CHOICES(X) X(ON_OOM, "off|report|trace")
enum cf_on_oom { CF_ON_OOM_OFF, CF_ON_OOM_REPORT, CF_ON_OOM_TRACE };

enum cf_opt_id {
#define CF_OPT_ENUM(id, name, type, def, lo, hi, doc) CF_OPT_##id,
    CF_OPTIONS(CF_OPT_ENUM)
#undef CF_OPT_ENUM
        CF_OPT_COUNT
};

struct cf_option {
    const char *name;
    enum cf_opt_type type;
    const char *def;
    uint64_t lo, hi;
    const char *doc;
};

extern const struct cf_option cf_options[CF_OPT_COUNT];

/* Parse the environment once; later calls return at once. Async-signal-unsafe only
 * in that it may print a warning; never allocates. */
void cf_config_load(void);
/* Re-read after fork/exec-like changes of the environment (tests). */
void cf_config_reload(void);

/* The command's own settings, which are not its environment's (`cudafrag report
 * TRACE` takes the traced process's). cf_config_defaults: every option at its
 * default, the environment not read. cf_opt_set: the option of that name
 * (CUDAFRAG_...) set as the environment would set it; 0, -1 when the value is
 * not accepted (one warning naming the variable and what it accepts; the option
 * keeps its value), -2 when no option has that name. A string value is copied.
 * cf_config_save/restore: every option's value, around a temporary change. */
void cf_config_defaults(void);
int cf_opt_set(const char *name, const char *value);
struct cf_config_saved;
struct cf_config_saved *cf_config_save(void);          /* NULL: no memory */
void cf_config_restore(struct cf_config_saved *saved); /* and frees it */

/* Parsed values (strings point into the environment or the default literal), and
 * whether they are: 0 no, 1 in progress, 2 done. Read through the functions here;
 * cf_opt_bool is inline, as every intercepted call asks for CUDAFRAG_ENABLE. */
union cf_opt_value {
    bool b;
    int64_t i;
    uint64_t z;
    const char *s;
};
extern union cf_opt_value cf_opt_values[CF_OPT_COUNT];
extern int cf_config_loaded;

static inline bool cf_opt_bool(enum cf_opt_id id)
{
    if (__builtin_expect(__atomic_load_n(&cf_config_loaded, __ATOMIC_ACQUIRE) != 2, 0))
        cf_config_load();
    return cf_opt_values[id].b;
}
int64_t cf_opt_int(enum cf_opt_id id);
uint64_t cf_opt_size(enum cf_opt_id id);
const char *cf_opt_str(enum cf_opt_id id);
int cf_opt_choice(enum cf_opt_id id);
/* A CF_CHOICE knob's words ("off|report|trace"), NULL for any other knob. */
const char *cf_opt_choices(enum cf_opt_id id);

/* The items of a '; '-separated list knob (CUDAFRAG_BLOCKS), one per call:
 * copies the next item, trimmed, into item and returns where to continue, or
 * NULL after the last. */
const char *cf_opt_item(const char *p, char *item, size_t n);

/* Parsers shared with the command line; return 0 on success. */
int cf_parse_bool(const char *s, bool *out);
int cf_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
int cf_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* s among the '|'-separated words (case-insensitive): *out is its index. */
int cf_parse_choice(const char *s, const char *words, int64_t *out);

#endif
