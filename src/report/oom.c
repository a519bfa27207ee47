#include "report/oom.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "report/format.h"
#include "report/owners.h"

/* Only sites remember their last allocation: a site whose last one came after
 * the failure shows the program allocating again. */
static int recovered_after(const struct cf_snap *s, uint64_t t_ns)
{
    if (s->missing & CF_SNAP_NO_SITES) return -1;
    for (unsigned i = 0; i < s->nsites; i++)
        if (s->sites[i].calls && s->sites[i].last_ns > t_ns) return 1;
    return 0;
}

void cf_snap_oom_summary(const struct cf_snap *s, struct cf_oom_summary *out)
{
    *out = (struct cf_oom_summary){.count = (uint64_t)s->rec.nooms + s->rec.ooms_dropped,
                                   .first_unix_s = NAN};
    for (unsigned i = 0; i < s->rec.nooms; i++)
        if (out->first == NULL || s->rec.ooms[i].t_ns < out->first->t_ns)
            out->first = &s->rec.ooms[i];
    if (out->first == NULL) return;
    uint64_t t = out->first->t_ns;
    out->first_at_s = t > s->rec.start_ns ? (double)(t - s->rec.start_ns) / 1e9 : 0;
    if (s->wall_known) out->first_unix_s = (double)((int64_t)t + s->wall_minus_event_ns) / 1e9;
    /* At the failure itself it is too early to tell. */
    out->recovered = s->at_oom ? -1 : recovered_after(s, t);
}

const char *cf_fmt_wall(double unix_s, char *out, size_t n)
{
    /* After 1970 truncation is the floor; NAN (unknown) is never converted. */
    time_t sec = isnan(unix_s) || unix_s < 0 ? 0 : (time_t)unix_s;
    struct tm tm;
    char day[32];
    if (isnan(unix_s) || unix_s < 0 || gmtime_r(&sec, &tm) == NULL ||
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm) == 0) {
        snprintf(out, n, "unknown");
        return out;
    }
    snprintf(out, n, "%s.%03d UTC", day, (int)((unix_s - (double)sec) * 1000));
    return out;
}

#define B(v)            cf_fmt_bytes((v), (char[32]){0}, 32)
#define T(v)            cf_fmt_secs((v), (char[32]){0}, 32)
#define OOM_STACK_LINES 16
#define OOM_HOLDERS     5

void cf_render_oom_line(const struct cf_snap *s, struct cf_buf *o)
{
    struct cf_oom_summary sum;
    cf_snap_oom_summary(s, &sum);
    if (sum.count == 0) return;
    cf_buf_printf(o, "%llu failed allocation%s (out of memory), first at +%s",
                  (unsigned long long)sum.count, sum.count == 1 ? "" : "s", T(sum.first_at_s));
    if (sum.recovered == 1)
        cf_buf_puts(o, "; the program recovered (allocations succeeded after it)\n");
    else if (sum.recovered == 0)
        cf_buf_puts(o, "; no allocation succeeded after it\n");
    else
        cf_buf_puts(o, "\n");
}

/* The frames of the failed call, from the one it is shown at outwards, allocator
 * and framework plumbing left out as everywhere in the report. */
static void stack(const struct cf_snap *s, int site, struct cf_buf *o)
{
    char where[512];
    cf_snap_site_label(s, site, where, sizeof where);
    cf_buf_printf(o, "  at %s\n", where);
    int f = cf_snap_site_shown(s, site);
    for (unsigned k = 0; k < OOM_STACK_LINES && f >= 0 && (f = cf_snap_next_shown(s, site, f)) >= 0;
         k++) {
        cf_snap_frame_label(s, s->sites[site].frames[f], where, sizeof where);
        cf_buf_printf(o, "     %s\n", where);
    }
}

static void holders(const struct cf_snap *s, struct cf_buf *o)
{
    if (s->missing & CF_SNAP_NO_LIVE) {
        cf_buf_puts(o, "  who held the memory: unknown (partial report)\n");
        return;
    }
    cf_buf_printf(o,
                  "  who held the memory: %s live in %llu allocations; the largest by call site,"
                  " with its owner:\n",
                  B(s->leaked_bytes), (unsigned long long)s->leaked_count);
    for (unsigned i = 0; i < s->nleaks && i < OOM_HOLDERS; i++) {
        char where[512];
        int site = s->leaks[i].site;
        cf_snap_site_label(s, site, where, sizeof where);
        cf_buf_printf(o, "    %-10s %6llu x %-8s %-15s at %s\n", B(s->leaks[i].bytes),
                      (unsigned long long)s->leaks[i].count, cf_kind_name[s->leaks[i].kind],
                      cf_owner_info[cf_snap_site_owner(s, site)].label, where);
    }
}

void cf_render_oom_failure(const struct cf_snap *s, struct cf_buf *o)
{
    struct cf_oom_summary sum;
    cf_snap_oom_summary(s, &sum);
    if (!s->at_oom || sum.first == NULL) return;
    const struct cf_oom *e = sum.first;
    char wall[48];
    cf_buf_printf(o, "\n-- out of memory: the failed request --\n");
    cf_buf_printf(o, "  %s of %s on device %d failed at +%s (%s): %s\n", cf_api_info[e->api].name,
                  B(e->request), e->device, T(sum.first_at_s),
                  cf_fmt_wall(sum.first_unix_s, wall, sizeof wall),
                  cf_fmt_free_of(e->free_bytes, e->total_bytes, (char[96]){0}, 96));
    int site = e->site ? cf_snap_site_index(s, e->site->hash) : -1;
    if (site >= 0)
        stack(s, site, o);
    else
        cf_buf_puts(o, "  at an unknown call site\n");
    holders(s, o);
}
