/* The END event's arena figures, written by the process and read back by the
 * command from the one list CF_TRACE_ARENA_FIELDS: every figure gets a value no
 * other has, the END goes through the whole writer (records, codec, chunk, file)
 * and the reader, and each figure must come back as it was. Then the edges: the
 * largest values, a figure a newer writer adds (skipped), figures missing (0). */
#include "check.h"
#include "arena/arena.h"
#include "record/trace_end.h"
#include "record/trace_format.h"
#include "record/trace_read.h"
#include "record/trace_write.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A value for the i-th figure, unlike any other figure's: a flag's only value
 * unlike the reader's default is 1. */
static bool value_FLAG(unsigned i)
{
    (void)i;
    return true;
}

static uint64_t value_U64(unsigned i)
{
    return 0x0123456789ab0000ull + 1000003ull * (i + 1);
}

static double value_REAL(unsigned i)
{
    return 1.0 / (i + 3);
}

static unsigned set_distinct(struct cf_arena_stats *a)
{
    memset(a, 0, sizeof *a);
    unsigned i = 0;
#define SET(field, kind) a->field = value_##kind(i++);
    CF_TRACE_ARENA_FIELDS(SET)
#undef SET
    return i;
}

/* Every figure of the list, compared by name. */
static void check_same(const struct cf_arena_stats *want, const struct cf_arena_stats *got)
{
#define SAME(field, kind)                                                                          \
    if (want->field != got->field) {                                                               \
        fprintf(stderr, "END figure %s: wrote %.17g, read %.17g\n", #field, (double)want->field,   \
                (double)got->field);                                                               \
        exit(1);                                                                                   \
    }
    CF_TRACE_ARENA_FIELDS(SAME)
#undef SAME
}

/* The END event of the trace at path, decoded from its one chunk. */
static void read_end(const char *path, struct cf_arena_stats *a, char *reason, size_t n,
                     uint64_t *v0)
{
    struct cf_trace t;
    if (cf_trace_load(&t, path) != 0) {
        fprintf(stderr, "%s\n", t.error);
        exit(1);
    }
    CHECK_EQ(t.nchunks, 1);
    CHECK(t.chunks[0].defs);
    struct cf_dec dec = {.p = t.chunks[0].data, .end = t.chunks[0].data + t.chunks[0].len};
    struct cf_event e;
    CHECK_EQ(cf_ev_decode(&dec, &e), 1);
    CHECK_EQ(e.type, CF_EV_END);
    *v0 = e.v[0];
    cf_trace_end_read(e.str, e.len, a, reason, n);
    CHECK_EQ(cf_ev_decode(&dec, &e), 0);
    cf_trace_unload(&t);
}

static void through_the_file(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/end.cftrace", dir);
    struct cf_arena_stats want, got;
    unsigned n = set_distinct(&want);
    CHECK_GE(n, 17);
    const char header[] = "cudafrag=test\n";
    cf_trace_init(1000);
    CHECK_EQ(cf_trace_open(path, header, sizeof header - 1), 0);
    struct cf_trace_totals totals;
    cf_trace_end(&want, "signal SIGTERM", 123456789, &totals);
    CHECK_EQ(totals.events, 1);
    CHECK_EQ(totals.chunks_lost, 0);
    CHECK(!totals.partial);
    char reason[64];
    uint64_t v0 = 0;
    read_end(path, &got, reason, sizeof reason, &v0);
    check_same(&want, &got);
    CHECK(strcmp(reason, "signal SIGTERM") == 0);
    CHECK_EQ(v0, 123456789);
    unlink(path);
}

/* One line per figure and the reason's, and the largest values fit the event. */
static void text_edges(void)
{
    struct cf_arena_stats want, got;
    unsigned n = set_distinct(&want);
    char text[2048], reason[64];
    size_t len = cf_trace_end_text(&want, "exit", text, sizeof text);
    CHECK(len > 0);
    unsigned lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    CHECK_EQ(lines, n + 1);
    memset(&want, 0xff, sizeof want);
#define LARGEST(field, kind) want.field = (__typeof__(want.field))UINT64_MAX;
    CF_TRACE_ARENA_FIELDS(LARGEST)
#undef LARGEST
    want.ext_frag_at_peak = -DBL_MAX;
    len = cf_trace_end_text(&want, "exit", text, sizeof text);
    CHECK(len > 0);
    cf_trace_end_read(text, len, &got, reason, sizeof reason);
    check_same(&want, &got);
    CHECK_EQ(cf_trace_end_text(&want, "exit", text, 40), 0); /* does not fit: nothing */
}

/* A newer writer's figure is skipped, a figure the writer did not have reads 0. */
static void unknown_and_missing(void)
{
    static const char text[] = "reason exit\nfuture_figure 7\npeak_live 5\nvmm 1";
    struct cf_arena_stats got, want = {.peak_live = 5, .vmm = true};
    char reason[64];
    cf_trace_end_read(text, sizeof text - 1, &got, reason, sizeof reason);
    check_same(&want, &got);
    CHECK(strcmp(reason, "exit") == 0);
    cf_trace_end_read("", 0, &got, reason, sizeof reason);
    CHECK_EQ(reason[0], '\0');
}

int main(void)
{
    char dir[] = "/tmp/cf-trace-end-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    through_the_file(dir);
    text_edges();
    unknown_and_missing();
    rmdir(dir);
    printf("trace-end-fields: ok\n");
    return 0;
}
