/* Reading a trace: the header's "key=value" lines and the chunks, each checked
 * and decompressed on its own, so a trace cut short by a killed process reads up
 * to its last whole chunk. The input is untrusted: every length is bounded. */
#include "cli/trace_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAX_HEADER (1u << 20)
#define MAX_RAW    (16u << 20) /* a chunk's events, decompressed */
#define MAX_CHUNKS (1u << 24)

struct chunk_header {
    uint32_t magic, flags, tid, nevents, raw_len, stored_len;
};

static int fail(struct cf_trace *t, const char *fmt, const char *arg)
{
    snprintf(t->error, sizeof t->error, fmt, arg);
    return -1;
}

static int read_header(struct cf_trace *t, FILE *f)
{
    char magic[8];
    uint32_t fixed[2];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, CF_TRACE_MAGIC, 8) != 0)
        return fail(t, "%s is not a cudafrag trace", t->path);
    if (fread(fixed, sizeof fixed[0], 2, f) != 2) return fail(t, "%s: header cut short", t->path);
    if (fixed[0] != CF_TRACE_VERSION)
        return fail(t, "%s: trace format version not supported by this cudafrag", t->path);
    if (fixed[1] > MAX_HEADER) return fail(t, "%s: header too large", t->path);
    t->header = calloc(1, fixed[1] + 1);
    if (t->header == NULL || fread(t->header, 1, fixed[1], f) != fixed[1])
        return fail(t, "%s: header cut short", t->path);
    t->header_len = fixed[1];
    return 0;
}

static int add_chunk(struct cf_trace *t, uint32_t tid, bool defs, uint8_t *data, uint32_t len)
{
    if (t->nchunks == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        if (cap > MAX_CHUNKS) return -1;
        struct cf_trace_chunk *c = realloc(t->chunks, cap * sizeof *c);
        if (c == NULL) return -1;
        t->chunks = c;
        t->cap = cap;
    }
    t->chunks[t->nchunks++] =
        (struct cf_trace_chunk){.tid = tid, .defs = defs, .data = data, .len = len};
    t->any_defs |= defs;
    return 0;
}

/* Compressed bytes of one chunk; grown to the largest chunk read (a few KiB for
 * the writer's chunks), not to the 16 MiB a chunk may hold. */
struct scratch {
    void *p;
    size_t cap;
};

static void *scratch_for(struct scratch *s, size_t n)
{
    if (n <= s->cap) return s->p;
    void *p = realloc(s->p, n);
    if (p == NULL) return NULL;
    s->p = p;
    s->cap = n;
    return p;
}

/* 1: a chunk was read, 0: clean end of file, -1: the file ends inside a chunk or
 * the chunk is damaged (what came before it stays usable). */
static int read_chunk(struct cf_trace *t, FILE *f, struct scratch *scratch)
{
    struct chunk_header h;
    size_t got = fread(&h, 1, sizeof h, f);
    if (got == 0 && feof(f)) return 0;
    if (got != sizeof h || h.magic != CF_CHUNK_MAGIC || h.raw_len > MAX_RAW ||
        h.stored_len > MAX_RAW + (MAX_RAW >> 7) + 1024)
        return -1;
    uint8_t *raw = malloc(h.raw_len ? h.raw_len : 1);
    if (raw == NULL) return -1;
    bool ok;
    if (h.flags & CF_CHUNK_ZSTD) {
        void *in = scratch_for(scratch, h.stored_len ? h.stored_len : 1);
        ok = in && fread(in, 1, h.stored_len, f) == h.stored_len &&
             ZSTD_decompress(raw, h.raw_len, in, h.stored_len) == h.raw_len;
    } else {
        ok = h.stored_len == h.raw_len && fread(raw, 1, h.raw_len, f) == h.raw_len;
    }
    if (!ok || add_chunk(t, h.tid, (h.flags & CF_CHUNK_DEFS) != 0, raw, h.raw_len) != 0) {
        free(raw);
        return -1;
    }
    t->events_declared += h.nevents;
    return 1;
}

static int load(struct cf_trace *t, FILE *f)
{
    int rc = read_header(t, f);
    struct scratch scratch = {0};
    while (rc == 0) {
        int r = read_chunk(t, f, &scratch);
        if (r == 0) break;
        if (r < 0) {
            t->truncated = true;
            break;
        }
    }
    free(scratch.p);
    fclose(f);
    if (rc != 0) {
        /* The caller gets the message, not a half-read header to free. */
        free(t->header);
        t->header = NULL;
    }
    return rc;
}

int cf_trace_load(struct cf_trace *t, const char *path)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(t->error, sizeof t->error, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    return load(t, f);
}

int cf_trace_load_mem(struct cf_trace *t, const char *name, const void *data, size_t len)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", name);
    FILE *f = len ? fmemopen((void *)data, len, "rb") : NULL;
    if (f == NULL) return fail(t, "%s is not a cudafrag trace", name);
    return load(t, f);
}

void cf_trace_unload(struct cf_trace *t)
{
    for (uint32_t i = 0; i < t->nchunks; i++)
        free(t->chunks[i].data);
    free(t->chunks);
    free(t->header);
    memset(t, 0, sizeof *t);
}

const char *cf_trace_header_next(const struct cf_trace *t, const char *key, const char *after,
                                 char *value, size_t n)
{
    size_t klen = strlen(key);
    const char *p = after ? after : t->header;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *next = eol ? eol + 1 : p + len;
        if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
            snprintf(value, n, "%.*s", (int)(len - klen - 1), p + klen + 1);
            return next;
        }
        p = next;
    }
    return NULL;
}
