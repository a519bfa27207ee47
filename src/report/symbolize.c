#include "report/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/record.h"
#include "report/elfsyms.h"
#include "report/fold.h"
#include "base/log.h"

static int cmp_sym(const void *a, const void *b)
{
    uintptr_t x = ((const struct cf_sym *)a)->addr, y = ((const struct cf_sym *)b)->addr;
    return x < y ? -1 : x > y;
}

void cf_symtab_add(struct cf_symtab *t, uintptr_t addr)
{
    if (addr == 0 || cf_frame_is_marker(addr)) return;
    if (t->n == t->cap) {
        unsigned cap = t->cap ? t->cap * 2 : 64;
        struct cf_sym *s = realloc(t->syms, cap * sizeof *s);
        if (s == NULL) return;
        t->syms = s;
        t->cap = cap;
    }
    memset(&t->syms[t->n], 0, sizeof t->syms[0]);
    t->syms[t->n++].addr = addr;
}

const struct cf_sym *cf_symtab_find(const struct cf_symtab *t, uintptr_t addr)
{
    struct cf_sym key = {.addr = addr};
    if (t->n == 0) return NULL;
    return bsearch(&key, t->syms, t->n, sizeof key, cmp_sym);
}

void cf_symtab_free(struct cf_symtab *t)
{
    free(t->syms);
    t->syms = NULL;
    t->n = t->cap = 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The main program's link_map has an empty name; dladdr then reports argv[0],
 * which may be relative: /proc/self/exe names the file itself. */
static void module_path(const Dl_info *di, struct link_map *lm, char *out, size_t n)
{
    if (lm && lm->l_name && lm->l_name[0]) {
        snprintf(out, n, "%s", lm->l_name);
        return;
    }
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len > 0) {
        out[len] = '\0';
        return;
    }
    snprintf(out, n, "%s", di->dli_fname ? di->dli_fname : "");
}

/* C++ names as people read them. The demangler of libstdc++ is used when the
 * program has loaded it (every C++ program has; C programs have no mangled
 * names): looked up at report time, never linked. A Python program loads it
 * with its extension modules, privately (RTLD_LOCAL), where the global scope
 * does not see it: then it is asked for by name, without loading it. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn find_demangler(void)
{
    demangle_fn fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (fn) return fn;
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) return NULL;
    fn = (demangle_fn)dlsym(h, "__cxa_demangle");
    dlclose(h); /* only drops the reference RTLD_NOLOAD took */
    return fn;
}

static void demangle(const char *name, char *out, size_t n)
{
    static demangle_fn fn;
    static bool looked;
    if (strncmp(name, "_Z", 2) == 0 && !looked) {
        fn = find_demangler();
        looked = true;
    }
    int status = -1;
    char *plain = strncmp(name, "_Z", 2) == 0 && fn ? fn(name, NULL, NULL, &status) : NULL;
    snprintf(out, n, "%s", plain && status == 0 ? plain : name);
    if (plain && strlen(plain) >= n && n > 4) memcpy(out + n - 4, "...", 4);
    free(plain);
}

/* Fixed-position executables (ET_EXEC) are looked up by absolute address; PIE
 * executables and shared objects by offset from their load base. */
static bool is_fixed_position(const void *base)
{
    const ElfW(Ehdr) *eh = base;
    return base && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_type == ET_EXEC;
}

static void resolve_dladdr(struct cf_sym *s)
{
    Dl_info di;
    struct link_map *lm = NULL;
    /* addr - 1: a return address may already belong to the next function. */
    if (dladdr1((void *)(s->addr - 1), &di, (void **)&lm, RTLD_DL_LINKMAP) == 0) return;
    module_path(&di, lm, s->path, sizeof s->path);
    const char *base = base_name(s->path);
    size_t blen = strlen(base);
    if (blen >= sizeof s->module) blen = sizeof s->module - 1;
    memcpy(s->module, base, blen);
    s->module[blen] = '\0';
    s->offset = (uint64_t)(s->addr - (uintptr_t)di.dli_fbase);
    s->lookup = is_fixed_position(di.dli_fbase) ? (uint64_t)s->addr : s->offset;
    /* Whole: a mangled template name cut short no longer demangles. */
    char name[4096];
    if (di.dli_sname)
        demangle(di.dli_sname, s->function, sizeof s->function);
    else if (cf_elf_symbol(s->path, (uint64_t)(s->addr - 1 - (uintptr_t)(lm ? lm->l_addr : 0)),
                           name, sizeof name))
        demangle(name, s->function, sizeof s->function);
}

void cf_sym_python(struct cf_sym *s, const struct cf_pyframe *pf)
{
    s->python = true;
    if (pf == NULL) return;
    snprintf(s->function, sizeof s->function, "%s", pf->function);
    /* The end of a long path is the part a reader needs. */
    size_t len = strlen(pf->file), keep = sizeof s->file - 1;
    snprintf(s->file, sizeof s->file, "%s", len > keep ? pf->file + len - keep : pf->file);
    s->line = pf->line;
}

static int by_py_id(const void *key, const void *elem)
{
    uint32_t x = *(const uint32_t *)key, y = ((const struct cf_rec_pyname *)elem)->id;
    return x < y ? -1 : x > y;
}

static const struct cf_pyframe *python_name(const struct cf_symtab *t, uintptr_t addr)
{
    uint32_t id = (uint32_t)CF_FRAME_OFFSET(addr);
    const struct cf_rec_pyname *hit =
        t->npy ? bsearch(&id, t->py, t->npy, sizeof *t->py, by_py_id) : NULL;
    return hit ? &hit->frame : NULL;
}

/* Sorted, each address once. */
static void unique(struct cf_symtab *t)
{
    qsort(t->syms, t->n, sizeof t->syms[0], cmp_sym);
    unsigned k = 0;
    for (unsigned i = 0; i < t->n; i++)
        if (k == 0 || t->syms[k - 1].addr != t->syms[i].addr) t->syms[k++] = t->syms[i];
    t->n = k;
}

void cf_symtab_resolve(struct cf_symtab *t)
{
    if (t->n == 0) return;
    unique(t);
    for (unsigned i = 0; i < t->n; i++) {
        struct cf_sym *s = &t->syms[i];
        if (cf_frame_is_python(s->addr))
            cf_sym_python(s, python_name(t, s->addr));
        else if (t->resolver)
            t->resolver(s);
        else
            resolve_dladdr(s);
        s->folded = cf_fold_frame(s);
        s->framework = s->folded && cf_fold_framework_only(s);
    }
    cf_elf_release();
}
