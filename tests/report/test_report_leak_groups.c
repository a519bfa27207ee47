/* Leaks that one allocating function made for many different callers (a
 * framework's allocator reached from all over a program) make one finding with
 * the totals, not one finding per stack. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/config.h"
#include "record/record.h"
#include "report/report.h"
#include "report_fill.h"

#define MiB (1ull << 20)

__attribute__((noinline)) void common_alloc(uint64_t addr, uint64_t size);
__attribute__((noinline)) void common_alloc(uint64_t addr, uint64_t size)
{
    struct cf_alloc_info ai;
    memset(&ai, 0, sizeof ai);
    ai.api = CF_API_cudaMalloc;
    ai.addr = addr;
    ai.requested = size;
    ai.device = 0;
    cf_rec_alloc(&ai);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void path_a(void)
{
    common_alloc(0x7a0000000000ull, 1 * MiB);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void path_b(void)
{
    common_alloc(0x7a0000100000ull, 2 * MiB);
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    cf_config_reload();
    path_a();
    path_b();
    CHECK_EQ(HASH_COUNT(cf_rec.sites), 2); /* two stacks: two call sites */

    char pattern[PATH_MAX], path[PATH_MAX + 8];
    snprintf(pattern, sizeof pattern, "%s/groups", temp_dir());
    CHECK_EQ(cf_report_write(pattern, false, false, 0, "test"), 0);
    snprintf(path, sizeof path, "%s.txt", pattern);
    char *t = slurp(path);
    CHECK(t != NULL);
    CHECK_STR(t, "-- findings (1) --");
    CHECK_STR(t, "[medium] leak: 2 device allocations (3.00 MiB) still live at exit from "
                 "common_alloc (");
    free(t);
    return 0;
}
