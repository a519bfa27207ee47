/* The entry points the hooks call after each real CUDA call (and before a free),
 * and the locking the report and fork() need. Order on the hot path: unwind (no
 * lock), site (site lock), live table and device counters (one shard lock), then
 * sampling (no lock). */
#include <string.h>

#include "config/config.h"
#include "record/internal.h"
#include "record/meta_alloc.h"

struct cf_record cf_rec;

const struct cf_api_info cf_api_info[CF_API_COUNT] = {
#define CF_API_ROW(id, kind, role) [CF_API_##id] = {#id, CF_KIND_##kind, #role[0]},
    CF_APIS(CF_API_ROW)
#undef CF_API_ROW
};

const char *const cf_kind_name[CF_KIND_COUNT] = {
#define CF_KIND_ROW(id, str) [CF_KIND_##id] = str,
    CF_KINDS(CF_KIND_ROW)
#undef CF_KIND_ROW
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_record(void)
{
    cf_config_load();
    cf_rec.start_ns = cf_now_ns();
    cf_stack_configure((int)cf_opt_int(CF_OPT_STACK_DEPTH));
    cf_sample_configure((uint64_t)cf_opt_int(CF_OPT_SAMPLE_MS) * 1000000u);
    pthread_atfork(cf_rec_atfork_prepare, cf_rec_atfork_parent, cf_rec_atfork_child);
}

void cf_rec_init(void)
{
    /* No constructor is needed: a hook may fire before constructors run, and every
     * lock of the record is statically initialised. */
    pthread_once(&init_once, init_record);
}

static struct cf_alloc *new_alloc(const struct cf_alloc_info *ai, int device, struct cf_site *site,
                                  uint64_t now)
{
    struct cf_alloc *a = cf_meta_alloc(sizeof *a);
    if (a == NULL) return NULL;
    memset(a, 0, sizeof *a);
    a->addr = ai->addr;
    a->api = ai->api;
    a->kind = ai->graph ? CF_KIND_GRAPH : cf_api_info[ai->api].kind;
    a->requested = ai->requested;
    a->granted = ai->granted;
    if (a->granted == 0 && a->kind == CF_KIND_DEVICE && !ai->arena &&
        a->api != CF_API_cudaMallocArray && a->api != CF_API_cudaMalloc3DArray) {
        a->granted = cf_rec_estimate_granted(ai->requested);
        a->granted_estimated = true;
    }
    a->device = device;
    a->tid = cf_tid();
    a->stream = ai->stream;
    a->pool = ai->pool;
    a->t_ns = now;
    a->arena = ai->arena;
    a->site = site;
    return a;
}

__attribute__((noinline)) void cf_rec_alloc(const struct cf_alloc_info *ai)
{
    cf_rec_init();
    uint64_t now = cf_now_ns();
    uintptr_t frames[CF_MAX_FRAMES];
    uint32_t nframes = cf_stack_capture(frames, (uintptr_t)__builtin_return_address(0));
    uint64_t hash = cf_stack_hash(frames, nframes, ai->api);
    bool ok = ai->result == 0;
    cf_metrics_api(ai->api, ok ? ai->requested : 0, !ok, ai->ns);
    if (ok && ai->addr == 0) return; /* a zero-byte request: nothing was allocated */
    int device = cf_sample_resolve_device(ai->device);
    struct cf_site *site = cf_site_alloc(hash, ai->api, frames, nframes, ai->requested, ok, now);
    if (!ok) {
        if (ai->oom) cf_sample_oom(ai, device, site, now);
        return;
    }
    struct cf_alloc *a = new_alloc(ai, device, site, now);
    if (a == NULL) return;
    if (a->kind == CF_KIND_GRAPH) {
        __atomic_add_fetch(&cf_rec.graph.alloc_nodes, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&cf_rec.graph.node_bytes, a->requested, __ATOMIC_RELAXED);
    }
    if (a->kind == CF_KIND_POOL && a->pool) cf_pool_account(a->pool, device, (int64_t)a->requested);
    cf_metrics_size(a->requested);
    struct cf_alloc copy = *a; /* once inserted, another thread may free a */
    bool new_peak = cf_live_insert(a);
    cf_sample_after_alloc(&copy, new_peak, now);
}

void cf_rec_retire(struct cf_alloc *a, uint64_t now)
{
    uint64_t lifetime = now > a->t_ns ? now - a->t_ns : 0;
    if (a->site) cf_site_free(a->site, a->requested, lifetime);
    if (a->kind == CF_KIND_POOL && a->pool)
        cf_pool_account(a->pool, a->device, -(int64_t)a->requested);
    cf_metrics_lifetime(lifetime, a->requested);
    cf_meta_free(a, sizeof *a);
}

struct cf_alloc *cf_rec_free_begin(uint64_t addr)
{
    cf_rec_init();
    return addr ? cf_live_remove(addr) : NULL;
}

bool cf_rec_free_end(enum cf_api api, uint64_t addr, struct cf_alloc *a, int result)
{
    cf_rec_init();
    if (cf_api_info[api].kind == CF_KIND_GRAPH)
        __atomic_add_fetch(&cf_rec.graph.free_nodes, 1, __ATOMIC_RELAXED);
    if (result != 0 || addr == 0) { /* freeing NULL is a valid no-op */
        if (a) cf_live_restore(a);
        cf_metrics_api(api, 0, result != 0, 0);
        return false;
    }
    if (a == NULL) {
        cf_metrics_api(api, 0, false, 0);
        __atomic_add_fetch(&cf_rec.unknown_frees, 1, __ATOMIC_RELAXED);
        return false;
    }
    cf_metrics_api(api, a->requested, false, 0);
    cf_rec_retire(a, cf_now_ns());
    return true;
}

bool cf_rec_free(enum cf_api api, uint64_t addr, int result)
{
    return cf_rec_free_end(api, addr, result == 0 ? cf_rec_free_begin(addr) : NULL, result);
}

void cf_rec_call(enum cf_api api, int result)
{
    cf_rec_init();
    cf_metrics_api(api, 0, result != 0, 0);
}

void cf_rec_add_ns(enum cf_api api, uint64_t ns)
{
    __atomic_add_fetch(&cf_rec.api[api].ns_total, ns, __ATOMIC_RELAXED);
}

bool cf_rec_any_activity(void)
{
    for (unsigned i = 0; i < CF_API_COUNT; i++)
        if (__atomic_load_n(&cf_rec.api[i].calls, __ATOMIC_RELAXED)) return true;
    return false;
}

/* Every record lock, in one order, for the report and for fork. */
static void lock_tables(void)
{
    cf_site_lock();
    cf_live_lock_all();
    cf_pool_lock();
    cf_sample_lock_all();
}

static void unlock_tables(void)
{
    cf_sample_unlock_all();
    cf_pool_unlock();
    cf_live_unlock_all();
    cf_site_unlock();
}

void cf_rec_lock_all(void)
{
    cf_rec_init();
    lock_tables();
    cf_live_build_view();
}

void cf_rec_unlock_all(void)
{
    cf_live_drop_view();
    unlock_tables();
}

/* The meta allocator's locks come last: they nest inside every record lock. */
void cf_rec_atfork_prepare(void)
{
    lock_tables();
    cf_meta_lock_all();
}

void cf_rec_atfork_parent(void)
{
    cf_meta_unlock_all();
    unlock_tables();
}

void cf_rec_atfork_child(void)
{
    cf_meta_unlock_all();
    unlock_tables();
    cf_tid_forget();
    cf_stack_after_fork_child();
}
