/* Trace frames to function, file:line and inlined callers, read from the module's
 * DWARF (in the file itself or in separate debuginfo) the way eu-addr2line -i does. */
#include "cli/symbolize_dw.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef char *demangle_fn(const char *mangled, char *buf, size_t *len, int *status);

struct cf_dw_module {
    struct cf_dw_module *next;
    char *path;
    Dwfl *dwfl; /* NULL: the file could not be read (said once) */
    Dwfl_Module *mod;
    char build_id[2 * 64 + 1]; /* hex; "" when the file has none */
    bool stale;                /* its build-id differs from the traced one */
    char traced_id[2 * 64 + 1];
    bool missing; /* the file does not exist here */
};

struct cf_dw {
    struct cf_dw_module *modules;
    /* libstdc++ is loaded only once a C++ name is seen, and never linked: the
     * command stays a C program that runs where no C++ runtime is installed. */
    void *libstdcxx;
    demangle_fn *demangle;
    bool demangle_tried;
};

/* A trace read on another machine names many modules that are not here (a
 * framework's libraries, another Python): one line for all of them, said when
 * the symbolizer closes, instead of one per module. */
static void say_unread(const struct cf_dw *dw)
{
    const struct cf_dw_module *miss = NULL, *stale = NULL;
    unsigned nmiss = 0, nstale = 0;
    for (const struct cf_dw_module *m = dw->modules; m; m = m->next) {
        if (m->missing) nmiss++, miss = m;
        if (m->stale) nstale++, stale = m;
    }
    if (nmiss == 1)
        fprintf(stderr, "cudafrag: cannot open %s: %s\n", miss->path, strerror(ENOENT));
    else if (nmiss > 1)
        fprintf(stderr,
                "cudafrag: %u modules of the trace are not on this machine (%s, ...): their "
                "frames are shown as module+offset\n",
                nmiss, miss->path);
    if (nstale == 1)
        fprintf(stderr,
                "cudafrag: %s: build-id %s, but %s when traced (the trace is from another "
                "machine, or the file was replaced since): its frames are not symbolized\n",
                stale->path, *stale->build_id ? stale->build_id : "(none)", stale->traced_id);
    else if (nstale > 1)
        fprintf(stderr,
                "cudafrag: %u modules differ from the traced ones (%s, ...; the trace is from "
                "another machine, or they were replaced since): their frames are not "
                "symbolized\n",
                nstale, stale->path);
}

/* Where the code at an address came from: the line table's row, then each inlined
 * call site on the way out. The strings point into the module's DWARF; a relative
 * file is relative to its unit's compilation directory. */
struct src_pos {
    const char *file, *comp_dir;
    int line, column;
};

/* dwfl_standard_find_debuginfo looks beside the file, in .debug/ and in
 * /usr/lib/debug (by build-id and by debuglink), so stripped system libraries
 * with a -dbg package installed are named too. */
static char *debuginfo_path;
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

__attribute__((format(printf, 1, 2))) static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cudafrag: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

struct cf_dw *cf_dw_open(void)
{
    return calloc(1, sizeof(struct cf_dw));
}

void cf_dw_close(struct cf_dw *dw)
{
    if (dw == NULL) return;
    say_unread(dw);
    struct cf_dw_module *next;
    for (struct cf_dw_module *m = dw->modules; m; m = next) {
        next = m->next;
        if (m->dwfl) dwfl_end(m->dwfl);
        free(m->path);
        free(m);
    }
    if (dw->libstdcxx) dlclose(dw->libstdcxx);
    free(dw);
}

static void read_build_id(struct cf_dw_module *m)
{
    const unsigned char *bits;
    GElf_Addr where;
    int len = dwfl_module_build_id(m->mod, &bits, &where);
    for (int i = 0; i < len && 2 * i + 2 < (int)sizeof m->build_id; i++)
        snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
}

/* A regular file's descriptor, or -1 with the reason said: libdw's own message for
 * a missing file or a directory would not name the problem. */
static int open_file(struct cf_dw_module *m)
{
    const char *path = m->path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        m->missing = true; /* said with the others at close */
        return -1;
    }
    if (fd < 0) {
        warn("cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        warn("cannot read %s: %s", path, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a file");
        close(fd);
        return -1;
    }
    return fd;
}

/* One Dwfl per module: every module sits at base 0 (with add_p_vaddr, the bias is 0
 * for executables and libraries alike), so an address in it is its ELF vaddr, and
 * modules at the same addresses cannot share one address space. */
static void report_module(struct cf_dw_module *m)
{
    int fd = open_file(m);
    if (fd < 0) return;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (m->dwfl == NULL) {
        warn("cannot read %s: %s", m->path, dwfl_errmsg(-1));
        close(fd);
        return;
    }
    const char *base = strrchr(m->path, '/');
    m->mod = dwfl_report_elf(m->dwfl, base ? base + 1 : m->path, m->path, fd, 0, true);
    if (m->mod == NULL) {
        warn("cannot read %s: %s", m->path, dwfl_errmsg(-1));
        close(fd); /* only a module that was reported owns its descriptor */
        dwfl_end(m->dwfl);
        m->dwfl = NULL;
        return;
    }
    dwfl_report_end(m->dwfl, NULL, NULL);
    read_build_id(m);
}

static struct cf_dw_module *module_for(struct cf_dw *dw, const char *path)
{
    for (struct cf_dw_module *m = dw->modules; m; m = m->next)
        if (strcmp(m->path, path) == 0) return m;
    struct cf_dw_module *m = calloc(1, sizeof *m);
    if (m == NULL || (m->path = strdup(path)) == NULL) {
        free(m);
        warn("out of memory reading %s", path);
        return NULL;
    }
    report_module(m);
    m->next = dw->modules;
    dw->modules = m;
    return m;
}

/* A replaced file (an upgraded library, a rebuilt program) has other code at the
 * traced offsets: any name or line read from it would be a confident lie. */
static bool is_stale(struct cf_dw_module *m, const char *build_id_hex)
{
    if (build_id_hex == NULL || *build_id_hex == '\0') return false;
    if (strcasecmp(build_id_hex, m->build_id) == 0) return false;
    if (!m->stale) snprintf(m->traced_id, sizeof m->traced_id, "%s", build_id_hex);
    m->stale = true; /* said with the others at close */
    return true;
}

static demangle_fn *demangler(struct cf_dw *dw)
{
    if (!dw->demangle_tried) {
        dw->demangle_tried = true;
        dw->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (dw->libstdcxx) dw->demangle = (demangle_fn *)dlsym(dw->libstdcxx, "__cxa_demangle");
    }
    return dw->demangle;
}

static void copy_name(struct cf_dw *dw, char *out, size_t n, const char *name)
{
    if (name == NULL) name = "";
    demangle_fn *demangle = strncmp(name, "_Z", 2) == 0 ? demangler(dw) : NULL;
    int status = -1;
    char *plain = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    snprintf(out, n, "%s", status == 0 && plain ? plain : name);
    free(plain);
}

static void fill(struct cf_dw *dw, struct cf_dw_frame *f, const char *name,
                 const struct src_pos *pos)
{
    memset(f, 0, sizeof *f);
    copy_name(dw, f->function, sizeof f->function, name);
    if (pos->file == NULL) return;
    if (pos->file[0] != '/' && pos->comp_dir)
        snprintf(f->file, sizeof f->file, "%s/%s", pos->comp_dir, pos->file);
    else
        snprintf(f->file, sizeof f->file, "%s", pos->file);
    f->line = pos->line > 0 ? (unsigned)pos->line : 0;
    f->column = pos->column > 0 ? (unsigned)pos->column : 0;
}

static const char *comp_dir(Dwarf_Die *cu)
{
    Dwarf_Attribute attr;
    return dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
}

static struct src_pos line_table_pos(Dwfl_Module *mod, uint64_t addr)
{
    struct src_pos pos = {0};
    Dwfl_Line *row = dwfl_module_getsrc(mod, addr);
    Dwarf_Addr row_addr;
    if (row == NULL) return pos;
    pos.file = dwfl_lineinfo(row, &row_addr, &pos.line, &pos.column, NULL, NULL);
    Dwarf_Die *cu = dwfl_linecu(row);
    if (cu) pos.comp_dir = comp_dir(cu);
    return pos;
}

/* C++ functions carry their mangled linkage name; an inlined instance carries
 * neither name, only its abstract origin does (hence _integrate). */
static const char *die_name(Dwarf_Die *die)
{
    static const unsigned attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    Dwarf_Attribute attr;
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        const char *name = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &attr));
        if (name) return name;
    }
    return NULL;
}

static int udata(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    return dwarf_formudata(dwarf_attr(die, name, &attr), &v) == 0 ? (int)v : 0;
}

/* The caller's position is where the inlined instance was called from. */
static struct src_pos call_site(Dwarf_Die *inlined)
{
    struct src_pos pos = {.line = udata(inlined, DW_AT_call_line),
                          .column = udata(inlined, DW_AT_call_column)};
    Dwarf_Die cu;
    Dwarf_Files *files;
    Dwarf_Attribute attr;
    Dwarf_Word idx;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &idx) == 0 &&
        dwarf_diecu(inlined, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, NULL) == 0) {
        pos.file = dwarf_filesrc(files, idx, NULL, NULL);
        pos.comp_dir = comp_dir(&cu);
    }
    return pos;
}

/* chain runs from the innermost scope outwards: each inlined instance is a frame
 * that ends at the first real function (a nested function is a frame of its own). */
static int walk_scopes(struct cf_dw *dw, Dwarf_Die *chain, int nchain, struct src_pos pos,
                       struct cf_dw_frame *out, int max)
{
    int k = 0;
    for (int i = 0; i < nchain && k < max; i++) {
        int tag = dwarf_tag(&chain[i]);
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
            tag != DW_TAG_entry_point)
            continue;
        fill(dw, &out[k], die_name(&chain[i]), &pos);
        if (tag != DW_TAG_inlined_subroutine) return k + 1;
        out[k++].inlined = 1;
        pos = call_site(&chain[i]);
    }
    return k;
}

static int dwarf_frames(struct cf_dw *dw, Dwfl_Module *mod, uint64_t addr, struct src_pos pos,
                        struct cf_dw_frame *out, int max)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    if (cu == NULL) return 0;
    /* dwarf_getscopes continues past an inlined instance into its abstract
     * definition; the physical nesting of the innermost scope is what gives the
     * chain of callers. */
    Dwarf_Die *scopes = NULL, *chain = NULL;
    int n = dwarf_getscopes(cu, addr - bias, &scopes);
    int nchain = n > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
    free(scopes);
    int k = nchain > 0 ? walk_scopes(dw, chain, nchain, pos, out, max) : 0;
    free(chain);
    return k;
}

static int symtab_frame(struct cf_dw *dw, Dwfl_Module *mod, uint64_t addr,
                        const struct src_pos *pos, struct cf_dw_frame *out)
{
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    if (name == NULL && pos->file == NULL) return 0;
    fill(dw, out, name, pos);
    return 1;
}

int cf_dw_lookup(struct cf_dw *dw, const char *module_path, const char *build_id_hex,
                 uint64_t vaddr, struct cf_dw_frame *out, int max)
{
    struct cf_dw_module *m = module_for(dw, module_path);
    if (m == NULL || m->dwfl == NULL) return -1;
    if (max <= 0) return 0;
    if (is_stale(m, build_id_hex)) {
        memset(out, 0, sizeof *out);
        out->stale = 1;
        return 1;
    }
    struct src_pos pos = line_table_pos(m->mod, vaddr);
    int n = dwarf_frames(dw, m->mod, vaddr, pos, out, max);
    return n > 0 ? n : symtab_frame(dw, m->mod, vaddr, &pos, out);
}
