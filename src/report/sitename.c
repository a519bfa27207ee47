/* How call sites are named: the frame a site is shown at is its first that is
 * not allocator or framework plumbing (fold.c); Python frames read
 * "function (python) file.py:42", native ones "function (module+0x1f2c) file.c:42". */
#include "report/snapshot.h"

#include <stdio.h>
#include <string.h>

int cf_snap_site_shown(const struct cf_snap *s, int site)
{
    if (site < 0 || (unsigned)site >= s->nsites) return -1;
    const struct cf_site *st = &s->sites[site];
    int last = -1, framework = -1;
    for (unsigned f = 0; f < st->nframes; f++) {
        if (cf_frame_is_marker(st->frames[f])) continue;
        const struct cf_sym *sym = cf_symtab_find(&s->syms, st->frames[f]);
        if (sym == NULL || !sym->folded) return (int)f;
        if (framework < 0 && sym->framework) framework = (int)f;
        last = (int)f; /* every frame folded: the outermost is nearest the program */
    }
    /* Nothing but folded frames (a framework's own thread): its first frame past
     * the allocator says more than the thread's start. */
    return framework >= 0 ? framework : last;
}

int cf_snap_next_shown(const struct cf_snap *s, int site, int after)
{
    const struct cf_site *st = &s->sites[site];
    for (unsigned f = (unsigned)(after + 1); f < st->nframes; f++) {
        const struct cf_sym *sym = cf_symtab_find(&s->syms, st->frames[f]);
        if (!cf_frame_is_marker(st->frames[f]) && sym && !sym->folded) return (int)f;
    }
    return -1;
}

uint32_t cf_snap_site_python(const struct cf_snap *s, int site)
{
    if (site < 0 || (unsigned)site >= s->nsites) return 0;
    const struct cf_site *st = &s->sites[site];
    for (unsigned f = 0; f < st->nframes; f++)
        if (cf_frame_is_marker(st->frames[f])) return (uint32_t)CF_FRAME_OFFSET(st->frames[f]);
    return 0;
}

void cf_snap_frame_label(const struct cf_snap *s, uintptr_t frame, char *out, size_t n)
{
    const struct cf_sym *sym = cf_symtab_find(&s->syms, frame);
    const char *file = sym ? strrchr(sym->file, '/') : NULL;
    file = file ? file + 1 : sym ? sym->file : "";
    if (sym && sym->python && sym->line)
        snprintf(out, n, "%s (python) %s:%u", sym->function[0] ? sym->function : "??", file,
                 sym->line);
    else if (sym == NULL || sym->module[0] == '\0')
        snprintf(out, n, "0x%llx", (unsigned long long)frame);
    else if (sym->line)
        snprintf(out, n, "%s (%s+0x%llx) %s:%u", sym->function[0] ? sym->function : "??",
                 sym->module, (unsigned long long)sym->offset, file, sym->line);
    else
        snprintf(out, n, "%s (%s+0x%llx)", sym->function[0] ? sym->function : "??", sym->module,
                 (unsigned long long)sym->offset);
}

void cf_snap_site_label(const struct cf_snap *s, int site, char *out, size_t n)
{
    if (site < 0 || (unsigned)site >= s->nsites) {
        snprintf(out, n, "(no call site)");
        return;
    }
    const struct cf_site *st = &s->sites[site];
    int shown = cf_snap_site_shown(s, site);
    const struct cf_sym *sym = shown >= 0 ? cf_symtab_find(&s->syms, st->frames[shown]) : NULL;
    const char *api = cf_api_info[st->api].name;
    bool all_folded = sym && sym->folded;
    if (shown < 0)
        snprintf(out, n, "%s (stacks off)", api);
    else if (all_folded && cf_snap_site_python(s, site) == CF_PY_GIL_RELEASED)
        snprintf(out, n, "%s from Python code that had released the GIL", api);
    else if (sym == NULL || (sym->module[0] == '\0' && !(sym->python && sym->line)))
        snprintf(out, n, "%s from 0x%llx", api, (unsigned long long)st->frames[shown]);
    else
        cf_snap_frame_label(s, st->frames[shown], out, n);
}
