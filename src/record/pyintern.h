/* The interned Python frames, between pyframes.c and pyintern.c; nothing else
 * includes this. Every call but cf_pyi_emit and cf_pyi_raw_frame_ids is made
 * with the interning lock held (cf_py_lock). */
#ifndef CF_RECORD_PYINTERN_H
#define CF_RECORD_PYINTERN_H

#include <stdbool.h>
#include <stdint.h>

#include "record/internal.h"

#define PY_FILE_MAX  512   /* bytes of a file name kept (its end) */
#define PY_FUNC_MAX  256   /* bytes of a function name kept */
#define PY_MAX_CODES 65536 /* code objects kept alive as keys */

struct py_name; /* "file\0function\0", shared by every code object with the same names */
struct py_loc;  /* one (file, function, line): a PYFRAME id */

/* A frame as read: its code object (a new reference) and its instruction, or
 * its line when the instruction is not available. */
struct py_at {
    void *code;
    int lasti; /* -1: none, line is set */
    uint64_t line;
};

struct py_name *cf_pyi_name_add(const char *text, uint32_t len, uint32_t file_len);
/* id 0: the next free id. *fresh: the location is new (to be emitted). */
struct py_loc *cf_pyi_loc_get(const struct py_name *name, uint64_t line, uint32_t id, bool *fresh);
uint32_t cf_pyi_loc_id(const struct py_loc *l);
/* A new location into the trace, without the lock. */
void cf_pyi_emit(const struct py_loc *l);

/* Code objects cudafrag holds a reference to, and their instructions' ids (3.11+). */
struct py_name *cf_pyi_code_name(uintptr_t code);
/* True when code was added: a reference must then be taken. */
bool cf_pyi_code_add(uintptr_t key, struct py_name *name);
uint32_t cf_pyi_pc_find(const struct py_at *at);
void cf_pyi_pc_add(const struct py_at *at, uint32_t id);

/* The frames read from memory as CF_FRAME values; takes the lock itself. */
void cf_pyi_raw_frame_ids(const struct cf_py_raw *raw, uint32_t n, uintptr_t *out);

#endif
