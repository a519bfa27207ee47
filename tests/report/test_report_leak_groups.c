/* Leaks that one allocating function made for many different callers (a
 * framework's allocator reached from all over a program) make one finding with
 * the totals, not one finding per stack; named in CUDAFRAG_SKIP_FRAMES, that
 * function gives way to its callers, each listed with its share. */
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

static const char *dir;

static char *render(const char *name, const char *ext)
{
    char pattern[PATH_MAX], path[PATH_MAX + 8];
    snprintf(pattern, sizeof pattern, "%s/%s", dir, name);
    CHECK_EQ(cf_report_write(pattern, false, true, 0, "test"), 0);
    snprintf(path, sizeof path, "%s.%s", pattern, ext);
    char *t = slurp(path);
    CHECK(t != NULL);
    return t;
}

int main(void)
{
    dir = temp_dir();
    cf_config_reload();
    path_a();
    path_b();
    CHECK_EQ(HASH_COUNT(cf_rec.sites), 2); /* two stacks: two call sites */

    char *t = render("groups", "txt");
    CHECK_STR(t, "-- top call sites by peak live bytes (2 sites) --");
    /* By calls the sites come in the same order: that table would repeat this one. */
    CHECK(strstr(t, "-- top call sites by calls --") == NULL);
    CHECK_STR(t, "-- findings (1) --");
    CHECK_STR(t, "[medium] leak: 2 device allocations (3.00 MiB) still live at exit from "
                 "common_alloc (");
    /* One site covered: the title names it, and no list repeats it. */
    CHECK(strstr(t, "100%  common_alloc") == NULL);
    free(t);
    t = render("groups", "json");
    CHECK_STR(t, "\"measure\":\"bytes\",\"site_count\":1,\"sites\":[{\"site\":{\"id\":");
    CHECK_STR(t, "\"stacks\":2,\"value\":3145728,\"share\":1,\"note\":\"3.00 MiB in 2 "
                 "allocations\"}]");
    free(t);

    /* common_alloc named as the program's own allocator: its callers are the sites. */
    setenv("CUDAFRAG_SKIP_FRAMES", "common_*", 1);
    cf_config_reload();
    t = render("skipped", "txt");
    CHECK_STR(t, "    at path_b (test_report_leak_groups+0x");
    CHECK_STR(t, "[medium] leak: 2 device allocations (3.00 MiB) still live at exit from 2 call "
                 "sites\n"
                 "       67%  path_b (");
    CHECK_STR(t, "(2.00 MiB in 1 allocation)\n"
                 "       33%  path_a (");
    CHECK(strstr(t, "at common_alloc") == NULL);
    free(t);
    t = render("skipped", "json");
    /* The JSON keeps the whole stack: the folded allocator frame, then the caller shown. */
    CHECK_STR(t, "\"shown_frame\":1,\"python_frames\":null,\"frames\":[{\"address\":");
    CHECK_STR(t, "\"function\":\"common_alloc\",\"module\":\"test_report_leak_groups\"");
    CHECK_STR(t, "\"python\":false,\"folded\":true},{\"address\":");
    free(t);
    return 0;
}
