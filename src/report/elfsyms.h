/* Function names from an ELF file's .symtab (report time only). */
#ifndef CF_REPORT_ELFSYMS_H
#define CF_REPORT_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The function of the object at path holding vaddr (an ELF virtual address). */
bool cf_elf_symbol(const char *path, uint64_t vaddr, char *name, size_t n);
/* Unmaps what cf_elf_symbol keeps mapped. */
void cf_elf_release(void);

#endif
