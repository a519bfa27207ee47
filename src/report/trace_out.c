/* Where the trace goes and what frames it: the header (who was traced, with
 * which settings) when the library starts, and the END event, taken with the
 * final report, that carries what only the process could know (the time of the
 * report, the arena's own figures). The events in between come from record/. */
#include "report/trace_out.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "config/config.h"
#include "record/trace.h"
#include "report/outpath.h"
#include "base/log.h"

#include "cudafrag_build.h"

extern char **environ;

/* "key=value" lines; values never contain a newline (they are cut there). */
static size_t put_line(char *buf, size_t len, size_t cap, const char *key, const char *value)
{
    int w = snprintf(buf + len, cap - len, "%s=%.*s\n", key, (int)strcspn(value, "\n"), value);
    return w > 0 && (size_t)w < cap - len ? len + (size_t)w : len;
}

/* One instant on both clocks, so that a reader puts the events (CLOCK_MONOTONIC's
 * scale) on the wall clock that profilers such as Kineto and Nsight Systems use:
 * the wall clock read between two reads of the event clock, taken at their middle. */
static size_t clock_base(char *buf, size_t len, size_t cap)
{
    struct timespec wall;
    char num[32];
    uint64_t before = cf_now_ns();
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t after = cf_now_ns();
    snprintf(num, sizeof num, "%llu",
             (unsigned long long)wall.tv_sec * 1000000000ull + (unsigned long long)wall.tv_nsec);
    len = put_line(buf, len, cap, "realtime_base_ns", num);
    snprintf(num, sizeof num, "%llu", (unsigned long long)(before + (after - before) / 2));
    return put_line(buf, len, cap, "monotonic_base_ns", num);
}

/* The frameworks' allocator settings at start: `cudafrag advise` compares its
 * advice with the run's own setting. framework_vars names the variables read, so
 * that a reader tells "not set" from "not recorded" (an older trace). */
static const char *const framework_vars[] = {
    "PYTORCH_CUDA_ALLOC_CONF",        "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING", "XLA_PYTHON_CLIENT_ALLOCATOR",
    "XLA_PYTHON_CLIENT_PREALLOCATE",  "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION"};

static size_t framework_settings(char *buf, size_t len, size_t cap)
{
    char names[256] = "", line[4096];
    size_t n = sizeof framework_vars / sizeof framework_vars[0];
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", i ? "," : "", framework_vars[i]);
    }
    len = put_line(buf, len, cap, "framework_vars", names);
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(framework_vars[i]);
        if (v == NULL) continue;
        snprintf(line, sizeof line, "%s=%s", framework_vars[i], v);
        len = put_line(buf, len, cap, "framework_env", line);
    }
    return len;
}

static size_t build_header(char *buf, size_t cap)
{
    extern char *program_invocation_name;
    char num[64], host[256] = "";
    size_t len = 0;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    gethostname(host, sizeof host - 1);
    len = put_line(buf, len, cap, "cudafrag", CUDAFRAG_VERSION);
    len = put_line(buf, len, cap, "program", program_invocation_name);
    snprintf(num, sizeof num, "%ld", (long)getpid());
    len = put_line(buf, len, cap, "pid", num);
    len = put_line(buf, len, cap, "rank", cf_output_rank());
    len = put_line(buf, len, cap, "host", host);
    snprintf(num, sizeof num, "%llu", (unsigned long long)cf_rec.start_ns);
    len = put_line(buf, len, cap, "start_ns", num);
    snprintf(num, sizeof num, "%lld", (long long)wall.tv_sec);
    len = put_line(buf, len, cap, "wall_start_s", num);
    len = clock_base(buf, len, cap);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "CUDAFRAG_", 9) == 0) len = put_line(buf, len, cap, "env", *e);
    return framework_settings(buf, len, cap);
}

void cf_report_trace_open(void)
{
    if (!cf_trace_on()) return;
    char path[PATH_MAX], err[PATH_MAX + 128];
    const char *pattern = cf_opt_str(CF_OPT_OUTPUT);
    if (pattern == NULL || pattern[0] == '\0') {
        cf_log("CUDAFRAG_TRACE=1 needs an output path (CUDAFRAG_OUTPUT is empty); tracing is off");
        cf_trace_finish(NULL);
        return;
    }
    if (cf_output_expand(pattern, ".cftrace", path, sizeof path, err, sizeof err) != 0) {
        cf_log("%s; tracing is off", err);
        cf_trace_finish(NULL);
        return;
    }
    static char header[16384];
    size_t len = build_header(header, sizeof header);
    cf_trace_open(path, header, (uint32_t)len);
}

enum cf_child_trace cf_report_trace_open_in_child(void)
{
    if (strstr(cf_opt_str(CF_OPT_OUTPUT), "%p") == NULL) {
        cf_trace_finish(NULL);
        return CF_CHILD_SAME_NAME;
    }
    cf_report_trace_open();
    return CF_CHILD_TRACED;
}

void cf_report_trace_end_in_child(void)
{
    cf_trace_finish(NULL);
}

/* The arena's figures as "name value" lines (the command reads them back). */
static size_t arena_text(const struct cf_arena_stats *a, const char *reason, char *buf, size_t cap)
{
    int w = snprintf(
        buf, cap,
        "reason %s\nactive %d\nvmm %d\npeak_live %llu\npeak_reserved %llu\npeak_mapped %llu\n"
        "reserved_now %llu\nmapped_now %llu\nlive_now %llu\ngranules_mapped %llu\n"
        "granules_unmapped %llu\ndriver_calls %llu\nallocs_served %llu\nfrees_served %llu\n"
        "ns_in_alloc %llu\nns_in_free %llu\next_frag_at_peak %.17g\nooms %llu\n",
        reason, a->active, a->vmm, (unsigned long long)a->peak_live,
        (unsigned long long)a->peak_reserved, (unsigned long long)a->peak_mapped,
        (unsigned long long)a->reserved_now, (unsigned long long)a->mapped_now,
        (unsigned long long)a->live_now, (unsigned long long)a->granules_mapped,
        (unsigned long long)a->granules_unmapped, (unsigned long long)a->driver_calls,
        (unsigned long long)a->allocs_served, (unsigned long long)a->frees_served,
        (unsigned long long)a->ns_in_alloc, (unsigned long long)a->ns_in_free, a->ext_frag_at_peak,
        (unsigned long long)a->ooms);
    return w > 0 && (size_t)w < cap ? (size_t)w : 0;
}

void cf_report_trace_end(struct cf_snap *s)
{
    if (!cf_trace_on()) return;
    char text[2048];
    struct cf_event e = {.type = CF_EV_END, .t_ns = s->now_ns, .str = text};
    e.len = (uint32_t)arena_text(&s->arena, s->reason ? s->reason : "exit", text, sizeof text);
    e.v[0] = s->now_ns;
    e.seq = UINT64_MAX >> 1; /* after every event of the process */
    cf_trace_emit(&e);
    cf_trace_finish(&s->trace);
}
