/* Frame names are resolved through the replay's DWARF resolver once per
 * distinct frame: a flame graph names the same outer frames (main, _start) for
 * every site, and each lookup walks DWARF. A frame is kept with the functions
 * inlined at it, so that every view shows the callers `cudafrag symbolize` shows;
 * stacks leave out allocator and interpreter plumbing as the text report does. */
#include "cli/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/replay.h"
#include "report/fold.h"

#define MAX_INLINED 8

struct cached {
    uint64_t frame;
    struct cf_sym *sym; /* n entries, innermost inlined first */
    unsigned n;
};

static struct cached *cache;
static size_t cache_cap, cache_n;

static size_t home(uint64_t frame, size_t cap)
{
    return (size_t)((frame * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static void cache_grow(void)
{
    size_t cap = cache_cap ? cache_cap * 2 : 256;
    struct cached *n = calloc(cap, sizeof *n);
    if (n == NULL) return;
    for (size_t i = 0; i < cache_cap; i++) {
        if (cache[i].sym == NULL) continue;
        size_t j = home(cache[i].frame, cap);
        while (n[j].sym)
            j = (j + 1) & (cap - 1);
        n[j] = cache[i];
    }
    free(cache);
    cache = n;
    cache_cap = cap;
}

/* The frame resolved into syms (at most max), folding marked; 0 on failure. */
static unsigned resolve(uint64_t frame, struct cf_sym *syms, int max)
{
    int n = cf_replay_resolve_inlined(frame, syms, max);
    if (n < 1) return 0;
    for (int k = 0; k < n; k++) {
        syms[k].folded = cf_fold_frame(&syms[k]);
        syms[k].framework = syms[k].folded && cf_fold_framework_only(&syms[k]);
    }
    return (unsigned)n;
}

unsigned cf_names_inlined(uint64_t frame, const struct cf_sym **chain)
{
    static struct cf_sym unknown[MAX_INLINED];
    if ((cache_n + 1) * 2 > cache_cap) cache_grow();
    size_t i = cache_cap ? home(frame, cache_cap) : 0;
    for (; cache_cap && cache[i].sym; i = (i + 1) & (cache_cap - 1))
        if (cache[i].frame == frame) {
            *chain = cache[i].sym;
            return cache[i].n;
        }
    /* Resolved into the static chain, then kept at its own length where the table
     * has room (a view of 10^5 sites has as many distinct frames: a chain's full
     * room each took a gigabyte). Without room it is resolved each time. */
    unsigned n = resolve(frame, unknown, MAX_INLINED);
    if (n == 0) {
        memset(unknown, 0, sizeof unknown[0]);
        unknown[0].addr = (uintptr_t)frame;
        *chain = unknown;
        return 1;
    }
    struct cf_sym *s = (cache_n + 1) * 2 <= cache_cap ? malloc(n * sizeof *s) : NULL;
    if (s == NULL) {
        *chain = unknown;
        return n;
    }
    memcpy(s, unknown, n * sizeof *s);
    cache[i] = (struct cached){frame, s, n};
    cache_n++;
    *chain = s;
    return n;
}

const struct cf_sym *cf_names_frame(uint64_t frame)
{
    const struct cf_sym *chain;
    cf_names_inlined(frame, &chain);
    return chain;
}

void cf_names_free(void)
{
    for (size_t i = 0; i < cache_cap; i++)
        free(cache[i].sym);
    free(cache);
    cache = NULL;
    cache_cap = cache_n = 0;
}

const char *cf_names_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Folded stacks separate frames with ';' and end with " weight". */
static void clean(char *s)
{
    for (; *s; s++)
        if (*s == ';' || (unsigned char)*s < 0x20) *s = *s == ';' ? ':' : ' ';
}

static void frame_entry(const struct cf_sym *y, struct cf_stack_frame *f)
{
    char line[64] = "";
    if (y->line) snprintf(line, sizeof line, " %.48s:%u", cf_names_base(y->file), y->line);
    if (y->python && y->function[0]) {
        /* As Python profilers fold them: a bare "forward" would merge every
         * module's. */
        snprintf(f->name, sizeof f->name, "%.120s (%.48s:%u)", y->function, cf_names_base(y->file),
                 y->line);
        snprintf(f->where, sizeof f->where, "%.160s:%u (python)", y->file, y->line);
    } else if (y->python) {
        /* A frame the interpreter gave no name: by its id, never as an address. */
        snprintf(f->where, sizeof f->where, "(python)%s", line);
        snprintf(f->name, sizeof f->name, "(python frame %llu)",
                 (unsigned long long)CF_FRAME_OFFSET(y->addr));
    } else if (y->module[0]) {
        snprintf(f->where, sizeof f->where, "%.100s+0x%llx%s", y->module,
                 (unsigned long long)y->offset, line);
        if (y->function[0])
            snprintf(f->name, sizeof f->name, "%.*s", (int)sizeof f->name - 1, y->function);
        else
            snprintf(f->name, sizeof f->name, "%.150s+0x%llx", y->module,
                     (unsigned long long)y->offset);
    } else {
        snprintf(f->where, sizeof f->where, "0x%llx", (unsigned long long)y->addr);
        snprintf(f->name, sizeof f->name, "0x%llx", (unsigned long long)y->addr);
    }
    clean(f->name);
    clean(f->where);
}

/* Which of the site's frames a stack shows: as the text report, every one that is
 * not allocator, interpreter or framework plumbing; when all of them are, the one
 * the report shows the site by. */
static bool shown(const struct cf_site *st, unsigned i, int only)
{
    if (cf_frame_is_marker(st->frames[i])) return false; /* why Python frames are missing */
    if (only >= 0) return (int)i == only;
    return !cf_names_frame(st->frames[i])->folded;
}

static int only_frame(const struct cf_site *st)
{
    int last = -1, framework = -1;
    for (unsigned i = 0; i < st->nframes; i++) {
        if (cf_frame_is_marker(st->frames[i])) continue;
        const struct cf_sym *y = cf_names_frame(st->frames[i]);
        if (!y->folded) return -1;
        if (framework < 0 && y->framework) framework = (int)i;
        last = (int)i;
    }
    return framework >= 0 ? framework : last;
}

void cf_names_stack(const struct cf_snap *s, int site, const char *api, struct cf_stack *out)
{
    const unsigned cap = sizeof out->f / sizeof out->f[0] - 1; /* one left for the leaf */
    out->n = 0;
    const struct cf_site *st = site >= 0 && (unsigned)site < s->nsites ? &s->sites[site] : NULL;
    const struct cf_sym *inner = NULL;
    if (st == NULL) {
        struct cf_stack_frame *f = &out->f[out->n++];
        snprintf(f->name, sizeof f->name, "(no call site)");
        snprintf(f->where, sizeof f->where, "allocations recorded without a call stack");
    }
    int only = st ? only_frame(st) : -1;
    for (unsigned i = st ? st->nframes : 0; i-- > 0;) {
        if (!shown(st, i, only)) continue;
        const struct cf_sym *chain;
        unsigned n = cf_names_inlined(st->frames[i], &chain);
        for (unsigned k = n; k-- > 0 && out->n < cap;)
            frame_entry(&chain[k], &out->f[out->n++]);
        inner = &chain[0];
    }
    struct cf_stack_frame *leaf = &out->f[out->n++];
    const char *name = st ? cf_api_info[st->api].name : api;
    if (inner && inner->line)
        snprintf(leaf->name, sizeof leaf->name, "%.40s (%.120s:%u)", name,
                 cf_names_base(inner->file), inner->line);
    else
        snprintf(leaf->name, sizeof leaf->name, "%s", name);
    snprintf(leaf->where, sizeof leaf->where, "the allocation call");
    clean(leaf->name);
}
