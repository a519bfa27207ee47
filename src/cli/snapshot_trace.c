/* The trace file `cudafrag import` writes: the header, then chunks of encoded
 * events stored raw, as the recorder's writer lays them out and with the same
 * checks (record/trace_format.h, trace_chunk.h; docs/trace-format.md). */
#include "cli/snapshot_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/trace_chunk.h"
#include "record/trace_read.h"

#include "cudafrag_build.h"

#define CHUNK_BYTES (1u << 20)

struct writer {
    FILE *f;
    struct cf_enc enc;
    uint32_t nevents;
    bool defs; /* the chunk holds definitions: readers look at it first */
    bool failed;
};

static void flush_chunk(struct writer *w)
{
    if (w->enc.len == 0) return;
    /* Stored raw; one thread. */
    struct cf_chunk_header h = {.flags = w->defs ? CF_CHUNK_DEFS : 0,
                                .tid = 1,
                                .nevents = w->nevents,
                                .raw_len = w->enc.len,
                                .stored_len = w->enc.len};
    cf_chunk_sign(&h, w->enc.buf, cf_trace_crc32);
    if (fwrite(&h, 1, CF_CHUNK_HEADER_V2, w->f) != CF_CHUNK_HEADER_V2 ||
        fwrite(w->enc.buf, 1, w->enc.len, w->f) != w->enc.len)
        w->failed = true;
    /* Deltas restart with every chunk. */
    w->enc = (struct cf_enc){.buf = w->enc.buf, .cap = w->enc.cap};
    w->nevents = 0;
    w->defs = false;
}

static void emit(struct writer *w, const struct cf_event *e)
{
    if (!cf_ev_encode(&w->enc, e)) {
        flush_chunk(w);
        if (!cf_ev_encode(&w->enc, e)) {
            w->failed = true;
            return;
        }
    }
    w->nevents++;
    if (e->type == CF_EV_SITE || e->type == CF_EV_PYFRAME || e->type == CF_EV_END) w->defs = true;
}

/* No pid, rank or host: a snapshot does not say them, and "imported" says
 * where the run comes from instead. */
static void header(struct writer *w, const struct cf_import *c, const char *snapshot)
{
    static char h[32768];
    int n = snprintf(h, sizeof h,
                     "cudafrag=%s\nprogram=%.*s\nstart_ns=%llu\n"
                     "wall_start_s=%llu\nimported=pytorch-memory-snapshot\n",
                     CUDAFRAG_VERSION, (int)strcspn(snapshot, "\n"), snapshot,
                     (unsigned long long)c->t0_us * 1000, (unsigned long long)c->t0_us / 1000000);
    for (unsigned d = 0; d < c->ndevs && n > 0 && (size_t)n < sizeof h; d++)
        n += snprintf(h + n, sizeof h - (size_t)n, "pool_name=0x%llx %s\n",
                      (unsigned long long)CF_IMPORT_POOL(d), c->pool_name[d]);
    if (n < 0 || (size_t)n >= sizeof h) n = 0;
    uint32_t fixed[2] = {CF_TRACE_VERSION, (uint32_t)n};
    uint32_t check = cf_chunk_file_check_with(cf_trace_crc32, fixed, h, (uint32_t)n);
    if (fwrite(CF_TRACE_MAGIC, 1, 8, w->f) != 8 || fwrite(fixed, 1, 8, w->f) != 8 ||
        fwrite(h, 1, (size_t)n, w->f) != (size_t)n || fwrite(&check, 1, 4, w->f) != 4)
        w->failed = true;
}

/* The devices' events merged by time, each device in its own order. */
int cf_import_write_trace(const struct cf_import *c, const char *snapshot, const char *path)
{
    struct writer w = {.f = fopen(path, "wb")};
    if (w.f == NULL) {
        fprintf(stderr, "cudafrag: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    w.enc.buf = malloc(CHUNK_BYTES);
    w.enc.cap = CHUNK_BYTES;
    w.failed = w.enc.buf == NULL;
    header(&w, c, snapshot);
    uint64_t seq = 0;
    /* The frames and sites first, in chunks of their own. */
    for (size_t i = 0; i < cf_sf_ndefs(&c->sites) && !w.failed; i++) {
        struct cf_event def;
        cf_sf_def(&c->sites, i, &def);
        def.seq = ++seq;
        def.t_ns = c->t0_us * 1000;
        emit(&w, &def);
    }
    flush_chunk(&w);
    size_t next[CF_RP_MAX_DEVICES] = {0};
    for (;;) {
        int best = -1;
        for (unsigned d = 0; d < c->ndevs; d++)
            if (next[d] < c->dev[d].n &&
                (best < 0 || c->dev[d].v[next[d]].t_us < c->dev[best].v[next[best]].t_us))
                best = (int)d;
        if (best < 0 || w.failed) break;
        struct cf_event e = c->dev[best].v[next[best]++].e;
        e.seq = ++seq;
        e.t_ns = c->dev[best].v[next[best] - 1].t_us * 1000;
        emit(&w, &e);
    }
    static const char reason[] = "reason imported from a PyTorch memory snapshot\n";
    struct cf_event end = {.type = CF_EV_END,
                           .seq = ++seq,
                           .t_ns = c->t_end_us * 1000,
                           .str = reason,
                           .len = sizeof reason - 1};
    end.v[0] = end.t_ns;
    flush_chunk(&w); /* END alone: its chunk is marked as one to read first */
    emit(&w, &end);
    flush_chunk(&w);
    free(w.enc.buf);
    if (fclose(w.f) != 0) w.failed = true;
    if (w.failed) {
        fprintf(stderr, "cudafrag: could not write %s\n", path);
        remove(path);
        return 1;
    }
    return 0;
}
