/* The text report: sections, numbers and findings for a record filled with a hot
 * allocation loop, many distinct sizes (left live) and an OOM with free memory;
 * each finding covers one site, which its title names. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config/config.h"
#include "report/report.h"
#include "report_fill.h"

int main(void)
{
    setenv("CUDAFRAG_STACK_DEPTH", "8", 1);
    cf_config_reload();
    fill_hot_loop();
    fill_many_sizes();
    fill_oom_with_free_memory();

    char pattern[PATH_MAX], path[PATH_MAX + 8];
    snprintf(pattern, sizeof pattern, "%s/out", temp_dir());
    CHECK_EQ(cf_report_write(pattern, false, false, 0, "test"), 0);
    snprintf(path, sizeof path, "%s.txt", pattern);
    char *t = slurp(path);
    CHECK(t != NULL);

    /* Sections. */
    CHECK_STR(t, "cudafrag 0.1.0 final report (test)");
    CHECK_STR(t, "-- summary --");
    CHECK_STR(t, "-- API calls --");
    CHECK_STR(t, "-- sizes (40 distinct) --");
    CHECK_STR(t, "-- top call sites by peak live bytes (3 sites) --");
    CHECK_STR(t, "-- top call sites by calls --"); /* its order differs */
    CHECK_STR(t, "-- leaks at exit (40 allocations");
    CHECK_STR(t, "-- fragmentation --");
    CHECK_STR(t, "internal (rounding) waste");
    CHECK_STR(t, "-- out-of-memory events (1) --");
    CHECK_STR(t, "OOM with enough free memory");
    /* Numbers: 2040 successful allocations + 1 failed, 2000 frees. */
    CHECK_STR(t, "allocations 2040, frees 2000");
    CHECK_STR(t, "cudaMalloc                         2041");
    CHECK_STR(t, "cudaFree                           2000");
    /* Findings name the site's function. A burst shorter than a second has no
     * rate (a rate of a one-second floor would be invented): its count and span. */
    CHECK_STR(t, "[high] alloc-rate: cudaMalloc called 2000 times within ");
    {
        /* The span's unit follows the machine's speed (us on a fast one, ms on a
         * loaded one): the site is checked on the finding's own line. */
        const char *f = strstr(t, "[high] alloc-rate: cudaMalloc called 2000 times within ");
        const char *eol = f ? strchr(f, '\n') : NULL;
        const char *at = f ? strstr(f, " at fill_hot_loop (") : NULL;
        CHECK(at != NULL && (eol == NULL || at < eol));
    }
    CHECK_STR(t, "calls 2000     peak live 1.00 MiB   bytes 1.95 GiB   sizes 1  within ");
    CHECK(strstr(t, "/s") == NULL);
    CHECK_STR(t, "hot-loop: 2000 allocations at fill_hot_loop");
    CHECK_STR(t, "many-sizes: more than 8 distinct sizes");
    CHECK_STR(t, "requested at fill_many_sizes (");
    /* 40 sizes at one site: the row says the count is a floor, not "sizes 9". */
    CHECK_STR(t, "sizes >8 ");
    CHECK(strstr(t, "sizes 9") == NULL);
    CHECK_STR(t, "sizes 1 ");
    CHECK_STR(t, "[high] oom-with-free-memory: cudaMalloc of 3.00 GiB failed");
    CHECK_STR(t, "at fill_oom_with_free_memory (");
    CHECK_STR(t,
              "leak: 40 device allocations (43.0 MiB) still live at exit from fill_many_sizes (");
    CHECK_STR(t, "-- findings (8) --");
    CHECK(strstr(t, "100%  fill_") == NULL); /* no list repeats the title's one site */
    /* The failed call is a finding of its own, named by its error. */
    CHECK_STR(t, "[medium] allocation-failures: 1 of 2041 cudaMalloc calls failed with "
                 "cudaErrorMemoryAllocation at fill_oom_with_free_memory (");
    /* The exiting process names functions from the dynamic symbol table only:
     * file:line is the offline command's job (no addr2line run at exit). */
    CHECK(strstr(t, "report_fill.c:") == NULL);
    CHECK_STR(t, "-- findings (");
    free(t);
    return 0;
}
