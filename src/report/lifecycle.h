/* Process lifecycle of the preloaded library (its start, exit paths, signals). */
#ifndef CF_REPORT_LIFECYCLE_H
#define CF_REPORT_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From the library's constructor (hook/start.c), the options loaded and
 * CUDAFRAG_ENABLE on: the record and the trace started, the final report armed
 * at exit and fork, the reporting thread and the crash handlers installed. */
void cf_lifecycle_start(void);

/* For the interposers of process exits and execs (hook/lifecycle.c). */
/* _exit/_Exit (how names it): the final report, or in a signal handler the summary. */
void cf_lifecycle_before_exit(const char *how);
/* Before an exec replaces the process image: its final report, when this process
 * made CUDA calls of its own. True when one was written: pass it on to
 * cf_lifecycle_exec_failed if the exec returns. */
bool cf_lifecycle_before_exec(void);
/* The exec failed and the program goes on: its exit writes the final report. */
void cf_lifecycle_exec_failed(bool reported);
/* In a process forked by one that had used CUDA: the parent, what it left live
 * (the child cannot free it: CUDA is not usable there, so it stays live to the
 * end and is the parent's, not a leak of the child), and why the child has no
 * trace of its own. All 0 in other processes. */
struct cf_fork_origin {
    long parent_pid;
    uint64_t inherited_count, inherited_bytes;
    int trace; /* enum cf_child_trace (report/trace_out.h) */
};
const struct cf_fork_origin *cf_lifecycle_fork_origin(void);
/* An allocation failed for memory: the first one writes the OOM report
 * (CUDAFRAG_ON_OOM) and returns when it is written, or after 10 s. Call with no
 * lock of cudafrag's held; errno is kept. */
void cf_lifecycle_oom(void);
/* Called by the hooks until one call got here: the program uses CUDA. */
void cf_lifecycle_first_call(void);

#endif
