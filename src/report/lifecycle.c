/* When reports are written. Started by the constructor of libcudafrag.so
 * (hook/start.c): starts the record and arranges for the final report at every
 * way out of the process: exit() (atexit), _exit()/_Exit() and exec (the interposers in
 * hook/lifecycle.c call in here), fatal signals (a short summary, see crash.c).
 * SIGUSR1 asks for an interim report once the program made a CUDA call; with
 * CUDAFRAG_ON_OOM, so does the first allocation that fails for memory.
 *
 * Order at exit: our atexit handler is registered in the constructor, before the
 * program's first CUDA call, while the CUDA runtime registers its teardown at its
 * own initialization, later. atexit handlers run in reverse order, so the
 * runtime's teardown runs first: what it frees is counted as freed before the
 * report, and whatever is still live when the report is written is a leak. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "record/record.h"
#include "report/crash.h"
#include "report/lifecycle.h"
#include "report/report.h"
#include "report/trace_out.h"
#include "record/trace_write.h"
#include "base/lockwait.h"
#include "base/log.h"
#include "base/thread_state.h"

static bool active;            /* the constructor set everything up */
static pid_t owner_pid;        /* the process the record belongs to (see _exit) */
static uint64_t calls_at_fork; /* in a forked child: the parent's calls it inherited */
static bool forked_child;      /* the fork handlers ran in this process */
static struct cf_fork_origin origin;
static sem_t reporter_wanted; /* an interim report (SIGUSR1) or the final one (handoff) */
static sem_t final_done;
static bool reporter_running;
static bool call_seen; /* the program made a recorded CUDA call */
static int usr1_armed;
/* A final report the reporting thread writes for the thread ending the process. */
static struct {
    const char *tag, *reason;
    int requested;
} handoff;

#define HANDOFF_WAIT_MS 5000

/* The report at the first out-of-memory failure, written by the reporting thread
 * while the failing call waits for it (at most OOM_WAIT_MS): the program may
 * die of the failure as soon as the call returns. */
#define OOM_WAIT_MS 10000
static int oom_claimed;   /* the first failure was seen: later ones are only counted */
static int oom_requested; /* the reporting thread has an OOM report to write */
static sem_t oom_done;

static bool maybe_in_signal_handler(void);

/* exit() in a signal handler (or in a CUDA call): this thread may hold any lock,
 * malloc's and the driver's included, and writing a report takes both. The
 * reporting thread, which no signal interrupts, writes it; this one waits a
 * bounded time, then leaves the totals and goes on ending the process. */
static void hand_off(const char *tag, const char *reason)
{
    if (!reporter_running || cf_report_writing_here()) {
        cf_crash_summary("final report not written: the process ended in a signal handler, "
                         "a CUDA call or a report, where writing one could wait forever");
        return;
    }
    handoff.tag = tag;
    handoff.reason = reason;
    __atomic_store_n(&handoff.requested, 1, __ATOMIC_RELEASE);
    sem_post(&reporter_wanted);
    struct timespec deadline = cf_deadline_after_ms(HANDOFF_WAIT_MS);
    int rc;
    while ((rc = sem_timedwait(&final_done, &deadline)) != 0 && errno == EINTR) {
    }
    if (rc == 0) return;
    cf_report_abandon();
    cf_crash_summary("final report not finished within 5 s: the process ended in a signal "
                     "handler or a CUDA call");
}

/* tag "" at exit, "exec" before an exec. False when the final report was
 * already claimed. */
static bool final_report(const char *tag, const char *reason)
{
    if (!cf_report_claim_final()) return false;
    if (!cf_report_due()) return true;
    if (cf_in_hook || maybe_in_signal_handler())
        hand_off(tag, reason);
    else
        cf_report_write_final(tag, reason, false);
    return true;
}

static uint64_t calls_so_far(void);

/* The exec rule at every way out: a forked child that made no CUDA call of its
 * own holds only its parent's figures, and a report of them under its pid counts
 * the parent's allocations twice (as the child's leaks too). It still reports
 * when it asked for a report itself (an interim one) or CUDAFRAG_ALWAYS_REPORT
 * asks for one from every process. The count takes a lock that the thread a
 * signal handler interrupted may hold: there, as at exec, the child says nothing. */
static bool child_without_calls(void)
{
    if (!forked_child || cf_report_interim_written() || cf_opt_bool(CF_OPT_ALWAYS_REPORT))
        return false;
    return maybe_in_signal_handler() || calls_so_far() <= calls_at_fork;
}

/* Only the owner reports: a child that the fork handlers never saw (vfork, _Fork,
 * clone) holds its parent's figures, and a vfork child shares its memory, where
 * its report would also mark the parent's as written. */
static void final_at_exit(void)
{
    if (getpid() == owner_pid && !child_without_calls()) final_report("", "exit");
}

/* The SIGUSR1 handler may only do async-signal-safe work: sem_post is. */
static void on_usr1(int sig)
{
    int saved = errno;
    sem_post(&reporter_wanted);
    errno = saved;
}

/* In the reporting thread: the trace first (quick, and what a killed process
 * most needs), then the report. */
static void write_oom_report(void)
{
    if (cf_opt_choice(CF_OPT_ON_OOM) == CF_ON_OOM_TRACE) {
        if (!cf_trace_on())
            cf_log(
                "CUDAFRAG_ON_OOM=trace: no trace is being written (CUDAFRAG_TRACE=1 writes one)");
        else if (!cf_trace_sync())
            cf_log("the trace could not be flushed to disk at the out-of-memory failure");
    }
    cf_report_at_oom();
    sem_post(&oom_done);
}

static void *reporter(void *arg)
{
    for (;;) {
        while (sem_wait(&reporter_wanted) != 0 && errno == EINTR) {
        }
        if (__atomic_exchange_n(&handoff.requested, 0, __ATOMIC_ACQ_REL)) {
            cf_report_write_final(handoff.tag, handoff.reason, true);
            sem_post(&final_done);
        } else if (__atomic_exchange_n(&oom_requested, 0, __ATOMIC_ACQ_REL)) {
            write_oom_report();
        } else {
            cf_report_interim("SIGUSR1");
        }
    }
    return NULL;
}

/* The thread that writes interim reports, and the final one for a thread that
 * cannot (hand_off). A signal handler cannot create a thread, nor should a hook
 * (that could call malloc): it is started here, with every signal blocked so it
 * never runs the program's handlers. */
static void start_reporter(void)
{
    sigset_t all, old;
    pthread_t th;
    pthread_attr_t attr;
    sem_init(&reporter_wanted, 0, 0);
    sem_init(&final_done, 0, 0);
    sem_init(&oom_done, 0, 0);
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    reporter_running = pthread_create(&th, &attr, reporter, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!reporter_running) cf_log("cannot start the reporting thread; SIGUSR1 is ignored");
}

static bool usr1_is_default(void)
{
    struct sigaction cur;
    if (sigaction(SIGUSR1, NULL, &cur) != 0) return false;
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL; /* else the program's */
}

/* SIGUSR1 keeps its default action (the end of the process) until the program
 * made a CUDA call: a program that never does, such as the shell or a tool that
 * `cudafrag run` started, must not survive a signal meant to stop it, nor write an
 * empty report. Only a system call: this runs inside the first hook. */
static void arm_usr1(void)
{
    if (!cf_opt_bool(CF_OPT_SIGNAL) || !reporter_running ||
        __atomic_exchange_n(&usr1_armed, 1, __ATOMIC_ACQ_REL))
        return;
    if (!usr1_is_default()) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

void cf_lifecycle_first_call(void)
{
    if (__atomic_exchange_n(&call_seen, true, __ATOMIC_ACQ_REL)) return;
    int saved = errno;
    if (__atomic_load_n(&active, __ATOMIC_ACQUIRE)) arm_usr1();
    errno = saved;
}

/* Called by the hooks after an allocation failed for memory, with no lock of
 * cudafrag's held. The first one in the process has the report written by the
 * reporting thread and waits for it, a bounded time; errno is the caller's. */
void cf_lifecycle_oom(void)
{
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) ||
        cf_opt_choice(CF_OPT_ON_OOM) == CF_ON_OOM_OFF || getpid() != owner_pid ||
        __atomic_exchange_n(&oom_claimed, 1, __ATOMIC_ACQ_REL))
        return;
    int saved = errno;
    /* In a signal handler too: the wait is bounded, and only it runs here. */
    if (!reporter_running || cf_report_writing_here()) {
        cf_log("out of memory: no report written (%s)",
               reporter_running ? "the failure came while this thread wrote a report"
                                : "the reporting thread could not be started");
        errno = saved;
        return;
    }
    __atomic_store_n(&oom_requested, 1, __ATOMIC_RELEASE);
    sem_post(&reporter_wanted);
    struct timespec deadline = cf_deadline_after_ms(OOM_WAIT_MS);
    int rc;
    while ((rc = sem_timedwait(&oom_done, &deadline)) != 0 && errno == EINTR) {
    }
    if (rc != 0)
        cf_log("out of memory: the report was not finished within %d s; the program goes on "
               "(the report may still be written)",
               OOM_WAIT_MS / 1000);
    errno = saved;
}

/* The threads count their own calls (record/thread.c): summed from their blocks
 * here, never on the hot path. cf_rec.api[] is only the copy a report collects:
 * read instead, it said 0 before the first report, and every exec of a CUDA
 * program looked like one of a program without CUDA calls (no exec report). */
static uint64_t calls_so_far(void)
{
    return cf_rec_calls_total();
}

/* What the child inherited, for its report to say (see cf_lifecycle_fork_origin).
 * The child is alone here: the device counters are read without their locks. */
static void note_origin(pid_t parent)
{
    origin = (struct cf_fork_origin){0};
    bool tracing = cf_trace_on();
    if (!cf_rec_any_activity()) {
        /* A launcher's child: nothing inherited, and its trace starts afresh. */
        if (tracing) origin.trace = (int)cf_report_trace_open_in_child();
        return;
    }
    origin.parent_pid = (long)parent;
    for (unsigned i = 0; i < CF_MAX_DEVICES; i++) {
        origin.inherited_count += cf_rec.dev[i].live_count;
        origin.inherited_bytes += cf_rec.dev[i].live_bytes;
    }
    if (tracing) {
        origin.trace = CF_CHILD_AFTER_CUDA;
        cf_report_trace_end_in_child();
    }
}

const struct cf_fork_origin *cf_lifecycle_fork_origin(void)
{
    return &origin;
}

static void child_after_fork(void)
{
    pid_t parent = owner_pid;
    owner_pid = getpid();
    forked_child = true;
    calls_at_fork = calls_so_far();
    cf_report_reset_after_fork();
    note_origin(parent);
    /* Threads do not survive fork: the child needs its own reporter. */
    handoff.requested = 0;
    oom_requested = 0;
    oom_claimed = 0;
    if (reporter_running) start_reporter();
}

void cf_lifecycle_start(void)
{
    cf_rec_init();
    cf_report_trace_open();
    owner_pid = getpid();
    atexit(final_at_exit);
    pthread_atfork(NULL, NULL, child_after_fork);
    start_reporter();
    cf_crash_install();
    __atomic_store_n(&active, true, __ATOMIC_RELEASE);
    /* A report is due even without CUDA calls: so is an interim one. */
    if (cf_opt_bool(CF_OPT_ALWAYS_REPORT) || __atomic_load_n(&call_seen, __ATOMIC_ACQUIRE))
        arm_usr1();
}

/* _exit is async-signal-safe and programs call it from signal handlers, where the
 * full report (malloc, locks) could deadlock on a lock the interrupted code holds.
 * Inside a handler its signal is blocked (unless SA_NODEFER), so a blocked signal
 * with a program handler installed is taken as the sign. cudafrag's own handlers
 * do not count: threads that block SIGTERM to sigwait() for it are common. */
static bool maybe_in_signal_handler(void)
{
    sigset_t mask;
    if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0) return false;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigismember(&mask, sig) != 1 || sigaction(sig, NULL, &sa) != 0) continue;
        if (cf_crash_handler_is(&sa) || (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == on_usr1))
            continue;
        if ((sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN))
            return true;
    }
    return false;
}

/* In a vfork() child, which shares the parent's memory, writing a report would
 * also mark the parent's as written: only the owner process reports. */
void cf_lifecycle_before_exit(const char *how)
{
    if (!active || getpid() != owner_pid || child_without_calls()) return;
    if (maybe_in_signal_handler())
        cf_crash_summary(how[1] == 'E' ? "_Exit called in a signal handler"
                                       : "_exit called in a signal handler");
    else
        final_report("", how);
}

/* A child forked by a CUDA program that execs without a CUDA call of its own
 * (fork + exec, the usual way to start another program) has only its parent's
 * figures: a report of them under its pid would be a confusing copy. */
bool cf_lifecycle_before_exec(void)
{
    if (!active || getpid() != owner_pid || !cf_rec_any_activity()) return false;
    /* Before the count of calls: it takes a lock that the thread a handler
     * interrupted may hold. A forked child cannot tell its own calls from its
     * parent's without it, and says nothing. */
    if (maybe_in_signal_handler()) {
        if (calls_at_fork == 0) cf_crash_summary("exec called in a signal handler");
        return false;
    }
    if (calls_so_far() <= calls_at_fork) return false;
    return final_report("exec", "exec");
}

void cf_lifecycle_exec_failed(bool reported)
{
    if (reported) cf_report_after_failed_exec();
}
