/* The END event: what only the process could know at its end (the time of the
 * report, why it was written, the arena's own figures), written as "name value"
 * lines and read back by the command. Both directions come from the one list of
 * figures, CF_TRACE_ARENA_FIELDS. */
#include "record/trace_end.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A figure added to the arena's statistics goes into CF_TRACE_ARENA_FIELDS too:
 * this fails until someone looked. Left out on purpose: shadow (the END carries
 * the arena's figures, never the model's), locked_out and broken (what the
 * process's own report says about reading them). */
_Static_assert(sizeof(struct cf_arena_stats) == 136,
               "struct cf_arena_stats changed: add the new figure to CF_TRACE_ARENA_FIELDS "
               "(record/trace_format.h), or say above why the trace leaves it out");

/* One "name value\n" line per kind of figure; 0 when it does not fit. */
static size_t put_FLAG(char *buf, size_t cap, const char *name, bool v)
{
    int w = snprintf(buf, cap, "%s %d\n", name, v ? 1 : 0);
    return w > 0 && (size_t)w < cap ? (size_t)w : 0;
}

static size_t put_U64(char *buf, size_t cap, const char *name, uint64_t v)
{
    int w = snprintf(buf, cap, "%s %llu\n", name, (unsigned long long)v);
    return w > 0 && (size_t)w < cap ? (size_t)w : 0;
}

static size_t put_REAL(char *buf, size_t cap, const char *name, double v)
{
    int w = snprintf(buf, cap, "%s %.17g\n", name, v);
    return w > 0 && (size_t)w < cap ? (size_t)w : 0;
}

static bool get_FLAG(const char *value)
{
    return atoi(value) != 0;
}

static uint64_t get_U64(const char *value)
{
    return strtoull(value, NULL, 10);
}

static double get_REAL(const char *value)
{
    return strtod(value, NULL);
}

size_t cf_trace_end_text(const struct cf_arena_stats *arena, const char *reason, char *buf,
                         size_t cap)
{
    int w = snprintf(buf, cap, "reason %s\n", reason);
    if (w <= 0 || (size_t)w >= cap) return 0;
    size_t len = (size_t)w, n;
#define CF_END_PUT(field, kind)                                                                    \
    if ((n = put_##kind(buf + len, cap - len, #field, arena->field)) == 0) return 0;               \
    len += n;
    CF_TRACE_ARENA_FIELDS(CF_END_PUT)
#undef CF_END_PUT
    return len;
}

void cf_trace_end(const struct cf_arena_stats *arena, const char *reason, uint64_t now_ns,
                  struct cf_trace_totals *totals)
{
    if (!cf_trace_on()) return;
    char text[2048];
    struct cf_event e = {.type = CF_EV_END, .t_ns = now_ns, .str = text};
    e.len = (uint32_t)cf_trace_end_text(arena, reason, text, sizeof text);
    e.v[0] = now_ns;
    e.seq = UINT64_MAX >> 1; /* after every event of the process */
    cf_trace_emit(&e);
    cf_trace_finish(totals);
}

/* One line, "name value", into the figure it names; unknown names are skipped
 * (a newer writer's). */
static void read_line(const char *name, const char *value, struct cf_arena_stats *arena)
{
#define CF_END_GET(field, kind)                                                                    \
    if (strcmp(name, #field) == 0) {                                                               \
        arena->field = get_##kind(value);                                                          \
        return;                                                                                    \
    }
    CF_TRACE_ARENA_FIELDS(CF_END_GET)
#undef CF_END_GET
}

void cf_trace_end_read(const char *text, size_t len, struct cf_arena_stats *arena, char *reason,
                       size_t n)
{
    memset(arena, 0, sizeof *arena);
    if (n) reason[0] = '\0';
    for (const char *line = text, *end = text + len; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t l = eol ? (size_t)(eol - line) : (size_t)(end - line);
        char name[64], value[128];
        const char *space = memchr(line, ' ', l);
        size_t nl = space ? (size_t)(space - line) : l;
        if (space && nl < sizeof name) {
            snprintf(name, sizeof name, "%.*s", (int)nl, line);
            snprintf(value, sizeof value, "%.*s", (int)(l - nl - 1), space + 1);
            if (strcmp(name, "reason") == 0)
                snprintf(reason, n, "%s", value);
            else
                read_line(name, value, arena);
        }
        line += l + 1;
    }
}
