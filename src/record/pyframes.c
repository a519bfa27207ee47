/* Python frames of an allocation. For the CPython versions whose layout is known
 * (3.10 to 3.13) the allocating thread's frames are read from memory
 * (pyread.c), with or without the GIL. For others, CPython's C API is used, only
 * on a thread that holds the GIL of the main interpreter. The API is found at run
 * time with dlsym(RTLD_DEFAULT) -- libpython is never linked; cudafrag never
 * takes the GIL and never calls the interpreter from a thread that does not hold
 * it. The frames are merged into the native stack where the interpreter's eval
 * loop (_PyEval_EvalFrameDefault) is, as memray's native mode does, as
 * CF_FRAME(CF_PY_MODULE, id) values whose (file, function, line) are interned
 * here in cudafrag's own memory. docs/python-frames.md says how, and why each
 * call into the interpreter and each read is safe. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "base/real.h"
#include "record/internal.h"
#include "record/pyintern.h"
#include "base/log.h"

/* The C API used; pointers are opaque here (no Python.h). */
struct py_api {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    void *(*this_thread_state)(void);
    void *(*current_state)(void);
    void *(*thread_frame)(void *tstate);
    void *(*frame_code)(void *frame);
    int (*frame_line)(void *frame);
    void *(*frame_back)(void *frame);
    void (*incref)(void *obj);
    void (*decref)(void *obj);
    int (*gc_disable)(void);
    int (*gc_enable)(void);
    void (*err_fetch)(void **type, void **value, void **tb);
    void (*err_restore)(void *type, void *value, void *tb);
    void (*err_clear)(void);
    void *(*getattr)(void *obj, const char *name);
    const char *(*utf8)(void *str, ssize_t *len);
    /* Optional (3.11+): a frame's instruction, so that a known one skips the
     * line-table scan. */
    int (*frame_lasti)(void *frame);
    int (*addr2line)(void *code, int lasti);
    /* Py_IsFinalizing (3.13) or _Py_IsFinalizing: an atomic read of _PyRuntime. */
    int (*finalizing)(void);
};

/* Two names where CPython renamed a function (3.13: PyThreadState_GetUnchecked). */
static const struct {
    const char *name, *old_name;
    size_t offset;
} py_symbols[] = {
    {"Py_IsInitialized", NULL, offsetof(struct py_api, is_initialized)},
    {"PyGILState_Check", NULL, offsetof(struct py_api, gil_check)},
    {"PyGILState_GetThisThreadState", NULL, offsetof(struct py_api, this_thread_state)},
    {"PyThreadState_GetUnchecked", "_PyThreadState_UncheckedGet",
     offsetof(struct py_api, current_state)},
    {"PyThreadState_GetFrame", NULL, offsetof(struct py_api, thread_frame)},
    {"PyFrame_GetCode", NULL, offsetof(struct py_api, frame_code)},
    {"PyFrame_GetLineNumber", NULL, offsetof(struct py_api, frame_line)},
    {"PyFrame_GetBack", NULL, offsetof(struct py_api, frame_back)},
    {"Py_IncRef", NULL, offsetof(struct py_api, incref)},
    {"Py_DecRef", NULL, offsetof(struct py_api, decref)},
    {"PyGC_Disable", NULL, offsetof(struct py_api, gc_disable)},
    {"PyGC_Enable", NULL, offsetof(struct py_api, gc_enable)},
    {"PyErr_Fetch", NULL, offsetof(struct py_api, err_fetch)},
    {"PyErr_Restore", NULL, offsetof(struct py_api, err_restore)},
    {"PyErr_Clear", NULL, offsetof(struct py_api, err_clear)},
    {"PyObject_GetAttrString", NULL, offsetof(struct py_api, getattr)},
    {"PyUnicode_AsUTF8AndSize", NULL, offsetof(struct py_api, utf8)},
};

enum load_state { UNTRIED, LOADING, READY, ABSENT };

static struct py_api py;
static int load_state = UNTRIED;
static uint32_t py_depth = 16;
static uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
/* 3.11+: one C-level eval loop runs Python-to-Python calls inline. */
static bool inline_calls;
static unsigned long py_version; /* PY_VERSION_HEX */
/* The frames are read from memory (pyread.c); else through the C API. */
static bool raw_frames;
static bool py_memory = true; /* CUDAFRAG_PYTHON_MEMORY */

void cf_py_configure(int depth, bool memory)
{
    py_memory = memory;
    py_depth = depth < 0 ? 0 : depth > CF_MAX_FRAMES ? CF_MAX_FRAMES : (uint32_t)depth;
}

static void find_optional(void)
{
    void *fin = cf_real_dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
    if (fin == NULL) fin = cf_real_dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
    memcpy(&py.finalizing, &fin, sizeof fin);
    void *lasti = cf_real_dlsym(RTLD_DEFAULT, "PyFrame_GetLasti");
    void *addr2line = cf_real_dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    if (lasti && addr2line) {
        memcpy(&py.frame_lasti, &lasti, sizeof lasti);
        memcpy(&py.addr2line, &addr2line, sizeof addr2line);
    }
}

static bool find_api(void)
{
    for (size_t i = 0; i < sizeof py_symbols / sizeof py_symbols[0]; i++) {
        void *p = cf_real_dlsym(RTLD_DEFAULT, py_symbols[i].name);
        if (p == NULL && py_symbols[i].old_name)
            p = cf_real_dlsym(RTLD_DEFAULT, py_symbols[i].old_name);
        if (p == NULL) return false;
        memcpy((char *)&py + py_symbols[i].offset, &p, sizeof p);
    }
    return true;
}

/* The eval loop's extent from its symbol's size, so a return address is
 * recognised with two comparisons on the hot path. */
static void find_eval_loop(void)
{
    void *f = cf_real_dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        eval_lo = (uintptr_t)f;
        eval_hi = eval_lo + sym->st_size;
    }
    /* Py_Version is 3.11+; what has PyGC_Disable (3.10+) and not it is 3.10. */
    const unsigned long *version = cf_real_dlsym(RTLD_DEFAULT, "Py_Version");
    py_version = version ? *version : 0x030a0000ul;
    inline_calls = py_version >= 0x030b0000ul;
}

static void load_python(void)
{
    /* PyGC_Disable (3.10) is the newest function needed: older interpreters lack it. */
    bool ok = find_api();
    if (ok) {
        find_eval_loop();
        find_optional();
        raw_frames = py_memory && cf_pyread_setup(py_version);
    } else if (cf_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
        cf_warn_once("python-old", "this Python is older than 3.10: no Python frames are recorded");
    (void)dlerror(); /* a failed lookup must not confuse the program's own dlerror() */
    __atomic_store_n(&load_state, ok ? READY : ABSENT, __ATOMIC_RELEASE);
}

/* Looked up once; a thread arriving during the lookup records no Python frames
 * rather than wait (it might hold the loader lock dlsym needs). */
static bool python_ready(void)
{
    int st = __atomic_load_n(&load_state, __ATOMIC_ACQUIRE);
    if (CF_LIKELY(st == READY)) return true;
    if (st != UNTRIED) return false;
    int expected = UNTRIED;
    if (!__atomic_compare_exchange_n(&load_state, &expected, LOADING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    load_python();
    return __atomic_load_n(&load_state, __ATOMIC_ACQUIRE) == READY;
}

/* ---- frames through the C API ---- */

static uint64_t line_of(int line)
{
    return line > 0 ? (uint64_t)line : 0;
}

/* With the interning lock held: the id of a frame whose code object is known, 0 when it is
 * not. PyCode_Addr2Line, called here, only reads the code's line table: it takes
 * no lock, allocates nothing and runs no Python code. */
static uint32_t known_frame(struct py_at *at, const struct py_loc **fresh)
{
    uint32_t id = cf_pyi_pc_find(at);
    struct py_name *name = id ? NULL : cf_pyi_code_name((uintptr_t)at->code);
    if (id || name == NULL) return id;
    if (at->lasti >= 0) at->line = line_of(py.addr2line(at->code, at->lasti));
    bool is_new = false;
    struct py_loc *l = cf_pyi_loc_get(name, at->line, 0, &is_new);
    if (l == NULL) return CF_PY_UNNAMED;
    cf_pyi_pc_add(at, cf_pyi_loc_id(l));
    if (is_new) *fresh = l;
    return cf_pyi_loc_id(l);
}

/* The ids of the frames whose code objects are known, under one lock; 0 for the
 * others. */
static void known_frames(struct py_at *at, uint32_t n, uint32_t *ids)
{
    const struct py_loc *fresh[CF_MAX_FRAMES] = {0};
    cf_py_lock();
    for (uint32_t i = 0; i < n; i++)
        ids[i] = known_frame(&at[i], &fresh[i]);
    cf_py_unlock();
    for (uint32_t i = 0; i < n && cf_trace_on(); i++)
        if (fresh[i]) cf_pyi_emit(fresh[i]);
}

/* A code attribute as UTF-8 into out (the end of it when too long); its length,
 * or -1. With the GIL held; an exception raised here is dropped by the caller. */
static int code_attr(void *code, const char *attr, char *out, size_t cap, bool keep_end)
{
    void *s = py.getattr(code, attr);
    if (s == NULL) {
        py.err_clear();
        return -1;
    }
    ssize_t len = 0;
    const char *u = py.utf8(s, &len);
    int n = -1;
    if (u && len >= 0) {
        size_t take = (size_t)len < cap - 1 ? (size_t)len : cap - 1;
        memcpy(out, keep_end ? u + len - take : u, take);
        out[take] = '\0';
        n = (int)take;
    } else {
        py.err_clear();
    }
    py.decref(s);
    return n;
}

/* "file\0function\0" of a code object: co_qualname (3.11+) or co_name. */
static uint32_t code_names(void *code, char *text, uint32_t *file_len)
{
    int f = code_attr(code, "co_filename", text, PY_FILE_MAX, true);
    if (f < 0) return 0;
    char *fn = text + f + 1;
    int n = code_attr(code, "co_qualname", fn, PY_FUNC_MAX, false);
    if (n < 0) n = code_attr(code, "co_name", fn, PY_FUNC_MAX, false);
    if (n < 0) return 0;
    *file_len = (uint32_t)f;
    return (uint32_t)(f + n + 2);
}

/* The first time a code object allocates: its names, and one reference so that
 * its address, the key, cannot be reused by another code object. */
static uint32_t new_code_frame(struct py_at *at)
{
    char text[PY_FILE_MAX + PY_FUNC_MAX];
    uint32_t file_len = 0, len = code_names(at->code, text, &file_len);
    if (len == 0) return CF_PY_UNNAMED;
    if (at->lasti >= 0) at->line = line_of(py.addr2line(at->code, at->lasti));
    bool fresh = false, keep = false;
    cf_py_lock();
    struct py_name *name = cf_pyi_name_add(text, len, file_len);
    struct py_loc *l = NULL;
    if (name) {
        keep = cf_pyi_code_add((uintptr_t)at->code, name);
        l = cf_pyi_loc_get(name, at->line, 0, &fresh);
    }
    if (l && keep) cf_pyi_pc_add(at, cf_pyi_loc_id(l));
    cf_py_unlock();
    if (keep) py.incref(at->code);
    if (l && fresh && cf_trace_on()) cf_pyi_emit(l);
    return l ? cf_pyi_loc_id(l) : CF_PY_UNNAMED;
}

/* ---- reading this thread's frames ---- */

/* This thread's own thread state when it holds the GIL of the main interpreter,
 * else NULL with *why set (0: no interpreter running, nothing to say). All four
 * calls are documented as callable without the GIL. */
static void *gil_holder(uint32_t *why)
{
    *why = 0;
    if (!py.is_initialized()) return NULL;
    void *mine = py.this_thread_state();
    if (py.gil_check() && mine != NULL && py.current_state() == mine) return mine;
    *why = mine ? CF_PY_GIL_RELEASED : CF_PY_NO_FRAMES;
    return NULL;
}

/* The thread's frames, innermost first, each with a new reference to its code. */
static uint32_t walk(void *tstate, struct py_at *at, uint32_t max)
{
    uint32_t n = 0;
    void *f = py.thread_frame(tstate);
    while (f && n < max) {
        at[n].code = py.frame_code(f);
        at[n].lasti = py.frame_lasti ? py.frame_lasti(f) : -1;
        at[n].line = at[n].lasti < 0 ? line_of(py.frame_line(f)) : 0;
        n++;
        void *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f) py.decref(f);
    return n;
}

/* With the GIL held. Collection is off meanwhile: frame objects the walk creates
 * (3.11+) must not run a garbage collection, which could run finalizers, i.e.
 * Python code. The thread's pending exception, if any, is kept as it was. */
static uint32_t read_frames(void *tstate, uintptr_t *out, uint32_t max)
{
    void *type, *value, *tb;
    struct py_at at[CF_MAX_FRAMES];
    uint32_t ids[CF_MAX_FRAMES];
    py.err_fetch(&type, &value, &tb);
    int gc_was_on = py.gc_disable();
    uint32_t n = walk(tstate, at, max);
    known_frames(at, n, ids);
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] == 0) ids[i] = new_code_frame(&at[i]);
        out[i] = (uintptr_t)CF_FRAME(CF_PY_MODULE, ids[i]);
        py.decref(at[i].code);
    }
    if (gc_was_on) py.gc_enable();
    py.err_restore(type, value, tb);
    return n;
}

static bool is_eval(uintptr_t pc)
{
    return pc - 1 >= eval_lo && pc - 1 < eval_hi;
}

/* How many Python frames, from used on, the next eval frame runs: up to the
 * next that ends a C call of the eval loop when that is known (frames read from
 * memory). Through the C API it is not: up to 3.10 each eval frame runs one;
 * from 3.11 each takes one and the outermost takes the rest. */
static uint32_t eval_share(const bool *ends, uint32_t used, uint32_t np, bool outermost)
{
    if (ends == NULL) return inline_calls && outermost ? np - used : 1;
    uint32_t take = 1;
    while (used + take < np && !ends[used + take - 1])
        take++;
    return take;
}

/* Python frames (innermost first) in place of the eval loop's native frames.
 * Frames beyond the native stack's end go last. */
static uint32_t merge(uintptr_t *frames, uint32_t n, uint32_t max, const uintptr_t *pyf,
                      const bool *ends, uint32_t np)
{
    uintptr_t native[CF_MAX_FRAMES];
    memcpy(native, frames, n * sizeof *frames);
    uint32_t last_eval = n, out = 0, used = 0;
    for (uint32_t i = 0; i < n; i++)
        if (is_eval(native[i])) last_eval = i;
    for (uint32_t i = 0; i < n && out < max; i++) {
        if (!is_eval(native[i]) || used == np) {
            frames[out++] = native[i];
            continue;
        }
        uint32_t take = eval_share(ends, used, np, i == last_eval);
        for (; take > 0 && out < max; take--)
            frames[out++] = pyf[used++];
    }
    while (used < np && out < max)
        frames[out++] = pyf[used++];
    return out;
}

/* Why a thread in a Python process has no Python frames, as its outermost frame. */
static uint32_t add_marker(uintptr_t *frames, uint32_t n, uint32_t max, uint32_t why)
{
    if (n == max) n--;
    frames[n++] = (uintptr_t)CF_FRAME(CF_PY_MODULE, why);
    return n;
}

/* This thread's own thread state, or 0: from 3.12 the one it has attached (a
 * thread-local, 0 while the GIL is released), else the one the GIL-state API
 * bound to it (a thread-specific-storage read). Neither takes a lock. */
static uintptr_t own_tstate(void)
{
    void *t = py_version >= 0x030c0000ul ? py.current_state() : NULL;
    return (uintptr_t)(t ? t : py.this_thread_state());
}

/* The frames read from memory, merged; UINT32_MAX when they look wrong (the C
 * API is then used if the thread holds the GIL). */
static uint32_t raw_merge(uintptr_t *frames, uint32_t n, uint32_t max)
{
    uintptr_t tstate = own_tstate();
    struct cf_py_raw raw[CF_MAX_FRAMES];
    int np = tstate ? cf_pyread_walk(tstate, raw, py_depth) : 0;
    if (np < 0) {
        cf_warn_once("python-layout",
                     "this Python's frames do not look like CPython %lu.%lu's: "
                     "Python frames are recorded only while the GIL is held",
                     py_version >> 24, (py_version >> 16) & 0xff);
        return UINT32_MAX;
    }
    if (np == 0) return add_marker(frames, n, max, CF_PY_NO_FRAMES);
    uintptr_t pyf[CF_MAX_FRAMES];
    bool ends[CF_MAX_FRAMES];
    cf_pyi_raw_frame_ids(raw, (uint32_t)np, pyf);
    for (int i = 0; i < np; i++)
        ends[i] = raw[i].ends_entry;
    return merge(frames, n, max, pyf, ends, (uint32_t)np);
}

uint32_t cf_py_merge(uintptr_t *frames, uint32_t n, uint32_t max)
{
    if (py_depth == 0 || max == 0 || !python_ready()) return n;
    /* Past the start of finalization another thread may free thread states. */
    if (!py.is_initialized() || (py.finalizing && py.finalizing())) return n;
    if (raw_frames) {
        uint32_t got = raw_merge(frames, n, max);
        if (got != UINT32_MAX) return got;
    }
    uint32_t why;
    void *tstate = gil_holder(&why);
    uintptr_t pyf[CF_MAX_FRAMES];
    uint32_t np = tstate ? read_frames(tstate, pyf, py_depth) : 0;
    if (np) return merge(frames, n, max, pyf, NULL, np);
    if (tstate) why = CF_PY_NO_FRAMES;
    return why ? add_marker(frames, n, max, why) : n;
}
