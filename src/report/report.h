/* Writing the end-of-run report and interim reports. Never call these from a
 * signal handler: they allocate and take the record locks. */
#ifndef CF_REPORT_REPORT_H
#define CF_REPORT_REPORT_H

#include <stdbool.h>

/* The final report, at most once per process (a forked child writes its own).
 * Skipped when CUDAFRAG_ENABLE=0, or when the process made no CUDA allocation call
 * and CUDAFRAG_ALWAYS_REPORT is off. */
void cf_report_final(const char *reason);
/* An interim report (SIGUSR1, cudafrag_report_now); its files get a ".N" suffix
 * (N = 1, 2, ...) so the final report does not overwrite them. Returns 0, or -1
 * when no output could be written. */
int cf_report_interim(const char *reason);
/* The interim report at the first out-of-memory failure (CUDAFRAG_ON_OOM):
 * PATTERN.oom.txt and .oom.json, and on stderr one line naming them (the whole
 * report when there are no files). Returns as cf_report_interim. */
int cf_report_at_oom(void);
/* The final report in parts, for the process lifecycle: claim it (false: already
 * claimed), see whether one is due, write it. tag: "" (PATTERN.txt), or "exec"
 * before an exec replaces the process image (PATTERN.exec.txt: the new image keeps
 * the pid and may write its own under the plain name). for_interrupted: written
 * for a thread that may hold any lock, the driver's included (see snapshot.h). */
bool cf_report_claim_final(void);
bool cf_report_due(void);
void cf_report_write_final(const char *tag, const char *reason, bool for_interrupted);
/* The exec returned: the program goes on, and its exit writes the final report. */
void cf_report_after_failed_exec(void);
/* True in a thread that is writing a report (one a signal handler interrupted). */
bool cf_report_writing_here(void);
/* The final report is given up while being written: removes its unfinished file. */
void cf_report_abandon(void);

/* One report to explicit outputs. pattern is CUDAFRAG_OUTPUT-style ("" = no
 * files); seq 0 is the final report, N the Nth interim one. Problems with the
 * files are reported once, on stderr, and noted in the stderr report. Returns 0
 * when at least one requested output was written (or none was requested), -1
 * otherwise. */
int cf_report_write(const char *pattern, bool to_stderr, bool json, unsigned seq,
                    const char *reason);

/* This process wrote an interim report (in a forked child: since the fork). */
bool cf_report_interim_written(void);

/* In a forked child: the child is a new process and writes its own report. */
void cf_report_reset_after_fork(void);

#endif
