/* Names for call-site addresses, resolved at report time only: the function from
 * dladdr, the module and offset, and file:line from addr2line when the module has
 * debug information and addr2line is installed. */
#ifndef CF_REPORT_SYMBOLIZE_H
#define CF_REPORT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

struct cf_sym {
    uintptr_t addr;     /* return address as recorded */
    char function[160]; /* "" when unknown */
    char module[128];   /* basename of the object; "" when unknown */
    char path[512];     /* full module path, for addr2line */
    uint64_t offset;    /* addr - module load base */
    uint64_t lookup;    /* what addr2line is given: offset, or addr for ET_EXEC */
    char file[256];     /* source file, "" when unknown */
    unsigned line;      /* 0 when unknown */
};

struct cf_symtab {
    struct cf_sym *syms; /* sorted by addr */
    unsigned n, cap;
};

/* Adds an address to resolve (duplicates are merged). */
void cf_symtab_add(struct cf_symtab *t, uintptr_t addr);
/* Resolves everything added: dladdr for each address, then one addr2line run per
 * module (without a shell and without LD_PRELOAD, so it is not profiled). */
void cf_symtab_resolve(struct cf_symtab *t, bool use_addr2line);
const struct cf_sym *cf_symtab_find(const struct cf_symtab *t, uintptr_t addr);
void cf_symtab_free(struct cf_symtab *t);

#endif
