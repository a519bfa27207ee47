/* cudafrag report TRACE --html OUT: one self-contained page (inline style,
 * inline SVG, a small inline script; a Content-Security-Policy that forbids
 * loading anything) with each device's memory over time, icicle graphs of the
 * live bytes at the footprint peak and of the bytes leaked, the top call
 * sites, fragmentation, out-of-memory events and findings (docs/views.md). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/collect.h"
#include "cli/html_advice.h"
#include "cli/html_owners.h"
#include "cli/html_style.h"
#include "cli/html_whatif.h"
#include "cli/names.h"
#include "cli/svg.h"
#include "cli/views.h"
#include "cli/weights.h"
#include "cli/whatif.h"
#include "report/format.h"

#include "cudafrag_build.h"

#define MAX_MARKS 64

enum { S_LIVE, S_FOOTPRINT, S_POOL, S_ARENA, S_COUNT };
static const char *const series_name[S_COUNT] = {"live", "footprint", "pool reserved",
                                                 "arena mapped"};
static const char *const series_cls[S_COUNT] = {"live", "footprint", "pool", "arena"};

static struct page {
    struct cf_steps *s[CF_MAX_DEVICES]; /* S_COUNT each, allocated when used */
    struct cf_plot_mark ooms[MAX_MARKS];
    int oom_dev[MAX_MARKS];
    unsigned nooms;
    bool failed;
} pg;

/* ---- gathering ---- */

static void point(int device, uint64_t t, const struct cf_coll_values *v, void *ctx)
{
    if (pg.s[device] == NULL && (pg.s[device] = calloc(S_COUNT, sizeof *pg.s[device])) == NULL) {
        pg.failed = true;
        return;
    }
    const uint64_t vals[S_COUNT] = {v->live, v->footprint, v->pool_reserved, v->arena_mapped};
    for (int i = 0; i < S_COUNT; i++)
        cf_steps_add(&pg.s[device][i], t, vals[i]);
}

static void alloc(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx)
{
    if (a || !(e->flags & CF_EVF_OOM) || pg.nooms >= MAX_MARKS) return;
    struct cf_plot_mark *m = &pg.ooms[pg.nooms];
    char req[32], fr[32];
    m->cls = "oom";
    m->t = e->t_ns > cf_rec.start_ns ? e->t_ns - cf_rec.start_ns : 0;
    m->v = 0;
    snprintf(m->label, sizeof m->label, "OOM");
    snprintf(m->title, sizeof m->title, "out of memory: %s of %s failed, %s free",
             cf_api_info[e->api].name, cf_fmt_bytes(e->size, req, sizeof req),
             e->v[1] ? cf_fmt_bytes(e->v[0], fr, sizeof fr) : "unknown");
    pg.oom_dev[pg.nooms++] = e->device;
}

/* ---- pieces of the page ---- */

static void esc(struct cf_buf *b, const char *s)
{
    cf_html_esc(b, s);
}

static void bytes_cell(struct cf_buf *b, uint64_t v)
{
    char a[32];
    cf_buf_printf(b, "<td class=\"n\" data-bytes=\"%" PRIu64 "\">%s</td>", v,
                  cf_fmt_bytes(v, a, sizeof a));
}

static void pct(char *out, size_t n, double f)
{
    if (isnan(f))
        snprintf(out, n, "unknown");
    else
        snprintf(out, n, "%.1f%%", 100 * f);
}

static void head(struct cf_buf *b, const struct cf_snap *s)
{
    cf_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                   "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n<title>cudafrag: ");
    esc(b, cf_names_base(s->program));
    cf_buf_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body><main>\n", cf_html_css);
}

static void header(struct cf_buf *b, const struct cf_snap *s)
{
    char d[32];
    cf_buf_puts(b, "<header><h1>cudafrag report: ");
    esc(b, cf_names_base(s->program));
    cf_buf_puts(b, "</h1><p class=\"meta\"><code>");
    esc(b, s->program);
    cf_buf_puts(b, "</code>");
    /* What is unknown (an imported run's pid, rank and host) is left out. */
    if (cf_snap_import_kind(s)) {
        cf_buf_puts(b, " &middot; imported from a ");
        esc(b, cf_snap_import_kind(s));
    }
    if (s->pid > 0) cf_buf_printf(b, " &middot; pid %ld", s->pid);
    if (s->rank[0]) {
        cf_buf_puts(b, " &middot; rank ");
        esc(b, s->rank);
    }
    if (s->host[0]) {
        cf_buf_puts(b, " &middot; host ");
        esc(b, s->host);
    }
    cf_buf_printf(b, " &middot; %s &middot; %s report (", cf_fmt_secs(s->duration_s, d, sizeof d),
                  s->interim ? "interim" : "final");
    esc(b, s->reason ? s->reason : "exit");
    cf_buf_puts(b, "), computed from its trace</p>\n");
    if (s->blocks && s->blocks[0]) {
        cf_buf_puts(b, "<p class=\"meta\">framework caches bypassed (cudafrag run --blocks): ");
        esc(b, s->blocks);
        cf_buf_puts(b, "</p>\n");
    }
    cf_buf_puts(b, "<nav aria-label=\"sections\"><a href=\"#summary\">Summary</a>");
    for (unsigned i = 0; i < s->ndevs; i++)
        cf_buf_printf(b, "<a href=\"#device-%d\">Device %d</a>", s->devs[i].device,
                      s->devs[i].device);
    cf_buf_puts(b, "<a href=\"#leaks\">Leaks</a><a href=\"#sites\">Call sites</a><a "
                   "href=\"#fragmentation\">Fragmentation</a><a href=\"#whatif\">What-if</a><a "
                   "href=\"#findings\">Findings</a>"
                   "</nav></header>\n");
}

static void card(struct cf_buf *b, const char *what, const char *value, const char *note)
{
    cf_buf_puts(b, "<div class=\"card\">");
    esc(b, what);
    cf_buf_puts(b, "<b>");
    esc(b, value);
    cf_buf_puts(b, "</b><span class=\"note\">");
    esc(b, note);
    cf_buf_puts(b, "</span></div>");
}

static void summary(struct cf_buf *b, const struct cf_snap *s)
{
    char v[64], n[96], x[32];
    unsigned sev[3] = {0};
    for (unsigned i = 0; i < s->nfindings; i++)
        sev[strcmp(s->findings[i].severity, "high") == 0     ? 0
            : strcmp(s->findings[i].severity, "medium") == 0 ? 1
                                                             : 2]++;
    cf_buf_puts(b, "<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    card(b, "Peak live", cf_fmt_bytes(s->total_peak_live, v, sizeof v), "sum over devices");
    card(b, "Peak footprint", cf_fmt_bytes(s->total_peak_footprint, v, sizeof v),
         "what the devices held for it");
    pct(v, sizeof v, s->headline_frag);
    card(b, "Fragmentation", v, "1 - peak live / peak footprint");
    snprintf(v, sizeof v, "%" PRIu64, s->rec.total_allocs);
    snprintf(n, sizeof n, "%s requested", cf_fmt_bytes(s->total_alloc_bytes, x, sizeof x));
    card(b, "Allocations", v, n);
    snprintf(n, sizeof n, "%" PRIu64 " allocations", s->leaked_count);
    card(b, "Live at the end", cf_fmt_bytes(s->leaked_bytes, v, sizeof v), n);
    snprintf(v, sizeof v, "%u", s->rec.nooms + s->rec.ooms_dropped);
    card(b, "Out of memory", v, "failed allocations");
    snprintf(v, sizeof v, "%u", s->nfindings);
    snprintf(n, sizeof n, "%u high, %u medium, %u low", sev[0], sev[1], sev[2]);
    card(b, "Findings", v, n);
    cf_buf_puts(b, "</div></section>\n");
}

static void legend(struct cf_buf *b, const struct cf_plot *p)
{
    cf_buf_puts(b, "<ul class=\"legend\">");
    for (unsigned i = 0; i < p->nlines; i++)
        cf_buf_printf(b, "<li class=\"%s\"><i></i>%s</li>", p->lines[i].cls, p->lines[i].name);
    cf_buf_puts(b, "<li>&#9711; peak</li>");
    if (p->nmarks > 2) cf_buf_puts(b, "<li>OOM: out-of-memory failure</li>");
    cf_buf_puts(b, "</ul>");
}

/* cls: "peak footprint" or "peak live" (CSS classes "peak" and the series). */
static void peak_mark(struct cf_plot_mark *m, const char *cls, const char *what, uint64_t t,
                      uint64_t v)
{
    char a[32], w[32];
    m->cls = cls;
    m->t = t;
    m->v = v;
    snprintf(m->label, sizeof m->label, "%s %s", what, cf_fmt_bytes(v, a, sizeof a));
    snprintf(m->title, sizeof m->title, "%s: %s at +%s", what, a,
             cf_fmt_secs((double)t / 1e9, w, sizeof w));
}

/* The lines with any sample; points buffers are owned by the caller. Live is
 * drawn last, on top: the thicker footprint line would hide it where they meet. */
static void plot_lines(struct cf_plot *p, int dev, struct cf_point *pts[S_COUNT])
{
    static const int order[S_COUNT] = {S_FOOTPRINT, S_POOL, S_ARENA, S_LIVE};
    for (int k = 0; k < S_COUNT && pg.s[dev]; k++) {
        int i = order[k];
        if (pg.s[dev][i].samples == 0 || pts[i] == NULL) continue;
        struct cf_plot_line *l = &p->lines[p->nlines++];
        l->name = series_name[i];
        l->cls = series_cls[i];
        l->p = pts[i];
        l->n = cf_steps_points(&pg.s[dev][i], pts[i]);
    }
}

static void device_plot(struct cf_buf *b, const struct cf_coll *c, int dev)
{
    const struct cf_snap *s = &c->snap;
    struct cf_plot_mark marks[MAX_MARKS + 2];
    struct cf_point *pts[S_COUNT];
    char id[32], title[96];
    snprintf(id, sizeof id, "plot-%d", dev);
    snprintf(title, sizeof title, "Device %d memory over time", dev);
    struct cf_plot p = {.id = id, .title = title, .marks = marks};
    p.t_end = s->now_ns > s->rec.start_ns ? s->now_ns - s->rec.start_ns : 1;
    peak_mark(&marks[p.nmarks++], "peak footprint", "peak footprint",
              c->dev[dev].at_footprint_peak.t_ns, s->rec.dev[dev].peak_footprint);
    peak_mark(&marks[p.nmarks++], "peak live", "peak live", c->dev[dev].at_live_peak.t_ns,
              s->rec.dev[dev].peak_live_bytes);
    marks[1].below = 1;
    for (unsigned i = 0; i < pg.nooms; i++)
        if (pg.oom_dev[i] == dev) marks[p.nmarks++] = pg.ooms[i];
    for (int i = 0; i < S_COUNT; i++)
        pts[i] = malloc(CF_STEPS_MAX * sizeof *pts[i]);
    plot_lines(&p, dev, pts);
    legend(b, &p);
    cf_buf_puts(b, "<div class=\"scroll\">");
    cf_svg_plot(b, &p);
    cf_buf_printf(b,
                  "</div><p class=\"readout\" id=\"%s-tip\" aria-live=\"polite\">Point at the "
                  "plot (or focus it and use the arrow keys) to read the values.</p>",
                  id);
    for (int i = 0; i < S_COUNT; i++)
        free(pts[i]);
}

static void icicle(struct cf_buf *b, const struct cf_coll *c, enum cf_weight w, int dev,
                   const char *id, const char *title)
{
    struct cf_wrow *rows = NULL;
    unsigned n = 0;
    if (cf_weights(c, w, dev, &rows, &n) != 0) {
        pg.failed = true;
        return;
    }
    cf_buf_puts(b, "<div class=\"scroll\">");
    cf_svg_icicle(b, id, title, &c->snap, rows, n);
    cf_buf_puts(b, "</div>");
    free(rows);
}

static void device_section(struct cf_buf *b, const struct cf_coll *c, const struct cf_dev_view *v)
{
    const struct cf_device_stats *ds = &c->snap.rec.dev[v->device];
    char a[32], l[32], t[32], id[32], title[128];
    cf_buf_printf(b, "<section id=\"device-%d\"><h2>Device %d: memory over time</h2>", v->device,
                  v->device);
    cf_buf_printf(b, "<p>Peak footprint <b>%s</b> at +%s, peak live <b>%s</b>.</p>",
                  cf_fmt_bytes(v->peak_footprint, a, sizeof a),
                  cf_fmt_secs((double)c->dev[v->device].at_footprint_peak.t_ns / 1e9, t, sizeof t),
                  cf_fmt_bytes(v->peak_live, l, sizeof l));
    device_plot(b, c, v->device);
    snprintf(title, sizeof title, "Live bytes on device %d at its footprint peak, by call stack",
             v->device);
    cf_buf_printf(b, "<h3>%s (%s)</h3>", title,
                  cf_fmt_bytes(ds->live_at_peak_footprint, a, sizeof a));
    snprintf(id, sizeof id, "peak-%d", v->device);
    icicle(b, c, CF_W_FOOTPRINT_PEAK, v->device, id, title);
    cf_buf_puts(b, "</section>\n");
}

static void leaks(struct cf_buf *b, const struct cf_coll *c)
{
    char a[32];
    cf_buf_printf(b,
                  "<section id=\"leaks\"><h2>Live at the end (leaks), by call stack: %s in "
                  "%" PRIu64 " allocations</h2>",
                  cf_fmt_bytes(c->snap.leaked_bytes, a, sizeof a), c->snap.leaked_count);
    if (c->snap.leaked_count)
        icicle(b, c, CF_W_LEAKED, -1, "leaked", "Bytes live at the end, by call stack");
    else
        cf_buf_puts(b, "<p>Every allocation was freed.</p>");
    cf_buf_puts(b, "</section>\n");
}

static void site_row(struct cf_buf *b, const struct cf_snap *s, unsigned idx)
{
    const struct cf_site *st = &s->sites[idx];
    char label[512], t[32];
    cf_snap_site_label(s, (int)idx, label, sizeof label);
    cf_buf_puts(b, "<tr><td><code>");
    esc(b, label);
    cf_buf_puts(b, "</code></td><td>");
    esc(b, cf_api_info[st->api].name);
    cf_buf_puts(b, "</td><td>");
    esc(b, cf_owner_info[cf_snap_site_owner(s, (int)idx)].label);
    cf_buf_printf(b, "</td><td class=\"n\">%" PRIu64 "</td>", st->calls);
    bytes_cell(b, st->peak_live_bytes);
    bytes_cell(b, st->bytes);
    bytes_cell(b, st->live_bytes);
    cf_buf_printf(b, "<td class=\"n\">%.0f/s</td><td class=\"n\">%s</td></tr>", cf_site_rate(st),
                  isnan(cf_site_mean_lifetime_s(st))
                      ? "&ndash;"
                      : cf_fmt_secs(cf_site_mean_lifetime_s(st), t, sizeof t));
}

static void sites(struct cf_buf *b, const struct cf_snap *s)
{
    cf_buf_printf(
        b,
        "<section id=\"sites\"><h2>Top call sites by peak live bytes</h2><div "
        "class=\"scroll\"><table><caption>%u of %u call sites</caption><thead><tr>"
        "<th scope=\"col\">site</th><th scope=\"col\">API</th><th scope=\"col\">owner</th>"
        "<th scope=\"col\" class=\"n\">calls</th><th scope=\"col\" class=\"n\">peak live</th><th "
        "scope=\"col\" class=\"n\">bytes</th><th scope=\"col\" class=\"n\">live at "
        "end</th><th scope=\"col\" class=\"n\">rate</th><th scope=\"col\" "
        "class=\"n\">mean life</th></tr></thead><tbody>",
        s->nsites < s->top ? s->nsites : s->top, s->nsites);
    for (unsigned i = 0; i < s->nsites && i < s->top; i++)
        site_row(b, s, s->by_peak[i]);
    cf_buf_puts(b, "</tbody></table></div></section>\n");
}

static void frag_row(struct cf_buf *b, const struct cf_snap *s, const struct cf_dev_view *v)
{
    const struct cf_device_stats *ds = &s->rec.dev[v->device];
    char h[16], f[16], l[16], w[16];
    pct(h, sizeof h, v->headline_frag);
    pct(f, sizeof f, v->frag_at_peak_footprint);
    pct(l, sizeof l, v->frag_at_peak_live);
    pct(w, sizeof w, v->internal_waste);
    cf_buf_printf(b, "<tr><th scope=\"row\">device %d</th>", v->device);
    bytes_cell(b, v->peak_live);
    bytes_cell(b, v->peak_footprint);
    cf_buf_printf(b,
                  "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td "
                  "class=\"n\">%s</td>",
                  h, f, l, w);
    bytes_cell(b, ds->at_peak.raw);
    bytes_cell(b, ds->at_peak.pool);
    bytes_cell(b, ds->at_peak.graph);
    bytes_cell(b, ds->at_peak.arena);
    bytes_cell(b, ds->at_peak.vmm);
    cf_buf_puts(b, "</tr>");
}

static void fragmentation(struct cf_buf *b, const struct cf_snap *s)
{
    char h[16], w[16], r[32] = "unknown";
    pct(h, sizeof h, s->headline_frag);
    pct(w, sizeof w, s->internal_waste);
    if (s->pool_used_high)
        snprintf(r, sizeof r, "%.2f", (double)s->pool_reserved_high / (double)s->pool_used_high);
    cf_buf_printf(b,
                  "<section id=\"fragmentation\"><h2>Fragmentation</h2><p>Headline "
                  "<b>%s</b> (1 &minus; peak live / peak footprint); rounding waste at the live "
                  "peak %s; pools reserved / used at their high water %s.</p>",
                  h, w, r);
    cf_buf_puts(b, "<div class=\"scroll\"><table><caption>Per device; the footprint's parts at "
                   "its peak</caption><thead><tr><th scope=\"col\">device</th><th scope=\"col\" "
                   "class=\"n\">peak live</th><th scope=\"col\" class=\"n\">peak footprint</th>"
                   "<th scope=\"col\" class=\"n\">fragmentation</th><th scope=\"col\" "
                   "class=\"n\">at footprint peak</th><th scope=\"col\" class=\"n\">at live "
                   "peak</th><th scope=\"col\" class=\"n\">rounding</th><th scope=\"col\" "
                   "class=\"n\">raw pages</th><th scope=\"col\" class=\"n\">pools</th><th "
                   "scope=\"col\" class=\"n\">graph pool</th><th scope=\"col\" "
                   "class=\"n\">arena</th><th scope=\"col\" class=\"n\">VMM</th></tr></thead>"
                   "<tbody>");
    for (unsigned i = 0; i < s->ndevs; i++)
        frag_row(b, s, &s->devs[i]);
    cf_buf_puts(b, "</tbody></table></div></section>\n");
}

static void ooms(struct cf_buf *b, const struct cf_snap *s)
{
    if (s->rec.nooms == 0) return;
    cf_buf_puts(b, "<section id=\"ooms\"><h2>Out-of-memory events</h2><div class=\"scroll\"><table>"
                   "<thead><tr><th scope=\"col\">at</th><th scope=\"col\">API</th><th "
                   "scope=\"col\" class=\"n\">device</th><th scope=\"col\" class=\"n\">request</th>"
                   "<th scope=\"col\" class=\"n\">free</th><th scope=\"col\">site</th></tr></thead>"
                   "<tbody>");
    for (unsigned i = 0; i < s->rec.nooms; i++) {
        const struct cf_oom *o = &s->rec.ooms[i];
        char t[32], label[512];
        uint64_t at = o->t_ns > s->rec.start_ns ? o->t_ns - s->rec.start_ns : 0;
        cf_snap_site_label(s, o->site ? cf_snap_site_index(s, o->site->hash) : -1, label,
                           sizeof label);
        cf_buf_printf(b, "<tr><td>+%s</td><td>%s</td><td class=\"n\">%d</td>",
                      cf_fmt_secs((double)at / 1e9, t, sizeof t), cf_api_info[o->api].name,
                      o->device);
        bytes_cell(b, o->request);
        bytes_cell(b, o->free_bytes);
        cf_buf_puts(b, "<td><code>");
        esc(b, label);
        cf_buf_puts(b, "</code></td></tr>");
    }
    cf_buf_puts(b, "</tbody></table></div></section>\n");
}

/* The call sites a finding covers, as many as the report's tables show. */
static void finding_sites(struct cf_buf *b, const struct cf_snap *s, const struct cf_finding *f)
{
    if (f->nsites < 2) return;
    cf_buf_puts(b, "<ul class=\"covered\">");
    for (unsigned i = 0; i < f->nsites && i < s->top; i++) {
        char label[512];
        cf_snap_site_label(s, f->sites[i].site, label, sizeof label);
        cf_buf_printf(b, "<li>%.0f%% <code>", 100 * f->sites[i].share);
        esc(b, label);
        cf_buf_puts(b, "</code> ");
        esc(b, f->sites[i].note);
        cf_buf_puts(b, "</li>");
    }
    cf_buf_puts(b, "</ul>");
}

static void findings(struct cf_buf *b, const struct cf_snap *s)
{
    cf_buf_printf(b, "<section id=\"findings\"><h2>Findings (%u)</h2>", s->nfindings);
    if (s->nfindings == 0) cf_buf_puts(b, "<p>None.</p>");
    cf_buf_puts(b, "<ol class=\"findings\">");
    for (unsigned i = 0; i < s->nfindings; i++) {
        const struct cf_finding *f = &s->findings[i];
        cf_buf_printf(b, "<li><span class=\"sev %s\">%s</span> <code>%s</code><p>", f->severity,
                      f->severity, f->id);
        esc(b, f->title);
        cf_buf_puts(b, "</p>");
        finding_sites(b, s, f);
        cf_buf_puts(b, "<p class=\"note\">");
        esc(b, f->advice);
        cf_buf_puts(b, "</p></li>");
    }
    cf_buf_puts(b, "</ol></section>\n");
}

static void page(struct cf_buf *b, const struct cf_coll *c, const char *trace,
                 const struct cf_rp_table *whatif, const struct cf_advise *advice)
{
    const struct cf_snap *s = &c->snap;
    head(b, s);
    header(b, s);
    summary(b, s);
    for (unsigned i = 0; i < s->ndevs; i++)
        device_section(b, c, &s->devs[i]);
    leaks(b, c);
    cf_html_owners(b, c);
    sites(b, s);
    fragmentation(b, s);
    cf_html_whatif(b, whatif);
    cf_html_advice(b, advice);
    ooms(b, s);
    findings(b, s);
    cf_buf_printf(b, "<footer class=\"note\"><p>cudafrag %s &middot; from <code>",
                  CUDAFRAG_VERSION);
    esc(b, trace);
    cf_buf_printf(b, "</code></p></footer>\n</main>\n<script>\n%s</script>\n</body></html>\n",
                  cf_html_js);
}

struct replays {
    struct cf_whatif *w;
    struct cf_advise *a;
};

/* The what-if replay and the advice take their events in the same pass. */
static void replay_event(const struct cf_event *e, void *ctx)
{
    struct replays *r = ctx;
    cf_whatif_event(e, r->w);
    if (r->a) cf_advise_blocks_event(e, r->a);
}

int cf_html_write(const char *trace, const char *out, struct cf_whatif *w)
{
    static struct cf_coll c;
    struct replays r = {.w = w, .a = cf_advise_new(false, 0)};
    struct cf_coll_sink sink = {.point = point, .alloc = alloc, .event = replay_event, .ctx = &r};
    struct cf_buf b = {0};
    memset(&pg, 0, sizeof pg);
    int rc = cf_coll_run(&c, trace, &sink);
    /* A model that could not run is a failure, but its row says why: the page is written. */
    int models = rc == 0 ? cf_whatif_run(w, trace, &c.snap) : 0;
    if (models < 0) rc = 1;
    /* Without its advice (out of memory) the page is still the page. */
    if (rc == 0 && r.a && !r.a->not_blocks && cf_advise_run(r.a, trace, &c.snap) != 0) {
        cf_advise_free(r.a);
        r.a = NULL;
    }
    if (rc == 0) page(&b, &c, trace, cf_whatif_table(w), r.a);
    if (rc == 0 && (b.failed || pg.failed)) {
        fprintf(stderr, "cudafrag: out of memory while writing the HTML report\n");
        rc = 1;
    }
    FILE *f = rc == 0 ? cf_out_open(out) : NULL;
    if (f) {
        fwrite(b.data, 1, b.len, f);
        rc = cf_out_close(f, out);
    } else if (rc == 0) {
        rc = 1;
    }
    cf_buf_free(&b);
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        for (int i = 0; pg.s[d] && i < S_COUNT; i++)
            cf_steps_free(&pg.s[d][i]);
        free(pg.s[d]);
    }
    cf_coll_free(&c);
    cf_advise_free(r.a);
    cf_names_free();
    return rc ? rc : models;
}
