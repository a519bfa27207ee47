/* Who owns the memory, from the modules of each call site's stack. The first
 * frame, innermost first, that is not the CUDA runtime or driver (or a binding
 * that only passes the call on) decides: its module names a library, a
 * framework's cache, or nothing (the program's own code). The one exception is a
 * library entry point that allocates on its caller's behalf (ncclMemAlloc, which
 * PyTorch's cache may use): the frames past the library decide. Module paths
 * only: they are known for every frame, in the process (the loader) and from a
 * trace (its MODULE events) alike, where function names would differ. */
#include "report/owners.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/fold.h"
#include "report/snapshot.h"

const struct cf_owner_info cf_owner_info[CF_OWNER_COUNT] = {
#define CF_OWNER_INFO(id, key, label, library) [CF_OWNER_##id] = {key, label, library},
    CF_OWNERS(CF_OWNER_INFO)
#undef CF_OWNER_INFO
};

// clang-format off
/* The CUDA runtime and driver, and bindings that only pass a call on (CuPy's and
 * cuda-python's runtime and driver wrappers): by basename, then by path. */
static const char pass_base[] =
    "libcuda.so*,libcudart.so*,libcudadebugger.so*,libnvidia-*,libcudafrag.so*";
static const char pass_path[] =
    "*/cupy_backends/cuda/api/*,*/site-packages/cuda/*,*/dist-packages/cuda/*";

static const struct rule {
    enum cf_owner owner;
    const char *base, *path; /* patterns on the basename and on the whole path */
} rules[] = {
    {CF_OWNER_NCCL, "libnccl*", ""},
    {CF_OWNER_CUBLAS, "libcublas*", ""},
    {CF_OWNER_CUDNN, "libcudnn*", ""},
    {CF_OWNER_CUDA_LIBS,
     "libcufft*,libcurand*,libcusparse*,libcusolver*,libnvrtc*,libnvJitLink*,libnvjitlink*,"
     "libnvjpeg*,libnpp*,libcutensor*,libnvblas*,libcufile*,libcupti*,libcudss*,libnvshmem*", ""},
    /* PyTorch's caching allocator (and its cudaMallocAsync backend); XLA's BFC
     * allocator inside jaxlib or its CUDA plugin, libtpu; CuPy's memory pools;
     * RAPIDS RMM */
    {CF_OWNER_CACHE, "libc10_cuda.so*,xla_extension*,libtpu*,librmm*",
     "*/jaxlib/*,*/jax_plugins/*,*/jax_cuda*_plugin/*,*/cupy/cuda/memory*"},
};
// clang-format on

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

enum cf_owner_module cf_owner_of_module(const char *path, enum cf_owner *owner)
{
    const char *base = base_of(path);
    *owner = CF_OWNER_USER;
    if (cf_fold_match(pass_base, base) || cf_fold_match(pass_path, path)) return CF_MODULE_PASS;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (cf_fold_match(rules[i].base, base) || cf_fold_match(rules[i].path, path)) {
            *owner = rules[i].owner;
            return CF_MODULE_OWNER;
        }
    return CF_MODULE_PLAIN;
}

bool cf_owner_allocates_for_caller(const char *function)
{
    return strcmp(function, "ncclMemAlloc") == 0;
}

/* From frame i, a run of frames in modules of owner o: the index after it when
 * one of them allocates for its caller, else -1. */
static int past_allocating_for_caller(unsigned n, cf_owner_frame_fn frame, void *ctx, unsigned i,
                                      enum cf_owner o, struct cf_owner_frame *f)
{
    bool for_caller = false;
    enum cf_owner here;
    for (; i < n && frame(ctx, i, true, f); i++) {
        if (f->python || cf_owner_of_module(f->path, &here) != CF_MODULE_OWNER || here != o) break;
        for_caller = for_caller || cf_owner_allocates_for_caller(f->function);
    }
    return for_caller ? (int)i : -1;
}

enum cf_owner cf_owner_of_stack(unsigned n, cf_owner_frame_fn frame, void *ctx, bool graph)
{
    if (graph) return CF_OWNER_GRAPHS;
    struct cf_owner_frame f;
    enum cf_owner o;
    for (unsigned i = 0; i < n && frame(ctx, i, false, &f);) {
        if (f.python) return CF_OWNER_USER;
        if (f.path[0] == '\0') return CF_OWNER_UNKNOWN; /* JIT code or a stripped mapping */
        enum cf_owner_module m = cf_owner_of_module(f.path, &o);
        if (m == CF_MODULE_PLAIN) return CF_OWNER_USER;
        if (m == CF_MODULE_PASS) {
            i++;
            continue;
        }
        int past =
            cf_owner_info[o].library ? past_allocating_for_caller(n, frame, ctx, i, o, &f) : -1;
        if (past < 0 || (unsigned)past >= n) return o;
        i = (unsigned)past;
    }
    return CF_OWNER_UNKNOWN; /* no frame past the runtime: stacks off or cut short */
}

/* ---- a snapshot's sites ---- */

cf_owner_path_fn cf_owner_path_resolver;

/* In the process: the loader's path of the object (the program's has none: its
 * name as the loader knows it), and the dynamic symbol's name. */
static void loader_frame(uintptr_t addr, bool want_function, struct cf_owner_frame *out)
{
    Dl_info di;
    struct link_map *lm = NULL;
    /* addr - 1: a return address may already belong to the next function. */
    if (dladdr1((void *)(addr - 1), &di, (void **)&lm, RTLD_DL_LINKMAP) == 0) return;
    const char *path = lm && lm->l_name && lm->l_name[0] ? lm->l_name : di.dli_fname;
    snprintf(out->path, sizeof out->path, "%s", path && path[0] ? path : "(program)");
    if (want_function && di.dli_sname)
        snprintf(out->function, sizeof out->function, "%s", di.dli_sname);
}

struct site_frames {
    const struct cf_snap *s;
    uintptr_t frames[CF_MAX_FRAMES];
    unsigned n;
};

static bool site_frame(void *ctx, unsigned i, bool want_function, struct cf_owner_frame *out)
{
    const struct site_frames *c = ctx;
    if (i >= c->n) return false;
    uintptr_t fr = c->frames[i];
    out->path[0] = out->function[0] = '\0';
    out->python = cf_frame_is_python(fr);
    if (out->python) return true;
    const struct cf_sym *sym = cf_symtab_find(&c->s->syms, fr);
    if (sym && sym->path[0]) {
        snprintf(out->path, sizeof out->path, "%s", sym->path);
        snprintf(out->function, sizeof out->function, "%s",
                 sym->symbol[0] ? sym->symbol : sym->function);
    } else if (cf_owner_path_resolver) {
        if (cf_owner_path_resolver(fr, out->path, sizeof out->path) != 0) out->path[0] = '\0';
        if (want_function && out->path[0] && c->s->syms.resolver) {
            struct cf_sym named = {.addr = fr};
            c->s->syms.resolver(&named);
            snprintf(out->function, sizeof out->function, "%s",
                     named.symbol[0] ? named.symbol : named.function);
        }
    } else {
        loader_frame(fr, want_function, out);
    }
    return true;
}

/* Graph memory: a graph API's site, or one that allocated while its stream was
 * capturing (freed since, or live at the report: every such allocation was
 * counted in graph_calls as it was made). */
static bool graph_site(const struct cf_site *st)
{
    return cf_api_info[st->api].kind == CF_KIND_GRAPH || st->graph_calls > 0;
}

static bool device_memory(enum cf_kind kind)
{
    return kind != CF_KIND_HOST && kind != CF_KIND_MANAGED;
}

static void count_site(struct cf_snap *s, unsigned i)
{
    const struct cf_site *st = &s->sites[i];
    if (!device_memory(cf_api_info[st->api].kind)) return;
    struct cf_owner_view *v = &s->owners[s->site_owner[i]];
    v->sites++;
    v->peak_live += st->peak_live_bytes;
    v->live += st->live_bytes;
    v->allocations += st->calls;
    v->bytes += st->bytes;
}

int cf_owners_compute(struct cf_snap *s)
{
    memset(s->owners, 0, sizeof s->owners);
    s->site_owner = malloc(s->nsites + 1);
    if (s->site_owner == NULL) return -1;
    struct site_frames c = {.s = s};
    for (unsigned i = 0; i < s->nsites; i++) {
        const struct cf_site *st = &s->sites[i];
        c.n = 0;
        for (unsigned f = 0; f < st->nframes && c.n < CF_MAX_FRAMES; f++)
            if (!cf_frame_is_marker(st->frames[f])) c.frames[c.n++] = st->frames[f];
        s->site_owner[i] = (uint8_t)cf_owner_of_stack(c.n, site_frame, &c, graph_site(st));
        count_site(s, i);
    }
    /* Allocations live at the report that had no call site. */
    for (unsigned i = 0; i < s->nleaks; i++)
        if (s->leaks[i].site < 0 && device_memory(s->leaks[i].kind))
            s->owners[CF_OWNER_UNKNOWN].live += s->leaks[i].bytes;
    for (int o = 0; o < CF_OWNER_COUNT; o++) {
        struct cf_owner_view *v = &s->owners[o];
        uint64_t held = v->peak_live < s->total_peak_live ? v->peak_live : s->total_peak_live;
        v->share = s->total_peak_live ? (double)held / (double)s->total_peak_live : 0;
    }
    return 0;
}

enum cf_owner cf_snap_site_owner(const struct cf_snap *s, int site)
{
    if (site < 0 || (unsigned)site >= s->nsites || s->site_owner == NULL) return CF_OWNER_UNKNOWN;
    return (enum cf_owner)s->site_owner[site];
}
