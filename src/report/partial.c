/* What a report leaves out when it cannot have all of cudafrag's locks: the final
 * report may run in a thread that a signal interrupted inside the hooks (a
 * handler that calls exit()), and such a thread never releases what it held. */
#include <stdio.h>
#include <string.h>

#include "report/snapshot.h"

void cf_snap_sample_final(struct cf_snap_input *in, bool driver_held,
                          const struct timespec *deadline)
{
    int rc = driver_held ? -1 : cf_rec_sample_final_until(deadline);
    if (rc < 0) in->missing |= CF_SNAP_NO_FINAL_SAMPLE;
    in->driver_unusable = rc == 0;
}

/* The OOM list, the marks and the regions grow, and the graph pool's high water rises, under
 * the apply lock: read without it, an entry may be half written. */
static void forget_events(struct cf_record *r)
{
    r->nooms = 0;
    r->ooms_dropped = 0;
    r->nmarks = 0;
    r->marks_dropped = 0;
    r->nregions = 0;
    r->regions_dropped = 0;
    memset(r->graph.reserved_high, 0, sizeof r->graph.reserved_high);
    memset(r->graph.used_high, 0, sizeof r->graph.used_high);
}

static bool all(unsigned held, unsigned locks)
{
    return (held & locks) == locks;
}

void cf_snap_leave_out(struct cf_snap *s, unsigned held)
{
    const unsigned slots = CF_REC_HELD_SLOTS;
    if (!all(held, CF_REC_HELD_SITES | slots)) s->missing |= CF_SNAP_NO_SITES;
    if (!all(held, CF_REC_HELD_SITES | slots)) s->missing |= CF_SNAP_NO_LIVE;
    if (!all(held, CF_REC_HELD_POOLS | slots)) s->missing |= CF_SNAP_NO_POOLS;
    /* Each figure is a whole word, so they are kept: at worst one event is half in. */
    if (!(held & slots)) s->missing |= CF_SNAP_UNSETTLED_DEVICES;
    if (!(held & CF_REC_HELD_COUNTERS)) s->missing |= CF_SNAP_STALE_COUNTERS;
    if (!(held & CF_REC_HELD_APPLY)) {
        s->missing |= CF_SNAP_NO_EVENTS;
        forget_events(&s->rec);
    }
}

void cf_snap_describe_missing(const struct cf_snap *s, char *out, size_t n)
{
    static const struct {
        unsigned bit;
        const char *what;
    } parts[] = {
        {CF_SNAP_NO_SITES, "call sites"},
        {CF_SNAP_NO_LIVE, "allocations live at the report"},
        {CF_SNAP_NO_POOLS, "memory pools"},
        {CF_SNAP_NO_EVENTS, "out-of-memory events, marks and graph pool high water"},
        {CF_SNAP_UNSETTLED_DEVICES, "exact device figures (one allocation may be half counted)"},
        {CF_SNAP_NO_FINAL_SAMPLE, "the last driver sample"},
        {CF_SNAP_NO_ARENA, "arena figures"},
        {CF_SNAP_STALE_COUNTERS, "the latest call and size counters (those shown are older)"},
    };
    size_t len = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0] && len < n; i++) {
        if (!(s->missing & parts[i].bit)) continue;
        int w = snprintf(out + len, n - len, "%s%s", len ? ", " : "", parts[i].what);
        if (w > 0) len += (size_t)w;
    }
}
