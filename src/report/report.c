#include "report/report.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "record/record.h"
#include "report/crash.h"
#include "report/format.h"
#include "report/oom.h"
#include "report/outpath.h"
#include "report/render.h"
#include "report/snapshot.h"
#include "report/trace_out.h"
#include "base/export.h"
#include "base/lockwait.h"
#include "base/log.h"
#include "base/thread_state.h"

static pthread_mutex_t report_mutex = PTHREAD_MUTEX_INITIALIZER;
static int final_written;
static int final_pending; /* interim reports not yet started are dropped */
static unsigned interim_seq;
/* Holds report_mutex: a signal handler that calls exit() may have interrupted it. */
static __thread bool writing_report __attribute__((tls_model("initial-exec")));
/* Under report_mutex: the report is written for a thread that a signal
 * interrupted, maybe inside the driver. */
static bool for_interrupted;

static void lock_reports(void)
{
    pthread_mutex_lock(&report_mutex);
    writing_report = true;
}

static void unlock_reports(void)
{
    writing_report = false;
    pthread_mutex_unlock(&report_mutex);
}

/* What went wrong with the outputs, collected so it is said once. */
struct notes {
    char text[2048];
    size_t len;
};

/* Whole lines only: a message that does not fit is left out, never cut (the
 * messages show long paths shortened, so a few always fit). */
static void note(struct notes *n, const char *msg)
{
    int w = snprintf(n->text + n->len, sizeof n->text - n->len, "cudafrag: %s\n", msg);
    if (w > 0 && (size_t)w < sizeof n->text - n->len)
        n->len += (size_t)w;
    else
        n->text[n->len] = '\0';
}

/* Returns 0 when the file was written completely. */
static int write_file(const char *pattern, const char *suffix, const struct cf_buf *content,
                      const char *what, struct notes *notes, char *written, size_t wn)
{
    char path[PATH_MAX], err[PATH_MAX + 128], msg[sizeof err + 64];
    if (cf_output_expand(pattern, suffix, path, sizeof path, err, sizeof err) != 0) {
        snprintf(msg, sizeof msg, "%s; %s lost", err, what);
        note(notes, msg);
        return -1;
    }
    char shown[CF_OUTPUT_SHOWN_MAX];
    const char *p = cf_output_shown(path, shown, sizeof shown);
    if (content->failed) {
        snprintf(msg, sizeof msg, "out of memory while rendering %s; %s not written", what, p);
        note(notes, msg);
        return -1;
    }
    struct cf_outfile f;
    if (cf_output_begin(&f, path, err, sizeof err) != 0) {
        snprintf(msg, sizeof msg, "%s; %s lost", err, what);
        note(notes, msg);
        return -1;
    }
    int rc = cf_write_all(f.fd, content->data, content->len);
    if (rc == 0)
        rc = cf_output_commit(&f);
    else
        cf_output_abort(&f);
    if (rc != 0) {
        snprintf(msg, sizeof msg, "writing %s failed (%s); %s lost", p, strerror(-rc), what);
        note(notes, msg);
        return -1;
    }
    size_t used = strlen(written);
    snprintf(written + used, wn - used, "%s%s", used ? ", " : "", path);
    return 0;
}

/* A write to a pipe without a reader raises SIGPIPE, one past the file size limit
 * SIGXFSZ; both end the program by default. Blocked in this thread while the
 * report is written, the write fails with EPIPE or EFBIG instead and the signal
 * stays pending, to be consumed here unless the program already had one pending. */
struct held_signals {
    sigset_t old_mask, pending_before;
};

static const int write_signals[] = {SIGPIPE, SIGXFSZ};
#define NWRITE_SIGNALS (sizeof write_signals / sizeof write_signals[0])

static void hold_write_signals(struct held_signals *h)
{
    sigset_t block;
    sigemptyset(&block);
    for (unsigned i = 0; i < NWRITE_SIGNALS; i++)
        sigaddset(&block, write_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &h->old_mask);
    if (sigpending(&h->pending_before) != 0) sigfillset(&h->pending_before);
}

static void release_write_signals(const struct held_signals *h)
{
    const struct timespec now = {0, 0};
    for (unsigned i = 0; i < NWRITE_SIGNALS; i++) {
        int sig = write_signals[i];
        if (sigismember(&h->pending_before, sig)) continue;
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigtimedwait(&one, NULL, &now);
    }
    pthread_sigmask(SIG_SETMASK, &h->old_mask, NULL);
}

static void who_am_i(struct cf_snap_who *w)
{
    extern char *program_invocation_name;
    snprintf(w->program, sizeof w->program, "%s", program_invocation_name);
    snprintf(w->rank, sizeof w->rank, "%s", cf_output_rank());
    if (gethostname(w->host, sizeof w->host) != 0) w->host[0] = '\0';
    w->host[sizeof w->host - 1] = '\0';
    w->pid = (long)getpid();
    cf_clock_wall_base(&w->realtime_base_ns, &w->monotonic_base_ns); /* the trace's too */
}

/* The report's steps up to rendering, every lock waited for against one deadline:
 * the driver sampled once more (not where it may be held: inside a hook, or for
 * a thread a signal interrupted), the record copied, the arena's figures, the
 * snapshot, the trace ended (a final report: the trace's totals are in it), the
 * frames named, the owners of the memory, the findings. */
static int take_snapshot(struct cf_snap *snap, struct cf_snap_input *in, bool interim,
                         const char *reason)
{
    *in = (struct cf_snap_input){.interim = interim,
                                 .reason = reason,
                                 .top = (unsigned)cf_opt_int(CF_OPT_TOP),
                                 .blocks = cf_opt_str(CF_OPT_BLOCKS),
                                 .fork = *cf_lifecycle_fork_origin()};
    who_am_i(&in->who);
    struct timespec deadline = cf_deadline_after_ms(CF_SNAP_LOCK_WAIT_MS);
    cf_snap_sample_final(in, cf_in_hook || for_interrupted, &deadline);
    if (cf_rec_read_until(&in->copy, &deadline) != 0) return -1;
    in->now_ns = in->copy.now_ns;
    cf_arena_get_stats_until(&in->arena, &in->shadow, &deadline);
    if (in->arena.locked_out || in->shadow.locked_out) in->missing |= CF_SNAP_NO_ARENA;
    if (cf_snap_take(snap, in) != 0) return -1;
    if (!interim) cf_report_trace_end(snap);
    cf_snap_symbols(snap);
    if (cf_owners_compute(snap) != 0) return -1;
    return cf_findings_compute(snap);
}

#define OOM_TAG "oom"

/* "cudafrag: out of memory (cudaMalloc of 1 GiB on device 0): report written to ..."
 * on stderr in place of the report itself, which the files hold: at an OOM the
 * program's own message is the one to see. */
static void oom_line(const struct cf_snap *s, struct cf_buf *o, const char *written)
{
    struct cf_oom_summary sum;
    cf_snap_oom_summary(s, &sum);
    cf_buf_puts(o, "cudafrag: out of memory");
    if (sum.first)
        cf_buf_printf(o, " (%s of %s on device %d)", cf_api_info[sum.first->api].name,
                      cf_fmt_bytes(sum.first->request, (char[32]){0}, 32), sum.first->device);
    cf_buf_printf(o, ": report written to %s\n", written);
}

/* tag: "" for the final report, "N" for the Nth interim one, "exec" for the
 * report of an image that execs another, OOM_TAG for the one at the first
 * out-of-memory failure: it goes before the extension. */
static int report_write(const char *pattern, bool to_stderr, bool json, const char *tag,
                        const char *reason)
{
    struct cf_buf text = {0}, js = {0};
    struct notes notes = {.len = 0};
    char written[2 * PATH_MAX + 8] = "", txt_suffix[32], json_suffix[32];
    int requested = 0, ok = 0;
    bool at_oom = strcmp(tag, OOM_TAG) == 0;
    bool interim = (tag[0] >= '0' && tag[0] <= '9') || at_oom;

    /* On the heap: the snapshot and its input hold a copy of the record each, too
     * big for the stack of whichever thread happens to call _exit. The snapshot
     * takes the input's copy over. */
    struct cf_snap *snap = calloc(1, sizeof *snap);
    struct cf_snap_input *in = calloc(1, sizeof *in);
    int taken = snap && in ? take_snapshot(snap, in, interim, reason) : -1;
    free(in);
    if (taken != 0) {
        cf_log("out of memory while collecting the report; no report written");
        if (snap) cf_snap_free(snap);
        free(snap);
        return -1;
    }
    snap->at_oom = at_oom;
    cf_render_text(snap, &text);

    struct held_signals held;
    hold_write_signals(&held);
    if (pattern && *pattern) {
        snprintf(txt_suffix, sizeof txt_suffix, "%s%s.txt", tag[0] ? "." : "", tag);
        snprintf(json_suffix, sizeof json_suffix, "%s%s.json", tag[0] ? "." : "", tag);
        requested++;
        ok += write_file(pattern, txt_suffix, &text, "the text report", &notes, written,
                         sizeof written) == 0;
        if (json) {
            cf_render_json(snap, &js);
            requested++;
            ok += write_file(pattern, json_suffix, &js, "the JSON report", &notes, written,
                             sizeof written) == 0;
        }
    }
    char why[256];
    if (!interim && !to_stderr && cf_snap_untraced_note(snap, why, sizeof why)) note(&notes, why);
    if (to_stderr && at_oom && written[0]) {
        struct cf_buf line = {0};
        oom_line(snap, &line, written);
        if (notes.len) cf_buf_put(&line, notes.text, notes.len);
        if (!line.failed) cf_write_all(2, line.data, line.len);
        cf_buf_free(&line);
    } else if (to_stderr) {
        requested++;
        if (written[0]) cf_buf_printf(&text, "report written to %s\n", written);
        if (notes.len) cf_buf_put(&text, notes.text, notes.len);
        ok += !text.failed && cf_write_all(2, text.data, text.len) == 0;
    } else if (notes.len) {
        cf_write_all(2, notes.text, notes.len);
    }
    release_write_signals(&held);
    cf_buf_free(&text);
    cf_buf_free(&js);
    cf_snap_free(snap);
    free(snap);
    return requested == 0 || ok > 0 ? 0 : -1;
}

int cf_report_write(const char *pattern, bool to_stderr, bool json, unsigned seq,
                    const char *reason)
{
    char tag[16] = "";
    if (seq) snprintf(tag, sizeof tag, "%u", seq);
    return report_write(pattern, to_stderr, json, tag, reason);
}

static int write_configured(const char *tag, const char *reason)
{
    return report_write(cf_opt_str(CF_OPT_OUTPUT), cf_opt_bool(CF_OPT_STDERR),
                        cf_opt_bool(CF_OPT_JSON), tag, reason);
}

static bool worth_reporting(void)
{
    return cf_opt_bool(CF_OPT_ENABLE) &&
           (cf_rec_any_activity() || cf_opt_bool(CF_OPT_ALWAYS_REPORT));
}

bool cf_report_claim_final(void)
{
    return !__atomic_exchange_n(&final_written, 1, __ATOMIC_ACQ_REL);
}

bool cf_report_due(void)
{
    return worth_reporting();
}

/* Writing a report takes tens of KiB of stack (paths, formatting, symbol lookups).
 * A thread with less left -- a program's worker with a small stack that calls
 * exit(), the main thread under a small `ulimit -s` -- has it written by a thread
 * of cudafrag's (as large as the reporting thread's, every signal blocked) and
 * waits for it. */
#define REPORT_STACK_NEED   (128u << 10)
#define REPORT_THREAD_STACK (256u << 10)

struct report_job {
    const char *tag, *reason;
    int rc;
};

static void *write_job(void *arg)
{
    struct report_job *job = arg;
    job->rc = write_configured(job->tag, job->reason);
    return NULL;
}

static int write_with_stack(const char *tag, const char *reason)
{
    if (cf_stack_room() >= REPORT_STACK_NEED) return write_configured(tag, reason);
    struct report_job job = {tag, reason, -1};
    pthread_attr_t attr;
    pthread_t th;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, REPORT_THREAD_STACK);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool started = pthread_create(&th, &attr, write_job, &job) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!started) {
        cf_log("report not written: this thread's stack is too small to write it, and no "
               "thread could be started to write it");
        return -1;
    }
    pthread_join(th, NULL);
    return job.rc;
}

/* A thread that exit() interrupted while it wrote a report would wait for itself:
 * it leaves the totals only. Another thread's report comes to an end (its waits
 * are bounded) and is the last interim one. */
void cf_report_write_final(const char *tag, const char *reason, bool interrupted)
{
    if (writing_report) {
        cf_crash_summary("final report not written: the process ended while this thread was "
                         "writing a report");
        return;
    }
    __atomic_store_n(&final_pending, 1, __ATOMIC_RELEASE);
    lock_reports();
    for_interrupted = interrupted;
    write_with_stack(tag, reason);
    for_interrupted = false;
    unlock_reports();
}

void cf_report_final(const char *reason)
{
    if (cf_report_claim_final() && worth_reporting()) cf_report_write_final("", reason, false);
}

bool cf_report_writing_here(void)
{
    return writing_report;
}

void cf_report_abandon(void)
{
    cf_output_remove_pending();
}

void cf_report_after_failed_exec(void)
{
    __atomic_store_n(&final_pending, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&final_written, 0, __ATOMIC_RELEASE);
}

int cf_report_interim(const char *reason)
{
    if (!cf_opt_bool(CF_OPT_ENABLE) || writing_report) return -1;
    lock_reports();
    int rc = -1;
    if (!__atomic_load_n(&final_pending, __ATOMIC_ACQUIRE)) {
        char tag[16];
        snprintf(tag, sizeof tag, "%u", ++interim_seq);
        rc = write_with_stack(tag, reason);
    }
    unlock_reports();
    return rc;
}

int cf_report_at_oom(void)
{
    if (!cf_opt_bool(CF_OPT_ENABLE) || writing_report) return -1;
    lock_reports();
    int rc = -1;
    if (!__atomic_load_n(&final_pending, __ATOMIC_ACQUIRE))
        rc = write_with_stack(OOM_TAG, "out of memory");
    unlock_reports();
    return rc;
}

bool cf_report_interim_written(void)
{
    return __atomic_load_n(&interim_seq, __ATOMIC_RELAXED) != 0;
}

void cf_report_reset_after_fork(void)
{
    /* The parent may have been reporting from another thread when it forked: that
     * thread does not exist here, so its lock must not either. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&report_mutex, &fresh, sizeof fresh);
    __atomic_store_n(&final_written, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&final_pending, 0, __ATOMIC_RELEASE);
    interim_seq = 0;
}
