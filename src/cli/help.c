/* What `cudafrag --help` and `cudafrag SUBCOMMAND --help` print, and the line
 * pointing to them after a usage error. */
#include <string.h>

#include "cli/cmdline.h"

struct help {
    const char *name;
    const char *brief;    /* one line, for the pointer after an error */
    const char *synopsis; /* after "usage: ", continuation lines aligned to it */
    const char *text;     /* what it does, its options */
};

static const struct help helps[] = {
    {"run", "cudafrag run [OPTION...] [--] PROG [ARGS...]",
     "cudafrag run [--sim] [--arena] [--blocks] [--trace] [--stack-depth N]\n"
     "                    [--on-oom off|report|trace] [--output PATTERN] [--check LIMITS...]\n"
     "                    [--] PROG [ARGS...]\n",
     "Runs PROG with libcudafrag.so preloaded; a report of its CUDA memory allocations is\n"
     "written when it exits. PROG's exit status is passed through unchanged. The options\n"
     "end at PROG: what follows is PROG's.\n"
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
     "  --on-oom MODE      at the first allocation that fails for memory: report writes\n"
     "                     <output>.oom.txt/.json, trace also flushes the trace to disk\n"
     "                     (CUDAFRAG_ON_OOM; default off)\n"
     "  --output PATTERN   report path without extension (CUDAFRAG_OUTPUT; %p pid,\n"
     "                     %e executable, %h host, %r rank, %% percent sign)\n"
     "  --check            run PROG as a child, then hold its JSON report against LIMITS\n"
     "                     (as cudafrag check); PROG's own non-zero status comes first\n"},
    {"report", "cudafrag report [--json | --html OUT.html [WHAT-IF OPTIONS]] TRACE",
     "cudafrag report [--json | --html OUT.html [--device-memory SIZE]\n"
     "                       [--model NAME[:KNOB=VALUE,...]]... [--sweep ...]...] TRACE\n",
     "report prints the report the traced process printed at exit, computed again from\n"
     "TRACE alone, with call sites named from DWARF (file:line, inlined frames).\n"
     "\n"
     "  --json             the JSON report instead of the text one\n"
     "  --html OUT.html    a self-contained HTML page instead: memory over time, flame\n"
     "                     graphs, the what-if table of replay (its --device-memory,\n"
     "                     --model and --sweep choose the models; default all)\n"},
    {"replay", "cudafrag replay [OPTION...] TRACE",
     "cudafrag replay [--device-memory SIZE] [--model NAME[:KNOB=VALUE,...]]...\n"
     "                       [--sweep [MODEL:]KNOB=V1,V2,...]... [--json] [--check[=N]] TRACE\n"
     "       cudafrag replay --models\n",
     "replay runs TRACE's device-memory allocations through allocator models (lower-bound,\n"
     "driver, pytorch, async-pool, arena by default; xla-bfc, JAX's, when asked for) and\n"
     "prints each one's peak footprint, fragmentation, driver calls and out-of-memory point\n"
     "(docs/replay.md).\n"
     "\n"
     "  --device-memory SIZE  memory of the device (default: from the trace)\n"
     "  --model SPEC          a model and its knobs, e.g. pytorch:max_split_size_mb=128\n"
     "  --sweep KNOB=V1,...   one row per value; the best is named\n"
     "  --models              list the models and their knobs\n"
     "  --check[=N]           verify each model's invariants after every (N-th) operation\n"
     "  --json                the table as JSON\n"},
    {"advise", "cudafrag advise [--device-memory SIZE] [--json] TRACE",
     "cudafrag advise [--device-memory SIZE] [--json] TRACE\n",
     "advise replays a PyTorch run's tensors (a `cudafrag run --blocks` trace or an\n"
     "imported snapshot) through the pytorch and async-pool models over the caching\n"
     "allocator's knobs (expandable_segments, max_split_size_mb, roundup_power2_divisions)\n"
     "and the cudaMallocAsync backend, and prints the PYTORCH_CUDA_ALLOC_CONF line with the\n"
     "lowest predicted peak reserved that fits the device, against the run's own setting\n"
     "(docs/replay.md). Where no setting is more than the models' error (3 %) lower: keep.\n"
     "A JAX run's buffers (a --blocks trace) go through the xla-bfc model: the smallest\n"
     "XLA_PYTHON_CLIENT_MEM_FRACTION the run fits in preallocated, with 5 % headroom,\n"
     "beside XLA_PYTHON_CLIENT_PREALLOCATE=false and JAX's defaults.\n"
     "\n"
     "  --device-memory SIZE  memory of the device (default: from the trace; for JAX, the\n"
     "                        GPU the fraction is for)\n"
     "  --json                the advice and every setting tried as JSON\n"},
    {"import", "cudafrag import [-o TRACE] SNAPSHOT.pickle",
     "cudafrag import [-o|--output TRACE] SNAPSHOT.pickle\n",
     "import turns a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) into a\n"
     "trace: the tensors' allocations and frees, PyTorch's reserved memory as the footprint.\n"
     "\n"
     "  -o, --output TRACE    the trace to write (default: SNAPSHOT with .cftrace)\n"},
    {"symbolize", "cudafrag symbolize [--build-id HEX] MODULE OFFSET...",
     "cudafrag symbolize [--build-id HEX] MODULE OFFSET...\n",
     "symbolize prints the function, file:line and inlined callers of each hex OFFSET (an\n"
     "ELF virtual address; a return address minus 1 names its call) in MODULE, one line\n"
     "per frame, innermost first.\n"
     "\n"
     "  --build-id HEX     MODULE's build-id when traced (an even number of hex digits,\n"
     "                     at most 128): a replaced file is not read\n"},
    {"export", "cudafrag export TRACE --format FORMAT [-o OUT] [--weight W] [--device N]",
     "cudafrag export TRACE --format torch-snapshot|chrome-trace|folded|rmm-csv [-o OUT]\n"
     "                       [--weight peak|footprint-peak|leaked|allocated|calls] [--device N]\n",
     "export writes TRACE for other tools: PyTorch's memory viewer (torch-snapshot, a\n"
     "pickle), Perfetto (chrome-trace), flame graph tools (folded, weighed by --weight)\n"
     "and RMM's replay benchmark (rmm-csv).\n"
     "\n"
     "  -o, --output OUT   the file to write (default: stdout)\n"
     "  --device N         only device N (one the trace has), in every format\n"},
    {"diff", "cudafrag diff [--json] [--top N] A B", "cudafrag diff [--json] [--top N] A B\n",
     "diff compares two reports or traces by call site (module, function, file:line).\n"
     "\n"
     "  --json             the comparison as JSON\n"
     "  --top N            the N call sites that changed most (default 20; N from 1)\n"},
    {"merge", "cudafrag merge [--json] [-o OUT] REPORT...",
     "cudafrag merge [--json] [-o|--output OUT] REPORT...\n",
     "merge puts the reports (or traces) of a job's ranks side by side.\n"
     "\n"
     "  --json             the merged view as JSON\n"
     "  -o, --output OUT   the file to write (default: stdout)\n"},
    {"check", "cudafrag check REPORT LIMITS...", "cudafrag check REPORT LIMITS...\n",
     "check exits 1 when a report (or trace) exceeds a limit, with the reasons on stderr.\n"},
};

static const char conventions[] =
    "A REPORT is a JSON report or a trace; any input may be a pipe. Options go before or\n"
    "after the files, as --opt VALUE or --opt=VALUE, -o FILE or -oFILE; -- ends them.\n"
    "No subcommand writes over one of its inputs.\n"
    "\n"
    "LIMITS: --max-peak-live SIZE, --max-footprint SIZE (per device), --max-leak SIZE,\n"
    "        --max-fragmentation F (0.25 or 25%), --fail-on high|medium|low (findings)\n"
    "SIZE: bytes, or with K, M, G, T (powers of 1024)\n";

static const struct help *find(const char *sub)
{
    for (unsigned i = 0; sub && i < sizeof helps / sizeof helps[0]; i++)
        if (strcmp(sub, helps[i].name) == 0) return &helps[i];
    return NULL;
}

void cf_help_print(FILE *f, const char *sub)
{
    const struct help *h = find(sub);
    if (h == NULL) {
        cf_help_all(f);
        return;
    }
    fprintf(f, "usage: %s\n%s\n%s", h->synopsis, h->text, conventions);
}

void cf_help_all(FILE *f)
{
    for (unsigned i = 0; i < sizeof helps / sizeof helps[0]; i++)
        fprintf(f, "%s%s", i ? "       " : "usage: ", helps[i].synopsis);
    fputs("       cudafrag SUBCOMMAND --help | cudafrag --help | --help-markdown | --version\n\n",
          f);
    for (unsigned i = 0; i < sizeof helps / sizeof helps[0]; i++)
        fprintf(f, "%s\n", helps[i].text);
    fputs(conventions, f);
    fputc('\n', f);
}

void cf_help_pointer(FILE *f, const char *sub)
{
    const struct help *h = find(sub);
    if (h)
        fprintf(f, "usage: %s (more: cudafrag %s --help)\n", h->brief, h->name);
    else
        fputs("usage: cudafrag SUBCOMMAND [OPTION...] ... (more: cudafrag --help)\n", f);
}
