#include "report/crash.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "record/record.h"
#include "base/log.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT};
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[NFATAL];
static int summary_written;

/* A tiny append-only formatter: snprintf is not async-signal-safe. */
struct out {
    char *buf;
    unsigned long len, cap;
};

static void put(struct out *o, const char *s)
{
    while (*s && o->len + 1 < o->cap)
        o->buf[o->len++] = *s++;
    o->buf[o->len] = '\0';
}

static void put_u64(struct out *o, uint64_t v)
{
    char digits[24];
    int i = (int)sizeof digits - 1;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, digits + i);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGABRT:
        return "SIGABRT";
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    default:
        return "a signal";
    }
}

unsigned long cf_crash_format(const char *what, char *buf, unsigned long n)
{
    struct out o = {buf, 0, n};
    uint64_t live = 0, peak = 0, live_count = 0;
    /* Plain reads without the record locks: a thread may have been interrupted
     * while holding one, and slightly stale numbers are fine here. */
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        const volatile struct cf_device_stats *ds = &cf_rec.dev[d];
        if (!ds->seen) continue;
        live += ds->live_bytes;
        live_count += ds->live_count;
        peak += ds->peak_live_bytes;
    }
    put(&o, "cudafrag: ");
    put(&o, what);
    put(&o, "; report incomplete: only these totals were saved: ");
    put_u64(&o, cf_rec.total_allocs);
    put(&o, " allocations, ");
    put_u64(&o, cf_rec.total_frees);
    put(&o, " frees, ");
    put_u64(&o, live_count);
    put(&o, " allocations live (");
    put_u64(&o, live);
    put(&o, " bytes), peak live ");
    put_u64(&o, peak);
    put(&o, " bytes (sum over devices)\n");
    return o.len;
}

void cf_crash_summary(const char *what)
{
    if (__atomic_exchange_n(&summary_written, 1, __ATOMIC_ACQ_REL) == 0) {
        char buf[512];
        unsigned long len = cf_crash_format(what, buf, sizeof buf);
        cf_write_all(2, buf, len);
    }
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
    char what[32] = "killed by ";
    strcat(what, signal_name(sig)); /* strcat is async-signal-safe */
    cf_crash_summary(what);
    for (unsigned i = 0; i < NFATAL; i++) {
        if (fatal_signals[i] != sig) continue;
        /* Restore what was there before (we only replace the default action):
         * the raised signal stays pending until this handler returns, then kills
         * the process with the usual status and core dump. */
        sigaction(sig, &previous[i], NULL);
        raise(sig);
        return;
    }
}

void cf_crash_install(void)
{
    for (unsigned i = 0; i < NFATAL; i++) {
        struct sigaction cur;
        if (sigaction(fatal_signals[i], NULL, &cur) != 0) continue;
        if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        previous[i] = cur;
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

bool cf_crash_handler_is(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fatal;
}
