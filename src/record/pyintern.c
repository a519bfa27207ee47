/* The interned Python frames: (file, function) per code object, a PYFRAME id
 * per (file, function, line), and the tables that find a frame's id again from
 * its code object and instruction -- through the C API (pyframes.c) or read
 * from memory (pyread.c). All of it in cudafrag's own memory, under one lock. */
#include "record/pyintern.h"

#include <pthread.h>
#include <string.h>

#include "record/internal.h"

struct py_name { /* shared by every code object with the same names */
    UT_hash_handle hh;
    uint32_t len;      /* of text */
    uint32_t file_len; /* text is file '\0' function '\0' */
    char text[];
};

struct py_code { /* a code object seen; cudafrag holds a reference to it */
    uintptr_t code;
    struct py_name *name;
    UT_hash_handle hh;
};

struct py_loc_key {
    const struct py_name *name;
    uint64_t line;
};

struct py_loc { /* one (file, function, line): a PYFRAME id */
    struct py_loc_key key;
    uint32_t id;
    UT_hash_handle hh;
};

struct py_pc_key {
    uintptr_t code;
    int64_t lasti;
};

struct py_pc { /* (code object, instruction) -> its PYFRAME id, from 3.11 */
    struct py_pc_key key;
    uint32_t id;
    UT_hash_handle hh;
};

static pthread_mutex_t py_lock = PTHREAD_MUTEX_INITIALIZER;
static struct py_name *names;
static struct py_code *codes;
static struct py_pc *pcs;
static struct py_loc *locs, **locs_by_id;
static uint32_t ncodes, by_id_cap, next_id = CF_PY_FIRST_ID;

void cf_py_lock(void)
{
    pthread_mutex_lock(&py_lock);
}

void cf_py_unlock(void)
{
    pthread_mutex_unlock(&py_lock);
}

/* With py_lock held. */
struct py_name *cf_pyi_name_add(const char *text, uint32_t len, uint32_t file_len)
{
    struct py_name *n;
    HASH_FIND(hh, names, text, len, n);
    if (n) return n;
    n = cf_meta_alloc(sizeof *n + len);
    if (n == NULL) return NULL;
    memset(n, 0, sizeof *n);
    memcpy(n->text, text, len);
    n->len = len;
    n->file_len = file_len;
    HASH_ADD_KEYPTR(hh, names, n->text, len, n);
    return n;
}

static bool id_slot(uint32_t id)
{
    if (id < by_id_cap) return true;
    uint32_t cap = by_id_cap ? by_id_cap : 256;
    while (cap <= id)
        cap *= 2;
    struct py_loc **grown = cf_meta_alloc(cap * sizeof *grown);
    if (grown == NULL) return false;
    memset(grown, 0, cap * sizeof *grown);
    if (locs_by_id) {
        memcpy(grown, locs_by_id, by_id_cap * sizeof *grown);
        cf_meta_free(locs_by_id, by_id_cap * sizeof *grown);
    }
    locs_by_id = grown;
    by_id_cap = cap;
    return true;
}

/* With py_lock held. id 0: the next free id. *fresh: the location is new. */
struct py_loc *cf_pyi_loc_get(const struct py_name *name, uint64_t line, uint32_t id, bool *fresh)
{
    struct py_loc_key key = {.name = name, .line = line};
    struct py_loc *l;
    HASH_FIND(hh, locs, &key, sizeof key, l);
    if (l) return l;
    if (id == 0) id = next_id;
    if (id >= (1u << 24) || !id_slot(id) || (l = cf_meta_alloc(sizeof *l)) == NULL) return NULL;
    memset(l, 0, sizeof *l);
    l->key = key;
    l->id = id;
    HASH_ADD(hh, locs, key, sizeof key, l);
    locs_by_id[id] = l;
    if (id >= next_id) next_id = id + 1;
    *fresh = true;
    return l;
}

uint32_t cf_pyi_loc_id(const struct py_loc *l)
{
    return l->id;
}

void cf_pyi_emit(const struct py_loc *l)
{
    const struct py_name *n = l->key.name;
    struct cf_event e = {.type = CF_EV_PYFRAME,
                         .site = l->id,
                         .t_ns = cf_now_ns(),
                         .v = {l->key.line},
                         .str = n->text,
                         .len = n->file_len,
                         .str2 = n->text + n->file_len + 1,
                         .len2 = n->len - n->file_len - 2};
    cf_emit(&e);
}

/* With py_lock held: the instruction's id, 0 when it is not known yet. */
uint32_t cf_pyi_pc_find(const struct py_at *at)
{
    struct py_pc_key key = {.code = (uintptr_t)at->code, .lasti = at->lasti};
    struct py_pc *pc = NULL;
    if (at->lasti >= 0) HASH_FIND(hh, pcs, &key, sizeof key, pc);
    return pc ? pc->id : 0;
}

/* With py_lock held, for a code object cudafrag keeps alive. */
void cf_pyi_pc_add(const struct py_at *at, uint32_t id)
{
    struct py_pc *pc;
    if (at->lasti < 0 || (pc = cf_meta_alloc(sizeof *pc)) == NULL) return;
    memset(pc, 0, sizeof *pc);
    pc->key = (struct py_pc_key){.code = (uintptr_t)at->code, .lasti = at->lasti};
    pc->id = id;
    HASH_ADD(hh, pcs, key, sizeof pc->key, pc);
}

/* With py_lock held: the names of a code object cudafrag keeps alive, NULL when
 * it is not one. */
struct py_name *cf_pyi_code_name(uintptr_t code)
{
    struct py_code *c;
    HASH_FIND(hh, codes, &code, sizeof code, c);
    return c ? c->name : NULL;
}

/* With py_lock held. True when code was added: a reference must then be taken. */
bool cf_pyi_code_add(uintptr_t key, struct py_name *name)
{
    struct py_code *c;
    HASH_FIND(hh, codes, &key, sizeof key, c);
    if (c || ncodes >= PY_MAX_CODES || (c = cf_meta_alloc(sizeof *c)) == NULL) return false;
    memset(c, 0, sizeof *c);
    c->code = key;
    c->name = name;
    HASH_ADD(hh, codes, code, sizeof c->code, c);
    ncodes++;
    return true;
}

/* ---- frames read from memory: no reference is held, so a code object is told
 * apart from one made later at its address by the objects it points to ---- */

struct py_raw_code {
    uintptr_t code; /* the key */
    uintptr_t filename, name, linetable;
    int32_t firstlineno;
    struct py_name *names;
    UT_hash_handle hh;
};

struct py_raw_pc_key {
    const struct py_raw_code *code;
    int64_t offset;
};

struct py_raw_pc { /* (code object, instruction) -> its PYFRAME id */
    struct py_raw_pc_key key;
    uint32_t id;
    UT_hash_handle hh;
};

static struct py_raw_code *raw_codes;
static struct py_raw_pc *raw_pcs;
static uint32_t nraw_codes;

static bool same_code(const struct py_raw_code *c, const struct cf_py_raw *f)
{
    return c->filename == f->filename && c->name == f->name && c->linetable == f->linetable &&
           c->firstlineno == f->firstlineno;
}

/* With py_lock held: the interned names of f's code object, NULL when they
 * cannot be read. */
static struct py_name *raw_names(const struct cf_py_raw *f)
{
    char text[PY_FILE_MAX + PY_FUNC_MAX];
    uint32_t file_len = 0, len = cf_pyread_names(f, text, PY_FILE_MAX, PY_FUNC_MAX, &file_len);
    return len ? cf_pyi_name_add(text, len, file_len) : NULL;
}

/* With py_lock held: f's code object as known, added when new or when another
 * one took its address. NULL past PY_MAX_CODES, or when its names are
 * unreadable. A replaced node is kept: the instructions keyed by it are never
 * found again, and its address is not reused by a later node. */
static struct py_raw_code *raw_code(const struct cf_py_raw *f)
{
    struct py_raw_code *c;
    HASH_FIND(hh, raw_codes, &f->code, sizeof f->code, c);
    if (c && same_code(c, f)) return c;
    struct py_name *named;
    if (nraw_codes >= PY_MAX_CODES || (named = raw_names(f)) == NULL) return NULL;
    struct py_raw_code *fresh = cf_meta_alloc(sizeof *fresh);
    if (fresh == NULL) return NULL;
    if (c) HASH_DEL(raw_codes, c);
    *fresh = (struct py_raw_code){.code = f->code,
                                  .filename = f->filename,
                                  .name = f->name,
                                  .linetable = f->linetable,
                                  .firstlineno = f->firstlineno,
                                  .names = named};
    HASH_ADD(hh, raw_codes, code, sizeof fresh->code, fresh);
    nraw_codes++;
    return fresh;
}

/* With py_lock held: the id of a frame read from memory. A new instruction's
 * line is computed from the code's line table now, while the code object is
 * certainly alive (its frame is running). */
static uint32_t raw_frame_id(const struct cf_py_raw *f, const struct py_loc **fresh)
{
    struct py_raw_code *c = raw_code(f);
    struct py_raw_pc_key key = {.code = c, .offset = f->offset};
    struct py_raw_pc *pc = NULL;
    if (c) HASH_FIND(hh, raw_pcs, &key, sizeof key, pc);
    if (pc) return pc->id;
    struct py_name *name = c ? c->names : raw_names(f);
    bool is_new = false;
    struct py_loc *l = name ? cf_pyi_loc_get(name, cf_pyread_line(f), 0, &is_new) : NULL;
    if (l == NULL) return CF_PY_UNNAMED;
    if (is_new) *fresh = l;
    if (c && (pc = cf_meta_alloc(sizeof *pc)) != NULL) {
        memset(pc, 0, sizeof *pc);
        pc->key = key;
        pc->id = l->id;
        HASH_ADD(hh, raw_pcs, key, sizeof pc->key, pc);
    }
    return l->id;
}

void cf_pyi_raw_frame_ids(const struct cf_py_raw *raw, uint32_t n, uintptr_t *out)
{
    const struct py_loc *fresh[CF_MAX_FRAMES] = {0};
    cf_py_lock();
    for (uint32_t i = 0; i < n; i++)
        out[i] = (uintptr_t)CF_FRAME(CF_PY_MODULE, raw_frame_id(&raw[i], &fresh[i]));
    cf_py_unlock();
    for (uint32_t i = 0; i < n && cf_trace_on(); i++)
        if (fresh[i]) cf_pyi_emit(fresh[i]);
}

/* ---- names for the report and the replay ---- */

bool cf_pyframe_get(uint32_t id, struct cf_pyframe *out)
{
    cf_py_lock();
    const struct py_loc *l = id < by_id_cap ? locs_by_id[id] : NULL;
    if (l) {
        out->file = l->key.name->text;
        out->function = l->key.name->text + l->key.name->file_len + 1;
        out->line = (uint32_t)l->key.line;
    }
    cf_py_unlock();
    return l != NULL;
}

void cf_py_define(const struct cf_event *e)
{
    char text[PY_FILE_MAX + PY_FUNC_MAX];
    uint32_t f = e->len < PY_FILE_MAX - 1 ? e->len : PY_FILE_MAX - 1;
    uint32_t g = e->len2 < PY_FUNC_MAX - 1 ? e->len2 : PY_FUNC_MAX - 1;
    memcpy(text, e->str + (e->len - f), f);
    text[f] = '\0';
    memcpy(text + f + 1, e->str2, g);
    text[f + 1 + g] = '\0';
    bool fresh = false;
    cf_py_lock();
    struct py_name *name = cf_pyi_name_add(text, f + g + 2, f);
    if (name && e->site >= CF_PY_FIRST_ID) cf_pyi_loc_get(name, e->v[0], e->site, &fresh);
    cf_py_unlock();
}
