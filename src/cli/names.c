/* Frame names are resolved through the replay's DWARF resolver once per
 * distinct frame: a flame graph names the same outer frames (main, _start) for
 * every site, and each lookup walks DWARF. */
#include "cli/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/replay.h"

struct cached {
    uint64_t frame;
    struct cf_sym *sym;
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

const struct cf_sym *cf_names_frame(uint64_t frame)
{
    static struct cf_sym unknown;
    if ((cache_n + 1) * 2 > cache_cap) cache_grow();
    if ((cache_n + 1) * 2 > cache_cap) { /* could not grow: resolve without keeping it */
        memset(&unknown, 0, sizeof unknown);
        if (cf_replay_resolve(frame, &unknown) != 0) unknown.addr = (uintptr_t)frame;
        return &unknown;
    }
    size_t i = home(frame, cache_cap);
    for (; cache[i].sym; i = (i + 1) & (cache_cap - 1))
        if (cache[i].frame == frame) return cache[i].sym;
    struct cf_sym *s = calloc(1, sizeof *s);
    if (s == NULL || cf_replay_resolve(frame, s) != 0) {
        free(s);
        memset(&unknown, 0, sizeof unknown);
        unknown.addr = (uintptr_t)frame;
        return &unknown;
    }
    cache[i] = (struct cached){frame, s};
    cache_n++;
    return s;
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

void cf_names_stack(const struct cf_snap *s, int site, const char *api, struct cf_stack *out)
{
    out->n = 0;
    const struct cf_site *st = site >= 0 && (unsigned)site < s->nsites ? &s->sites[site] : NULL;
    const struct cf_sym *inner = NULL;
    if (st == NULL) {
        struct cf_stack_frame *f = &out->f[out->n++];
        snprintf(f->name, sizeof f->name, "(no call site)");
        snprintf(f->where, sizeof f->where, "allocations recorded without a call stack");
    }
    for (unsigned i = st ? st->nframes : 0; i-- > 0;) {
        if (cf_frame_is_marker(st->frames[i])) continue; /* why Python frames are missing */
        const struct cf_sym *y = cf_names_frame(st->frames[i]);
        frame_entry(y, &out->f[out->n++]);
        inner = y;
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
