/* Distinct frames and stacks of a PyTorch memory snapshot, numbered as the
 * trace's PYFRAME and SITE events (snapshot_frames.h). */
#include "cli/snapshot_frames.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

/* What a traced process keeps of a Python frame's names (record/pyframes.c):
 * the end of a file name, the start of a function's. */
#define FILE_KEEP 511u
#define NAME_KEEP 255u

static bool grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t cap2 = *cap ? *cap * 2 : 256;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (p == NULL) return false;
    *v = p;
    *cap = cap2;
    return true;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const char *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static bool ends_with(const char *s, uint32_t n, const char *tail)
{
    size_t t = strlen(tail);
    return n >= t && memcmp(s + n - t, tail, t) == 0;
}

static bool contains(const char *s, uint32_t n, const char *what)
{
    size_t w = strlen(what);
    for (uint32_t i = 0; i + w <= n; i++)
        if (memcmp(s + i, what, w) == 0) return true;
    return false;
}

/* stacks="all" mixes the C++ frames of PyTorch and CPython in: named by a
 * source file of C or C++, a shared object, "??" when unknown, or a C++
 * qualified name. */
static bool is_native(const struct cf_sf_frame *f)
{
    static const char *const sources[] = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh"};
    if (f->file_len == 0 || (f->file_len == 2 && memcmp(f->file, "??", 2) == 0)) return true;
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        if (ends_with(f->file, f->file_len, sources[i])) return true;
    return ends_with(f->file, f->file_len, ".so") || contains(f->file, f->file_len, ".so.") ||
           contains(f->name, f->name_len, "::");
}

/* A frame dict as the trace keeps it; false when it is not one. */
static bool read_frame(const struct cf_pk *d, struct cf_sf_frame *f)
{
    const struct cf_pk *file = cf_pk_get(d, "filename"), *name = cf_pk_get(d, "name");
    const struct cf_pk *line = cf_pk_get(d, "line");
    if (file == NULL || file->type != CF_PK_STR || name == NULL || name->type != CF_PK_STR)
        return false;
    uint64_t flen = file->len, nlen = name->len;
    const char *fs = file->s;
    if (flen > FILE_KEEP) {
        fs += flen - FILE_KEEP;
        flen = FILE_KEEP;
        /* Not in the middle of a UTF-8 character. */
        while (flen && ((uint8_t)*fs & 0xC0) == 0x80) {
            fs++;
            flen--;
        }
    }
    if (nlen > NAME_KEEP) {
        nlen = NAME_KEEP;
        while (nlen && ((uint8_t)name->s[nlen] & 0xC0) == 0x80)
            nlen--;
    }
    *f = (struct cf_sf_frame){
        .file = fs,
        .name = name->s,
        .file_len = (uint32_t)flen,
        .name_len = (uint32_t)nlen,
        .line = line && line->type == CF_PK_INT && line->i > 0 ? (uint64_t)line->i : 0};
    return true;
}

static bool same_frame(const struct cf_sf_frame *a, const struct cf_sf_frame *b)
{
    return a->line == b->line && a->file_len == b->file_len && a->name_len == b->name_len &&
           memcmp(a->file, b->file, a->file_len) == 0 && memcmp(a->name, b->name, a->name_len) == 0;
}

/* The frame's PYFRAME id; 0 when memory ran out. Equal hashes of different
 * frames take the next key. */
static uint32_t frame_id(struct cf_sf *t, const struct cf_sf_frame *f)
{
    uint64_t h = hash_bytes(0xcbf29ce484222325ull, f->file, f->file_len);
    h = mix(hash_bytes(mix(h, 0xff), f->name, f->name_len), f->line);
    for (;; h++) {
        const uint64_t *at = cf_u64map_get(&t->frame_by_hash, h);
        if (at == NULL) break;
        if (same_frame(&t->frames[*at], f)) return CF_PY_FIRST_ID + (uint32_t)*at;
    }
    if (CF_PY_FIRST_ID + t->nframes >= (1u << 24) ||
        !grow((void **)&t->frames, &t->frames_cap, t->nframes + 1, sizeof *t->frames) ||
        cf_u64map_put(&t->frame_by_hash, h, t->nframes) != 0)
        return 0;
    t->frames[t->nframes] = *f;
    return CF_PY_FIRST_ID + (uint32_t)t->nframes++;
}

/* The stack's SITE id (stack[first, first + n) just appended); 0 when memory ran out. */
static uint32_t site_id(struct cf_sf *t, uint32_t first, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < n; i++)
        h = mix(h, t->stack[first + i]);
    for (;; h++) {
        const uint64_t *at = cf_u64map_get(&t->site_by_hash, h);
        if (at == NULL) break;
        const struct cf_sf_site *s = &t->sites[*at];
        if (s->n == n && memcmp(&t->stack[s->first], &t->stack[first], n * sizeof *t->stack) == 0) {
            t->nstack = first; /* known: the copy is not kept */
            return 1 + (uint32_t)*at;
        }
    }
    if (!grow((void **)&t->sites, &t->sites_cap, t->nsites + 1, sizeof *t->sites) ||
        cf_u64map_put(&t->site_by_hash, h, t->nsites) != 0)
        return 0;
    t->sites[t->nsites] = (struct cf_sf_site){.hash = h, .first = first, .n = n};
    return 1 + (uint32_t)t->nsites++;
}

static int site_of_list(struct cf_sf *t, const struct cf_pk *frames, uint32_t *site)
{
    uint32_t first = (uint32_t)t->nstack, n = 0;
    for (uint64_t i = 0; i < frames->len && n < CF_MAX_FRAMES; i++) {
        struct cf_sf_frame f;
        if (!read_frame(frames->items[i], &f) || is_native(&f)) continue;
        uint32_t id = frame_id(t, &f);
        if (id == 0 || !grow((void **)&t->stack, &t->stack_cap, t->nstack + 1, sizeof *t->stack))
            return -1;
        t->stack[t->nstack++] = CF_FRAME(CF_PY_MODULE, id);
        n++;
    }
    if (n == 0) return 0;
    *site = site_id(t, first, n);
    return *site ? 0 : -1;
}

int cf_sf_site(struct cf_sf *t, const struct cf_pk *frames, uint32_t *site)
{
    *site = 0;
    if (frames == NULL || frames->type != CF_PK_LIST) return 0;
    /* PyTorch's pickles share one list among the entries of one stack (memo). */
    const uint64_t *known = cf_u64map_get(&t->site_by_list, (uint64_t)(uintptr_t)frames);
    if (known) {
        *site = (uint32_t)*known;
        return 0;
    }
    if (site_of_list(t, frames, site) != 0) return -1;
    return cf_u64map_put(&t->site_by_list, (uint64_t)(uintptr_t)frames, *site);
}

size_t cf_sf_ndefs(const struct cf_sf *t)
{
    return t->nframes + t->nsites;
}

void cf_sf_def(const struct cf_sf *t, size_t i, struct cf_event *e)
{
    memset(e, 0, sizeof *e);
    if (i < t->nframes) {
        const struct cf_sf_frame *f = &t->frames[i];
        e->type = CF_EV_PYFRAME;
        e->site = CF_PY_FIRST_ID + (uint32_t)i;
        e->v[0] = f->line;
        e->str = f->file;
        e->len = f->file_len;
        e->str2 = f->name;
        e->len2 = f->name_len;
        return;
    }
    const struct cf_sf_site *s = &t->sites[i - t->nframes];
    e->type = CF_EV_SITE;
    e->site = 1 + (uint32_t)(i - t->nframes);
    e->addr = s->hash;
    e->api = CF_API_cudaMallocAsync;
    e->nframes = s->n;
    e->frames = &t->stack[s->first];
}

void cf_sf_free(struct cf_sf *t)
{
    free(t->frames);
    free(t->sites);
    free(t->stack);
    cf_u64map_free(&t->frame_by_hash);
    cf_u64map_free(&t->site_by_hash);
    cf_u64map_free(&t->site_by_list);
    memset(t, 0, sizeof *t);
}
