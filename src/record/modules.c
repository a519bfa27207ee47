/* Which loaded object a return address lies in, so the trace names frames as
 * (module, offset) and compares across runs and hosts. Each object is announced
 * once with a MODULE event: path, load bias and GNU build-id. Runs only when a
 * new call site appears, never under a record lock (dladdr and dl_iterate_phdr
 * take the loader's lock). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "record/internal.h"

#define MAX_MODULES 1024

struct module {
    const void *map; /* the loader's link_map: the key */
    uintptr_t bias;
    uint32_t id;
};

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module modules[MAX_MODULES];
static uint32_t nmodules;

struct note_search {
    uintptr_t bias;
    const char *name;
    char hex[2 * 64 + 1];
};

static void hex_of(const uint8_t *p, uint32_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    if (n > 64) n = 64;
    for (uint32_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static void scan_notes(const uint8_t *p, const uint8_t *end, char *hex)
{
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const void *)p;
        const uint8_t *name = p + sizeof *nh;
        const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
        if (desc + nh->n_descsz > end) return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            hex_of(desc, nh->n_descsz, hex);
            return;
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
    }
}

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct note_search *s = arg;
    if (info->dlpi_addr != s->bias || strcmp(info->dlpi_name ? info->dlpi_name : "", s->name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        scan_notes(p, p + ph->p_memsz, s->hex);
        if (s->hex[0]) break;
    }
    return 1;
}

/* The program itself has an empty name in the loader's list. */
static void announce(uint32_t id, const struct link_map *lm)
{
    struct note_search s = {.bias = lm->l_addr, .name = lm->l_name ? lm->l_name : ""};
    dl_iterate_phdr(find_build_id, &s);
    char exe[512];
    const char *path = s.name;
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    }
    struct cf_event e = {.type = CF_EV_MODULE,
                         .site = id,
                         .addr = lm->l_addr,
                         .t_ns = cf_now_ns(),
                         .str = path,
                         .len = (uint32_t)strnlen(path, CF_EV_STR_MAX),
                         .str2 = s.hex,
                         .len2 = (uint32_t)strlen(s.hex)};
    cf_emit(&e);
}

/* The loaded object holding addr. _dl_find_object answers from the loader's
 * sorted table without a lock; dladdr1 looks up the nearest symbol as well, a
 * linear walk of the object's symbol table: half the CPU time of a Python
 * program making 10^5 new call sites went there. dladdr1 stays for addresses
 * _dl_find_object does not know (it covers the loaded objects' segments only). */
static struct link_map *object_of(uintptr_t addr)
{
    struct dl_find_object found;
    if (_dl_find_object((void *)addr, &found) == 0) return found.dlfo_link_map;
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)addr, &info, (void **)&lm, RTLD_DL_LINKMAP)) return NULL;
    return lm;
}

uint64_t cf_module_frame(uintptr_t addr)
{
    struct link_map *lm = object_of(addr);
    if (lm == NULL) return CF_FRAME(0, addr); /* no object: JIT code or a stripped mapping */
    uint32_t id = 0;
    bool fresh = false;
    pthread_mutex_lock(&modules_lock);
    for (uint32_t i = 0; i < nmodules && id == 0; i++)
        if (modules[i].map == lm && modules[i].bias == lm->l_addr) id = modules[i].id;
    if (id == 0 && nmodules < MAX_MODULES) {
        id = nmodules + 1;
        modules[nmodules++] = (struct module){.map = lm, .bias = lm->l_addr, .id = id};
        fresh = true;
    }
    pthread_mutex_unlock(&modules_lock);
    if (fresh) announce(id, lm);
    return id ? CF_FRAME(id, addr - lm->l_addr) : CF_FRAME(0, addr);
}

void cf_trace_site(const struct cf_site *site)
{
    uint64_t frames[CF_MAX_FRAMES];
    for (uint32_t i = 0; i < site->nframes; i++)
        frames[i] = CF_FRAME_MODULE(site->frames[i]) == CF_PY_MODULE
                        ? site->frames[i] /* a Python frame is its own trace value */
                        : cf_module_frame(site->frames[i]);
    struct cf_event e = {.type = CF_EV_SITE,
                         .site = site->id,
                         .addr = site->hash,
                         .api = (uint8_t)site->api,
                         .t_ns = cf_now_ns(),
                         .nframes = site->nframes,
                         .frames = frames};
    cf_emit(&e);
}
