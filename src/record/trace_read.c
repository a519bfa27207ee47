/* Reading a trace: the header's "key=value" lines and the chunks, each checked
 * and decompressed on its own, so a trace cut short by a killed process reads up
 * to its last whole chunk. The input is untrusted: every length is bounded. */
#include "record/trace_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "record/trace_chunk.h"

#define MAX_CHUNKS (1u << 24)

static int fail(struct cf_trace *t, const char *fmt, const char *arg)
{
    snprintf(t->error, sizeof t->error, fmt, arg);
    return -1;
}

uint32_t cf_trace_crc32(uint32_t crc, const void *p, size_t n)
{
    return (uint32_t)crc32(crc, (const Bytef *)p, (uInt)n);
}

enum { CHUNK_READ = 1, CHUNK_END = 0, CHUNK_CUT = -1, CHUNK_BAD = -2 };

/* Where the reader is: a damaged or truncated chunk is named by both. */
struct pos {
    FILE *f;
    uint64_t offset;
    uint32_t chunk; /* chunks read so far */
};

static size_t read_at(struct pos *at, void *p, size_t n)
{
    size_t got = fread(p, 1, n, at->f);
    at->offset += got;
    return got;
}

static int read_header(struct cf_trace *t, struct pos *at)
{
    char magic[8];
    uint32_t fixed[2];
    if (read_at(at, magic, 8) != 8 || memcmp(magic, CF_TRACE_MAGIC, 8) != 0)
        return fail(t, "%s is not a cudafrag trace", t->path);
    if (read_at(at, fixed, sizeof fixed) != sizeof fixed)
        return fail(t, "%s: header cut short", t->path);
    if (fixed[0] != CF_TRACE_VERSION && fixed[0] != CF_TRACE_VERSION_UNCHECKED)
        return fail(t, "%s: trace format version not supported by this cudafrag", t->path);
    t->version = fixed[0];
    if (fixed[1] > CF_TRACE_HEADER_MAX) return fail(t, "%s: header too large", t->path);
    t->header = calloc(1, fixed[1] + 1);
    if (t->header == NULL || read_at(at, t->header, fixed[1]) != fixed[1])
        return fail(t, "%s: header cut short", t->path);
    t->header_len = fixed[1];
    if (t->version == CF_TRACE_VERSION_UNCHECKED) return 0;
    uint32_t check;
    if (read_at(at, &check, sizeof check) != sizeof check)
        return fail(t, "%s: header cut short", t->path);
    if (check != cf_chunk_file_check_with(cf_trace_crc32, fixed, t->header, fixed[1]))
        return fail(t, "%s: damaged in its header (byte offset 8): it fails its check", t->path);
    return 0;
}

/* CHUNK_BAD, t->error saying that chunk `number` (1-based), at offset, is damaged. */
static int say_damaged(struct cf_trace *t, uint32_t number, uint64_t offset, const char *what)
{
    snprintf(t->error, sizeof t->error,
             "%s: damaged at chunk %u (byte offset %llu): %s; no report is made from a "
             "damaged trace",
             t->path, number, (unsigned long long)offset, what);
    return CHUNK_BAD;
}

int cf_trace_damaged(struct cf_trace *t, uint32_t i, const char *what)
{
    say_damaged(t, i + 1, i < t->nchunks ? t->chunks[i].offset : 0, what);
    return -1;
}

/* The chunk being read, which starts at start, is damaged. */
static int damaged_here(struct cf_trace *t, const struct pos *at, uint64_t start, const char *what)
{
    return say_damaged(t, at->chunk + 1, start, what);
}

static int no_memory(struct cf_trace *t)
{
    fail(t, "%s: out of memory while reading the trace", t->path);
    return CHUNK_BAD;
}

static int add_chunk(struct cf_trace *t, const struct cf_trace_chunk *chunk)
{
    if (t->nchunks == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        if (cap > MAX_CHUNKS) return -1;
        struct cf_trace_chunk *c = realloc(t->chunks, cap * sizeof *c);
        if (c == NULL) return -1;
        t->chunks = c;
        t->cap = cap;
    }
    t->chunks[t->nchunks++] = *chunk;
    t->any_defs |= chunk->defs;
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

/* The chunk's header: CHUNK_READ, CHUNK_END (the file ends before it), CHUNK_CUT
 * (inside it) or CHUNK_BAD (t->error said why). */
static int read_chunk_header(struct cf_trace *t, struct pos *at, struct cf_chunk_header *h)
{
    uint64_t start = at->offset;
    size_t want = t->version == CF_TRACE_VERSION ? CF_CHUNK_HEADER_V2 : CF_CHUNK_HEADER_V1;
    size_t got = read_at(at, h, want);
    if (got == 0 && feof(at->f)) return CHUNK_END;
    if (got != want) return CHUNK_CUT;
    const char *fault = cf_chunk_header_fault(h, t->version, cf_trace_crc32);
    if (fault) return damaged_here(t, at, start, fault);
    return CHUNK_READ;
}

/* The chunk's payload into raw (h->raw_len bytes): CHUNK_READ, CHUNK_CUT or
 * CHUNK_BAD. */
static int read_payload(struct cf_trace *t, struct pos *at, uint64_t start,
                        const struct cf_chunk_header *h, struct scratch *scratch, uint8_t *raw)
{
    bool zstd = (h->flags & CF_CHUNK_ZSTD) != 0;
    uint8_t *in = zstd ? scratch_for(scratch, h->stored_len ? h->stored_len : 1) : raw;
    if (in == NULL) return no_memory(t);
    if (read_at(at, in, h->stored_len) != h->stored_len) return CHUNK_CUT;
    if (!cf_chunk_payload_ok(h, in, t->version, cf_trace_crc32))
        return damaged_here(t, at, start, "its events fail their check");
    if (zstd && ZSTD_decompress(raw, h->raw_len, in, h->stored_len) != h->raw_len)
        return damaged_here(t, at, start, "its events do not decompress");
    return CHUNK_READ;
}

static int read_chunk(struct cf_trace *t, struct pos *at, struct scratch *scratch)
{
    uint64_t start = at->offset;
    struct cf_chunk_header h;
    int rc = read_chunk_header(t, at, &h);
    if (rc != CHUNK_READ) return rc;
    uint8_t *raw = malloc(h.raw_len ? h.raw_len : 1);
    if (raw == NULL) return no_memory(t);
    rc = read_payload(t, at, start, &h, scratch, raw);
    struct cf_trace_chunk c = {.tid = h.tid,
                               .defs = (h.flags & CF_CHUNK_DEFS) != 0,
                               .data = raw,
                               .len = h.raw_len,
                               .offset = start};
    if (rc == CHUNK_READ && add_chunk(t, &c) != 0) rc = no_memory(t);
    if (rc != CHUNK_READ) {
        free(raw);
        return rc;
    }
    t->events_declared += h.nevents;
    at->chunk++;
    return CHUNK_READ;
}

static int load(struct cf_trace *t, FILE *f)
{
    struct pos at = {.f = f};
    int rc = read_header(t, &at);
    struct scratch scratch = {0};
    while (rc == 0) {
        uint64_t start = at.offset;
        int r = read_chunk(t, &at, &scratch);
        if (r == CHUNK_END) break;
        if (r == CHUNK_CUT) {
            t->truncated = true;
            t->truncated_chunk = at.chunk + 1;
            t->truncated_offset = start;
            break;
        }
        if (r == CHUNK_BAD) rc = -1;
    }
    free(scratch.p);
    fclose(at.f);
    if (rc != 0) {
        /* The caller gets the message, not a half-read trace to free. */
        char error[sizeof t->error];
        memcpy(error, t->error, sizeof error);
        cf_trace_unload(t);
        memcpy(t->error, error, sizeof error);
        return -1;
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
