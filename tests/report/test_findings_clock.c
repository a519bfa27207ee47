/* The severity of alloc-rate must not depend on how fast the machine ran the
 * program: the same calls, spread over 2 s, 4 s or 20 s (as a loaded machine
 * stretches them), rate the same. Each run fills a fresh record in a child. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "record/record.h"
#include "report/report.h"
#include "report_fill.h"

#define CALLS 3000

/* CALLS cudaMalloc of 1 MiB over span_s seconds; each freed at once (a buffer
 * allocated anew every step) or all left live. */
__attribute__((noinline)) static void allocs_over(double span_s, bool freed)
{
    for (uint64_t i = 0; i < CALLS; i++) {
        struct cf_alloc_info ai;
        memset(&ai, 0, sizeof ai);
        ai.api = CF_API_cudaMalloc;
        ai.addr = 0x7f0000000000ull + (freed ? 0 : i * (2ull << 20));
        ai.requested = 1ull << 20;
        ai.t_ns = 1000000000ull + (uint64_t)(span_s * 1e9 * (double)i / (CALLS - 1));
        cf_rec_alloc(&ai);
        if (freed) CHECK(cf_rec_free(CF_API_cudaFree, ai.addr, 0));
    }
    __asm__ volatile("" ::: "memory");
}

static char *rated(const char *dir, double span_s, bool freed)
{
    char pattern[PATH_MAX], path[PATH_MAX + 8];
    snprintf(pattern, sizeof pattern, "%s/r-%g-%d", dir, span_s, freed);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        allocs_over(span_s, freed);
        _exit(cf_report_write(pattern, false, false, 0, "test") == 0 ? 0 : 1);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK_EQ(status, 0);
    snprintf(path, sizeof path, "%s.txt", pattern);
    char *t = slurp(path);
    CHECK(t != NULL);
    return t;
}

int main(void)
{
    const char *dir = temp_dir();
    static const double spans[] = {2, 4, 20}; /* 1500/s, 750/s, 150/s */
    for (unsigned i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        char *t = rated(dir, spans[i], true);
        CHECK_STR(t, "[high] alloc-rate: cudaMalloc called 3000 times at ");
        free(t);
        t = rated(dir, spans[i], false);
        CHECK_STR(t, "[medium] alloc-rate: cudaMalloc called 3000 times at ");
        free(t);
    }
    return 0;
}
