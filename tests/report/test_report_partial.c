/* A report written while cudafrag's locks are held -- by the writing thread itself,
 * as when a signal handler that calls exit() interrupted it inside a hook, or by
 * another thread that does not let go -- waits a bounded time, leaves out what
 * it could not read and says so, in the text and in the JSON report. */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "record/internal.h"
#include "base/meta_alloc.h"
#include "report/report.h"
#include "report_fill.h"

static char pattern[PATH_MAX];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes a report, which must come back within the bound, and returns its text
 * and JSON (both malloc'ed). */
static void report(char **text, char **json)
{
    char path[PATH_MAX + 8];
    double t0 = now_s();
    CHECK_EQ(cf_report_write(pattern, false, true, 0, "test"), 0);
    double took = now_s() - t0;
    if (took > 3.0) {
        fprintf(stderr, "the report took %.1f s\n", took);
        exit(1);
    }
    snprintf(path, sizeof path, "%s.txt", pattern);
    *text = slurp(path);
    snprintf(path, sizeof path, "%s.json", pattern);
    *json = slurp(path);
    CHECK(*text && *json);
    CHECK_STR(*text, "==== end of cudafrag report ====");
}

/* The report is partial, leaving out `what`, and still has the totals. */
static void expect_partial(const char *what)
{
    char *t, *j, line[256];
    report(&t, &j);
    snprintf(line, sizeof line, "\nnote: partial report: ");
    CHECK_STR(t, line);
    CHECK_STR(strstr(t, line), what);
    CHECK_STR(t, "allocations 2040, frees 2000");
    CHECK_STR(j, "\"partial\":true,\"partial_reason\":\"");
    CHECK_STR(strstr(j, "\"partial_reason\""), what);
    free(t);
    free(j);
}

static void expect_complete(void)
{
    char *t, *j;
    report(&t, &j);
    CHECK(strstr(t, "partial report") == NULL);
    CHECK_STR(t, "leaks at exit: 40 allocations");
    CHECK_STR(j, "\"partial\":false,\"partial_reason\":null");
    CHECK_STR(j, "\"live_at_report_count\":40");
    free(t);
    free(j);
}

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static bool holding;

/* Another thread holds the pool lock until told to let go. */
static void *hold_pool_lock(void *arg)
{
    (void)arg;
    cf_pool_lock();
    __atomic_store_n(&holding, true, __ATOMIC_RELEASE);
    pthread_mutex_lock(&gate);
    cf_pool_unlock();
    pthread_mutex_unlock(&gate);
    return NULL;
}

int main(void)
{
    snprintf(pattern, sizeof pattern, "%s/out", temp_dir());
    fill_hot_loop();
    fill_many_sizes();
    expect_complete();

    /* The writing thread holds the lock itself: the wait must end. */
    cf_site_lock();
    expect_partial("call sites, allocations live at the report");
    cf_site_unlock();

    /* The bookkeeping allocator's locks: the report takes no memory from it (the
     * live allocations are read from their tables), so it is complete. */
    cf_meta_lock_all();
    expect_complete();
    cf_meta_unlock_all();

    cf_apply_lock();
    expect_partial("out-of-memory events, marks and graph pool high water");
    cf_apply_unlock();

    /* The slots guard the live tables and the figures of devices, sites and pools:
     * the device figures are kept, said to be possibly one event off. */
    cf_fp_lock_all();
    expect_partial("call sites, allocations live at the report, memory pools, exact device "
                   "figures");
    cf_fp_unlock_all();

    /* The threads' counters cannot be collected: the last collected ones stay. */
    cf_thread_lock();
    expect_partial("the latest call and size counters");
    cf_thread_unlock();

    /* Another thread that does not let go. */
    pthread_t th;
    pthread_mutex_lock(&gate);
    CHECK_EQ(pthread_create(&th, NULL, hold_pool_lock, NULL), 0);
    while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
        usleep(1000);
    expect_partial("memory pools");
    pthread_mutex_unlock(&gate);
    CHECK_EQ(pthread_join(th, NULL), 0);

    /* Everything released: complete again, nothing lost on the way. */
    expect_complete();
    return 0;
}
