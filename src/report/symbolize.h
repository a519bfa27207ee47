/* Names for call-site addresses, resolved at report time only. In the profiled
 * process: the function from the dynamic symbol table (dladdr), the module and
 * offset -- nothing that could stall the program's exit. The `cudafrag` command
 * installs a resolver of its own (DWARF through libdwfl: file:line, inlined
 * frames) for the frames of a trace. */
#ifndef CF_REPORT_SYMBOLIZE_H
#define CF_REPORT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

struct cf_sym {
    uintptr_t addr;     /* return address as recorded */
    char function[160]; /* "" when unknown */
    char module[128];   /* basename of the object; "" when unknown */
    char path[512];     /* full module path */
    uint64_t offset;    /* addr - module load base */
    uint64_t lookup;    /* the ELF address: offset, or addr for ET_EXEC */
    char file[256];     /* source file, "" when unknown */
    unsigned line;      /* 0 when unknown */
};

struct cf_symtab {
    struct cf_sym *syms; /* sorted by addr */
    unsigned n, cap;
};

/* Adds an address to resolve (duplicates are merged). */
void cf_symtab_add(struct cf_symtab *t, uintptr_t addr);
/* Resolves everything added, with cf_symtab_resolver when set, else dladdr. */
typedef void (*cf_sym_resolver)(struct cf_sym *s);
extern cf_sym_resolver cf_symtab_resolver;
void cf_symtab_resolve(struct cf_symtab *t);
const struct cf_sym *cf_symtab_find(const struct cf_symtab *t, uintptr_t addr);
void cf_symtab_free(struct cf_symtab *t);

#endif
