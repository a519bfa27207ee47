/* Function names from an object's full symbol table (.symtab), for frames the
 * dynamic symbol table cannot name: executables export nothing unless linked
 * with -rdynamic, and static functions are never exported. Only the ELF
 * headers and the symbol table are read (mapped, not parsed as DWARF), so a
 * report of a program with gigabytes of debug information still exits at once. */
#include "report/elfsyms.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct image {
    const uint8_t *base;
    size_t size;
};

static bool map_file(const char *path, struct image *im)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)sizeof(ElfW(Ehdr));
    void *p = ok ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) return false;
    im->base = p;
    im->size = (size_t)st.st_size;
    return true;
}

static bool in_bounds(const struct image *im, uint64_t off, uint64_t len)
{
    return off <= im->size && len <= im->size - off;
}

/* The best FUNC symbol of one symbol table section holding vaddr. */
static bool search_symtab(const struct image *im, const ElfW(Shdr) * sh, const ElfW(Shdr) * strtab,
                          uint64_t vaddr, char *name, size_t n)
{
    if (!in_bounds(im, sh->sh_offset, sh->sh_size) ||
        !in_bounds(im, strtab->sh_offset, strtab->sh_size) || sh->sh_entsize != sizeof(ElfW(Sym)))
        return false;
    const ElfW(Sym) *syms = (const void *)(im->base + sh->sh_offset);
    size_t count = sh->sh_size / sizeof *syms;
    const ElfW(Sym) *best = NULL;
    for (size_t i = 0; i < count; i++) {
        const ElfW(Sym) *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value > vaddr) continue;
        if (vaddr >= s->st_value + (s->st_size ? s->st_size : 1)) continue;
        if (best == NULL || s->st_value > best->st_value) best = s;
    }
    if (best == NULL || best->st_name >= strtab->sh_size) return false;
    const char *str = (const char *)(im->base + strtab->sh_offset + best->st_name);
    snprintf(name, n, "%.*s", (int)strnlen(str, strtab->sh_size - best->st_name), str);
    return name[0] != '\0';
}

/* The last object looked at stays mapped: lookups come sorted by address, so
 * mostly many in a row from one object. */
static struct image cached;
static char cached_path[512];

void cf_elf_release(void)
{
    if (cached.base) munmap((void *)cached.base, cached.size);
    cached = (struct image){0};
    cached_path[0] = '\0';
}

bool cf_elf_symbol(const char *path, uint64_t vaddr, char *name, size_t n)
{
    if (path == NULL || path[0] == '\0') return false;
    if (strcmp(path, cached_path) != 0) {
        cf_elf_release();
        if (!map_file(path, &cached)) return false;
        snprintf(cached_path, sizeof cached_path, "%s", path);
    }
    struct image im = cached;
    const ElfW(Ehdr) *eh = (const void *)im.base;
    bool found = false;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
        eh->e_shentsize == sizeof(ElfW(Shdr)) &&
        in_bounds(&im, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)))) {
        const ElfW(Shdr) *sh = (const void *)(im.base + eh->e_shoff);
        for (unsigned i = 0; i < eh->e_shnum && !found; i++)
            if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh->e_shnum)
                found = search_symtab(&im, &sh[i], &sh[sh[i].sh_link], vaddr, name, n);
    }
    return found;
}
