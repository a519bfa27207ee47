/* The trace's header: who was traced, with which settings, and one instant on
 * both clocks. What only the caller knows (the rank, the time origin) comes in as
 * parameters. */
#include "record/trace_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

#include "cudafrag_build.h"

extern char **environ;

/* "key=value" lines; values never contain a newline (they are cut there). */
static size_t put_line(char *buf, size_t len, size_t cap, const char *key, const char *value)
{
    int w = snprintf(buf + len, cap - len, "%s=%.*s\n", key, (int)strcspn(value, "\n"), value);
    return w > 0 && (size_t)w < cap - len ? len + (size_t)w : len;
}

static size_t put_u64(char *buf, size_t len, size_t cap, const char *key, uint64_t value)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    return put_line(buf, len, cap, key, num);
}

/* One instant on both clocks, so that a reader puts the events (CLOCK_MONOTONIC's
 * scale) on the wall clock that profilers such as Kineto and Nsight Systems use;
 * the reports use the same one (base/clock.h). */
static size_t clock_base(char *buf, size_t len, size_t cap)
{
    uint64_t wall, event;
    cf_clock_wall_base(&wall, &event);
    len = put_u64(buf, len, cap, "realtime_base_ns", wall);
    return put_u64(buf, len, cap, "monotonic_base_ns", event);
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

size_t cf_trace_header(char *buf, size_t cap, const char *rank, uint64_t start_ns)
{
    extern char *program_invocation_name;
    char host[256] = "";
    size_t len = 0;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    gethostname(host, sizeof host - 1);
    len = put_line(buf, len, cap, "cudafrag", CUDAFRAG_VERSION);
    len = put_line(buf, len, cap, "program", program_invocation_name);
    len = put_u64(buf, len, cap, "pid", (uint64_t)getpid());
    len = put_line(buf, len, cap, "rank", rank);
    len = put_line(buf, len, cap, "host", host);
    len = put_u64(buf, len, cap, "start_ns", start_ns);
    len = put_u64(buf, len, cap, "wall_start_s", (uint64_t)wall.tv_sec);
    len = clock_base(buf, len, cap);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "CUDAFRAG_", 9) == 0) len = put_line(buf, len, cap, "env", *e);
    return framework_settings(buf, len, cap);
}
