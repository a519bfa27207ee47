/* Names for call-site addresses, resolved at report time only. In the profiled
 * process: the function from the dynamic symbol table (dladdr), the module and
 * offset -- nothing that could stall the program's exit. The `cudafrag` command
 * installs a resolver of its own (DWARF through libdwfl: file:line, inlined
 * frames) for the frames of a trace. */
#ifndef CF_REPORT_SYMBOLIZE_H
#define CF_REPORT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "record/event.h"
#include "record/read.h"

struct cf_sym {
    uintptr_t addr;     /* return address as recorded */
    char function[160]; /* "" when unknown */
    char module[128];   /* basename of the object; "" when unknown */
    char path[512];     /* full module path */
    uint64_t offset;    /* addr - module load base */
    uint64_t lookup;    /* the ELF address: offset, or addr for ET_EXEC */
    char file[256];     /* source file, "" when unknown */
    unsigned line;      /* 0 when unknown */
    /* The function the code belongs to when function is one inlined into it
     * (the symbol table's name, which is what the exiting process knows). */
    char symbol[160];
    bool python;    /* a Python frame: function and file:line, no module */
    bool folded;    /* allocator or framework plumbing (fold.c) */
    bool framework; /* folded only as a framework's library or package (fold.c) */
};

/* Python frames are CF_FRAME(CF_PY_MODULE, id); ids below CF_PY_FIRST_ID are
 * markers saying why a site has none. */
static inline bool cf_frame_is_python(uint64_t f)
{
    return CF_FRAME_MODULE(f) == CF_PY_MODULE;
}
static inline bool cf_frame_is_marker(uint64_t f)
{
    return cf_frame_is_python(f) && CF_FRAME_OFFSET(f) < CF_PY_FIRST_ID;
}

typedef void (*cf_sym_resolver)(struct cf_sym *s);
struct cf_symtab {
    struct cf_sym *syms; /* sorted by addr */
    unsigned n, cap;
    cf_sym_resolver resolver;       /* native frames; NULL: dladdr */
    const struct cf_rec_pyname *py; /* Python frames' names, by id (the record's copy) */
    unsigned npy;
};

/* Adds an address to resolve (duplicates are merged when resolving; markers
 * are not frames and are left out). */
void cf_symtab_add(struct cf_symtab *t, uintptr_t addr);
/* Names a Python frame (s->addr) as pf says (NULL: not known). */
void cf_sym_python(struct cf_sym *s, const struct cf_pyframe *pf);
/* Resolves everything added: Python frames from t->py, others with t->resolver
 * when set, else dladdr; then marks the folded ones. */
void cf_symtab_resolve(struct cf_symtab *t);
const struct cf_sym *cf_symtab_find(const struct cf_symtab *t, uintptr_t addr);
void cf_symtab_free(struct cf_symtab *t);

#endif
