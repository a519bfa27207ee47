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

/* Cuts a trailing suffix such as " const" or " [clone .constprop.0]". */
static bool cut_suffix(char *w, const char *suffix)
{
    size_t len = strlen(w), sl = strlen(suffix);
    if (len <= sl || strcmp(w + len - sl, suffix) != 0) return false;
    w[len - sl] = '\0';
    return true;
}

/* The parameter list closing the name, if it is one: not "(anonymous namespace)". */
static void cut_parameters(char *w)
{
    size_t len = strlen(w);
    if (len == 0 || w[len - 1] != ')') return;
    int depth = 0;
    for (size_t i = len; i-- > 0;) {
        depth += w[i] == ')' ? 1 : w[i] == '(' ? -1 : 0;
        if (depth == 0) {
            if (i > 0) w[i] = '\0';
            return;
        }
    }
}

/* A name cut short inside its parameters: from the parameter list that never closes. */
static void cut_open_parameters(char *w)
{
    int depth = 0;
    long open_at = -1;
    for (long i = 0; w[i]; i++) {
        if (w[i] == '(' && depth++ == 0) open_at = i;
        if (w[i] == ')' && depth > 0 && --depth == 0) open_at = -1;
    }
    if (open_at > 0) w[open_at] = '\0';
}

static bool after_operator(const char *w, size_t i)
{
    return i >= 8 && strncmp(w + i - 8, "operator", 8) == 0;
}

void cf_cxx_compact(const char *name, char *out, size_t n)
{
    char w[512];
    snprintf(w, sizeof w, "%s", name);
    if (cut_suffix(w, "...")) cut_open_parameters(w); /* cut short by the report's field */
    char *clone = strstr(w, " [clone ");
    if (clone) *clone = '\0';
    while (cut_suffix(w, " const") || cut_suffix(w, " &") || cut_suffix(w, " &&")) {
    }
    cut_parameters(w);
    size_t o = 0;
    for (size_t i = 0; w[i] && o + 1 < n;) {
        size_t end = i + 1;
        if (w[i] == '<' && !after_operator(w, i)) {
            int depth = 0;
            for (end = i; w[end]; end++) {
                depth += w[end] == '<' ? 1 : w[end] == '>' ? -1 : 0;
                if (depth == 0) break;
            }
            /* Short arguments say which instance ("scratch<float>"); long ones bury the name. */
            if (w[end] == '\0' || end - i > 24) {
                o += (size_t)snprintf(out + o, n - o, "<...>");
                if (o >= n) o = n - 1;
                i = w[end] ? end + 1 : end;
                continue;
            }
            end++;
        }
        while (i < end && o + 1 < n)
            out[o++] = w[i++];
    }
    out[o] = '\0';
}

static void frame_label(const struct cf_snap *s, uintptr_t frame, bool compact, char *out, size_t n)
{
    const struct cf_sym *sym = cf_symtab_find(&s->syms, frame);
    const char *file = sym ? strrchr(sym->file, '/') : NULL;
    file = file ? file + 1 : sym ? sym->file : "";
    const char *fn = sym && sym->function[0] ? sym->function : "??";
    char shorter[sizeof sym->function];
    /* A name that fits on a line stays whole: its parameters tell overloads apart. */
    if (compact && sym && !sym->python && strlen(fn) > 64) {
        cf_cxx_compact(fn, shorter, sizeof shorter);
        fn = shorter;
    }
    if (sym && sym->python && sym->line)
        snprintf(out, n, "%s (python) %s:%u", fn, file, sym->line);
    else if (sym == NULL || sym->module[0] == '\0')
        snprintf(out, n, "0x%llx", (unsigned long long)frame);
    else if (sym->line)
        snprintf(out, n, "%s (%s+0x%llx) %s:%u", fn, sym->module, (unsigned long long)sym->offset,
                 file, sym->line);
    else
        snprintf(out, n, "%s (%s+0x%llx)", fn, sym->module, (unsigned long long)sym->offset);
}

void cf_snap_frame_label(const struct cf_snap *s, uintptr_t frame, char *out, size_t n)
{
    frame_label(s, frame, false, out, n);
}

static void site_label(const struct cf_snap *s, int site, bool compact, char *out, size_t n)
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
        frame_label(s, st->frames[shown], compact, out, n);
}

void cf_snap_site_label(const struct cf_snap *s, int site, char *out, size_t n)
{
    site_label(s, site, false, out, n);
}

void cf_snap_site_label_short(const struct cf_snap *s, int site, char *out, size_t n)
{
    site_label(s, site, true, out, n);
}
