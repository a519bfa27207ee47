/* The event trace (CUDAFRAG_TRACE=1): each thread appends its events to a block
 * of its own, as they are in memory (records, below); a full block, and every
 * thread's partial block each CUDAFRAG_TRACE_FLUSH_MS, go to a writer thread
 * that encodes it (trace_codec.c), compresses it (libzstd, loaded privately) and
 * writes it as one chunk with one write(2). A chunk is complete or absent, so a
 * process killed with SIGKILL leaves a trace readable up to its last flushed
 * chunk. No malloc and no stdio on the event path; the file layout is in
 * docs/trace-format.md.
 *
 * Encoding on the writer rather than on the event path: the varints of an
 * allocation's event took about 25 ns per call on the H200 (the trace's whole
 * cost then), copying its 88 bytes a few (docs/performance.md).
 *
 * An append takes no locked instruction: a locked read-modify-write costs a
 * cache line held exclusively and a pipeline drain on every event, and the
 * buffer is its thread's own but for the rare moments another thread takes its
 * partial block. The owner marks itself busy and checks the buffer's lock with
 * plain loads and stores; a thread taking the block holds that lock and then
 * makes every running thread execute a full barrier (membarrier, the asymmetric
 * half of the fence), after which either the owner has seen the lock (and waits
 * on it) or the taker sees the owner busy (and leaves the block for later).
 * Where membarrier is refused, appends take the lock as before. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "record/internal.h"
#include "record/trace.h"
#include "base/log.h"

/* A block holds about 2 900 allocation records; encoded, they are a chunk of
 * 20-40 KiB for zstd, which compresses that as well as larger ones. */
#define BLOCK_BYTES (256u * 1024u)
/* Encoded, a record takes at most 143 bytes for its 88 (an ALLOC, FREE or CALL:
 * trace_codec.c) and 10 per frame for 8: the encoder's buffer, 3 blocks, holds
 * any block's events. */
#define ENCODED_MAX (3u * BLOCK_BYTES)

/* What every event changes (the fill, the count) comes first, in the block's first
 * cache line (a block is page-aligned); the writer's fields after it. The records
 * start on a line of their own. */
struct block {
    uint32_t len; /* bytes of records in data */
    uint32_t nevents;
    bool defs; /* holds a SITE, MODULE, PYFRAME or END event */
    struct block *next;
    uint32_t tid;
    uint8_t data[BLOCK_BYTES] __attribute__((aligned(64)));
};

/* lock: held by whoever changes cur or off (the owner on its slow path, a taker
 * of the block); an append that only adds to cur holds it only where membarrier
 * is refused (!fast). busy: the owner is appending without the lock. */
struct tbuf {
    struct cf_lock lock;
    int busy;
    bool fast;
    bool dead;   /* its thread exited: the writer reuses it */
    bool off;    /* the trace is finished: its thread appends no more */
    bool taking; /* the writer holds lock, its fence pending (collect_partial) */
    struct block *cur;
    uint32_t tid;
    struct tbuf *next;
};

enum { T_OFF, T_BUFFERING, T_WRITING, T_FINISHED };

static int state = T_OFF; /* atomic */
static int fd = -1;
static uint64_t flush_ns = 200u * 1000000u;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond;
static struct block *q_head, *q_tail, *free_blocks;
static struct tbuf *tbufs; /* every thread's, newest first; under q_lock */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t tbuf_key;
static bool asym; /* membarrier is available: appends are lock-free */
static __thread struct tbuf *my_tbuf __attribute__((tls_model("initial-exec")));
static uint64_t events_total, bytes_raw, bytes_written, chunks_lost;

/* ---- libzstd, loaded privately so the preload library exports nothing new ---- */
typedef size_t (*zstd_compress_fn)(void *, size_t, const void *, size_t, int);
typedef unsigned (*zstd_is_error_fn)(size_t);
static zstd_compress_fn zstd_compress;
static zstd_is_error_fn zstd_is_error;
static uint8_t *zbuf;
static size_t zbuf_cap;
static uint8_t *ebuf; /* the writer's encoded chunk, ENCODED_MAX bytes */

/* zlib's crc32, loaded as libzstd is: chunks and the file header carry CRC-32s
 * (format version 2) so a reader tells a damaged trace from a truncated one.
 * Without it the file is written as version 1, unchecked. */
typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned);
static crc32_fn crc32_of;

static void load_crc(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    crc32_of = h ? (crc32_fn)dlsym(h, "crc32") : NULL;
    if (crc32_of == NULL)
        cf_log("libz.so.1 not found: the trace is written without checksums (format version 1)");
}

static uint32_t crc_of(uint32_t crc, const void *p, size_t n)
{
    return (uint32_t)crc32_of(crc, (const unsigned char *)p, (unsigned)n);
}

static void load_zstd(void)
{
    /* Once: a forked child that opens its own trace keeps what its parent loaded. */
    static bool tried;
    if (tried) return;
    tried = true;
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        zstd_compress = (zstd_compress_fn)dlsym(h, "ZSTD_compress");
        zstd_is_error = (zstd_is_error_fn)dlsym(h, "ZSTD_isError");
        size_t (*bound)(size_t) = (size_t(*)(size_t))dlsym(h, "ZSTD_compressBound");
        zbuf_cap = bound ? bound(ENCODED_MAX) : 0;
    }
    if (zbuf_cap)
        zbuf = mmap(NULL, zbuf_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!zstd_compress || !zstd_is_error || !zbuf || zbuf == MAP_FAILED) {
        zstd_compress = NULL;
        zbuf = NULL;
        cf_log("libzstd.so.1 not found: the trace is written uncompressed");
    }
}

/* ---- blocks ---- */

static struct block *block_new(uint32_t tid)
{
    pthread_mutex_lock(&q_lock);
    struct block *b = free_blocks;
    if (b) free_blocks = b->next;
    pthread_mutex_unlock(&q_lock);
    if (b == NULL) {
        b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return NULL;
    }
    b->next = NULL;
    b->tid = tid;
    b->len = 0;
    b->nevents = 0;
    b->defs = false;
    return b;
}

/* With q_lock held. */
static void enqueue_locked(struct block *b)
{
    b->next = NULL;
    if (q_tail)
        q_tail->next = b;
    else
        q_head = b;
    q_tail = b;
}

static void enqueue(struct block *b)
{
    pthread_mutex_lock(&q_lock);
    enqueue_locked(b);
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
}

/* The buffer goes to the next new thread: an event this thread still makes (a
 * later destructor's CUDA call) finds a buffer of its own, never this one. */
static void thread_gone(void *arg)
{
    struct tbuf *t = arg;
    my_tbuf = NULL;
    cf_lock(&t->lock);
    struct block *b = t->cur;
    t->cur = NULL;
    t->dead = true;
    cf_unlock(&t->lock);
    if (b && b->nevents) enqueue(b);
}

CF_COLD static struct tbuf *tbuf_get(void)
{
    if (my_tbuf) return my_tbuf;
    struct tbuf *t = NULL;
    pthread_mutex_lock(&q_lock);
    for (struct tbuf *it = tbufs; it; it = it->next)
        if (it->dead) {
            t = it;
            t->dead = false;
            break;
        }
    pthread_mutex_unlock(&q_lock);
    if (t == NULL) {
        t = cf_meta_alloc(sizeof *t);
        if (t == NULL) return NULL;
        memset(t, 0, sizeof *t); /* the lock free */
        t->fast = asym;          /* for good: a reused buffer keeps it */
        pthread_mutex_lock(&q_lock);
        t->next = tbufs;
        tbufs = t;
        pthread_mutex_unlock(&q_lock);
    }
    t->tid = cf_tid();
    my_tbuf = t;
    pthread_setspecific(tbuf_key, t);
    return t;
}

/* ---- the event path ---- */

bool cf_trace_on(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
    return s == T_BUFFERING || s == T_WRITING;
}

static bool is_def(const struct cf_event *e)
{
    return e->type == CF_EV_SITE || e->type == CF_EV_MODULE || e->type == CF_EV_END ||
           e->type == CF_EV_PYFRAME;
}

/* ---- records: an event as the block holds it ----
 *
 * ALLOC, FREE and CALL: the event's first 88 bytes (type to ns), and v[0..1] after
 * them when it failed for memory (CF_EVF_OOM). Any other event: all of struct
 * cf_event, then its frames, str and str2, the record rounded up to 8 bytes; the
 * writer points the copy's pointers at them. */
#define HOT_BYTES offsetof(struct cf_event, v)
_Static_assert(HOT_BYTES == 88, "the hot record is the event's first 88 bytes");

static bool hot(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC || e->type == CF_EV_FREE || e->type == CF_EV_CALL;
}

static bool oom_values(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC && (e->flags & CF_EVF_OOM);
}

static uint32_t record_size(const struct cf_event *e)
{
    if (hot(e)) return (uint32_t)HOT_BYTES + (oom_values(e) ? 16u : 0u);
    uint64_t n = sizeof *e + 8u * (uint64_t)e->nframes + e->len + e->len2;
    return n > BLOCK_BYTES ? UINT32_MAX : (uint32_t)((n + 7u) & ~7ull);
}

/* An ALLOC, FREE or CALL event into b, if it fits: the common case, inline. */
static inline bool put_hot(struct block *b, const struct cf_event *e)
{
    bool oom = oom_values(e);
    uint32_t n = (uint32_t)HOT_BYTES + (oom ? 16u : 0u);
    if (CF_UNLIKELY(n > BLOCK_BYTES - b->len)) return false;
    uint8_t *p = b->data + b->len;
    /* seq is set last, just before the event is emitted: copied on its own, its
     * load is served by its store, where a 16-byte load across it and site would
     * wait for the store to reach the cache (about 15 cycles). */
    const size_t seq = offsetof(struct cf_event, seq), t = offsetof(struct cf_event, t_ns);
    memcpy(p, e, seq);
    memcpy(p + seq, &e->seq, sizeof e->seq);
    memcpy(p + t, &e->t_ns, HOT_BYTES - t);
    if (oom) memcpy(p + HOT_BYTES, e->v, 16);
    b->len += n;
    b->nevents++;
    return true;
}

/* Any other event (a SITE, a MODULE, ...): the whole struct and its payload. */
static void put_record(uint8_t *p, const struct cf_event *e)
{
    memcpy(p, e, sizeof *e);
    p += sizeof *e;
    if (e->nframes) memcpy(p, e->frames, 8u * (size_t)e->nframes);
    p += 8u * (size_t)e->nframes;
    if (e->len) memcpy(p, e->str, e->len);
    p += e->len;
    if (e->len2) memcpy(p, e->str2, e->len2);
}

/* The record at p back into e, whose pointers then point into the record. */
static uint32_t get_record(const uint8_t *p, struct cf_event *e)
{
    if (p[0] == CF_EV_ALLOC || p[0] == CF_EV_FREE || p[0] == CF_EV_CALL) {
        cf_event_hot(e, p[0]);
        memcpy(e, p, HOT_BYTES);
        if (oom_values(e)) memcpy(e->v, p + HOT_BYTES, 16);
        return record_size(e);
    }
    memcpy(e, p, sizeof *e);
    const uint8_t *q = p + sizeof *e;
    e->frames = (const uint64_t *)(const void *)q;
    q += 8u * (size_t)e->nframes;
    e->str = (const char *)q;
    e->str2 = (const char *)q + e->len;
    return record_size(e);
}

/* e into b, if it fits. */
static inline bool put_in(struct block *b, const struct cf_event *e)
{
    if (hot(e)) return put_hot(b, e);
    uint32_t n = record_size(e);
    if (n > BLOCK_BYTES - b->len) return false;
    put_record(b->data + b->len, e);
    b->len += n;
    b->nevents++;
    b->defs |= is_def(e);
    return true;
}

/* e into t's block, under t's lock: a new block, a full one, a finished trace. */
CF_COLD static void append_locked(struct tbuf *t, const struct cf_event *e)
{
    cf_lock(&t->lock);
    if (CF_UNLIKELY(t->off)) {
        cf_unlock(&t->lock);
        return;
    }
    if (t->cur == NULL) t->cur = block_new(t->tid);
    if (t->cur && !put_in(t->cur, e)) {
        /* Queued under the thread's lock: its blocks reach the file in order. An
         * event larger than a block is dropped. */
        if (t->cur->nevents) {
            enqueue(t->cur);
            t->cur = block_new(t->tid);
        }
        if (t->cur) put_in(t->cur, e);
    }
    cf_unlock(&t->lock);
}

/* e into t's current block without a locked instruction; false when the lock is
 * needed (no block, no room, a taker at work). The signal fence keeps the compiler
 * from moving the lock's load above the store of busy; the processor may, and the
 * taker's membarrier covers that. The acquire pairs with a taker's unlock, so its
 * change of cur is seen. */
static inline bool append_fast(struct tbuf *t, const struct cf_event *e)
{
    __atomic_store_n(&t->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    bool done = false;
    if (CF_LIKELY(__atomic_load_n(&t->lock.v, __ATOMIC_ACQUIRE) == 0)) {
        struct block *b = t->cur;
        done = b != NULL && put_in(b, e);
    }
    __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
    return done;
}

/* A thread that has its buffer reads nothing shared to find out whether to trace:
 * the finish takes every buffer's block and marks it off. Without one, the state
 * decides. */
CF_HOT void cf_trace_emit(const struct cf_event *e)
{
    struct tbuf *t = my_tbuf;
    if (CF_UNLIKELY(t == NULL)) {
        if (!cf_trace_on() || cf_rec_replaying) return;
        t = tbuf_get();
        if (t == NULL) return;
    }
    if (CF_LIKELY(t->fast) && append_fast(t, e)) return;
    append_locked(t, e);
}

/* ---- the file ---- */

static int open_trace(const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (f < 0) {
        cf_log("cannot write the trace %s (%s); tracing is off", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        cf_log("%s is not a regular file; tracing is off", path);
        close(f);
        return -1;
    }
    return f;
}

/* The file is created with the first chunk: a process that never records an
 * event (a shell, a compiler the program runs) leaves no trace behind. */
static char trace_path[4096];
static char *trace_header;
static uint32_t trace_header_len;
static bool open_failed;

static void open_file(void)
{
    if (fd >= 0 || open_failed) return;
    fd = open_trace(trace_path);
    uint32_t fixed[2] = {crc32_of ? CF_TRACE_VERSION : CF_TRACE_VERSION_UNCHECKED,
                         trace_header_len};
    uint32_t check = 0;
    if (crc32_of) check = crc_of(crc_of(0, fixed, sizeof fixed), trace_header, trace_header_len);
    struct iovec iov[4] = {{CF_TRACE_MAGIC, 8},
                           {fixed, sizeof fixed},
                           {trace_header, trace_header_len},
                           {&check, crc32_of ? sizeof check : 0}};
    ssize_t want = (ssize_t)(8 + sizeof fixed + trace_header_len + iov[3].iov_len);
    if (fd >= 0 && writev(fd, iov, 4) != want) {
        cf_log("cannot write the trace %s (%s); tracing is off", trace_path, strerror(errno));
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        open_failed = true;
        return;
    }
    bytes_written = (uint64_t)want;
}

/* ---- the writer ---- */

/* b's records, encoded into ebuf (deltas from the chunk's first event); false if
 * they did not fit, which ENCODED_MAX rules out. */
static bool encode_block(const struct block *b, struct cf_enc *enc)
{
    *enc = (struct cf_enc){.buf = ebuf, .cap = ENCODED_MAX};
    for (uint32_t off = 0; off < b->len;) {
        struct cf_event e;
        off += get_record(b->data + off, &e);
        if (!cf_ev_encode(enc, &e)) return false;
    }
    return true;
}

/* With file_lock held. Events are counted here, a block at a time, rather than
 * by every emit in a word all threads would share. */
static void write_block(struct block *b)
{
    events_total += b->nevents;
    struct cf_enc enc;
    if (!encode_block(b, &enc)) {
        __atomic_add_fetch(&chunks_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    struct cf_chunk_header h = {.magic = CF_CHUNK_MAGIC,
                                .flags = b->defs ? CF_CHUNK_DEFS : 0,
                                .tid = b->tid,
                                .nevents = b->nevents,
                                .raw_len = enc.len,
                                .stored_len = enc.len};
    const void *payload = ebuf;
    if (zstd_compress) {
        size_t n = zstd_compress(zbuf, zbuf_cap, ebuf, enc.len, 1);
        if (!zstd_is_error(n)) {
            h.flags |= CF_CHUNK_ZSTD;
            h.stored_len = (uint32_t)n;
            payload = zbuf;
        }
    }
    size_t hlen = CF_CHUNK_HEADER_V1;
    if (crc32_of) {
        h.payload_crc = crc_of(0, payload, h.stored_len);
        h.header_crc = crc_of(0, &h, CF_CHUNK_CRC_COVERS);
        hlen = CF_CHUNK_HEADER_V2;
    }
    struct iovec iov[2] = {{&h, hlen}, {(void *)payload, h.stored_len}};
    ssize_t want = (ssize_t)(hlen + h.stored_len);
    open_file();
    if (fd < 0) {
        __atomic_add_fetch(&chunks_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    ssize_t got = writev(fd, iov, 2);
    if (got != want) {
        /* A part of a chunk (a full disk) would read as damage in the middle of
         * the file once later chunks follow it: it is cut off again. */
        if (got > 0 && (ftruncate(fd, (off_t)bytes_written) != 0 ||
                        lseek(fd, (off_t)bytes_written, SEEK_SET) != (off_t)bytes_written)) {
            close(fd);
            fd = -1;
            open_failed = true;
        }
        __atomic_add_fetch(&chunks_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    bytes_raw += h.raw_len;
    bytes_written += (uint64_t)want;
}

/* Writes every queued block; file_lock keeps chunks whole when the final flush
 * and the writer thread meet. */
static void drain(void)
{
    pthread_mutex_lock(&q_lock);
    struct block *b = q_head;
    q_head = q_tail = NULL;
    pthread_mutex_unlock(&q_lock);
    if (b == NULL) return;
    pthread_mutex_lock(&file_lock);
    while (b) {
        struct block *next = b->next;
        if (b->nevents) write_block(b);
        pthread_mutex_lock(&q_lock);
        b->next = free_blocks;
        free_blocks = b;
        pthread_mutex_unlock(&q_lock);
        b = next;
    }
    pthread_mutex_unlock(&file_lock);
}

/* The taker's half of the fence: every running thread of the process executes a
 * full barrier before this returns (a thread not running has, at its switch). */
static bool fence_all(void)
{
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}

static void asym_setup(void)
{
    int saved = errno;
    asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
}

/* With t's lock held and the fence made: whether its owner is out of the lock-free
 * append (it cannot enter it again while the lock is held). */
static bool owner_out(struct tbuf *t)
{
    return __atomic_load_n(&t->busy, __ATOMIC_ACQUIRE) == 0;
}

/* Takes every thread's partial block, so a crash loses at most one interval. One
 * fence serves every buffer whose lock was had. */
static void collect_partial(void)
{
    pthread_mutex_lock(&q_lock);
    bool need_fence = false;
    for (struct tbuf *t = tbufs; t; t = t->next) {
        t->taking = cf_lock_try(&t->lock); /* busy now: next round */
        need_fence |= t->taking && t->fast;
    }
    bool fenced = !need_fence || fence_all();
    for (struct tbuf *t = tbufs; t; t = t->next) {
        if (!t->taking) continue;
        t->taking = false;
        struct block *b = t->cur;
        if (fenced && owner_out(t) && b && b->nevents) {
            t->cur = NULL;
            enqueue_locked(b);
        }
        cf_unlock(&t->lock);
    }
    pthread_mutex_unlock(&q_lock);
}

static void *writer(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&state, __ATOMIC_RELAXED) == T_WRITING) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(flush_ns / 1000000000u);
        until.tv_nsec += (long)(flush_ns % 1000000000u);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&q_lock);
        int rc = 0;
        while (q_head == NULL && rc != ETIMEDOUT &&
               __atomic_load_n(&state, __ATOMIC_RELAXED) == T_WRITING)
            rc = pthread_cond_timedwait(&q_cond, &q_lock, &until);
        pthread_mutex_unlock(&q_lock);
        if (rc == ETIMEDOUT) collect_partial();
        drain();
    }
    return NULL;
}

/* ---- start and finish ---- */

static bool lock_bounded(pthread_mutex_t *m);
static bool tbuf_take_bounded(struct tbuf *t);

/* Tracing ends without a file: every thread's buffer stops taking events (a thread
 * with a buffer does not look at the state); what they held is dropped. Locks are
 * taken as in collect_all, never for long. */
static void buffers_off(void)
{
    if (!lock_bounded(&q_lock)) return;
    struct tbuf *head = tbufs;
    pthread_mutex_unlock(&q_lock);
    for (struct tbuf *t = head; t; t = t->next) {
        if (!tbuf_take_bounded(t)) continue;
        t->off = true;
        t->cur = NULL; /* dropped: the next append sees off */
        cf_unlock(&t->lock);
    }
}

static void cond_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q_cond, &ca);
    pthread_condattr_destroy(&ca);
}

void cf_trace_init(uint64_t flush_ms)
{
    flush_ns = (flush_ms ? flush_ms : 1) * 1000000u;
    cond_init();
    pthread_key_create(&tbuf_key, thread_gone);
    asym_setup();
    __atomic_store_n(&state, T_BUFFERING, __ATOMIC_RELAXED);
}

static bool start_writer(void)
{
    sigset_t all, old;
    pthread_t th;
    pthread_attr_t attr;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&th, &attr, writer, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return ok;
}

int cf_trace_open(const char *path, const void *header, uint32_t header_len)
{
    if (__atomic_load_n(&state, __ATOMIC_RELAXED) != T_BUFFERING) return -1;
    trace_header = cf_meta_alloc(header_len + 1u);
    if (trace_header == NULL) {
        __atomic_store_n(&state, T_OFF, __ATOMIC_RELAXED);
        buffers_off();
        return -1;
    }
    memcpy(trace_header, header, header_len);
    trace_header_len = header_len;
    snprintf(trace_path, sizeof trace_path, "%s", path);
    if (ebuf == NULL) /* a forked child has its parent's */
        ebuf = mmap(NULL, ENCODED_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ebuf == MAP_FAILED) {
        ebuf = NULL;
        cf_meta_free(trace_header, header_len + 1u);
        trace_header = NULL;
        __atomic_store_n(&state, T_OFF, __ATOMIC_RELAXED);
        buffers_off();
        return -1;
    }
    load_zstd();
    load_crc();
    __atomic_store_n(&state, T_WRITING, __ATOMIC_RELAXED);
    if (!start_writer()) cf_log("cannot start the trace writer; the trace is written at exit");
    return 0;
}

/* The final flush may run in an exit() called from a signal handler that
 * interrupted a thread inside these locks (possibly this thread): it never waits
 * on one for long, and gives up what it cannot take. */
static bool lock_bounded(pthread_mutex_t *m)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200 * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    return pthread_mutex_timedlock(m, &until) == 0;
}

static void sleep_ms(void)
{
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
}

/* The same for a thread's buffer: its lock, and its owner out of the lock-free
 * append, each tried for up to 200 ms. */
static bool tbuf_take_bounded(struct tbuf *t)
{
    int i = 0;
    while (!cf_lock_try(&t->lock)) {
        if (++i == 200) return false;
        sleep_ms();
    }
    if (!t->fast) return true;
    bool fenced = fence_all();
    for (i = 0; fenced && i < 200; i++) {
        if (owner_out(t)) return true;
        sleep_ms();
    }
    cf_unlock(&t->lock);
    return false;
}

/* Queues every thread's partial block; false when a lock could not be taken. */
static bool collect_all(void)
{
    bool whole = true;
    if (!lock_bounded(&q_lock)) return false;
    struct tbuf *head = tbufs;
    pthread_mutex_unlock(&q_lock);
    /* A thread queues a full block holding its own lock, so its lock is taken here
     * without the queue's: the other order would deadlock. Buffers are never freed,
     * so walking the list from a head read once is safe. */
    for (struct tbuf *t = head; t; t = t->next) {
        if (!tbuf_take_bounded(t)) {
            whole = false;
            continue;
        }
        struct block *b = t->cur;
        t->cur = NULL;
        t->off = true;
        if (b && b->nevents) enqueue(b);
        cf_unlock(&t->lock);
    }
    return whole;
}

/* Every buffered event goes to the file now; later events are not traced. */
void cf_trace_finish(struct cf_trace_totals *totals)
{
    int s = __atomic_exchange_n(&state, T_FINISHED, __ATOMIC_RELAXED);
    if (totals) *totals = (struct cf_trace_totals){0};
    if (s == T_BUFFERING) buffers_off();
    if (s != T_WRITING) return;
    bool whole = collect_all();
    if (whole && lock_bounded(&file_lock)) {
        pthread_mutex_unlock(&file_lock);
        drain();
    } else {
        whole = false;
    }
    if (totals)
        *totals = (struct cf_trace_totals){.events = events_total,
                                           .raw_bytes = bytes_raw,
                                           .file_bytes = bytes_written,
                                           .chunks_lost = chunks_lost,
                                           .partial = !whole};
}

/* A child forked after tracing began must not write into its parent's file: what
 * the parent buffered is dropped, and the trace waits (buffering) for the child's
 * own cf_trace_open, or cf_trace_finish. The parent's other threads, its writer
 * among them, do not exist here: the locks they may have held are made anew. */
void cf_trace_after_fork_child(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
    if (s == T_OFF) return;
    tbufs = NULL;
    my_tbuf = NULL;
    pthread_setspecific(tbuf_key, NULL); /* else this thread's exit queues the parent's block */
    q_head = q_tail = NULL;
    const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&q_lock, &fresh, sizeof fresh);
    memcpy(&file_lock, &fresh, sizeof fresh);
    if (fd >= 0) close(fd);
    fd = -1;
    open_failed = false;
    events_total = bytes_raw = bytes_written = chunks_lost = 0;
    if (trace_header) cf_meta_free(trace_header, trace_header_len + 1u);
    trace_header = NULL;
    if (s == T_FINISHED) return;
    cond_init();
    asym_setup();
    __atomic_store_n(&state, T_BUFFERING, __ATOMIC_RELAXED);
}
