#include "cli/html_owners.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cli/svg.h"
#include "report/format.h"

static void bytes_cell(struct cf_buf *b, uint64_t v)
{
    char a[32];
    cf_buf_printf(b, "<td class=\"n\" data-bytes=\"%" PRIu64 "\">%s</td>", v,
                  cf_fmt_bytes(v, a, sizeof a));
}

/* The bytes each owner held at each device's live peak, summed over the devices:
 * the replay knows every site's live bytes there. Graph memory in use has no
 * site: it is the graphs'. */
static void at_live_peaks(const struct cf_coll *c, uint64_t *held)
{
    for (int d = 0; d < CF_MAX_DEVICES; d++) {
        const struct cf_coll_peak *p = &c->dev[d].at_live_peak;
        if (!c->dev[d].used || p->by_id == NULL) continue;
        for (uint32_t id = 0; id < c->nids; id++)
            if (p->by_id[id])
                held[cf_snap_site_owner(&c->snap, cf_coll_site_index(c, id))] += p->by_id[id];
        held[CF_OWNER_GRAPHS] += p->graph_used;
    }
}

static int by_peak_desc(const void *a, const void *b, void *ctx)
{
    const struct cf_owner_view *v = ctx;
    uint64_t x = v[*(const int *)a].peak_live, y = v[*(const int *)b].peak_live;
    return x != y ? (x < y) - (x > y) : *(const int *)a - *(const int *)b;
}

void cf_html_owners(struct cf_buf *b, const struct cf_coll *c)
{
    const struct cf_snap *s = &c->snap;
    uint64_t held[CF_OWNER_COUNT] = {0};
    int order[CF_OWNER_COUNT];
    at_live_peaks(c, held);
    for (int i = 0; i < CF_OWNER_COUNT; i++)
        order[i] = i;
    qsort_r(order, CF_OWNER_COUNT, sizeof order[0], by_peak_desc, (void *)s->owners);
    cf_buf_puts(b, "<section id=\"owners\"><h2>Memory by owner</h2><div class=\"scroll\"><table>"
                   "<caption>Device memory by who allocated it (docs/report.md#owners). Peak "
                   "live: the owner's call sites' own peaks, summed, as in the text report; at "
                   "the live peak: what it held at each device's live peak, exact"
                   "</caption><thead><tr><th scope=\"col\">owner</th><th scope=\"col\" "
                   "class=\"n\">peak live</th><th scope=\"col\" class=\"n\">share of peak</th>"
                   "<th scope=\"col\" class=\"n\">at the live peak</th><th scope=\"col\" "
                   "class=\"n\">live at end</th><th scope=\"col\" class=\"n\">allocations</th>"
                   "<th scope=\"col\" class=\"n\">sites</th></tr></thead><tbody>");
    for (int i = 0; i < CF_OWNER_COUNT; i++) {
        const struct cf_owner_view *v = &s->owners[order[i]];
        if (v->sites == 0 && v->live == 0 && held[order[i]] == 0) continue;
        cf_buf_puts(b, "<tr><th scope=\"row\">");
        cf_html_esc(b, cf_owner_info[order[i]].label);
        cf_buf_puts(b, "</th>");
        bytes_cell(b, v->peak_live);
        cf_buf_printf(b, "<td class=\"n\">%.1f%%</td>", 100 * v->share);
        bytes_cell(b, held[order[i]]);
        bytes_cell(b, v->live);
        cf_buf_printf(b, "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%u</td></tr>",
                      v->allocations, v->sites);
    }
    cf_buf_puts(b, "</tbody></table></div></section>\n");
}
