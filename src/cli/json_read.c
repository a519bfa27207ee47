/* Recursive descent, bounded by CF_JSON_MAX_DEPTH. Nodes live in one array
 * (members linked by index), strings, unescaped, in one buffer. */
#include "cli/json_read.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/utf8.h"

struct parser {
    struct cf_json *j;
    const unsigned char *p, *start, *end;
    unsigned depth;
    bool failed;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed) return -1;
    unsigned line = 1, col = 1;
    for (const unsigned char *c = ps->start; c < ps->p && c < ps->end; c++, col++)
        if (*c == '\n') line++, col = 0;
    char what[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(ps->j->error, sizeof ps->j->error, "line %u, column %u: %s", line, col, what);
    ps->failed = true;
    return -1;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int new_node(struct parser *ps, uint8_t type)
{
    struct cf_json *j = ps->j;
    if (j->nnodes == j->cap) {
        uint32_t cap = j->cap ? j->cap * 2 : 256;
        struct cf_jnode *n = realloc(j->nodes, cap * sizeof *n);
        if (n == NULL) return fail(ps, "out of memory");
        j->nodes = n;
        j->cap = cap;
    }
    j->nodes[j->nnodes] = (struct cf_jnode){.type = type};
    return (int)j->nnodes++;
}

static int put_bytes(struct parser *ps, const void *s, size_t n)
{
    struct cf_json *j = ps->j;
    if (j->slen + n + 1 > j->scap) {
        size_t cap = j->scap ? j->scap : 4096;
        while (cap < j->slen + n + 1)
            cap *= 2;
        char *b = realloc(j->strings, cap);
        if (b == NULL) return fail(ps, "out of memory");
        j->strings = b;
        j->scap = cap;
    }
    memcpy(j->strings + j->slen, s, n);
    j->slen += n;
    return 0;
}

static int put_cp(struct parser *ps, uint32_t c)
{
    unsigned char b[4];
    size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    static const unsigned char lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
    for (size_t i = n; i-- > 1; c >>= 6)
        b[i] = (unsigned char)(0x80 | (c & 0x3f));
    b[0] = (unsigned char)(lead[n] | c);
    return put_bytes(ps, b, n);
}

static int hex4(struct parser *ps, uint32_t *out)
{
    uint32_t v = 0;
    if (ps->end - ps->p < 4) return fail(ps, "\\u needs four hex digits");
    for (int i = 0; i < 4; i++, ps->p++) {
        unsigned c = *ps->p;
        unsigned d = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 16;
        if (d == 16) return fail(ps, "\\u needs four hex digits");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

static int unicode_escape(struct parser *ps)
{
    uint32_t c, lo;
    if (hex4(ps, &c)) return -1;
    if (c >= 0xdc00 && c <= 0xdfff) return fail(ps, "lone low surrogate");
    if (c >= 0xd800 && c <= 0xdbff) {
        if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
            return fail(ps, "lone high surrogate");
        ps->p += 2;
        if (hex4(ps, &lo)) return -1;
        if (lo < 0xdc00 || lo > 0xdfff) return fail(ps, "lone high surrogate");
        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (c == 0) return fail(ps, "NUL characters are not accepted in strings");
    return put_cp(ps, c);
}

static int escape(struct parser *ps)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (ps->p >= ps->end) return fail(ps, "string not closed");
    unsigned char c = *ps->p++;
    if (c == 'u') return unicode_escape(ps);
    const char *k = c ? strchr(from, c) : NULL;
    if (k == NULL) return fail(ps, "unknown escape \\%c", c >= 0x20 && c < 0x7f ? c : '?');
    return put_bytes(ps, &to[k - from], 1);
}

/* Parses a string at ps->p (the opening quote); *off receives its offset. */
static int string(struct parser *ps, uint32_t *off)
{
    size_t at = ps->j->slen;
    if (at > UINT32_MAX - 1) return fail(ps, "too much text");
    ps->p++;
    for (;;) {
        if (ps->p >= ps->end) return fail(ps, "string not closed");
        unsigned char c = *ps->p;
        uint32_t cp;
        size_t k;
        if (c == '"') break;
        if (c < 0x20) return fail(ps, "control character in a string");
        if (c == '\\') {
            ps->p++;
            if (escape(ps)) return -1;
            continue;
        }
        if ((k = cf_utf8_seq(ps->p, (size_t)(ps->end - ps->p), &cp)) == 0)
            return fail(ps, "malformed UTF-8");
        if (put_bytes(ps, ps->p, k)) return -1;
        ps->p += k;
    }
    ps->p++;
    if (put_bytes(ps, "", 1)) return -1;
    *off = (uint32_t)at;
    return 0;
}

static size_t digits(const unsigned char *p, const unsigned char *end)
{
    size_t n = 0;
    while (p + n < end && p[n] >= '0' && p[n] <= '9')
        n++;
    return n;
}

/* The extent of a number by the grammar; 0 when it does not follow it. */
static size_t number_span(const unsigned char *p, const unsigned char *end, bool *integer)
{
    const unsigned char *s = p;
    size_t n;
    *integer = true;
    if (p < end && *p == '-') p++;
    if ((n = digits(p, end)) == 0 || (p[0] == '0' && n > 1)) return 0;
    p += n;
    if (p < end && *p == '.') {
        *integer = false;
        if ((n = digits(++p, end)) == 0) return 0;
        p += n;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = false;
        if (++p < end && (*p == '+' || *p == '-')) p++;
        if ((n = digits(p, end)) == 0) return 0;
        p += n;
    }
    return (size_t)(p - s);
}

static int number(struct parser *ps, int idx)
{
    bool integer;
    size_t n = number_span(ps->p, ps->end, &integer);
    char text[CF_JSON_MAX_NUMBER + 1];
    if (n == 0) return fail(ps, "malformed number");
    if (n > CF_JSON_MAX_NUMBER)
        return fail(ps, "number longer than %d characters", CF_JSON_MAX_NUMBER);
    memcpy(text, ps->p, n);
    text[n] = '\0';
    struct cf_jnode *x = &ps->j->nodes[idx];
    x->num = strtod(text, NULL);
    if (!isfinite(x->num)) return fail(ps, "number out of range");
    if (integer && text[0] != '-') {
        errno = 0;
        unsigned long long u = strtoull(text, NULL, 10);
        x->is_u64 = errno == 0;
        x->u64 = u;
    }
    ps->p += n;
    return 0;
}

static int value(struct parser *ps);

static void link_member(struct cf_json *j, uint32_t parent, uint32_t *last, uint32_t child)
{
    if (*last)
        j->nodes[*last].next = child;
    else
        j->nodes[parent].child = child;
    *last = child;
    j->nodes[parent].count++;
}

static int by_key(const void *a, const void *b, void *strings)
{
    return strcmp((const char *)strings + *(const uint32_t *)a,
                  (const char *)strings + *(const uint32_t *)b);
}

static int no_duplicates(struct parser *ps, uint32_t obj)
{
    struct cf_json *j = ps->j;
    uint32_t n = j->nodes[obj].count, k = 0;
    if (n < 2) return 0;
    uint32_t *keys = malloc(n * sizeof *keys);
    if (keys == NULL) return fail(ps, "out of memory");
    for (uint32_t c = j->nodes[obj].child; c; c = j->nodes[c].next)
        keys[k++] = j->nodes[c].key;
    qsort_r(keys, n, sizeof *keys, by_key, j->strings);
    int rc = 0;
    for (uint32_t i = 1; i < n && rc == 0; i++)
        if (strcmp(j->strings + keys[i - 1], j->strings + keys[i]) == 0)
            rc = fail(ps, "duplicate key \"%.40s\"", j->strings + keys[i]);
    free(keys);
    return rc;
}

static int member(struct parser *ps, uint32_t obj, uint32_t *last)
{
    uint32_t key;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a key in quotes");
    if (string(ps, &key)) return -1;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':' after a key");
    ps->p++;
    uint32_t child = ps->j->nnodes;
    if (value(ps)) return -1;
    ps->j->nodes[child].key = key;
    link_member(ps->j, obj, last, child);
    return 0;
}

static int container(struct parser *ps, uint32_t idx, char close)
{
    uint32_t last = 0;
    ps->p++;
    if (++ps->depth > CF_JSON_MAX_DEPTH)
        return fail(ps, "nested deeper than %d levels", CF_JSON_MAX_DEPTH);
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        uint32_t child = ps->j->nnodes;
        if (close == '}' ? member(ps, idx, &last) : value(ps)) return -1;
        if (close == ']') link_member(ps->j, idx, &last, child);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) break;
        return fail(ps, "expected ',' or '%c'", close);
    }
    ps->p++;
    ps->depth--;
    return close == '}' ? no_duplicates(ps, idx) : 0;
}

static int literal(struct parser *ps, const char *word, uint8_t type)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "unexpected character");
    ps->p += n;
    return new_node(ps, type) < 0 ? -1 : 0;
}

static int value(struct parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end of the text");
    unsigned char c = *ps->p;
    int idx;
    switch (c) {
    case '{':
    case '[':
        if ((idx = new_node(ps, c == '{' ? CF_J_OBJ : CF_J_ARR)) < 0) return -1;
        return container(ps, (uint32_t)idx, c == '{' ? '}' : ']');
    case '"':
        if ((idx = new_node(ps, CF_J_STR)) < 0) return -1;
        return string(ps, &ps->j->nodes[idx].str);
    case 't':
        return literal(ps, "true", CF_J_TRUE);
    case 'f':
        return literal(ps, "false", CF_J_FALSE);
    case 'n':
        return literal(ps, "null", CF_J_NULL);
    default:
        if (c != '-' && (c < '0' || c > '9')) return fail(ps, "unexpected character");
        if ((idx = new_node(ps, CF_J_NUM)) < 0) return -1;
        return number(ps, idx);
    }
}

int cf_json_parse(struct cf_json *j, const char *text, size_t len)
{
    memset(j, 0, sizeof *j);
    struct parser ps = {j,
                        (const unsigned char *)text,
                        (const unsigned char *)text,
                        (const unsigned char *)text + len,
                        0,
                        false};
    if (len > CF_JSON_MAX_BYTES) {
        snprintf(j->error, sizeof j->error, "larger than %u MiB", CF_JSON_MAX_BYTES >> 20);
        return -1;
    }
    if (value(&ps) == 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) fail(&ps, "text after the value");
    }
    return ps.failed ? -1 : 0;
}

int cf_json_load(struct cf_json *j, const char *path)
{
    memset(j, 0, sizeof *j);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(j->error, sizeof j->error, "cannot open: %s", strerror(errno));
        return -1;
    }
    /* One byte more than allowed tells a file that is too large. */
    size_t cap = 1u << 16, n = 0;
    char *buf = malloc(cap);
    while (buf && !ferror(f) && !feof(f) && n <= CF_JSON_MAX_BYTES) {
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (b == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
        }
        n += fread(buf + n, 1, cap - n, f);
    }
    bool err = buf == NULL || ferror(f);
    fclose(f);
    int rc = -1;
    if (err)
        snprintf(j->error, sizeof j->error, "cannot read: %s", buf ? strerror(errno) : "no memory");
    else
        rc = cf_json_parse(j, buf, n);
    free(buf);
    return rc;
}

void cf_json_free(struct cf_json *j)
{
    free(j->nodes);
    free(j->strings);
    j->nodes = NULL;
    j->strings = NULL;
    j->nnodes = j->cap = 0;
    j->slen = j->scap = 0;
}

const struct cf_jnode *cf_json_root(const struct cf_json *j)
{
    return j->nnodes ? &j->nodes[0] : NULL;
}

const struct cf_jnode *cf_json_first(const struct cf_json *j, const struct cf_jnode *n)
{
    if (n == NULL || (n->type != CF_J_ARR && n->type != CF_J_OBJ) || n->child == 0) return NULL;
    return &j->nodes[n->child];
}

const struct cf_jnode *cf_json_next(const struct cf_json *j, const struct cf_jnode *n)
{
    return n && n->next ? &j->nodes[n->next] : NULL;
}

const struct cf_jnode *cf_json_get(const struct cf_json *j, const struct cf_jnode *obj,
                                   const char *key)
{
    if (obj == NULL || obj->type != CF_J_OBJ) return NULL;
    for (const struct cf_jnode *m = cf_json_first(j, obj); m; m = cf_json_next(j, m))
        if (strcmp(j->strings + m->key, key) == 0) return m;
    return NULL;
}

const char *cf_json_str(const struct cf_json *j, const struct cf_jnode *n)
{
    return n && n->type == CF_J_STR ? j->strings + n->str : NULL;
}

const char *cf_json_key(const struct cf_json *j, const struct cf_jnode *n)
{
    return n ? j->strings + n->key : NULL;
}

double cf_json_num(const struct cf_jnode *n, double dflt)
{
    return n && n->type == CF_J_NUM ? n->num : dflt;
}

bool cf_json_u64(const struct cf_jnode *n, uint64_t *out)
{
    if (n == NULL || n->type != CF_J_NUM || !n->is_u64) return false;
    *out = n->u64;
    return true;
}
