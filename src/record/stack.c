/* Call stacks through libunwind, loaded privately. Debian's libunwind.so.8 exports
 * the _Unwind_* ABI (and backtrace); linked or loaded into the global scope it
 * would replace libgcc_s's C++ exception unwinder in every profiled program. So it
 * is dlopen'ed RTLD_LOCAL and only unw_backtrace is used.
 *
 * Unwinding runs on the application's stack, which may be small (threads of
 * 16 KiB that run natively). So libunwind is loaded at init, on the main thread,
 * with its symbols bound at once (RTLD_NOW: a lazy binding takes a few KiB of
 * stack at the first call of each function) and one unwind made there; and an
 * allocation is recorded without a stack where the thread has too little left. */
#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include "base/real.h"
#include "base/thread_state.h"
#include "record/internal.h"
#include "base/log.h"

/* Extra frames asked for, to make room for cudafrag's own frames that are skipped. */
#define OWN_FRAMES_SLACK 16

/* Stack an unwind needs below cf_stack_capture's frame, with libunwind bound: on a
 * thread of 16 KiB 5.3 KiB were left there and the unwind overflowed it, on one of
 * 17 KiB 6.2 KiB were and it did not (x86-64, glibc 2.36); 8 KiB leaves room for
 * CPUs with a larger register save area. Loading libunwind (dlopen) takes more. */
#define UNWIND_STACK_NEED (8u << 10)
#define LOAD_STACK_NEED   (64u << 10)

enum load_state { UNTRIED, LOADING, READY, UNAVAILABLE };

typedef int (*unw_backtrace_fn)(void **buffer, int size);
static unw_backtrace_fn unw_bt;
static int load_state = UNTRIED;
static uint32_t loader_tid; /* the thread inside the load */
static int stack_depth = 16;
/* cudafrag's own text when it is a shared object; empty when it is linked into
 * the program (tests), where only the frames below `caller` are ours. */
static uintptr_t own_lo, own_hi;

void cf_stack_configure(int depth)
{
    stack_depth = depth < 0 ? 0 : depth > CF_MAX_FRAMES ? CF_MAX_FRAMES : depth;
}

struct own_search {
    uintptr_t probe, lo, hi;
    bool found, is_program;
    int index;
};

static int find_own_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct own_search *s = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo) lo = start;
        if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
    }
    int index = s->index++;
    if (s->probe < lo || s->probe >= hi) return 0;
    /* The first object dl_iterate_phdr reports is the program itself. */
    *s = (struct own_search){
        .probe = s->probe, .lo = lo, .hi = hi, .found = true, .is_program = index == 0};
    return 1;
}

static void find_own_text(void)
{
    struct own_search s = {.probe = (uintptr_t)&cf_stack_capture};
    dl_iterate_phdr(find_own_module, &s);
    if (s.found && !s.is_program) own_lo = s.lo, own_hi = s.hi;
}

static void *open_libunwind(void)
{
    /* The real dlopen: cudafrag's own dlopen override is for the application. */
    void *(*real_dlopen)(const char *, int) =
        (void *(*)(const char *, int))cf_real_dlsym(RTLD_NEXT, "dlopen");
    if (real_dlopen == NULL) real_dlopen = dlopen;
    void *h = real_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return h ? h : real_dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
}

static void load_libunwind(void)
{
    find_own_text();
    void *h = open_libunwind();
    unw_backtrace_fn fn = NULL;
    if (h) {
        fn = (unw_backtrace_fn)cf_real_dlsym(h, "unw_backtrace");
        if (fn == NULL) fn = (unw_backtrace_fn)cf_real_dlsym(h, "_ULx86_64_unw_backtrace");
    }
    if (fn == NULL) {
        cf_rec.stacks_unavailable = true;
        cf_warn_once("no-libunwind", "libunwind.so.8 not usable; call sites are keyed by API only");
        __atomic_store_n(&load_state, UNAVAILABLE, __ATOMIC_RELEASE);
        return;
    }
    unw_bt = fn;
    __atomic_store_n(&load_state, READY, __ATOMIC_RELEASE);
}

/* One thread loads; a thread arriving meanwhile (or the loading thread re-entering
 * through a hook fired by dlopen) records no frames rather than wait: it might
 * hold the loader lock the loading thread needs. */
static bool libunwind_ready(void)
{
    int st = __atomic_load_n(&load_state, __ATOMIC_ACQUIRE);
    if (CF_LIKELY(st == READY)) return true;
    if (st != UNTRIED || cf_stack_room() < LOAD_STACK_NEED) return false;
    int expected = UNTRIED;
    if (!__atomic_compare_exchange_n(&load_state, &expected, LOADING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    __atomic_store_n(&loader_tid, cf_tid(), __ATOMIC_RELAXED);
    load_libunwind();
    return __atomic_load_n(&load_state, __ATOMIC_ACQUIRE) == READY;
}

static bool is_own_frame(uintptr_t pc)
{
    return pc >= own_lo && pc < own_hi;
}

/* At init, on the thread that loads the library (the main one, with the most
 * stack the program has): libunwind loaded, and one unwind, so that whatever it
 * sets up on its first call is not set up on a small stack. */
void cf_stack_warm_up(void)
{
    uintptr_t frames[CF_MAX_FRAMES];
    if (stack_depth > 0) cf_stack_capture(frames, 0);
}

CF_HOT int cf_stack_capture(uintptr_t frames[CF_MAX_FRAMES], uintptr_t caller)
{
    if (stack_depth == 0) return 0;
    if (CF_UNLIKELY(cf_stack_room() < UNWIND_STACK_NEED)) return -1;
    if (!libunwind_ready()) return 0;
    void *raw[CF_MAX_FRAMES + OWN_FRAMES_SLACK];
    int n = unw_bt(raw, stack_depth + OWN_FRAMES_SLACK);
    int first = 0;
    for (int i = 0; i < n; i++)
        if ((uintptr_t)raw[i] == caller) {
            first = i;
            break;
        }
    while (first < n && is_own_frame((uintptr_t)raw[first]))
        first++;
    int count = 0;
    for (int i = first; i < n && count < stack_depth; i++)
        frames[count++] = (uintptr_t)raw[i];
    return count;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t cf_stack_hash(const uintptr_t *frames, uint32_t n, enum cf_api api)
{
    /* Without frames the API is the site; with frames the stack alone is. */
    if (n == 0) return mix64(0xcf00000000ull + (uint64_t)api);
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = 0; i < n; i++)
        h = mix64(h ^ frames[i]);
    return h;
}

/* A fork while another thread is inside our dlopen of libunwind would give the
 * child a dynamic linker in the middle of that dlopen and a library whose
 * constructor never finished: the child's next dlopen (ours or the program's)
 * then trips ld.so's assertions. So fork waits for the load, which takes
 * milliseconds -- bounded, in case the loading thread waits for something the
 * forking thread holds (a lock another prepare handler took). */
void cf_stack_before_fork(void)
{
    const struct timespec tick = {0, 1000 * 1000};
    for (int ms = 0; ms < 5000; ms++) {
        if (__atomic_load_n(&load_state, __ATOMIC_ACQUIRE) != LOADING) return;
        if (__atomic_load_n(&loader_tid, __ATOMIC_RELAXED) == cf_tid()) return;
        nanosleep(&tick, NULL);
    }
}

void cf_stack_after_fork_child(void)
{
    /* A load still under way (the wait gave up) never finishes in the child, and
     * trying again there is what must not happen: this process records no
     * stacks. */
    if (__atomic_load_n(&load_state, __ATOMIC_ACQUIRE) != LOADING) return;
    __atomic_store_n(&load_state, UNAVAILABLE, __ATOMIC_RELEASE);
    cf_rec.stacks_unavailable = true;
}
