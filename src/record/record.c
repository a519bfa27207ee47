/* The record's one door: every public cf_rec_* entry point is here, and each
 * sets the record up (once) before it goes in, so that no file below calls up to
 * ask. The entry points the hooks call after each real CUDA call (and before a
 * free), the locking the report and fork() need, the replay's door. Order on the
 * hot path: unwind (no lock), site (a thread's own cache), live table, device,
 * site and pool figures (one slot lock), then sampling (no lock). */
#include <string.h>

#include "config/config.h"
#include "record/internal.h"
#include "record/read.h"
#include "base/meta_alloc.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
bool cf_rec_ready;      /* init_record has run: cf_rec_init is a load from then on */
static bool from_trace; /* cf_rec_init_from_trace: the events come from a trace */

static void init_record(void)
{
    cf_config_load();
    cf_rec.start_ns = cf_now_ns();
    cf_stack_configure((int)cf_opt_int(CF_OPT_STACK_DEPTH));
    if (!from_trace) cf_stack_warm_up();
    cf_py_configure((int)cf_opt_int(CF_OPT_STACK_DEPTH), cf_opt_bool(CF_OPT_PYTHON_MEMORY));
    cf_sample_configure((uint64_t)cf_opt_int(CF_OPT_SAMPLE_MS) * 1000000u);
    cf_fp_follow_arena(!from_trace);
    if (cf_opt_bool(CF_OPT_TRACE) && !from_trace)
        cf_trace_init((uint64_t)cf_opt_int(CF_OPT_TRACE_FLUSH_MS));
    pthread_atfork(cf_rec_atfork_prepare, cf_rec_atfork_parent, cf_rec_atfork_child);
    __atomic_store_n(&cf_rec_ready, true, __ATOMIC_RELEASE);
}

void cf_rec_init_from_trace(void)
{
    from_trace = true;
    cf_rec_init();
    cf_fp_follow_arena(false); /* also where the command set the record up before */
}

void cf_rec_init_once(void)
{
    /* No constructor is needed: a hook may fire before constructors run, and every
     * lock of the record is statically initialised. */
    pthread_once(&init_once, init_record);
}

static uint8_t alloc_flags(const struct cf_alloc_info *ai, uint64_t *granted)
{
    uint8_t flags = (uint8_t)((ai->arena ? CF_EVF_ARENA : 0) | (ai->graph ? CF_EVF_GRAPH : 0) |
                              (ai->oom ? CF_EVF_OOM : 0) | (ai->shadow ? CF_EVF_SHADOW : 0));
    enum cf_kind kind = ai->graph ? CF_KIND_GRAPH : cf_api_info[ai->api].kind;
    *granted = ai->granted;
    if (*granted == 0 && kind == CF_KIND_DEVICE && !ai->arena &&
        ai->api != CF_API_cudaMallocArray && ai->api != CF_API_cudaMalloc3DArray) {
        *granted = cf_metrics_estimate_granted(ai->requested);
        flags |= CF_EVF_ESTIMATED;
    }
    return flags;
}

/* The site of this call's stack; a new one is announced to the trace. *short_stack:
 * the thread had too little stack left to unwind (the site is the API's). */
CF_HOT static struct cf_site *site_of_stack(enum cf_api api, uintptr_t caller, bool *short_stack)
{
    uintptr_t frames[CF_MAX_FRAMES];
    int captured = cf_stack_capture(frames, caller);
    *short_stack = captured < 0;
    uint32_t nframes = captured < 0 ? 0 : (uint32_t)captured;
    if (!*short_stack) nframes = cf_py_merge(frames, nframes, CF_MAX_FRAMES);
    uint64_t hash = cf_stack_hash(frames, nframes, api);
    bool created;
    struct cf_site *site = cf_site_get(hash, api, frames, nframes, &created);
    if (created && cf_trace_on()) cf_trace_site(site);
    return site;
}

CF_HOT __attribute__((noinline)) void cf_rec_alloc(const struct cf_alloc_info *ai)
{
    cf_rec_init();
    uint64_t now = ai->t_ns ? ai->t_ns : cf_now_ns();
    bool ok = ai->result == 0;
    bool short_stack;
    struct cf_site *site =
        site_of_stack(ai->api, (uintptr_t)__builtin_return_address(0), &short_stack);
    struct cf_event e;
    cf_event_hot(&e, CF_EV_ALLOC);
    e.api = (uint8_t)ai->api;
    e.device = -1;
    e.tid = cf_tid();
    e.result = ai->result;
    e.site = site ? site->id : 0;
    e.t_ns = now;
    e.addr = ai->addr;
    e.size = ai->requested;
    e.stream = ai->stream;
    e.pool = ai->pool;
    e.ns = ai->ns;
    e.flags = (uint8_t)(alloc_flags(ai, &e.granted) | (short_stack ? CF_EVF_NO_STACK : 0));
    if (!ok || ai->addr != 0) e.device = cf_sample_resolve_device(ai->device);
    if (!ok && ai->oom) cf_sample_oom(ai->stream, e.device, &e.v[0], &e.v[1]);
    bool made = ok && ai->addr != 0;
    struct cf_alloc_brief brief = {
        .stream = ai->stream_key ? ai->stream_key : ai->stream,
        .pool = ai->pool,
        .size = ai->requested,
        .device = e.device,
        .kind = (uint8_t)((e.flags & CF_EVF_GRAPH) ? CF_KIND_GRAPH : cf_api_info[ai->api].kind)};
    /* The pool's growth that served this allocation takes its place before it. */
    enum cf_pool_grew pool = made ? cf_sample_before_alloc(&brief, now) : CF_POOL_SAME;
    bool new_peak = cf_apply_alloc(&e, site);
    cf_emit(&e);
    if (made) cf_sample_after_alloc(&brief, new_peak, pool, now);
}

/* One clock read: the free's start, taken in the slot's critical section where the
 * allocation's life ends (its site's figures change there, not in a second
 * section after the real call). The footprint reads the clock only if this
 * removal makes a new peak (0). */
CF_HOT struct cf_alloc *cf_rec_free_begin(uint64_t addr, uint64_t *t0)
{
    cf_rec_init();
    *t0 = 0;
    struct cf_alloc *a = cf_apply_free_begin(addr, 0, t0);
    if (*t0 == 0) *t0 = cf_now_ns();
    return a;
}

CF_HOT bool cf_rec_free_end(enum cf_api api, uint64_t addr, struct cf_alloc *a, int result,
                            uint64_t ns, uint64_t t_ns)
{
    cf_rec_init();
    bool known = result == 0 && addr != 0 && a != NULL;
    struct cf_event e;
    cf_event_hot(&e, CF_EV_FREE);
    e.api = (uint8_t)api;
    e.addr = addr;
    e.result = result;
    e.t_ns = t_ns ? t_ns : cf_now_ns();
    e.ns = ns;
    cf_apply_free(&e, a);
    cf_emit(&e);
    return known;
}

bool cf_rec_free(enum cf_api api, uint64_t addr, int result)
{
    uint64_t t0 = 0;
    struct cf_alloc *a = result == 0 ? cf_rec_free_begin(addr, &t0) : NULL;
    return cf_rec_free_end(api, addr, a, result, 0, t0);
}

void cf_rec_call(enum cf_api api, int result, uint64_t ns)
{
    cf_rec_init();
    struct cf_event e;
    cf_event_hot(&e, CF_EV_CALL);
    e.api = (uint8_t)api;
    e.result = result;
    e.t_ns = cf_now_ns();
    e.ns = ns;
    cf_metrics_api(api, 0, result, ns);
    cf_emit(&e);
}

static void pool_event(enum cf_pool_op op, uint64_t pool, int device, uint8_t flags, uint64_t v0)
{
    if (pool == 0) return;
    cf_rec_init();
    struct cf_event e = {.type = CF_EV_POOL,
                         .op = (uint8_t)op,
                         .flags = flags,
                         .pool = pool,
                         .device = device,
                         .t_ns = cf_now_ns(),
                         .v = {v0}};
    e.seq = cf_pool_apply_seq(&e);
    cf_emit(&e);
}

void cf_rec_pool_seen(uint64_t pool, int device, bool is_default, bool created_by_app)
{
    pool_event(CF_POOL_SEEN, pool, device, (uint8_t)(is_default | created_by_app << 1), 0);
}

void cf_rec_pool_destroyed(uint64_t pool)
{
    cf_sample_pools_may_shrink();
    pool_event(CF_POOL_DESTROYED, pool, -1, 0, 0);
}

void cf_rec_pool_threshold(uint64_t pool, uint64_t threshold)
{
    cf_sample_pools_may_shrink();
    pool_event(CF_POOL_THRESHOLD, pool, -1, 0, threshold);
}

/* The driver gives memory back in a trim: read what is left. */
void cf_rec_pool_trim(uint64_t pool)
{
    cf_sample_pools_may_shrink();
    pool_event(CF_POOL_TRIM, pool, -1, 0, 0);
    cf_sample_pool_now(pool, -1);
}

void cf_rec_pool_freed(const struct cf_alloc *a, uint64_t stream)
{
    cf_sample_pool_freed(a, stream);
}

void cf_rec_pool_thread_seen(void)
{
    cf_sample_thread_seen();
}

void cf_rec_graph_launched(uint64_t stream)
{
    cf_rec_init();
    cf_sample_graph_launched(stream);
}

bool cf_rec_sample_final(void)
{
    cf_rec_init();
    return cf_sample_final();
}

void cf_rec_synchronized(void)
{
    /* Before the first allocation there is no pool to read. */
    if (__atomic_load_n(&cf_rec_ready, __ATOMIC_ACQUIRE)) cf_sample_after_sync();
}

void cf_rec_mark(const char *text)
{
    cf_rec_init();
    size_t n = strnlen(text, 255);
    struct cf_event e = {.type = CF_EV_MARK, .t_ns = cf_now_ns(), .str = text, .len = (uint32_t)n};
    cf_apply_mark(&e);
    cf_emit(&e);
}

int cf_rec_region_push(const char *name)
{
    cf_rec_init();
    return cf_region_push(name);
}

int cf_rec_region_peak(int device, uint64_t *live, uint64_t *footprint)
{
    cf_rec_init();
    return cf_region_peak(device, live, footprint);
}

int cf_rec_region_pop(void)
{
    cf_rec_init();
    return cf_region_pop();
}

uint64_t cf_rec_estimate_granted(uint64_t requested)
{
    return cf_metrics_estimate_granted(requested);
}

bool cf_rec_any_activity(void)
{
    return cf_thread_any_activity();
}

uint64_t cf_rec_api_calls(enum cf_api api)
{
    return cf_thread_api_calls(api);
}

uint64_t cf_rec_calls_total(void)
{
    return cf_thread_calls_total();
}

void cf_rec_collect(void)
{
    cf_thread_collect();
}

bool cf_rec_collect_until(const struct timespec *deadline)
{
    return cf_thread_collect_until(deadline);
}

void cf_rec_apply_event(const struct cf_event *e)
{
    cf_rec_init();
    cf_apply_event(e);
}

/* Every record lock, in one order, for the report and for fork: the site and
 * pool tables, every slot (live tables, devices, sites' and pools' figures). */
static void lock_tables(void)
{
    cf_site_lock();
    cf_pool_lock();
    cf_fp_lock_all();
    cf_apply_lock();
}

static void unlock_tables(void)
{
    cf_apply_unlock();
    cf_fp_unlock_all();
    cf_pool_unlock();
    cf_site_unlock();
}

void cf_rec_lock_all(void)
{
    cf_rec_init();
    lock_tables();
    cf_thread_collect();
}

void cf_rec_unlock_all(void)
{
    unlock_tables();
}

/* The locks of cf_rec_lock_all, in its order, each had before the deadline or left
 * alone. */
unsigned cf_rec_try_lock_all(const struct timespec *deadline)
{
    cf_rec_init();
    unsigned held = 0;
    if (cf_site_lock_until(deadline)) held |= CF_REC_HELD_SITES;
    if (cf_pool_lock_until(deadline)) held |= CF_REC_HELD_POOLS;
    if (cf_fp_lock_all_until(deadline)) held |= CF_REC_HELD_SLOTS;
    if (cf_apply_lock_until(deadline)) held |= CF_REC_HELD_APPLY;
    if (cf_thread_collect_until(deadline)) held |= CF_REC_HELD_COUNTERS;
    return held;
}

void cf_rec_unlock_held(unsigned held)
{
    if (held & CF_REC_HELD_APPLY) cf_apply_unlock();
    if (held & CF_REC_HELD_SLOTS) cf_fp_unlock_all();
    if (held & CF_REC_HELD_POOLS) cf_pool_unlock();
    if (held & CF_REC_HELD_SITES) cf_site_unlock();
}

/* Sampling takes the pool, device and apply locks: see first that nobody is stuck
 * on them. */
int cf_rec_sample_final_until(const struct timespec *deadline)
{
    cf_rec_init();
    if (!cf_pool_lock_until(deadline)) return -1;
    cf_pool_unlock();
    if (!cf_fp_lock_all_until(deadline)) return -1;
    cf_fp_unlock_all();
    if (!cf_apply_lock_until(deadline)) return -1;
    cf_apply_unlock();
    return cf_sample_final() ? 1 : 0;
}

/* The report's copy (read.c), made under the locks it needs. */
static int named(struct cf_rec_read *r, int rc)
{
    if (rc == 0 && cf_read_pynames(r) != 0) {
        cf_read_free(r);
        return -1;
    }
    return rc;
}

int cf_rec_read(struct cf_rec_read *r)
{
    cf_rec_lock_all();
    int rc = cf_read_copy(r, CF_REC_HELD_ALL);
    cf_rec_unlock_all();
    return named(r, rc);
}

int cf_rec_read_until(struct cf_rec_read *r, const struct timespec *deadline)
{
    unsigned held = cf_rec_try_lock_all(deadline);
    int rc = cf_read_copy(r, held);
    cf_rec_unlock_held(held);
    return named(r, rc);
}

void cf_rec_read_free(struct cf_rec_read *r)
{
    cf_read_free(r);
}

bool cf_rec_live_at(uint64_t addr, struct cf_alloc *out)
{
    cf_rec_init();
    return cf_live_copy(addr, out);
}

/* The meta allocator's locks come last: they nest inside every record lock. */
void cf_rec_atfork_prepare(void)
{
    cf_stack_before_fork(); /* before the locks: no thread should wait on them meanwhile */
    lock_tables();
    cf_py_lock();
    cf_thread_lock();
    cf_meta_lock_all();
}

void cf_rec_atfork_parent(void)
{
    cf_meta_unlock_all();
    cf_thread_unlock();
    cf_py_unlock();
    unlock_tables();
}

void cf_rec_atfork_child(void)
{
    cf_fp_forget_sleepers(); /* the parent's waiters do not exist here */
    cf_meta_unlock_all();
    cf_thread_after_fork_child();
    cf_py_unlock();
    unlock_tables();
    cf_tid_forget();
    cf_stack_after_fork_child();
    cf_trace_after_fork_child();
}
