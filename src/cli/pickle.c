#include "cli/pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/u64map.h"

/* Values come from blocks that are freed together: a value may be shared. */
#define BLOCK_VALUES 4096
struct cf_pk_block {
    struct cf_pk_block *next;
    unsigned used;
    struct cf_pk v[BLOCK_VALUES];
};

struct parser {
    const uint8_t *start, *p, *end;
    struct cf_pk_doc *doc;
    struct cf_pk *stack[CF_PK_MAX_STACK];
    uint32_t depth;
    uint32_t marks[CF_PK_MAX_MARKS], nmarks;
    struct cf_u64map memo; /* index -> value */
    bool failed;
};

static int fail(struct parser *ps, const char *fmt, ...)
{
    if (!ps->failed) {
        int n = snprintf(ps->doc->error, sizeof ps->doc->error,
                         "byte %lld: ", (long long)(ps->p - ps->start));
        va_list ap;
        va_start(ap, fmt);
        if (n > 0 && (size_t)n < sizeof ps->doc->error)
            vsnprintf(ps->doc->error + n, sizeof ps->doc->error - (size_t)n, fmt, ap);
        va_end(ap);
    }
    ps->failed = true;
    return -1;
}

static struct cf_pk *new_value(struct parser *ps, uint8_t type)
{
    struct cf_pk_block *b = ps->doc->blocks;
    if (b == NULL || b->used == BLOCK_VALUES) {
        b = calloc(1, sizeof *b);
        if (b == NULL) {
            fail(ps, "out of memory");
            return NULL;
        }
        b->next = ps->doc->blocks;
        ps->doc->blocks = b;
    }
    struct cf_pk *v = &b->v[b->used++];
    v->type = type;
    return v;
}

static int push(struct parser *ps, struct cf_pk *v)
{
    if (v == NULL) return -1;
    if (ps->depth == CF_PK_MAX_STACK)
        return fail(ps, "more than %d values on the stack", CF_PK_MAX_STACK);
    ps->stack[ps->depth++] = v;
    return 0;
}

static struct cf_pk *pop(struct parser *ps)
{
    uint32_t floor = ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
    if (ps->depth <= floor) {
        fail(ps, "stack underflow");
        return NULL;
    }
    return ps->stack[--ps->depth];
}

static struct cf_pk *top(struct parser *ps)
{
    uint32_t floor = ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
    if (ps->depth <= floor) {
        fail(ps, "stack underflow");
        return NULL;
    }
    return ps->stack[ps->depth - 1];
}

/* Reads n bytes of the operand, NULL past the end. */
static const uint8_t *take(struct parser *ps, uint64_t n)
{
    if (n > (uint64_t)(ps->end - ps->p)) {
        fail(ps, "truncated (an operand of %llu bytes)", (unsigned long long)n);
        return NULL;
    }
    const uint8_t *q = ps->p;
    ps->p += n;
    return q;
}

static uint64_t le(const uint8_t *q, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | q[i];
    return v;
}

/* ---- values ---- */

static int push_int(struct parser *ps, int64_t i)
{
    struct cf_pk *v = new_value(ps, CF_PK_INT);
    if (v) v->i = i;
    return push(ps, v);
}

/* LONG1: n bytes of two's complement, little-endian; 64 bits at most. */
static int long1(struct parser *ps)
{
    const uint8_t *n = take(ps, 1), *q = n ? take(ps, *n) : NULL;
    if (q == NULL) return -1;
    if (*n > 8) return fail(ps, "an integer of %u bytes (at most 8)", *n);
    uint64_t u = le(q, *n);
    if (*n > 0 && *n < 8 && (q[*n - 1] & 0x80)) u |= UINT64_MAX << (8 * *n); /* sign */
    return push_int(ps, (int64_t)u);
}

static int push_bytes(struct parser *ps, uint8_t type, unsigned width)
{
    const uint8_t *n = take(ps, width);
    if (n == NULL) return -1;
    uint64_t len = le(n, width);
    const uint8_t *s = take(ps, len);
    if (s == NULL) return -1;
    struct cf_pk *v = new_value(ps, type);
    if (v) {
        v->s = (const char *)s;
        v->len = len;
    }
    return push(ps, v);
}

static int binfloat(struct parser *ps)
{
    const uint8_t *q = take(ps, 8);
    if (q == NULL) return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) /* big-endian */
        bits = bits << 8 | q[i];
    struct cf_pk *v = new_value(ps, CF_PK_FLOAT);
    if (v) memcpy(&v->f, &bits, sizeof v->f);
    return push(ps, v);
}

/* ---- containers ---- */

static int add_item(struct parser *ps, struct cf_pk *c, struct cf_pk *item)
{
    if (item->depth + 1 > c->depth) c->depth = item->depth + 1;
    if (c->depth > CF_PK_MAX_DEPTH)
        return fail(ps, "containers nested more than %d deep", CF_PK_MAX_DEPTH);
    if (c->len == c->cap) {
        uint64_t cap = c->cap ? c->cap * 2 : 4;
        struct cf_pk **items = realloc(c->items, cap * sizeof *items);
        if (items == NULL) return fail(ps, "out of memory");
        c->items = items;
        c->cap = cap;
    }
    c->items[c->len++] = item;
    return 0;
}

static int mark(struct parser *ps)
{
    if (ps->nmarks == CF_PK_MAX_MARKS) return fail(ps, "more than %d open marks", CF_PK_MAX_MARKS);
    ps->marks[ps->nmarks++] = ps->depth;
    return 0;
}

/* The values since the last MARK, which goes. */
static int since_mark(struct parser *ps, struct cf_pk ***items, uint32_t *n)
{
    if (ps->nmarks == 0) return fail(ps, "no mark to close");
    uint32_t at = ps->marks[--ps->nmarks];
    *items = &ps->stack[at];
    *n = ps->depth - at;
    ps->depth = at;
    return 0;
}

static int appends(struct parser *ps)
{
    struct cf_pk **items = NULL;
    uint32_t n = 0;
    if (since_mark(ps, &items, &n) != 0) return -1;
    struct cf_pk *list = top(ps);
    if (list == NULL) return -1;
    if (list->type != CF_PK_LIST) return fail(ps, "APPENDS to something not a list");
    for (uint32_t i = 0; i < n; i++)
        if (add_item(ps, list, items[i]) != 0) return -1;
    return 0;
}

static int setitems(struct parser *ps, struct cf_pk **items, uint32_t n)
{
    struct cf_pk *dict = top(ps);
    if (dict == NULL) return -1;
    if (dict->type != CF_PK_DICT) return fail(ps, "SETITEM(S) on something not a dict");
    if (n % 2) return fail(ps, "SETITEMS with an odd number of values");
    for (uint32_t i = 0; i < n; i++)
        if (add_item(ps, dict, items[i]) != 0) return -1;
    return 0;
}

static int make_tuple(struct parser *ps, struct cf_pk **items, uint32_t n)
{
    struct cf_pk *t = new_value(ps, CF_PK_TUPLE);
    if (t == NULL) return -1;
    t->depth = 1;
    for (uint32_t i = 0; i < n; i++)
        if (add_item(ps, t, items[i]) != 0) return -1;
    return push(ps, t);
}

static int tuple_n(struct parser *ps, uint32_t n)
{
    struct cf_pk *items[3];
    for (uint32_t i = n; i-- > 0;)
        if ((items[i] = pop(ps)) == NULL) return -1;
    return make_tuple(ps, items, n);
}

/* ---- memo ---- */

static int memo_put(struct parser *ps, uint64_t index)
{
    struct cf_pk *v = top(ps);
    if (v == NULL) return -1;
    if (index >= CF_PK_MAX_MEMO) return fail(ps, "memo index %llu", (unsigned long long)index);
    if (cf_u64map_put(&ps->memo, index, (uint64_t)(uintptr_t)v) != 0)
        return fail(ps, "out of memory");
    return 0;
}

static int memo_get(struct parser *ps, uint64_t index)
{
    const uint64_t *v = cf_u64map_get(&ps->memo, index);
    if (v == NULL) return fail(ps, "memo index %llu was never stored", (unsigned long long)index);
    return push(ps, (struct cf_pk *)(uintptr_t)*v);
}

/* ---- the machine ---- */

enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_NONE = 'N',
    OP_BINUNICODE = 'X',
    OP_BINBYTES = 'B',
    OP_SHORT_BINBYTES = 'C',
    OP_BINFLOAT = 'G',
    OP_APPEND = 'a',
    OP_APPENDS = 'e',
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
    OP_BINPUT = 'q',
    OP_LONG_BINPUT = 'r',
    OP_SETITEM = 's',
    OP_SETITEMS = 'u',
    OP_TUPLE = 't',
    OP_EMPTY_TUPLE = ')',
    OP_EMPTY_LIST = ']',
    OP_EMPTY_DICT = '}',
    OP_PROTO = 0x80,
    OP_TUPLE1 = 0x85,
    OP_TUPLE2 = 0x86,
    OP_TUPLE3 = 0x87,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE8 = 0x8d,
    OP_BINBYTES8 = 0x8e,
    OP_MEMOIZE = 0x94,
    OP_FRAME = 0x95,
};

static int push_container(struct parser *ps, uint8_t type)
{
    struct cf_pk *v = new_value(ps, type);
    if (v) v->depth = 1;
    return push(ps, v);
}

static int pop2_into(struct parser *ps, bool dict)
{
    struct cf_pk *items[2];
    if ((items[1] = pop(ps)) == NULL) return -1;
    if (dict && (items[0] = pop(ps)) == NULL) return -1;
    if (!dict) {
        struct cf_pk *list = top(ps);
        if (list == NULL) return -1;
        if (list->type != CF_PK_LIST) return fail(ps, "APPEND to something not a list");
        return add_item(ps, list, items[1]);
    }
    return setitems(ps, items, 2);
}

static int step(struct parser *ps, uint8_t op)
{
    const uint8_t *q;
    struct cf_pk **items = NULL;
    uint32_t n = 0;
    switch (op) {
    case OP_PROTO:
        if ((q = take(ps, 1)) == NULL) return -1;
        if (*q < 2 || *q > 5) return fail(ps, "pickle protocol %u (2 to 5 are read)", *q);
        return 0;
    case OP_FRAME: /* a length hint for buffered readers: the opcodes follow */
        return take(ps, 8) ? 0 : -1;
    case OP_MARK:
        return mark(ps);
    case OP_EMPTY_DICT:
        return push_container(ps, CF_PK_DICT);
    case OP_EMPTY_LIST:
        return push_container(ps, CF_PK_LIST);
    case OP_EMPTY_TUPLE:
        return make_tuple(ps, NULL, 0);
    case OP_TUPLE:
        return since_mark(ps, &items, &n) ? -1 : make_tuple(ps, items, n);
    case OP_TUPLE1:
    case OP_TUPLE2:
    case OP_TUPLE3:
        return tuple_n(ps, (uint32_t)(op - OP_TUPLE1 + 1));
    case OP_APPEND:
        return pop2_into(ps, false);
    case OP_APPENDS:
        return appends(ps);
    case OP_SETITEM:
        return pop2_into(ps, true);
    case OP_SETITEMS:
        return since_mark(ps, &items, &n) ? -1 : setitems(ps, items, n);
    case OP_NONE:
        return push(ps, new_value(ps, CF_PK_NONE));
    case OP_NEWTRUE:
    case OP_NEWFALSE: {
        struct cf_pk *v = new_value(ps, CF_PK_BOOL);
        if (v) v->i = op == OP_NEWTRUE;
        return push(ps, v);
    }
    case OP_BININT1:
        return (q = take(ps, 1)) ? push_int(ps, q[0]) : -1;
    case OP_BININT2:
        return (q = take(ps, 2)) ? push_int(ps, (int64_t)le(q, 2)) : -1;
    case OP_BININT:
        return (q = take(ps, 4)) ? push_int(ps, (int32_t)(uint32_t)le(q, 4)) : -1;
    case OP_LONG1:
        return long1(ps);
    case OP_BINFLOAT:
        return binfloat(ps);
    case OP_SHORT_BINUNICODE:
        return push_bytes(ps, CF_PK_STR, 1);
    case OP_BINUNICODE:
        return push_bytes(ps, CF_PK_STR, 4);
    case OP_BINUNICODE8:
        return push_bytes(ps, CF_PK_STR, 8);
    case OP_SHORT_BINBYTES:
        return push_bytes(ps, CF_PK_BYTES, 1);
    case OP_BINBYTES:
        return push_bytes(ps, CF_PK_BYTES, 4);
    case OP_BINBYTES8:
        return push_bytes(ps, CF_PK_BYTES, 8);
    case OP_MEMOIZE:
        return memo_put(ps, ps->memo.n);
    case OP_BINPUT:
        return (q = take(ps, 1)) ? memo_put(ps, q[0]) : -1;
    case OP_LONG_BINPUT:
        return (q = take(ps, 4)) ? memo_put(ps, le(q, 4)) : -1;
    case OP_BINGET:
        return (q = take(ps, 1)) ? memo_get(ps, q[0]) : -1;
    case OP_LONG_BINGET:
        return (q = take(ps, 4)) ? memo_get(ps, le(q, 4)) : -1;
    default:
        /* GLOBAL, REDUCE, BUILD, NEWOBJ, PERSID, ...: code, not data. */
        return fail(ps, "opcode 0x%02x is not read (only plain data is)", op);
    }
}

int cf_pk_parse(const uint8_t *data, size_t len, struct cf_pk_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    struct parser *ps = calloc(1, sizeof *ps);
    if (ps == NULL) {
        snprintf(doc->error, sizeof doc->error, "out of memory");
        return -1;
    }
    ps->start = ps->p = data;
    ps->end = data + len;
    ps->doc = doc;
    int rc = -1;
    if (len < 2 || data[0] != OP_PROTO) {
        fail(ps, "not a pickle of protocol 2 or later");
    } else {
        for (;;) {
            if (ps->p == ps->end) {
                fail(ps, "truncated (no STOP)");
                break;
            }
            uint8_t op = *ps->p++;
            if (op == OP_STOP) {
                if (ps->nmarks || ps->depth != 1) {
                    fail(ps, "STOP with %u values and %u marks left", ps->depth, ps->nmarks);
                    break;
                }
                doc->root = ps->stack[0];
                rc = 0;
                break;
            }
            if (step(ps, op) != 0) break;
        }
    }
    cf_u64map_free(&ps->memo);
    free(ps);
    return rc;
}

void cf_pk_free(struct cf_pk_doc *doc)
{
    for (struct cf_pk_block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        for (unsigned i = 0; i < b->used; i++)
            free(b->v[i].items);
        free(b);
    }
    doc->blocks = NULL;
    doc->root = NULL;
}

bool cf_pk_is_str(const struct cf_pk *v, const char *s)
{
    size_t n = strlen(s);
    return v && v->type == CF_PK_STR && v->len == n && memcmp(v->s, s, n) == 0;
}

const struct cf_pk *cf_pk_get(const struct cf_pk *v, const char *key)
{
    if (v == NULL || v->type != CF_PK_DICT) return NULL;
    /* The last binding wins, as in Python. */
    for (uint64_t i = v->len; i >= 2; i -= 2)
        if (cf_pk_is_str(v->items[i - 2], key)) return v->items[i - 1];
    return NULL;
}
